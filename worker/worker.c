/* worker.c — the worker's lifecycle: the Kafka thread's loop, admission of
 * consumed records, the executor thread, retries with backoff, the SIGTERM
 * drain and replay (see worker.h, docs/worker.md "Design"). Kafka client
 * details live in consumer.c and producer.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admit_record.h"
#include "worker_impl.h"

enum { EXEC_QUEUE = 2, IDLE_POLL_MS = 100 };

int64_t vw_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t vw_wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vw_worker_wake(struct vw_worker *w) {
    char c = 'x';
    if (write(w->wake[1], &c, 1) < 0 && errno != EAGAIN) {
        /* A full pipe already wakes the loop; nothing else can go wrong here. */
    }
}

bool vw_items_push(vw_item ***list, size_t *n, size_t *cap, vw_item *it) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        vw_item **grown = realloc(*list, c * sizeof *grown);
        if (!grown)
            return false;
        *list = grown;
        *cap = c;
    }
    (*list)[(*n)++] = it;
    return true;
}

/* Frees the result value and headers of an item. */
static void clear_result(vw_item *it) {
    free(it->res_value);
    for (size_t i = 0; i < it->n_headers; i++) {
        free(it->headers[i].name);
        free(it->headers[i].value);
    }
    free(it->headers);
    it->res_value = NULL;
    it->res_len = 0;
    it->headers = NULL;
    it->n_headers = 0;
}

void vw_item_free(vw_item *it) {
    if (!it)
        return;
    if (it->proc_item)
        it->w->proc->ops->item_free(it->w->proc, it->proc_item);
    clear_result(it);
    free(it->msg);
    if (!it->out_inline)
        free(it->out_value);
    free(it);
}

static void set_type(vw_item *it, const char *type) {
    vw_copy_type(it->type, sizeof it->type, type);
}

void vw_item_take(vw_item *it, vw_result *r) {
    clear_result(it);
    if (r->kind != VW_RESULT_RECORD) {
        vw_item_fail(it, r->kind, r->err.type[0] ? r->err.type : "no_result", r->err.msg);
        vw_result_clear(r);
        return;
    }
    it->kind = VW_RESULT_RECORD;
    it->vela_status = r->vela_status;
    it->res_value = r->value;
    it->res_len = r->value_len;
    it->headers = r->headers;
    it->n_headers = r->n_headers;
    set_type(it, r->err.type);
    r->value = NULL;
    r->value_len = 0;
    r->headers = NULL;
    r->n_headers = 0;
}

void vw_item_fail(vw_item *it, vw_result_kind kind, const char *type, const char *msg) {
    char *m = strdup(msg); /* msg may be it->msg itself */
    clear_result(it);
    free(it->msg);
    it->msg = m;
    it->kind = kind;
    set_type(it, type);
}

const char *vw_item_msg(const vw_item *it) {
    return it->msg ? it->msg : it->type;
}

void vw_item_free_cb(void *it) {
    vw_item_free(it);
}

/* ---- executor thread ------------------------------------------------------ */

static void run_one_batch(struct vw_worker *w, vw_batch *b) {
    void **items = malloc(b->n * sizeof *items);
    vw_result *res = calloc(b->n, sizeof *res);
    int64_t start_ms = vw_now_ms();
    if (!items || !res) {
        for (size_t i = 0; i < b->n; i++)
            vw_item_fail(b->items[i], VW_RESULT_RETRY, "out_of_memory", "executor batch arrays");
        goto done;
    }
    for (size_t i = 0; i < b->n; i++) {
        vw_item *it = b->items[i];
        items[i] = it->proc_item;
        vw_metrics_observe(w->metrics, VW_H_QUEUE_DELAY,
                           (double)(start_ms - it->admitted_ms) / 1e3);
    }
    double t0 = now_s();
    w->proc->ops->run_batch(w->proc, items, b->n, res);
    vw_crashpoint_hit(&w->crash, VW_CRASH_AFTER_EXECUTOR);
    vw_metrics_observe(w->metrics, VW_H_EXEC, now_s() - t0);
    for (size_t i = 0; i < b->n; i++)
        vw_item_take(b->items[i], &res[i]);
done:
    free(items);
    free(res);
}

static void *executor_main(void *arg) {
    struct vw_worker *w = arg;
    for (vw_batch *b; (b = vw_queue_pop(w->to_exec));) {
        run_one_batch(w, b);
        vw_queue_push(w->from_exec, b); /* the Kafka thread always drains it */
        vw_worker_wake(w);
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
static const vw_range *range_of(const struct vw_worker *w, int32_t partition) {
    for (size_t i = 0; i < w->n_ranges; i++)
        if (w->ranges[i].partition == partition)
            return &w->ranges[i];
    return NULL;
}

/* One allocation holds the item, its request id, key and value, and, for a
 * record the worker-level checks reject, its final result value: the checks
 * run on the consumed bytes first, writing that value into w->scratch. */
static vw_item *new_item(struct vw_worker *w, const rd_kafka_message_t *m, uint32_t epoch) {
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
    vw_record rec = {w->topic, m->partition, m->offset, ts, m->key,
                     key_len,  m->payload,   value_len, idc};
    int status = 0;
    char type[VW_REJECT_TYPE_MAX] = "";
    bool rejected =
        vw_admit_reject_into(&rec, w->cfg->limits.max_request_bytes, &w->scratch, &status, type);
    bool oom = rejected && vw_sbuf_status(&w->scratch);
    if (oom) /* the out-of-memory mark is sticky: start the next record afresh */
        vw_sbuf_free(&w->scratch);
    size_t out_len = rejected && !oom ? w->scratch.len : 0;
    vw_item *it = malloc(sizeof *it + id_len + 1 + key_len + value_len + out_len);
    if (!it) {
        if (idc != idbuf)
            free(idc);
        return NULL;
    }
    memset(it, 0, sizeof *it);
    it->w = w;
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
        set_type(it, type);
        it->out_value = (char *)it->value + value_len;
        it->out_len = out_len;
        it->out_inline = true;
        memcpy(it->out_value, w->scratch.p, out_len);
    }
    return it;
}

/* The processor's admit, for a record the worker-level checks passed. Leaves
 * the item either with a finished result, or with a pending processor item. */
static void admit(struct vw_worker *w, vw_item *it) {
    vw_record rec = {w->topic,    it->partition, it->offset,    it->timestamp, it->key,
                     it->key_len, it->value,     it->value_len, it->request_id};
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
    const vw_range *r = range_of(w, m->partition);
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
    vw_item *it = new_item(w, m, epoch);
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
        admit(w, it);
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
    for (vw_batch *b; (b = vw_queue_try_pop(w->from_exec));) {
        w->exec_items -= b->n;
        for (size_t i = 0; i < b->n; i++)
            collect_item(w, b->items[i]);
        vw_batch_free(b, NULL);
    }
}

static void requeue_due(struct vw_worker *w, int64_t now) {
    size_t kept = 0;
    for (size_t i = 0; i < w->n_retry; i++) {
        vw_item *it = w->retry[i];
        if (it->due_ms > now || vw_batcher_push(w->batcher, it, it->tokens, now, NULL))
            w->retry[kept++] = it;
    }
    w->n_retry = kept;
}

/* Hands closed batches to the executor while its queue has room. */
static void dispatch(struct vw_worker *w, int64_t now) {
    for (;;) {
        if (!w->held && !vw_batcher_take(w->batcher, now, &w->held))
            return;
        size_t n = w->held->n;
        int64_t tokens = w->held->tokens;
        if (!vw_queue_try_push(w->to_exec, w->held))
            return;
        w->held = NULL;
        w->exec_items += n;
        vw_metrics_inc(w->metrics, VW_M_BATCHES, 1);
        vw_metrics_observe(w->metrics, VW_H_BATCH_SIZE, (double)n);
        vw_metrics_observe(w->metrics, VW_H_BATCH_TOKENS, (double)tokens);
    }
}

static bool same_partition(void *item, void *ctx) {
    return ((vw_item *)item)->partition == *(const int32_t *)ctx;
}

void vw_worker_set_fatal(struct vw_worker *w) {
    w->fatal = true;
    vw_metrics_set_fatal(w->metrics);
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
        kept = 0;
        for (size_t i = 0; i < w->held->n; i++) {
            if (same_partition(w->held->items[i], &partition)) {
                vw_item_free(w->held->items[i]);
                dropped++;
            } else {
                w->held->items[kept] = w->held->items[i];
                w->held->costs[kept++] = w->held->costs[i];
            }
        }
        w->held->n = kept;
    }
    if (dropped)
        VW_LOG(w->log, VW_LOG_INFO, "worker", "abandoned queued work tp=%s:%d records=%zu",
               w->topic, (int)partition, dropped);
}

/* ---- the loop ---------------------------------------------------------------- */

static int timeout_ms(struct vw_worker *w, int64_t now) {
    int64_t t = IDLE_POLL_MS, d = vw_batcher_deadline(w->batcher);
    if (!w->held && d - now < t)
        t = d - now;
    for (size_t i = 0; i < w->n_retry; i++)
        if (w->retry[i]->due_ms - now < t)
            t = w->retry[i]->due_ms - now;
    if (!w->replay && w->next_commit_ms - now < t)
        t = w->next_commit_ms - now;
    return t < 0 ? 0 : (int)t;
}

static void wait_and_drain(struct vw_worker *w, int ms) {
    struct pollfd p = {.fd = w->wake[0], .events = POLLIN};
    char buf[256];
    if (poll(&p, 1, ms) > 0)
        while (read(w->wake[0], buf, sizeof buf) > 0) {
        }
}

/* One turn of the Kafka thread. */
static void turn(struct vw_worker *w, int wait) {
    wait_and_drain(w, w->more ? 0 : wait);
    w->turn_ms = vw_now_ms();
    /* Delivery reports first: they make room under limits.max_in_flight, and
     * the record queue's I/O event does not fire again for records that were
     * already waiting while intake was stopped. */
    vw_producer_poll(w, 0);
    w->more = vw_consumer_poll(w);
    vw_worker_collect(w);
    int64_t now = vw_now_ms();
    requeue_due(w, now);
    if (w->stopping)
        vw_batcher_flush(w->batcher, now);
    dispatch(w, now);
    vw_produce_ready(w);
    if (!w->replay && now >= w->next_commit_ms) {
        vw_consumer_commit(w, false);
        w->next_commit_ms = now + w->cfg->delivery.commit_interval_ms;
    }
    if (!w->replay && !w->stopping && now >= w->next_route_ms) {
        vw_consumer_reroute(w);
        w->next_route_ms = now + 1000;
    }
    vw_metrics_set_in_flight(w->metrics, (int64_t)vw_offsets_in_flight(w->tracker, NULL, 0));
}

static bool idle(struct vw_worker *w) {
    return vw_offsets_in_flight(w->tracker, NULL, 0) == 0 && !w->held && !w->n_retry &&
           !w->n_redo && !vw_batcher_pending(w->batcher) && !w->exec_items;
}

static vw_status start(struct vw_worker *w, vw_err *err) {
    vw_status st = vw_consumer_open(w, err);
    if (!st && !w->sink)
        st = vw_producer_open(w, err);
    if (st)
        return st;
    if (pthread_create(&w->exec_thread, NULL, executor_main, w))
        return VW_FAIL(err, VW_EIO, "thread", "cannot start the executor thread");
    w->exec_started = true;
    bool ready = !w->proc->ops->ready || w->proc->ops->ready(w->proc);
    vw_metrics_set_ready(w->metrics, ready);
    return VW_OK;
}

/* SIGTERM: stop fetching, finish what is in flight within the grace period,
 * commit what was delivered. */
static void drain(struct vw_worker *w) {
    int64_t t0 = vw_now_ms();
    w->stopping = true;
    w->stop_deadline_ms = t0 + w->cfg->shutdown.grace_ms;
    vw_consumer_stop_fetching(w);
    while (!w->fatal && !idle(w) && vw_now_ms() < w->stop_deadline_ms)
        turn(w, 10);
    if (!w->replay)
        vw_consumer_commit(w, true);
    VW_LOG(w->log, VW_LOG_INFO, "worker", "drained in_flight=%zu elapsed_ms=%lld",
           vw_offsets_in_flight(w->tracker, NULL, 0), (long long)(vw_now_ms() - t0));
}

/* Closes the clients and the executor, in the order the commit rule needs. */
static void stop(struct vw_worker *w) {
    w->stopping = true;
    if (!w->stop_deadline_ms)
        w->stop_deadline_ms = vw_now_ms() + w->cfg->shutdown.grace_ms;
    vw_consumer_close(w); /* a revoke may still produce and commit */
    if (w->exec_started) {
        vw_queue_close(w->to_exec);
        pthread_join(w->exec_thread, NULL);
        w->exec_started = false;
        vw_worker_collect(w);
    }
    if (w->producer) {
        int64_t left = w->stop_deadline_ms - vw_now_ms();
        rd_kafka_flush(w->producer, left > 1000 ? (int)left : 1000);
        rd_kafka_purge(w->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(w->producer, 0); /* purged delivery reports free their items */
        rd_kafka_queue_io_event_enable(w->pq, -1, NULL, 0);
        rd_kafka_queue_destroy(w->pq);
        w->pq = NULL;
        rd_kafka_destroy(w->producer);
        w->producer = NULL;
    }
}

vw_status vw_worker_new(const vw_config *cfg, const vw_log *log, vw_processor *proc,
                        vw_metrics *metrics, vw_worker **out, vw_err *err) {
    *out = NULL;
    struct vw_worker *w = calloc(1, sizeof *w);
    if (!w)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "worker");
    w->cfg = cfg;
    w->log = log;
    w->proc = proc;
    w->metrics = metrics;
    w->topic = cfg->topics.input;
    w->results_topic = cfg->topics.results;
    w->wake[0] = w->wake[1] = -1;
    if (vw_crashpoint_init(&w->crash, getenv("VW_CRASH_AT"), err)) {
        free(w);
        return VW_EINVAL;
    }
    w->tracker = vw_offsets_new(vw_item_free_cb);
    w->batcher = vw_batcher_new(cfg->batching.max_tokens, cfg->batching.max_requests,
                                cfg->batching.max_wait_ms);
    w->to_exec = vw_queue_new(EXEC_QUEUE);
    w->from_exec = vw_queue_new(EXEC_QUEUE + 2);
    if (!w->tracker || !w->batcher || !w->to_exec || !w->from_exec) {
        vw_worker_free(w);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "worker");
    }
    if (pipe2(w->wake, O_NONBLOCK | O_CLOEXEC)) {
        vw_worker_free(w);
        return VW_FAIL(err, VW_EIO, "pipe", "wake pipe: %s", strerror(errno));
    }
    *out = w;
    return VW_OK;
}

vw_status vw_worker_run(vw_worker *w, volatile sig_atomic_t *stop_flag, vw_err *err) {
    vw_status st = start(w, err);
    if (st) {
        stop(w);
        return st;
    }
    VW_LOG(w->log, VW_LOG_INFO, "worker", "running topic=%s results=%s processor=%s", w->topic,
           w->results_topic, w->proc->ops->name);
    while (!*stop_flag && !w->fatal)
        turn(w, timeout_ms(w, vw_now_ms()));
    if (!w->fatal)
        drain(w);
    stop(w);
    if (w->fatal)
        return VW_FAIL(err, VW_EKAFKA, "kafka_fatal", "fatal librdkafka error (see the log)");
    return VW_OK;
}

/* ---- replay -------------------------------------------------------------------- */

/* Pauses finished partitions; true when every range is consumed. */
static bool ranges_consumed(struct vw_worker *w, rd_kafka_topic_partition_list_t *l) {
    bool all = true;
    if (rd_kafka_position(w->consumer, l))
        return false;
    for (int i = 0; i < l->cnt; i++) {
        const vw_range *r = range_of(w, l->elems[i].partition);
        if (l->elems[i].offset >= r->end) {
            rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(one, w->topic, l->elems[i].partition);
            rd_kafka_pause_partitions(w->consumer, one);
            rd_kafka_topic_partition_list_destroy(one);
        } else {
            all = false;
        }
    }
    return all;
}

static void progress(struct vw_worker *w, int64_t t0, bool last) {
    double secs = (double)(vw_now_ms() - t0) / 1e3, rate = secs > 0 ? w->replay_done / secs : 0;
    size_t left = w->replay_total > w->replay_done ? w->replay_total - w->replay_done : 0;
    char eta[32] = "?";
    if (rate > 0)
        snprintf(eta, sizeof eta, "%.1f s", (double)left / rate);
    fprintf(stderr, "replay: %zu/%zu records (%.1f%%), %.0f records/s, ETA %s%s", w->replay_done,
            w->replay_total,
            w->replay_total ? 100.0 * (double)w->replay_done / (double)w->replay_total : 100.0,
            rate, eta, last ? "\n" : "\r");
    fflush(stderr);
}

static vw_status replay_assign(struct vw_worker *w, rd_kafka_topic_partition_list_t *l,
                               vw_err *err) {
    for (size_t i = 0; i < w->n_ranges; i++) {
        const vw_range *r = &w->ranges[i];
        VW_LOG(w->log, VW_LOG_INFO, "replay", "range tp=%s:%d start=%lld end=%lld", w->topic,
               (int)r->partition, (long long)r->start, (long long)r->end);
        if (r->start >= r->end)
            continue;
        rd_kafka_topic_partition_list_add(l, w->topic, r->partition)->offset = r->start;
        vw_offsets_assign(w->tracker, w->topic, r->partition, NULL, NULL);
        w->replay_total += (size_t)(r->end - r->start);
    }
    vw_consumer_route(w, l);
    rd_kafka_resp_err_t e = l->cnt ? rd_kafka_assign(w->consumer, l) : 0;
    if (e)
        return VW_FAIL(err, VW_EKAFKA, "kafka_assign", "assign: %s", rd_kafka_err2str(e));
    return VW_OK;
}

vw_status vw_worker_replay(vw_worker *w, const vw_replay_range *ranges, size_t n_ranges, FILE *out,
                           const char *results_topic, volatile sig_atomic_t *stop_flag,
                           vw_err *err) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n_ranges + 1);
    w->replay = true;
    w->sink = out;
    if (results_topic)
        w->results_topic = results_topic;
    w->ranges = calloc(n_ranges + 1, sizeof *w->ranges);
    if (!w->ranges || !l) {
        rd_kafka_topic_partition_list_destroy(l);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "replay ranges");
    }
    for (size_t i = 0; i < n_ranges; i++)
        w->ranges[i] = (vw_range){ranges[i].partition, ranges[i].start, ranges[i].end};
    w->n_ranges = n_ranges;
    vw_status st = start(w, err);
    if (!st)
        st = replay_assign(w, l, err);
    int64_t t0 = vw_now_ms(), next_report = t0;
    while (!st && !*stop_flag && !w->fatal) {
        turn(w, timeout_ms(w, vw_now_ms()));
        bool done = (!l->cnt || ranges_consumed(w, l)) && idle(w);
        if (done || vw_now_ms() >= next_report) {
            progress(w, t0, done);
            next_report = vw_now_ms() + 1000;
        }
        if (done)
            break;
    }
    if (!st && (*stop_flag || w->fatal)) {
        progress(w, t0, true);
        st = VW_FAIL(err, w->fatal ? VW_EKAFKA : VW_ETRANSIENT, "replay_stopped",
                     "replay stopped before the end (%zu of %zu records)", w->replay_done,
                     w->replay_total);
    }
    stop(w);
    rd_kafka_topic_partition_list_destroy(l);
    return st;
}

static void free_batch_items(void *b) {
    vw_batch_free(b, vw_item_free_cb);
}

void vw_worker_free(vw_worker *w) {
    if (!w)
        return;
    if (w->consumer || w->producer || w->exec_started)
        stop(w);
    vw_batch_free(w->held, vw_item_free_cb);
    vw_batcher_free(w->batcher, vw_item_free_cb);
    for (size_t i = 0; i < w->n_retry; i++)
        vw_item_free(w->retry[i]);
    for (size_t i = 0; i < w->n_redo; i++)
        vw_item_free(w->redo[i]);
    free(w->retry);
    free(w->redo);
    vw_queue_free(w->to_exec, free_batch_items);
    vw_queue_free(w->from_exec, free_batch_items);
    vw_offsets_free(w->tracker);
    vw_starts_free(&w->starts);
    vw_sbuf_free(&w->scratch);
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    free(w->ranges);
    free(w);
}
