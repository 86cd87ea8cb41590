/* num_check.h — seeded random data and tolerance checks for the kernel suites
 * (tests/test_cuda_kernels.c, tests/test_cuda_delta.c). Criterion helpers:
 * failures are cr_expect/cr_assert in the calling test. Ownership: the float
 * arrays returned are malloc'd, the caller frees them. Thread-safety: a
 * vw_rng per caller; the rest are pure functions.
 */
#ifndef VW_NUM_CHECK_H
#define VW_NUM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

/* xorshift64*: uniform floats in [lo, hi), reproducible across machines. */
typedef struct vw_rng {
    uint64_t s;
} vw_rng;

float vw_rng_uni(vw_rng *r, float lo, float hi);
/* n values of vw_rng_uni (asserts the allocation). */
float *vw_rng_floats(vw_rng *r, size_t n, float lo, float hi);
/* A copy of x[0..n) (asserts the allocation). */
float *vw_floats_dup(const float *x, size_t n);

/* Counts values outside atol + rtol|ref| (and non-finite outputs where the
 * reference is finite), prints the max |diff| and the first five mismatches,
 * and fails the test (cr_expect) on any. Returns the max |diff|. */
double vw_expect_close(const char *what, const float *got, const float *ref, size_t n, double atol,
                       double rtol);

/* Asserts st == VW_OK, naming the error. */
void vw_expect_ok(vw_status st, const vw_err *err);

#endif
