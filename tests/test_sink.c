/* test_sink.c — the sink on its own (worker/sink.h) against an in-process
 * mock cluster: results produced in the order handed over and acknowledged in
 * the ledger with the contract's headers; a FATAL item dead-lettered; a
 * permanent delivery error kept for redo and dead-lettered outside the
 * callback; a dead producer leaves the record unanswered and unacknowledged
 * and raises kafka_fatal; replay lines to a file. No loop, source or flow. */
#include "sink.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_harness.h"
#include "unit_kafka.h"

#define TOPICS "requests:2,results:2,requests.dlq:1"
#define RESULT "{\"answers\":{\"q\":{\"echo\":\"q\"}}}"

typedef struct fixture {
    vw_unit_env e;
    vw_sink *sink;
    uint32_t epoch[2];
} fixture;

static void setup(fixture *f, const char *crash, FILE *file) {
    memset(f, 0, sizeof *f);
    vw_unit_env_init(&f->e, TOPICS, NULL, NULL, crash, vw_item_free_cb);
    vw_err err = {0};
    for (int p = 0; p < 2; p++)
        cr_assert_eq(vw_offsets_assign(f->e.ledger, "requests", p, &f->epoch[p], NULL), VW_OK);
    vw_sink_opts o = {.cfg = f->e.cfg,
                      .log = &f->e.log,
                      .proc = f->e.proc,
                      .metrics = f->e.metrics,
                      .ledger = f->e.ledger,
                      .fault = &f->e.fault,
                      .crash = &f->e.crash,
                      .topic = "requests",
                      .results_topic = "results",
                      .file = file,
                      .replay = file != NULL,
                      .wake_fd = -1};
    cr_assert_eq(vw_sink_open(&o, &f->sink, &err), VW_OK, "%s", err.msg);
}

static void teardown(fixture *f) {
    vw_sink_free(f->sink);
    vw_unit_env_free(&f->e);
}

/* Tracks partition:offset and files its item as READY in the ledger. */
static void ready(fixture *f, int32_t p, int64_t off, const char *id, const char *result) {
    cr_assert_eq(vw_offsets_track(f->e.ledger, "requests", p, off, NULL), VW_OK);
    vw_item *it = vw_unit_item(f->e.proc, p, off, f->epoch[p], id, "{\"q\":1}", result);
    if (!result)
        vw_item_fail(it, VW_RESULT_FATAL, "boom", "the processor failed");
    cr_assert_eq(vw_offsets_set_result(f->e.ledger, "requests", p, f->epoch[p], off, it, NULL),
                 VW_OK);
}

/* What the loop does (worker.c produce_ready): the ledger's ready results,
 * in its order, to the sink. */
static void hand_over(fixture *f) {
    vw_offset_pos pos;
    vw_sink_redo(f->sink);
    while (!vw_sink_dead(f->sink) && vw_offsets_next_ready(f->e.ledger, &pos))
        vw_sink_produce(f->sink, pos.result);
}

static bool all_acked(void *ctx) {
    return vw_offsets_in_flight(((fixture *)ctx)->e.ledger, NULL, 0) == 0;
}
static bool redo_kept(void *ctx) {
    return vw_sink_pending(((fixture *)ctx)->sink) > 0;
}
static void poll_sink(void *ctx) {
    vw_sink_poll(((fixture *)ctx)->sink, 20);
}
static void hand_and_poll(void *ctx) {
    hand_over(ctx);
    poll_sink(ctx);
}

Test(sink, results_in_partition_order_acknowledged_with_headers) {
    fixture f;
    setup(&f, NULL, NULL);
    for (int p = 0; p < 2; p++)
        for (int64_t o = 0; o < 5; o++) {
            char id[48];
            snprintf(id, sizeof id, "r%d-%lld", p, (long long)o);
            ready(&f, p, o, id, RESULT);
        }
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000), "every result acknowledged");
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 0), 5);
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 1), 5);
    cr_assert_not(vw_fault_raised(&f.e.fault));
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "results", 10, 15000);
    cr_assert_eq(json_array_size(recs), 10);
    int64_t last[2][2] = {{-1, -1}, {-1, -1}}; /* [results partition][input partition] */
    size_t i;
    json_t *r;
    json_array_foreach(recs, i, r) {
        const char *id = vw_kh_header(r, "request-id"), *src = vw_kh_header(r, "source");
        cr_assert_not_null(id);
        cr_assert_str_eq(vw_kh_header(r, "vela-status"), "200");
        cr_assert_not_null(vw_kh_header(r, "vela-model"));
        int ip = -1;
        long long off = -1;
        cr_assert_eq(sscanf(src, "requests:%d:%lld", &ip, &off), 2, "%s", src);
        char want[48];
        snprintf(want, sizeof want, "r%d-%lld", ip, off);
        cr_assert_str_eq(id, want, "the header names the record it answers");
        const char *payload = json_string_value(json_object_get(r, "payload"));
        cr_assert(!strncmp(payload, "{\"request_id\":", 14), "%s", payload);
        int rp = (int)json_integer_value(json_object_get(r, "partition"));
        cr_assert_gt(off, last[rp][ip], "input order within a results partition");
        last[rp][ip] = off;
    }
    json_decref(recs);
    teardown(&f);
}

/* The producer asks for the results topic's metadata when the sink opens, so
 * the first result goes out at once. Before, librdkafka learnt of the topic
 * from the first produce call, which does not ask for it: the record waited
 * in the topic's unassigned queue until the client's once-a-second scan of
 * unknown topics (~0.9 s here: the produce 100 ms after the client started). */
Test(sink, the_first_result_waits_for_no_metadata_scan) {
    fixture f;
    setup(&f, NULL, NULL);
    vw_kh_sleep_ms(100);
    ready(&f, 0, 0, "first", RESULT);
    int64_t t0 = vw_kh_now_ms();
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000));
    int64_t took = vw_kh_now_ms() - t0;
    cr_log_info("first result acknowledged %lld ms after it was produced", (long long)took);
    cr_assert_lt(took, 500, "acknowledged after %lld ms", (long long)took);
    teardown(&f);
}

Test(sink, fatal_result_goes_to_the_dlq_and_is_acknowledged) {
    fixture f;
    setup(&f, NULL, NULL);
    ready(&f, 0, 0, "dead-1", NULL);
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000));
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "requests.dlq", 1, 15000);
    cr_assert_eq(json_array_size(recs), 1);
    json_t *r = json_array_get(recs, 0);
    cr_assert_str_eq(vw_kh_header(r, "request-id"), "dead-1");
    cr_assert_str_eq(vw_kh_header(r, "vela-error-type"), "boom");
    cr_assert_str_eq(vw_kh_header(r, "vela-error"), "the processor failed");
    cr_assert_str_eq(json_string_value(json_object_get(r, "payload")), "{\"q\":1}",
                     "the request itself");
    json_decref(recs);
    teardown(&f);
}

/* MSG_SIZE_TOO_LARGE (10) on the first Produce: the delivery report keeps the
 * item for redo (never produced inside the callback), the next hand-over
 * dead-letters it with the broker's error as its type. */
Test(sink, permanent_delivery_error_is_redone_as_a_dead_letter) {
    fixture f;
    setup(&f, NULL, NULL);
    vw_err err = {0};
    cr_assert_eq(vw_broker_control(f.e.b, "err 0 1 10", &err), VW_OK, "%s", err.msg);
    ready(&f, 1, 0, "big-1", RESULT);
    hand_over(&f);
    cr_assert(vw_unit_until(redo_kept, poll_sink, &f, 15000), "the failed delivery is kept");
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 1, "not acknowledged yet");
    cr_assert(vw_unit_until(all_acked, hand_and_poll, &f, 15000));
    cr_assert_eq(vw_sink_pending(f.sink), 0);
    json_t *recs = vw_kh_consume(vw_broker_bootstraps(f.e.b), "requests.dlq", 1, 15000);
    cr_assert_eq(json_array_size(recs), 1);
    cr_assert_str_eq(vw_kh_header(json_array_get(recs, 0), "vela-error-type"),
                     "MSG_SIZE_TOO_LARGE");
    json_decref(recs);
    teardown(&f);
}

/* A dead letter the DLQ refuses (MSG_SIZE_TOO_LARGE on two Produce requests):
 * sent once more without its payload (vela-payload-truncated says so);
 * refused again, no way out is left: the record is neither acknowledged nor
 * committed past, the fault record holds dead_letter_failed (the worker
 * stops, exit 1) and dead_letter_failures_total counts it. Before: "record
 * dropped", acknowledged, and counted only in produce_errors_total (issue 33
 * item 6, issue 35 finding 2). */
Test(sink, a_dead_letter_refused_even_empty_stops_before_its_offset) {
    fixture f;
    setup(&f, NULL, NULL);
    ready(&f, 0, 0, "ok-1", RESULT);
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000));
    vw_err err = {0};
    cr_assert_eq(vw_broker_control(f.e.b, "err 0 2 10", &err), VW_OK, "%s", err.msg);
    ready(&f, 0, 1, "dead-2", NULL);
    hand_over(&f);
    for (int64_t end = vw_kh_now_ms() + 15000;
         !vw_fault_raised(&f.e.fault) && vw_kh_now_ms() < end;)
        hand_and_poll(&f);
    vw_err cause = {0};
    cr_assert_eq(vw_fault_cause(&f.e.fault, &cause), VW_EKAFKA);
    cr_assert_str_eq(cause.type, "dead_letter_failed");
    cr_assert(strstr(cause.msg, "requests:0:1") && strstr(cause.msg, "MSG_SIZE_TOO_LARGE"), "%s",
              cause.msg);
    vw_sink_poll(f.sink, 200);
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 0), 1, "not past the record");
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 1, "never acknowledged");
    size_t len;
    char *text = vw_metrics_render(f.e.metrics, &len);
    cr_assert(strstr(text, "vela_worker_dead_letter_failures_total 1\n"), "counted");
    free(text);
    teardown(&f);
}

/* VW_CRASH_AT before_produce:2:fatal fails the producer as a broken
 * idempotent sequence would: the second record is refused, left unanswered
 * and unacknowledged (never dead-lettered or dropped), the sink is dead and
 * the fault record holds kafka_fatal. */
Test(sink, dead_producer_leaves_the_record_unacknowledged) {
    fixture f;
    setup(&f, "before_produce:2:fatal", NULL);
    ready(&f, 0, 0, "ok-1", RESULT);
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000));
    ready(&f, 0, 1, "refused-2", RESULT);
    ready(&f, 0, 2, "never-3", RESULT);
    hand_over(&f);
    cr_assert(vw_sink_dead(f.sink));
    vw_err cause = {0};
    cr_assert_eq(vw_fault_cause(&f.e.fault, &cause), VW_EKAFKA);
    cr_assert_str_eq(cause.type, "kafka_fatal");
    cr_assert(strstr(cause.msg, "fatal producer error OUT_OF_ORDER_SEQUENCE_NUMBER"), "%s",
              cause.msg);
    vw_sink_poll(f.sink, 200);
    cr_assert_eq(vw_offsets_position(f.e.ledger, "requests", 0), 1, "nothing past the first");
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 2);
    json_t *dlq = vw_kh_consume(vw_broker_bootstraps(f.e.b), "requests.dlq", 1, 1000);
    cr_assert_eq(json_array_size(dlq), 0, "not dead-lettered");
    json_decref(dlq);
    teardown(&f);
}

/* Replay to a file: one line per item, acknowledged at once, counted. */
Test(sink, replay_lines_to_a_file) {
    FILE *out = tmpfile();
    cr_assert_not_null(out);
    fixture f;
    setup(&f, NULL, out);
    ready(&f, 0, 0, "line-1", RESULT);
    ready(&f, 0, 1, "line-2", NULL);
    hand_over(&f);
    cr_assert_eq(vw_offsets_in_flight(f.e.ledger, NULL, 0), 0);
    cr_assert_eq(vw_sink_done(f.sink), 2);
    rewind(out);
    char line[512];
    cr_assert_not_null(fgets(line, sizeof line, out));
    cr_assert_str_eq(line, "{\"source\":\"requests:0:0\",\"request_id\":\"line-1\",\"vela_status\":"
                           "200,\"value\":{\"request_id\":\"line-1\",\"source\":{\"topic\":"
                           "\"requests\",\"partition\":0,\"offset\":0,\"timestamp\":null},"
                           "\"answers\":{\"q\":{\"echo\":\"q\"}}}}\n");
    cr_assert_not_null(fgets(line, sizeof line, out));
    cr_assert_str_eq(line, "{\"source\":\"requests:0:1\",\"request_id\":\"line-2\","
                           "\"dead_letter\":\"boom\"}\n");
    teardown(&f);
    fclose(out);
}

/* The dead-letter warning says why (issue 33 item 6: it named the type only,
 * so the reason was in the DLQ's header and nowhere in the log). */
Test(sink, dead_letter_warning_gives_its_reason) {
    fixture f;
    setup(&f, NULL, NULL);
    FILE *log = tmpfile();
    cr_assert_not_null(log);
    f.e.log.out = log; /* the sink borrows the log: this is its output from now on */
    ready(&f, 0, 0, "dead-2", NULL);
    hand_over(&f);
    cr_assert(vw_unit_until(all_acked, poll_sink, &f, 15000));
    teardown(&f);
    rewind(log);
    char line[1024];
    bool seen = false;
    while (fgets(line, sizeof line, log))
        seen = seen || (strstr(line, "dead letter request_id=\"dead-2\"") &&
                        strstr(line, "type=boom reason=\"the processor failed\""));
    fclose(log);
    cr_assert(seen, "the warning names the reason");
}
