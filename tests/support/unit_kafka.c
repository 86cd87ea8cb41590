/* unit_kafka.c — the worker unit suites' helpers (see unit_kafka.h). */
#include "unit_kafka.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "echo.h"
#include "kafka_harness.h"

vw_broker *vw_unit_broker(const char *topics) {
    vw_broker *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_broker_new(1, &b, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_broker_create_topics(b, topics, &err), VW_OK, "%s", err.msg);
    return b;
}

vw_config *vw_unit_config(const vw_broker *b, const char *group, const char *extra_yaml) {
    char yaml[4096];
    snprintf(yaml, sizeof yaml,
             "kafka:\n"
             "  bootstrap.servers: \"%s\"\n"
             "%s%s%s"
             "  consumer:\n"
             "    session.timeout.ms: 6000\n"
             "    heartbeat.interval.ms: 1000\n"
             "    fetch.wait.max.ms: 10\n"
             "  producer:\n"
             "    linger.ms: 2\n"
             "topics: {input: requests, results: results, dlq: requests.dlq}\n"
             "model: {device: test-echo}\n"
             "metrics: {stats_interval_ms: 1000}\n"
             "%s",
             vw_broker_bootstraps(b), group ? "  group.id: " : "", group ? group : "",
             group ? "\n" : "", extra_yaml ? extra_yaml : "");
    vw_config *cfg = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_config_parse(yaml, strlen(yaml), "unit.yaml", NULL, &cfg, &err), VW_OK, "%s",
                 err.msg);
    return cfg;
}

vw_processor *vw_unit_echo(void) {
    vw_processor *p = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_echo_processor_new(&p, &err), VW_OK, "%s", err.msg);
    return p;
}

vw_item *vw_unit_item(vw_processor *p, int32_t partition, int64_t offset, uint32_t epoch,
                      const char *request_id, const char *value, const char *result) {
    size_t id_len = strlen(request_id), value_len = strlen(value);
    vw_item *it = calloc(1, sizeof *it + id_len + 1 + value_len);
    cr_assert_not_null(it);
    it->proc = p;
    it->partition = partition;
    it->offset = offset;
    it->epoch = epoch;
    it->timestamp = -1;
    it->request_id = it->data;
    memcpy(it->request_id, request_id, id_len + 1);
    it->value = it->data + id_len + 1;
    memcpy(it->value, value, value_len);
    it->value_len = value_len;
    if (result) {
        it->kind = VW_RESULT_RECORD;
        it->vela_status = 200;
        it->res_value = strdup(result);
        it->res_len = strlen(result);
    }
    return it;
}

void vw_unit_env_init(vw_unit_env *e, const char *topics, const char *group, const char *extra_yaml,
                      const char *crash, void (*free_result)(void *)) {
    memset(e, 0, sizeof *e);
    e->b = vw_unit_broker(topics);
    e->cfg = vw_unit_config(e->b, group, extra_yaml);
    e->proc = vw_unit_echo();
    e->metrics = vw_metrics_new();
    e->ledger = vw_offsets_new(free_result);
    cr_assert(e->metrics && e->ledger);
    vw_fault_init(&e->fault, e->metrics);
    vw_err err = {0};
    cr_assert_eq(vw_crashpoint_init(&e->crash, crash, &err), VW_OK, "%s", err.msg);
    e->log = (vw_log){.level = VW_LOG_WARN, .format = VW_LOG_TEXT, .out = stderr};
}

void vw_unit_env_free(vw_unit_env *e) {
    vw_offsets_free(e->ledger);
    vw_fault_destroy(&e->fault);
    vw_metrics_free(e->metrics);
    vw_processor_free(e->proc);
    vw_config_free(e->cfg);
    vw_broker_free(e->b);
}

vw_unit_fetched vw_unit_fetch(const vw_broker *b, const char *topic, int32_t partition, size_t n) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    cr_assert_eq(rd_kafka_conf_set(conf, "bootstrap.servers", vw_broker_bootstraps(b), errstr,
                                   sizeof errstr),
                 RD_KAFKA_CONF_OK);
    cr_assert_eq(rd_kafka_conf_set(conf, "group.id", "unit-fetch", errstr, sizeof errstr),
                 RD_KAFKA_CONF_OK);
    vw_unit_fetched f = {.rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr)};
    cr_assert_not_null(f.rk, "%s", errstr);
    rd_kafka_poll_set_consumer(f.rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition)->offset = 0;
    cr_assert_eq(rd_kafka_assign(f.rk, l), 0);
    rd_kafka_topic_partition_list_destroy(l);
    f.m = calloc(n ? n : 1, sizeof *f.m);
    int64_t end = vw_kh_now_ms() + 20000;
    while (f.n < n && vw_kh_now_ms() < end) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(f.rk, 100);
        if (m && !m->err)
            f.m[f.n++] = m;
        else if (m)
            rd_kafka_message_destroy(m);
    }
    cr_assert_eq(f.n, n, "fetched %zu of %zu records", f.n, n);
    return f;
}

void vw_unit_fetched_free(vw_unit_fetched *f) {
    for (size_t i = 0; i < f->n; i++)
        rd_kafka_message_destroy(f->m[i]);
    free(f->m);
    rd_kafka_consumer_close(f->rk);
    rd_kafka_destroy(f->rk);
}

bool vw_unit_until(bool (*done)(void *ctx), void (*step)(void *ctx), void *ctx, int timeout_ms) {
    int64_t end = vw_kh_now_ms() + timeout_ms;
    while (!done(ctx)) {
        if (vw_kh_now_ms() >= end)
            return false;
        step(ctx);
    }
    return true;
}
