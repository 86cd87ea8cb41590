/* test_kafka_eos.c — `delivery.mode: exactly_once` on `vela-worker broker`
 * (librdkafka's mock cluster), so the fast suites run the mode's code paths
 * on both librdkafka versions the test command loads: a transaction per
 * micro-batch with its offsets and no consumer commit; an abortable error
 * (TxnOffsetCommit answered ILLEGAL_GENERATION) aborted and its records
 * produced again; a delivery that fails for good in a transaction (the record
 * dead-lettered after the abort); a worker fenced by a successor with the same
 * transactional.id stopping with exit 1 and the cause.
 *
 * The mock cannot prove exactly-once (docs/kafka-notes.md §1.3, checked here
 * on the library loaded): its read_committed readers see aborted records, so
 * an aborted transaction's records show up twice, and it discards the offsets
 * of TxnOffsetCommit, so the group has no committed offset. The exactly-once
 * claims rest on tests/test_eos_apache.c (Apache Kafka). */
#include "kafka_harness.h"
#include "rel_check.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1,other:1"
enum { PARTS = 4 };

/* The broker, and a worker config: exactly_once as worker w1 unless extra has
 * its own delivery section. */
static void start(vw_kh_broker *b, const char *group, const char *extra, char *cfg, size_t cap) {
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "%s%s",
             extra && strstr(extra, "delivery:") ? ""
                                                 : "delivery: {mode: exactly_once, "
                                                   "worker_id: w1}\n",
             extra ? extra : "");
    cr_assert_eq(vw_kh_broker_start(TOPICS, b), 0);
    cr_assert_eq(vw_kh_write_config(b, group, yaml, cfg, cap), 0);
}

/* The worker's metric, read from its endpoint. */
static double metric(const vw_kh_proc *w, const char *name) {
    int port = vw_kh_metrics_port(w, 5000);
    cr_assert_gt(port, 0);
    return vw_kh_metric(port, name);
}

/* Sum of the records=K fields of the worker's "transaction aborted" lines. */
static long aborted_records(const vw_kh_proc *w) {
    FILE *f = fopen(w->log_path, "r");
    char line[4096];
    long sum = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *a = strstr(line, "\"msg\":\"transaction aborted\"");
        const char *r = a ? strstr(a, "\"records\":") : NULL;
        if (r)
            sum += atol(r + 10);
    }
    if (f)
        fclose(f);
    return sum;
}

/* Waits for the log line, dumping the log when it does not come. */
static void wait_log(const vw_kh_proc *w, const char *needle, int ms) {
    int rc = vw_kh_wait_log(w, needle, ms);
    if (rc)
        vw_kh_dump_log(w);
    cr_assert_eq(rc, 0, "log line: %s", needle);
}

static void stop_clean(vw_kh_proc *w) {
    int rc = vw_kh_stop(w, SIGTERM, 20000);
    if (rc)
        vw_kh_dump_log(w);
    cr_assert_eq(rc, 0, "SIGTERM: exit 0");
}

Test(kafka_eos, transactions_carry_results_and_offsets) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    enum { N = 200 };
    start(&b, "eos", "batching: {max_tokens: 4096, max_requests: 8, max_wait_ms: 5}\n", cfg,
          sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    wait_log(&w, "\"msg\":\"transactions ready\",\"transactional_id\":\"eos-w1\"", 20000);
    wait_log(&w, "partition assigned", 20000);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "t", VW_REL_ECHO_VALUE), 0);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "t", N, 30000);
    vw_rel_print("kafka_eos transactions", &r, 0);
    cr_assert_eq(r.missing, 0, "every request answered");
    cr_assert_eq(r.duplicates, 0, "no abort: no record twice, even on the mock");
    cr_assert_eq(r.order_errors, 0);
    cr_assert_eq(r.not_200, 0);
    /* Every result is in a committed transaction, with its offsets. */
    double txns = 0;
    for (int i = 0; i < 50 && metric(&w, "vela_worker_results_total{status=\"200\"}") < N; i++)
        vw_kh_sleep_ms(100);
    cr_assert_eq(metric(&w, "vela_worker_results_total{status=\"200\"}"), N,
                 "results count once their transaction commits");
    txns = metric(&w, "vela_worker_transactions_committed_total");
    cr_assert_geq(txns, 1);
    cr_assert_leq(txns, metric(&w, "vela_worker_batches_total"),
                  "at most one transaction per micro-batch");
    cr_assert_eq(metric(&w, "vela_worker_transactions_aborted_total"), 0);
    cr_assert_geq(metric(&w, "vela_worker_commits_total"), PARTS, "offsets went with them");
    cr_assert_eq(metric(&w, "vela_worker_txn_commit_seconds_count"), txns);
    cr_assert_eq(metric(&w, "vela_worker_e2e_latency_seconds_count"), N);
    /* The consumer commits nothing in this mode, and the mock drops the
     * transactions' offsets (TxnOffsetCommit is answered, not stored): the
     * group has none. */
    int64_t got[PARTS];
    cr_assert_eq(vw_kh_committed(b.bootstrap, "eos", "requests", PARTS, got), 0);
    for (int p = 0; p < PARTS; p++)
        cr_assert_lt(got[p], 0, "requests[%d]: no committed offset on the mock (%lld)", p,
                     (long long)got[p]);
    fprintf(stderr, "kafka_eos: %d results in %.0f transactions\n", N, txns);
    stop_clean(&w);
    cr_assert_eq(vw_kh_count_log(&w, "transaction aborted"), 0);
    vw_kh_broker_stop(&b);
}

Test(kafka_eos, abortable_error_aborts_and_produces_again) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    enum { N = 40 };
    start(&b, "eos-abort", NULL, cfg, sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    wait_log(&w, "partition assigned", 20000);
    /* TxnOffsetCommit (ApiKey 28) answered ILLEGAL_GENERATION (22) once: as
     * when the group moved on, the transaction cannot take the offsets. */
    cr_assert_eq(vw_kh_broker_control(&b, "err 28 1 22"), 0);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "a", VW_REL_ECHO_VALUE), 0);
    wait_log(&w,
             "\"msg\":\"transaction must abort\",\"call\":\"send_offsets_to_transaction\","
             "\"err\":\"ILLEGAL_GENERATION\"",
             20000);
    wait_log(&w, "transaction aborted", 20000);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "a", N, 30000);
    long redone = aborted_records(&w);
    vw_rel_print("kafka_eos abort", &r, 0);
    cr_assert_eq(r.missing, 0, "every request answered after the abort");
    cr_assert_eq(r.not_200, 0);
    cr_assert_geq(redone, 1, "the aborted transaction held records");
    /* The mock shows aborted records to read_committed readers: those of the
     * aborted transaction that reached it before the abort appear twice
     * (Apache Kafka hides them). */
    cr_assert_leq(r.duplicates, (size_t)redone, "duplicates %zu, aborted records %ld", r.duplicates,
                  redone);
    /* The reader can see every result before the redone transaction
     * commits (the mock shows open transactions' records): wait for it. */
    for (int i = 0; i < 100 && metric(&w, "vela_worker_results_total{status=\"200\"}") < N; i++)
        vw_kh_sleep_ms(100);
    cr_assert_eq(metric(&w, "vela_worker_transactions_aborted_total"), 1);
    cr_assert_geq(metric(&w, "vela_worker_transactions_committed_total"), 1);
    cr_assert_eq(metric(&w, "vela_worker_results_total{status=\"200\"}"), N,
                 "each result counted once, when its transaction commits");
    stop_clean(&w);
    vw_kh_broker_stop(&b);
}

Test(kafka_eos, failed_delivery_aborts_and_dead_letters) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    enum { N = 40 };
    /* Batches take a second, so the error below meets the worker's produce,
     * not the test's. */
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=1000", NULL};
    start(&b, "eos-dlq", "batching: {max_tokens: 100000, max_requests: 64, max_wait_ms: 50}\n", cfg,
          sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, env, &w), 0);
    wait_log(&w, "partition assigned", 20000);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, N, PARTS, "d", VW_REL_ECHO_VALUE), 0);
    /* One Produce request (ApiKey 0) answered MSG_SIZE_TOO_LARGE (10): its
     * records fail for good, the transaction must abort. */
    cr_assert_eq(vw_kh_broker_control(&b, "err 0 1 10"), 0);
    wait_log(&w, "\"msg\":\"delivery failed in a transaction\"", 20000);
    wait_log(&w, "transaction aborted", 20000);
    wait_log(&w, "\"msg\":\"dead letter\"", 20000);
    /* Each request: a result or a dead letter (the records of the failed
     * request), none lost. */
    json_t *dlq = vw_kh_consume(b.bootstrap, "requests.dlq", 1, 20000);
    vw_rel_report r = vw_rel_collect(b.bootstrap, "results", "d", N, 5000);
    size_t dead = json_array_size(dlq);
    fprintf(stderr, "kafka_eos: %zu distinct results, %zu dead letters of %d\n", r.distinct, dead,
            N);
    cr_assert_geq(dead, 1);
    cr_assert_eq(r.distinct + dead, N, "a result or a dead letter for each request");
    size_t k;
    json_t *rec;
    json_array_foreach(dlq, k, rec)
        cr_assert_str_eq(vw_kh_header(rec, "vela-error-type"), "MSG_SIZE_TOO_LARGE");
    json_decref(dlq);
    cr_assert_geq(metric(&w, "vela_worker_transactions_aborted_total"), 1);
    stop_clean(&w);
    vw_kh_broker_stop(&b);
}

/* The mock does not fence a producer when another inits the same
 * transactional.id (each InitProducerId gets a new producer id: checked on
 * 2.0.2 and 2.16, docs/kafka-notes.md §1.3); the answer a fenced producer
 * gets is injected instead. A successor fencing a live worker is
 * test_eos_apache.c's. */
Test(kafka_eos, fenced_worker_stops_with_the_cause) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    start(&b, "eos-fenced", NULL, cfg, sizeof cfg);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    wait_log(&w, "partition assigned", 20000);
    /* EndTxn (ApiKey 26) answered PRODUCER_FENCED (90). */
    cr_assert_eq(vw_kh_broker_control(&b, "err 26 1 90"), 0);
    cr_assert_eq(vw_rel_produce(b.bootstrap, 0, 8, PARTS, "f", VW_REL_ECHO_VALUE), 0);
    int rc = vw_rel_wait_exit(&w, 30000);
    char *last = vw_kh_last_log_line(&w);
    fprintf(stderr, "kafka_eos: fenced worker exit %d, last line %s\n", rc, last ? last : "-");
    cr_assert_eq(rc, 1, "a fenced worker stops with exit 1");
    cr_assert(last && strstr(last, "\"type\":\"kafka_fatal\"") && strstr(last, "_FENCED") &&
                  strstr(last, "commit_transaction"),
              "its last line names the fencing: %s", last ? last : "(none)");
    free(last);
    vw_kh_broker_stop(&b);
}
