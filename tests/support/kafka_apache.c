/* kafka_apache.c — see kafka_apache.h. Test-only: scripts/kafka writes and
 * formats the nodes, this file runs them by pid and asks them through
 * librdkafka (metadata, admin API). */
#include "kafka_apache.h"

#include <ftw.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/file.h"

#define SCRIPT VW_SOURCE_DIR "/scripts/kafka"

const char *vw_kh_kafka_skip_reason(void) {
    const char *k = getenv("VW_KAFKA");
    if (!k || !*k)
        return "VW_KAFKA is not set (scripts/kafka fetch resolves Apache Kafka; scripts/test "
               "sets it)";
    return NULL;
}

static long rss_kb(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

static rd_kafka_t *admin_client(const char *bootstrap) {
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(c, "log_level", "2", err, sizeof err)) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "kafka_apache: rd_kafka_new: %s\n", err);
        rd_kafka_conf_destroy(c);
    }
    return rk;
}

/* Brokers in the cluster's metadata (registered and unfenced), -1 on error. */
static int brokers_up(rd_kafka_t *rk) {
    const rd_kafka_metadata_t *md = NULL;
    if (rd_kafka_metadata(rk, 0, NULL, &md, 2000))
        return -1;
    int n = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    return n;
}

static int node_start(vw_kh_kafka *k, int id) {
    char name[32], idstr[8];
    snprintf(name, sizeof name, "kafka-node-%d", id);
    snprintf(idstr, sizeof idstr, "%d", id);
    char *args[] = {"node", k->dir, idstr, NULL};
    return vw_kh_spawn_bin(SCRIPT, name, args, NULL, &k->node[id - 1]);
}

static int wait_listening(vw_kh_kafka *k, int id, int timeout_ms) {
    int64_t end = vw_kh_now_ms() + timeout_ms;
    while (!vw_kh_listening(k->port[id - 1])) {
        siginfo_t si = {0};
        if (waitid(P_PID, (id_t)k->node[id - 1].pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid) {
            fprintf(stderr, "kafka_apache: node %d exited while starting (%s, %s/node-%d)\n", id,
                    k->node[id - 1].log_path, k->dir, id);
            return -1;
        }
        if (vw_kh_now_ms() > end) {
            fprintf(stderr, "kafka_apache: node %d does not listen after %d ms\n", id, timeout_ms);
            return -1;
        }
        vw_kh_sleep_ms(50);
    }
    return 0;
}

static int wait_brokers(const vw_kh_kafka *k, int want, int timeout_ms) {
    rd_kafka_t *rk = admin_client(k->broker.bootstrap);
    int64_t end = vw_kh_now_ms() + timeout_ms;
    int n = -1;
    while (rk && (n = brokers_up(rk)) != want && vw_kh_now_ms() < end)
        vw_kh_sleep_ms(100);
    if (rk)
        rd_kafka_destroy(rk);
    if (n != want)
        fprintf(stderr, "kafka_apache: %d of %d brokers registered\n", n, want);
    return n == want ? 0 : -1;
}

/* Reads "key=value" from dir/cluster.env into out (empty when absent). */
static void cluster_env(const char *dir, const char *key, char *out, size_t cap) {
    char path[320];
    snprintf(path, sizeof path, "%s/cluster.env", dir);
    char *s = vw_read_file(path, NULL);
    size_t kl = strlen(key);
    out[0] = 0;
    for (char *line = s, *nl; line && *line; line = nl ? nl + 1 : line + strlen(line)) {
        nl = strchr(line, '\n');
        if (!strncmp(line, key, kl) && line[kl] == '=')
            snprintf(out, cap, "%.*s", (int)((nl ? nl : line + strlen(line)) - line - kl - 1),
                     line + kl + 1);
    }
    free(s);
}

int vw_kh_kafka_start(int nodes, const char *topics, vw_kh_kafka *k) {
    return vw_kh_kafka_start_opts(nodes, topics, NULL, k);
}

int vw_kh_kafka_start_opts(int nodes, const char *topics, const vw_kh_kafka_opts *o,
                           vw_kh_kafka *k) {
    memset(k, 0, sizeof *k);
    k->broker.control_fd = -1;
    if (vw_kh_kafka_skip_reason() || (nodes != 1 && nodes != 3)) {
        fprintf(stderr, "kafka_apache: %s\n",
                vw_kh_kafka_skip_reason() ? vw_kh_kafka_skip_reason() : "nodes: 1 or 3");
        return -1;
    }
    static int seq;
    snprintf(k->dir, sizeof k->dir, "%s/kafka-%d", vw_kh_dir(), seq++);
    k->nodes = nodes;
    char n[8];
    snprintf(n, sizeof n, "%d", nodes);
    char *args[] = {"init",
                    n,
                    k->dir,
                    o && o->sasl_ssl_dir ? "--sasl-ssl" : NULL,
                    o ? (char *)o->sasl_ssl_dir : NULL,
                    NULL};
    int64_t t0 = vw_kh_now_ms();
    vw_kh_proc init;
    if (vw_kh_spawn_bin(SCRIPT, "kafka-init", args, NULL, &init) || vw_kh_stop(&init, 0, 180000)) {
        fprintf(stderr, "kafka_apache: scripts/kafka init failed (%s)\n", init.log_path);
        vw_kh_dump_log(&init);
        return -1;
    }
    k->format_ms = vw_kh_now_ms() - t0;
    cluster_env(k->dir, "bootstrap", k->broker.bootstrap, sizeof k->broker.bootstrap);
    cluster_env(k->dir, "sasl_ssl", k->sasl_bootstrap, sizeof k->sasl_bootstrap);
    const char *s = k->broker.bootstrap;
    for (int i = 0; i < nodes && s; i++) {
        const char *colon = strchr(s, ':');
        k->port[i] = colon ? atoi(colon + 1) : -1;
        s = strchr(s, ',');
        s = s ? s + 1 : NULL;
    }
    int64_t t1 = vw_kh_now_ms();
    for (int id = 1; id <= nodes; id++)
        if (node_start(k, id))
            goto fail;
    for (int id = 1; id <= nodes; id++)
        if (wait_listening(k, id, 180000))
            goto fail;
    if (wait_brokers(k, nodes, 120000))
        goto fail;
    k->start_ms = vw_kh_now_ms() - t1;
    for (int i = 0; i < nodes; i++)
        k->rss_kb[i] = rss_kb(k->node[i].pid);
    int64_t t2 = vw_kh_now_ms();
    if (topics && *topics && vw_kh_kafka_create_topics(k, topics))
        goto fail;
    k->topics_ms = vw_kh_now_ms() - t2;
    fprintf(stderr,
            "kafka_apache: %d node(s) at %s: format %lld ms, start %lld ms, topics %lld ms; "
            "resident %ld/%ld/%ld MiB\n",
            nodes, k->broker.bootstrap, (long long)k->format_ms, (long long)k->start_ms,
            (long long)k->topics_ms, k->rss_kb[0] / 1024, k->rss_kb[1] / 1024, k->rss_kb[2] / 1024);
    return 0;
fail:
    for (int i = 0; i < nodes; i++)
        if (k->node[i].pid > 0) {
            vw_kh_stop(&k->node[i], SIGKILL, 5000);
            vw_kh_dump_log(&k->node[i]);
        }
    return -1;
}

/* Parses "name:parts,..." into names (in buf) and partition counts. */
static int parse_topics(const char *spec, char *buf, size_t cap, char **names, int *parts,
                        int max) {
    snprintf(buf, cap, "%s", spec);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        if (!colon)
            return -1;
        *colon = 0;
        names[n] = t;
        parts[n++] = atoi(colon + 1);
    }
    return n;
}

/* Whether every partition of every topic has a leader, and (in_sync) all
 * replicas in its ISR. */
static bool topics_ready(rd_kafka_t *rk, char **names, const int *parts, int n, int replicas,
                         bool in_sync) {
    for (int t = 0; t < n; t++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, names[t], NULL);
        const rd_kafka_metadata_t *md = NULL;
        bool ok = rkt && !rd_kafka_metadata(rk, 0, rkt, &md, 2000) && md->topic_cnt == 1 &&
                  !md->topics[0].err && md->topics[0].partition_cnt == parts[t];
        for (int p = 0; ok && p < md->topics[0].partition_cnt; p++) {
            const rd_kafka_metadata_partition_t *mp = &md->topics[0].partitions[p];
            ok = !mp->err && mp->leader >= 0 && (!in_sync || mp->isr_cnt == replicas);
        }
        if (md)
            rd_kafka_metadata_destroy(md);
        if (rkt)
            rd_kafka_topic_destroy(rkt);
        if (!ok)
            return false;
    }
    return true;
}

int vw_kh_kafka_create_topics(vw_kh_kafka *k, const char *topics) {
    enum { MAX_TOPICS = 16 };
    char buf[512], err[256], *names[MAX_TOPICS];
    int parts[MAX_TOPICS];
    int n = parse_topics(topics, buf, sizeof buf, names, parts, MAX_TOPICS);
    rd_kafka_t *rk = admin_client(k->broker.bootstrap);
    if (n <= 0 || !rk) {
        fprintf(stderr, "kafka_apache: bad topic spec %s\n", topics);
        if (rk)
            rd_kafka_destroy(rk);
        return -1;
    }
    const int rf = k->nodes < 3 ? k->nodes : 3;
    rd_kafka_NewTopic_t *nt[MAX_TOPICS];
    for (int i = 0; i < n; i++)
        nt[i] = rd_kafka_NewTopic_new(names[i], parts[i], rf, err, sizeof err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_operation_timeout(opt, 30000, err, sizeof err);
    rd_kafka_CreateTopics(rk, nt, (size_t)n, opt, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 60000);
    int rc = ev && !rd_kafka_event_error(ev) ? 0 : -1;
    if (ev && rc)
        fprintf(stderr, "kafka_apache: CreateTopics: %s\n", rd_kafka_event_error_string(ev));
    const rd_kafka_CreateTopics_result_t *res = ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
    size_t cnt = 0;
    const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : 0;
    for (size_t i = 0; i < cnt; i++)
        if (rd_kafka_topic_result_error(tr[i])) {
            fprintf(stderr, "kafka_apache: create %s: %s\n", rd_kafka_topic_result_name(tr[i]),
                    rd_kafka_topic_result_error_string(tr[i]));
            rc = -1;
        }
    if (!ev)
        fprintf(stderr, "kafka_apache: CreateTopics: no answer in 60 s\n");
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opt);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy_array(nt, (size_t)n);
    int64_t end = vw_kh_now_ms() + 60000;
    while (!rc && !topics_ready(rk, names, parts, n, rf, false))
        if (vw_kh_now_ms() > end) {
            fprintf(stderr, "kafka_apache: topics %s have no leaders after 60 s\n", topics);
            rc = -1;
        } else
            vw_kh_sleep_ms(100);
    rd_kafka_destroy(rk);
    return ev ? rc : -1;
}

int vw_kh_kafka_leader(const vw_kh_kafka *k, const char *topic, int partition) {
    rd_kafka_t *rk = admin_client(k->broker.bootstrap);
    if (!rk)
        return -1;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const rd_kafka_metadata_t *md = NULL;
    int leader = -1;
    if (rkt && !rd_kafka_metadata(rk, 0, rkt, &md, 5000) && md->topic_cnt == 1)
        for (int p = 0; p < md->topics[0].partition_cnt; p++)
            if (md->topics[0].partitions[p].id == partition)
                leader = md->topics[0].partitions[p].leader;
    if (md)
        rd_kafka_metadata_destroy(md);
    if (rkt)
        rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return leader >= 1 && leader <= k->nodes ? leader : -1;
}

int vw_kh_kafka_wait_in_sync(const vw_kh_kafka *k, const char *topic, int n_parts, int timeout_ms) {
    rd_kafka_t *rk = admin_client(k->broker.bootstrap);
    char *names[1] = {(char *)topic};
    int parts[1] = {n_parts};
    int64_t end = vw_kh_now_ms() + timeout_ms;
    bool ok = false;
    while (rk && !(ok = topics_ready(rk, names, parts, 1, k->nodes < 3 ? k->nodes : 3, true)) &&
           vw_kh_now_ms() < end)
        vw_kh_sleep_ms(200);
    if (rk)
        rd_kafka_destroy(rk);
    if (!ok)
        fprintf(stderr, "kafka_apache: %s not in sync after %d ms\n", topic, timeout_ms);
    return ok ? 0 : -1;
}

int vw_kh_kafka_kill_node(vw_kh_kafka *k, int id) {
    if (id < 1 || id > k->nodes || k->node[id - 1].pid <= 0)
        return -1;
    return vw_kh_stop(&k->node[id - 1], SIGKILL, 10000) == 128 + SIGKILL ? 0 : -1;
}

int vw_kh_kafka_restart_node(vw_kh_kafka *k, int id) {
    if (id < 1 || id > k->nodes || k->node[id - 1].pid > 0)
        return -1;
    /* The node's stdout/stderr log starts again: keep the first run's as .1. */
    char old[300];
    snprintf(old, sizeof old, "%s.1", k->node[id - 1].log_path);
    rename(k->node[id - 1].log_path, old);
    if (node_start(k, id) || wait_listening(k, id, 180000))
        return -1;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void vw_kh_kafka_stop(vw_kh_kafka *k) {
    for (int i = 0; i < k->nodes; i++)
        if (k->node[i].pid > 0)
            kill(k->node[i].pid, SIGTERM);
    bool clean = true;
    for (int i = 0; i < k->nodes; i++)
        if (k->node[i].pid > 0 && vw_kh_stop(&k->node[i], 0, 30000) < 0)
            clean = false;
    if (clean && k->dir[0])
        nftw(k->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    k->nodes = 0;
}

int vw_kh_kafka_make_certs(const char *dir, const char *user, const char *password) {
    char cmd[2048];
    /* A CA, a broker key (PKCS#8, unencrypted) and certificate for localhost
     * signed by it; broker.pem = key + certificate + CA (the key store). */
    snprintf(cmd, sizeof cmd,
             "set -e; cd '%s'; exec >openssl.log 2>&1; "
             "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=vw-test-ca "
             "-keyout ca.key -out ca.pem; "
             "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout broker.key "
             "-out broker.csr; "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' >san.ext; "
             "openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-days 2 -extfile san.ext -out broker.crt; "
             "openssl pkcs8 -topk8 -nocrypt -in broker.key -out broker.p8; "
             "cat broker.p8 broker.crt ca.pem >broker.pem; "
             "printf '%%s %%s\\n' '%s' '%s' >scram.txt",
             dir, user, password);
    mkdir(dir, 0755);
    int rc = system(cmd);
    if (rc)
        fprintf(stderr, "kafka_apache: openssl failed (%s/openssl.log)\n", dir);
    return rc ? -1 : 0;
}
