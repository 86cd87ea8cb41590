/* lane.c — the admission lane (see lane.h): two queues and the admission
 * threads between them, and the push order that hands a partition's items
 * back in order. Owns the threads and what is in the lane; never batches or
 * files a result (the flow does). */
#include "lane.h"

#include <pthread.h>
#include <stdlib.h>

#include "record_in.h"
#include "queue.h"
#include "service/clock.h"
#include "wake.h"
#include "util/thread_name.h"

/* An item in the lane, in push order: back from admission or not. */
typedef struct lane_slot {
    vw_item *it; /* NULL: handed back (a hole until the next compaction) */
    bool back;
} lane_slot;

struct vw_lane {
    vw_lane_opts o;
    vw_queue *to_admit, *from_admit; /* Kafka thread -> admission threads -> back */
    pthread_t *threads;              /* o.threads of them */
    size_t started;
    size_t busy; /* items in the lane (the Kafka thread's count) */
    /* The Kafka thread's: every item in the lane, in push order, in
     * order[head..n) (o.cap slots); blocked is vw_lane_pop's scratch. */
    lane_slot *order;
    size_t head, n;
    int32_t *blocked;
};

/* The processor's admit, for a record the worker-level checks passed (doc:
 * the value they parsed, or NULL). Leaves the item either with a finished
 * result, or with a pending processor item. [thread: admission] */
static void admit(vw_lane *l, vw_item *it, const vw_json_doc *doc) {
    vw_record rec = {l->o.topic,  it->partition, it->offset,    it->timestamp,  it->key,
                     it->key_len, it->value,     it->value_len, it->request_id, doc};
    vw_err err = {0};
    vw_admission adm = {0};
    if (l->o.proc->ops->admit(l->o.proc, &rec, &adm, &err)) {
        vw_result_clear(&adm.result);
        vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
    } else if (adm.finished) {
        vw_item_take(it, &adm.result);
    } else {
        vw_item_set_pending(it, adm.item, adm.tokens);
    }
}

/* The checks' rejection (its full value, in sb), or the processor's admit. [thread: admission] */
static void admit_item(vw_lane *l, vw_item *it, vw_sbuf *sb) {
    vw_record rec = {l->o.topic,  it->partition, it->offset,    it->timestamp,  it->key,
                     it->key_len, it->value,     it->value_len, it->request_id, NULL};
    int status = 0;
    const char *type = "";
    vw_json_doc *doc = NULL;
    double t0 = vw_now_s(), c0 = vw_thread_cpu_s();
    bool rejected =
        vw_record_in_reject(&rec, l->o.cfg->limits.max_request_bytes, sb, &status, &type, &doc);
    double c1 = vw_thread_cpu_s();
    if (rejected && vw_sbuf_status(sb)) {
        vw_sbuf_free(sb); /* the out-of-memory mark is sticky: start afresh */
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "rejection record");
    } else if (rejected) {
        size_t len = 0;
        char *value = vw_sbuf_take(sb, &len);
        vw_item_set_record(it, status, type, value, len);
    } else {
        admit(l, it, doc);
    }
    vw_json_free(doc);
    double c2 = vw_thread_cpu_s(), ms = (vw_now_s() - t0) * 1e3;
    vw_metrics_stage(l->o.metrics, VW_S_ADMISSION, c1 - c0);
    vw_metrics_stage(l->o.metrics, VW_S_PLAN, c2 - c1);
    if (l->o.cfg->limits.slow_record_ms > 0 && ms > (double)l->o.cfg->limits.slow_record_ms) {
        vw_metrics_inc(l->o.metrics, VW_M_SLOW_RECORDS, 1);
        VW_LOG(l->o.log, VW_LOG_WARN, "worker",
               "slow record tp=%s:%d:%lld request_id=\"%s\" bytes=%zu elapsed_ms=%.0f "
               "check_cpu_ms=%.0f plan_cpu_ms=%.0f tokens=%lld status=%d",
               l->o.topic, (int)it->partition, (long long)it->offset, it->request_id, it->value_len,
               ms, (c1 - c0) * 1e3, (c2 - c1) * 1e3, (long long)it->tokens,
               it->proc_item ? 200 : it->vela_status);
    }
}

/* An admission thread [thread: admission]. */
static void *admit_main(void *arg) {
    vw_lane *l = arg;
    vw_sbuf sb = {0};
    for (vw_item *it; (it = vw_queue_pop(l->to_admit));) {
        admit_item(l, it, &sb);
        vw_queue_push(l->from_admit, it); /* sized never to block (vw_lane_room) */
        vw_wake(l->o.wake_fd);
    }
    vw_sbuf_free(&sb);
    return NULL;
}

vw_status vw_lane_new(const vw_lane_opts *o, vw_lane **out, vw_err *err) {
    *out = NULL;
    vw_lane *l = calloc(1, sizeof *l);
    if (l) {
        l->o = *o;
        l->threads = calloc(o->threads ? o->threads : 1, sizeof *l->threads);
        /* Intake stops at limits.max_in_flight tracked records (replay: at
         * this many in the lane), so both queues have room for all. */
        l->to_admit = vw_queue_new(o->cap);
        l->from_admit = vw_queue_new(o->cap);
        l->order = calloc(o->cap ? o->cap : 1, sizeof *l->order);
        l->blocked = calloc(o->cap ? o->cap : 1, sizeof *l->blocked);
    }
    if (!l || !l->threads || !l->to_admit || !l->from_admit || !l->order || !l->blocked) {
        vw_lane_free(l);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "admission lane");
    }
    *out = l;
    return VW_OK;
}

vw_status vw_lane_start(vw_lane *l, vw_err *err) {
    for (; l->started < l->o.threads; l->started++) {
        if (pthread_create(&l->threads[l->started], NULL, admit_main, l))
            return VW_FAIL(err, VW_EIO, "thread", "cannot start admission thread %zu", l->started);
        vw_thread_name(l->threads[l->started], "vw-admit", (long)l->started);
    }
    return VW_OK;
}

bool vw_lane_push(vw_lane *l, vw_item *it) {
    /* At most cap items in the lane, so an admission thread never blocks on
     * from_admit (which stop() does not close). */
    if (l->busy >= l->o.cap)
        return false;
    if (l->n == l->o.cap) { /* drop the holes: busy < cap items remain */
        size_t kept = 0;
        for (size_t i = l->head; i < l->n; i++)
            if (l->order[i].it)
                l->order[kept++] = l->order[i];
        l->head = 0;
        l->n = kept;
    }
    if (!vw_queue_try_push(l->to_admit, it))
        return false;
    l->order[l->n++] = (lane_slot){it, false};
    l->busy++;
    return true;
}

/* Marks what the admission threads queued back. */
static void take_back(vw_lane *l) {
    for (vw_item *it; (it = vw_queue_try_pop(l->from_admit));)
        for (size_t i = l->head; i < l->n; i++)
            if (l->order[i].it == it) {
                l->order[i].back = true;
                break;
            }
}

static bool has(const int32_t *set, size_t n, int32_t v) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

/* The first item back whose partition has no earlier item still being
 * admitted: a partition's items leave in the order they came, other
 * partitions' pass an item still being admitted. */
vw_item *vw_lane_pop(vw_lane *l) {
    take_back(l);
    size_t n_blocked = 0;
    for (size_t i = l->head; i < l->n; i++) {
        lane_slot *s = &l->order[i];
        if (!s->it || (n_blocked && has(l->blocked, n_blocked, s->it->partition)))
            continue;
        if (!s->back) {
            l->blocked[n_blocked++] = s->it->partition;
            continue;
        }
        vw_item *it = s->it;
        s->it = NULL;
        while (l->head < l->n && !l->order[l->head].it)
            l->head++;
        l->busy--;
        return it;
    }
    return NULL;
}

size_t vw_lane_room(const vw_lane *l) {
    return l->busy < l->o.cap ? l->o.cap - l->busy : 0;
}

size_t vw_lane_busy(const vw_lane *l) {
    return l->busy;
}

/* Frees every item in the lane (each has its slot in order[]). */
static void free_all(vw_lane *l) {
    for (size_t i = l->head; i < l->n; i++)
        vw_item_free(l->order[i].it);
    l->head = l->n = 0;
    l->busy = 0;
}

void vw_lane_stop(vw_lane *l) {
    while (vw_queue_try_pop(l->to_admit)) {
        /* not admitted yet: freed below, by its slot */
    }
    vw_queue_close(l->to_admit);
    for (; l->started > 0; l->started--)
        pthread_join(l->threads[l->started - 1], NULL);
    while (vw_queue_try_pop(l->from_admit)) {
    }
    free_all(l);
}

void vw_lane_free(vw_lane *l) {
    if (!l)
        return;
    if (l->started)
        vw_lane_stop(l);
    if (l->order)
        free_all(l);
    vw_queue_free(l->to_admit, NULL); /* their items have their slots */
    vw_queue_free(l->from_admit, NULL);
    free(l->order);
    free(l->blocked);
    free(l->threads);
    free(l);
}
