/* test_kafka_shutdown.c — SIGTERM/SIGINT as Kubernetes and systemd users
 * expect (issue 33 item 1; docs/worker.md "Shutdown", "Exit status"): the
 * worker says so at the signal ("shutdown requested: grace N ms, in flight
 * M"), every second while it drains ("draining: answered A, left L"), and
 * last what it did ("stopped: answered A, left unanswered U (not committed:
 * the group answers them)"); exit 0 when every record in flight was answered,
 * 3 when the grace period ended first — within the grace period, not 2.5 s
 * after it —, 128+N when a second signal N stopped it at once. Whatever the
 * end, nothing is committed past an unanswered record and a successor answers
 * the rest. Before: a drain cut by the grace period logged "drained
 * in_flight=27" and "stopped cleanly", exit 0, 3.2 s after the grace period
 * (the echo executor ran the batches it had queued), and a second signal was
 * ignored. The slow "device" is the echo processor's (VW_TEST_ECHO_DELAY_MS). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_harness.h"

#define TOPICS "requests:1,results:1,requests.dlq:1"
#define BODY "{\"state\":\"s\",\"questions\":{\"q\":{}}}"

typedef struct setup {
    vw_kh_broker b;
    char cfg[256];
} setup;

/* A broker, n records on the one input partition and a worker config. */
static void prepare(setup *s, const char *group, int grace_ms, int n) {
    cr_assert_eq(vw_kh_broker_start(TOPICS, &s->b), 0);
    char extra[160];
    snprintf(extra, sizeof extra,
             "batching: {max_requests: 1, max_wait_ms: 0}\nshutdown: {grace_ms: %d}\n", grace_ms);
    cr_assert_eq(vw_kh_write_config(&s->b, group, extra, s->cfg, sizeof s->cfg), 0);
    vw_kh_msg *msgs = calloc((size_t)n, sizeof *msgs);
    char(*keys)[16] = calloc((size_t)n, sizeof *keys);
    for (int i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "r%d", i);
        msgs[i] = (vw_kh_msg){.partition = 0, .key = keys[i], .value = BODY};
    }
    cr_assert_eq(vw_kh_produce(s->b.bootstrap, "requests", msgs, (size_t)n, NULL, NULL), 0);
    free(msgs);
    free(keys);
}

/* The worker has its partition and is working through its records (the slow
 * "device" takes 1.5 s a record in the first two tests); whether a result was
 * delivered yet does not matter (how many were is read from the topic). */
static void working(const vw_kh_proc *w) {
    cr_assert_eq(vw_kh_wait_log(w, "partition assigned", 60000), 0);
    vw_kh_sleep_ms(2500);
}

/* Results on the topic now. */
static size_t results_now(const setup *s) {
    json_t *res = vw_kh_consume(s->b.bootstrap, "results", 0, 0);
    size_t n = json_array_size(res);
    json_decref(res);
    return n;
}

/* The group's committed offset (0: none committed). */
static int64_t committed(const setup *s, const char *group) {
    int64_t off = -1;
    cr_assert_eq(vw_kh_committed(s->b.bootstrap, group, "requests", 1, &off), 0);
    return off < 0 ? 0 : off;
}

/* The numbers of the last line "stopped: answered A, left unanswered U". */
static void last_line(const vw_kh_proc *w, long *answered, long *left) {
    char *last = vw_kh_last_log_line(w);
    cr_assert_not_null(last);
    const char *at = strstr(last, "\"msg\":\"stopped: answered ");
    cr_assert_not_null(at, "the last line says how the worker stopped: %s", last);
    cr_assert_eq(sscanf(at, "\"msg\":\"stopped: answered %ld, left unanswered %ld", answered, left),
                 2, "%s", last);
    if (*left)
        cr_assert(strstr(at, " (not committed: the group answers them)\""), "%s", last);
    free(last);
}

/* A successor in the same group answers every record: nothing was lost. */
static void successor_answers_all(setup *s, int n) {
    vw_kh_proc c;
    cr_assert_eq(vw_kh_worker_start("successor", s->cfg, NULL, &c), 0);
    json_t *res = vw_kh_consume(s->b.bootstrap, "results", (size_t)n, 60000);
    cr_assert_geq(json_array_size(res), (size_t)n, "every record answered in the end");
    json_decref(res);
    cr_assert_eq(vw_kh_stop(&c, SIGTERM, 30000), 0);
}

Test(kafka_shutdown, grace_period_over_says_so_and_exits_3_in_time) {
    enum { N = 30, GRACE = 2000 };
    setup s;
    prepare(&s, "grace", GRACE, N);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=1500", NULL};
    vw_kh_proc w;
    cr_assert_eq(vw_kh_worker_start("worker", s.cfg, env, &w), 0);
    working(&w);
    int64_t t0 = vw_kh_now_ms();
    int rc = vw_kh_stop(&w, SIGTERM, 30000);
    int64_t took = vw_kh_now_ms() - t0;
    cr_log_info("SIGTERM with records in flight: exit %d after %lld ms (grace %d)", rc,
                (long long)took, GRACE);
    if (rc != 3)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, 3, "the grace period ended the drain: exit 3, not 0");
    cr_assert_leq(took, GRACE + 500, "exit %lld ms after SIGTERM, grace %d ms", (long long)took,
                  GRACE);
    cr_assert_eq(vw_kh_count_log(&w, "\"msg\":\"shutdown requested: grace 2000 ms, in flight "), 1);
    cr_assert_geq(vw_kh_count_log(&w, "\"msg\":\"draining: answered "), 1, "progress each second");
    long answered = -1, left = -1;
    last_line(&w, &answered, &left);
    cr_assert_gt(left, 0, "records were left");
    size_t by_w = results_now(&s);
    cr_assert_eq(committed(&s, "grace"), (int64_t)by_w,
                 "committed up to the first unanswered record (%zu answered)", by_w);
    successor_answers_all(&s, N);
    vw_kh_broker_stop(&s.b);
}

Test(kafka_shutdown, a_second_signal_stops_at_once) {
    enum { N = 30, GRACE = 20000 };
    setup s;
    prepare(&s, "twice", GRACE, N);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=1500", NULL};
    vw_kh_proc w;
    cr_assert_eq(vw_kh_worker_start("worker", s.cfg, env, &w), 0);
    working(&w);
    kill(w.pid, SIGTERM);
    cr_assert_eq(vw_kh_wait_log(&w, "\"msg\":\"shutdown requested", 10000), 0);
    int64_t t0 = vw_kh_now_ms();
    int rc = vw_kh_stop(&w, SIGINT, 30000);
    int64_t took = vw_kh_now_ms() - t0;
    cr_log_info("second signal: exit %d after %lld ms (grace %d)", rc, (long long)took, GRACE);
    if (rc != 130)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, 128 + SIGINT, "stopped at once by SIGINT: 130");
    cr_assert_leq(took, 3000, "at once: %lld ms, not the %d ms grace period", (long long)took,
                  GRACE);
    cr_assert_eq(vw_kh_count_log(&w, "\"msg\":\"second stop signal: stopping at once"), 1);
    long answered = -1, left = -1;
    last_line(&w, &answered, &left);
    cr_assert_gt(left, 0);
    size_t by_w = results_now(&s);
    cr_assert_eq(committed(&s, "twice"), (int64_t)by_w,
                 "nothing committed past an unanswered record (%zu answered)", by_w);
    successor_answers_all(&s, N);
    vw_kh_broker_stop(&s.b);
}

Test(kafka_shutdown, a_drain_that_answers_everything_exits_0) {
    enum { N = 6, GRACE = 15000 };
    setup s;
    prepare(&s, "clean", GRACE, N);
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=300", NULL};
    vw_kh_proc w;
    cr_assert_eq(vw_kh_worker_start("worker", s.cfg, env, &w), 0);
    working(&w);
    int rc = vw_kh_stop(&w, SIGTERM, 30000);
    if (rc)
        vw_kh_dump_log(&w);
    cr_assert_eq(rc, 0, "drained: exit 0");
    long answered = -1, left = -1;
    last_line(&w, &answered, &left);
    cr_assert_eq(left, 0);
    cr_assert_eq(vw_kh_count_log(&w, "\"end\":\"drained\""), 1);
    cr_assert_eq(results_now(&s), (size_t)N, "every record answered by the one worker");
    cr_assert_eq(committed(&s, "clean"), N);
    vw_kh_broker_stop(&s.b);
}
