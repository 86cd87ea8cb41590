/* eos_check.c — see eos_check.h. Test-only: a librdkafka consumer without a
 * group reads each results partition whole. */
#include "eos_check.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_harness.h"

enum { MAX_PARTS = 16 };

struct vw_eos_feeder {
    rd_kafka_t *rk;
    int failed; /* deliveries that failed */
};

static void on_feed_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    vw_eos_feeder *f = opaque;
    if (m->err) {
        fprintf(stderr, "eos_check: request delivery failed: %s\n", rd_kafka_err2str(m->err));
        f->failed++;
    }
}

vw_eos_feeder *vw_eos_feeder_new(const char *bootstrap) {
    char errstr[512];
    vw_eos_feeder *f = calloc(1, sizeof *f);
    rd_kafka_conf_t *conf = f ? rd_kafka_conf_new() : NULL;
    const char *props[][2] = {{"bootstrap.servers", bootstrap},
                              {"enable.idempotence", "true"},
                              {"acks", "all"},
                              {"linger.ms", "5"},
                              {"message.timeout.ms", "60000"},
                              {"log_level", "3"}};
    for (size_t i = 0; conf && i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof errstr)) {
            fprintf(stderr, "eos_check: %s\n", errstr);
            rd_kafka_conf_destroy(conf);
            conf = NULL;
        }
    if (conf) {
        rd_kafka_conf_set_dr_msg_cb(conf, on_feed_dr);
        rd_kafka_conf_set_opaque(conf, f);
        f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        if (!f->rk) {
            fprintf(stderr, "eos_check: %s\n", errstr);
            rd_kafka_conf_destroy(conf);
        }
    }
    if (f && !f->rk) {
        free(f);
        f = NULL;
    }
    return f;
}

int vw_eos_feed(vw_eos_feeder *f, const char *topic, size_t first, size_t n, int n_parts,
                const char *prefix, const char *value) {
    int failed = f->failed;
    for (size_t i = first; i < first + n; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s%05zu", prefix, i);
        rd_kafka_resp_err_t e;
        while ((e = rd_kafka_producev(f->rk, RD_KAFKA_V_TOPIC(topic),
                                      RD_KAFKA_V_PARTITION((int32_t)(i % (size_t)n_parts)),
                                      RD_KAFKA_V_KEY(key, strlen(key)),
                                      RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(f->rk, 10);
        if (e) {
            fprintf(stderr, "eos_check: produce: %s\n", rd_kafka_err2str(e));
            f->failed++;
        }
    }
    rd_kafka_flush(f->rk, 60000);
    return f->failed == failed && rd_kafka_outq_len(f->rk) == 0 ? 0 : -1;
}

void vw_eos_feeder_free(vw_eos_feeder *f) {
    if (!f)
        return;
    rd_kafka_flush(f->rk, 10000);
    rd_kafka_destroy(f->rk);
    free(f);
}

/* Index of a "<prefix>NNNNN" id below n, or -1. */
static long id_index(const void *v, size_t len, const char *prefix, size_t n) {
    char id[64];
    size_t pl = strlen(prefix);
    if (!v || len >= sizeof id || len <= pl)
        return -1;
    memcpy(id, v, len);
    id[len] = '\0';
    if (strncmp(id, prefix, pl))
        return -1;
    char *end = NULL;
    long i = strtol(id + pl, &end, 10);
    return end != id + pl && !*end && i >= 0 && (size_t)i < n ? i : -1;
}

static rd_kafka_t *reader(const char *bootstrap, const char *isolation) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *props[][2] = {{"bootstrap.servers", bootstrap},
                              {"group.id", "vw-eos-check"}, /* assign() needs one; never joined */
                              {"isolation.level", isolation},
                              {"enable.partition.eof", "true"},
                              {"enable.auto.commit", "false"},
                              {"fetch.wait.max.ms", "10"},
                              {"log_level", "3"}};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], errstr, sizeof errstr)) {
            fprintf(stderr, "eos_check: %s\n", errstr);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "eos_check: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

/* One pass over the topic from its beginning to its end: every record of
 * the n ids counted into seen[], first-result order checked. */
static int one_pass(const char *bootstrap, const char *topic, int n_parts, const char *prefix,
                    size_t n, const char *isolation, unsigned *seen, vw_eos_report *r) {
    rd_kafka_t *rk = reader(bootstrap, isolation);
    if (!rk)
        return -1;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n_parts);
    for (int p = 0; p < n_parts; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    int64_t last[MAX_PARTS][MAX_PARTS];
    memset(last, 0xff, sizeof last);
    memset(seen, 0, n * sizeof *seen);
    *r = (vw_eos_report){.isolation = isolation, .requests = n};
    bool eof[MAX_PARTS] = {0};
    int n_eof = 0, rc = e ? -1 : 0;
    int64_t deadline = vw_kh_now_ms() + 60000;
    while (!rc && n_eof < n_parts && vw_kh_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < n_parts && !eof[m->partition]) {
                eof[m->partition] = true;
                n_eof++;
            }
        } else if (m->err) {
            fprintf(stderr, "eos_check: %s: %s\n", topic, rd_kafka_message_errstr(m));
        } else {
            if (m->partition >= 0 && m->partition < n_parts && eof[m->partition]) {
                eof[m->partition] = false; /* more came after its end */
                n_eof--;
            }
            rd_kafka_headers_t *h = NULL;
            const void *v = NULL, *st = NULL, *src = NULL;
            size_t vl = 0, stl = 0, srcl = 0;
            if (!rd_kafka_message_headers(m, &h)) {
                rd_kafka_header_get_last(h, "request-id", &v, &vl);
                rd_kafka_header_get_last(h, "vela-status", &st, &stl);
                rd_kafka_header_get_last(h, "source", &src, &srcl);
            }
            long i = id_index(v, vl, prefix, n);
            if (i >= 0) {
                r->results++;
                if (!st || stl != 3 || memcmp(st, "200", 3))
                    r->not_200++;
                if (!seen[i]++) {
                    char s[128] = "";
                    int ip = -1;
                    long long off = -1;
                    if (src && srcl < sizeof s) {
                        memcpy(s, src, srcl);
                        s[srcl] = '\0';
                        const char *colon = strchr(s, ':');
                        if (colon)
                            sscanf(colon + 1, "%d:%lld", &ip, &off);
                    }
                    if (ip >= 0 && ip < MAX_PARTS && m->partition < MAX_PARTS) {
                        if (off < last[m->partition][ip])
                            r->order_errors++;
                        last[m->partition][ip] = off;
                    }
                }
            }
        }
        rd_kafka_message_destroy(m);
    }
    if (n_eof < n_parts) {
        fprintf(stderr, "eos_check: %s: the end of %d of %d partitions not reached\n", topic,
                n_parts - n_eof, n_parts);
        rc = -1;
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    for (size_t i = 0; i < n; i++)
        r->distinct += seen[i] > 0;
    r->lost = n - r->distinct;
    r->duplicates = r->results - r->distinct;
    return rc;
}

int vw_eos_count(const char *bootstrap, const char *topic, int n_parts, const char *prefix,
                 size_t n, const char *isolation, int timeout_ms, vw_eos_report *r) {
    if (n_parts > MAX_PARTS)
        return -1;
    unsigned *seen = calloc(n ? n : 1, sizeof *seen);
    int64_t t0 = vw_kh_now_ms();
    int rc = -1;
    while (seen) {
        rc = one_pass(bootstrap, topic, n_parts, prefix, n, isolation, seen, r);
        if ((!rc && r->lost == 0) || vw_kh_now_ms() - t0 >= timeout_ms)
            break;
        vw_kh_sleep_ms(500);
    }
    if (r)
        r->waited_ms = vw_kh_now_ms() - t0;
    free(seen);
    return rc;
}

void vw_eos_print(const char *name, const vw_eos_report *r) {
    char line[512];
    snprintf(line, sizeof line,
             "%s: isolation=%s requests=%zu results=%zu distinct=%zu lost=%zu duplicates=%zu "
             "order_errors=%zu not_200=%zu waited_ms=%lld\n",
             name, r->isolation, r->requests, r->results, r->distinct, r->lost, r->duplicates,
             r->order_errors, r->not_200, (long long)r->waited_ms);
    fputs(line, stderr);
    const char *path = getenv("VW_REL_FIGURES");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

int vw_eos_txn_partition(const char *transactional_id, int n) {
    int32_t h = 0; /* Java's String.hashCode over the (ASCII) code units */
    for (const unsigned char *c = (const unsigned char *)transactional_id; *c; c++)
        h = (int32_t)(31u * (uint32_t)h + *c);
    return (int)((uint32_t)h & 0x7fffffff) % n; /* Kafka's Utils.abs is h & 0x7fffffff */
}
