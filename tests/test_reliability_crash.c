/* test_reliability_crash.c — the worker dies and a successor finishes:
 * deterministic crash points (VW_CRASH_AT, worker/service/crashpoint.h) with the echo
 * processor and once through the real model pipeline, and a CI-sized kill -9
 * soak (scripts/soak runs the long one). Each scenario asserts: every request
 * id has >= 1 result, duplicates within the stated bound, first results in
 * per-partition order, committed offsets at the log end (docs/reliability.md). */
#include "kafka_harness.h"
#include "rel_check.h"
#include "vw_test.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1"

/* One micro-batch: max_requests = max_in_flight = BATCH, so at most one batch
 * is admitted and unacknowledged at a time. A crash replays what was
 * acknowledged and not yet committed: at most the in-flight limit plus what
 * was delivered while a commit was on its way (commits every 20 ms, a batch
 * every >= 30 ms of echo delay: one more batch), so the bound is 2 * BATCH —
 * the same rule as the kill -9 rows (docs/reliability.md). */
enum { BATCH = 8, SESSION_WAIT_MS = 7000 };
#define ONE_BATCH_YAML                                                                             \
    "batching: {max_tokens: 100000, max_requests: 8, max_wait_ms: 5}\n"                            \
    "limits: {max_in_flight: 8}\n"                                                                 \
    "delivery: {commit_interval_ms: 20}\n"

/* Runs a worker with VW_CRASH_AT=spec until it aborts, waits out the group
 * session, runs a successor until every result is there; returns the report. */
static vw_rel_report crash_and_recover(const char *name, const char *spec, size_t n,
                                       const char *extra_yaml, char *const *env_extra,
                                       int64_t *recover_ms) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256], crash_env[96], group[64];
    snprintf(group, sizeof group, "crash-%s", name);
    cr_assert_eq(vw_kh_broker_start(TOPICS, &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, group, extra_yaml, cfg, sizeof cfg), 0);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    snprintf(crash_env, sizeof crash_env, "VW_CRASH_AT=%s", spec);
    char *env1[4] = {crash_env, NULL, NULL, NULL};
    for (int i = 0; i < 2 && env_extra && env_extra[i]; i++)
        env1[i + 1] = env_extra[i];
    cr_assert_eq(vw_kh_worker_start("crashing", cfg, env1, &w), 0);
    /* <point>:<n>:fatal fails the producer instead: the worker stops, exit 1. */
    const bool fatal = strstr(spec, ":fatal") != NULL;
    const int want_rc = fatal ? 1 : 128 + SIGABRT;
    int rc = vw_rel_wait_exit(&w, 120000);
    if (rc != want_rc)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, want_rc, "%s: the worker %s (rc %d)", spec,
                 fatal ? "stopped on the fatal error" : "aborted at the crash point", rc);
    cr_assert_eq(vw_kh_count_log(&w, fatal ? "vw_crashpoint: fatal producer error at"
                                           : "vw_crashpoint: abort at"),
                 1);
    /* A record the dead producer refused is left unanswered and uncommitted,
     * never "dropped" (acknowledged: committed without a result). */
    cr_assert_eq(vw_kh_count_log(&w, "record dropped"), 0, "%s: no record acknowledged unanswered",
                 spec);
    if (strstr(spec, "before_produce"))
        cr_assert_geq(vw_kh_count_log(&w, "record left unanswered and uncommitted"), 1,
                      "%s: the refused record took the abandon path", spec);
    if (fatal) { /* it exits with its first cause (fault.h), named in its last line */
        char *last = vw_kh_last_log_line(&w);
        cr_assert(last && strstr(last, "fatal producer error OUT_OF_ORDER_SEQUENCE_NUMBER") &&
                      strstr(last, "\"type\":\"kafka_fatal\""),
                  "%s: last line: %s", spec, last ? last : "(none)");
        free(last);
    }
    /* The dead member stays in the group until its session times out
     * (docs/kafka-notes.md §5.2): a successor started earlier may get no assignment. */
    vw_kh_sleep_ms(SESSION_WAIT_MS);
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_worker_start("successor", cfg, env_extra, &w), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", n, 120000);
    *recover_ms = vw_kh_now_ms() - t0;
    if (r.missing)
        vw_kh_dump_log(&w);
    int committed = vw_rel_committed_at_end(b.bootstrap, group, "requests", 4, 30000);
    int stop_rc = vw_kh_stop(&w, SIGTERM, 30000);
    vw_kh_broker_stop(&b);
    cr_assert_eq(committed, 0, "committed offsets reach the log end");
    cr_assert_eq(stop_rc, 0, "the successor drains and exits 0");
    return r;
}

static void check(const char *name, const vw_rel_report *r, size_t max_dups, int64_t recover_ms) {
    vw_rel_print(name, r, recover_ms);
    cr_assert_eq(r->missing, 0, "%s: every request has a result", name);
    cr_assert_leq(r->duplicates, max_dups, "%s: duplicates %zu <= %zu", name, r->duplicates,
                  max_dups);
    cr_assert_eq(r->order_errors, 0, "%s: per-partition order", name);
}

static void echo_crash(const char *point, int nth) {
    char spec[64];
    snprintf(spec, sizeof spec, "%s:%d", point, nth);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=30", NULL};
    int64_t rec;
    vw_rel_report r = crash_and_recover(point, spec, 200, ONE_BATCH_YAML, env, &rec);
    check(point, &r, 2 * BATCH, rec);
    cr_assert_eq(r.not_200, 0);
}

Test(reliability_crash, after_executor) {
    echo_crash("after_executor", 5);
}
Test(reliability_crash, after_produce) {
    echo_crash("after_produce", 60);
}
Test(reliability_crash, after_delivery) {
    echo_crash("after_delivery", 60);
}
Test(reliability_crash, after_commit) {
    echo_crash("after_commit", 10);
}

/* A fatal producer error (rd_kafka_test_fatal_error, as an idempotent
 * producer's broken sequence raises it) just before the 60th result is handed
 * to librdkafka, which then refuses it: the worker answers nothing more,
 * commits nothing unanswered and exits 1; a successor answers the rest. Until
 * 2026-12-03 a record the dead producer refused took the dead-letter path,
 * whose refusal acknowledged it ("record dropped"): committed unanswered
 * whenever nothing earlier of its partition was still in flight. */
Test(reliability_crash, fatal_producer_error) {
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=30", NULL};
    int64_t rec;
    vw_rel_report r = crash_and_recover("fatal_producer", "before_produce:60:fatal", 200,
                                        ONE_BATCH_YAML, env, &rec);
    check("fatal_producer", &r, 2 * BATCH, rec);
    cr_assert_eq(r.not_200, 0);
}

/* The real model pipeline (tiny bundle on the CPU, set through VELA_MODEL_*
 * since the harness config names test-echo): a crash after the 6th result was
 * produced; the successor loads the bundle again and finishes. */
Test(reliability_crash, real_pipeline_after_produce) {
    char *bundle = vw_test_path("fixtures/tiny-vela");
    char *req_path = vw_test_path("fixtures/requests/blog_quickstart.json");
    char *req = vw_test_read_file(req_path, NULL);
    cr_assert_not_null(req);
    char bundle_env[600];
    snprintf(bundle_env, sizeof bundle_env, "VELA_MODEL_BUNDLE=%s", bundle);
    char *env[] = {"VELA_MODEL_DEVICE=cpu", bundle_env, NULL};
    char *env1[] = {"VW_CRASH_AT=after_produce:6", env[0], env[1], NULL};
    const size_t n = 24;
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    cr_assert_eq(vw_kh_broker_start(TOPICS, &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "crash-real",
                                    "batching: {max_tokens: 16384, max_requests: 4, "
                                    "max_wait_ms: 5}\nlimits: {max_in_flight: 4}\n"
                                    "delivery: {commit_interval_ms: 20}\n",
                                    cfg, sizeof cfg),
                 0);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, n, 4, "r", req), 0);
    cr_assert_eq(vw_kh_worker_start("crashing", cfg, env1, &w), 0);
    int rc = vw_rel_wait_exit(&w, 120000);
    if (rc != 128 + SIGABRT)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, 128 + SIGABRT, "aborted at after_produce:6 (rc %d)", rc);
    vw_kh_sleep_ms(SESSION_WAIT_MS);
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_worker_start("successor", cfg, env, &w), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", n, 120000);
    int64_t rec = vw_kh_now_ms() - t0;
    if (r.missing || r.not_200)
        vw_kh_dump_log(&w);
    int committed = vw_rel_committed_at_end(b.bootstrap, "crash-real", "requests", 4, 30000);
    cr_assert_eq(vw_kh_stop(&w, SIGTERM, 30000), 0);
    vw_kh_broker_stop(&b);
    cr_assert_eq(committed, 0);
    check("real_pipeline_after_produce", &r, 4, rec);
    cr_assert_eq(r.not_200, 0, "the quickstart request is answered 200");
    free(req);
    free(req_path);
    free(bundle);
}

/* Environment size knob (scripts/soak): the number in `name`, or dflt. */
static size_t env_size(const char *name, size_t dflt) {
    const char *v = getenv(name);
    return v && atol(v) > 0 ? (size_t)atol(v) : dflt;
}

/* kill -9 at random moments (seeded) while requests flow over 4 partitions,
 * each kill followed by a restart after the session timeout. CI: 3,000
 * requests, 2 kills; scripts/soak: VW_SOAK_REQUESTS=20000 VW_SOAK_KILLS=3.
 * Duplicates per kill are bounded by what was admitted or acknowledged but
 * uncommitted: <= max_in_flight (64) + one commit interval, asserted as 128. */
Test(reliability_crash, kill9_soak) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    const size_t n = env_size("VW_SOAK_REQUESTS", 3000), kills = env_size("VW_SOAK_KILLS", 2);
    cr_assert_eq(vw_kh_broker_start(TOPICS, &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "soak",
                                    "batching: {max_tokens: 100000, max_requests: 32, "
                                    "max_wait_ms: 5}\nlimits: {max_in_flight: 64}\n"
                                    "delivery: {commit_interval_ms: 20}\n",
                                    cfg, sizeof cfg),
                 0);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=20", NULL};
    srand(9);
    for (size_t kill_no = 0; kill_no < kills; kill_no++) {
        cr_assert_eq(vw_kh_worker_start("soak", cfg, env, &w), 0);
        cr_assert_eq(vw_kh_wait_log(&w, "partition assigned", 30000), 0);
        vw_kh_sleep_ms(500 + rand() % 1500);
        cr_assert_eq(vw_kh_stop(&w, SIGKILL, 5000), 128 + SIGKILL);
        vw_kh_sleep_ms(SESSION_WAIT_MS);
    }
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_worker_start("soak-final", cfg, env, &w), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", n, 600000);
    int64_t recover = vw_kh_now_ms() - t0;
    int committed = vw_rel_committed_at_end(b.bootstrap, "soak", "requests", 4, 30000);
    cr_assert_eq(vw_kh_stop(&w, SIGTERM, 30000), 0);
    vw_kh_broker_stop(&b);
    char name[64];
    snprintf(name, sizeof name, "kill9_soak_%zu_%zukills", n, kills);
    check(name, &r, kills * 128, recover);
    cr_assert_eq(committed, 0);
}
