/* test_config_sources.c — every source of the configuration named (issue 33
 * item 2): a VELA_* variable that names no section or key fails as a file
 * key does (VELA_BATCHNG_MAX_TOKENS was ignored); an error an override
 * causes names the variable, not the file line (VELA_TOPICS_INPUT=results
 * blamed the file's topics.results line); a librdkafka alias is reported
 * under the name the user wrote (linger.ms: banana was reported as
 * queue.buffering.max.ms), at load and in the start check's client errors;
 * relative paths in a file are taken from the
 * file's directory (model.bundle was taken from the current one); where a
 * field was set (vw_config_where), which the start-up errors name: every one
 * of `run` (the bundle's and the metrics address's included) a plain
 * "vela-worker run: SOURCE: KEY: reason" line before any log line, the OS
 * reason named (strerror). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service/config.h"
#include "vw_test.h"
#include "worker.h"

static const char *minimal = "kafka: {bootstrap.servers: \"h:1\"}\ntopics: {input: in}\n";

static void parse_bad(const char *yaml, char *const *envp, const char *want) {
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_parse(yaml, strlen(yaml), "t.yaml", envp, &cfg, &err);
    cr_assert_eq(st, VW_EINVAL, "expected VW_EINVAL for:\n%s", yaml);
    cr_assert_null(cfg);
    cr_assert_str_eq(err.type, "config_invalid");
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
}

Test(config_sources, an_unknown_variable_fails_naming_it) {
    char *section[] = {"VELA_BATCHNG_MAX_TOKENS=5", NULL};
    parse_bad(minimal, section, "VELA_BATCHNG_MAX_TOKENS (environment): unknown section");
    char *key[] = {"VELA_BATCHING_MAX_TOKEN=5", NULL};
    parse_bad(minimal, key, "VELA_BATCHING_MAX_TOKEN (environment): unknown key");
    char *bare[] = {"VELA_=1", NULL};
    parse_bad(minimal, bare, "VELA_ (environment): unknown section");
    char *other[] = {"VELAX=1", "PATH=/bin", "HOME=/root", NULL}; /* not VELA_*: not ours */
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(minimal, strlen(minimal), "t.yaml", other, &cfg, &err), VW_OK,
                 "%s", err.msg);
    vw_config_free(cfg);
}

Test(config_sources, an_override_error_names_the_variable) {
    /* the file sets topics.results (line 3); the variable makes the loop */
    const char *yaml = "kafka: {bootstrap.servers: \"h:1\"}\ntopics:\n  results: results\n"
                       "  input: requests\n";
    char *input[] = {"VELA_TOPICS_INPUT=results", NULL};
    parse_bad(yaml, input,
              "VELA_TOPICS_INPUT (environment): 'results' is both topics.input and "
              "topics.results");
    char *reply[] = {"VELA_TOPICS_INPUT=a", NULL};
    parse_bad("kafka: {bootstrap.servers: h}\ntopics: {input: in, reply_allow: [a]}\n", reply,
              "VELA_TOPICS_INPUT (environment): 'a' is topics.input");
    char *prop[] = {"VELA_KAFKA_NO_SUCH_PROPERTY=1", NULL};
    parse_bad(minimal, prop,
              "VELA_KAFKA_NO_SUCH_PROPERTY (environment): No such configuration "
              "property: \"no.such.property\"");
    char *cons[] = {"VELA_KAFKA_CONSUMER_FETCH_WAIT_MAX_MS=soon", NULL};
    parse_bad(minimal, cons, "VELA_KAFKA_CONSUMER_FETCH_WAIT_MAX_MS (environment): ");
    char *backoff[] = {"VELA_DELIVERY_RETRY_BACKOFF_MS=9000", NULL};
    parse_bad(minimal, backoff,
              "VELA_DELIVERY_RETRY_BACKOFF_MS (environment): must be <= "
              "delivery.retry_backoff_max_ms");
}

Test(config_sources, an_alias_is_reported_under_the_name_written) {
    vw_config *cfg = NULL;
    vw_err err = {0};
    const char *yaml = "kafka:\n  bootstrap.servers: h\n  producer:\n    linger.ms: banana\n"
                       "topics: {input: in}\n";
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", NULL, &cfg, &err), VW_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml:4: kafka.producer.linger.ms: Invalid value") &&
                  strstr(err.msg, "for configuration property \"linger.ms\""),
              "%s", err.msg);
    cr_assert_null(strstr(err.msg, "queue.buffering.max.ms"), "%s", err.msg);
    char *env[] = {"VELA_KAFKA_PRODUCER_LINGER_MS=banana", NULL};
    parse_bad(minimal, env, "VELA_KAFKA_PRODUCER_LINGER_MS (environment): Invalid value");
    parse_bad(minimal, env, "for configuration property \"linger.ms\"");
}

/* The start check (worker.h): librdkafka's reason names max.in.flight, an
 * alias of the max.in.flight.requests.per.connection the file sets; the
 * error names the file's key, its line, and uses the user's name. */
Test(config_sources, a_client_error_names_the_property_as_written) {
    const char *yaml = "kafka:\n  bootstrap.servers: h:1\n  producer:\n"
                       "    max.in.flight.requests.per.connection: 10\ntopics: {input: in}\n";
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", NULL, &cfg, &err), VW_OK, "%s",
                 err.msg);
    vw_log quiet = {.level = VW_LOG_OFF, .format = VW_LOG_TEXT, .out = stderr};
    cr_assert_eq(vw_worker_check(cfg, &quiet, false, &err), VW_EINVAL);
    cr_assert(strstr(err.msg, "t.yaml:4: kafka.producer.max.in.flight.requests.per.connection: "
                              "librdkafka producer: `max.in.flight.requests.per.connection` must "
                              "be set <= 5"),
              "%s", err.msg);
    vw_config_free(cfg);
}

Test(config_sources, where_a_field_was_set) {
    const char *yaml = "kafka: {bootstrap.servers: h}\ntopics: {input: in}\nmodel:\n"
                       "  bundle: /b\n";
    char *env[] = {"VELA_MODEL_DEVICE=cpu", NULL};
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "t.yaml", env, &cfg, &err), VW_OK, "%s",
                 err.msg);
    char buf[128];
    cr_assert_str_eq(vw_config_where(cfg, "model", "bundle", buf, sizeof buf),
                     "t.yaml:4: model.bundle");
    cr_assert_str_eq(vw_config_where(cfg, "model", "device", buf, sizeof buf),
                     "VELA_MODEL_DEVICE (environment)");
    cr_assert_str_eq(vw_config_where(cfg, "metrics", "listen", buf, sizeof buf),
                     "t.yaml: metrics.listen");
    cr_assert_eq(vw_config_set_at(cfg, "model", "bundle"), 4);
    cr_assert_eq(vw_config_set_at(cfg, "model", "device"), 0);
    cr_assert_eq(vw_config_set_at(cfg, "metrics", "listen"), -1);
    vw_config_free(cfg);
}

/* A config in a directory of its own, loaded from elsewhere: its relative
 * paths are the directory's; an override's stay as given; probe stays. */
Test(config_sources, relative_paths_are_the_files_directory) {
    char dir[] = "/tmp/vw_cfgdir_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *lines[] = {"kafka:",
                           "  bootstrap.servers: h:1",
                           "  ssl.key.location: certs/key.pem",
                           "  consumer: {ssl.ca.location: probe}",
                           "  producer: {ssl.certificate.location: /abs/cert.pem}",
                           "topics: {input: in}",
                           "model: {bundle: ../bundles/tiny}",
                           NULL};
    char *path = vw_test_write_lines(dir, "w.yaml", lines);
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_load(path, NULL, &cfg, &err), VW_OK, "%s", err.msg);
    char want[256];
    snprintf(want, sizeof want, "%s/../bundles/tiny", dir);
    cr_assert_str_eq(cfg->model.bundle, want);
    snprintf(want, sizeof want, "%s/certs/key.pem", dir);
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.common, "ssl.key.location"), want);
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.consumer, "ssl.ca.location"), "probe");
    cr_assert_str_eq(vw_kvlist_get(&cfg->kafka.producer, "ssl.certificate.location"),
                     "/abs/cert.pem");
    vw_config_free(cfg);
    char *env[] = {"VELA_MODEL_BUNDLE=here/tiny", NULL};
    cr_assert_eq(vw_config_load(path, env, &cfg, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(cfg->model.bundle, "here/tiny", "an override is the current directory's");
    vw_config_free(cfg);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* ---- start-up errors of `vela-worker run` ------------------------------------ */

/* Runs `cd DIR && ENV vela-worker run --config CFG`; returns the exit code,
 * out receives stderr (stdout is empty). */
static int run_in(const char *dir, const char *env, const char *cfg, char *out, size_t cap) {
    const char *bin = getenv("VW_WORKER_BIN");
    if (!bin)
        cr_skip_test("VW_WORKER_BIN not set (CTest sets it)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s timeout 60 '%s' run --config '%s' 2>&1", dir, env, bin,
             cfg);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    char rest[4096];
    while (fread(rest, 1, sizeof rest, p) > 0) {
    }
    int rc = pclose(p);
    cr_assert(WIFEXITED(rc), "%s", out);
    return WEXITSTATUS(rc);
}

/* The error is the first line, plain, and no JSON log line came before it. */
static void first_line_is(const char *out, const char *want) {
    cr_assert(!strncmp(out, want, strlen(want)), "first line:\n%s\nwanted:\n%s", out, want);
}

/* A metrics address in use: the variable that set it and the OS reason (it
 * read "metrics.listen '127.0.0.1:P': cannot bind", a JSON line after
 * "metrics listening"-style log lines, without the reason). */
Test(config_sources, run_names_a_metrics_address_in_use_with_the_os_reason) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !listen(fd, 1) &&
              !getsockname(fd, (struct sockaddr *)&a, &len));
    char env[160], want[300], out[16384];
    int port = ntohs(a.sin_port);
    snprintf(env, sizeof env, "VELA_METRICS_LISTEN=127.0.0.1:%d VELA_MODEL_DEVICE=test-echo", port);
    char *src = vw_test_path("");
    int rc = run_in(src, env, "config/worker.example.yaml", out, sizeof out);
    free(src);
    close(fd);
    cr_assert_eq(rc, 1, "%s", out);
    snprintf(want, sizeof want,
             "vela-worker run: VELA_METRICS_LISTEN (environment): '127.0.0.1:%d': cannot bind: "
             "Address already in use (metrics_listen)\n",
             port);
    first_line_is(out, want);
}

/* model.bundle is the config file's directory's: config/worker.example.yaml
 * run from / finds ../fixtures/tiny-vela (it failed with "bundle directory
 * 'fixtures/tiny-vela': No such file or directory" and no file or line); the
 * bundle opens and is refused under an anchor it does not have, naming the
 * variable that set the anchor. */
Test(config_sources, run_takes_the_bundle_from_the_config_files_directory) {
    char *cfg = vw_test_path("config/worker.example.yaml"), out[16384];
    int rc = run_in("/",
                    "VELA_METRICS_LISTEN= VELA_MODEL_DEVICE=cpu VELA_MODEL_MANIFEST_SHA256="
                    "0000000000000000000000000000000000000000000000000000000000000000",
                    cfg, out, sizeof out);
    free(cfg);
    cr_assert_eq(rc, 1, "%s", out);
    first_line_is(out, "vela-worker run: VELA_MODEL_MANIFEST_SHA256 (environment): ");
    cr_assert(strstr(out, "(manifest_mismatch)\n"), "%s", out);
    cr_assert_null(strstr(out, "No such file"), "%s", out);
}

/* A bundle the file names that is not there: the file, the line, the key, the
 * path as resolved, the OS reason. */
Test(config_sources, run_names_the_file_line_and_path_of_a_missing_bundle) {
    char dir[] = "/tmp/vw_cfgrun_XXXXXX", want[600], out[16384];
    cr_assert_not_null(mkdtemp(dir));
    const char *lines[] = {"kafka: {bootstrap.servers: \"127.0.0.1:1\"}",
                           "topics: {input: in}",
                           "metrics: {listen: ''}",
                           "model:",
                           "  device: cpu",
                           "  bundle: nothere",
                           NULL};
    char *path = vw_test_write_lines(dir, "w.yaml", lines);
    int rc = run_in("/", "", path, out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    snprintf(want, sizeof want,
             "vela-worker run: %s:6: model.bundle: bundle directory '%s/nothere': No such file or "
             "directory (missing_file)\n",
             path, dir);
    first_line_is(out, want);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* The start check's refusal: librdkafka's own lines (as text) and the plain
 * error line, no JSON line at all (they were JSON lines, the error among
 * them). */
Test(config_sources, run_start_check_errors_come_before_any_json) {
    char *src = vw_test_path(""), out[16384];
    int rc = run_in(src,
                    "VELA_METRICS_LISTEN= VELA_MODEL_DEVICE=test-echo "
                    "VELA_KAFKA_SECURITY_PROTOCOL=ssl "
                    "VELA_KAFKA_SSL_KEY_LOCATION=/nonexistent/client.key",
                    "config/worker.example.yaml", out, sizeof out);
    free(src);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert(strstr(out, "vela-worker run: VELA_KAFKA_SSL_KEY_LOCATION (environment): librdkafka "
                          "consumer: "),
              "%s", out);
    cr_assert(out[0] != '{' && !strstr(out, "\n{"), "no JSON line: %s", out);
}
