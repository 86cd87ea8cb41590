/* test_txn.c — the producer's transactions of delivery.mode exactly_once
 * (worker/txn.h) through the sink, against an in-process mock cluster: the
 * transactional.id rule; a commit sends the ledger's positions and confirms
 * them; an abortable error keeps every record for the redo, which the next
 * transaction produces in order before its commit; a delivery that fails for
 * good aborts and makes the record a dead letter; offsets acknowledged
 * without a record (a drop) commit in a transaction of their own; a fatal
 * error is raised and commits nothing. The group metadata is made by hand
 * (rd_kafka_consumer_group_metadata_new): no consumer, no loop. The mock
 * keeps aborted records visible and drops the offsets (docs/kafka-notes.md
 * §1.3): the ledger is what these tests read. */
#include "txn.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_harness.h"
#include "service/clock.h"
#include "sink.h"
#include "unit_kafka.h"

#define TOPICS "requests:2,results:2,requests.dlq:1"
#define RESULT "{\"answers\":{\"q\":{\"echo\":\"q\"}}}"

typedef struct fixture {
    vw_unit_env e;
    vw_sink *sink;
    vw_txn *txn;
    uint32_t epoch[2];
    rd_kafka_consumer_group_metadata_t *gmd;
} fixture;

static void setup(fixture *f, const char *extra_yaml) {
    memset(f, 0, sizeof *f);
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "delivery: {mode: exactly_once, worker_id: unit, retry_backoff_ms: 50}\n%s",
             extra_yaml ? extra_yaml : "");
    vw_unit_env_init(&f->e, TOPICS, "txn-unit", yaml, NULL, vw_item_free_cb);
    for (int p = 0; p < 2; p++)
        cr_assert_eq(vw_offsets_assign(f->e.ledger, "requests", p, &f->epoch[p], NULL), VW_OK);
    vw_err err = {0};
    vw_sink_opts o = {.cfg = f->e.cfg,
                      .log = &f->e.log,
                      .proc = f->e.proc,
                      .metrics = f->e.metrics,
                      .ledger = f->e.ledger,
                      .fault = &f->e.fault,
                      .crash = &f->e.crash,
                      .topic = "requests",
                      .results_topic = "results",
                      .wake_fd = -1,
                      .transactions = true};
    cr_assert_eq(vw_sink_open(&o, &f->sink, &err), VW_OK, "%s", err.msg);
    f->txn = vw_sink_txn(f->sink);
    cr_assert_not_null(f->txn);
    cr_assert_eq(vw_txn_init(f->txn, vw_now_ms() + 15000, &err), VW_OK, "%s", err.msg);
    f->gmd = rd_kafka_consumer_group_metadata_new("txn-unit");
}

static void teardown(fixture *f) {
    rd_kafka_consumer_group_metadata_destroy(f->gmd);
    vw_sink_free(f->sink);
    vw_unit_env_free(&f->e);
}

/* Tracks partition:offset and files its item as READY in the ledger. */
static void ready(fixture *f, int32_t p, int64_t off, const char *result) {
    char id[32];
    snprintf(id, sizeof id, "r%d-%lld", (int)p, (long long)off);
    cr_assert_eq(vw_offsets_track(f->e.ledger, "requests", p, off, NULL), VW_OK);
    vw_item *it = vw_unit_item(f->e.proc, p, off, f->epoch[p], id, "{\"q\":1}", result);
    cr_assert_eq(vw_offsets_set_result(f->e.ledger, "requests", p, f->epoch[p], off, it, NULL),
                 VW_OK);
}

/* The loop's produce_ready (worker.c): nothing while the transaction waits
 * for its abort or its pause; else the redo, then the ledger's ready results. */
static void hand_over(fixture *f) {
    vw_offset_pos pos;
    if (!vw_txn_ready(f->txn, vw_now_ms()))
        return;
    vw_sink_redo(f->sink);
    while (!vw_sink_dead(f->sink) && vw_offsets_next_ready(f->e.ledger, &pos))
        vw_sink_produce(f->sink, pos.result);
}

static int64_t committed_left(const fixture *f) {
    return (int64_t)vw_offsets_commits(f->e.ledger, NULL, 0);
}

static double metric(const fixture *f, const char *name) {
    size_t len = 0;
    char *text = vw_metrics_render(f->e.metrics, &len);
    double v = vw_kh_metric_in(text, name);
    free(text);
    return v;
}

static vw_config *parse(const char *yaml) {
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", NULL, &cfg, &err), VW_OK, "%s",
                 err.msg);
    return cfg;
}

Test(txn, transactional_id_from_prefix_and_identity) {
    char id[256];
    bool stable = false;
    vw_config *cfg = parse("kafka: {bootstrap.servers: h, group.id: grp}\ntopics: {input: in}\n"
                           "delivery: {mode: exactly_once, worker_id: w-3}\n");
    vw_txn_id(cfg, id, sizeof id, &stable);
    cr_assert_str_eq(id, "grp-w-3", "the group id is the prefix by default");
    cr_assert(stable);
    vw_config_free(cfg);
    cfg = parse("kafka: {bootstrap.servers: h, group.id: grp}\ntopics: {input: in}\n"
                "delivery: {worker_id: w-3, transactional_id_prefix: fraud}\n");
    vw_txn_id(cfg, id, sizeof id, &stable);
    cr_assert_str_eq(id, "fraud-w-3");
    vw_config_free(cfg);

    /* No worker id: the consumer's group.instance.id (static membership); no
     * group id: the worker's default group. */
    cfg = parse("kafka: {bootstrap.servers: h, consumer: {group.instance.id: pod-7}}\n"
                "topics: {input: in}\n");
    vw_txn_id(cfg, id, sizeof id, &stable);
    cr_assert_str_eq(id, "vela-worker-pod-7");
    cr_assert(stable);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(vw_txn_conf(cfg, conf, NULL), VW_OK);
    char got[256];
    size_t len = sizeof got;
    cr_assert_eq(rd_kafka_conf_get(conf, "transactional.id", got, &len), RD_KAFKA_CONF_OK);
    cr_assert_str_eq(got, "vela-worker-pod-7");
    rd_kafka_conf_destroy(conf);
    vw_config_free(cfg);

    /* Neither: this process's (host name and pid), not kept by a restart. */
    cfg = parse("kafka: {bootstrap.servers: h, group.id: grp}\ntopics: {input: in}\n");
    vw_txn_id(cfg, id, sizeof id, &stable);
    char host[128] = "", want[300];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "grp-%s-%ld", host, (long)getpid());
    cr_assert_str_eq(id, want);
    cr_assert_not(stable);
    vw_config_free(cfg);
}

Test(txn, commit_sends_and_confirms_the_ledger_positions) {
    fixture f;
    setup(&f, NULL);
    cr_assert(vw_txn_commit(f.txn, f.gmd, -1), "nothing open: nothing to do");
    cr_assert_eq(metric(&f, "vela_worker_transactions_committed_total"), 0);
    for (int p = 0; p < 2; p++)
        for (int64_t o = 0; o < 5; o++)
            ready(&f, p, o, RESULT);
    hand_over(&f);
    cr_assert(vw_txn_busy(f.txn), "a transaction is open");
    cr_assert(vw_txn_commit(f.txn, f.gmd, -1));
    cr_assert_not(vw_txn_busy(f.txn));
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 0, "the flush served every report");
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 0), 5);
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 1), 5);
    cr_assert_eq(committed_left(&f), 0, "the positions sent are confirmed");
    cr_assert_eq(metric(&f, "vela_worker_transactions_committed_total"), 1);
    cr_assert_eq(metric(&f, "vela_worker_commits_total"), 2, "one per partition");
    cr_assert_eq(metric(&f, "vela_worker_results_total{status=\"200\"}"), 10,
                 "results count at the commit");
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "results", 10, 15000);
    cr_assert_eq(json_array_size(recs), 10);
    json_decref(recs);
    cr_assert_not(vw_fault_raised(&f.e.fault));
    teardown(&f);
}

static bool redo_due(void *ctx) {
    fixture *f = ctx;
    return vw_txn_ready(f->txn, vw_now_ms());
}
static void idle_step(void *ctx) {
    (void)ctx;
    usleep(10 * 1000);
}

/* TxnOffsetCommit (28) answered ILLEGAL_GENERATION (22): abortable. */
Test(txn, abortable_error_keeps_every_record_for_the_redo) {
    fixture f;
    setup(&f, NULL);
    vw_err err = {0};
    for (int64_t o = 0; o < 4; o++)
        ready(&f, 0, o, RESULT);
    hand_over(&f);
    cr_assert_eq(vw_broker_control(f.e.b, "err 28 1 22", &err), VW_OK, "%s", err.msg);
    cr_assert_not(vw_txn_commit(f.txn, f.gmd, -1), "aborted");
    cr_assert_eq(metric(&f, "vela_worker_transactions_aborted_total"), 1);
    cr_assert_eq(vw_txn_redo_count(f.txn), 4, "every record kept, acknowledged or not");
    cr_assert_eq(vw_sink_pending(f.sink), 4);
    cr_assert_eq(vw_offsets_commits_produced(f.e.ledger, NULL, 0), 1, "nothing committed");
    cr_assert_not(vw_txn_commit(f.txn, f.gmd, -1), "nothing commits before the redo");
    cr_assert_not(vw_txn_ready(f.txn, vw_now_ms()), "the pause after an abort");
    /* New work waits behind the redo, which goes first, in its order. */
    ready(&f, 0, 4, RESULT);
    cr_assert(vw_unit_until(redo_due, idle_step, &f, 5000));
    hand_over(&f);
    cr_assert_eq(vw_txn_redo_count(f.txn), 0);
    cr_assert(vw_txn_commit(f.txn, f.gmd, -1));
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 0), 5);
    cr_assert_eq(committed_left(&f), 0);
    cr_assert_eq(metric(&f, "vela_worker_results_total{status=\"200\"}"), 5,
                 "a redone record counts once");
    /* Every request once in the committed transaction; the mock shows the
     * aborted copies too, those that reached it before the abort (0 to 4). */
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "results", 5, 15000);
    size_t n = json_array_size(recs), k;
    json_t *r;
    bool seen[5] = {0};
    json_array_foreach(recs, k, r) {
        int p = -1;
        long long o = -1;
        sscanf(vw_kh_header(r, "request-id"), "r%d-%lld", &p, &o);
        cr_assert(p == 0 && o >= 0 && o < 5);
        seen[o] = true;
    }
    for (int o = 0; o < 5; o++)
        cr_assert(seen[o], "r0-%d answered", o);
    cr_assert(n >= 5 && n <= 9, "%zu records", n);
    json_decref(recs);
    teardown(&f);
}

/* A Produce (0) answered MSG_SIZE_TOO_LARGE (10) in a transaction: the
 * transaction must abort; the record goes again as a dead letter. */
Test(txn, failed_delivery_aborts_and_dead_letters) {
    fixture f;
    setup(&f, NULL);
    vw_err err = {0};
    cr_assert_eq(vw_broker_control(f.e.b, "err 0 1 10", &err), VW_OK, "%s", err.msg);
    ready(&f, 1, 0, RESULT);
    hand_over(&f);
    cr_assert_not(vw_txn_commit(f.txn, f.gmd, -1), "aborted");
    cr_assert_eq(vw_txn_redo_count(f.txn), 1);
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 1, "not acknowledged");
    cr_assert(vw_unit_until(redo_due, idle_step, &f, 5000));
    hand_over(&f);
    cr_assert(vw_txn_commit(f.txn, f.gmd, -1));
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 0);
    cr_assert_eq(committed_left(&f), 0);
    cr_assert_eq(metric(&f, "vela_worker_dead_letters_total"), 1);
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "requests.dlq", 1, 15000);
    cr_assert_eq(json_array_size(recs), 1);
    cr_assert_str_eq(vw_kh_header(json_array_get(recs, 0), "vela-error-type"),
                     "MSG_SIZE_TOO_LARGE");
    json_decref(recs);
    teardown(&f);
}

/* An offset acknowledged without a record (the sink's drop) still needs a
 * transaction to commit it. */
Test(txn, offsets_alone_commit_in_a_transaction_of_their_own) {
    fixture f;
    setup(&f, NULL);
    ready(&f, 0, 0, RESULT);
    vw_offset_pos pos;
    cr_assert(vw_offsets_next_ready(f.e.ledger, &pos));
    vw_item_free(pos.result);
    cr_assert_eq(vw_offsets_ack(f.e.ledger, "requests", 0, f.epoch[0], 0, NULL), VW_OK);
    cr_assert_not(vw_txn_busy(f.txn));
    cr_assert(vw_txn_commit(f.txn, f.gmd, -1));
    cr_assert_eq(committed_left(&f), 0);
    cr_assert_eq(metric(&f, "vela_worker_transactions_committed_total"), 1);
    teardown(&f);
}

/* EndTxn (26) answered PRODUCER_FENCED (90): fatal, raised with its cause;
 * the positions stay uncommitted. */
Test(txn, fenced_producer_is_raised_and_commits_nothing) {
    fixture f;
    setup(&f, NULL);
    vw_err err = {0};
    ready(&f, 0, 0, RESULT);
    hand_over(&f);
    cr_assert_eq(vw_broker_control(f.e.b, "err 26 1 90", &err), VW_OK, "%s", err.msg);
    cr_assert_not(vw_txn_commit(f.txn, f.gmd, -1));
    vw_err cause = {0};
    cr_assert_eq(vw_fault_cause(&f.e.fault, &cause), VW_EKAFKA);
    cr_assert_str_eq(cause.type, "kafka_fatal");
    cr_assert(strstr(cause.msg, "_FENCED") && strstr(cause.msg, "commit_transaction"), "%s",
              cause.msg);
    cr_assert_eq(committed_left(&f), 1, "nothing committed");
    cr_assert_not(vw_txn_ready(f.txn, vw_now_ms()), "no new transaction after a fatal error");
    cr_assert_eq(metric(&f, "vela_worker_results_total{status=\"200\"}"), 0);
    teardown(&f);
}
