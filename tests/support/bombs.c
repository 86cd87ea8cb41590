/* bombs.c — compressed records for the poison tests (see bombs.h). */
#include "bombs.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dr_state {
    int64_t *offsets;
    int failed;
} dr_state;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    dr_state *st = opaque;
    if (m->err) {
        fprintf(stderr, "bombs: delivery failed: %s\n", rd_kafka_err2str(m->err));
        st->failed++;
    } else if (st->offsets) {
        st->offsets[(size_t)(uintptr_t)m->_private] = m->offset;
    }
}

static int set(rd_kafka_conf_t *conf, const char *k, const char *v) {
    char errstr[256];
    if (rd_kafka_conf_set(conf, k, v, errstr, sizeof errstr) == RD_KAFKA_CONF_OK)
        return 0;
    fprintf(stderr, "bombs: %s=%s: %s\n", k, v, errstr);
    return -1;
}

int vw_bomb_produce(const char *bootstrap, const char *topic, int32_t partition, const char *codec,
                    char fill, size_t value_len, size_t n, int64_t *offsets) {
    char errstr[512], num[32];
    dr_state st = {offsets, 0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    snprintf(num, sizeof num, "%zu", n);
    if (set(conf, "bootstrap.servers", bootstrap) || set(conf, "compression.type", codec) ||
        set(conf, "message.max.bytes", "1000000000") || set(conf, "batch.size", "2147483647") ||
        set(conf, "batch.num.messages", num) || set(conf, "linger.ms", "200") ||
        set(conf, "queue.buffering.max.kbytes", "2147483647") ||
        set(conf, "message.timeout.ms", "60000")) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "bombs: producer: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    char *value = malloc(value_len ? value_len : 1);
    if (!value) {
        rd_kafka_destroy(rk);
        return -1;
    }
    memset(value, fill, value_len);
    for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "bomb-%zu", i);
        rd_kafka_resp_err_t e =
            rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                              RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(value, value_len),
                              RD_KAFKA_V_OPAQUE((void *)(uintptr_t)i), RD_KAFKA_V_END);
        if (e) {
            fprintf(stderr, "bombs: produce: %s\n", rd_kafka_err2str(e));
            st.failed++;
        }
    }
    rd_kafka_flush(rk, 60000);
    int left = rd_kafka_outq_len(rk);
    rd_kafka_destroy(rk);
    free(value);
    return st.failed || left ? -1 : 0;
}

int vw_big_produce(const char *bootstrap, const char *topic, const vw_big_msg *msgs, size_t n) {
    char errstr[512];
    dr_state st = {NULL, 0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (set(conf, "bootstrap.servers", bootstrap) || set(conf, "message.max.bytes", "1000000000") ||
        set(conf, "linger.ms", "0")) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "bombs: producer: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const vw_big_msg *m = &msgs[i];
        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
        if (m->hdr_name)
            rd_kafka_header_add(h, m->hdr_name, -1, m->hdr_value,
                                m->hdr_len ? (ssize_t)m->hdr_len : -1);
        size_t kl = m->key_len || !m->key ? m->key_len : strlen(m->key);
        size_t vl = m->len || !m->value ? m->len : strlen(m->value);
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(m->partition),
            RD_KAFKA_V_KEY(m->key, kl), RD_KAFKA_V_VALUE((void *)m->value, vl),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (e) {
            rd_kafka_headers_destroy(h);
            fprintf(stderr, "bombs: produce: %s\n", rd_kafka_err2str(e));
            st.failed++;
        }
        rd_kafka_flush(rk, 30000); /* one at a time: offsets in order */
    }
    int left = rd_kafka_outq_len(rk);
    rd_kafka_destroy(rk);
    return st.failed || left ? -1 : 0;
}
