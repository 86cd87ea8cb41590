/* f64.h — float64 arithmetic that must round as the reference runtime does
 * (NumPy float64, Python math.fsum): the answers' softmax, sigmoid and sums
 * (docs/answers.md). Pure functions on the caller's arrays: no state, no
 * allocation, any thread. Inputs must be finite (the caller checks); nothing
 * here fails.
 */
#ifndef VW_F64_H
#define VW_F64_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NumPy's pairwise sum of x[0..n) (np.sum over float64), bit for bit. */
double vw_f64_sum_pairwise(const double *x, size_t n);
/* Python math.fsum: the correctly rounded sum of x[0..n); 0.0 when n == 0. */
double vw_f64_fsum(const double *x, size_t n);
/* math.fsum one value at a time: start from {0}, add, read the result (the
 * accumulator is unchanged by reading). Non-overlapping float64 partials cover
 * at most ~2100 bits (about 40 doubles), so 48 slots never overflow. */
typedef struct vw_f64_fsum_acc {
    double partials[48];
    size_t n;
} vw_f64_fsum_acc;
void vw_f64_fsum_add(vw_f64_fsum_acc *a, double v);
double vw_f64_fsum_result(const vw_f64_fsum_acc *a);
/* 1 / (1 + exp(-x)). */
double vw_f64_sigmoid(double x);
/* p[i] = softmax(z / t)[i], i < n (n >= 1): exp(z/t - max) over their pairwise
 * sum. p and z may alias. */
void vw_f64_softmax(const double *z, size_t n, double t, double *p);

#ifdef __cplusplus
}
#endif
#endif
