/* pairwise_sum.h — NumPy's pairwise summation (numpy/_core/src/umath/
 * loops_utils.h.src), written once for float64 (f64.c) and float32
 * (span_decode.c): the two answer paths must round exactly as np.sum / np.mean
 * do for their dtype, so the accumulators are of the element type.
 *
 * Plain loop below 8 elements, eight interleaved partial sums up to 128, halves
 * (rounded down to a multiple of 8) above. NumPy's reduce starts from the
 * identity -0.0, which does not change a non-empty sum.
 *
 * VW_DEFINE_PAIRWISE_SUM(linkage name, T) defines `T name(const T *x, size_t n)`;
 * linkage is `static` or empty. */
#ifndef VW_PAIRWISE_SUM_H
#define VW_PAIRWISE_SUM_H

#include <stddef.h>

#define VW_DEFINE_PAIRWISE_SUM(linkage, name, T)                                                   \
    linkage T name(const T *x, size_t n) {                                                         \
        if (n < 8) {                                                                               \
            T res = 0;                                                                             \
            for (size_t i = 0; i < n; i++)                                                         \
                res += x[i];                                                                       \
            return res;                                                                            \
        }                                                                                          \
        if (n <= 128) {                                                                            \
            T r[8];                                                                                \
            for (size_t j = 0; j < 8; j++)                                                         \
                r[j] = x[j];                                                                       \
            size_t i = 8;                                                                          \
            for (; i < n - (n % 8); i += 8)                                                        \
                for (size_t j = 0; j < 8; j++)                                                     \
                    r[j] += x[i + j];                                                              \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));             \
            for (; i < n; i++)                                                                     \
                res += x[i];                                                                       \
            return res;                                                                            \
        }                                                                                          \
        size_t n2 = n / 2;                                                                         \
        n2 -= n2 % 8;                                                                              \
        return name(x, n2) + name(x + n2, n - n2);                                                 \
    }

#endif
