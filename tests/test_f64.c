/* test_f64.c — the float64 arithmetic of util/f64.h against its references:
 * NumPy's np.sum (pairwise) and Python's math.fsum, value for value
 * (docs/answers.md). */
#include <criterion/criterion.h>

#include "util/f64.h"

/* Golden answers [GOLD] 0.8B cpu: confidence and score follow from the recorded
 * probabilities (spec §9.4 self-consistency). */
Test(f64, gold_score_moments_reproduce) {
    const double p[3] = {0.7717967793982892, 0.07327558059354092, 0.15492764000817};
    double t[3];
    for (int i = 0; i < 3; i++)
        t[i] = i * p[i];
    double mean = vw_f64_fsum(t, 3);
    cr_assert_eq(mean, 0.3831308606098809);
    for (int i = 0; i < 3; i++)
        t[i] = p[i] * ((i - mean) * (i - mean));
    double var = vw_f64_fsum(t, 3);
    cr_assert_eq(var, 0.5461968842745529);
    cr_assert_eq(1.0 - var / (8.0 / 12.0), 0.18070467358817055);
}

Test(f64, sums_match_numpy_and_fsum) {
    double ten[10];
    for (int i = 0; i < 10; i++)
        ten[i] = 0.1;
    cr_assert_eq(vw_f64_fsum(ten, 10), 1.0);
    cr_assert_eq(vw_f64_sum_pairwise(ten, 10), 1.0, "numpy: np.full(10, 0.1).sum() == 1.0");
    cr_assert_eq(vw_f64_fsum(NULL, 0), 0.0);
    /* x_i = (1/(i+1)) * k * (-1)^(i+1) + 1/(i+3); reference values from NumPy 2.4 / Python. */
    const struct {
        size_t n;
        double k, numpy, fsum;
    } cases[] = {{13, 5, -1.832439782439782, -1.8324397824397827},
                 {100, 1, 3.0189102499970626, 3.018910249997062},
                 {200, 4, 1.6253428456217613, 1.625342845621762},
                 {300, 1, 4.0978141060582365, 4.097814106058237}};
    double x[300];
    for (size_t c = 0; c < 4; c++) {
        for (size_t i = 0; i < cases[c].n; i++)
            x[i] =
                (1.0 / (double)(i + 1)) * cases[c].k * (i % 2 ? 1.0 : -1.0) + 1.0 / (double)(i + 3);
        cr_assert_eq(vw_f64_sum_pairwise(x, cases[c].n), cases[c].numpy, "n=%zu pairwise %.17g",
                     cases[c].n, vw_f64_sum_pairwise(x, cases[c].n));
        cr_assert_eq(vw_f64_fsum(x, cases[c].n), cases[c].fsum, "n=%zu fsum", cases[c].n);
        /* One value at a time (vw_cal_score's way): the same rounding, and
         * reading the result leaves the accumulator as it was. */
        vw_f64_fsum_acc a = {.n = 0};
        for (size_t i = 0; i < cases[c].n; i++)
            vw_f64_fsum_add(&a, x[i]);
        cr_assert_eq(vw_f64_fsum_result(&a), cases[c].fsum, "n=%zu streamed", cases[c].n);
        cr_assert_eq(vw_f64_fsum_result(&a), cases[c].fsum, "n=%zu read twice", cases[c].n);
    }
}
