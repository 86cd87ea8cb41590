/* num_check.c — see num_check.h. */
#include "num_check.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

float vw_rng_uni(vw_rng *r, float lo, float hi) {
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    uint64_t x = r->s * 2685821657736338717ull;
    return lo + (hi - lo) * (float)((double)(x >> 11) / 9007199254740992.0);
}

float *vw_rng_floats(vw_rng *r, size_t n, float lo, float hi) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = vw_rng_uni(r, lo, hi);
    return x;
}

float *vw_floats_dup(const float *x, size_t n) {
    float *y = malloc((n ? n : 1) * sizeof *y);
    cr_assert(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

double vw_expect_close(const char *what, const float *got, const float *ref, size_t n, double atol,
                       double rtol) {
    double maxd = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!isfinite(ref[i]))
            continue;
        if (!isfinite(got[i]) || !(d <= atol + rtol * fabs(ref[i]))) {
            if (++bad <= 5)
                fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g\n", what, i, got[i], ref[i]);
        }
        if (isfinite(d) && d > maxd)
            maxd = d;
    }
    fprintf(stderr, "%-36s n=%-7zu max|diff|=%.3g (atol %.0e + rtol %.0e|ref|)%s\n", what, n, maxd,
            atol, rtol, bad ? "  FAIL" : "");
    cr_expect_eq(bad, 0, "%s: %zu of %zu values out of tolerance (max |diff| %.3g)", what, bad, n,
                 maxd);
    return maxd;
}

void vw_expect_ok(vw_status st, const vw_err *err) {
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), err->msg, err->where);
}
