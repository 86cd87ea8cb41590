/* test_kafka_group.c — group behaviour of `vela-worker run` against `vela-worker
 * broker`: a second worker joining and leaving while requests keep arriving (no
 * loss, duplicates bounded), and SIGTERM draining in-flight work (no loss, no
 * duplicates once a successor finishes the topic). Timings follow
 * docs/kafka-notes.md §1.5 (session.timeout.ms 6000 in the harness). */
/* No .timeout on these tests: Criterion 2.4.1 leaks 48 bytes (LeakSanitizer)
 * when timed tests run in parallel (ctest passes --jobs 2); every wait in the
 * harness is bounded instead, and CTest has its own timeout. */
#include "kafka_harness.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts results per request id ("r<n>"); returns distinct ids, sets *dups. */
static int tally(json_t *res, int n, int *dups) {
    int *seen = calloc((size_t)n, sizeof *seen), distinct = 0;
    size_t k;
    json_t *r;
    *dups = 0;
    json_array_foreach(res, k, r) {
        const char *id = vw_kh_header(r, "request-id");
        int i = id && id[0] == 'r' ? atoi(id + 1) : -1;
        cr_assert(i >= 0 && i < n, "unexpected result id %s", id ? id : "(none)");
        cr_assert_str_eq(vw_kh_header(r, "vela-status"), "200");
        if (seen[i]++)
            (*dups)++;
        else
            distinct++;
    }
    free(seen);
    return distinct;
}

typedef struct feeder {
    const char *bootstrap;
    atomic_int stop;
    int produced;
} feeder;

/* Produces r0, r1, ... in chunks of 10 every 100 ms until told to stop. */
static void *feed(void *arg) {
    feeder *f = arg;
    static char keys[4000][16];
    const char *v = "{\"state\":\"s\",\"questions\":{\"q\":{}}}";
    while (!atomic_load(&f->stop) && f->produced + 10 <= 4000) {
        vw_kh_msg msgs[10];
        for (int i = 0; i < 10; i++) {
            snprintf(keys[f->produced + i], sizeof keys[0], "r%d", f->produced + i);
            msgs[i] = (vw_kh_msg){.partition = -1, .key = keys[f->produced + i], .value = v};
        }
        if (vw_kh_produce(f->bootstrap, "requests", msgs, 10, NULL, NULL) == 0)
            f->produced += 10;
        vw_kh_sleep_ms(100);
    }
    return NULL;
}

Test(kafka_group, second_worker_joins_and_leaves) {
    vw_kh_broker b;
    vw_kh_proc a, c;
    char cfg[256];
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=5", NULL};
    cr_assert_eq(vw_kh_broker_start("requests:4,results:4,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "grp", "limits: {max_in_flight: 64}\n", cfg, sizeof cfg),
                 0);
    cr_assert_eq(vw_kh_worker_start("worker-a", cfg, env, &a), 0);
    cr_assert_eq(vw_kh_wait_log(&a, "partition assigned", 20000), 0);
    feeder f = {.bootstrap = b.bootstrap};
    pthread_t th;
    pthread_create(&th, NULL, feed, &f);
    vw_kh_sleep_ms(1000);
    cr_assert_eq(vw_kh_worker_start("worker-b", cfg, env, &c), 0);
    /* Cooperative-sticky: B gets its share after two rebalance rounds. */
    int joined = vw_kh_wait_log(&c, "partition assigned", 40000);
    if (joined)
        vw_kh_dump_log(&c);
    cr_assert_eq(joined, 0, "the second worker gets partitions");
    cr_assert_eq(vw_kh_wait_log(&a, "partition revoked", 5000), 0, "A gave some up");
    vw_kh_sleep_ms(1500); /* both serve for a while */
    int rc = vw_kh_stop(&c, SIGTERM, 20000);
    cr_assert_eq(rc, 0, "B leaves cleanly");
    vw_kh_sleep_ms(1000);
    atomic_store(&f.stop, 1);
    pthread_join(th, NULL);
    /* A takes B's partitions back and finishes everything. */
    int64_t end[4];
    cr_assert_eq(vw_kh_end_offsets(b.bootstrap, "requests", 4, end), 0);
    int waited = vw_kh_wait_committed(b.bootstrap, "grp", "requests", 4, end, 40000);
    if (waited)
        vw_kh_dump_log(&a);
    cr_assert_eq(waited, 0, "committed offsets reach the end");
    json_t *res = vw_kh_consume(b.bootstrap, "results", (size_t)f.produced, 20000);
    int dups, distinct = tally(res, f.produced, &dups);
    fprintf(stderr,
            "kafka_group: produced %d, results %zu, distinct %d, duplicates %d "
            "(B was assigned %d partitions)\n",
            f.produced, json_array_size(res), distinct, dups,
            vw_kh_count_log(&c, "partition assigned"));
    cr_assert_eq(distinct, f.produced, "no loss");
    cr_assert_leq(dups, 2 * 64, "duplicates bounded by the in-flight limit per rebalance");
    json_decref(res);
    cr_assert_eq(vw_kh_stop(&a, SIGTERM, 20000), 0);
    vw_kh_broker_stop(&b);
}

Test(kafka_group, sigterm_drains_without_loss_or_duplicates) {
    vw_kh_broker b;
    vw_kh_proc a, c;
    char cfg[256];
    enum { N = 600 };
    /* A slow processor keeps batches in flight when SIGTERM arrives. */
    char *env[] = {"VW_TEST_ECHO_DELAY_MS=40", NULL};
    cr_assert_eq(vw_kh_broker_start("requests:4,results:4,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "drain",
                                    "batching: {max_tokens: 100000, max_requests: 16, "
                                    "max_wait_ms: 5}\n"
                                    "limits: {max_in_flight: 128}\n"
                                    "shutdown: {grace_ms: 15000}\n",
                                    cfg, sizeof cfg),
                 0);
    static vw_kh_msg msgs[N];
    static char keys[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof keys[i], "r%d", i);
        msgs[i] = (vw_kh_msg){
            .partition = -1, .key = keys[i], .value = "{\"state\":\"s\",\"questions\":{\"q\":{}}}"};
    }
    cr_assert_eq(vw_kh_produce(b.bootstrap, "requests", msgs, N, NULL, NULL), 0);
    cr_assert_eq(vw_kh_worker_start("worker-a", cfg, env, &a), 0);
    json_t *res = vw_kh_consume(b.bootstrap, "results", 50, 30000);
    cr_assert_geq(json_array_size(res), 50, "worker A is producing results");
    json_decref(res);
    int64_t t0 = vw_kh_now_ms();
    int rc = vw_kh_stop(&a, SIGTERM, 20000);
    int64_t took = vw_kh_now_ms() - t0;
    if (rc)
        vw_kh_dump_log(&a);
    cr_assert_eq(rc, 0, "SIGTERM: exit 0");
    cr_assert_lt(took, 15000, "within shutdown.grace_ms (%lld ms)", (long long)took);
    cr_assert_eq(vw_kh_count_log(&a, "left unanswered 0\",\"end\":\"drained\""), 1,
                 "nothing left in flight");
    res = vw_kh_consume(b.bootstrap, "results", 0, 0);
    size_t by_a = json_array_size(res);
    json_decref(res);
    fprintf(stderr, "kafka_group: worker A answered %zu of %d before stopping (%lld ms to drain)\n",
            by_a, N, (long long)took);
    cr_assert_lt(by_a, (size_t)N, "A stopped before the end (else the test proves nothing)");
    /* A successor in the same group resumes from A's commits. */
    cr_assert_eq(vw_kh_worker_start("worker-b", cfg, NULL, &c), 0);
    res = vw_kh_consume(b.bootstrap, "results", N, 40000);
    int dups, distinct = tally(res, N, &dups);
    json_decref(res);
    cr_assert_eq(distinct, N, "no loss");
    cr_assert_eq(dups, 0, "no duplicates: A committed exactly what it delivered");
    int64_t end[4];
    cr_assert_eq(vw_kh_end_offsets(b.bootstrap, "requests", 4, end), 0);
    cr_assert_eq(vw_kh_wait_committed(b.bootstrap, "drain", "requests", 4, end, 15000), 0);
    cr_assert_eq(vw_kh_stop(&c, SIGTERM, 20000), 0);
    vw_kh_broker_stop(&b);
}
