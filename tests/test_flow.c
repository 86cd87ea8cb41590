/* test_flow.c — the flow on its own (worker/flow.h) with the test-echo
 * processor and a ledger, fed real consumed records (read from an in-process
 * mock cluster by a plain consumer): records become results in the ledger
 * through the admission lane, micro-batches, the executor and processing
 * threads; a rejection is filed without a batch; a RETRY waits for its
 * backoff; a revoke drops the queued work, and an item whose partition was
 * revoked while it was admitted is dropped. No loop, source or sink. */
#include "flow.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "item.h"
#include "kafka_harness.h"
#include "service/clock.h"
#include "unit_kafka.h"

#define ECHO "{\"state\":\"s\",\"questions\":{\"q\":{}}}"

typedef struct fixture {
    vw_unit_env e;
    vw_flow *flow;
    vw_unit_fetched in;
    uint32_t epoch;
    vw_item *ready[64]; /* results taken from the ledger */
    size_t n_ready;
} fixture;

/* values[i] to requests:0 with keys k<i>, then read back. */
static void setup(fixture *f, const char *extra, const char *const *values, size_t n) {
    memset(f, 0, sizeof *f);
    vw_unit_env_init(&f->e, "requests:1,results:1,requests.dlq:1", NULL, extra, NULL,
                     vw_item_free_cb);
    vw_err err = {0};
    cr_assert_eq(vw_offsets_assign(f->e.ledger, "requests", 0, &f->epoch, NULL), VW_OK);
    vw_flow_opts o = {.cfg = f->e.cfg,
                      .log = &f->e.log,
                      .proc = f->e.proc,
                      .metrics = f->e.metrics,
                      .ledger = f->e.ledger,
                      .fault = &f->e.fault,
                      .crash = &f->e.crash,
                      .topic = "requests",
                      .threads = 2,
                      .wake_fd = -1};
    cr_assert_eq(vw_flow_new(&o, &f->flow, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_flow_start(f->flow, &err), VW_OK, "%s", err.msg);
    vw_kh_msg *m = calloc(n, sizeof *m);
    char(*keys)[32] = calloc(n, sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "k%zu", i);
        m[i] = (vw_kh_msg){.partition = 0, .key = keys[i], .value = values[i]};
    }
    cr_assert_eq(vw_kh_produce(vw_broker_bootstraps(f->e.b), "requests", m, n, NULL, NULL), 0);
    free(m);
    free(keys);
    f->in = vw_unit_fetch(f->e.b, "requests", 0, n);
}

static void teardown(fixture *f) {
    vw_flow_free(f->flow);
    for (size_t i = 0; i < f->n_ready; i++)
        vw_item_free(f->ready[i]);
    vw_unit_fetched_free(&f->in);
    vw_unit_env_free(&f->e);
}

static void intake_all(fixture *f) {
    for (size_t i = 0; i < f->in.n; i++)
        vw_flow_intake(f->flow, f->in.m[i], vw_now_ms());
}

/* What the loop's turn does with the flow, then takes the ledger's ready
 * results (as the loop hands them to the sink). */
static void turn(void *ctx) {
    fixture *f = ctx;
    vw_flow_admitted(f->flow);
    vw_flow_collect(f->flow);
    int64_t now = vw_now_ms();
    vw_flow_requeue_due(f->flow, now);
    vw_flow_dispatch(f->flow, now);
    vw_offset_pos pos;
    while (vw_offsets_next_ready(f->e.ledger, &pos)) {
        cr_assert_lt(f->n_ready, 64);
        f->ready[f->n_ready++] = pos.result;
    }
    vw_kh_sleep_ms(2);
}

static size_t want;
static bool enough(void *ctx) {
    return ((fixture *)ctx)->n_ready >= want;
}

Test(flow, records_become_results_in_the_ledger) {
    const char *v[6] = {ECHO, ECHO, ECHO, ECHO, ECHO, ECHO};
    fixture f;
    setup(&f, "batching: {max_tokens: 100000, max_requests: 4, max_wait_ms: 5}\n", v, 6);
    intake_all(&f);
    cr_assert_eq(vw_flow_room(f.flow), 1024 - 6, "six in the lane");
    want = 6;
    cr_assert(vw_unit_until(enough, turn, &f, 20000), "results %zu of 6", f.n_ready);
    for (size_t i = 0; i < 6; i++) {
        vw_item *it = f.ready[i];
        cr_assert_eq(it->offset, (int64_t)i, "the ledger hands them out in offset order");
        char key[32];
        snprintf(key, sizeof key, "k%zu", i);
        cr_assert_str_eq(it->request_id, key, "the request id is the key");
        cr_assert_eq(it->kind, VW_RESULT_RECORD);
        cr_assert_eq(it->vela_status, 200);
        cr_assert(it->res_value && strstr(it->res_value, "\"echo\":\"q\""), "%s", it->res_value);
        cr_assert_null(it->proc_item, "the processor is done with it");
    }
    cr_assert(vw_flow_idle(f.flow));
    cr_assert_eq(vw_flow_flights(f.flow), 0);
    cr_assert_eq(vw_flow_room(f.flow), 1024);
    char *text = vw_metrics_render(f.e.metrics, NULL);
    cr_assert(strstr(text, "vela_worker_batches_total 2\n"), "6 records in batches of 4: 2");
    free(text);
    teardown(&f);
}

/* A value that is not JSON is rejected by the lane's checks: its 400 is filed
 * at once, no batch runs. */
Test(flow, a_rejection_is_filed_without_a_batch) {
    const char *v[1] = {"not json"};
    fixture f;
    setup(&f, NULL, v, 1);
    intake_all(&f);
    want = 1;
    cr_assert(vw_unit_until(enough, turn, &f, 20000));
    vw_item *it = f.ready[0];
    cr_assert_eq(it->vela_status, 400);
    cr_assert(it->out_value && strstr(it->out_value, "json_invalid"), "%.*s", (int)it->out_len,
              it->out_value);
    char *text = vw_metrics_render(f.e.metrics, NULL);
    cr_assert(strstr(text, "vela_worker_batches_total 0\n"), "no batch");
    free(text);
    teardown(&f);
}

/* VW_TEST_ECHO_RETRY: the first run of k0 is transient. The flow keeps it for
 * its backoff (next_due says when), never files it as a failure, and runs it
 * again once the backoff is over. */
Test(flow, a_retry_waits_for_its_backoff) {
    setenv("VW_TEST_ECHO_RETRY", "k0:1", 1);
    const char *v[1] = {ECHO};
    fixture f;
    setup(&f, "delivery: {retry_backoff_ms: 300, retry_backoff_max_ms: 300}\n", v, 1);
    int64_t t0 = vw_now_ms();
    intake_all(&f);
    bool kept = false;
    for (int i = 0; i < 2000 && !kept; i++) {
        turn(&f);
        char *text = vw_metrics_render(f.e.metrics, NULL);
        kept = strstr(text, "vela_worker_retries_total 1\n") != NULL;
        free(text);
    }
    cr_assert(kept, "the RETRY item came back");
    cr_assert_not(vw_flow_idle(f.flow), "it waits in the flow");
    cr_assert_eq(vw_flow_flights(f.flow), 0);
    int64_t due = vw_flow_next_due(f.flow);
    cr_assert_geq(due, t0 + 300, "its backoff");
    cr_assert_eq(f.n_ready, 0, "nothing filed meanwhile");
    want = 1;
    cr_assert(vw_unit_until(enough, turn, &f, 20000));
    cr_assert_geq(vw_now_ms(), due);
    cr_assert_eq(f.ready[0]->vela_status, 200);
    cr_assert_eq(f.ready[0]->attempts, 1);
    teardown(&f);
}

/* A revoke drops what is batched (a long wait keeps the batch open); an item
 * admitted while its partition was revoked and assigned again (a new epoch)
 * is dropped when it comes back. */
Test(flow, a_revoke_drops_queued_and_stale_work) {
    const char *v[4] = {ECHO, ECHO, ECHO, ECHO};
    fixture f;
    setup(&f, "batching: {max_tokens: 100000, max_requests: 100, max_wait_ms: 60000}\n", v, 4);
    for (size_t i = 0; i < 2; i++)
        vw_flow_intake(f.flow, f.in.m[i], vw_now_ms());
    for (int i = 0; i < 2000 && vw_flow_room(f.flow) < 1024; i++)
        turn(&f);
    cr_assert_eq(vw_flow_room(f.flow), 1024, "both admitted");
    cr_assert_not(vw_flow_idle(f.flow), "batched, the batch still open");
    vw_flow_drop_partition(f.flow, 0);
    cr_assert(vw_flow_idle(f.flow), "the revoke dropped them");
    /* The next two are tracked in this epoch, then the partition moves on. */
    for (size_t i = 2; i < 4; i++)
        vw_flow_intake(f.flow, f.in.m[i], vw_now_ms());
    cr_assert_eq(vw_offsets_revoke(f.e.ledger, "requests", 0, NULL, NULL), VW_OK);
    cr_assert_eq(vw_offsets_assign(f.e.ledger, "requests", 0, NULL, NULL), VW_OK);
    for (int i = 0; i < 2000 && vw_flow_room(f.flow) < 1024; i++)
        turn(&f);
    cr_assert(vw_flow_idle(f.flow), "stale items dropped, not batched");
    cr_assert_eq(f.n_ready, 0);
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 0, "nothing tracked in the new epoch");
    teardown(&f);
}

/* A record whose admission is slow (VW_TEST_ECHO_SLOW: k0's plan takes
 * 300 ms) holds the records of its partition behind it in the lane: they
 * reach the batcher after it, in offset order, so k0 runs in the first batch
 * and results come out batch by batch. Before, the other admission thread
 * admitted k1..k11 meanwhile, they were batched and run first and k0 ran
 * last: the ledger, which hands results out in offset order, had nothing to
 * give until every batch had run (a partition's results all at once). */
Test(flow, a_slow_admission_keeps_its_partition_in_order) {
    setenv("VW_TEST_ECHO_SLOW", "k0:300", 1);
    setenv("VW_TEST_ECHO_DELAY_MS", "100", 1);
    const char *v[12];
    for (size_t i = 0; i < 12; i++)
        v[i] = ECHO;
    fixture f;
    setup(&f, "batching: {max_tokens: 100000, max_requests: 4, max_wait_ms: 5}\n", v, 12);
    intake_all(&f);
    want = 1;
    cr_assert(vw_unit_until(enough, turn, &f, 20000), "a first result");
    size_t first = f.n_ready;
    want = 12;
    cr_assert(vw_unit_until(enough, turn, &f, 20000), "results %zu of 12", f.n_ready);
    cr_assert_lt(first, 12, "the first batch's results came before the last batch ran: %zu", first);
    for (size_t i = 0; i < 12; i++)
        cr_assert_eq(f.ready[i]->offset, (int64_t)i);
    char *text = vw_metrics_render(f.e.metrics, NULL);
    cr_assert(strstr(text, "vela_worker_batches_total 3\n"), "12 records in batches of 4: 3");
    free(text);
    teardown(&f);
}
