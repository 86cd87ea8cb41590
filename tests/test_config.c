/* test_config.c — the YAML configuration: every field, environment overrides,
 * and errors that name the key and the line; the start check of the
 * librdkafka properties (worker.h vw_worker_check) and the SASL_SSL example. */
#include "service/config.h"
#include "vw_test.h"
#include "worker.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static vw_config *parse_ok(const char *yaml, char *const *envp) {
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_parse(yaml, strlen(yaml), "t.yaml", envp, &cfg, &err);
    cr_assert_eq(st, VW_OK, "parse failed: %s", err.msg);
    cr_assert_not_null(cfg);
    return cfg;
}

/* Expects failure whose message contains want. */
static void parse_bad(const char *yaml, char *const *envp, const char *want) {
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_parse(yaml, strlen(yaml), "t.yaml", envp, &cfg, &err);
    cr_assert_eq(st, VW_EINVAL, "expected VW_EINVAL for:\n%s", yaml);
    cr_assert_null(cfg);
    cr_assert_str_eq(err.type, "config_invalid");
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
}

static const char *minimal = "kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in}\n";

Test(config, every_field) {
    const char *yaml = "kafka:\n"
                       "  bootstrap.servers: \"b1:9092,b2:9092\"\n"
                       "  group.id: g1\n"
                       "  consumer:\n"
                       "    fetch.wait.max.ms: 10\n"
                       "    session.timeout.ms: 6000\n"
                       "  producer:\n"
                       "    linger.ms: 2\n"
                       "topics:\n"
                       "  input: req\n"
                       "  results: res\n"
                       "  dlq: dead\n"
                       "  reply_allow: [r1, r2]\n"
                       "model: {bundle: /b, device: cuda, precision: bf16}\n"
                       "batching: {max_tokens: 100, max_requests: 7, max_wait_ms: 0}\n"
                       "limits: {max_request_bytes: 2048, max_in_flight: 9}\n"
                       "delivery: {mode: at_least_once, commit_interval_ms: 50,\n"
                       "  retry_backoff_ms: 20, retry_backoff_max_ms: 40, revoke_wait_ms: 30,\n"
                       "  start_timeout_ms: 0}\n"
                       "metrics: {listen: \"\", stats_interval_ms: 1000}\n"
                       "log: {level: debug, format: text}\n"
                       "shutdown: {grace_ms: 1500}\n";
    vw_config *cfg = parse_ok(yaml, NULL);
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.common, "bootstrap.servers"), "b1:9092,b2:9092");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.common, "group.id"), "g1");
    cr_assert_eq(cfg->kafka.common.n, 2);
    cr_assert_eq(cfg->kafka.common.items[1].line, 3);
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.consumer, "fetch.wait.max.ms"), "10");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.consumer, "session.timeout.ms"), "6000");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.producer, "linger.ms"), "2");
    cr_assert_null(vw_kvlist_get(&cfg->kafka.producer, "fetch.wait.max.ms"));
    cr_assert_str_eq(cfg->topics.input, "req");
    cr_assert_str_eq(cfg->topics.results, "res");
    cr_assert_str_eq(cfg->topics.dlq, "dead");
    cr_assert_eq(cfg->topics.n_reply_allow, 2);
    cr_assert_str_eq(cfg->topics.reply_allow[0], "r1");
    cr_assert_str_eq(cfg->topics.reply_allow[1], "r2");
    cr_assert_str_eq(cfg->model.bundle, "/b");
    cr_assert_str_eq(cfg->model.device, "cuda");
    cr_assert_str_eq(cfg->model.precision, "bf16");
    cr_assert_eq(cfg->batching.max_tokens, 100);
    cr_assert_eq(cfg->batching.max_requests, 7);
    cr_assert_eq(cfg->batching.max_wait_ms, 0);
    cr_assert_eq(cfg->limits.max_request_bytes, 2048);
    cr_assert_eq(cfg->limits.max_in_flight, 9);
    cr_assert_eq(cfg->delivery.mode, VW_DELIVERY_AT_LEAST_ONCE);
    cr_assert_eq(cfg->delivery.commit_interval_ms, 50);
    cr_assert_eq(cfg->delivery.retry_backoff_ms, 20);
    cr_assert_eq(cfg->delivery.retry_backoff_max_ms, 40);
    cr_assert_eq(cfg->delivery.revoke_wait_ms, 30);
    cr_assert_eq(cfg->delivery.start_timeout_ms, 0);
    cr_assert_str_eq(cfg->metrics.listen, "");
    cr_assert_eq(cfg->metrics.stats_interval_ms, 1000);
    cr_assert_eq(cfg->log.level, VW_LOG_DEBUG);
    cr_assert_eq(cfg->log.format, VW_LOG_TEXT);
    cr_assert_eq(cfg->shutdown.grace_ms, 1500);
    vw_config_free(cfg);
}

Test(config, defaults) {
    vw_config *cfg = parse_ok(minimal, NULL);
    cr_assert_str_eq(cfg->topics.results, "results");
    cr_assert_str_eq(cfg->topics.dlq, "in.dlq");
    cr_assert_eq(cfg->topics.n_reply_allow, 0);
    cr_assert_str_eq(cfg->model.device, "auto");
    cr_assert_str_eq(cfg->model.precision, "auto");
    cr_assert_eq(cfg->batching.max_tokens, 16384);
    cr_assert_eq(cfg->batching.max_requests, 64);
    cr_assert_eq(cfg->batching.max_wait_ms, 5);
    cr_assert_eq(cfg->limits.max_request_bytes, 1048576);
    cr_assert_eq(cfg->limits.max_in_flight, 1024);
    cr_assert_eq(cfg->delivery.revoke_wait_ms, 5000);
    cr_assert_eq(cfg->delivery.start_timeout_ms, 15000);
    cr_assert_str_eq(cfg->metrics.listen, "127.0.0.1:9464");
    cr_assert_eq(cfg->log.level, VW_LOG_INFO);
    cr_assert_eq(cfg->log.format, VW_LOG_JSON);
    cr_assert_eq(cfg->shutdown.grace_ms, 30000);
    vw_config_free(cfg);
}

Test(config, env_overrides) {
    char *envp[] = {"VELA_KAFKA_BOOTSTRAP_SERVERS=envhost:1",
                    "VELA_KAFKA_CONSUMER_FETCH_WAIT_MAX_MS=25",
                    "VELA_KAFKA_PRODUCER_LINGER_MS=0",
                    "VELA_TOPICS_INPUT=envin",
                    "VELA_TOPICS_REPLY_ALLOW=x,y,z",
                    "VELA_MODEL_DEVICE=test-echo",
                    "VELA_BATCHING_MAX_TOKENS=512",
                    "VELA_LIMITS_MAX_IN_FLIGHT=3",
                    "VELA_DELIVERY_REVOKE_WAIT_MS=0",
                    "VELA_DELIVERY_START_TIMEOUT_MS=250",
                    "VELA_METRICS_LISTEN=0.0.0.0:1",
                    "VELA_LOG_LEVEL=warn",
                    "VELA_SHUTDOWN_GRACE_MS=7",
                    "PATH=/bin",
                    NULL};
    vw_config *cfg = parse_ok(minimal, envp);
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.common, "bootstrap.servers"), "envhost:1");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.consumer, "fetch.wait.max.ms"), "25");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.producer, "linger.ms"), "0");
    cr_assert_str_eq(cfg->topics.input, "envin");
    cr_assert_str_eq(cfg->topics.dlq, "envin.dlq");
    cr_assert_eq(cfg->topics.n_reply_allow, 3);
    cr_assert_str_eq(cfg->topics.reply_allow[2], "z");
    cr_assert_str_eq(cfg->model.device, "test-echo");
    cr_assert_eq(cfg->batching.max_tokens, 512);
    cr_assert_eq(cfg->limits.max_in_flight, 3);
    cr_assert_eq(cfg->delivery.revoke_wait_ms, 0);
    cr_assert_eq(cfg->delivery.start_timeout_ms, 250);
    cr_assert_str_eq(cfg->metrics.listen, "0.0.0.0:1");
    cr_assert_eq(cfg->log.level, VW_LOG_WARN);
    cr_assert_eq(cfg->shutdown.grace_ms, 7);
    vw_config_free(cfg);
}

Test(config, env_supplies_required) {
    char *envp[] = {"VELA_KAFKA_BOOTSTRAP_SERVERS=h:2", "VELA_TOPICS_INPUT=i", NULL};
    vw_config *cfg = parse_ok("", envp);
    cr_assert_str_eq(cfg->topics.input, "i");
    vw_config_free(cfg);
}

Test(config, env_errors_name_the_variable) {
    char *bad_int[] = {"VELA_BATCHING_MAX_TOKENS=lots", NULL};
    parse_bad(minimal, bad_int, "VELA_BATCHING_MAX_TOKENS (environment): expected an integer");
    char *unknown[] = {"VELA_BATCHING_MAX_TOKEN=5", NULL};
    parse_bad(minimal, unknown, "VELA_BATCHING_MAX_TOKEN (environment): unknown key");
    char *bad_prop[] = {"VELA_KAFKA_NO_SUCH_PROPERTY=1", NULL};
    parse_bad(minimal, bad_prop,
              "VELA_KAFKA_NO_SUCH_PROPERTY (environment): No such "
              "configuration property");
}

Test(config, unknown_key_names_key_and_line) {
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  input: in\n  inptu: x\n", NULL,
              "t.yaml:4: topics.inptu: unknown key");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\n\nbatchin:\n  max_tokens: 1\n",
              NULL, "t.yaml:4: batchin: unknown section");
}

Test(config, bad_values_name_key_and_line) {
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nbatching:\n  max_tokens: 0\n",
              NULL,
              "t.yaml:4: batching.max_tokens: expected an integer in [1, 100000000], got '0'");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nbatching:\n"
              "  max_wait_ms: 5ms\n",
              NULL, "t.yaml:4: batching.max_wait_ms: expected an integer");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nmodel:\n  device: tpu\n", NULL,
              "t.yaml:4: model.device: 'tpu' is not one of auto|cpu|cuda|cuda:N|test-echo");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nlog: {format: xml}\n", NULL,
              "t.yaml:3: log.format: 'xml' is not one of json|text");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\ndelivery:\n"
              "  mode: exactly_twice\n",
              NULL,
              "t.yaml:4: delivery.mode: 'exactly_twice' is not one of at_least_once|exactly_once");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  input: [a, b]\n", NULL,
              "t.yaml:3: topics.input: expected a scalar value");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in, reply_allow: [a, [b]]}\n", NULL,
              "t.yaml:2: topics.reply_allow: expected a list of topic names");
}

/* model.device names one GPU as cuda:N (one worker per GPU, docs/operations.md
 * "GPU deployment"); whether that device exists is checked at start
 * (worker/service/device.c), not here: a config is valid on any host. */
/* exactly_once and the pieces of its transactional.id (worker/txn.h); the
 * property itself is the worker's, refused in any kafka section. */
Test(config, exactly_once_and_its_transactional_id) {
    vw_config *cfg = parse_ok("kafka: {bootstrap.servers: h}\ntopics: {input: in}\n"
                              "delivery: {mode: exactly_once, worker_id: w-1, "
                              "transactional_id_prefix: fraud}\n",
                              NULL);
    cr_assert_eq(cfg->delivery.mode, VW_DELIVERY_EXACTLY_ONCE);
    cr_assert_str_eq(cfg->delivery.worker_id, "w-1");
    cr_assert_str_eq(cfg->delivery.transactional_id_prefix, "fraud");
    vw_config_free(cfg);
    char *env[] = {"VELA_DELIVERY_MODE=exactly_once", "VELA_DELIVERY_WORKER_ID=pod-2", NULL};
    cfg = parse_ok(minimal, env);
    cr_assert_eq(cfg->delivery.mode, VW_DELIVERY_EXACTLY_ONCE);
    cr_assert_str_eq(cfg->delivery.worker_id, "pod-2");
    cr_assert_str_eq(cfg->delivery.transactional_id_prefix, "", "the group id, later");
    vw_config_free(cfg);
    parse_bad("kafka:\n  bootstrap.servers: h\n  producer: {transactional.id: x}\n"
              "topics: {input: in}\n",
              NULL,
              "t.yaml:3: kafka.producer.transactional.id: the worker derives it "
              "(delivery.mode exactly_once: delivery.transactional_id_prefix and "
              "delivery.worker_id)");
    parse_bad("kafka: {bootstrap.servers: h, transactional.id: x}\ntopics: {input: in}\n", NULL,
              "kafka.transactional.id: the worker derives it");
}

Test(config, device_cuda_ordinals) {
    const char *ok[] = {"auto", "cpu", "cuda", "cuda:0", "cuda:3", "cuda:17", "cuda:255"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char yaml[160];
        snprintf(yaml, sizeof yaml, "%smodel: {device: \"%s\", precision: bf16x2}\n", minimal,
                 ok[i]);
        vw_config *cfg = parse_ok(yaml, NULL);
        cr_assert_str_eq(cfg->model.device, ok[i]);
        cr_assert_str_eq(cfg->model.precision, "bf16x2");
        vw_config_free(cfg);
    }
    const char *bad[] = {"cuda:",   "cuda:-1", "cuda:01", "cuda:256", "cuda:1x",
                         "cuda: 1", "CUDA:0",  "gpu:0",   "cuda:N",   "cuda0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[160], want[96];
        snprintf(yaml, sizeof yaml, "%smodel:\n  device: \"%s\"\n", minimal, bad[i]);
        snprintf(want, sizeof want, "t.yaml:4: model.device: '%s' is not one of", bad[i]);
        parse_bad(yaml, NULL, want);
    }
    char *env_ok[] = {"VELA_MODEL_DEVICE=cuda:2", "VELA_MODEL_PRECISION=bf16", NULL};
    vw_config *cfg = parse_ok(minimal, env_ok);
    cr_assert_str_eq(cfg->model.device, "cuda:2");
    cr_assert_str_eq(cfg->model.precision, "bf16");
    vw_config_free(cfg);
    char *env_bad[] = {"VELA_MODEL_DEVICE=cuda:two", NULL};
    parse_bad(minimal, env_bad,
              "VELA_MODEL_DEVICE (environment): 'cuda:two' is not one of auto|cpu|cuda|cuda:N");
}

Test(config, kafka_properties_checked_by_librdkafka) {
    parse_bad("kafka:\n  bootstrap.servers: h\n  fetch.wait.max.msec: 10\ntopics: {input: in}\n",
              NULL, "t.yaml:3: kafka.fetch.wait.max.msec: No such configuration property");
    parse_bad("kafka:\n  bootstrap.servers: h\n  consumer:\n    session.timeout.ms: soon\n"
              "topics: {input: in}\n",
              NULL, "t.yaml:4: kafka.consumer.session.timeout.ms: Invalid value");
    parse_bad("kafka:\n  bootstrap.servers: h\n  consumer:\n    enable.auto.commit: true\n"
              "topics: {input: in}\n",
              NULL, "t.yaml:4: kafka.consumer.enable.auto.commit: the worker's delivery rule");
    parse_bad("kafka:\n  bootstrap.servers: h\n  producer: {acks: 1}\ntopics: {input: in}\n", NULL,
              "t.yaml:3: kafka.producer.acks: the worker's delivery rule");
    /* Aborted transactions on the input must never be answered (issue 35 finding 8). */
    parse_bad("kafka:\n  bootstrap.servers: h\n  consumer:\n    isolation.level: read_uncommitted\n"
              "topics: {input: in}\n",
              NULL,
              "t.yaml:4: kafka.consumer.isolation.level: must be read_committed: with "
              "read_uncommitted the records of aborted transactions");
    parse_bad("kafka:\n  bootstrap.servers: h\n  isolation.level: read_uncommitted\n"
              "topics: {input: in}\n",
              NULL, "t.yaml:3: kafka.isolation.level: must be read_committed");
    parse_bad("kafka:\n  bootstrap.servers: h\n  consumer: 5\ntopics: {input: in}\n", NULL,
              "t.yaml:3: kafka.consumer: expected a mapping");
}

Test(config, duplicates_and_shape) {
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  input: a\n  input: b\n", NULL,
              "t.yaml:4: topics.input: duplicate key");
    parse_bad("kafka:\n  bootstrap.servers: h\n  bootstrap.servers: i\ntopics: {input: a}\n", NULL,
              "t.yaml:3: kafka.bootstrap.servers: duplicate key");
    parse_bad("- a\n- b\n", NULL, "t.yaml:1: (top level): expected a mapping");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: 3\n", NULL,
              "t.yaml:2: topics: expected a mapping");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: [unclosed\n", NULL, "t.yaml:");
}

Test(config, required_fields) {
    parse_bad("topics: {input: in}\n", NULL, "t.yaml: kafka.bootstrap.servers: required");
    parse_bad("kafka: {bootstrap.servers: h}\n", NULL, "t.yaml: topics.input: required");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\ndelivery:\n"
              "  retry_backoff_ms: 50\n  retry_backoff_max_ms: 10\n",
              NULL, "delivery.retry_backoff_max_ms: must be >=");
}

Test(config, example_file_loads) {
    char *path = vw_test_path("config/worker.example.yaml");
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_load(path, NULL, &cfg, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(cfg->topics.input, "requests");
    cr_assert_str_eq(cfg->topics.dlq, "requests.dlq");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.producer, "compression.codec"), "lz4");
    vw_config_free(cfg);
    free(path);
    cr_assert_eq(vw_config_load("/nonexistent/x.yaml", NULL, &cfg, &err), VW_EIO);
    cr_assert_null(cfg);
}

/* An output topic that is the input topic feeds the worker its own records
 * forever: refused with the line of the output key (issue 27 item 3). */
Test(config, output_topic_equal_to_input_is_a_loop) {
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  input: in\n  results: in\n", NULL,
              "t.yaml:4: topics.results: 'in' is both topics.input and topics.results: the "
              "worker would consume its own results (a loop)");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  dlq: in\n  input: in\n", NULL,
              "t.yaml:3: topics.dlq: 'in' is both topics.input and topics.dlq");
    /* results left at its default: the input key is the one to change. */
    parse_bad("kafka: {bootstrap.servers: h}\n\ntopics:\n  input: results\n", NULL,
              "t.yaml:4: topics.input: 'results' is both topics.input and topics.results");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics:\n  input: in\n  reply_allow:\n"
              "    - out\n    - in\n",
              NULL, "t.yaml:6: topics.reply_allow: 'in' is topics.input: a reply-topic header");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in, reply_allow: [a, in]}\n", NULL,
              "t.yaml:2: topics.reply_allow: 'in' is topics.input");
    char *env_results[] = {"VELA_TOPICS_RESULTS=in", NULL};
    parse_bad(minimal, env_results,
              "VELA_TOPICS_RESULTS (environment): 'in' is both topics.input and topics.results");
    char *env_input[] = {"VELA_TOPICS_INPUT=x", "VELA_TOPICS_REPLY_ALLOW=a,x", NULL};
    parse_bad(minimal, env_input, "VELA_TOPICS_REPLY_ALLOW (environment): 'x' is topics.input");
    /* Distinct topics (a dlq equal to results is no loop) still load. */
    vw_config *cfg =
        parse_ok("kafka: {bootstrap.servers: h}\ntopics: {input: in, results: out, dlq: out, "
                 "reply_allow: [in2, out]}\n",
                 NULL);
    vw_config_free(cfg);
}

/* metrics.listen: getaddrinfo wraps a port over 65535 (99999 bound 34463);
 * the config refuses it, and any other malformed address, with its line. */
Test(config, metrics_listen_port_range_and_shape) {
    const char *ok[] = {"127.0.0.1:0", "127.0.0.1:9464", "0.0.0.0:65535", "[::1]:9464",
                        "localhost:80"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char yaml[160];
        snprintf(yaml, sizeof yaml, "%smetrics: {listen: \"%s\"}\n", minimal, ok[i]);
        vw_config *cfg = parse_ok(yaml, NULL);
        cr_assert_str_eq(cfg->metrics.listen, ok[i]);
        vw_config_free(cfg);
    }
    static const struct {
        const char *listen, *why;
    } bad[] = {
        {"127.0.0.1:99999", "port '99999' is not a number in [0, 65535]"},
        {"127.0.0.1:65536", "port '65536' is not a number in [0, 65535]"},
        {"127.0.0.1:0000009464", "port '0000009464' is not a number"},
        {"127.0.0.1:http", "port 'http' is not a number"},
        {"127.0.0.1:-1", "port '-1' is not a number"},
        {"127.0.0.1: 80", "port ' 80' is not a number"},
        {"9464", "want host:port"},
        {":9464", "want host:port"},
        {"127.0.0.1:", "want host:port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[200], want[160];
        snprintf(yaml, sizeof yaml, "%smetrics:\n  listen: \"%s\"\n", minimal, bad[i].listen);
        snprintf(want, sizeof want, "t.yaml:4: metrics.listen: '%s': %s", bad[i].listen,
                 bad[i].why);
        parse_bad(yaml, NULL, want);
    }
    char *env[] = {"VELA_METRICS_LISTEN=0.0.0.0:99999", NULL};
    parse_bad(minimal, env, "VELA_METRICS_LISTEN (environment): '0.0.0.0:99999': port '99999'");
}

/* model.manifest_sha256 (VELA_MODEL_MANIFEST_SHA256): empty by default (no
 * anchor), 64 hex digits in either case, anything else refused with its line
 * or variable (docs/backbone.md "Manifest anchor"). */
Test(config, model_manifest_sha256) {
    vw_config *cfg = parse_ok(minimal, NULL);
    cr_assert_str_eq(cfg->model.manifest_sha256, "");
    vw_config_free(cfg);
    const char *hex = "0123456789abcdefABCDEF0123456789abcdef0123456789abcdef0123456789";
    char yaml[300], env[120];
    snprintf(yaml, sizeof yaml, "%smodel: {manifest_sha256: \"%s\"}\n", minimal, hex);
    cfg = parse_ok(yaml, NULL);
    cr_assert_str_eq(cfg->model.manifest_sha256, hex);
    vw_config_free(cfg);
    snprintf(env, sizeof env, "VELA_MODEL_MANIFEST_SHA256=%.63sf", hex);
    char *envp[] = {env, NULL};
    cfg = parse_ok(yaml, envp);
    cr_assert_str_eq(cfg->model.manifest_sha256, env + strlen("VELA_MODEL_MANIFEST_SHA256="));
    vw_config_free(cfg);
    snprintf(yaml, sizeof yaml, "%smodel:\n  manifest_sha256: %.63s\n", minimal, hex);
    parse_bad(yaml, NULL,
              "t.yaml:4: model.manifest_sha256: expected the SHA-256 of "
              "MODEL_MANIFEST.json (64 hex digits)");
    snprintf(env, sizeof env, "VELA_MODEL_MANIFEST_SHA256=%.63sg", hex);
    parse_bad(minimal, envp, "VELA_MODEL_MANIFEST_SHA256 (environment): expected the SHA-256");
}

/* model.cpu_threads (VELA_MODEL_CPU_THREADS): 0 by default (the worker's
 * share of the CPUs, worker/pipeline.c), 1..256 threads of the CPU
 * executor's pool, anything else refused with its line or variable. */
Test(config, model_cpu_threads) {
    vw_config *cfg = parse_ok(minimal, NULL);
    cr_assert_eq(cfg->model.cpu_threads, 0);
    vw_config_free(cfg);
    char yaml[200];
    snprintf(yaml, sizeof yaml, "%smodel: {cpu_threads: 3}\n", minimal);
    cfg = parse_ok(yaml, NULL);
    cr_assert_eq(cfg->model.cpu_threads, 3);
    vw_config_free(cfg);
    char *env[] = {"VELA_MODEL_CPU_THREADS=7", NULL};
    cfg = parse_ok(yaml, env);
    cr_assert_eq(cfg->model.cpu_threads, 7);
    vw_config_free(cfg);
    snprintf(yaml, sizeof yaml, "%smodel:\n  cpu_threads: 257\n", minimal);
    parse_bad(yaml, NULL, "t.yaml:4: model.cpu_threads");
    char *bad[] = {"VELA_MODEL_CPU_THREADS=-1", NULL};
    parse_bad(minimal, bad, "VELA_MODEL_CPU_THREADS (environment)");
}

/* Nesting deeper than VW_CONFIG_MAX_DEPTH is refused from the parser's events,
 * at the line it passes the limit, before libyaml loads the document (which
 * took 22 s for 100,000 levels). 200,000 levels here: without the bound this
 * test runs for minutes. */
Test(config, nesting_depth_is_bounded) {
    enum { DEPTH = 200000 };
    static const char *const open_close[][2] = {{"[", "]"}, {"{a: ", "}"}};
    for (size_t k = 0; k < 2; k++) {
        size_t ol = strlen(open_close[k][0]), cl = strlen(open_close[k][1]);
        size_t pre = strlen(minimal) + 4;
        char *yaml = malloc(pre + DEPTH * (ol + cl) + 8);
        cr_assert_not_null(yaml);
        char *w = yaml + sprintf(yaml, "%sx: ", minimal);
        for (int i = 0; i < DEPTH; i++, w += ol)
            memcpy(w, open_close[k][0], ol);
        *w++ = '1';
        for (int i = 0; i < DEPTH; i++, w += cl)
            memcpy(w, open_close[k][1], cl);
        strcpy(w, "\n");
        parse_bad(yaml, NULL, "t.yaml:3: YAML: nested deeper than 8 levels");
        free(yaml);
    }
    /* The limit itself: 8 levels reach the parser (which refuses the key). */
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nx: [[[[[[[1]]]]]]]\n", NULL,
              "t.yaml:3: x: unknown section");
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in}\nx: [[[[[[[[1]]]]]]]]\n", NULL,
              "t.yaml:3: YAML: nested deeper than 8 levels");
}

/* Issue 35 finding 4: a 1 MB anchored scalar aliased 10,000 times in
 * topics.reply_allow took 3.2 GB, then exit 2 with "config list". Aliases are
 * counted and their expansion bounded from the parser's events, refused at the
 * alias's line before the document is loaded. Without the bound this config
 * parses (the scalar copied once per alias: 200 MB). */
Test(config, alias_expansion_is_bounded) {
    enum { SCALAR = 100000, ALIASES = 60 };
    char *yaml = malloc(SCALAR + ALIASES * 8 + 256);
    cr_assert_not_null(yaml);
    char *w = yaml + sprintf(yaml, "kafka: {bootstrap.servers: \"h:1\"}\nmodel: {bundle: &big ");
    memset(w, 'a', SCALAR);
    w += SCALAR;
    w += sprintf(w, "}\ntopics: {input: in, reply_allow: [");
    for (int i = 0; i < ALIASES; i++)
        w += sprintf(w, "%s*big", i ? ", " : "");
    sprintf(w, "]}\n");
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_parse(yaml, strlen(yaml), "t.yaml", NULL, &cfg, &err);
    size_t n = cfg ? cfg->topics.n_reply_allow : 0;
    vw_config_free(cfg);
    free(yaml);
    cr_assert_eq(st, VW_EINVAL, "a %d-byte scalar aliased %d times was accepted (%zu entries)",
                 SCALAR, ALIASES, n);
    cr_assert_str_eq(err.type, "config_invalid");
    cr_assert(strstr(err.msg, "t.yaml:3: YAML: the document expands past 1048576 bytes"),
              "message: %s", err.msg);
}

/* Nested anchors multiply (a "billion laughs"): each level is counted with its
 * aliases expanded, so the bound holds however they nest. */
Test(config, nested_aliases_are_counted_expanded) {
    parse_bad(
        "kafka: {bootstrap.servers: \"h:1\"}\n"
        "topics: {input: in}\n"
        "x: &a [aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n"
        "y: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "z: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
        "w: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
        "v: [*d, *d, *d, *d]\n",
        NULL, "t.yaml:7: YAML: the document expands past 1048576 bytes");
    /* The same shape, smaller, is counted but accepted up to the key check. */
    parse_bad("kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in}\n"
              "x: &a [aaaa]\ny: [*a, *a]\n",
              NULL, "t.yaml:3: x: unknown section");
}

/* More than VW_CONFIG_MAX_ALIASES aliases (or anchors) are refused whatever
 * they expand to; an alias inside the node it names is a cycle. */
Test(config, aliases_are_counted) {
    char yaml[2048];
    char *w = yaml + sprintf(yaml, "kafka: {bootstrap.servers: \"h:1\"}\n"
                                   "model: {bundle: &t b}\n"
                                   "topics: {input: in, reply_allow: [");
    for (int i = 0; i < VW_CONFIG_MAX_ALIASES; i++)
        w += sprintf(w, "%s*t", i ? ", " : "");
    strcpy(w, "]}\n");
    vw_config *cfg = parse_ok(yaml, NULL);
    cr_assert_eq(cfg->topics.n_reply_allow, VW_CONFIG_MAX_ALIASES);
    cr_assert_str_eq(cfg->topics.reply_allow[0], "b");
    vw_config_free(cfg);
    strcpy(w, ", *t]}\n");
    parse_bad(yaml, NULL, "t.yaml:3: YAML: more than 64 aliases (a configuration needs none)");
    w = yaml + sprintf(yaml, "kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in}\nx: [");
    for (int i = 0; i <= VW_CONFIG_MAX_ALIASES; i++)
        w += sprintf(w, "%s&a%d x", i ? ", " : "", i);
    strcpy(w, "]\n");
    parse_bad(yaml, NULL, "t.yaml:3: YAML: more than 64 anchors");
    parse_bad("kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in}\nx: &a [*a]\n", NULL,
              "t.yaml:3: YAML: alias *a inside the node it names");
}

/* A file larger than VW_CONFIG_MAX_BYTES is refused, and vw_config_load reads
 * no more of it than that. */
Test(config, file_size_is_bounded) {
    char path[] = "/tmp/vw_config_big_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "%s# ", minimal);
    for (int i = 0; i < VW_CONFIG_MAX_BYTES; i++)
        fputc('x', f);
    fputc('\n', f);
    fclose(f);
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_load(path, NULL, &cfg, &err);
    unlink(path);
    cr_assert_eq(st, VW_EINVAL, "a %d-byte config was accepted", VW_CONFIG_MAX_BYTES + 40);
    cr_assert(strstr(err.msg, ": larger than 1048576 bytes"), "message: %s", err.msg);
}

/* ---- the start check: librdkafka properties checked only by rd_kafka_new ---- */

/* Runs vw_worker_check on a config text; returns its status, err filled, and
 * what it logged (librdkafka's error lines) in log_text. */
static vw_status start_check(const char *yaml, char *const *envp, vw_err *err, char *log_text,
                             size_t cap) {
    vw_config *cfg = NULL;
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", envp, &cfg, err), VW_OK, "%s",
                 err->msg);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    vw_log log = {.level = VW_LOG_DEBUG, .format = VW_LOG_TEXT, .out = f};
    vw_status st = vw_worker_check(cfg, &log, false, err);
    rewind(f);
    size_t n = fread(log_text, 1, cap - 1, f);
    log_text[n] = 0;
    fclose(f);
    vw_config_free(cfg);
    return st;
}

/* A bad ssl.key.location passes the config (librdkafka stores the name) and
 * failed only when the consumer was created, after the model had loaded. The
 * check creates both clients: the error names the key, its line and the file. */
Test(config, start_check_names_key_line_and_file) {
    vw_err err = {0};
    char log_text[8192];
    const char *key = "kafka:\n  bootstrap.servers: h:1\n  security.protocol: ssl\n"
                      "  ssl.key.location: /nonexistent/client.key\ntopics: {input: in}\n";
    cr_assert_eq(start_check(key, NULL, &err, log_text, sizeof log_text), VW_EINVAL);
    cr_assert_str_eq(err.type, "config_invalid");
    cr_assert(strstr(err.msg, "t.yaml:4: kafka.ssl.key.location: librdkafka consumer: "
                              "ssl.key.location failed: "),
              "%s", err.msg);
    cr_assert(strstr(err.msg, "(ssl.key.location is '/nonexistent/client.key')"), "%s", err.msg);
    cr_assert(strstr(log_text, "/nonexistent/client.key"), "librdkafka's line: %s", log_text);
    /* The producer's own section, and a property only a created client checks. */
    const char *inflight = "kafka:\n  bootstrap.servers: h:1\n  producer:\n"
                           "    max.in.flight: 10\ntopics: {input: in}\n";
    cr_assert_eq(start_check(inflight, NULL, &err, log_text, sizeof log_text), VW_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml:4: kafka.producer.max.in.flight: librdkafka producer: "),
              "%s", err.msg);
    /* From the environment: the variable is named. */
    char *env[] = {"VELA_KAFKA_SECURITY_PROTOCOL=ssl",
                   "VELA_KAFKA_CONSUMER_SSL_CA_LOCATION=/nonexistent/ca.pem", NULL};
    cr_assert_eq(start_check(minimal, env, &err, log_text, sizeof log_text), VW_EINVAL);
    cr_assert(strstr(err.msg, "VELA_KAFKA_CONSUMER_SSL_CA_LOCATION (environment): librdkafka "
                              "consumer: ssl.ca.location failed"),
              "%s", err.msg);
    /* No property named in the reason: the file. */
    const char *mech = "kafka:\n  bootstrap.servers: h:1\n  security.protocol: sasl_plaintext\n"
                       "  sasl.mechanisms: PLAIN\ntopics: {input: in}\n";
    cr_assert_eq(start_check(mech, NULL, &err, log_text, sizeof log_text), VW_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml: kafka: librdkafka consumer: sasl.username and "
                              "sasl.password must be set"),
              "%s", err.msg);
    /* A valid config passes, connecting nowhere (h:1 is no host). */
    cr_assert_eq(start_check(minimal, NULL, &err, log_text, sizeof log_text), VW_OK, "%s", err.msg);
}

/* Runs `vela-worker run` on config/worker.example.yaml with extra environment
 * (a shell prefix); returns the exit code, out receives stdout+stderr. */
static int run_worker(const char *env, char *out, size_t cap) {
    const char *bin = getenv("VW_WORKER_BIN");
    if (!bin)
        cr_skip_test("VW_WORKER_BIN not set (CTest sets it)");
    char *src = vw_test_path("");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s VELA_METRICS_LISTEN= VELA_LOG_FORMAT=text VELA_MODEL_DEVICE=cpu "
             "timeout 60 '%s' run --config config/worker.example.yaml 2>&1",
             src, env, bin);
    free(src);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    char rest[4096];
    while (fread(rest, 1, sizeof rest, p) > 0) {
    } /* beyond cap: read, so the worker never blocks on the pipe */
    int rc = pclose(p);
    cr_assert(WIFEXITED(rc), "%s", out);
    return WEXITSTATUS(rc);
}

/* The same through `vela-worker run`: exit 2 before "model loaded". */
Test(config, run_stops_on_a_bad_ssl_key_before_the_model_loads) {
    char out[16384];
    int rc = run_worker("VELA_KAFKA_SECURITY_PROTOCOL=ssl VELA_KAFKA_SSL_KEY_LOCATION=/nonexistent",
                        out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "VELA_KAFKA_SSL_KEY_LOCATION (environment): librdkafka consumer: "
                          "ssl.key.location failed"),
              "%s", out);
    cr_assert_null(strstr(out, "model loaded"), "%s", out);
}

/* config/worker.sasl_ssl.example.yaml (docs/operations.md "Security"): SASL_SSL with
 * SCRAM, the password from the environment; as committed it stops at the start
 * check (no password, no CA file here), and with both it passes. */
Test(config, sasl_ssl_example_loads_and_passes_the_start_check) {
    char *path = vw_test_path("config/worker.sasl_ssl.example.yaml");
    char *text = vw_test_read_file(path, NULL);
    cr_assert_not_null(text, "%s", path);
    int ca_line = 1; /* the line of ssl.ca.location, for the message below */
    for (const char *c = text; c <= strstr(text, "\n  ssl.ca.location:"); c++)
        ca_line += *c == '\n';
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_load(path, NULL, &cfg, &err), VW_OK, "%s", err.msg);
    const vw_kvlist *k = &cfg->kafka.common;
    cr_assert_str_eq(vw_kvlist_get(k, "security.protocol"), "SASL_SSL");
    cr_assert_str_eq(vw_kvlist_get(k, "sasl.mechanisms"), "SCRAM-SHA-512");
    cr_assert_str_eq(vw_kvlist_get(k, "ssl.endpoint.identification.algorithm"), "https");
    cr_assert_null(vw_kvlist_get(k, "sasl.password"), "no secret in a committed file");
    cr_assert_str_eq(cfg->metrics.listen, "127.0.0.1:9464");
    FILE *devnull = fopen("/dev/null", "w");
    vw_log log = {.level = VW_LOG_ERROR, .format = VW_LOG_TEXT, .out = devnull};
    cr_assert_eq(vw_worker_check(cfg, &log, false, &err), VW_EINVAL);
    cr_assert(strstr(err.msg, "sasl.username and sasl.password must be set"), "%s", err.msg);
    vw_config_free(cfg);
    const char *ca = "/etc/ssl/certs/ca-certificates.crt";
    if (access(ca, R_OK))
        cr_skip_test("no system CA bundle at %s", ca);
    char *with_password[] = {"VELA_KAFKA_SASL_PASSWORD=not-a-real-one", NULL};
    cr_assert_eq(vw_config_load(path, with_password, &cfg, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_worker_check(cfg, &log, false, &err), VW_EINVAL);
    char want[128];
    snprintf(want, sizeof want, ".yaml:%d: kafka.ssl.ca.location: librdkafka consumer: ", ca_line);
    cr_assert(strstr(err.msg, want), "the example's CA file is not on this machine: %s", err.msg);
    vw_config_free(cfg);
    char ca_env[128];
    snprintf(ca_env, sizeof ca_env, "VELA_KAFKA_SSL_CA_LOCATION=%s", ca);
    char *complete[] = {"VELA_KAFKA_SASL_PASSWORD=not-a-real-one", ca_env, NULL};
    cr_assert_eq(vw_config_load(path, complete, &cfg, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_worker_check(cfg, &log, false, &err), VW_OK, "%s", err.msg);
    vw_config_free(cfg);
    fclose(devnull);
    free(text);
    free(path);
}

/* Secrets stay out of the log (docs/operations.md "Security"), even with every
 * librdkafka debug context on: librdkafka prints its sensitive properties as
 * [redacted] in its configuration dump, and the worker logs no property value
 * of its own (errors name the key). A guard: this held before the check. */
Test(config, secrets_never_reach_the_log) {
    const char *ca = "/etc/ssl/certs/ca-certificates.crt";
    if (access(ca, R_OK))
        cr_skip_test("no system CA bundle at %s", ca);
    char env[1024], out[1 << 17];
    snprintf(env, sizeof env,
             "VELA_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1 VELA_KAFKA_SECURITY_PROTOCOL=sasl_ssl "
             "VELA_KAFKA_SASL_MECHANISMS=SCRAM-SHA-512 VELA_KAFKA_SASL_USERNAME=user-8d1f "
             "VELA_KAFKA_SASL_PASSWORD=pw-5c0a7e11 VELA_KAFKA_SSL_KEY_PASSWORD=kp-93b2d4 "
             "VELA_KAFKA_SSL_CA_LOCATION=%s VELA_KAFKA_DEBUG=all VELA_LOG_LEVEL=debug "
             "VELA_DELIVERY_START_TIMEOUT_MS=1000",
             ca);
    int rc = run_worker(env, out, sizeof out);
    cr_assert_eq(rc, 1, "no broker answers: exit 1 (%d)", rc);
    cr_assert(strstr(out, "sasl.password = [redacted]"), "librdkafka's dump ran");
    cr_assert_null(strstr(out, "pw-5c0a7e11"), "sasl.password in the log");
    cr_assert_null(strstr(out, "kp-93b2d4"), "ssl.key.password in the log");
    cr_assert_null(strstr(out, "user-8d1f"), "sasl.username in the log");
}

/* A worker that fails exits 1 with its first cause (worker/fault.h,
 * docs/worker.md "Exit status") in its last log line: here no broker answers
 * within delivery.start_timeout_ms. Until issue 24 the line read "fatal
 * librdkafka error (see the log)" for every cause. */
Test(config, run_exits_with_its_first_cause) {
    char out[65536];
    int rc = run_worker("VELA_KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1 "
                        "VELA_DELIVERY_START_TIMEOUT_MS=1000",
                        out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n')
        out[--n] = 0;
    const char *last = strrchr(out, '\n');
    last = last ? last + 1 : out;
    cr_assert(strstr(last, "no Kafka broker answered within delivery.start_timeout_ms (1000 ms)") &&
                  strstr(last, "type=broker_timeout") && strstr(last, "bootstrap=127.0.0.1:1"),
              "last line: %s", last);
}

/* model.bundle missing or wrong: the message names the key and the path (it
 * read "bundle directory : No such file or directory"); a key not set is a
 * config error (exit 2), a directory not there a failed start (exit 1, like
 * a missing device). */
Test(config, run_names_model_bundle_when_it_is_missing) {
    char out[16384];
    int rc = run_worker("VELA_MODEL_BUNDLE=", out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "vela-worker run: VELA_MODEL_BUNDLE (environment): not set: the bundle "
                          "directory"),
              "%s", out);
    rc = run_worker("VELA_MODEL_BUNDLE=/nonexistent/bundle", out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "vela-worker run: VELA_MODEL_BUNDLE (environment): bundle directory "
                          "'/nonexistent/bundle': No such file or directory (missing_file)\n"),
              "%s", out);
}
