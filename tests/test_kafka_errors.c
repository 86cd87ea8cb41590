/* test_kafka_errors.c — librdkafka's errors in the worker's log (issue 33
 * item 4, worker/kafka_conf.h vw_kafka_error): one line per error with its
 * code and the broker it is about; the same error again within
 * VW_KAFKA_ERROR_REPEAT_MS is counted, not logged, and the count comes with
 * the next line; librdkafka's own log line of a broker's failure (facility
 * FAIL), which the error callback tells again, is not printed. Before, every
 * error was two lines (an `error` librdkafka line and a `warn kafka client
 * error` line), about 30 in 40 s when a broker went away. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_conf.h"
#include "kafka_harness.h"
#include "vw_test.h"

#define CONNECT "Connect to ipv4#127.0.0.1:9092 failed: Connection refused"

static size_t lines_in(FILE *f, char *buf, size_t cap) {
    fflush(f);
    long end = ftell(f);
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fseek(f, end, SEEK_SET);
    size_t lines = 0;
    for (const char *p = buf; (p = strchr(p, '\n')); p++)
        lines++;
    return lines;
}

Test(kafka_errors, one_line_with_code_and_broker_then_a_count) {
    char errstr[256], text[8192];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof errstr),
                 RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    cr_assert_not_null(rk, "%s", errstr);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    vw_log log = {.level = VW_LOG_DEBUG, .format = VW_LOG_TEXT, .out = f};
    vw_fault fault;
    vw_fault_init(&fault, NULL);
    vw_kafka_health h = {.repeat_ms = 400};
    vw_kafka_error(rk, "producer", RD_KAFKA_RESP_ERR__TRANSPORT,
                   "127.0.0.1:9092/1: " CONNECT " (after 0ms in state CONNECT)", &log, &fault, &h);
    cr_assert_eq(lines_in(f, text, sizeof text), 1, "%s", text);
    cr_assert(strstr(text, "kafka error client=") &&
                  strstr(text, " code=_TRANSPORT broker=\"127.0.0.1:9092/1\" reason=\"" CONNECT
                               " (after 0ms in state CONNECT)\""),
              "%s", text);
    for (int i = 0; i < 4; i++) /* the same again: counted */
        vw_kafka_error(rk, "producer", RD_KAFKA_RESP_ERR__TRANSPORT,
                       "127.0.0.1:9092/1: " CONNECT
                       " (after 1ms in state CONNECT, 1 identical error(s) suppressed)",
                       &log, &fault, &h);
    cr_assert_eq(lines_in(f, text, sizeof text), 1, "repeats are counted: %s", text);
    /* Another broker, another error: their own lines. */
    vw_kafka_error(rk, "producer", RD_KAFKA_RESP_ERR__TRANSPORT,
                   "GroupCoordinator: 127.0.0.1:9092: " CONNECT " (after 0ms in state CONNECT)",
                   &log, &fault, &h);
    vw_kafka_error(rk, "producer", RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 brokers are down",
                   &log, &fault, &h);
    cr_assert_eq(lines_in(f, text, sizeof text), 3, "%s", text);
    cr_assert(
        strstr(text,
               "code=_TRANSPORT broker=\"GroupCoordinator 127.0.0.1:9092\" reason=\"" CONNECT),
        "%s", text);
    cr_assert(strstr(text, "code=_ALL_BROKERS_DOWN broker=\"\" reason=\"1/1 brokers are down\""),
              "%s", text);
    vw_kh_sleep_ms(450); /* the window has passed: logged again, with the count */
    vw_kafka_error(rk, "producer", RD_KAFKA_RESP_ERR__TRANSPORT,
                   "127.0.0.1:9092/1: " CONNECT " (after 2ms in state CONNECT)", &log, &fault, &h);
    cr_assert_eq(lines_in(f, text, sizeof text), 4, "%s", text);
    cr_assert(strstr(text, "(after 2ms in state CONNECT)\" repeated=4"), "%s", text);
    cr_assert(vw_kafka_log_twin("FAIL"));
    cr_assert_not(vw_kafka_log_twin("CONFWARN"));
    cr_assert_not(vw_fault_raised(&fault));
    fclose(f);
    vw_fault_destroy(&fault);
    rd_kafka_destroy(rk);
}

/* The broker goes away under a running worker: no FAIL line of librdkafka's,
 * each error once (code, broker, reason) within the repeat window. */
Test(kafka_errors, a_broker_gone_is_told_once_per_error) {
    vw_kh_broker b;
    vw_kh_proc w;
    char cfg[256];
    cr_assert_eq(vw_kh_broker_start("requests:1,results:1,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, "gone", "shutdown: {grace_ms: 1000}\n", cfg, sizeof cfg),
                 0);
    cr_assert_eq(vw_kh_worker_start("worker", cfg, NULL, &w), 0);
    cr_assert_eq(vw_kh_wait_log(&w, "partition assigned", 60000), 0);
    vw_kh_broker_stop(&b);
    vw_kh_sleep_ms(8000);
    vw_kh_stop(&w, SIGTERM, 30000);
    size_t len = 0;
    char *log = vw_test_read_file(w.log_path, &len);
    cr_assert_not_null(log);
    int errors = 0;
    json_t *seen = json_object();
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *v = json_loads(line, 0, NULL);
        if (!v)
            continue;
        const char *fac = json_string_value(json_object_get(v, "facility"));
        cr_expect(!fac || strcmp(fac, "FAIL"), "librdkafka's FAIL line again: %s", line);
        const char *msg = json_string_value(json_object_get(v, "msg"));
        if (msg && !strcmp(msg, "kafka error")) {
            errors++;
            const char *code = json_string_value(json_object_get(v, "code"));
            const char *broker = json_string_value(json_object_get(v, "broker"));
            const char *reason = json_string_value(json_object_get(v, "reason"));
            const char *client = json_string_value(json_object_get(v, "client"));
            cr_assert(code && broker && reason && client, "%s", line);
            char key[600];
            snprintf(key, sizeof key, "%s|%s|%s|%.*s", client, code, broker,
                     (int)(strstr(reason, " (after ") ? strstr(reason, " (after ") - reason
                                                      : (long)strlen(reason)),
                     reason);
            cr_expect_null(json_object_get(seen, key), "logged twice within the window: %s", line);
            json_object_set_new(seen, key, json_true());
        }
        json_decref(v);
    }
    cr_log_info("a broker gone for 8 s: %d kafka error lines", errors);
    cr_assert_gt(errors, 0, "the broker's going is told");
    json_decref(seen);
    free(log);
}
