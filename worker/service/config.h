/* config.h — the worker's YAML configuration (config/worker.example.yaml).
 *
 * Sections: kafka (librdkafka properties, passed through; kafka.consumer and
 * kafka.producer hold per-client ones), topics, model, batching, limits,
 * delivery, metrics, log, shutdown. Every field has a default except
 * kafka.bootstrap.servers and topics.input. Environment variables
 * VELA_<SECTION>_<KEY> override the file (key upper-cased, '.' -> '_'):
 * VELA_BATCHING_MAX_TOKENS=512, VELA_KAFKA_BOOTSTRAP_SERVERS=host:9092,
 * VELA_KAFKA_CONSUMER_FETCH_WAIT_MAX_MS=10 (kafka.consumer "fetch.wait.max.ms"),
 * VELA_TOPICS_REPLY_ALLOW=a,b (lists are comma-separated). Every VELA_* name
 * is the worker's: one that names no section or no key is an error, as an
 * unknown key in the file is.
 *
 * Errors: an unknown section or key, a duplicate key, a value of the wrong shape
 * or out of range (metrics.listen: host:port, port 0-65535), a librdkafka
 * property librdkafka rejects, an output topic that is the input topic
 * (topics.results, topics.dlq or a topics.reply_allow entry equal to
 * topics.input: a loop), a document nested deeper than VW_CONFIG_MAX_DEPTH,
 * one with more than VW_CONFIG_MAX_ALIASES anchors or aliases and one larger
 * than VW_CONFIG_MAX_BYTES (aliases expanded) are VW_EINVAL with type "config_invalid" and a
 * message "FILE:LINE: section.key: why" (environment overrides name the variable instead of
 * FILE:LINE; a missing or defaulted key names the file alone).
 *
 * Ownership: vw_config_load/parse return a config the caller frees with
 * vw_config_free; all strings inside are owned by it. The struct is read-only
 * after loading and may be shared by threads.
 */
#ifndef VW_CONFIG_H
#define VW_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config_shape.h"
#include "log.h"
#include "vw_status.h"

typedef struct vw_kv {
    char *key;
    char *value;
    int line; /* 1-based line in the file; 0 for an environment override */
} vw_kv;

typedef struct vw_kvlist {
    vw_kv *items;
    size_t n;
} vw_kvlist;

typedef enum vw_delivery_mode {
    VW_DELIVERY_AT_LEAST_ONCE = 0,
    VW_DELIVERY_EXACTLY_ONCE, /* one transaction per micro-batch (worker/txn.h) */
} vw_delivery_mode;

/* batching.max_tokens when the config leaves it out. */
#define VW_BATCH_MAX_TOKENS_DEFAULT 16384
/* limits.max_request_tokens by default: this many full micro-batches. */
#define VW_REQUEST_TOKENS_PER_BATCH 4

/* limits.max_request_bytes when the config leaves it out; `vela-worker score`
 * refuses larger requests with the same 413. */
#define VW_MAX_REQUEST_BYTES_DEFAULT 1048576

/* Room for where each field was set (vw_config_where); more than the fields. */
#define VW_CONFIG_FIELD_SLOTS 64

typedef struct vw_config {
    char *source;                      /* file name used in messages */
    int set_at[VW_CONFIG_FIELD_SLOTS]; /* per field: its line, 0 environment, -1 default */
    struct {
        vw_kvlist common;   /* kafka.<prop>: both clients */
        vw_kvlist consumer; /* kafka.consumer.<prop> */
        vw_kvlist producer; /* kafka.producer.<prop> */
    } kafka;
    struct {
        char *input, *results, *dlq;
        char **reply_allow; /* [n_reply_allow] topics a reply-topic header may name */
        size_t n_reply_allow;
    } topics;
    struct {
        char *bundle;          /* bundle directory */
        char *device;          /* auto | cpu | cuda | cuda:N | test-echo (tests; docs/worker.md) */
        char *precision;       /* auto (bf16x2 on CUDA) | fp32 | bf16 | bf16x2 */
        char *manifest_sha256; /* "" or the SHA-256 MODEL_MANIFEST.json must have (anchor) */
        int64_t cpu_threads;   /* the CPU executor's pool; 0: the CPUs left after the
                                  worker's own busy threads (docs/performance.md) */
    } model;
    struct {
        int64_t max_tokens;   /* token budget of one micro-batch */
        int64_t max_requests; /* records per micro-batch */
        int64_t max_wait_ms;  /* a batch closes this long after its first record */
    } batching;
    struct {
        int64_t threads; /* host threads finishing micro-batches (heads, answers, envelopes);
                            0: one per online CPU */
    } processing;
    struct {
        int64_t max_request_bytes;  /* larger records are rejected with 413
                                       (default VW_MAX_REQUEST_BYTES_DEFAULT) */
        int64_t max_in_flight;      /* admitted but unacknowledged records before pausing */
        int64_t max_request_tokens; /* model tokens of one request (more: 413, Decision 9);
                                       default VW_REQUEST_TOKENS_PER_BATCH x batching.max_tokens,
                                       0: no limit */
        int64_t slow_record_ms;     /* admission + plan longer than this: logged and counted */
    } limits;
    struct {
        vw_delivery_mode mode;
        int64_t commit_interval_ms;   /* how often acknowledged offsets are committed */
        int64_t retry_backoff_ms;     /* first backoff of a transient processor failure */
        int64_t retry_backoff_max_ms; /* backoff cap (it doubles per attempt) */
        int64_t revoke_wait_ms;       /* bounded wait for deliveries on partition revoke */
        int64_t start_timeout_ms;     /* assigned, not fetching this long: assign again (0: off) */
        /* exactly_once (worker/txn.h): the transactional.id is
         * "<transactional_id_prefix>-<worker_id>"; an empty prefix is the
         * group id, an empty worker id group.instance.id, else host-pid. */
        char *transactional_id_prefix;
        char *worker_id;
    } delivery;
    struct {
        char *listen;              /* "host:port"; empty string disables the HTTP endpoint */
        int64_t stats_interval_ms; /* librdkafka statistics (consumer lag) period */
    } metrics;
    struct {
        vw_log_level level;
        vw_log_format format;
    } log;
    struct {
        int64_t grace_ms; /* SIGTERM: drain, flush, commit and close within this */
    } shutdown;
} vw_config;

/* The environment variable of a config key: "VELA_" + section + "_" + key,
 * upper-cased, '.' -> '_' ("batching", "max_tokens" -> VELA_BATCHING_MAX_TOKENS;
 * "kafka.consumer", "fetch.wait.max.ms" -> VELA_KAFKA_CONSUMER_FETCH_WAIT_MAX_MS).
 * dst gets at most cap bytes, NUL-terminated. */
void vw_config_env_name(const char *section, const char *key, char *dst, size_t cap);

/* Where an error about a field's value points, as a config error names it:
 * "FILE:LINE: section.key" (set in the file), "VELA_SECTION_KEY (environment)"
 * (set by an override) or "FILE: section.key" (its default). An unknown
 * field gives "FILE: section.key". buf gets at most cap bytes; returns buf. */
const char *vw_config_where(const vw_config *cfg, const char *section, const char *key, char *buf,
                            size_t cap);

/* Where a field was set: its line in the file (> 0), 0 for an environment
 * override, -1 for its default (or a field that does not exist). */
int vw_config_set_at(const vw_config *cfg, const char *section, const char *key);

/* Parses YAML text (len bytes; need not be NUL-terminated). name labels messages;
 * envp (NULL-terminated "K=V" array, may be NULL) supplies VELA_* overrides.
 * On failure *out is NULL. */
vw_status vw_config_parse(const char *yaml, size_t len, const char *name, char *const *envp,
                          vw_config **out, vw_err *err);

/* Reads and parses a file; VW_EIO when it cannot be read. A relative path
 * the file sets (model.bundle, a librdkafka *.location property or
 * sasl.kerberos.keytab; not ssl.ca.location's "probe") is taken from the
 * file's directory, as Prometheus and most daemons read theirs; one an
 * environment override sets is taken from the current directory. */
vw_status vw_config_load(const char *path, char *const *envp, vw_config **out, vw_err *err);

/* Value of key in a list, last one wins; NULL when absent. */
const char *vw_kvlist_get(const vw_kvlist *l, const char *key);

/* Releases everything; NULL is a no-op. */
void vw_config_free(vw_config *cfg);

#endif
