/* kafka_harness.c — see kafka_harness.h. Test-only: processes by pid,
 * librdkafka for producing and offset fetches, kcat for reading topics. */
#include "kafka_harness.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/file.h"

extern char **environ;

int64_t vw_kh_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void vw_kh_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static char test_dir[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* The test process's folder goes when it exits (after its processes were
 * killed first), unless
 * VW_KEEP_TEST_DIRS is set to read the logs of a run. */
static void kill_leftovers(void);

static void remove_test_dir(void) {
    kill_leftovers();
    if (test_dir[0] && !getenv("VW_KEEP_TEST_DIRS"))
        nftw(test_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *vw_kh_dir(void) {
    if (!test_dir[0]) {
        snprintf(test_dir, sizeof test_dir, "/tmp/vw-kafka-XXXXXX");
        if (!mkdtemp(test_dir)) {
            perror("mkdtemp");
            test_dir[0] = 0;
        } else {
            atexit(remove_test_dir);
        }
    }
    return test_dir;
}

/* Processes still running when a test ends (a failed assertion skips its
 * cleanup) are killed at exit, by pid. */
enum { MAX_PROCS = 32 };
static pid_t live[MAX_PROCS];

static void kill_leftovers(void) {
    for (int i = 0; i < MAX_PROCS; i++)
        if (live[i] > 0) {
            kill(live[i], SIGKILL);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
}

static void track(pid_t pid, int add) {
    static int registered;
    if (!registered++)
        atexit(kill_leftovers);
    for (int i = 0; i < MAX_PROCS; i++)
        if (add ? live[i] == 0 : live[i] == pid) {
            live[i] = add ? pid : 0;
            return;
        }
}

static const char *worker_bin(void) {
    const char *b = getenv("VW_WORKER_BIN");
    if (!b)
        fprintf(stderr, "kafka_harness: VW_WORKER_BIN is not set (run through ctest)\n");
    return b;
}

/* environ + extra, NULL-terminated (malloc'd array, borrowed strings). */
static char **merged_env(char *const *extra) {
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    while (extra && extra[k])
        k++;
    char **env = calloc(n + k + 1, sizeof *env);
    if (!env)
        return NULL;
    memcpy(env, environ, n * sizeof *env);
    for (size_t i = 0; i < k; i++)
        env[n + i] = extra[i];
    return env;
}

static int spawn_bin(const char *bin, const char *name, char *const *args, char *const *extra_env,
                     int stdin_fd, vw_kh_proc *p) {
    if (!bin)
        return -1;
    size_t n = 0;
    while (args[n])
        n++;
    char **argv = calloc(n + 2, sizeof *argv);
    char **env = merged_env(extra_env);
    memset(p, 0, sizeof *p);
    snprintf(p->log_path, sizeof p->log_path, "%s/%s.log", vw_kh_dir(), name);
    snprintf(p->out_path, sizeof p->out_path, "%s/%s.out", vw_kh_dir(), name);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, p->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    argv[0] = (char *)bin;
    memcpy(argv + 1, args, n * sizeof *argv);
    int rc = argv && env ? posix_spawn(&p->pid, bin, &fa, NULL, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    free(env);
    if (rc) {
        fprintf(stderr, "kafka_harness: spawn %s: %s\n", bin, strerror(rc));
        return -1;
    }
    track(p->pid, 1);
    return 0;
}

static int spawn(const char *name, char *const *args, char *const *extra_env, int stdin_fd,
                 vw_kh_proc *p) {
    int rc = spawn_bin(worker_bin(), name, args, extra_env, stdin_fd, p);
    p->ours = rc == 0;
    return rc;
}

int vw_kh_spawn(const char *name, char *const *args, char *const *extra_env, vw_kh_proc *p) {
    return spawn(name, args, extra_env, -1, p);
}

int vw_kh_spawn_bin(const char *bin, const char *name, char *const *args, char *const *extra_env,
                    vw_kh_proc *p) {
    return spawn_bin(bin, name, args, extra_env, -1, p);
}

int vw_kh_worker_start(const char *name, const char *cfg, char *const *extra_env, vw_kh_proc *p) {
    char *args[] = {"run", "--config", (char *)cfg, NULL};
    return spawn(name, args, extra_env, -1, p);
}

int vw_kh_count_log(const vw_kh_proc *p, const char *needle) {
    char *log = vw_read_file(p->log_path, NULL);
    int n = 0;
    for (const char *s = log; s && (s = strstr(s, needle)); s += strlen(needle))
        n++;
    free(log);
    return n;
}

char *vw_kh_last_log_line(const vw_kh_proc *p) {
    char *log = vw_read_file(p->log_path, NULL);
    if (!log)
        return NULL;
    size_t n = strlen(log);
    while (n && (log[n - 1] == '\n' || log[n - 1] == '\r'))
        log[--n] = 0;
    const char *nl = strrchr(log, '\n');
    char *last = strdup(nl ? nl + 1 : log);
    free(log);
    return last;
}

/* WNOWAIT: a process that exited stays waitable, so vw_kh_stop still gets
 * its exit status after a wait that saw it die. */
static int alive(const vw_kh_proc *p) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return p->pid > 0 && kill(p->pid, 0) == 0 &&
           waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

int vw_kh_wait_log(const vw_kh_proc *p, const char *needle, int timeout_ms) {
    int64_t end = vw_kh_now_ms() + timeout_ms;
    while (vw_kh_now_ms() < end) {
        if (vw_kh_count_log(p, needle) > 0)
            return 0;
        if (!alive(p))
            return -1;
        vw_kh_sleep_ms(50);
    }
    return -1;
}

/* Every line the process's logger wrote must be one strict JSON object with
 * each key once (docs/operations.md "Logs"); other stderr lines (a crash point's
 * abort, replay progress) do not start with '{' and are not log events. */
static void check_log_lines(const vw_kh_proc *p) {
    char *log = vw_read_file(p->log_path, NULL);
    int lines = 0, bad = 0;
    char first[240] = "";
    for (char *s = log, *nl; s && *s; s = nl ? nl + 1 : s + strlen(s)) {
        nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        bool json_like = len && (s[0] == '{' || memmem(s, len, "\"level\":", 9));
        if (!json_like)
            continue;
        lines++;
        json_error_t e;
        json_t *v = s[0] == '{' ? json_loadb(s, len, JSON_REJECT_DUPLICATES, &e) : NULL;
        bool ok = json_is_object(v) && json_is_string(json_object_get(v, "msg")) &&
                  json_is_string(json_object_get(v, "level")) &&
                  json_is_string(json_object_get(v, "where"));
        json_decref(v);
        if (!ok && !bad++)
            snprintf(first, sizeof first, "%.*s", (int)(len < 200 ? len : 200), s);
    }
    free(log);
    cr_expect_eq(bad, 0, "%s: %d of %d log lines are not strict JSON; first: %s", p->log_path, bad,
                 lines, first);
}

int vw_kh_stop(vw_kh_proc *p, int sig, int timeout_ms) {
    if (p->pid <= 0)
        return p->status;
    if (sig)
        kill(p->pid, sig);
    int64_t end = vw_kh_now_ms() + timeout_ms;
    int st = 0, rc = -1;
    for (;;) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        if (vw_kh_now_ms() >= end) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            rc = -1;
            break;
        }
        vw_kh_sleep_ms(20);
    }
    track(p->pid, 0);
    p->pid = 0;
    p->status = rc;
    if (p->ours)
        check_log_lines(p);
    return rc;
}

void vw_kh_dump_log(const vw_kh_proc *p) {
    char *log = vw_read_file(p->log_path, NULL);
    if (!log)
        return;
    size_t n = strlen(log);
    fprintf(stderr, "---- %s (last 3000 bytes)\n%s\n----\n", p->log_path,
            n > 3000 ? log + n - 3000 : log);
    free(log);
}

bool vw_kh_kip848(void) {
    const char *p = getenv("VW_KH_GROUP_PROTOCOL");
    return p && !strcmp(p, "consumer");
}

int vw_kh_broker_start(const char *topics, vw_kh_broker *b) {
    return vw_kh_broker_start_n(topics, 1, b);
}

int vw_kh_broker_start_n(const char *topics, int n_brokers, vw_kh_broker *b) {
    int fds[2];
    vw_kh_proc p;
    char nb[16];
    memset(b, 0, sizeof *b);
    b->control_fd = -1;
    if (pipe(fds))
        return -1;
    snprintf(nb, sizeof nb, "%d", n_brokers);
    char *args[] = {
        "broker", "--topics",  (char *)topics, "--brokers",
        nb,       "--control", NULL,           NULL /* --group-timeouts S,H under KIP-848 */,
        NULL};
    if (vw_kh_kip848()) {
        args[6] = "--group-timeouts";
        args[7] = "6000,1000"; /* the classic runs' session and heartbeat */
    }
    int rc = spawn("broker", args, NULL, fds[0], &p);
    close(fds[0]);
    if (rc) {
        close(fds[1]);
        return -1;
    }
    b->pid = p.pid;
    b->control_fd = fds[1];
    int64_t end = vw_kh_now_ms() + 10000;
    while (vw_kh_now_ms() < end) {
        char *out = vw_read_file(p.out_path, NULL);
        char *nl = out ? strchr(out, '\n') : NULL;
        if (nl) {
            *nl = 0;
            snprintf(b->bootstrap, sizeof b->bootstrap, "%s", out);
            free(out);
            return 0;
        }
        free(out);
        vw_kh_sleep_ms(20);
    }
    fprintf(stderr, "kafka_harness: no bootstrap line from the broker\n");
    vw_kh_broker_stop(b);
    return -1;
}

/* A loopback port nobody listens on now (the kernel's choice). */
int vw_kh_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
        !getsockname(fd, (struct sockaddr *)&a, &len))
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

bool vw_kh_listening(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof a);
    if (fd >= 0)
        close(fd);
    return ok;
}

int vw_kh_tansu_start(const char *topics, vw_kh_broker *b) {
    const char *bin = getenv("VW_TANSU");
    memset(b, 0, sizeof *b);
    b->control_fd = -1;
    int port = vw_kh_free_port();
    if (!bin || !*bin || port < 0) {
        fprintf(stderr, "kafka_harness: VW_TANSU is not set (scripts/peers installs Tansu)\n");
        return -1;
    }
    char url[64];
    snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
    snprintf(b->bootstrap, sizeof b->bootstrap, "127.0.0.1:%d", port);
    char *args[] = {"broker",           "--listener-url",  url, "--advertised-listener-url", url,
                    "--storage-engine", "memory://tansu/", NULL};
    vw_kh_proc p;
    if (spawn_bin(bin, "tansu", args, NULL, -1, &p))
        return -1;
    b->pid = p.pid;
    int64_t end = vw_kh_now_ms() + 10000;
    while (!vw_kh_listening(port) && vw_kh_now_ms() < end)
        vw_kh_sleep_ms(20);
    /* "name:parts,..." -> tansu topic create NAME --broker URL --partitions N */
    char spec[256];
    snprintf(spec, sizeof spec, "%s", topics);
    for (char *save = NULL, *t = strtok_r(spec, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(t, ':');
        if (!colon)
            break;
        *colon = 0;
        char *cargs[] = {"topic", "create", t, "--broker", url, "--partitions", colon + 1, NULL};
        vw_kh_proc c;
        if (spawn_bin(bin, "tansu-topic", cargs, NULL, -1, &c) || vw_kh_stop(&c, 0, 10000)) {
            fprintf(stderr, "kafka_harness: tansu topic create %s failed\n", t);
            vw_kh_broker_stop(b);
            return -1;
        }
    }
    return 0;
}

int vw_kh_broker_control(vw_kh_broker *b, const char *line) {
    size_t n = strlen(line);
    if (b->control_fd < 0 || write(b->control_fd, line, n) != (ssize_t)n ||
        write(b->control_fd, "\n", 1) != 1)
        return -1;
    return 0;
}

void vw_kh_broker_stop(vw_kh_broker *b) {
    if (b->control_fd >= 0)
        close(b->control_fd);
    b->control_fd = -1;
    vw_kh_proc p = {.pid = b->pid};
    vw_kh_stop(&p, SIGTERM, 5000);
    b->pid = 0;
}

int vw_kh_write_config(const vw_kh_broker *b, const char *group, const char *extra_yaml, char *path,
                       size_t cap) {
    static int seq;
    snprintf(path, cap, "%s/worker-%d.yaml", vw_kh_dir(), seq++);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "kafka:\n"
            "  bootstrap.servers: \"%s\"\n"
            "%s%s%s"
            "  consumer:\n"
            "%s"
            "    fetch.wait.max.ms: 10\n"
            "  producer:\n"
            "    linger.ms: 2\n"
            "topics: {input: requests, results: results, dlq: requests.dlq}\n"
            "model: {device: test-echo}\n"
            "metrics: {listen: \"127.0.0.1:0\", stats_interval_ms: 1000}\n"
            "log: {level: info, format: json}\n"
            "%s",
            b->bootstrap, group ? "  group.id: " : "", group ? group : "", group ? "\n" : "",
            vw_kh_kip848() ? "    group.protocol: consumer\n"
                           : "    session.timeout.ms: 6000\n"
                             "    heartbeat.interval.ms: 1000\n",
            extra_yaml ? extra_yaml : "");
    return fclose(f) ? -1 : 0;
}

/* ---- librdkafka clients ----------------------------------------------------- */

typedef struct dr_ctx {
    int32_t *partitions;
    int64_t *offsets;
    int failed;
} dr_ctx;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    dr_ctx *c = opaque;
    size_t i = (size_t)(uintptr_t)m->_private;
    if (m->err) {
        fprintf(stderr, "kafka_harness: delivery failed: %s\n", rd_kafka_err2str(m->err));
        c->failed++;
        return;
    }
    if (c->partitions)
        c->partitions[i] = m->partition;
    if (c->offsets)
        c->offsets[i] = m->offset;
}

static rd_kafka_t *client_conf(rd_kafka_type_t type, const char *bootstrap, const char *group,
                               void *opaque, const char *const *props) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    if (group)
        rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(conf, "acks", "all", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "linger.ms", "5", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "message.max.bytes", "8000000", errstr, sizeof errstr);
        rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
        rd_kafka_conf_set_opaque(conf, opaque);
    }
    for (size_t i = 0; props && props[i]; i++) {
        char kv[256];
        snprintf(kv, sizeof kv, "%s", props[i]);
        char *eq = strchr(kv, '=');
        if (eq)
            *eq = 0;
        if (!eq || rd_kafka_conf_set(conf, kv, eq + 1, errstr, sizeof errstr)) {
            fprintf(stderr, "kafka_harness: %s: %s\n", props[i], eq ? errstr : "not key=value");
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    }
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "kafka_harness: rd_kafka_new: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *bootstrap, const char *group,
                          void *opaque) {
    return client_conf(type, bootstrap, group, opaque, NULL);
}

int vw_kh_produce(const char *bootstrap, const char *topic, const vw_kh_msg *msgs, size_t n,
                  int32_t *partitions, int64_t *offsets) {
    return vw_kh_produce_conf(bootstrap, topic, msgs, n, NULL, partitions, offsets);
}

int vw_kh_produce_conf(const char *bootstrap, const char *topic, const vw_kh_msg *msgs, size_t n,
                       const char *const *props, int32_t *partitions, int64_t *offsets) {
    dr_ctx c = {partitions, offsets, 0};
    rd_kafka_t *rk = client_conf(RD_KAFKA_PRODUCER, bootstrap, NULL, &c, props);
    if (!rk)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const vw_kh_msg *m = &msgs[i];
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        for (int k = 0; k < 2; k++)
            if (m->hdr_name[k])
                rd_kafka_header_add(h, m->hdr_name[k], -1, m->hdr_value[k], -1);
        size_t len = m->len || !m->value ? m->len : strlen(m->value);
        rd_kafka_resp_err_t e;
        do {
            e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic),
                RD_KAFKA_V_PARTITION(m->partition < 0 ? RD_KAFKA_PARTITION_UA : m->partition),
                RD_KAFKA_V_KEY(m->key, m->key ? strlen(m->key) : 0),
                RD_KAFKA_V_VALUE((void *)m->value, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_OPAQUE((void *)(uintptr_t)i), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rk, 10);
        } while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
        if (e) {
            rd_kafka_headers_destroy(h);
            fprintf(stderr, "kafka_harness: produce: %s\n", rd_kafka_err2str(e));
            c.failed++;
        }
    }
    rd_kafka_flush(rk, 15000);
    int left = rd_kafka_outq_len(rk);
    rd_kafka_destroy(rk);
    return c.failed || left ? -1 : 0;
}

void *vw_kh_group_client(const char *bootstrap, const char *group) {
    return client(RD_KAFKA_CONSUMER, bootstrap, group, NULL);
}

void vw_kh_client_free(void *rk) {
    if (rk)
        rd_kafka_destroy(rk);
}

int vw_kh_committed_via(void *rk, const char *topic, int n, int64_t *out, int timeout_ms) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, topic, i);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, timeout_ms);
    for (int i = 0; i < n && !e; i++)
        out[i] = l->elems[i].err ? -1 : l->elems[i].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return e ? -1 : 0;
}

int vw_kh_committed(const char *bootstrap, const char *group, const char *topic, int n,
                    int64_t *out) {
    void *rk = vw_kh_group_client(bootstrap, group);
    if (!rk)
        return -1;
    int rc = vw_kh_committed_via(rk, topic, n, out, 5000);
    vw_kh_client_free(rk);
    return rc;
}

int vw_kh_end_offsets(const char *bootstrap, const char *topic, int n, int64_t *out) {
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, bootstrap, NULL, NULL);
    int rc = rk ? 0 : -1;
    for (int i = 0; i < n && !rc; i++) {
        int64_t lo, hi;
        if (rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, 5000))
            rc = -1;
        out[i] = hi;
    }
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}

int vw_kh_wait_committed(const char *bootstrap, const char *group, const char *topic, int n,
                         const int64_t *want, int timeout_ms) {
    int64_t end = vw_kh_now_ms() + timeout_ms, got[64];
    while (vw_kh_now_ms() < end) {
        int same = vw_kh_committed(bootstrap, group, topic, n, got) == 0;
        for (int i = 0; i < n && same; i++)
            same = got[i] == want[i];
        if (same)
            return 0;
        vw_kh_sleep_ms(200);
    }
    for (int i = 0; i < n; i++)
        fprintf(stderr, "kafka_harness: %s [%d] committed %lld, want %lld\n", topic, i,
                (long long)got[i], (long long)want[i]);
    return -1;
}

/* ---- kcat ----------------------------------------------------------------------- */

static json_t *kcat_read(const char *bootstrap, const char *topic) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "kcat -b '%s' -C -t '%s' -e -q -J -X fetch.wait.max.ms=10 -X log_level=3 "
             "-X fetch.message.max.bytes=8000000 2>/dev/null",
             bootstrap, topic);
    FILE *f = popen(cmd, "r");
    json_t *arr = json_array();
    if (!f)
        return arr;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *rec = json_loads(line, 0, NULL);
        if (rec)
            json_array_append_new(arr, rec);
    }
    free(line);
    pclose(f);
    return arr;
}

json_t *vw_kh_consume(const char *bootstrap, const char *topic, size_t want, int timeout_ms) {
    int64_t end = vw_kh_now_ms() + timeout_ms;
    json_t *arr = kcat_read(bootstrap, topic);
    while (json_array_size(arr) < want && vw_kh_now_ms() < end) {
        vw_kh_sleep_ms(200);
        json_decref(arr);
        arr = kcat_read(bootstrap, topic);
    }
    return arr;
}

const char *vw_kh_header(const json_t *rec, const char *name) {
    const json_t *h = json_object_get(rec, "headers");
    for (size_t i = 0; i + 1 < json_array_size(h); i += 2)
        if (!strcmp(json_string_value(json_array_get(h, i)), name))
            return json_string_value(json_array_get(h, i + 1));
    return NULL;
}

/* ---- HTTP -------------------------------------------------------------------------- */

char *vw_kh_http_get(int port, const char *path, int *code) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    *code = -1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    char req[512];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return NULL;
    }
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    for (ssize_t r; buf && (r = read(fd, buf + len, cap - len - 1)) > 0;) {
        len += (size_t)r;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown)
                break;
            buf = grown;
        }
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[len] = 0;
    sscanf(buf, "HTTP/%*s %d", code);
    char *body = strstr(buf, "\r\n\r\n");
    char *out = strdup(body ? body + 4 : "");
    free(buf);
    return out;
}

int vw_kh_metrics_port(const vw_kh_proc *p, int timeout_ms) {
    if (vw_kh_wait_log(p, "\"msg\":\"metrics listening\"", timeout_ms))
        return -1;
    char *log = vw_read_file(p->log_path, NULL);
    const char *s = log ? strstr(log, "\"msg\":\"metrics listening\",\"port\":") : NULL;
    int port = s ? atoi(s + strlen("\"msg\":\"metrics listening\",\"port\":")) : -1;
    free(log);
    return port;
}

double vw_kh_metric_in(const char *text, const char *name) {
    char pat[256];
    snprintf(pat, sizeof pat, "\n%s ", name);
    const char *s = text ? strstr(text, pat) : NULL;
    return s ? atof(s + strlen(pat)) : -1;
}

double vw_kh_metric(int port, const char *name) {
    int code;
    char *text = vw_kh_http_get(port, "/metrics", &code);
    double v = vw_kh_metric_in(text, name);
    free(text);
    return v;
}
