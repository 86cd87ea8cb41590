/* test_fit.c — the truncation order (docs/spec/request.md §7.2 vectors and
 * boundaries: exactly at the budget and one over). */
#include <criterion/criterion.h>

#include "render/fit.h"

Test(fit, spec_vectors) {
    /* fit([10],[],[(user,100),(context,300)],200,{user},context) -> 100, 85 */
    int64_t kept[2] = {100, 300};
    bool read[2] = {true, false};
    vw_fit_result r = vw_fit(10, kept, read, 2, 200, 1);
    cr_expect(r.fits);
    cr_expect_eq(kept[0], 100);
    cr_expect_eq(kept[1], 85);
    cr_expect_eq(r.protected_cut, 0);
    /* user 200 -> user 184, context 1, protected_cut 16 */
    kept[0] = 200;
    kept[1] = 300;
    r = vw_fit(10, kept, read, 2, 200, 1);
    cr_expect(r.fits);
    cr_expect_eq(kept[0], 184);
    cr_expect_eq(kept[1], 1);
    cr_expect_eq(r.protected_cut, 16);
    cr_expect_eq(r.shrink_cut, 299);
    /* fit([500],[],[(user,10)],200,{user},None) fails */
    int64_t one[1] = {10};
    bool rd[1] = {true};
    r = vw_fit(500, one, rd, 1, 200, -1);
    cr_expect(!r.fits);
    cr_expect_eq(r.over, 500 + 4 + 1 - 200);
}

Test(fit, floor_of_64_then_1) {
    /* the shrink part keeps 64 while that is enough */
    int64_t kept[2] = {50, 1000};
    bool read[2] = {true, false};
    vw_fit_result r = vw_fit(0, kept, read, 2, 5 + 50 + 64, 1);
    cr_expect(r.fits && kept[1] == 64 && kept[0] == 50);
    kept[0] = 50;
    kept[1] = 1000;
    r = vw_fit(0, kept, read, 2, 5 + 50 + 63, 1);
    cr_expect(r.fits && kept[1] == 63 && kept[0] == 50);
    /* a shrink part shorter than 64 is not cut in the first step */
    kept[0] = 50;
    kept[1] = 40;
    r = vw_fit(0, kept, read, 2, 5 + 50 + 40, 1);
    cr_expect(r.fits && kept[1] == 40 && r.shrink_cut == 0);
}

Test(fit, exactly_at_and_one_over_the_budget) {
    int64_t kept[1] = {10};
    bool read[1] = {true};
    vw_fit_result r = vw_fit(20, kept, read, 1, 4 + 20 + 10, -1);
    cr_expect(r.fits && kept[0] == 10 && r.over == 0);
    r = vw_fit(20, kept, read, 1, 4 + 20 + 9, -1);
    cr_expect(r.fits && kept[0] == 9 && r.protected_cut == 1);
    /* schema + fixed + one token per part is the least that fits */
    kept[0] = 10;
    r = vw_fit(20, kept, read, 1, 4 + 20 + 1, -1);
    cr_expect(r.fits && kept[0] == 1);
    kept[0] = 10;
    r = vw_fit(20, kept, read, 1, 4 + 20, -1);
    cr_expect(!r.fits && r.over == 1);
}

Test(fit, second_unread_part_is_neither_shrunk_nor_protected) {
    int64_t kept[3] = {100, 100, 100};
    bool read[3] = {true, false, false};
    vw_fit_result r = vw_fit(0, kept, read, 3, 6 + 100 + 1 + 100, 1);
    cr_expect(r.fits);
    cr_expect_eq(kept[1], 1);
    cr_expect_eq(kept[2], 100);
    kept[0] = kept[1] = kept[2] = 100;
    r = vw_fit(0, kept, read, 3, 6 + 50 + 1 + 100, 1);
    cr_expect(r.fits && kept[0] == 50 && kept[2] == 100);
    kept[0] = kept[1] = kept[2] = 100;
    r = vw_fit(0, kept, read, 3, 6 + 100, 1);
    cr_expect(!r.fits); /* the unread third part is never cut */
}
