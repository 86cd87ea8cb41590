/* test_kafka_tansu.c — the worker against a second, independent broker:
 * Tansu 0.6 (a Kafka-compatible broker in Rust; scripts/peers installs it,
 * $VW_TANSU names it), started per test on a free loopback port with
 * in-memory storage (docs/kafka-notes.md §8).
 *
 * librdkafka 2.0.x cannot read Tansu's ApiVersions answer ("Read underflow"):
 * there the worker must stop with one clear error (old_librdkafka_fails_clearly).
 * From the versions that can (2.16 measured; the test command runs this suite
 * on both): the worker end to end, two workers sharing the partitions (classic
 * groups: Tansu has no KIP-848), and a kill -9 and restart with nothing lost.
 * Tansu quirks expected, not worked around: read_committed does not filter
 * aborted transactions; watermark offsets are not reliable, so the ends are
 * the produced records' own offsets. */
#include "kafka_conf.h"
#include "kafka_harness.h"
#include "rel_check.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1"
enum { PARTS = 4 };

/* librdkafka 2.0.x and Tansu do not speak (measured on 2.0.2). */
static bool old_library(void) {
    return vw_kafka_before(2, 1, 0);
}

static void need_tansu(bool on_old) {
    if (!getenv("VW_TANSU"))
        cr_skip_test("VW_TANSU is not set (scripts/peers installs Tansu; scripts/test sets it)");
    if (old_library() != on_old)
        cr_skip_test("librdkafka %s: %s", rd_kafka_version_str(),
                     on_old ? "reads Tansu: the end-to-end tests run instead"
                            : "cannot read Tansu: old_librdkafka_fails_clearly runs instead");
}

static void start(vw_kh_broker *b, const char *group, const char *extra, char *cfg, size_t cap) {
    cr_assert_eq(vw_kh_tansu_start(TOPICS, b), 0);
    cr_assert_eq(vw_kh_write_config(b, group, extra, cfg, cap), 0);
}

/* Waits until the group's committed offsets reach end[] (the produced
 * records' last offset + 1 per partition). */
static void committed_at(const vw_kh_broker *b, const char *group, const int64_t *end) {
    int64_t got[PARTS];
    int64_t deadline = vw_kh_now_ms() + 30000;
    for (;;) {
        bool same = vw_kh_committed(b->bootstrap, group, "requests", PARTS, got) == 0;
        for (int p = 0; p < PARTS && same; p++)
            same = got[p] == end[p] || (end[p] == 0 && got[p] < 0);
        if (same)
            return;
        cr_assert(vw_kh_now_ms() < deadline,
                  "committed [%lld %lld %lld %lld], ends [%lld %lld %lld %lld]", (long long)got[0],
                  (long long)got[1], (long long)got[2], (long long)got[3], (long long)end[0],
                  (long long)end[1], (long long)end[2], (long long)end[3]);
        vw_kh_sleep_ms(200);
    }
}

/* Ends of numbered requests first..first+n-1 (vw_rel_produce: request i to
 * partition i % PARTS), on top of end[]. */
static void numbered_ends(size_t first, size_t n, int64_t *end) {
    for (size_t i = first; i < first + n; i++)
        end[i % PARTS]++;
}

Test(kafka_tansu, old_librdkafka_fails_clearly) {
    need_tansu(true);
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    start(&b, "tansu-old", NULL, cfg, sizeof cfg);
    char *env[] = {"VELA_DELIVERY_START_TIMEOUT_MS=3000", NULL};
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_worker_start("worker", cfg, env, &w), 0);
    int rc = vw_kh_stop(&w, 0, 30000);
    int64_t took = vw_kh_now_ms() - t0;
    vw_kh_broker_stop(&b);
    fprintf(stderr, "tansu, librdkafka %s: exit %d after %lld ms\n", rd_kafka_version_str(), rc,
            (long long)took);
    if (rc != 1)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, 1, "the worker stops with exit 1, it does not retry in silence");
    /* The warning once, and the exit names it as the first fault (docs/worker.md
     * "Exit status"). */
    cr_assert_eq(vw_kh_count_log(&w, "\"msg\":\"no Kafka broker answered within "
                                     "delivery.start_timeout_ms, stopping\""),
                 1);
    cr_assert_eq(vw_kh_count_log(&w, "\"type\":\"broker_timeout\""), 1,
                 "the last line names the cause");
    cr_assert_gt(vw_kh_count_log(&w, "ApiVersion"), 0, "the protocol failure is named");
    cr_assert_gt(vw_kh_count_log(&w, b.bootstrap), 0, "the broker is named");
}

Test(kafka_tansu, worker_end_to_end) {
    need_tansu(false);
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    start(&b, "tansu-e2e", NULL, cfg, sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    enum { N = 200, BAD = 20 };
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "r", VW_REL_ECHO_VALUE), 0);
    /* Invalid records: not JSON (400), not an object (400), with a request-id
     * header that replaces the key as the id. */
    int32_t parts[BAD];
    int64_t offs[BAD];
    cr_assert_eq(vw_rel_produce_bad(b.bootstrap, BAD, PARTS, parts, offs), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", N, 60000);
    vw_rel_print("tansu_end_to_end", &r, r.waited_ms);
    json_t *res = vw_kh_consume(b.bootstrap, "results", N + BAD, 30000);
    size_t wrong_bad, n_bad = vw_rel_count_bad(res, &wrong_bad);
    json_decref(res);
    cr_assert_eq(wrong_bad, 0, "every rejection: 400, its request-id and type");
    int64_t end[PARTS] = {0};
    numbered_ends(0, N, end);
    for (int i = 0; i < BAD; i++)
        if (offs[i] + 1 > end[parts[i]])
            end[parts[i]] = offs[i] + 1;
    committed_at(&b, "tansu-e2e", end);
    int rc = vw_kh_stop(&w, SIGTERM, 20000);
    vw_kh_broker_stop(&b);
    cr_assert_eq(r.missing, 0);
    cr_assert_eq(r.duplicates, 0);
    cr_assert_eq(r.order_errors, 0);
    cr_assert_eq(r.not_200, 0);
    cr_assert_eq(n_bad, BAD, "every invalid record has its rejection");
    cr_assert_eq(rc, 0, "SIGTERM: drained, exit 0");
}

Test(kafka_tansu, two_workers_share_partitions) {
    need_tansu(false);
    vw_kh_broker b;
    vw_kh_proc a, c;
    char cfg[256];
    start(&b, "tansu-two", "limits: {max_in_flight: 64}\n", cfg, sizeof cfg);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=20", NULL};
    cr_assert_eq(vw_kh_worker_start("worker-a", cfg, env, &a), 0);
    cr_assert_eq(vw_kh_worker_start("worker-b", cfg, env, &c), 0);
    enum { N = 400 };
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "r", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", N, 90000);
    vw_rel_print("tansu_two_workers", &r, r.waited_ms);
    int64_t end[PARTS] = {0};
    numbered_ends(0, N, end);
    committed_at(&b, "tansu-two", end);
    int assigned_a = vw_kh_count_log(&a, "partition assigned");
    int assigned_b = vw_kh_count_log(&c, "partition assigned");
    int rc_a = vw_kh_stop(&a, SIGTERM, 20000), rc_b = vw_kh_stop(&c, SIGTERM, 20000);
    vw_kh_broker_stop(&b);
    cr_assert(assigned_a > 0 && assigned_b > 0, "both workers own partitions (%d, %d)", assigned_a,
              assigned_b);
    cr_assert_eq(r.missing, 0);
    cr_assert_eq(r.order_errors, 0);
    /* A rebalance while records flow answers at most the in-flight work again
     * (limits.max_in_flight 64) plus what was delivered while a commit was on
     * its way: the bound test_kafka_group asserts. */
    cr_assert_leq(r.duplicates, 2 * 64, "duplicates %zu", r.duplicates);
    cr_assert_eq(rc_a, 0);
    cr_assert_eq(rc_b, 0);
}

Test(kafka_tansu, kill9_and_restart_loses_nothing) {
    need_tansu(false);
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    cr_assert_eq(vw_kh_tansu_start(TOPICS, &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "tansu-kill",
                                    "batching: {max_tokens: 100000, max_requests: 8, "
                                    "max_wait_ms: 5}\nlimits: {max_in_flight: 8}\n"
                                    "delivery: {commit_interval_ms: 20}\n",
                                    cfg, sizeof cfg),
                 0);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=30", NULL};
    enum { N = 1000 };
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "r", VW_REL_ECHO_VALUE), 0);
    cr_assert_eq(vw_kh_worker_start("first", cfg, env, &w), 0);
    json_t *some = vw_kh_consume(b.bootstrap, "results", 200, 60000); /* mid-stream */
    size_t before = json_array_size(some);
    json_decref(some);
    cr_assert_eq(vw_kh_stop(&w, SIGKILL, 5000), 128 + SIGKILL);
    cr_assert(before >= 200 && before < N, "killed mid-stream (%zu results before)", before);
    vw_kh_sleep_ms(7000); /* the dead member's session (6 s) ends */
    cr_assert_eq(vw_kh_worker_start("second", cfg, env, &w), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "r", N, 90000);
    vw_rel_print("tansu_kill9", &r, r.waited_ms);
    int64_t end[PARTS] = {0};
    numbered_ends(0, N, end);
    committed_at(&b, "tansu-kill", end);
    int rc = vw_kh_stop(&w, SIGTERM, 20000);
    vw_kh_broker_stop(&b);
    cr_assert_eq(r.missing, 0, "nothing lost");
    cr_assert_eq(r.order_errors, 0);
    /* The in-flight window (8) plus what was delivered while a commit was on
     * its way (one more batch): test_reliability_crash's bound. */
    cr_assert_leq(r.duplicates, 16, "duplicates %zu", r.duplicates);
    cr_assert_eq(rc, 0);
}

/* delivery.mode exactly_once on Tansu (2.16): the mode starts, every request
 * is answered once in committed transactions, and the transactions' offsets
 * are the group's committed offsets (Tansu stores TxnOffsetCommit, unlike the
 * mock). Tansu does not hide aborted records from read_committed readers
 * (docs/kafka-notes.md §8): the exactly-once claims rest on Apache Kafka
 * (test_eos_apache.c). */
Test(kafka_tansu, exactly_once_runs) {
    need_tansu(false);
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    start(&b, "tansu-eos", "delivery: {mode: exactly_once, worker_id: w1}\n", cfg, sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    enum { N = 200 };
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "e", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "e", N, 60000);
    vw_rel_print("tansu_exactly_once", &r, r.waited_ms);
    int64_t end[PARTS] = {0};
    numbered_ends(0, N, end);
    committed_at(&b, "tansu-eos", end);
    int port = vw_kh_metrics_port(&w, 5000);
    double txns = vw_kh_metric(port, "vela_worker_transactions_committed_total");
    double aborts = vw_kh_metric(port, "vela_worker_transactions_aborted_total");
    int rc = vw_kh_stop(&w, SIGTERM, 20000);
    vw_kh_broker_stop(&b);
    fprintf(stderr, "tansu exactly_once: %zu results in %.0f transactions, %.0f aborted\n",
            r.results, txns, aborts);
    cr_assert_eq(r.missing, 0);
    cr_assert_eq(r.duplicates, 0);
    cr_assert_eq(r.order_errors, 0);
    cr_assert_geq(txns, 1);
    cr_assert_eq(aborts, 0);
    cr_assert_eq(rc, 0, "SIGTERM: drained, exit 0");
}
