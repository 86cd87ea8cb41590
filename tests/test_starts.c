/* test_starts.c — the start watchdog's bookkeeping (worker/starts.h). The
 * Kafka side (a partition that never starts is assigned again) is
 * tests/test_reliability_faults.c offset_fetch_fails_partitions_assigned_again. */
#include "starts.h"

#include <criterion/criterion.h>

Test(starts, due_after_the_timeout_then_clock_restarts) {
    vw_starts s = {0};
    for (int32_t p = 0; p < 20; p++) /* past the first growth */
        cr_assert_eq(vw_starts_add(&s, p, 1000 + p), VW_OK);
    int32_t out[32];
    cr_assert_eq(vw_starts_due(&s, 5999, 5000, out, 32), 0, "none before its timeout");
    cr_assert_eq(vw_starts_due(&s, 6001, 5000, out, 32), 2);
    cr_assert(out[0] == 0 && out[1] == 1);
    cr_assert_eq(vw_starts_due(&s, 6001, 5000, out, 32), 0, "their clocks restarted");
    cr_assert_eq(vw_starts_due(&s, 11001, 5000, out, 3), 3, "at most cap");
    cr_assert_eq(vw_starts_due(&s, 11001, 5000, out, 32), 17, "the rest");
    vw_starts_free(&s);
    cr_assert(s.n == 0 && s.items == NULL);
}

Test(starts, fetching_and_revoked_partitions_leave) {
    vw_starts s = {0};
    cr_assert_eq(vw_starts_add(&s, 3, 0), VW_OK);
    cr_assert_eq(vw_starts_add(&s, 7, 0), VW_OK);
    cr_assert_eq(vw_starts_add(&s, 9, 0), VW_OK);
    vw_starts_remove(&s, 7);
    vw_starts_remove(&s, 42); /* not listed: no-op */
    cr_assert_eq(s.n, 2);
    cr_assert_eq(vw_starts_add(&s, 3, 100), VW_OK, "assigned again: restarts");
    cr_assert_eq(s.n, 2);
    int32_t out[4];
    cr_assert_eq(vw_starts_due(&s, 50, 50, out, 4), 1);
    cr_assert_eq(out[0], 9);
    vw_starts_free(&s);
}

Test(starts, fetch_states) {
    const char *started[] = {"offset-query", "offset-wait", "active", NULL};
    const char *not_started[] = {"none", "stopping", "stopped", NULL};
    for (int i = 0; started[i]; i++)
        cr_assert(vw_starts_fetching(started[i]), "%s", started[i]);
    for (int i = 0; not_started[i]; i++)
        cr_assert_not(vw_starts_fetching(not_started[i]), "%s", not_started[i]);
    cr_assert_not(vw_starts_fetching(NULL), "a partition absent from the statistics");
}
