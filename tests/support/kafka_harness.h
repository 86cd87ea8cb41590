/* kafka_harness.h — integration-test helpers: start `vela-worker broker` and
 * `vela-worker run`/`replay` as separate processes (binary from $VW_WORKER_BIN,
 * set by CMake), produce with librdkafka, read results with kcat (a real peer
 * client) and committed offsets with a group offset fetch.
 *
 * Every process is started by its pid and stopped by that pid only. Files go to
 * a per-test directory under /tmp (kept when a test fails, for its logs).
 * Functions return 0 on success, -1 on failure (with a message on stderr).
 * Apache Kafka clusters (scripts/kafka) for a test: kafka_apache.h.
 */
#ifndef VW_KAFKA_HARNESS_H
#define VW_KAFKA_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct vw_kh_broker {
    pid_t pid;
    int control_fd; /* the broker's stdin (--control), -1 when closed */
    char bootstrap[512];
} vw_kh_broker;

typedef struct vw_kh_proc {
    pid_t pid;
    char log_path[256]; /* its stderr */
    char out_path[256]; /* its stdout */
    int status;         /* exit status once stopped */
    bool ours;          /* a vela-worker process: its log lines are checked (vw_kh_stop) */
} vw_kh_proc;

/* A fresh directory for this test's files (static storage, valid until exit;
 * removed at exit unless VW_KEEP_TEST_DIRS is set). */
const char *vw_kh_dir(void);

/* Starts `vela-worker broker --topics SPEC --control` and reads its bootstrap line. */
int vw_kh_broker_start(const char *topics, vw_kh_broker *b);
/* Same with --brokers n_brokers (ids 1..n; replication factor min(3, n)). */
int vw_kh_broker_start_n(const char *topics, int n_brokers, vw_kh_broker *b);
/* Starts Tansu ($VW_TANSU, a Kafka-compatible broker; scripts/peers) on a free
 * loopback port with in-memory storage and creates the topics of the spec
 * "name:parts,...". No control stream. Stop it with vw_kh_broker_stop. */
int vw_kh_tansu_start(const char *topics, vw_kh_broker *b);
/* A loopback port nobody listens on now (the kernel's choice), or -1. */
int vw_kh_free_port(void);
/* Whether something accepts connections on 127.0.0.1:port. */
bool vw_kh_listening(int port);
/* Sends one control line (see worker/service/broker.h). */
int vw_kh_broker_control(vw_kh_broker *b, const char *line);
void vw_kh_broker_stop(vw_kh_broker *b);

/* VW_KH_GROUP_PROTOCOL=consumer: the broker and the worker configs use
 * KIP-848 groups (group.protocol consumer; the broker's group session 6 s and
 * heartbeat 1 s, as the classic configs set them on the client). */
bool vw_kh_kip848(void);

/* Writes a worker config for the broker: group `group` (NULL: no group.id
 * key, the worker's default), the test timings of
 * docs/kafka-notes.md §1.5, test-echo processor, metrics on a free port,
 * plus extra_yaml (whole sections, may be NULL). Returns a path (static buffer
 * per call index is not kept: copy it). */
int vw_kh_write_config(const vw_kh_broker *b, const char *group, const char *extra_yaml, char *path,
                       size_t cap);

/* Runs `vela-worker <argv...>` with extra environment entries ("K=V", NULL-terminated,
 * may be NULL). name labels its log files. */
int vw_kh_spawn(const char *name, char *const *args, char *const *extra_env, vw_kh_proc *p);
/* The same for any program bin (not a vela-worker: its log lines are not checked). */
int vw_kh_spawn_bin(const char *bin, const char *name, char *const *args, char *const *extra_env,
                    vw_kh_proc *p);
/* Starts `vela-worker run --config cfg`. */
int vw_kh_worker_start(const char *name, const char *cfg, char *const *extra_env, vw_kh_proc *p);
/* Waits until the process's log contains needle; -1 on timeout or exit. */
int vw_kh_wait_log(const vw_kh_proc *p, const char *needle, int timeout_ms);
/* Counts occurrences of needle in the log. */
int vw_kh_count_log(const vw_kh_proc *p, const char *needle);
/* The log's last non-empty line (malloc'd), or NULL. */
char *vw_kh_last_log_line(const vw_kh_proc *p);
/* Sends sig (0: none) and waits up to timeout_ms for the exit; SIGKILL after
 * that. Returns the exit code (128+signal when killed), -1 when it had to be killed. */
int vw_kh_stop(vw_kh_proc *p, int sig, int timeout_ms);
/* Prints the last lines of the log to stderr (for failing tests). */
void vw_kh_dump_log(const vw_kh_proc *p);

typedef struct vw_kh_msg {
    int32_t partition; /* -1: by key */
    const char *key;   /* NULL: no key */
    const void *value;
    size_t len;              /* 0 with value != NULL: strlen(value) */
    const char *hdr_name[2]; /* optional headers */
    const char *hdr_value[2];
} vw_kh_msg;

/* Produces and flushes (acks=all); the returned array (may be NULL) receives
 * each message's partition and offset. */
int vw_kh_produce(const char *bootstrap, const char *topic, const vw_kh_msg *msgs, size_t n,
                  int32_t *partitions, int64_t *offsets);
/* The same with extra producer properties ("key=value", NULL-terminated, may
 * be NULL), e.g. "compression.codec=zstd". */
int vw_kh_produce_conf(const char *bootstrap, const char *topic, const vw_kh_msg *msgs, size_t n,
                       const char *const *props, int32_t *partitions, int64_t *offsets);

/* Reads the whole topic with kcat -J until at least `want` records are there
 * or timeout_ms passed; returns a JSON array of kcat records (caller decrefs),
 * each {"topic","partition","offset","key","payload","headers":[k,v,...]}. */
json_t *vw_kh_consume(const char *bootstrap, const char *topic, size_t want, int timeout_ms);
/* Value of header name in a kcat record, or NULL. */
const char *vw_kh_header(const json_t *rec, const char *name);

/* Committed offsets of group for partitions 0..n-1 (-1001 = none, -1 = that
 * partition's error). */
int vw_kh_committed(const char *bootstrap, const char *group, const char *topic, int n,
                    int64_t *out);
/* For reading them often: a consumer client of group (an rd_kafka_t *) that
 * never subscribes, so it is no member; NULL on error (message on stderr).
 * Freed by vw_kh_client_free (NULL is a no-op). */
void *vw_kh_group_client(const char *bootstrap, const char *group);
void vw_kh_client_free(void *rk);
/* vw_kh_committed through such a client, waiting at most timeout_ms. */
int vw_kh_committed_via(void *rk, const char *topic, int n, int64_t *out, int timeout_ms);
/* High watermarks of partitions 0..n-1. */
int vw_kh_end_offsets(const char *bootstrap, const char *topic, int n, int64_t *out);
/* Polls vw_kh_committed until it equals want[] for all n partitions. */
int vw_kh_wait_committed(const char *bootstrap, const char *group, const char *topic, int n,
                         const int64_t *want, int timeout_ms);

/* GET http://127.0.0.1:port/path; returns the body (malloc'd) and the HTTP code. */
char *vw_kh_http_get(int port, const char *path, int *code);
/* The metrics port a worker logged ("metrics listening port=N"), or -1. */
int vw_kh_metrics_port(const vw_kh_proc *p, int timeout_ms);
/* The value of the sample line "name value" in Prometheus text, or -1. */
double vw_kh_metric_in(const char *text, const char *name);
/* The same, read from the worker's /metrics on port; -1 when absent. */
double vw_kh_metric(int port, const char *name);

int64_t vw_kh_now_ms(void);
void vw_kh_sleep_ms(int ms);

#endif
