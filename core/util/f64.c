/* f64.c — float64 sums, sigmoid and softmax as NumPy and Python round them
 * (see f64.h). Owns nothing; never allocates. */
#include "f64.h"
#include "pairwise_sum.h"

#include <math.h>

/* NumPy's pairwise sum in float64 (pairwise_sum.h). */
VW_DEFINE_PAIRWISE_SUM(, vw_f64_sum_pairwise, double)

/* Shewchuk's exact partials with the final half-even correction, as CPython's
 * math.fsum does for finite inputs. */
void vw_f64_fsum_add(vw_f64_fsum_acc *a, double v) {
    size_t i = 0;
    for (size_t j = 0; j < a->n; j++) {
        double y = a->partials[j];
        if (fabs(v) < fabs(y)) {
            double t = v;
            v = y;
            y = t;
        }
        double hi = v + y;
        double lo = y - (hi - v);
        if (lo != 0.0)
            a->partials[i++] = lo;
        v = hi;
    }
    a->n = i;
    a->partials[a->n++] = v;
}

double vw_f64_fsum_result(const vw_f64_fsum_acc *a) {
    size_t np = a->n;
    const double *partials = a->partials;
    if (np == 0)
        return 0.0;
    double lo = 0.0;
    double hi = partials[--np];
    while (np > 0) {
        double v = hi, y = partials[--np];
        hi = v + y;
        double yr = hi - v;
        lo = y - yr;
        if (lo != 0.0)
            break;
    }
    /* Round half to even across the partials left below the break. */
    if (np > 0 && ((lo < 0.0 && partials[np - 1] < 0.0) || (lo > 0.0 && partials[np - 1] > 0.0))) {
        double y = lo * 2.0;
        double v = hi + y;
        double yr = v - hi;
        if (y == yr)
            hi = v;
    }
    return hi;
}

double vw_f64_fsum(const double *x, size_t n) {
    vw_f64_fsum_acc a = {.n = 0};
    for (size_t k = 0; k < n; k++)
        vw_f64_fsum_add(&a, x[k]);
    return vw_f64_fsum_result(&a);
}

double vw_f64_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

void vw_f64_softmax(const double *z, size_t n, double t, double *p) {
    double mx = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        p[i] = z[i] / t;
        if (p[i] > mx)
            mx = p[i];
    }
    for (size_t i = 0; i < n; i++)
        p[i] = exp(p[i] - mx);
    double sum = vw_f64_sum_pairwise(p, n);
    for (size_t i = 0; i < n; i++)
        p[i] /= sum;
}
