/* test_crashpoint.c — the VW_CRASH_AT grammar (worker/service/crashpoint.h) and the
 * fatal_producer action's hit count. The abort action itself is exercised by
 * tests/test_reliability_crash.c, in a separate worker process. */
#include "service/crashpoint.h"

#include <criterion/criterion.h>

Test(crashpoint, grammar) {
    vw_crashpoint cp;
    vw_err err = {0};
    cr_assert_eq(vw_crashpoint_init(&cp, NULL, &err), VW_OK);
    cr_assert_eq(cp.point, VW_CRASH_NONE);
    cr_assert_eq(vw_crashpoint_init(&cp, "after_commit:3", &err), VW_OK);
    cr_assert(cp.point == VW_CRASH_AFTER_COMMIT && cp.at == 3 && cp.action == VW_CRASH_ABORT);
    cr_assert_eq(vw_crashpoint_init(&cp, "before_produce:2:fatal", &err), VW_OK);
    cr_assert(cp.point == VW_CRASH_BEFORE_PRODUCE && cp.at == 2 &&
              cp.action == VW_CRASH_FATAL_PRODUCER);
    cr_assert_eq(vw_crashpoint_init(&cp, "after_delivery:60:fatal", &err), VW_OK);
    cr_assert(cp.point == VW_CRASH_AFTER_DELIVERY && cp.at == 60 &&
              cp.action == VW_CRASH_FATAL_PRODUCER);
    const char *bad[] = {
        "after_lunch",           "after_produce:0",        "after_produce:",
        "after_produce:2:abort", "after_commit:1:fatal",   "after_executor:1:fatal",
        "after_produce:fatal",   "after_produce:1:fatal:", NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(vw_crashpoint_init(&cp, bad[i], &err), VW_EINVAL, "%s accepted", bad[i]);
        cr_assert_str_eq(err.type, "bad_crash_point");
        cr_assert_eq(cp.point, VW_CRASH_NONE, "%s: inert after a refusal", bad[i]);
    }
}

Test(crashpoint, fatal_action_fires_once_on_the_nth_hit) {
    vw_crashpoint cp;
    cr_assert_eq(vw_crashpoint_init(&cp, "after_produce:3:fatal", NULL), VW_OK);
    cr_assert_not(vw_crashpoint_hit(&cp, VW_CRASH_AFTER_DELIVERY), "another point");
    cr_assert_not(vw_crashpoint_hit(&cp, VW_CRASH_AFTER_PRODUCE));
    cr_assert_not(vw_crashpoint_hit(&cp, VW_CRASH_AFTER_PRODUCE));
    cr_assert(vw_crashpoint_hit(&cp, VW_CRASH_AFTER_PRODUCE), "the third hit");
    cr_assert_not(vw_crashpoint_hit(&cp, VW_CRASH_AFTER_PRODUCE), "once only");
}
