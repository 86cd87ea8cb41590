/* test_reliability_heavy.c — the heaviest request the worker takes, through
 * the REAL pipeline (tiny bundle, model.device cpu): a long document with one
 * span question, windowed into many trees. Its cost in model tokens is read
 * from the engine here, so limits.max_request_tokens can be set exactly at it
 * (docs/contract.md Decision 9):
 *   - one token under it, the request is a 413 with the exact triple and the
 *     partition moves on;
 *   - at it, the request runs; SIGTERM while it executes ends the process
 *     within shutdown.grace_ms plus one tree's time (the executor stops
 *     between trees) with exit 3 (the grace period ended the drain), nothing
 *     is produced or committed for it, and the next worker of the group
 *     answers it. */
#include "kafka_harness.h"
#include "rel_check.h"
#include "vw_test.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define TOPICS "requests:1,results:1,requests.dlq:1"
#define VALID                                                                                      \
    "{\"state\":\"The parcel arrived.\",\"questions\":{\"ok\":{\"type\":\"noul\","                 \
    "\"instructions\":\"Is it fine?\"}}}"
#define GRACE_MS 1500

/* A document of n words and one span question over it. */
static char *heavy_request(size_t n) {
    static const char *const words[] = {"alpha", "beta", "gamma",  "delta",  "tom",    "baker",
                                        "email", "room", "report", "street", "london", "may"};
    vw_sbuf sb = {0};
    vw_sbuf_puts(&sb, "{\"state\":{\"request\":\"Find the names.\",\"document\":\"");
    for (size_t i = 0; i < n; i++)
        vw_sbuf_printf(&sb, "%s%s%zu", i ? " " : "", words[(i * 7 + i / 3) % 12], i % 97);
    vw_sbuf_puts(&sb, "\"},\"questions\":{\"pii\":{\"type\":\"span\",\"instructions\":\"Which "
                      "spans are names?\",\"criteria\":{\"PERSON\":\"person\"},\"over\":"
                      "\"document\"}}}");
    char *s = vw_sbuf_take(&sb, NULL);
    cr_assert_not_null(s);
    return s;
}

/* The request's model tokens as the worker's engine plans them. */
static int64_t cost_of(const char *bundle, const char *body) {
    vw_engine *e = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_engine_open(bundle, NULL, &e, &err), VW_OK, "%s", err.msg);
    vw_plan *p = NULL;
    vw_errlist d = {0};
    int status = 0;
    cr_assert_eq(vw_engine_plan(e, body, strlen(body), &p, &status, &d, &err), VW_OK);
    cr_assert_eq(status, 200);
    int64_t cost = vw_plan_cost(p);
    vw_plan_free(p);
    vw_errlist_free(&d);
    vw_engine_free(e);
    return cost;
}

typedef struct env {
    vw_kh_broker b;
    char cfg[256], bundle_env[600], limit_env[64];
    char *bundle, *body;
    int64_t cost;
} env;

/* Broker, config and the heavy request; the worker's token bound is
 * cost + limit_delta. */
static void setup_env(env *e, const char *group, int64_t limit_delta) {
    e->bundle = vw_test_path("fixtures/tiny-vela");
    e->body = heavy_request(9000);
    e->cost = cost_of(e->bundle, e->body);
    cr_log_info("heavy request: %zu bytes, %lld model tokens", strlen(e->body), (long long)e->cost);
    snprintf(e->bundle_env, sizeof e->bundle_env, "VELA_MODEL_BUNDLE=%s", e->bundle);
    snprintf(e->limit_env, sizeof e->limit_env, "VELA_LIMITS_MAX_REQUEST_TOKENS=%lld",
             (long long)(e->cost + limit_delta));
    cr_assert_eq(vw_kh_broker_start(TOPICS, &e->b), 0);
    char extra[64];
    snprintf(extra, sizeof extra, "shutdown: {grace_ms: %d}\n", GRACE_MS);
    cr_assert_eq(vw_kh_write_config(&e->b, group, extra, e->cfg, sizeof e->cfg), 0);
}

static void start_worker(env *e, const char *name, vw_kh_proc *w) {
    char *envp[] = {"VELA_MODEL_DEVICE=cpu", e->bundle_env, e->limit_env, NULL};
    cr_assert_eq(vw_kh_worker_start(name, e->cfg, envp, w), 0);
    cr_assert_eq(vw_kh_wait_log(w, "partition assigned", 60000), 0);
}

static void free_env(env *e) {
    vw_kh_broker_stop(&e->b);
    free(e->bundle);
    free(e->body);
}

static json_t *payload(const json_t *rec) {
    json_t *v = json_loads(json_string_value(json_object_get(rec, "payload")), 0, NULL);
    cr_assert_not_null(v);
    return v;
}

Test(reliability_heavy, one_token_over_the_bound_is_413) {
    env e;
    setup_env(&e, "heavy413", -1);
    vw_kh_proc w;
    start_worker(&e, "worker", &w);
    vw_kh_msg m[2] = {{.partition = 0, .key = "heavy", .value = e.body},
                      {.partition = 0, .key = "valid", .value = VALID}};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", m, 2, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 2, 60000);
    cr_assert_eq(json_array_size(res), 2);
    const json_t *r = json_array_get(res, 0);
    cr_assert_str_eq(vw_kh_header(r, "vela-status"), "413");
    json_t *v = payload(r);
    char want[256], *got = json_dumps(json_object_get(v, "detail"), JSON_COMPACT);
    snprintf(want, sizeof want,
             "[{\"loc\":[\"body\"],\"msg\":\"the request would run %lld tokens through the model, "
             "more than the limit of %lld\",\"type\":\"too_long\"}]",
             (long long)e.cost, (long long)(e.cost - 1));
    cr_assert_str_eq(got, want);
    free(got);
    json_decref(v);
    cr_assert_str_eq(vw_kh_header(json_array_get(res, 1), "vela-status"), "200");
    json_decref(res);
    int committed = vw_rel_committed_at_end(e.b.bootstrap, "heavy413", "requests", 1, 30000);
    int rc = vw_kh_stop(&w, SIGTERM, 30000);
    free_env(&e);
    cr_assert_eq(committed, 0);
    cr_assert_eq(rc, 0);
}

Test(reliability_heavy, sigterm_keeps_the_grace_period_with_the_largest_request_running) {
    env e;
    setup_env(&e, "heavy", 0);
    vw_kh_proc w;
    start_worker(&e, "worker", &w);
    vw_kh_msg warm = {.partition = 0, .key = "warm", .value = VALID};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", &warm, 1, NULL, NULL), 0);
    json_t *res = vw_kh_consume(e.b.bootstrap, "results", 1, 60000);
    cr_assert_eq(json_array_size(res), 1);
    json_decref(res);
    int port = vw_kh_metrics_port(&w, 1000);
    vw_kh_msg heavy = {.partition = 0, .key = "heavy", .value = e.body};
    cr_assert_eq(vw_kh_produce(e.b.bootstrap, "requests", &heavy, 1, NULL, NULL), 0);
    /* Its batch is with the executor once a second batch was dispatched. */
    int64_t until = vw_kh_now_ms() + 60000;
    while (vw_kh_metric(port, "vela_worker_batches_total") < 2 && vw_kh_now_ms() < until)
        vw_kh_sleep_ms(50);
    cr_assert_geq(vw_kh_metric(port, "vela_worker_batches_total"), 2);
    vw_kh_sleep_ms(300);
    int64_t t0 = vw_kh_now_ms();
    int rc = vw_kh_stop(&w, SIGTERM, 120000);
    int64_t took = vw_kh_now_ms() - t0;
#ifdef __SANITIZE_ADDRESS__
    const int64_t bound = GRACE_MS + 30000; /* one tree under ASan */
#else
    const int64_t bound = GRACE_MS + 3000; /* one tree, the consumer's close */
#endif
    cr_log_info("SIGTERM with a %lld-token request executing: exit %d after %lld ms (grace %d)",
                (long long)e.cost, rc, (long long)took, GRACE_MS);
    cr_assert_eq(rc, 3, "the grace period ended the drain with the request unanswered: exit 3");
    cr_assert_leq(took, bound, "exit %lld ms after SIGTERM, grace %d ms", (long long)took,
                  GRACE_MS);
    cr_assert_eq(vw_kh_count_log(&w, "\"msg\":\"grace period over, cancelling"), 1);
    res = vw_kh_consume(e.b.bootstrap, "results", 2, 2000);
    cr_assert_eq(json_array_size(res), 1, "nothing produced for the cancelled request");
    json_decref(res);
    int64_t committed = -1;
    cr_assert_eq(vw_kh_committed(e.b.bootstrap, "heavy", "requests", 1, &committed), 0);
    cr_assert_eq(committed, 1, "committed up to the cancelled request, not past it");
    /* The next member of the group reads it again and answers it. */
    vw_kh_proc w2;
    start_worker(&e, "worker2", &w2);
    res = vw_kh_consume(e.b.bootstrap, "results", 2, 600000);
    cr_assert_eq(json_array_size(res), 2);
    cr_assert_str_eq(vw_kh_header(json_array_get(res, 1), "vela-status"), "200");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(res, 1), "key")), "heavy");
    json_decref(res);
    int at_end = vw_rel_committed_at_end(e.b.bootstrap, "heavy", "requests", 1, 30000);
    rc = vw_kh_stop(&w2, SIGTERM, 600000);
    free_env(&e);
    cr_assert_eq(at_end, 0);
    cr_assert_eq(rc, 0);
}
