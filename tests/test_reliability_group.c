/* test_reliability_group.c — two workers in one group under load: one is
 * killed with SIGKILL mid-run (its partitions move to the survivor after the
 * session timeout), then a third joins and the survivor is stopped with
 * SIGTERM (it drains, commits and leaves). No request is lost; duplicates
 * are bounded by the killed worker's uncommitted window. */
#include "kafka_harness.h"
#include "rel_check.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define TOPICS "requests:4,results:4,requests.dlq:1"

/* Per kill -9: at most max_in_flight (64) admitted and unacknowledged, plus
 * what was acknowledged within one commit interval (20 ms). */
enum { DUP_BOUND = 128 };

Test(reliability_group, sigterm_one_kill9_other) {
    vw_kh_broker b;
    vw_kh_proc a, k, c;
    char cfg[256];
    const size_t n = 2000;
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=10", NULL};
    cr_assert_eq(vw_kh_broker_start(TOPICS, &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "two",
                                    "batching: {max_tokens: 100000, max_requests: 16, "
                                    "max_wait_ms: 5}\nlimits: {max_in_flight: 64}\n"
                                    "delivery: {commit_interval_ms: 20}\n",
                                    cfg, sizeof cfg),
                 0);
    cr_assert_eq(vw_kh_worker_start("a", cfg, env, &a), 0);
    cr_assert_eq(vw_kh_worker_start("k", cfg, env, &k), 0);
    cr_assert_eq(vw_kh_wait_log(&a, "partition assigned", 30000), 0);
    cr_assert_eq(vw_kh_wait_log(&k, "partition assigned", 30000), 0, "both members hold work");
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    vw_kh_sleep_ms(300);
    cr_assert_eq(vw_kh_stop(&k, SIGKILL, 5000), 128 + SIGKILL);
    /* the survivor takes the dead member's partitions once its session ends */
    vw_kh_sleep_ms(7000);
    cr_assert_eq(vw_kh_worker_start("c", cfg, env, &c), 0);
    cr_assert_eq(vw_kh_wait_log(&c, "partition assigned", 30000), 0);
    int a_rc = vw_kh_stop(&a, SIGTERM, 30000);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", n, 120000);
    int64_t took = vw_kh_now_ms() - t0;
    if (r.missing)
        vw_kh_dump_log(&c);
    int committed = vw_rel_committed_at_end(b.bootstrap, "two", "requests", 4, 30000);
    int c_rc = vw_kh_stop(&c, SIGTERM, 30000);
    vw_kh_broker_stop(&b);
    vw_rel_print("two_workers_sigterm_kill9", &r, took);
    cr_assert_eq(a_rc, 0, "SIGTERM: drained, exit 0");
    cr_assert_eq(c_rc, 0);
    cr_assert_eq(r.missing, 0, "no loss");
    cr_assert_leq(r.duplicates, DUP_BOUND, "duplicates %zu", r.duplicates);
    cr_assert_eq(r.order_errors, 0);
    cr_assert_eq(committed, 0, "committed offsets reach the log end");
}
