/* test_eos_apache.c — the proof of `delivery.mode: exactly_once` on Apache
 * Kafka 4 (three KRaft nodes from scripts/kafka, $VW_KAFKA;
 * tests/support/kafka_apache.h), one cluster for the whole suite: a
 * read_committed checker (eos_check.h) counts the results of every request
 * id after each scenario, and each must be exactly once — 0 lost, 0
 * duplicates:
 *   1. kill -9 soak: >= 3,000 requests (VW_EOS_SOAK_REQUESTS) while the
 *      worker is killed every 2-4 s and started again (static membership, so
 *      the same transactional.id fences what the dead one left open); the
 *      same soak in at_least_once beside it, on its own topics, for contrast
 *      (its duplicates are printed, not bounded here);
 *   2. a rolling restart of three workers under load (SIGTERM, start again);
 *   3. leader failover under load: kill -9 of the node leading a results
 *      partition, then of the node leading the worker's __transaction_state
 *      partition (its transaction coordinator), each started again;
 *   4. a fenced zombie: a worker paused (SIGSTOP) while it works, its
 *      successor started with the same transactional.id, the zombie resumed:
 *      it stops with exit 1 and nothing it produced is visible;
 *   5. a crash between a transaction's offsets and its commit (the crash
 *      point after_txn_offsets), then the same worker again.
 * read_uncommitted counts are printed beside: what aborted transactions left
 * in the log, hidden from read_committed readers. Figures go to
 * $VW_REL_FIGURES (docs/reliability.md "Exactly once"). Without $VW_KAFKA the
 * test skips. */
#include "eos_check.h"
#include "kafka_apache.h"
#include "rel_check.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PARTS = 4 };

static vw_kh_kafka K;
static vw_eos_feeder *F; /* the requests' producer, idempotent */

/* A worker of scenario `tag`: reads <tag>-req, answers to <tag>-res; its
 * config's group is <group>; mode, worker id and extra settings through the
 * environment. */
typedef struct worker {
    char name[64], cfg[256], env_buf[8][128];
    char *env[9];
    vw_kh_proc p;
} worker;

static void worker_init(worker *w, const char *name, const char *tag, const char *group,
                        const char *mode, const char *const *extra_env) {
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    cr_assert_eq(vw_kh_write_config(&K.broker, group,
                                    "batching: {max_tokens: 100000, max_requests: 16, "
                                    "max_wait_ms: 5}\n"
                                    "limits: {max_in_flight: 64}\n"
                                    "shutdown: {grace_ms: 15000}\n",
                                    w->cfg, sizeof w->cfg),
                 0);
    int n = 0;
    snprintf(w->env_buf[n++], sizeof w->env_buf[0], "VELA_TOPICS_INPUT=%s-req", tag);
    snprintf(w->env_buf[n++], sizeof w->env_buf[0], "VELA_TOPICS_RESULTS=%s-res", tag);
    snprintf(w->env_buf[n++], sizeof w->env_buf[0], "VELA_TOPICS_DLQ=%s-dlq", tag);
    snprintf(w->env_buf[n++], sizeof w->env_buf[0], "VELA_DELIVERY_MODE=%s", mode);
    snprintf(w->env_buf[n++], sizeof w->env_buf[0], "VW_TEST_ECHO_DELAY_MS=10");
    for (size_t i = 0; extra_env && extra_env[i] && n < 8; i++)
        snprintf(w->env_buf[n++], sizeof w->env_buf[0], "%s", extra_env[i]);
    for (int i = 0; i < n; i++)
        w->env[i] = w->env_buf[i];
    w->env[n] = NULL;
}

static void worker_start(worker *w) {
    cr_assert_eq(vw_kh_worker_start(w->name, w->cfg, w->env, &w->p), 0);
}

static int worker_stop(worker *w, int sig) {
    int rc = vw_kh_stop(&w->p, sig, 30000);
    if (sig == SIGTERM && rc != 0)
        vw_kh_dump_log(&w->p);
    return rc;
}

static void topics(const char *tag) {
    char spec[128];
    snprintf(spec, sizeof spec, "%s-req:%d,%s-res:%d,%s-dlq:1", tag, PARTS, tag, PARTS, tag);
    cr_assert_eq(vw_kh_kafka_create_topics(&K, spec), 0);
}

/* Feeds requests [*fed, min(*fed + chunk, n)) of prefix to <tag>-req. */
static void feed(const char *tag, const char *prefix, size_t *fed, size_t chunk, size_t n) {
    char topic[64];
    snprintf(topic, sizeof topic, "%s-req", tag);
    size_t k = *fed + chunk > n ? n - *fed : chunk;
    if (k && vw_eos_feed(F, topic, *fed, k, PARTS, prefix, VW_REL_ECHO_VALUE) == 0)
        *fed += k;
}

/* The read_committed count of <tag>-res (and the read_uncommitted one,
 * printed beside), waiting up to timeout_ms for every id. */
static vw_eos_report check(const char *name, const char *tag, const char *prefix, size_t n,
                           int timeout_ms) {
    char topic[64], label[96];
    snprintf(topic, sizeof topic, "%s-res", tag);
    vw_eos_report rc = {0}, ru = {0};
    cr_assert_eq(vw_eos_count(K.broker.bootstrap, topic, PARTS, prefix, n, "read_committed",
                              timeout_ms, &rc),
                 0);
    snprintf(label, sizeof label, "%s", name);
    vw_eos_print(label, &rc);
    if (!vw_eos_count(K.broker.bootstrap, topic, PARTS, prefix, n, "read_uncommitted", 0, &ru))
        vw_eos_print(label, &ru);
    return rc;
}

static void exactly_once(const vw_eos_report *r, const char *what) {
    cr_assert_eq(r->lost, 0, "%s: %zu requests lost", what, r->lost);
    cr_assert_eq(r->duplicates, 0, "%s: %zu duplicates seen by read_committed", what,
                 r->duplicates);
    cr_assert_eq(r->order_errors, 0, "%s", what);
    cr_assert_eq(r->not_200, 0, "%s", what);
}

/* The group's committed offsets of <tag>-req reach its end (the
 * transactions' offsets, sent with their results). */
static void committed_at_end(const char *tag, const char *group) {
    char topic[64];
    snprintf(topic, sizeof topic, "%s-req", tag);
    int64_t end[PARTS];
    cr_assert_eq(vw_kh_end_offsets(K.broker.bootstrap, topic, PARTS, end), 0);
    cr_assert_eq(vw_kh_wait_committed(K.broker.bootstrap, group, topic, PARTS, end, 30000), 0,
                 "%s: committed offsets at the end", group);
}

/* 1. kill -9 soak, exactly_once and at_least_once side by side. */
static void kill9_soak(void) {
    const char *n_env = getenv("VW_EOS_SOAK_REQUESTS");
    size_t n = n_env ? (size_t)atol(n_env) : 3000;
    topics("soak");
    topics("alo");
    worker eos, alo;
    const char *eos_env[] = {"VELA_KAFKA_CONSUMER_GROUP_INSTANCE_ID=soak-0", NULL};
    const char *alo_env[] = {"VELA_KAFKA_CONSUMER_GROUP_INSTANCE_ID=alo-0", NULL};
    worker_init(&eos, "soak-eos", "soak", "soak", "exactly_once", eos_env);
    worker_init(&alo, "soak-alo", "alo", "alo", "at_least_once", alo_env);
    worker_start(&eos);
    worker_start(&alo);
    /* The first transactional producer of a cluster waits for
     * __transaction_state to be created. */
    cr_assert_eq(vw_kh_wait_log(&eos.p, "transactions ready", 150000), 0);
    cr_assert_eq(vw_kh_wait_log(&eos.p, "partition assigned", 60000), 0);
    cr_assert_eq(vw_kh_wait_log(&alo.p, "partition assigned", 60000), 0);
    unsigned seed = (unsigned)vw_kh_now_ms();
    fprintf(stderr, "eos_apache soak: %zu requests, seed %u\n", n, seed);
    size_t fed_e = 0, fed_a = 0;
    int kills = 0;
    int64_t t0 = vw_kh_now_ms(), next_kill = t0 + 2000 + rand_r(&seed) % 2000;
    /* About 100 requests/s to each worker: 50 every half second. */
    for (int64_t tick = t0; fed_e < n || fed_a < n; tick += 500) {
        feed("soak", "s", &fed_e, 50, n);
        feed("alo", "s", &fed_a, 50, n);
        if (vw_kh_now_ms() >= next_kill) {
            cr_assert_eq(worker_stop(&eos, SIGKILL), 128 + SIGKILL);
            cr_assert_eq(worker_stop(&alo, SIGKILL), 128 + SIGKILL);
            kills++;
            worker_start(&eos);
            worker_start(&alo);
            next_kill = vw_kh_now_ms() + 2000 + rand_r(&seed) % 2000;
        }
        int64_t wait = tick + 500 - vw_kh_now_ms();
        if (wait > 0)
            vw_kh_sleep_ms((int)wait);
    }
    int64_t fed_ms = vw_kh_now_ms() - t0;
    vw_eos_report re = check("eos_apache kill9_soak exactly_once", "soak", "s", n, 180000);
    vw_eos_report ra = check("eos_apache kill9_soak at_least_once", "alo", "s", n, 180000);
    fprintf(stderr,
            "eos_apache soak: %d kills in %lld ms; exactly_once %zu duplicates, at_least_once "
            "%zu duplicates (read_committed)\n",
            kills, (long long)fed_ms, re.duplicates, ra.duplicates);
    committed_at_end("soak", "soak");
    cr_assert_eq(worker_stop(&eos, SIGTERM), 0);
    cr_assert_eq(worker_stop(&alo, SIGTERM), 0);
    cr_assert_geq(kills, fed_ms / 5000 > 1 ? fed_ms / 5000 : 1,
                  "killed every few seconds (%d in %lld ms)", kills, (long long)fed_ms);
    exactly_once(&re, "kill -9 soak");
    cr_assert_eq(ra.lost, 0, "at_least_once loses nothing either");
}

/* 2. Three workers, restarted one after the other under load. */
static void rolling_restart(void) {
    enum { N = 1500 };
    topics("roll");
    worker w[3];
    for (int i = 0; i < 3; i++) {
        char name[16], id[48];
        snprintf(name, sizeof name, "roll-%d", i);
        snprintf(id, sizeof id, "VELA_DELIVERY_WORKER_ID=roll-%d", i);
        const char *env[] = {id, NULL};
        worker_init(&w[i], name, "roll", "roll", "exactly_once", env);
        worker_start(&w[i]);
    }
    for (int i = 0; i < 3; i++)
        cr_assert_eq(vw_kh_wait_log(&w[i].p, "transactions ready", 60000), 0);
    cr_assert_eq(vw_kh_wait_log(&w[0].p, "partition assigned", 60000), 0);
    size_t fed = 0;
    int restarted = 0;
    int64_t t0 = vw_kh_now_ms();
    for (int64_t tick = t0; fed < N; tick += 500) {
        feed("roll", "r", &fed, 50, N);
        /* One worker every 4 s: SIGTERM (it drains and commits), then
         * started again with the same worker id. */
        if (restarted < 3 && vw_kh_now_ms() - t0 >= 3000 + 4000 * restarted) {
            cr_assert_eq(worker_stop(&w[restarted], SIGTERM), 0, "roll-%d drains", restarted);
            worker_start(&w[restarted]);
            restarted++;
        }
        int64_t wait = tick + 500 - vw_kh_now_ms();
        if (wait > 0)
            vw_kh_sleep_ms((int)wait);
    }
    vw_eos_report r = check("eos_apache rolling_restart", "roll", "r", N, 180000);
    committed_at_end("roll", "roll");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(worker_stop(&w[i], SIGTERM), 0);
    cr_assert_eq(restarted, 3);
    exactly_once(&r, "rolling restart");
}

/* Kills node `id`, feeds for a while, starts it again and waits until the
 * topic's replicas are back in sync. */
static void bounce(int id, const char *what, const char *tag, size_t *fed, size_t n,
                   const char *sync_topic, int sync_parts) {
    fprintf(stderr, "eos_apache failover: kill -9 node %d (%s)\n", id, what);
    cr_assert_eq(vw_kh_kafka_kill_node(&K, id), 0);
    for (int i = 0; i < 10; i++) {
        feed(tag, "f", fed, 50, n);
        vw_kh_sleep_ms(500);
    }
    cr_assert_eq(vw_kh_kafka_restart_node(&K, id), 0);
    cr_assert_eq(vw_kh_kafka_wait_in_sync(&K, sync_topic, sync_parts, 60000), 0);
}

/* 3. The leader of a results partition, then the worker's transaction
 * coordinator, killed under load. */
static void leader_failover(void) {
    enum { N = 2000 };
    topics("fo");
    worker w;
    const char *env[] = {"VELA_DELIVERY_WORKER_ID=fo-0", NULL};
    worker_init(&w, "fo", "fo", "fo", "exactly_once", env);
    worker_start(&w);
    cr_assert_eq(vw_kh_wait_log(&w.p, "partition assigned", 60000), 0);
    size_t fed = 0;
    for (int i = 0; i < 4; i++) {
        feed("fo", "f", &fed, 50, N);
        vw_kh_sleep_ms(500);
    }
    int res_leader = vw_kh_kafka_leader(&K, "fo-res", 0);
    cr_assert_gt(res_leader, 0);
    bounce(res_leader, "leader of fo-res [0]", "fo", &fed, N, "fo-res", PARTS);
    /* transactional.id "fo-fo-0": prefix (the group) and the worker id. */
    int tp = vw_eos_txn_partition("fo-fo-0", 4); /* transaction.state.log.num.partitions */
    int coord = vw_kh_kafka_leader(&K, "__transaction_state", tp);
    cr_assert_gt(coord, 0, "__transaction_state [%d] has a leader", tp);
    char what[96];
    snprintf(what, sizeof what, "leader of __transaction_state [%d]: the transaction coordinator",
             tp);
    bounce(coord, what, "fo", &fed, N, "__transaction_state", 4);
    while (fed < N) {
        feed("fo", "f", &fed, 50, N);
        vw_kh_sleep_ms(500);
    }
    vw_eos_report r = check("eos_apache leader_failover", "fo", "f", N, 180000);
    committed_at_end("fo", "fo");
    cr_assert_eq(worker_stop(&w, SIGTERM), 0);
    exactly_once(&r, "leader failover");
}

/* 4. A paused worker, its successor with the same transactional.id, the
 * paused one resumed. */
static void fenced_zombie(void) {
    enum { N = 1000 };
    topics("zb");
    worker a, b;
    const char *env[] = {"VELA_DELIVERY_WORKER_ID=z", NULL};
    worker_init(&a, "zombie", "zb", "zb", "exactly_once", env);
    worker_init(&b, "successor", "zb", "zb", "exactly_once", env);
    worker_start(&a);
    cr_assert_eq(vw_kh_wait_log(&a.p, "partition assigned", 60000), 0);
    size_t fed = 0;
    for (int i = 0; i < 4; i++) {
        feed("zb", "z", &fed, 50, N);
        vw_kh_sleep_ms(500);
    }
    feed("zb", "z", &fed, 50, N);
    vw_kh_sleep_ms(30); /* mid-work: batches of 10 ms each are on their way */
    cr_assert_eq(kill(a.p.pid, SIGSTOP), 0);
    worker_start(&b); /* its init_transactions fences the paused producer */
    cr_assert_eq(vw_kh_wait_log(&b.p, "transactions ready", 60000), 0);
    /* The group hands the zombie's partitions over once its session ends. */
    cr_assert_eq(vw_kh_wait_log(&b.p, "partition assigned", 60000), 0);
    for (int i = 0; i < 4; i++) {
        feed("zb", "z", &fed, 50, N);
        vw_kh_sleep_ms(500);
    }
    cr_assert_eq(kill(a.p.pid, SIGCONT), 0);
    /* Resumed, the zombie rejoins the group as a new member and may get
     * partitions back: records keep coming, so whatever it answers meets its
     * fenced producer. */
    for (int64_t end = vw_kh_now_ms() + 60000;
         fed < N && vw_kh_now_ms() < end &&
         vw_kh_wait_log(&a.p, "\"level\":\"error\",\"module\":\"run\"", 500);)
        feed("zb", "z", &fed, 20, N);
    int rc = vw_rel_wait_exit(&a.p, 60000);
    char *last = vw_kh_last_log_line(&a.p);
    fprintf(stderr, "eos_apache zombie: exit %d, last line %s\n", rc, last ? last : "-");
    while (fed < N) {
        feed("zb", "z", &fed, 50, N);
        vw_kh_sleep_ms(200);
    }
    vw_eos_report r = check("eos_apache fenced_zombie", "zb", "z", N, 180000);
    committed_at_end("zb", "zb");
    cr_assert_eq(worker_stop(&b, SIGTERM), 0);
    cr_assert_eq(rc, 1, "the zombie stops with exit 1");
    cr_assert(last && (strstr(last, "FENCED") || strstr(last, "fenced") ||
                       strstr(last, "PRODUCER_EPOCH")),
              "its last line names the fencing: %s", last ? last : "(none)");
    free(last);
    exactly_once(&r, "fenced zombie");
}

/* 5. A crash at the worst moment: the transaction's offsets sent, its commit
 * not (VW_CRASH_AT after_txn_offsets), then the same worker again: its
 * init_transactions aborts what the dead one left open. */
static void crash_before_commit(void) {
    enum { N = 400 };
    topics("cr");
    worker w;
    const char *crash_env[] = {"VELA_DELIVERY_WORKER_ID=cr-0", "VW_CRASH_AT=after_txn_offsets:5",
                               NULL};
    const char *env[] = {"VELA_DELIVERY_WORKER_ID=cr-0", NULL};
    worker_init(&w, "crash", "cr", "cr", "exactly_once", crash_env);
    worker_start(&w);
    cr_assert_eq(vw_kh_wait_log(&w.p, "partition assigned", 60000), 0);
    size_t fed = 0;
    feed("cr", "c", &fed, 200, N);
    cr_assert_eq(vw_rel_wait_exit(&w.p, 60000), 134, "the crash point aborts the worker");
    worker_init(&w, "crash-again", "cr", "cr", "exactly_once", env);
    worker_start(&w);
    feed("cr", "c", &fed, 200, N);
    vw_eos_report r = check("eos_apache crash_after_txn_offsets", "cr", "c", N, 180000);
    committed_at_end("cr", "cr");
    cr_assert_eq(worker_stop(&w, SIGTERM), 0);
    exactly_once(&r, "crash between offsets and commit");
}

/* VW_EOS_ONLY=soak,roll,failover,zombie,crash runs those scenarios only
 * (all by default). */
static bool want(const char *name) {
    const char *only = getenv("VW_EOS_ONLY");
    return !only || !*only || strstr(only, name);
}

Test(eos_apache, exactly_once_under_crashes_restarts_and_failover) {
    if (vw_kh_kafka_skip_reason())
        cr_skip_test("%s", vw_kh_kafka_skip_reason());
    cr_assert_eq(vw_kh_kafka_start(3, NULL, &K), 0);
    F = vw_eos_feeder_new(K.broker.bootstrap);
    cr_assert_not_null(F);
    static const struct {
        const char *name;
        void (*run)(void);
    } scenarios[] = {{"soak", kill9_soak},
                     {"roll", rolling_restart},
                     {"failover", leader_failover},
                     {"zombie", fenced_zombie},
                     {"crash", crash_before_commit}};
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (!want(scenarios[i].name))
            continue;
        int64_t t0 = vw_kh_now_ms();
        scenarios[i].run();
        fprintf(stderr, "eos_apache: %s took %lld ms\n", scenarios[i].name,
                (long long)(vw_kh_now_ms() - t0));
    }
    vw_eos_feeder_free(F);
    vw_kh_kafka_stop(&K);
}
