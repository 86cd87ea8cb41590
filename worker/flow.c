/* flow.c — the way of a record between the two Kafka clients (see
 * worker_impl.h "flow.c"): admission of a consumed record into an item,
 * micro-batches to the executor thread and their results back, retries with
 * backoff, the work of a revoked partition dropped or settled. The loop that
 * drives it is worker.c's; the clients are consumer.c and producer.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit_record.h"
#include "producer.h"
#include "service/clock.h"
#include "worker_impl.h"

static void wake(struct vw_worker *w) {
    char c = 'x';
    if (write(w->wake[1], &c, 1) < 0 && errno != EAGAIN) {
        /* A full pipe already wakes the loop; nothing else can go wrong here. */
    }
}

/* ---- the batch pipeline: prepare, execute, finish ---------------------------
 *
 * A closed micro-batch becomes a flight: the Kafka thread prepares it
 * (processor prepare: host work before the device) and queues it for the
 * executor thread (to_exec), which only runs execute (the device call) and
 * hands it to the processing threads (to_finish); one of them runs finish
 * (heads, answers, envelopes), moves the results into the items, releases the
 * processor's state and queues the flight for the Kafka thread (from_exec).
 * While batch N executes, N+1 is being admitted, planned and prepared and
 * N-1, N-2 ... are being finished. A flight whose prepare or execute failed
 * skips the steps after it: its items RETRY or are dead-lettered. */
struct vw_flight {
    vw_batch *batch;    /* items in arrival order */
    vw_processor *proc; /* whose prepare made work */
    void *work;         /* the processor's state (prepare .. release) */
    vw_status st;       /* of prepare, then execute */
    vw_err err;
};

/* Every item of f gets RETRY (transient) or FATAL with f's error. */
static void fail_flight(struct vw_flight *f) {
    vw_result_kind kind = f->st == VW_ETRANSIENT ? VW_RESULT_RETRY : VW_RESULT_FATAL;
    for (size_t i = 0; i < f->batch->n; i++)
        vw_item_fail(f->batch->items[i], kind, f->err.type[0] ? f->err.type : "batch_failed",
                     f->err.msg);
}

void vw_flight_free_cb(void *flight) {
    struct vw_flight *f = flight;
    if (!f)
        return;
    if (f->work)
        f->proc->ops->release(f->proc, f->work);
    vw_batch_free(f->batch, vw_item_free_cb);
    free(f);
}

/* The Kafka thread: the processor's prepare of a closed batch. */
static struct vw_flight *prepare(struct vw_worker *w, vw_batch *b) {
    struct vw_flight *f = calloc(1, sizeof *f);
    void **items = malloc((b->n ? b->n : 1) * sizeof *items);
    if (!f || !items) {
        free(f);
        free(items);
        return NULL;
    }
    f->batch = b;
    f->proc = w->proc;
    for (size_t i = 0; i < b->n; i++)
        items[i] = ((vw_item *)b->items[i])->proc_item;
    f->st = w->proc->ops->prepare(w->proc, items, b->n, &f->work, &f->err);
    free(items);
    return f;
}

void *vw_executor_main(void *arg) {
    struct vw_worker *w = arg;
    for (struct vw_flight *f; (f = vw_queue_pop(w->to_exec));) {
        wake(w); /* room in to_exec: the Kafka thread may dispatch the next batch */
        int64_t start_ms = vw_now_ms();
        for (size_t i = 0; i < f->batch->n; i++)
            vw_metrics_observe(w->metrics, VW_H_QUEUE_DELAY,
                               (double)(start_ms - ((vw_item *)f->batch->items[i])->admitted_ms) /
                                   1e3);
        if (f->st == VW_OK) {
            double t0 = vw_now_s(), c0 = vw_thread_cpu_s();
            f->st = w->proc->ops->execute(w->proc, f->work, &f->err);
            vw_metrics_observe(w->metrics, VW_H_EXEC, vw_now_s() - t0);
            vw_metrics_stage(w->metrics, VW_S_EXECUTE, vw_thread_cpu_s() - c0);
        }
        vw_queue_push(w->to_finish, f); /* blocks while every processing thread is busy */
    }
    vw_queue_close(w->to_finish); /* the processing threads drain it, then stop */
    return NULL;
}

void *vw_finish_main(void *arg) {
    struct vw_worker *w = arg;
    for (struct vw_flight *f; (f = vw_queue_pop(w->to_finish));) {
        vw_batch *b = f->batch;
        vw_result *res = f->st == VW_OK ? calloc(b->n ? b->n : 1, sizeof *res) : NULL;
        if (f->st == VW_OK && !res)
            f->st = VW_FAIL(&f->err, VW_ETRANSIENT, "out_of_memory", "batch results");
        if (f->st == VW_OK) {
            vw_stage_times t = {0};
            w->proc->ops->finish(w->proc, f->work, res, &t);
            vw_metrics_stage(w->metrics, VW_S_HEADS, t.heads);
            vw_metrics_stage(w->metrics, VW_S_ANSWERS, t.answers);
            vw_metrics_stage(w->metrics, VW_S_ENVELOPE, t.envelope);
            vw_crashpoint_hit(&w->crash, VW_CRASH_AFTER_EXECUTOR);
            for (size_t i = 0; i < b->n; i++)
                vw_item_take(b->items[i], &res[i]);
        } else {
            fail_flight(f);
        }
        free(res);
        if (f->work)
            w->proc->ops->release(w->proc, f->work);
        f->work = NULL;
        vw_queue_push(w->from_exec, f); /* sized never to block (worker.c) */
        wake(w);
    }
    return NULL;
}

/* ---- admission ------------------------------------------------------------ */

/* The last value of header name in h (NULL h: the record has none). */
static void header(const rd_kafka_headers_t *h, const char *name, const void **v, size_t *len) {
    *v = NULL;
    *len = 0;
    if (!h || rd_kafka_header_get_last(h, name, v, len))
        *v = NULL;
}

/* The replay range of a partition, or NULL (run mode). */
const vw_range *vw_range_of(const struct vw_worker *w, int32_t partition) {
    for (size_t i = 0; i < w->n_ranges; i++)
        if (w->ranges[i].partition == partition)
            return &w->ranges[i];
    return NULL;
}

/* One allocation holds the item, its request id, key and value, and, for a
 * record the worker-level checks reject, its final result value: the checks
 * run on the consumed bytes first, writing that value into w->scratch. A
 * record they pass leaves its parsed value in *doc (admit's; NULL on
 * failure or out of memory). */
static vw_item *new_item(struct vw_worker *w, const rd_kafka_message_t *m, uint32_t epoch,
                         vw_json_doc **doc) {
    const void *hid, *reply;
    size_t hid_len, reply_len, id_len;
    char src[VW_SOURCE_MAX], idbuf[256];
    rd_kafka_headers_t *hdrs = NULL; /* parsed once, owned by m */
    if (rd_kafka_message_headers(m, &hdrs))
        hdrs = NULL;
    header(hdrs, VW_HDR_REQUEST_ID, &hid, &hid_len);
    header(hdrs, VW_HDR_REPLY_TOPIC, &reply, &reply_len);
    const char *id = vw_request_id_pick(w->topic, m->partition, m->offset, hid, hid_len, m->key,
                                        m->key_len, src, &id_len);
    char *idc = id_len < sizeof idbuf ? idbuf : malloc(id_len + 1);
    if (!idc)
        return NULL;
    memcpy(idc, id, id_len);
    idc[id_len] = 0;
    rd_kafka_timestamp_type_t tstype;
    int64_t ts = rd_kafka_message_timestamp(m, &tstype);
    size_t key_len = m->key ? m->key_len : 0, value_len = m->payload ? m->len : 0;
    vw_record rec = {w->topic, m->partition, m->offset, ts,  m->key,
                     key_len,  m->payload,   value_len, idc, NULL};
    int status = 0;
    char type[VW_REJECT_TYPE_MAX] = "";
    bool rejected = vw_admit_reject_into(&rec, w->cfg->limits.max_request_bytes, &w->scratch,
                                         &status, type, doc);
    bool oom = rejected && vw_sbuf_status(&w->scratch);
    if (oom) /* the out-of-memory mark is sticky: start the next record afresh */
        vw_sbuf_free(&w->scratch);
    size_t out_len = rejected && !oom ? w->scratch.len : 0;
    vw_item *it = malloc(sizeof *it + id_len + 1 + key_len + value_len + out_len);
    if (!it) {
        if (idc != idbuf)
            free(idc);
        vw_json_free(*doc);
        *doc = NULL;
        return NULL;
    }
    memset(it, 0, sizeof *it);
    it->proc = w->proc;
    it->partition = m->partition;
    it->offset = m->offset;
    it->epoch = epoch;
    it->timestamp = ts;
    it->admitted_ms = w->turn_ms;
    it->request_id = it->data;
    memcpy(it->request_id, idc, id_len + 1);
    if (idc != idbuf)
        free(idc);
    it->key = m->key ? it->data + id_len + 1 : NULL;
    it->key_len = key_len;
    if (key_len)
        memcpy(it->key, m->key, key_len);
    it->value = it->data + id_len + 1 + key_len;
    it->value_len = value_len;
    if (value_len)
        memcpy(it->value, m->payload, value_len);
    it->reply_topic = vw_reply_topic(w->cfg, reply, reply_len);
    if (oom) {
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "rejection record");
    } else if (rejected) {
        it->kind = VW_RESULT_RECORD;
        it->vela_status = status;
        vw_item_set_type(it, type);
        it->out_value = (char *)it->value + value_len;
        it->out_len = out_len;
        it->out_inline = true;
        memcpy(it->out_value, w->scratch.p, out_len);
    }
    return it;
}

/* The processor's admit, for a record the worker-level checks passed (doc:
 * the value they parsed, or NULL). Leaves the item either with a finished
 * result, or with a pending processor item. */
static void admit(struct vw_worker *w, vw_item *it, const vw_json_doc *doc) {
    vw_record rec = {w->topic,    it->partition, it->offset,    it->timestamp,  it->key,
                     it->key_len, it->value,     it->value_len, it->request_id, doc};
    vw_err err = {0};
    vw_admission adm = {0};
    if (w->proc->ops->admit(w->proc, &rec, &adm, &err)) {
        vw_result_clear(&adm.result);
        vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
    } else if (adm.finished) {
        vw_item_take(it, &adm.result);
    } else {
        it->proc_item = adm.item;
        it->tokens = adm.tokens < 0 ? 0 : adm.tokens;
    }
}

void vw_worker_intake(struct vw_worker *w, const rd_kafka_message_t *m) {
    uint32_t epoch;
    vw_err err = {0};
    const vw_range *r = vw_range_of(w, m->partition);
    if (!vw_offsets_is_assigned(w->tracker, w->topic, m->partition, &epoch) ||
        (r && (m->offset < r->start || m->offset >= r->end)))
        return; /* revoked meanwhile, or outside the replay range */
    if (vw_offsets_track(w->tracker, w->topic, m->partition, m->offset, &err)) {
        if (err.status == VW_ENOMEM) { /* skipping it would commit past it */
            VW_LOG(w->log, VW_LOG_ERROR, "worker", "out of memory tracking tp=%s:%d:%lld, stopping",
                   w->topic, (int)m->partition, (long long)m->offset);
            vw_worker_set_fatal(w);
            return;
        }
        VW_LOG(w->log, VW_LOG_WARN, "worker", "record skipped tp=%s:%d:%lld reason=\"%s\"",
               w->topic, (int)m->partition, (long long)m->offset, err.msg);
        return;
    }
    vw_metrics_inc(w->metrics, VW_M_RECORDS_IN, 1);
    vw_json_doc *doc = NULL;
    /* Per record: the monotonic clock (vDSO, ~25 ns), not the thread CPU
     * clock (a system call, ~550 ns here: three per record doubled the
     * rejection path's cost); turn() shares the intake's CPU time out by
     * these wall times. */
    double c0 = vw_now_s();
    vw_item *it = new_item(w, m, epoch, &doc);
    double c1 = vw_now_s();
    w->admission_s += c1 - c0;
    if (!it) {
        /* Out of memory: the tracked offset stays PENDING, so nothing past it
         * is committed; the worker stops (exit 1) rather than hold the
         * partition still, and a restart answers the record. */
        VW_LOG(w->log, VW_LOG_ERROR, "worker", "out of memory admitting tp=%s:%d:%lld, stopping",
               w->topic, (int)m->partition, (long long)m->offset);
        vw_worker_set_fatal(w);
        return;
    }
    if (it->kind == VW_RESULT_RECORD && !it->out_value)
        admit(w, it, doc);
    vw_json_free(doc);
    w->plan_s += vw_now_s() - c1;
    if (it->proc_item) {
        if (vw_batcher_push(w->batcher, it, it->tokens, w->turn_ms, &err) == VW_OK)
            return;
        vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
    }
    if (vw_offsets_set_result(w->tracker, w->topic, it->partition, epoch, it->offset, it, NULL))
        vw_item_free(it);
}

/* ---- results, retries, dispatch -------------------------------------------- */

static int64_t backoff_ms(const vw_config *cfg, int attempts) {
    int64_t b = cfg->delivery.retry_backoff_ms;
    for (int i = 1; i < attempts && b < cfg->delivery.retry_backoff_max_ms; i++)
        b *= 2;
    return b < cfg->delivery.retry_backoff_max_ms ? b : cfg->delivery.retry_backoff_max_ms;
}

static void collect_item(struct vw_worker *w, vw_item *it) {
    uint32_t epoch;
    if (!vw_offsets_is_assigned(w->tracker, w->topic, it->partition, &epoch) ||
        epoch != it->epoch) {
        vw_item_free(it); /* its partition was revoked while it ran */
        return;
    }
    if (it->kind == VW_RESULT_RETRY) {
        /* Transient: never a rejection. Run it again after a backoff. */
        it->attempts++;
        it->due_ms = vw_now_ms() + backoff_ms(w->cfg, it->attempts);
        vw_metrics_inc(w->metrics, VW_M_RETRIES, 1);
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "transient failure, retrying request_id=\"%s\" attempt=%d backoff_ms=%lld "
               "type=%s",
               it->request_id, it->attempts, (long long)(it->due_ms - vw_now_ms()), it->type);
        free(it->msg);
        it->msg = NULL;
        it->kind = VW_RESULT_RECORD;
        it->type[0] = 0;
        if (vw_items_push(&w->retry, &w->n_retry, &w->cap_retry, it))
            return;
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "retry list");
    }
    if (it->proc_item) { /* the processor is done with it */
        w->proc->ops->item_free(w->proc, it->proc_item);
        it->proc_item = NULL;
    }
    if (vw_offsets_set_result(w->tracker, w->topic, it->partition, it->epoch, it->offset, it, NULL))
        vw_item_free(it);
}

void vw_worker_collect(struct vw_worker *w) {
    for (struct vw_flight *f; (f = vw_queue_try_pop(w->from_exec));) {
        w->n_flights--;
        for (size_t i = 0; i < f->batch->n; i++)
            collect_item(w, f->batch->items[i]);
        vw_batch_free(f->batch, NULL);
        free(f);
    }
}

void vw_worker_requeue_due(struct vw_worker *w, int64_t now) {
    size_t kept = 0;
    for (size_t i = 0; i < w->n_retry; i++) {
        vw_item *it = w->retry[i];
        if (it->due_ms > now || vw_batcher_push(w->batcher, it, it->tokens, now, NULL))
            w->retry[kept++] = it;
    }
    w->n_retry = kept;
}

bool vw_worker_can_dispatch(const struct vw_worker *w) {
    return vw_queue_len(w->to_exec) < EXEC_QUEUE && w->n_flights < w->max_flights;
}

/* Hands closed batches to the executor while it can take them. */
void vw_worker_dispatch(struct vw_worker *w, int64_t now) {
    /* Only this thread adds to to_exec: while it has room, a push succeeds, so
     * a batch is prepared only when it can be queued at once (a held batch
     * stays unprepared: a revoke may still take items out of it). */
    while (vw_worker_can_dispatch(w)) {
        if (!w->held && !vw_batcher_take(w->batcher, now, &w->held))
            return;
        double c0 = vw_thread_cpu_s();
        struct vw_flight *f = prepare(w, w->held);
        vw_metrics_stage(w->metrics, VW_S_BATCHING, vw_thread_cpu_s() - c0);
        if (!f)
            return; /* out of memory: the batch stays held, tried again next turn */
        size_t n = w->held->n;
        int64_t tokens = w->held->tokens;
        if (!vw_queue_try_push(w->to_exec, f)) { /* cannot happen: room was checked */
            if (f->work)
                w->proc->ops->release(w->proc, f->work);
            free(f);
            return;
        }
        w->held = NULL;
        w->n_flights++;
        vw_metrics_inc(w->metrics, VW_M_BATCHES, 1);
        vw_metrics_observe(w->metrics, VW_H_BATCH_SIZE, (double)n);
        vw_metrics_observe(w->metrics, VW_H_BATCH_TOKENS, (double)tokens);
    }
}

static bool same_partition(void *item, void *ctx) {
    return ((vw_item *)item)->partition == *(const int32_t *)ctx;
}

void vw_worker_drop_partition(struct vw_worker *w, int32_t partition) {
    size_t dropped = vw_batcher_remove_if(w->batcher, same_partition, &partition, vw_item_free_cb);
    size_t kept = 0;
    for (size_t i = 0; i < w->n_retry; i++) {
        if (w->retry[i]->partition == partition) {
            vw_item_free(w->retry[i]);
            dropped++;
        } else {
            w->retry[kept++] = w->retry[i];
        }
    }
    w->n_retry = kept;
    if (w->held) {
        dropped += vw_batch_remove_if(w->held, same_partition, &partition, vw_item_free_cb);
        if (!w->held->n) { /* nothing left to prepare */
            vw_batch_free(w->held, NULL);
            w->held = NULL;
        }
    }
    if (dropped)
        VW_LOG(w->log, VW_LOG_INFO, "worker", "abandoned queued work tp=%s:%d records=%zu",
               w->topic, (int)partition, dropped);
}

/* Partitions being revoked still have results on the way: in the executor,
 * or produced and not yet acknowledged. */
static bool revoked_busy(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts) {
    if (w->producer_dead)
        return false; /* nothing more will be acknowledged: queued results were purged */
    if (w->n_flights)
        return true;
    for (int i = 0; i < parts->cnt; i++)
        if (vw_offsets_unacked(w->tracker, parts->elems[i].topic, parts->elems[i].partition))
            return true;
    return false;
}

void vw_worker_settle(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts,
                      int64_t deadline_ms) {
    for (;;) {
        vw_worker_collect(w);
        vw_produce_ready(w);
        if (!revoked_busy(w, parts) || vw_now_ms() >= deadline_ms)
            break;
        vw_producer_poll(w, 10);
    }
}
