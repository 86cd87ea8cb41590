/* test_kafka_worker.c — `vela-worker run` end to end against `vela-worker
 * broker`, with the test-only echo processor: the happy path (N requests -> N
 * results, keys, headers, per-partition order, committed offsets = end,
 * backpressure, metrics), worker-level rejections with their exact triples
 * while the partition keeps moving, reply-topic allow-list, transient failures
 * retried (never rejected), and a result too large to produce going to the DLQ. */
#include "kafka_harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPICS "requests:4,results:4,requests.dlq:1,replies:1"

typedef struct env {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
} env;

static void start(env *e, const char *group, const char *extra, char *const *extra_env) {
    cr_assert_eq(vw_kh_broker_start(TOPICS, &e->b), 0);
    cr_assert_eq(vw_kh_write_config(&e->b, group, extra, e->cfg, sizeof e->cfg), 0);
    cr_assert_eq(vw_kh_worker_start("worker", e->cfg, extra_env, &e->w), 0);
}

static void finish(env *e) {
    int rc = vw_kh_stop(&e->w, SIGTERM, 20000);
    if (rc != 0)
        vw_kh_dump_log(&e->w);
    vw_kh_broker_stop(&e->b);
    cr_assert_eq(rc, 0, "SIGTERM: the worker drains and exits 0");
}

static json_t *payload(const json_t *rec) {
    json_t *v = json_loads(json_string_value(json_object_get(rec, "payload")), 0, NULL);
    cr_assert_not_null(v, "result payload is JSON");
    return v;
}

/* The record with this key, or NULL. */
static json_t *by_key(json_t *recs, const char *key) {
    size_t k;
    json_t *r;
    json_array_foreach(recs, k, r) {
        const char *rk = json_string_value(json_object_get(r, "key"));
        if (rk && !strcmp(rk, key))
            return r;
    }
    return NULL;
}

enum { N = 200 };

/* The requests of the happy path: keys k000.., every tenth with a request-id. */
static vw_kh_msg hp_msgs[N];
static char hp_keys[N][16], hp_vals[N][96], hp_ids[N][16];
static int32_t hp_parts[N];
static int64_t hp_offs[N];

static void happy_requests(void) {
    for (int i = 0; i < N; i++) {
        snprintf(hp_keys[i], sizeof hp_keys[i], "k%03d", i);
        snprintf(hp_vals[i], sizeof hp_vals[i], "{\"state\":\"s%d\",\"questions\":{\"q%d\":{}}}", i,
                 i);
        hp_msgs[i] = (vw_kh_msg){.partition = -1, .key = hp_keys[i], .value = hp_vals[i]};
        if (i % 10 == 0) { /* request-id header overrides the key */
            snprintf(hp_ids[i], sizeof hp_ids[i], "id-%d", i);
            hp_msgs[i].hdr_name[0] = "request-id";
            hp_msgs[i].hdr_value[0] = hp_ids[i];
        }
    }
}

/* One result of request i: headers and value fields. */
static void check_happy_result(const json_t *r, int i) {
    const char *id = i % 10 == 0 ? hp_ids[i] : hp_keys[i];
    char src[64], q[16];
    snprintf(src, sizeof src, "requests:%d:%lld", hp_parts[i], (long long)hp_offs[i]);
    cr_assert_str_eq(vw_kh_header(r, "source"), src);
    cr_assert_str_eq(vw_kh_header(r, "vela-status"), "200");
    cr_assert_str_eq(vw_kh_header(r, "vela-model"), "test-echo@0");
    cr_assert_str_eq(vw_kh_header(r, "request-id"), id);
    json_t *v = payload(r);
    cr_assert_str_eq(json_string_value(json_object_get(v, "request_id")), id);
    json_t *s = json_object_get(v, "source");
    cr_assert_str_eq(json_string_value(json_object_get(s, "topic")), "requests");
    cr_assert_eq(json_integer_value(json_object_get(s, "partition")), hp_parts[i]);
    cr_assert_eq(json_integer_value(json_object_get(s, "offset")), hp_offs[i]);
    cr_assert(json_integer_value(json_object_get(s, "timestamp")) > 0);
    snprintf(q, sizeof q, "q%d", i);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(v, "answers"), q), "echo")),
                     q);
    json_decref(v);
}

/* Metrics after the happy path, then the lag gauge and the health endpoints. */
static void check_happy_metrics(int port) {
    int code;
    char *m = vw_kh_http_get(port, "/metrics", &code);
    cr_assert_eq(code, 200);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_records_consumed_total"), N);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_results_total{status=\"200\"}"), N);
    cr_assert_gt(vw_kh_metric_in(m, "vela_worker_backpressure_total"), 0,
                 "max_in_flight 16 < 200: intake stopped");
    cr_assert_geq(vw_kh_metric_in(m, "vela_worker_batches_total"), N / 8);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_batch_size_count"),
                 vw_kh_metric_in(m, "vela_worker_batches_total"));
    cr_assert_gt(vw_kh_metric_in(m, "vela_worker_commits_total"), 0);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_dead_letters_total"), 0);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_e2e_latency_seconds_count"), N);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_in_flight"), 0);
    free(m);
    /* Consumer lag per partition, from librdkafka statistics (every 1 s here):
     * 0 once everything is committed. */
    double lag = -1;
    for (int tries = 0; tries < 40 && lag != 0; tries++) {
        vw_kh_sleep_ms(250);
        m = vw_kh_http_get(port, "/metrics", &code);
        lag = vw_kh_metric_in(m, "vela_worker_consumer_lag{topic=\"requests\",partition=\"0\"}");
        free(m);
    }
    cr_assert_eq(lag, 0, "consumer lag gauge of requests[0] reaches 0");
    char *body = vw_kh_http_get(port, "/readyz", &code);
    cr_assert_eq(code, 200);
    free(body);
    body = vw_kh_http_get(port, "/healthz", &code);
    cr_assert_eq(code, 200);
    free(body);
}

Test(kafka_worker, happy_path) {
    env e;
    start(&e, "happy",
          "batching: {max_tokens: 4096, max_requests: 8, max_wait_ms: 5}\n"
          "limits: {max_in_flight: 16}\n",
          NULL);
    happy_requests();
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", hp_msgs, N, hp_parts, hp_offs), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", N, 60000);
    if (json_array_size(res) != N)
        vw_kh_dump_log(&e.w);
    cr_assert_eq(json_array_size(res), N, "one result per request, got %zu", json_array_size(res));
    static int seen[N];
    int64_t last[4][4]; /* [results partition][input partition] last source offset */
    memset(last, 0xff, sizeof last);
    size_t k;
    json_t *r;
    json_array_foreach(res, k, r) {
        const char *key = json_string_value(json_object_get(r, "key"));
        int i = atoi(key + 1);
        cr_assert(i >= 0 && i < N && !strcmp(key, hp_keys[i]), "key %s unchanged", key);
        cr_assert_eq(seen[i]++, 0, "no duplicate for %s", key);
        check_happy_result(r, i);
        /* Per-key order: within a results partition, results of one input
         * partition appear in input offset order. */
        int rp = (int)json_integer_value(json_object_get(r, "partition"));
        cr_assert_gt(hp_offs[i], last[rp][hp_parts[i]], "order within requests[%d]", hp_parts[i]);
        last[rp][hp_parts[i]] = hp_offs[i];
    }
    json_decref(res);
    int64_t end[4];
    cr_assert_eq(vw_kh_end_offsets(e.b.bootstrap, "requests", 4, end), 0);
    cr_assert_eq(vw_kh_wait_committed(e.b.bootstrap, "happy", "requests", 4, end, 15000), 0,
                 "committed offsets reach the end of every partition");
    check_happy_metrics(vw_kh_metrics_port(&e.w, 1000));
    finish(&e);
}

/* consumer_lag on real statistics (issue 33 item 6: it read -1 on every
 * partition the group had never committed, empty ones included): one request
 * on partition 0 of four; every assigned partition then reads 0, the three
 * empty ones included, and none reads -1. */
Test(kafka_worker, consumer_lag_of_empty_partitions_is_zero) {
    env e;
    start(&e, "lag", NULL, NULL);
    cr_assert_eq(vw_kh_wait_log(&e.w, "partition assigned", 30000), 0);
    vw_kh_msg one = {
        .partition = 0, .key = "one", .value = "{\"state\":\"a\",\"questions\":{\"q\":{}}}"};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", &one, 1, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 1, 30000);
    cr_assert_eq(json_array_size(res), 1);
    json_decref(res);
    int port = vw_kh_metrics_port(&e.w, 1000);
    double lag[4] = {-1, -1, -1, -1};
    bool all_zero = false;
    for (int tries = 0; tries < 60 && !all_zero; tries++) {
        vw_kh_sleep_ms(250);
        int code;
        char *m = vw_kh_http_get(port, "/metrics", &code);
        all_zero = true;
        for (int p = 0; p < 4; p++) {
            char name[96];
            snprintf(name, sizeof name,
                     "vela_worker_consumer_lag{topic=\"requests\",partition=\"%d\"}", p);
            lag[p] = vw_kh_metric_in(m, name);
            all_zero = all_zero && lag[p] == 0;
        }
        free(m);
    }
    cr_assert(all_zero, "lag per partition: %g %g %g %g", lag[0], lag[1], lag[2], lag[3]);
    finish(&e);
}

/* Expected (key, vela-status, payload without request_id/source) per record. */
typedef struct reject_case {
    const char *key, *value;
    size_t len;
    const char *status, *detail;
} reject_case;

static const reject_case cases[] = {
    {"ok-1", "{\"state\":\"a\",\"questions\":{\"q\":{}}}", 0, "200", NULL},
    {"notjson", "not json", 0, "400",
     "[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: Expecting value\",\"type\":"
     "\"json_invalid\"}]"},
    {"trunc", "{\"state\": \"a\",", 0, "400",
     "[{\"loc\":[\"body\",14],\"msg\":\"JSON decode error: Expecting property name enclosed "
     "in double quotes\",\"type\":\"json_invalid\"}]"},
    {"big", "{\"state\":\"0123456789012345678901234567890123456789012345678901234567890\"}", 0,
     "413",
     "[{\"loc\":[\"body\"],\"msg\":\"Data should have at most 64 bytes\",\"type\":"
     "\"too_long\"}]"},
    {"array", "[1,2]", 0, "400",
     "[{\"loc\":[\"body\"],\"msg\":\"Input should be a valid dictionary or object to "
     "extract fields from\",\"type\":\"model_attributes_type\"}]"},
    {"utf8", "{\"s\":\"\xc3\x28\"}", 0, "400",
     "[{\"loc\":[\"body\",6],\"msg\":\"JSON decode error: 'utf-8' codec can't decode byte "
     "0xc3 in position 6: invalid continuation byte\",\"type\":\"json_invalid\"}]"},
    {"bom", "\xef\xbb\xbf{}", 0, "400",
     "[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: Unexpected UTF-8 BOM (decode using "
     "utf-8-sig)\",\"type\":\"json_invalid\"}]"},
    {"surrogate", "{\"state\":\"\\ud800\"}", 0, "400",
     "[{\"loc\":[\"body\"],\"msg\":\"the request contains an unpaired surrogate\",\"type\":"
     "\"json_invalid\"}]"},
    {"empty", NULL, 0, "400",
     "[{\"loc\":[\"body\",0],\"msg\":\"JSON decode error: Expecting value\",\"type\":"
     "\"json_invalid\"}]"},
    {"noq", "{\"state\":\"a\"}", 0, "422",
     "[{\"loc\":[\"body\",\"questions\"],\"msg\":\"Field required\",\"type\":\"missing\"}]"},
    {"ok-2", "{\"state\":\"b\",\"questions\":{\"q\":{}}}", 0, "200", NULL},
};
enum { NC = sizeof cases / sizeof cases[0] };

/* The result of cases[i] (input offset i of partition 0). */
static void check_rejection(json_t *res, size_t i) {
    const char *key = cases[i].key;
    json_t *r = by_key(res, key);
    cr_assert_not_null(r, "result for %s", key);
    cr_assert_str_eq(vw_kh_header(r, "vela-status"), cases[i].status, "%s", key);
    cr_assert_str_eq(vw_kh_header(r, "request-id"), key);
    char src[32];
    snprintf(src, sizeof src, "requests:0:%zu", i);
    cr_assert_str_eq(vw_kh_header(r, "source"), src);
    json_t *v = payload(r);
    cr_assert_str_eq(json_string_value(json_object_get(v, "request_id")), key);
    if (cases[i].detail) {
        cr_assert_eq(json_integer_value(json_object_get(v, "status")), atoi(cases[i].status));
        char *d = json_dumps(json_object_get(v, "detail"), JSON_COMPACT | JSON_ENSURE_ASCII);
        json_t *want = json_loads(cases[i].detail, 0, NULL);
        char *w = json_dumps(want, JSON_COMPACT | JSON_ENSURE_ASCII);
        cr_assert_str_eq(d, w, "%s: detail", key);
        free(d);
        free(w);
        json_decref(want);
        const char *keys_in_order[] = {"request_id", "source", "status", "detail"};
        const char *name;
        json_t *x;
        size_t pos = 0;
        json_object_foreach(v, name, x) {
            cr_assert(pos < 4 && !strcmp(name, keys_in_order[pos]), "field %zu is %s", pos, name);
            pos++;
        }
    }
    json_decref(v);
}

Test(kafka_worker, rejections_keep_the_partition_moving) {
    env e;
    char *extra_env[] = {"VELA_TOPICS_REPLY_ALLOW=replies", "VELA_LOG_LEVEL=debug", NULL};
    start(&e, "reject", "limits: {max_request_bytes: 64}\n", extra_env);
    vw_kh_msg msgs[NC + 2];
    for (int i = 0; i < NC; i++)
        msgs[i] = (vw_kh_msg){.partition = 0, .key = cases[i].key, .value = cases[i].value};
    /* reply-topic: honoured when allowed, ignored otherwise. */
    msgs[NC] = (vw_kh_msg){.partition = 1,
                           .key = "to-replies",
                           .value = "{\"questions\":{}}",
                           .hdr_name = {"reply-topic"},
                           .hdr_value = {"replies"}};
    msgs[NC + 1] = (vw_kh_msg){.partition = 1,
                               .key = "to-evil",
                               .value = "{\"questions\":{}}",
                               .hdr_name = {"reply-topic"},
                               .hdr_value = {"evil"}};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", msgs, NC + 2, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", NC + 1, 60000);
    if (json_array_size(res) != NC + 1)
        vw_kh_dump_log(&e.w);
    cr_assert_eq(json_array_size(res), NC + 1);
    /* Results are keyed like their requests, so they spread over the results
     * partitions; each is found by key and checked against its input offset. */
    cr_assert_not_null(by_key(res, "to-evil"), "a reply-topic outside the allow-list is ignored");
    for (size_t i = 0; i < NC; i++)
        check_rejection(res, i);
    json_decref(res);
    json_t *replies = vw_kh_consume(e.b.bootstrap, "replies", 1, 10000);
    cr_assert_eq(json_array_size(replies), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(replies, 0), "key")),
                     "to-replies");
    json_decref(replies);
    int64_t end[4];
    cr_assert_eq(vw_kh_end_offsets(e.b.bootstrap, "requests", 4, end), 0);
    cr_assert_eq(end[0], NC);
    cr_assert_eq(vw_kh_wait_committed(e.b.bootstrap, "reject", "requests", 2, end, 15000), 0);
    int port = vw_kh_metrics_port(&e.w, 1000), code;
    char *m = vw_kh_http_get(port, "/metrics", &code);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_rejections_total{type=\"json_invalid\"}"), 6);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_rejections_total{type=\"too_long\"}"), 1);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_rejections_total{type=\"model_attributes_type\"}"),
                 1);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_rejections_total{type=\"missing\"}"), 1);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_results_total{status=\"400\"}"), 7);
    free(m);
    /* No request payload reaches the log, at debug level, refused ones included
     * (docs/operations.md "Security"): ids, offsets and sizes only. */
    cr_assert_eq(vw_kh_count_log(&e.w, "0123456789012345678901234567890"), 0, "the 413 body");
    cr_assert_eq(vw_kh_count_log(&e.w, "not json"), 0, "the 400 body");
    cr_assert_eq(vw_kh_count_log(&e.w, "questions"), 0, "a request's fields");
    finish(&e);
}

Test(kafka_worker, transient_retries_and_dead_letters) {
    env e;
    char *extra_env[] = {"VW_TEST_ECHO_RETRY=r-retry:3", "VW_TEST_ECHO_HUGE=r-huge", NULL};
    start(&e, "retry", "delivery: {retry_backoff_ms: 20, retry_backoff_max_ms: 100}\n", extra_env);
    const char *v = "{\"state\":\"x\",\"questions\":{\"q\":{}}}";
    vw_kh_msg msgs[] = {
        {.partition = 2, .key = "r-retry", .value = v},
        {.partition = 2, .key = "r-huge", .value = v},
        {.partition = 2, .key = "after", .value = v},
    };
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", msgs, 3, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 2, 30000);
    json_t *dlq = vw_kh_consume(e.b.bootstrap, "requests.dlq", 1, 30000);
    if (json_array_size(res) != 2 || json_array_size(dlq) != 1)
        vw_kh_dump_log(&e.w);
    cr_assert_eq(json_array_size(res), 2, "the huge result is not in the results topic");
    cr_assert_not_null(by_key(res, "r-retry"));
    cr_assert_str_eq(vw_kh_header(by_key(res, "r-retry"), "vela-status"), "200",
                     "a transient failure is retried, never rejected");
    cr_assert_not_null(by_key(res, "after"), "the partition moves past the dead letter");
    cr_assert_eq(json_array_size(dlq), 1);
    json_t *d = json_array_get(dlq, 0);
    cr_assert_str_eq(json_string_value(json_object_get(d, "key")), "r-huge");
    cr_assert_str_eq(json_string_value(json_object_get(d, "payload")), v, "DLQ keeps the request");
    cr_assert_str_eq(vw_kh_header(d, "request-id"), "r-huge");
    cr_assert_str_eq(vw_kh_header(d, "source"), "requests:2:1");
    cr_assert_not_null(vw_kh_header(d, "vela-error"));
    cr_assert_str_eq(vw_kh_header(d, "vela-error-type"), "produce_failed");
    json_decref(res);
    json_decref(dlq);
    int64_t want[3] = {-1001, -1001, 3};
    cr_assert_eq(vw_kh_wait_committed(e.b.bootstrap, "retry", "requests", 3, want, 15000), 0,
                 "the dead-lettered record's offset moves on");
    int port = vw_kh_metrics_port(&e.w, 1000), code;
    char *m = vw_kh_http_get(port, "/metrics", &code);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_retries_total"), 3);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_dead_letters_total"), 1);
    cr_assert_eq(vw_kh_count_log(&e.w, "\"attempt\":3"), 1);
    free(m);
    finish(&e);
}

Test(kafka_worker, failed_commits_are_retried) {
    env e;
    start(&e, "commits", NULL, NULL);
    cr_assert_eq(vw_kh_wait_log(&e.w, "partition assigned", 20000), 0);
    /* The next 3 OffsetCommit requests (ApiKey 8) fail with
     * OFFSET_METADATA_TOO_LARGE (12), which librdkafka hands to the application;
     * the worker keeps the positions pending and commits them later. */
    cr_assert_eq(vw_kh_broker_control(&e.b, "err 8 3 12"), 0);
    const char *v = "{\"state\":\"x\",\"questions\":{\"q\":{}}}";
    vw_kh_msg msgs[8];
    for (int i = 0; i < 8; i++)
        msgs[i] = (vw_kh_msg){.partition = i % 4, .value = v};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", msgs, 8, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 8, 30000);
    cr_assert_eq(json_array_size(res), 8);
    json_decref(res);
    int64_t end[4] = {2, 2, 2, 2};
    int waited = vw_kh_wait_committed(e.b.bootstrap, "commits", "requests", 4, end, 20000);
    if (waited)
        vw_kh_dump_log(&e.w);
    cr_assert_eq(waited, 0, "every partition committed in the end");
    int port = vw_kh_metrics_port(&e.w, 1000), code;
    char *m = vw_kh_http_get(port, "/metrics", &code);
    cr_assert_geq(vw_kh_metric_in(m, "vela_worker_commit_failures_total"), 1,
                  "the injected failures");
    free(m);
    finish(&e);
}

/* A config without kafka.group.id joins the default group "vela-worker"
 * (docs/worker.md "Configuration"); it crashed before (no consumer queue). */
Test(kafka_worker, default_group_id) {
    env e;
    start(&e, NULL, NULL, NULL);
    vw_kh_msg msgs[4];
    for (int i = 0; i < 4; i++)
        msgs[i] = (vw_kh_msg){.partition = i, .key = "k", .value = "{\"questions\":{}}"};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", msgs, 4, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 4, 30000);
    if (json_array_size(res) != 4)
        vw_kh_dump_log(&e.w);
    cr_assert_eq(json_array_size(res), 4);
    json_decref(res);
    int64_t end[4] = {1, 1, 1, 1};
    cr_assert_eq(vw_kh_wait_committed(e.b.bootstrap, "vela-worker", "requests", 4, end, 15000), 0,
                 "offsets committed in the default group");
    finish(&e);
}

/* A record whose admission (the plan) takes 9 s, longer than
 * max.poll.interval.ms at its smallest (librdkafka wants at least
 * session.timeout.ms: 6 s here), on partition 0: the other partitions'
 * records are answered meanwhile, the group does not rebalance, and the slow
 * record is answered, logged and counted in slow_records_total. When the
 * plan ran on the Kafka thread, every partition waited for it and the
 * member left the group. */
Test(kafka_worker, slow_record_does_not_stall_the_others) {
    env e;
    char *extra_env[] = {"VW_TEST_ECHO_SLOW=slow:9000",
                         "VELA_KAFKA_CONSUMER_MAX_POLL_INTERVAL_MS=6000", NULL};
    start(&e, "slow", "limits: {slow_record_ms: 2000}\n", extra_env);
    vw_kh_msg warm = {.partition = 1, .key = "warm", .value = "{\"questions\":{}}"};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", &warm, 1, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 1, 30000);
    cr_assert_eq(json_array_size(res), 1, "the worker joined and answers");
    json_decref(res);
    int port = vw_kh_metrics_port(&e.w, 1000), code;
    char *m = vw_kh_http_get(port, "/metrics", &code);
    double rebalances = vw_kh_metric_in(m, "vela_worker_rebalances_total");
    free(m);
    enum { OTHERS = 30, BEHIND = 10 };
    vw_kh_msg msgs[1 + OTHERS + BEHIND];
    msgs[0] = (vw_kh_msg){.partition = 0, .key = "slow", .value = "{\"questions\":{}}"};
    for (int i = 0; i < OTHERS + BEHIND; i++) /* the others; the last ten behind it on 0 */
        msgs[1 + i] = (vw_kh_msg){.partition = i < OTHERS ? 1 + i % 3 : 0,
                                  .key = i < OTHERS ? "other" : "behind",
                                  .value = "{\"questions\":{}}"};
    int64_t t0 = vw_kh_now_ms();
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", msgs, 1 + OTHERS + BEHIND, NULL, NULL),
                 0);
    res = vw_kh_consume(e.b.bootstrap, "results", 1 + OTHERS, 8000);
    int64_t others_ms = vw_kh_now_ms() - t0;
    cr_assert_eq(json_array_size(res), 1 + OTHERS, "the other partitions answered in %lld ms",
                 (long long)others_ms);
    cr_assert_null(by_key(res, "slow"), "the slow record is still being admitted");
    cr_log_info("other partitions answered in %lld ms while one record took 9 s",
                (long long)others_ms);
    json_decref(res);
    res = vw_kh_consume(e.b.bootstrap, "results", 2 + OTHERS + BEHIND, 30000);
    cr_assert_eq(json_array_size(res), 2 + OTHERS + BEHIND);
    cr_assert_not_null(by_key(res, "slow"));
    json_decref(res);
    cr_assert_eq(vw_kh_count_log(&e.w, "\"msg\":\"slow record\""), 1);
    m = vw_kh_http_get(port, "/metrics", &code);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_slow_records_total"), 1);
    cr_assert_eq(vw_kh_metric_in(m, "vela_worker_rebalances_total"), rebalances, "no rebalance");
    free(m);
    finish(&e);
}

/* One partition under a slow "device" (VW_TEST_ECHO_DELAY_MS 50, batches of
 * 4: 25 batches, at least 1.25 s of execution) whose first record's admission
 * takes 500 ms (VW_TEST_ECHO_SLOW), with two admission threads: the results
 * go out batch by batch while the rest still runs, the first well before the
 * last. Before, the other admission thread's 99 records were batched and run
 * first and the first record ran last; the partition's results, produced in
 * offset order, all went out at once after the last batch (what the harness
 * saw as 0 results for 19-48 s, then all: docs/worker.md "Design"). */
Test(kafka_worker, a_partition_s_results_flow_while_its_batches_run) {
    env e;
    char *extra_env[] = {"VW_TEST_ECHO_SLOW=p000:500", "VW_TEST_ECHO_DELAY_MS=50", NULL};
    start(&e, "flowing",
          "batching: {max_tokens: 100000, max_requests: 4, max_wait_ms: 5}\n"
          "processing: {threads: 2}\n",
          extra_env);
    cr_assert_eq(vw_kh_wait_log(&e.w, "partition assigned", 30000), 0);
    enum { M = 100 };
    vw_kh_msg m[M];
    char keys[M][8];
    for (int i = 0; i < M; i++) {
        snprintf(keys[i], sizeof keys[i], "p%03d", i);
        m[i] = (vw_kh_msg){.partition = 0, .key = keys[i], .value = "{\"questions\":{\"q\":{}}}"};
    }
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", m, M, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", M, 60000);
    cr_assert_eq(json_array_size(res), M);
    int64_t first = INT64_MAX, last = 0;
    size_t i;
    json_t *r;
    json_array_foreach(res, i, r) { /* CreateTime: when the worker produced it */
        int64_t ts = json_integer_value(json_object_get(r, "ts"));
        first = ts < first ? ts : first;
        last = ts > last ? ts : last;
    }
    json_decref(res);
    cr_log_info("first result %lld ms before the last", (long long)(last - first));
    cr_assert_geq(last - first, 600, "the first result %lld ms before the last (12 batches: 600)",
                  (long long)(last - first));
    finish(&e);
}

/* The names of a process's threads (/proc/<pid>/task/<tid>/comm), one per
 * line; how many threads there are. */
static size_t thread_names(pid_t pid, char names[][32], size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    cr_assert_not_null(d, "%s", path);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < cap) {
        if (de->d_name[0] == '.')
            continue;
        char comm[400];
        snprintf(comm, sizeof comm, "%s/%s/comm", path, de->d_name);
        FILE *f = fopen(comm, "r");
        if (!f)
            continue; /* the thread ended meanwhile */
        if (fgets(names[n], sizeof names[n], f)) {
            names[n][strcspn(names[n], "\n")] = 0;
            n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

static size_t count_name(char names[][32], size_t n, const char *name, size_t prefix) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += prefix ? !strncmp(names[i], name, prefix) : !strcmp(names[i], name);
    return c;
}

/* Every thread the worker starts carries its name (docs/architecture.md
 * "Threads"), so top -H, ps -L, gdb and perf tell them apart: with two
 * processing threads, vw-exec, vw-admit/0-1, vw-proc/0-1 and vw-httpd (the
 * metrics endpoint) once each, beside librdkafka's own rdk:* threads; the
 * Kafka thread is the main thread and keeps the process's name. */
Test(kafka_worker, threads_are_named) {
    env e;
    /* OpenBLAS's own server threads, started when the library loads (before
     * main) and idle after (it runs single-threaded), keep the process's
     * name: none with OPENBLAS_NUM_THREADS=1, as ctest sets it. */
    char *const env1[] = {"OPENBLAS_NUM_THREADS=1", NULL};
    start(&e, "names", "processing: {threads: 2}\n", env1);
    cr_assert_eq(vw_kh_wait_log(&e.w, "partition assigned", 30000), 0);
    static char names[256][32];
    size_t n = thread_names(e.w.pid, names, 256);
    char all[4096] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", names[i]);
    static const char *const ours[] = {"vw-exec",   "vw-admit/0", "vw-admit/1",
                                       "vw-proc/0", "vw-proc/1",  "vw-httpd"};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        cr_assert_eq(count_name(names, n, ours[i], 0), 1, "one %s among %zu threads: %s", ours[i],
                     n, all);
    cr_assert_eq(count_name(names, n, "vw-admit/", 9), 2, "%s", all);
    cr_assert_eq(count_name(names, n, "vw-proc/", 8), 2, "%s", all);
    cr_assert_eq(count_name(names, n, "vela-worker", 0), 1, "only the Kafka (main) thread: %s",
                 all);
    cr_assert_geq(count_name(names, n, "rdk:", 4), 2, "librdkafka's threads: %s", all);
    finish(&e);
}
