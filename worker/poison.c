/* poison.c — consume errors of a partition: record errors and runs of
 * partition errors (see poison.h). Owns its table; never calls librdkafka
 * but for its error codes. */
#include "poison.h"

#include <stdlib.h>
#include <string.h>

#include "service/clock.h"
#include "util/reserve.h"

bool vw_poison_record_error(rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR__BAD_COMPRESSION || e == RD_KAFKA_RESP_ERR__BAD_MSG ||
           e == RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED || e == RD_KAFKA_RESP_ERR__CRIT_SYS_RESOURCE ||
           e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE || e == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

static vw_poison_part *find(const vw_poison *t, int32_t p) {
    for (size_t i = 0; i < t->n; i++)
        if (t->items[i].partition == p)
            return &t->items[i];
    return NULL;
}

/* p's entry, made when missing; NULL when out of memory. */
static vw_poison_part *get(vw_poison *t, int32_t p) {
    vw_poison_part *x = find(t, p);
    if (x)
        return x;
    if (vw_reserve((void **)&t->items, &t->cap, t->n + 1, sizeof *t->items))
        return NULL;
    x = &t->items[t->n++];
    *x = (vw_poison_part){.partition = p, .sought = -1};
    return x;
}

int64_t vw_poison_next(const vw_poison *t, int32_t p, int64_t at) {
    const vw_poison_part *x = find(t, p);
    return x && x->sought > at ? x->sought : at;
}

void vw_poison_sought(vw_poison *t, int32_t p, int64_t next) {
    vw_poison_part *x = get(t, p);
    if (x)
        x->sought = next;
}

bool vw_poison_partition_error(vw_poison *t, int32_t p, rd_kafka_resp_err_t e, int64_t now_ms,
                               int64_t stall_ms, bool *stalled) {
    *stalled = false;
    vw_poison_part *x = get(t, p);
    if (!x)
        return true; /* no state: every error is logged */
    bool starts = x->err != e;
    if (starts) {
        x->err = e;
        x->run_start_ms = now_ms;
        x->run_count = 0;
    }
    x->run_count++;
    *stalled = stall_ms > 0 && now_ms - x->run_start_ms >= stall_ms &&
               x->run_count >= VW_POISON_STALL_REPEATS;
    return starts;
}

uint64_t vw_poison_record(vw_poison *t, int32_t p) {
    vw_poison_part *x = find(t, p);
    if (!x)
        return 0;
    uint64_t run = x->err ? x->run_count : 0;
    x->err = RD_KAFKA_RESP_ERR_NO_ERROR;
    x->run_count = 0;
    x->sought = -1;
    return run;
}

void vw_poison_forget(vw_poison *t, int32_t p) {
    vw_poison_part *x = find(t, p);
    if (x)
        *x = t->items[--t->n];
}

void vw_poison_free(vw_poison *t) {
    free(t->items);
    t->items = NULL;
    t->n = t->cap = 0;
}

bool vw_poison_unreadable(const rd_kafka_message_t *m, const char *topic) {
    return vw_poison_record_error(m->err) && m->rkt && m->partition >= 0 && m->offset >= 0 &&
           !strcmp(rd_kafka_topic_name(m->rkt), topic);
}

/* The offset librdkafka cannot hand over becomes a dead letter and the
 * partition is sent past it; a batch that comes back is passed one offset at
 * a time. A seek that fails (the partition is not ours any more) leaves the
 * record to the partition's next owner. */
static int32_t skip(vw_poison *t, const vw_poison_env *env, const rd_kafka_message_t *m) {
    int64_t at = vw_poison_next(t, m->partition, m->offset);
    vw_metrics_inc(env->metrics, VW_M_UNREADABLE, 1);
    VW_LOG(env->log, VW_LOG_WARN, "consumer",
           "unreadable record: dead-lettered and skipped tp=%s:%d:%lld err=%s reason=\"%s\"",
           env->topic, (int)m->partition, (long long)at, rd_kafka_err2name(m->err),
           rd_kafka_message_errstr(m));
    env->dead_letter(env->ctx, m->partition, at, m->err, rd_kafka_message_errstr(m));
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, env->topic, m->partition)->offset = at + 1;
    rd_kafka_error_t *e = rd_kafka_seek_partitions(env->rk, l, 0); /* 0: asynchronous */
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        VW_LOG(env->log, VW_LOG_WARN, "consumer", "seek past tp=%s:%d:%lld: %s", env->topic,
               (int)m->partition, (long long)at, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    vw_poison_sought(t, m->partition, at + 1);
    return m->partition;
}

int32_t vw_poison_error(vw_poison *t, const vw_poison_env *env, const rd_kafka_message_t *m) {
    if (vw_poison_unreadable(m, env->topic))
        return skip(t, env, m);
    bool stalled;
    if (vw_poison_partition_error(t, m->partition, m->err, vw_now_ms(), env->stall_ms, &stalled))
        VW_LOG(env->log, VW_LOG_WARN, "consumer", "consume error tp=%s:%d err=%s reason=\"%s\"",
               env->topic, (int)m->partition, rd_kafka_err2name(m->err),
               rd_kafka_message_errstr(m));
    if (!stalled || vw_fault_raised(env->fault))
        return -1;
    VW_LOG(env->log, VW_LOG_ERROR, "consumer",
           "partition stalled by a repeated consume error, stopping tp=%s:%d err=%s "
           "start_timeout_ms=%lld reason=\"%s\"",
           env->topic, (int)m->partition, rd_kafka_err2name(m->err), (long long)env->stall_ms,
           rd_kafka_message_errstr(m));
    VW_RAISE(env->fault, VW_EKAFKA, "partition_stalled",
             "tp=%s:%d: %s for delivery.start_timeout_ms (%lld ms) with no record: %s", env->topic,
             (int)m->partition, rd_kafka_err2name(m->err), (long long)env->stall_ms,
             rd_kafka_message_errstr(m));
    return -1;
}
