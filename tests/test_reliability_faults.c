/* test_reliability_faults.c — faults outside the worker, injected on the mock
 * cluster through `vela-worker broker --control` (worker/service/broker.h): a broker
 * down for 3 s and leader moves on the results topic (3 brokers), retriable
 * and permanent Produce errors, OffsetCommit errors, and a processor that
 * keeps failing for longer than max.poll.interval.ms. Each asserts no loss,
 * the duplicate bound, per-partition order and commits at the log end.
 * Also: a worker stopped between joining the group and its first assignment
 * exits 0 (librdkafka 2.0.2 would abort in rd_kafka_destroy, #4312). */
#include "kafka_conf.h"
#include "kafka_harness.h"
#include "rel_check.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1"
/* Kafka protocol numbers (docs/kafka-notes.md §1.1: not in librdkafka's installed headers). */
enum {
    API_PRODUCE = 0,
    API_OFFSET_COMMIT = 8,
    API_OFFSET_FETCH = 9,
    API_JOIN_GROUP = 11,
    API_SYNC_GROUP = 14
};

typedef struct env {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    const char *group;
} env;

static void start_broker(env *e, int brokers, const char *group, const char *yaml) {
    e->group = group;
    cr_assert_eq(vw_kh_broker_start_n(TOPICS, brokers, &e->b), 0);
    cr_assert_eq(vw_kh_write_config(&e->b, group, yaml, e->cfg, sizeof e->cfg), 0);
}

static void start_worker(env *e, char *const *envv) {
    cr_assert_eq(vw_kh_worker_start("worker", e->cfg, envv, &e->w), 0);
    cr_assert_eq(vw_kh_wait_log(&e->w, "partition assigned", 30000), 0);
}

static void start(env *e, int brokers, const char *group, const char *yaml, char *const *envv) {
    start_broker(e, brokers, group, yaml);
    start_worker(e, envv);
}

static void finish(env *e, const char *name, const vw_rel_report *r, size_t max_dups,
                   int64_t recover_ms) {
    int committed = vw_rel_committed_at_end(e->b.bootstrap, e->group, "requests", 4, 30000);
    if (r->missing || committed)
        vw_kh_dump_log(&e->w);
    int rc = vw_kh_stop(&e->w, SIGTERM, 30000);
    vw_kh_broker_stop(&e->b);
    vw_rel_print(name, r, recover_ms);
    cr_assert_eq(r->missing, 0, "%s: every request has a result", name);
    cr_assert_leq(r->duplicates, max_dups, "%s: duplicates %zu", name, r->duplicates);
    cr_assert_eq(r->order_errors, 0, "%s: per-partition order", name);
    cr_assert_eq(committed, 0, "%s: committed offsets reach the log end", name);
    cr_assert_eq(rc, 0, "%s: SIGTERM exit 0", name);
}

static double metric(const env *e, const char *name) {
    return vw_kh_metric(vw_kh_metrics_port(&e->w, 1000), name);
}

static void control(env *e, const char *line) {
    cr_assert_eq(vw_kh_broker_control(&e->b, line), 0, "control %s", line);
}

/* Broker 1 down for 3 s while 1,500 requests flow, then the results
 * partitions' leaders move to brokers 2 and 3. Duplicates: at most the
 * in-flight window (64) could be produced twice after a failed delivery. */
Test(reliability_faults, broker_down_up_and_leader_moves) {
    env e;
    const size_t n = 1500;
    char *envv[] = {"VW_TEST_ECHO_DELAY_MS=5", NULL};
    start(&e, 3, "bounce",
          "batching: {max_tokens: 100000, max_requests: 32, max_wait_ms: 5}\n"
          "limits: {max_in_flight: 64}\n",
          envv);
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    vw_kh_sleep_ms(300);
    int64_t t0 = vw_kh_now_ms();
    control(&e, "down 1");
    vw_kh_sleep_ms(3000);
    control(&e, "up 1");
    control(&e, "leader results 0 2");
    control(&e, "leader results 1 3");
    control(&e, "leader results 2 3");
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "r", n, 120000);
    finish(&e, "broker_down_up_and_leader_moves", &r, 64, vw_kh_now_ms() - t0);
}

/* Retriable Produce errors (NOT_LEADER_OR_FOLLOWER 6, REQUEST_TIMED_OUT 7, a
 * disconnect -195): librdkafka retries, the mock appends nothing for a failed
 * request, so no loss and no duplicate. */
Test(reliability_faults, produce_errors_retriable) {
    env e;
    const size_t n = 400;
    start(&e, 1, "prod-retry", NULL, NULL);
    control(&e, "err 0 5 6");
    control(&e, "err 0 3 7");
    control(&e, "err 0 2 -195");
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "r", n, 60000);
    cr_assert_eq(metric(&e, "vela_worker_dead_letters_total"), 0);
    finish(&e, "produce_errors_retriable", &r, 0, vw_kh_now_ms() - t0);
}

/* A permanent Produce error (MSG_SIZE_TOO_LARGE 10) on the first result: that
 * request (d00000) goes to the DLQ with its headers and the partition moves
 * on. The request is produced and the error armed before the worker starts,
 * so the error hits the worker's first Produce, not the harness's. */
Test(reliability_faults, produce_error_permanent_goes_to_dlq) {
    env e;
    start_broker(&e, 1, "prod-perm", NULL);
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, 1, 1, "d", VW_REL_ECHO_VALUE), 0);
    control(&e, "err 0 1 10");
    start_worker(&e, NULL);
    int64_t t0 = vw_kh_now_ms();
    json_t *dlq = vw_kh_consume(e.b.bootstrap, "requests.dlq", 1, 30000);
    cr_assert_eq(json_array_size(dlq), 1, "one dead letter");
    const json_t *d = json_array_get(dlq, 0);
    cr_assert_str_eq(vw_kh_header(d, "request-id"), "d00000");
    cr_assert_str_eq(vw_kh_header(d, "source"), "requests:0:0");
    cr_assert_str_eq(vw_kh_header(d, "vela-error-type"), "MSG_SIZE_TOO_LARGE");
    cr_assert_str_eq(json_string_value(json_object_get(d, "payload")), VW_REL_ECHO_VALUE,
                     "the DLQ keeps the request");
    json_decref(dlq);
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, 7, 1, "p", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "p", 7, 30000);
    cr_assert_eq(metric(&e, "vela_worker_dead_letters_total"), 1);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 7, 1000);
    cr_assert_eq(json_array_size(res), 7, "no result record for the dead letter");
    json_decref(res);
    finish(&e, "produce_error_permanent", &r, 0, vw_kh_now_ms() - t0);
}

/* The group coordinator answers the worker's first two OffsetFetch requests
 * with NOT_COORDINATOR (16): what a cluster answers while the group's
 * coordinator moves (a broker restart). librdkafka 2.0.2 does not retry an
 * OffsetFetch that failed so at request level: the partitions stay assigned
 * and are never fetched (librdkafka #5586; with delivery.start_timeout_ms 0
 * these requests stay unanswered, and so with COORDINATOR_NOT_AVAILABLE 15).
 * The start watchdog assigns them again, twice, and everything is answered
 * once. */
Test(reliability_faults, offset_fetch_fails_partitions_assigned_again) {
    env e;
    const size_t n = 200;
    start_broker(&e, 1, "offset-fetch", "delivery: {start_timeout_ms: 2000}\n");
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    char line[64];
    snprintf(line, sizeof line, "err %d 2 16", API_OFFSET_FETCH);
    control(&e, line);
    start_worker(&e, NULL);
    int64_t t0 = vw_kh_now_ms();
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "r", n, 60000);
    int64_t took = vw_kh_now_ms() - t0;
    double restarts = metric(&e, "vela_worker_partition_restarts_total");
    cr_assert_eq(restarts, 8, "4 partitions, twice: %g", restarts);
    cr_assert_eq(vw_kh_count_log(&e.w, "assigning it again"), 8);
    cr_assert_geq(took, 4000, "two start timeouts passed first");
    finish(&e, "offset_fetch_fails", &r, 0, took);
}

/* OffsetCommit errors REBALANCE_IN_PROGRESS (27) and REQUEST_TIMED_OUT (7)
 * (test_kafka_worker covers OFFSET_METADATA_TOO_LARGE): commits are retried
 * until every partition is at its end; nothing is processed twice. With no
 * rebalance behind the 27s, each holds commits and intake for two heartbeat
 * intervals and a second (3 s here), not the session timeout (30 s here; the
 * hold until 2026-12-03: three such holds, ~90 s, so that worker fails the
 * 30 s wait for the end). */
Test(reliability_faults, commit_errors_retried) {
    env e;
    const size_t n = 200;
    char *envv[] = {"VELA_KAFKA_CONSUMER_SESSION_TIMEOUT_MS=30000", NULL};
    start(&e, 1, "commit-err", NULL, envv);
    control(&e, "err 8 3 27");
    control(&e, "err 8 3 7");
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "r", n, 60000);
    int committed = vw_rel_committed_at_end(e.b.bootstrap, "commit-err", "requests", 4, 30000);
    int64_t rec = vw_kh_now_ms() - t0;
    cr_assert_eq(committed, 0, "commits reach the end despite 6 failures");
    cr_assert_lt(rec, 20000, "three holds of 3 s, not of the 30 s session: %lld ms",
                 (long long)rec);
    cr_assert_geq(metric(&e, "vela_worker_commit_failures_total"), 1);
    finish(&e, "commit_errors_retried", &r, 0, rec);
}

/* The processor fails one request 12 times (retry backoff 500 ms doubling to
 * 2 s: ~20 s in all, twice max.poll.interval.ms = 10 s). It is answered in the
 * end, everything else flows meanwhile, and the consumer never leaves the
 * group (no revoke, no max.poll.interval error) because polling continues. */
Test(reliability_faults, executor_failure_outlasts_max_poll_interval) {
    env e;
    const size_t n = 40;
    char *envv[] = {"VW_TEST_ECHO_RETRY=r00003:12",
                    "VELA_KAFKA_CONSUMER_MAX_POLL_INTERVAL_MS=10000", NULL};
    start(&e, 1, "exec-fail", "delivery: {retry_backoff_ms: 500, retry_backoff_max_ms: 2000}\n",
          envv);
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_rel_produce(e.b.bootstrap, 0, n, 4, "r", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(e.b.bootstrap, "results", "r", n, 90000);
    int64_t took = vw_kh_now_ms() - t0;
    cr_assert_eq(metric(&e, "vela_worker_retries_total"), 12);
    cr_assert_eq(vw_kh_count_log(&e.w, "partition revoked"), 0, "still in the group");
    cr_assert_eq(vw_kh_count_log(&e.w, "max.poll.interval"), 0);
    cr_assert_eq(vw_kh_count_log(&e.w, "MAX_POLL_EXCEEDED"), 0);
    cr_assert_gt(took, 10000, "the failure lasted longer than max.poll.interval.ms");
    finish(&e, "executor_failure_outlasts_max_poll", &r, 0, took);
    cr_assert_eq(r.not_200, 0, "answered, never rejected");
}

/* The #4312 work-around is on: the loaded librdkafka is older than 2.3.0
 * (kafka_conf.h; the test process loads the worker's library). */
static int wa_4312(void) {
    return vw_kafka_before(2, 3, 0);
}

/* `api` (SyncGroup or JoinGroup) answered REBALANCE_IN_PROGRESS `fails` times,
 * then SIGTERM as soon as the worker's log shows `until` (librdkafka's cgrp
 * debug lines: "-> wait-sync", a JoinGroup succeeded; "-> wait-join", one was
 * sent). After a successful JoinGroup and before the first SyncGroup answer
 * librdkafka 2.0.2's rd_kafka_destroy aborts with the sticky assignor (#4312;
 * before the work-around: exit 134 in the first two tests below). `extra_env`
 * may be NULL. Asserts exit 0 and returns the time the stop took; the log is
 * e->w's. */
static int64_t stop_in_join(env *e, const char *name, int api, int fails, int grace_ms,
                            const char *strategy, const char *until, char *extra_env) {
    char yaml[64], line[64], strat[96];
    snprintf(yaml, sizeof yaml, "shutdown: {grace_ms: %d}\n", grace_ms);
    start_broker(e, 1, name, yaml);
    snprintf(line, sizeof line, "err %d %d 27", api, fails);
    control(e, line);
    snprintf(strat, sizeof strat, "VELA_KAFKA_CONSUMER_PARTITION_ASSIGNMENT_STRATEGY=%s", strategy);
    char *envv[] = {"VELA_KAFKA_CONSUMER_DEBUG=cgrp", "VELA_LOG_LEVEL=debug", strat, extra_env,
                    NULL};
    cr_assert_eq(vw_kh_worker_start("worker", e->cfg, envv, &e->w), 0);
    cr_assert_eq(vw_kh_wait_log(&e->w, until, 30000), 0, "%s: log shows %s", name, until);
    cr_assert_eq(vw_kh_count_log(&e->w, "partition assigned"), 0, "no assignment yet");
    int64_t t0 = vw_kh_now_ms();
    int rc = vw_kh_stop(&e->w, SIGTERM, grace_ms + 30000);
    int64_t took = vw_kh_now_ms() - t0;
    vw_kh_broker_stop(&e->b);
    fprintf(stderr, "stopped in the join, %s: exit %d after %lld ms\n", name, rc, (long long)took);
    if (rc)
        vw_kh_dump_log(&e->w);
    cr_assert_eq(rc, 0, "%s: SIGTERM exit 0", name);
    return took;
}

static int64_t stop_before_first_assignment(env *e, const char *name, int fails, int grace_ms,
                                            const char *strategy) {
    return stop_in_join(e, name, API_SYNC_GROUP, fails, grace_ms, strategy, "-> wait-sync", NULL);
}

/* The assignment comes within the grace period (three SyncGroup failures):
 * the worker takes it, releases it and stops like any other. */
Test(reliability_faults, stopped_before_first_assignment_waits_for_it) {
    env e;
    int64_t took = stop_before_first_assignment(&e, "sync-late", 3, 30000, "cooperative-sticky");
    cr_assert_eq(vw_kh_count_log(&e.w, "more than a third"), 0, "heartbeat 1 s, session 6 s");
    cr_assert_eq(vw_kh_count_log(&e.w, "closed but not destroyed"), 0);
    if (!wa_4312()) { /* fixed in this librdkafka: no wait, destroy is safe */
        cr_assert_eq(vw_kh_count_log(&e.w, "waiting for it"), 0);
        cr_assert_lt(took, 10000, "not the grace period: %lld ms", (long long)took);
        return;
    }
    cr_assert_eq(vw_kh_count_log(&e.w, "waiting for it (librdkafka #4312)"), 1);
    cr_assert_eq(vw_kh_count_log(&e.w, "partition assigned"), 4);
    cr_assert_eq(vw_kh_count_log(&e.w, "partition revoked"), 4);
}

/* SyncGroup keeps failing past the grace period (2 s): the consumer is
 * closed, left undestroyed, and the worker exits 0 at the deadline. */
Test(reliability_faults, stopped_before_first_assignment_grace_ends) {
    env e;
    int64_t took = stop_before_first_assignment(&e, "sync-never", 50, 2000, "cooperative-sticky");
    cr_assert_eq(vw_kh_count_log(&e.w, "partition assigned"), 0);
    cr_assert_lt(took, 2000 + 10000, "the grace period bounds the stop");
    int wa = wa_4312(); /* fixed in 2.3.0: then no wait and a normal destroy */
    cr_assert_eq(vw_kh_count_log(&e.w, "waiting for it (librdkafka #4312)"), wa);
    cr_assert_eq(vw_kh_count_log(&e.w, "closed but not destroyed"), wa);
}

/* The same window under the range assignor (a user's override), which keeps
 * no state: rd_kafka_destroy is safe, so no wait and no leak, exit 0 at once. */
Test(reliability_faults, stopped_before_first_assignment_range_exits_at_once) {
    env e;
    int64_t took = stop_before_first_assignment(&e, "sync-range", 50, 30000, "range");
    cr_assert_eq(vw_kh_count_log(&e.w, "waiting for it"), 0, "range keeps no assignor state");
    cr_assert_lt(took, 10000, "not the grace period: %lld ms", (long long)took);
}

/* JoinGroup answered REBALANCE_IN_PROGRESS 50 times: SIGTERM once the first
 * JoinGroup was sent (join state wait-join). No JoinGroup succeeded, so
 * rd_kafka_destroy is safe and the worker must not wait for an assignment:
 * exit 0 at once, not at the end of its 30 s grace period. */
Test(reliability_faults, stopped_before_joining_exits_at_once) {
    env e;
    /* Also: a heartbeat above a third of the session (2.5 s of 6 s) is warned about. */
    int64_t took = stop_in_join(&e, "join-fails", API_JOIN_GROUP, 50, 30000, "cooperative-sticky",
                                "-> wait-join", "VELA_KAFKA_CONSUMER_HEARTBEAT_INTERVAL_MS=2500");
    cr_assert_eq(vw_kh_count_log(&e.w, "more than a third of session.timeout.ms"), 1);
    cr_assert_eq(vw_kh_count_log(&e.w, "waiting for it"), 0, "no JoinGroup succeeded");
    cr_assert_lt(took, 10000, "not the grace period: %lld ms", (long long)took);
}
