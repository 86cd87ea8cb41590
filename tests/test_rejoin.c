/* test_rejoin.c — the source's rebalance holds on their own (worker/rejoin.h):
 * REBALANCE_IN_PROGRESS holds commits and intake for hold_ms; a rebalance
 * callback ends the hold; a classic cooperative revoke holds and makes the
 * next assignment a second round (KIP-848 and a lost assignment do not); the
 * join-state lines count at once and statistics only while no line was read;
 * the join state holds commits and intake only where librdkafka #4059
 * applies. Time is passed in: no sleeping. */
#include "rejoin.h"

#include <criterion/criterion.h>

#define LINE(from, to) "Group \"g -> x\" changed join state " from " -> " to " (state up)"

Test(rejoin, rebalance_in_progress_holds_for_hold_ms) {
    vw_rejoin r;
    vw_rejoin_init(&r, 3000, false, false);
    cr_assert_not(vw_rejoin_commits_held(&r, 1000));
    cr_assert(vw_rejoin_in_progress(&r, 1000), "a new hold");
    cr_assert_not(vw_rejoin_in_progress(&r, 2000), "already held: extended, not new");
    cr_assert(vw_rejoin_commits_held(&r, 4999));
    cr_assert(vw_rejoin_intake_held(&r, 4999));
    cr_assert(vw_rejoin_commit_gated(&r, 4999));
    cr_assert_not(vw_rejoin_commits_held(&r, 5000), "2000 + 3000");
    cr_assert_not(vw_rejoin_intake_held(&r, 5000));
    vw_rejoin_in_progress(&r, 6000);
    vw_rejoin_callback(&r);
    cr_assert_not(vw_rejoin_commits_held(&r, 6001), "a callback: the generation is current");
}

Test(rejoin, cooperative_revoke_holds_and_starts_a_second_round) {
    vw_rejoin r;
    vw_rejoin_init(&r, 1000, false, false);
    vw_rejoin_callback(&r);
    vw_rejoin_revoked_cooperative(&r, 100, false);
    cr_assert(vw_rejoin_commits_held(&r, 1099));
    vw_rejoin_callback(&r); /* the assignment's callback */
    cr_assert_not(vw_rejoin_commits_held(&r, 200));
    vw_rejoin_assigned(&r, 200);
    cr_assert(vw_rejoin_commits_held(&r, 1199), "the second round is held for");
    vw_rejoin_callback(&r);
    vw_rejoin_assigned(&r, 2000);
    cr_assert_not(vw_rejoin_commits_held(&r, 2001), "no third round");
    /* A lost assignment: held, but no second round. */
    vw_rejoin_revoked_cooperative(&r, 3000, true);
    cr_assert(vw_rejoin_commits_held(&r, 3999));
    vw_rejoin_callback(&r);
    vw_rejoin_assigned(&r, 3100);
    cr_assert_not(vw_rejoin_commits_held(&r, 3101));
}

Test(rejoin, kip848_has_no_rounds) {
    vw_rejoin r;
    vw_rejoin_init(&r, 1000, false, true);
    vw_rejoin_revoked_cooperative(&r, 100, false);
    cr_assert_not(vw_rejoin_commits_held(&r, 101));
    vw_rejoin_assigned(&r, 200);
    cr_assert_not(vw_rejoin_commits_held(&r, 201));
}

Test(rejoin, join_lines_count_at_once_statistics_only_without_them) {
    vw_rejoin r;
    vw_rejoin_init(&r, 1000, true, false);
    cr_assert(vw_rejoin_stats(&r, "wait-join"), "changed");
    cr_assert(vw_rejoin_rejoining(&r), "statistics count while no line was read");
    cr_assert(vw_rejoin_commit_gated(&r, 0), "#4059: the join state gates commits");
    cr_assert_not(vw_rejoin_intake_held(&r, 0), "intake waits for the lines only");
    vw_rejoin_log_line(&r, "CGRPJOINSTATE", LINE("init", "wait-join"));
    cr_assert(vw_rejoin_intake_held(&r, 0));
    vw_rejoin_log_line(&r, "CGRPJOINSTATE", LINE("wait-sync", "steady"));
    cr_assert_not(vw_rejoin_rejoining(&r), "a line was read: statistics no longer count");
    cr_assert_not(vw_rejoin_commit_gated(&r, 0));
    cr_assert_not(vw_rejoin_stats(&r, "wait-join"), "unchanged");
    vw_rejoin_log_line(&r, "HEARTBEAT", LINE("steady", "wait-join"));
    cr_assert_not(vw_rejoin_rejoining(&r), "another facility is no join-state line");
}

Test(rejoin, fixed_4059_the_join_state_holds_nothing) {
    vw_rejoin r;
    vw_rejoin_init(&r, 1000, false, false);
    vw_rejoin_log_line(&r, "CGRPJOINSTATE", LINE("steady", "wait-join"));
    cr_assert(vw_rejoin_rejoining(&r));
    cr_assert_not(vw_rejoin_intake_held(&r, 0));
    cr_assert_not(vw_rejoin_commit_gated(&r, 0));
}

Test(rejoin, a_joingroup_answer_is_noted) {
    vw_rejoin r;
    vw_rejoin_init(&r, 1000, true, false);
    vw_rejoin_log_line(&r, "CGRPJOINSTATE", LINE("init", "wait-metadata"));
    cr_assert_not(vw_rejoin_joined(&r), "init -> wait-metadata is no JoinGroup answer");
    vw_rejoin_log_line(&r, "CGRPJOINSTATE", LINE("wait-join", "wait-metadata"));
    cr_assert(vw_rejoin_joined(&r), "the leader's answer");
    vw_rejoin r2;
    vw_rejoin_init(&r2, 1000, true, false);
    vw_rejoin_log_line(&r2, "CGRPJOINSTATE", LINE("wait-join", "wait-sync"));
    cr_assert(vw_rejoin_joined(&r2), "the follower's answer");
}
