/* rel_commits.c — see rel_commits.h. Test-only. */
#include "rel_commits.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_harness.h"
#include "rel_load.h"

/* One read of the committed offsets through the watch's own client: 0 and
 * *sum, or -1 (no answer within the period). */
static int read_sum(vw_rel_commits *c, int64_t *sum) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(c->n_parts);
    for (int i = 0; i < c->n_parts; i++)
        rd_kafka_topic_partition_list_add(l, c->topic, i);
    rd_kafka_resp_err_t e = rd_kafka_committed(c->rk, l, c->period_ms * 4);
    *sum = 0;
    for (int i = 0; i < l->cnt && !e; i++)
        *sum += l->elems[i].err || l->elems[i].offset < 0 ? 0 : l->elems[i].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return e ? -1 : 0;
}

static void *watch(void *arg) {
    vw_rel_commits *c = arg;
    while (!atomic_load(&c->stop)) {
        int64_t t0 = vw_kh_now_ms(), sum;
        if (!read_sum(c, &sum)) {
            if (c->n == c->cap) {
                size_t cap = c->cap ? 2 * c->cap : 256;
                vw_rel_commit_sample *s = realloc(c->s, cap * sizeof *s);
                if (!s)
                    break;
                c->s = s;
                c->cap = cap;
            }
            c->s[c->n++] = (vw_rel_commit_sample){vw_rel_wall_ms(), sum};
        }
        int64_t left = c->period_ms - (vw_kh_now_ms() - t0);
        if (left > 0)
            vw_kh_sleep_ms((int)left);
    }
    return NULL;
}

int vw_rel_commits_start(const char *bootstrap, const char *group, const char *topic,
                         int n_parts, int period_ms, vw_rel_commits *c) {
    char err[256];
    memset(c, 0, sizeof *c);
    snprintf(c->topic, sizeof c->topic, "%s", topic);
    c->n_parts = n_parts;
    c->period_ms = period_ms;
    /* A consumer of the group that never subscribes: it only asks the
     * coordinator for the group's offsets, and is no member. */
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof err) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) ||
        rd_kafka_conf_set(conf, "log_level", "2", err, sizeof err)) {
        fprintf(stderr, "rel_commits: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    if (!(c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err))) {
        fprintf(stderr, "rel_commits: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    if (pthread_create(&c->thread, NULL, watch, c)) {
        fprintf(stderr, "rel_commits: no thread\n");
        rd_kafka_destroy(c->rk);
        return -1;
    }
    return 0;
}

void vw_rel_commits_stop(vw_rel_commits *c) {
    atomic_store(&c->stop, true);
    pthread_join(c->thread, NULL);
    rd_kafka_destroy(c->rk);
    c->rk = NULL;
}

void vw_rel_commits_free(vw_rel_commits *c) {
    free(c->s);
    c->s = NULL;
    c->n = c->cap = 0;
}

/* Results of ids with prefix stamped in [from_ms, to_ms]. */
static size_t stamped_in(const json_t *results, const char *prefix, int64_t from_ms,
                         int64_t to_ms) {
    size_t i, n = 0;
    json_t *rec;
    json_array_foreach(results, i, rec) {
        const char *id = vw_kh_header(rec, "request-id");
        int64_t ts = json_integer_value(json_object_get(rec, "ts"));
        if (id && !strncmp(id, prefix, strlen(prefix)) && ts >= from_ms && ts <= to_ms)
            n++;
    }
    return n;
}

size_t vw_rel_answered_in_stalls(const vw_rel_commits *c, const json_t *results,
                                 const char *prefix, int64_t min_stall_ms, int64_t *stalled_ms) {
    size_t answered = 0;
    int64_t total = 0;
    /* adv: the read that last saw the sum advance; before: the read before it */
    size_t adv = 0, before = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (c->s[i].sum == c->s[adv].sum)
            continue;
        if (c->s[i].wall_ms - c->s[adv].wall_ms >= min_stall_ms) {
            answered += stamped_in(results, prefix, c->s[before].wall_ms, c->s[i].wall_ms);
            total += c->s[i].wall_ms - c->s[before].wall_ms;
        }
        before = i - 1;
        adv = i;
    }
    if (stalled_ms)
        *stalled_ms = total;
    return answered;
}
