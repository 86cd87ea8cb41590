/* rel_load.c — see rel_load.h. Test-only. */
#include "rel_load.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka_harness.h"
#include "rel_check.h"

int64_t vw_rel_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    vw_rel_load *l = opaque;
    if (m->err) {
        fprintf(stderr, "rel_load: delivery failed: %s\n", rd_kafka_err2str(m->err));
        atomic_fetch_add(&l->failed, 1);
    }
}

static void *run(void *arg) {
    vw_rel_load *l = arg;
    rd_kafka_t *rk = l->rk;
    int64_t t0 = vw_kh_now_ms();
    while (!atomic_load(&l->stop)) {
        size_t due = (size_t)((vw_kh_now_ms() - t0) * l->per_s / 1000);
        for (size_t i = atomic_load(&l->sent); i < due; i = atomic_fetch_add(&l->sent, 1) + 1) {
            char key[48];
            snprintf(key, sizeof key, "%s%05zu", l->prefix, i);
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC("requests"),
                RD_KAFKA_V_PARTITION((int32_t)(i % (size_t)l->n_parts)),
                RD_KAFKA_V_KEY(key, strlen(key)),
                RD_KAFKA_V_VALUE((void *)VW_REL_ECHO_VALUE, strlen(VW_REL_ECHO_VALUE)),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e) {
                fprintf(stderr, "rel_load: produce: %s\n", rd_kafka_err2str(e));
                atomic_fetch_add(&l->failed, 1);
            }
        }
        rd_kafka_poll(rk, 10);
    }
    return NULL;
}

int vw_rel_load_start(const char *bootstrap, const char *prefix, int n_parts, int per_s,
                      vw_rel_load *l) {
    char err[256];
    memset(l, 0, sizeof *l);
    snprintf(l->prefix, sizeof l->prefix, "%s", prefix);
    l->n_parts = n_parts;
    l->per_s = per_s;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(c, "enable.idempotence", "true", err, sizeof err) ||
        rd_kafka_conf_set(c, "linger.ms", "5", err, sizeof err) ||
        rd_kafka_conf_set(c, "log_level", "2", err, sizeof err)) {
        fprintf(stderr, "rel_load: %s\n", err);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    rd_kafka_conf_set_dr_msg_cb(c, on_dr);
    rd_kafka_conf_set_opaque(c, l);
    if (!(l->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err))) {
        fprintf(stderr, "rel_load: %s\n", err);
        rd_kafka_conf_destroy(c);
        return -1;
    }
    if (pthread_create(&l->thread, NULL, run, l)) {
        rd_kafka_destroy(l->rk);
        return -1;
    }
    return 0;
}

long vw_rel_load_stop(vw_rel_load *l) {
    atomic_store(&l->stop, true);
    pthread_join(l->thread, NULL);
    rd_kafka_flush(l->rk, 60000);
    int left = rd_kafka_outq_len(l->rk);
    rd_kafka_destroy(l->rk);
    size_t sent = atomic_load(&l->sent), failed = atomic_load(&l->failed);
    if (left || failed)
        fprintf(stderr, "rel_load: %zu failed, %d undelivered of %zu\n", failed, left, sent);
    return left || failed ? -1 : (long)sent;
}

typedef struct stamp {
    int part;
    int64_t ts;
} stamp;

static int by_part_ts(const void *a, const void *b) {
    const stamp *x = a, *y = b;
    if (x->part != y->part)
        return x->part - y->part;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

bool vw_rel_stamped_in(const json_t *rec, const char *prefix, int64_t from_ms, int64_t to_ms,
                       int64_t *ts) {
    const char *id = vw_kh_header(rec, "request-id");
    *ts = json_integer_value(json_object_get(rec, "ts"));
    return id && !strncmp(id, prefix, strlen(prefix)) && *ts >= from_ms && *ts <= to_ms;
}

int64_t vw_rel_max_gap_ms(const json_t *results, const char *prefix, int n_parts, int64_t from_ms,
                          int64_t to_ms) {
    size_t n = json_array_size(results), k = 0, i;
    stamp *s = calloc(n + 1, sizeof *s);
    json_t *rec;
    json_array_foreach(results, i, rec) {
        const char *src = vw_kh_header(rec, "source");
        const char *colon = src ? strchr(src, ':') : NULL;
        int64_t ts;
        if (!colon || !vw_rel_stamped_in(rec, prefix, from_ms, to_ms, &ts))
            continue;
        s[k++] = (stamp){atoi(colon + 1), ts};
    }
    qsort(s, k, sizeof *s, by_part_ts);
    int64_t worst = 0;
    for (int p = 0; p < n_parts; p++) {
        int64_t prev = from_ms;
        for (size_t j = 0; j < k; j++)
            if (s[j].part == p) {
                worst = s[j].ts - prev > worst ? s[j].ts - prev : worst;
                prev = s[j].ts;
            }
        worst = to_ms - prev > worst ? to_ms - prev : worst;
    }
    free(s);
    return worst;
}
