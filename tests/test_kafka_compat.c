/* test_kafka_compat.c — what the worker relies on in whichever librdkafka is
 * loaded (the test command runs this suite on Debian's 2.0.2 and on 2.16,
 * docs/operations.md "librdkafka versions"):
 *  - the text of librdkafka's join-state debug lines, which the worker reads
 *    (vw_rejoin_join_line): a consumer joining a group must show a
 *    non-steady state, a JoinGroup answer (classic) and then steady;
 *  - `vela-worker version` names the library loaded and the work-arounds on;
 *  - group.protocol consumer (KIP-848): refused with a clear error below
 *    2.12, a classic-only setting refused by name from 2.12 on. */
#include "rejoin.h"
#include "kafka_conf.h"
#include "kafka_harness.h"
#include "util/file.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct seen {
    atomic_int lines, unsteady, steady_after_unsteady, joined;
} seen;

static seen g_seen;

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    (void)level;
    bool steady, joined;
    if (!vw_rejoin_join_line(fac, buf, &steady, &joined))
        return;
    atomic_fetch_add(&g_seen.lines, 1);
    if (!steady)
        atomic_fetch_add(&g_seen.unsteady, 1);
    else if (atomic_load(&g_seen.unsteady))
        atomic_fetch_add(&g_seen.steady_after_unsteady, 1);
    if (joined)
        atomic_fetch_add(&g_seen.joined, 1);
}

static void set(rd_kafka_conf_t *c, const char *k, const char *v) {
    char e[256];
    cr_assert_eq(rd_kafka_conf_set(c, k, v, e, sizeof e), RD_KAFKA_CONF_OK, "%s=%s: %s", k, v, e);
}

/* A consumer of this process joins a group on the harness broker, with the
 * worker's own settings for the protocol in use, and takes its assignment;
 * every join-state line it logs goes through the worker's reader. */
Test(kafka_compat, join_state_lines_are_read) {
    vw_kh_broker b;
    cr_assert_eq(vw_kh_broker_start("requests:4", &b), 0);
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    set(c, "bootstrap.servers", b.bootstrap);
    set(c, "group.id", "compat-join");
    set(c, "debug", "cgrp");
    if (vw_kh_kip848()) {
        set(c, "group.protocol", "consumer");
    } else {
        set(c, "partition.assignment.strategy", "cooperative-sticky");
        set(c, "session.timeout.ms", "6000");
        set(c, "heartbeat.interval.ms", "1000");
    }
    rd_kafka_conf_set_log_cb(c, on_log);
    char err[256];
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    cr_assert_not_null(rk, "%s", err);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(t, "requests", RD_KAFKA_PARTITION_UA);
    cr_assert_eq(rd_kafka_subscribe(rk, t), 0);
    rd_kafka_topic_partition_list_destroy(t);
    int64_t end = vw_kh_now_ms() + 30000;
    rd_kafka_topic_partition_list_t *a = NULL;
    while (vw_kh_now_ms() < end) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m)
            rd_kafka_message_destroy(m);
        if (a)
            rd_kafka_topic_partition_list_destroy(a);
        a = NULL;
        if (!rd_kafka_assignment(rk, &a) && a && a->cnt == 4 &&
            atomic_load(&g_seen.steady_after_unsteady))
            break;
    }
    int assigned = a ? a->cnt : 0;
    if (a)
        rd_kafka_topic_partition_list_destroy(a);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    vw_kh_broker_stop(&b);
    fprintf(stderr, "librdkafka %s %s: %d join-state lines, %d not steady, %d JoinGroup answers\n",
            rd_kafka_version_str(), vw_kh_kip848() ? "consumer" : "classic",
            atomic_load(&g_seen.lines), atomic_load(&g_seen.unsteady), atomic_load(&g_seen.joined));
    cr_assert_eq(assigned, 4, "the consumer got its assignment");
    cr_assert_gt(atomic_load(&g_seen.unsteady), 0, "a join-state change away from steady");
    cr_assert_gt(atomic_load(&g_seen.steady_after_unsteady), 0, "then back to steady");
    if (!vw_kh_kip848()) /* KIP-848 has no JoinGroup */
        cr_assert_gt(atomic_load(&g_seen.joined), 0, "a JoinGroup answer (-> wait-sync)");
}

Test(kafka_compat, version_names_the_library_loaded) {
    vw_kh_proc p;
    char *args[] = {"version", NULL};
    cr_assert_eq(vw_kh_spawn("version", args, NULL, &p), 0);
    cr_assert_eq(vw_kh_stop(&p, 0, 10000), 0);
    char *out = vw_read_file(p.out_path, NULL);
    cr_assert_not_null(out);
    char want[160];
    snprintf(want, sizeof want, "librdkafka: %s (built against ", rd_kafka_version_str());
    cr_assert(strstr(out, want), "names %s: %s", rd_kafka_version_str(), out);
    const char *row = strstr(out, "  #4312 fixed in 2.3.0");
    cr_assert_not_null(row, "%s", out);
    const char *eol = strchr(row, '\n');
    cr_assert_not_null(eol);
    const char *on = vw_kafka_before(2, 3, 0) ? " on\n" : " off\n";
    cr_assert(!strncmp(eol - strlen(on) + 1, on, strlen(on)),
              "the #4312 row says whether it applies here (%s): %.60s", on, row);
    free(out);
}

/* The worker started with one more setting (a VELA_ override) exits non-zero,
 * and its log says why in words a user can act on. */
static void refused(char *setting, const char *want1, const char *want2) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    cr_assert_eq(vw_kh_broker_start("requests:4,results:4,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "compat-refused", NULL, cfg, sizeof cfg), 0);
    char *env[] = {setting, NULL};
    cr_assert_eq(vw_kh_worker_start("refused", cfg, env, &w), 0);
    int rc = vw_kh_stop(&w, 0, 20000);
    vw_kh_broker_stop(&b);
    if (rc == 0 || vw_kh_count_log(&w, want1) == 0 || vw_kh_count_log(&w, want2) == 0)
        vw_kh_dump_log(&w);
    cr_assert_neq(rc, 0, "the worker refuses to start");
    cr_assert_gt(vw_kh_count_log(&w, want1), 0, "the log says %s", want1);
    cr_assert_gt(vw_kh_count_log(&w, want2), 0, "the log says %s", want2);
}

Test(kafka_compat, kip848_settings_checked) {
    if (vw_kafka_before(2, 12, 0)) {
        /* The configuration check asks librdkafka about each key; before 2.12
         * it does not know group.protocol. The error names the variable the
         * setting came from (docs/worker.md "Start-up errors"). */
        refused("VELA_KAFKA_CONSUMER_GROUP_PROTOCOL=consumer", "group.protocol",
                "VELA_KAFKA_CONSUMER_GROUP_PROTOCOL (environment)");
        return;
    }
    if (vw_kh_kip848()) /* the harness config is a KIP-848 one: add a classic key */
        refused("VELA_KAFKA_CONSUMER_SESSION_TIMEOUT_MS=6000",
                "kafka.consumer.session.timeout.ms is a setting of the classic group protocol",
                "group.protocol is consumer");
    else /* the harness config has classic keys: switch the protocol */
        refused("VELA_KAFKA_CONSUMER_GROUP_PROTOCOL=consumer",
                "kafka.consumer.session.timeout.ms is a setting of the classic group protocol",
                "group.protocol is consumer");
}
