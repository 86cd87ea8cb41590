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

void vw_flow_flight_free_cb(void *flight) {
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

void *vw_flow_exec_main(void *arg) {
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

void *vw_flow_finish_main(void *arg) {
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

/* One allocation holds the item, its request id, key and value: all the
 * Kafka thread does with a consumed record (the checks and the plan run on an
 * admission thread, see "Admission" below). NULL when out of memory. */
static vw_item *new_item(struct vw_worker *w, const rd_kafka_message_t *m, uint32_t epoch) {
    const void *hid, *reply;
    size_t hid_len, reply_len, id_len;
    char src[VW_SOURCE_MAX];
    rd_kafka_headers_t *hdrs = NULL; /* parsed once, owned by m */
    if (rd_kafka_message_headers(m, &hdrs))
        hdrs = NULL;
    header(hdrs, VW_HDR_REQUEST_ID, &hid, &hid_len);
    header(hdrs, VW_HDR_REPLY_TOPIC, &reply, &reply_len);
    const char *id = vw_request_id_pick(w->topic, m->partition, m->offset, hid, hid_len, m->key,
                                        m->key_len, src, &id_len);
    size_t key_len = m->key ? m->key_len : 0, value_len = m->payload ? m->len : 0;
    vw_item *it = malloc(sizeof *it + id_len + 1 + key_len + value_len);
    if (!it)
        return NULL;
    memset(it, 0, sizeof *it);
    rd_kafka_timestamp_type_t tstype;
    it->proc = w->proc;
    it->partition = m->partition;
    it->offset = m->offset;
    it->epoch = epoch;
    it->timestamp = rd_kafka_message_timestamp(m, &tstype);
    it->admitted_ms = w->turn_ms;
    it->request_id = it->data;
    memcpy(it->request_id, id, id_len); /* id may point into m: copied before m goes */
    it->request_id[id_len] = 0;
    it->key = m->key ? it->data + id_len + 1 : NULL;
    it->key_len = key_len;
    if (key_len)
        memcpy(it->key, m->key, key_len);
    it->value = it->data + id_len + 1 + key_len;
    it->value_len = value_len;
    if (value_len)
        memcpy(it->value, m->payload, value_len);
    it->reply_topic = vw_reply_topic(w->cfg, reply, reply_len);
    return it;
}

void vw_flow_intake(struct vw_worker *w, const rd_kafka_message_t *m) {
    uint32_t epoch;
    vw_err err = {0};
    if (!vw_offsets_is_assigned(w->tracker, w->topic, m->partition, &epoch))
        return; /* revoked meanwhile */
    if (vw_offsets_track(w->tracker, w->topic, m->partition, m->offset, &err)) {
        if (err.status == VW_ENOMEM) { /* skipping it would commit past it */
            VW_LOG(w->log, VW_LOG_ERROR, "worker", "out of memory tracking tp=%s:%d:%lld, stopping",
                   w->topic, (int)m->partition, (long long)m->offset);
            VW_RAISE(&w->fault, VW_ENOMEM, "out_of_memory", "tracking tp=%s:%d:%lld", w->topic,
                     (int)m->partition, (long long)m->offset);
            return;
        }
        VW_LOG(w->log, VW_LOG_WARN, "worker", "record skipped tp=%s:%d:%lld reason=\"%s\"",
               w->topic, (int)m->partition, (long long)m->offset, err.msg);
        return;
    }
    vw_metrics_inc(w->metrics, VW_M_RECORDS_IN, 1);
    vw_item *it = new_item(w, m, epoch);
    /* The lane has room: intake takes at most vw_flow_admit_room records. */
    if (it && vw_queue_try_push(w->to_admit, it)) {
        w->n_admitting++;
        return;
    }
    /* Out of memory: the tracked offset stays PENDING, so nothing past it is
     * committed; the worker stops (exit 1) rather than hold the partition
     * still, and a restart answers the record. */
    vw_item_free(it);
    VW_LOG(w->log, VW_LOG_ERROR, "worker", "out of memory admitting tp=%s:%d:%lld, stopping",
           w->topic, (int)m->partition, (long long)m->offset);
    VW_RAISE(&w->fault, VW_ENOMEM, "out_of_memory", "admitting tp=%s:%d:%lld", w->topic,
             (int)m->partition, (long long)m->offset);
}

/* ---- admission: the record checks and the plan, off the Kafka thread --------
 *
 * An admission thread takes an item from to_admit, runs the worker-level
 * record checks (size, UTF-8, JSON, object: admit_record.h) and the
 * processor's admit (the plan: up to a second for a 1 MiB request), and
 * queues the item back on from_admit, where the Kafka thread batches it or
 * files its result (vw_flow_admitted). Polling, deliveries, commits and the
 * other partitions' records go on meanwhile, so one heavy record delays
 * neither the group's heartbeats nor max.poll.interval.ms. A record taking
 * longer than limits.slow_record_ms is logged and counted. */

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

/* The checks' rejection (its full value, in sb), or the processor's admit. */
static void admit_item(struct vw_worker *w, vw_item *it, vw_sbuf *sb) {
    vw_record rec = {w->topic,    it->partition, it->offset,    it->timestamp,  it->key,
                     it->key_len, it->value,     it->value_len, it->request_id, NULL};
    int status = 0;
    char type[VW_REJECT_TYPE_MAX] = "";
    vw_json_doc *doc = NULL;
    double t0 = vw_now_s(), c0 = vw_thread_cpu_s();
    bool rejected =
        vw_admit_reject_into(&rec, w->cfg->limits.max_request_bytes, sb, &status, type, &doc);
    double c1 = vw_thread_cpu_s();
    if (rejected && vw_sbuf_status(sb)) {
        vw_sbuf_free(sb); /* the out-of-memory mark is sticky: start afresh */
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "rejection record");
    } else if (rejected) {
        it->kind = VW_RESULT_RECORD;
        it->vela_status = status;
        vw_item_set_type(it, type);
        it->out_value = vw_sbuf_take(sb, &it->out_len);
        if (!it->out_value)
            vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "rejection record");
    } else {
        admit(w, it, doc);
    }
    vw_json_free(doc);
    double c2 = vw_thread_cpu_s(), ms = (vw_now_s() - t0) * 1e3;
    vw_metrics_stage(w->metrics, VW_S_ADMISSION, c1 - c0);
    vw_metrics_stage(w->metrics, VW_S_PLAN, c2 - c1);
    if (w->cfg->limits.slow_record_ms > 0 && ms > (double)w->cfg->limits.slow_record_ms) {
        vw_metrics_inc(w->metrics, VW_M_SLOW_RECORDS, 1);
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "slow record tp=%s:%d:%lld request_id=\"%s\" bytes=%zu elapsed_ms=%.0f "
               "check_cpu_ms=%.0f plan_cpu_ms=%.0f tokens=%lld status=%d",
               w->topic, (int)it->partition, (long long)it->offset, it->request_id, it->value_len,
               ms, (c1 - c0) * 1e3, (c2 - c1) * 1e3, (long long)it->tokens,
               it->proc_item ? 200 : it->vela_status);
    }
}

void *vw_flow_admit_main(void *arg) {
    struct vw_worker *w = arg;
    vw_sbuf sb = {0};
    for (vw_item *it; (it = vw_queue_pop(w->to_admit));) {
        admit_item(w, it, &sb);
        vw_queue_push(w->from_admit, it); /* sized never to block (vw_flow_admit_room) */
        wake(w);
    }
    vw_sbuf_free(&sb);
    return NULL;
}

size_t vw_flow_admit_room(const struct vw_worker *w) {
    return w->n_admitting < w->admit_cap ? w->admit_cap - w->n_admitting : 0;
}

void vw_flow_stop_admission(struct vw_worker *w) {
    for (vw_item *it; (it = vw_queue_try_pop(w->to_admit));) {
        w->n_admitting--;
        vw_item_free(it);
    }
    vw_queue_close(w->to_admit);
    for (; w->admit_started > 0; w->admit_started--)
        pthread_join(w->admitters[w->admit_started - 1], NULL);
    for (vw_item *it; (it = vw_queue_try_pop(w->from_admit));) {
        w->n_admitting--;
        vw_item_free(it);
    }
}

void vw_flow_admitted(struct vw_worker *w) {
    for (vw_item *it; (it = vw_queue_try_pop(w->from_admit));) {
        uint32_t epoch;
        w->n_admitting--;
        if (!vw_offsets_is_assigned(w->tracker, w->topic, it->partition, &epoch) ||
            epoch != it->epoch) {
            vw_item_free(it); /* revoked while it was admitted: the new owner reads it */
            continue;
        }
        vw_err err = {0};
        if (it->proc_item) {
            if (vw_batcher_push(w->batcher, it, it->tokens, vw_now_ms(), &err) == VW_OK)
                continue;
            vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
        }
        if (vw_offsets_set_result(w->tracker, w->topic, it->partition, epoch, it->offset, it, NULL))
            vw_item_free(it);
    }
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

void vw_flow_collect(struct vw_worker *w) {
    for (struct vw_flight *f; (f = vw_queue_try_pop(w->from_exec));) {
        w->n_flights--;
        for (size_t i = 0; i < f->batch->n; i++)
            collect_item(w, f->batch->items[i]);
        vw_batch_free(f->batch, NULL);
        free(f);
    }
}

void vw_flow_requeue_due(struct vw_worker *w, int64_t now) {
    size_t kept = 0;
    for (size_t i = 0; i < w->n_retry; i++) {
        vw_item *it = w->retry[i];
        if (it->due_ms > now || vw_batcher_push(w->batcher, it, it->tokens, now, NULL))
            w->retry[kept++] = it;
    }
    w->n_retry = kept;
}

bool vw_flow_can_dispatch(const struct vw_worker *w) {
    return vw_queue_len(w->to_exec) < EXEC_QUEUE && w->n_flights < w->max_flights;
}

/* Hands closed batches to the executor while it can take them. */
void vw_flow_dispatch(struct vw_worker *w, int64_t now) {
    /* Only this thread adds to to_exec: while it has room, a push succeeds, so
     * a batch is prepared only when it can be queued at once (a held batch
     * stays unprepared: a revoke may still take items out of it). */
    while (vw_flow_can_dispatch(w)) {
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

void vw_flow_drop_partition(struct vw_worker *w, int32_t partition) {
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
