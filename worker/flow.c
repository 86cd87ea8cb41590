/* flow.c — the way of a record between the source and the sink (see
 * flow.h): intake into an item, the admission lane's results batched or
 * filed, micro-batches prepared here, executed on the executor thread and
 * finished on the processing threads, collected back, retries with backoff,
 * a revoked partition's queued work dropped. Runs on the Kafka thread but for
 * the threads it owns (marked). Never talks to a Kafka client: the loop
 * (worker.c) hands it records and takes results from the ledger. */
#include "flow.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "item.h"
#include "lane.h"
#include "queue.h"
#include "service/clock.h"
#include "wake.h"
#include "util/thread_name.h"

/* Batches prepared and waiting for the executor thread: one runs while the
 * next waits, so the device never waits for the host to prepare one. */
enum { EXEC_QUEUE = 2 };

struct vw_flow {
    vw_flow_opts o;
    vw_lane *lane;       /* admission: checks and plan off the Kafka thread */
    vw_batcher *batcher; /* admitted items waiting for their micro-batch */
    vw_batch *held;      /* a closed batch whose prepare ran out of memory: tried again */
    vw_item **retry;     /* RETRY items waiting for their backoff */
    size_t n_retry, cap_retry;
    vw_queue *to_exec, *to_finish, *from_exec; /* flights ("the batch pipeline" below) */
    pthread_t exec_thread;
    bool exec_started;
    pthread_t *pool; /* processing threads (finish), o.threads of them */
    size_t pool_started;
    size_t n_flights;   /* flights dispatched and not yet collected */
    size_t max_flights; /* from_exec's capacity (can_dispatch) */
};

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

/* Every item of f gets RETRY (transient) or FATAL with f's error. [thread: processing] */
static void fail_flight(struct vw_flight *fl) {
    vw_result_kind kind = fl->st == VW_ETRANSIENT ? VW_RESULT_RETRY : VW_RESULT_FATAL;
    for (size_t i = 0; i < fl->batch->n; i++)
        vw_item_fail(fl->batch->items[i], kind, fl->err.type[0] ? fl->err.type : "batch_failed",
                     fl->err.msg);
}

/* A flight left in a queue at free: its processor state and items go. */
static void flight_free_cb(void *flight) {
    struct vw_flight *fl = flight;
    if (!fl)
        return;
    if (fl->work)
        fl->proc->ops->release(fl->proc, fl->work);
    vw_batch_free(fl->batch, vw_item_free_cb);
    free(fl);
}

/* The processor's prepare of a closed batch (the Kafka thread). */
static struct vw_flight *prepare(vw_flow *f, vw_batch *b) {
    struct vw_flight *fl = calloc(1, sizeof *fl);
    void **items = malloc((b->n ? b->n : 1) * sizeof *items);
    if (!fl || !items) {
        free(fl);
        free(items);
        return NULL;
    }
    fl->batch = b;
    fl->proc = f->o.proc;
    for (size_t i = 0; i < b->n; i++)
        items[i] = ((vw_item *)b->items[i])->proc_item;
    fl->st = f->o.proc->ops->prepare(f->o.proc, items, b->n, &fl->work, &fl->err);
    free(items);
    return fl;
}

/* The executor thread [thread: executor]: execute only, so the device is fed
 * as fast as batches close. */
static void *exec_main(void *arg) {
    vw_flow *f = arg;
    for (struct vw_flight *fl; (fl = vw_queue_pop(f->to_exec));) {
        vw_wake(f->o.wake_fd); /* room in to_exec: the Kafka thread may dispatch the next batch */
        int64_t start_ms = vw_now_ms();
        for (size_t i = 0; i < fl->batch->n; i++)
            vw_metrics_observe(f->o.metrics, VW_H_QUEUE_DELAY,
                               (double)(start_ms - ((vw_item *)fl->batch->items[i])->admitted_ms) /
                                   1e3);
        if (fl->st == VW_OK) {
            double t0 = vw_now_s(), c0 = vw_thread_cpu_s();
            fl->st = f->o.proc->ops->execute(f->o.proc, fl->work, &fl->err);
            vw_metrics_observe(f->o.metrics, VW_H_EXEC, vw_now_s() - t0);
            vw_metrics_stage(f->o.metrics, VW_S_EXECUTE, vw_thread_cpu_s() - c0);
        }
        vw_queue_push(f->to_finish, fl); /* blocks while every processing thread is busy */
    }
    vw_queue_close(f->to_finish); /* the processing threads drain it, then stop */
    return NULL;
}

/* A processing thread [thread: processing]: finish, several flights at once. */
static void *finish_main(void *arg) {
    vw_flow *f = arg;
    for (struct vw_flight *fl; (fl = vw_queue_pop(f->to_finish));) {
        vw_batch *b = fl->batch;
        vw_result *res = fl->st == VW_OK ? calloc(b->n ? b->n : 1, sizeof *res) : NULL;
        if (fl->st == VW_OK && !res)
            fl->st = VW_FAIL(&fl->err, VW_ETRANSIENT, "out_of_memory", "batch results");
        if (fl->st == VW_OK) {
            vw_stage_times t = {0};
            f->o.proc->ops->finish(f->o.proc, fl->work, res, &t);
            vw_metrics_stage(f->o.metrics, VW_S_HEADS, t.heads);
            vw_metrics_stage(f->o.metrics, VW_S_ANSWERS, t.answers);
            vw_metrics_stage(f->o.metrics, VW_S_ENVELOPE, t.envelope);
            vw_crashpoint_hit(f->o.crash, VW_CRASH_AFTER_EXECUTOR);
            for (size_t i = 0; i < b->n; i++)
                vw_item_take(b->items[i], &res[i]);
        } else {
            fail_flight(fl);
        }
        free(res);
        if (fl->work)
            f->o.proc->ops->release(f->o.proc, fl->work);
        fl->work = NULL;
        vw_queue_push(f->from_exec, fl); /* sized never to block (vw_flow_new) */
        vw_wake(f->o.wake_fd);
    }
    return NULL;
}

/* ---- intake ---------------------------------------------------------------- */

/* The item of a consumed record (item.h vw_item_new): all the Kafka thread
 * does with it (the checks and the plan run on an admission thread, lane.h).
 * NULL when out of memory. */
static vw_item *new_item(vw_flow *f, const rd_kafka_message_t *m, uint32_t epoch, int64_t now_ms) {
    rd_kafka_headers_t *hdrs = NULL; /* parsed once, owned by m */
    if (rd_kafka_message_headers(m, &hdrs))
        hdrs = NULL;
    rd_kafka_timestamp_type_t tstype;
    vw_record_in r = {.topic = f->o.topic,
                      .partition = m->partition,
                      .offset = m->offset,
                      .timestamp = rd_kafka_message_timestamp(m, &tstype),
                      .key = m->key,
                      .key_len = m->key_len,
                      .headers = hdrs,
                      .value = m->payload,
                      .value_len = m->len};
    return vw_item_new(&r, f->o.cfg, f->o.proc, epoch, now_ms);
}

/* Tracks partition:offset in the ledger (its epoch into *epoch); false when
 * the record is to be skipped: its partition revoked meanwhile, an offset the
 * ledger refuses, or out of memory (raised: skipping it would commit past it). */
static bool track(vw_flow *f, int32_t partition, int64_t offset, uint32_t *epoch) {
    vw_err err = {0};
    if (!vw_offsets_is_assigned(f->o.ledger, f->o.topic, partition, epoch))
        return false; /* revoked meanwhile */
    if (!vw_offsets_track(f->o.ledger, f->o.topic, partition, offset, &err))
        return true;
    if (err.status == VW_ENOMEM) {
        VW_LOG(f->o.log, VW_LOG_ERROR, "worker", "out of memory tracking tp=%s:%d:%lld, stopping",
               f->o.topic, (int)partition, (long long)offset);
        VW_RAISE(f->o.fault, VW_ENOMEM, "out_of_memory", "tracking tp=%s:%d:%lld", f->o.topic,
                 (int)partition, (long long)offset);
        return false;
    }
    VW_LOG(f->o.log, VW_LOG_WARN, "worker", "record skipped tp=%s:%d:%lld reason=\"%s\"",
           f->o.topic, (int)partition, (long long)offset, err.msg);
    return false;
}

void vw_flow_unreadable(vw_flow *f, int32_t partition, int64_t offset, const char *err,
                        const char *reason, int64_t now_ms) {
    uint32_t epoch;
    if (!track(f, partition, offset, &epoch))
        return;
    vw_metrics_inc(f->o.metrics, VW_M_RECORDS_IN, 1);
    vw_record_in r = {
        .topic = f->o.topic, .partition = partition, .offset = offset, .timestamp = -1};
    vw_item *it = vw_item_new(&r, f->o.cfg, f->o.proc, epoch, now_ms);
    if (!it) { /* the offset stays PENDING: nothing past it is committed */
        VW_RAISE(f->o.fault, VW_ENOMEM, "out_of_memory", "dead letter of tp=%s:%d:%lld", f->o.topic,
                 (int)partition, (long long)offset);
        return;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s", err, reason);
    vw_item_fail(it, VW_RESULT_FATAL, "unreadable_record", msg);
    if (vw_offsets_set_result(f->o.ledger, f->o.topic, partition, epoch, offset, it, NULL))
        vw_item_free(it);
}

void vw_flow_intake(vw_flow *f, const rd_kafka_message_t *m, int64_t now_ms) {
    uint32_t epoch;
    if (!track(f, m->partition, m->offset, &epoch))
        return;
    vw_metrics_inc(f->o.metrics, VW_M_RECORDS_IN, 1);
    vw_item *it = new_item(f, m, epoch, now_ms);
    /* The lane has room: intake takes at most vw_flow_room records. */
    if (it && vw_lane_push(f->lane, it))
        return;
    /* Out of memory (or, against that rule, a full lane): the tracked offset
     * stays PENDING, so nothing past it is committed; the worker stops (exit
     * 1) rather than hold the partition still, and a restart answers the
     * record. */
    bool full = it != NULL;
    const char *why = full ? "the admission lane is full" : "out of memory";
    vw_item_free(it);
    VW_LOG(f->o.log, VW_LOG_ERROR, "worker", "cannot admit tp=%s:%d:%lld, stopping reason=\"%s\"",
           f->o.topic, (int)m->partition, (long long)m->offset, why);
    VW_RAISE(f->o.fault, full ? VW_EINVAL : VW_ENOMEM, full ? "lane_full" : "out_of_memory",
             "admitting tp=%s:%d:%lld: %s", f->o.topic, (int)m->partition, (long long)m->offset,
             why);
}

void vw_flow_admitted(vw_flow *f) {
    for (vw_item *it; (it = vw_lane_pop(f->lane));) {
        uint32_t epoch;
        if (!vw_offsets_is_assigned(f->o.ledger, f->o.topic, it->partition, &epoch) ||
            epoch != it->epoch) {
            vw_item_free(it); /* revoked while it was admitted: the new owner reads it */
            continue;
        }
        vw_err err = {0};
        if (it->proc_item) {
            if (vw_batcher_push(f->batcher, it, it->tokens, vw_now_ms(), &err) == VW_OK)
                continue;
            vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
        }
        if (vw_offsets_set_result(f->o.ledger, f->o.topic, it->partition, epoch, it->offset, it,
                                  NULL))
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

static void collect_item(vw_flow *f, vw_item *it) {
    uint32_t epoch;
    if (!vw_offsets_is_assigned(f->o.ledger, f->o.topic, it->partition, &epoch) ||
        epoch != it->epoch) {
        vw_item_free(it); /* its partition was revoked while it ran */
        return;
    }
    if (it->kind == VW_RESULT_RETRY) {
        /* Transient: never a rejection. Run it again after a backoff. */
        int64_t backoff = backoff_ms(f->o.cfg, it->attempts + 1);
        vw_metrics_inc(f->o.metrics, VW_M_RETRIES, 1);
        VW_LOG(f->o.log, VW_LOG_WARN, "worker",
               "transient failure, retrying request_id=\"%s\" attempt=%d backoff_ms=%lld "
               "type=%s",
               it->request_id, it->attempts + 1, (long long)backoff, it->type);
        vw_item_retry(it, vw_now_ms() + backoff);
        if (vw_items_push(&f->retry, &f->n_retry, &f->cap_retry, it))
            return;
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "retry list");
    }
    vw_item_drop_proc(it); /* the processor is done with it */
    if (vw_offsets_set_result(f->o.ledger, f->o.topic, it->partition, it->epoch, it->offset, it,
                              NULL))
        vw_item_free(it);
}

void vw_flow_collect(vw_flow *f) {
    for (struct vw_flight *fl; (fl = vw_queue_try_pop(f->from_exec));) {
        f->n_flights--;
        for (size_t i = 0; i < fl->batch->n; i++)
            collect_item(f, fl->batch->items[i]);
        vw_batch_free(fl->batch, NULL);
        free(fl);
    }
}

void vw_flow_requeue_due(vw_flow *f, int64_t now) {
    size_t kept = 0;
    for (size_t i = 0; i < f->n_retry; i++) {
        vw_item *it = f->retry[i];
        if (it->due_ms > now || vw_batcher_push(f->batcher, it, it->tokens, now, NULL))
            f->retry[kept++] = it;
    }
    f->n_retry = kept;
}

/* Whether dispatch could hand over a batch now: the executor queue has room
 * and the flights in flight stay within from_exec's capacity (more could
 * block a processing thread on it). */
static bool can_dispatch(const vw_flow *f) {
    return vw_queue_len(f->to_exec) < EXEC_QUEUE && f->n_flights < f->max_flights;
}

void vw_flow_dispatch(vw_flow *f, int64_t now) {
    /* Only this thread adds to to_exec: while it has room, a push succeeds, so
     * a batch is prepared only when it can be queued at once (a held batch
     * stays unprepared: a revoke may still take items out of it). */
    while (can_dispatch(f)) {
        if (!f->held && !vw_batcher_take(f->batcher, now, &f->held))
            return;
        double c0 = vw_thread_cpu_s();
        struct vw_flight *fl = prepare(f, f->held);
        vw_metrics_stage(f->o.metrics, VW_S_BATCHING, vw_thread_cpu_s() - c0);
        if (!fl)
            return; /* out of memory: the batch stays held, tried again next turn */
        size_t n = f->held->n;
        int64_t tokens = f->held->tokens;
        if (!vw_queue_try_push(f->to_exec, fl)) { /* cannot happen: room was checked */
            if (fl->work)
                f->o.proc->ops->release(f->o.proc, fl->work);
            free(fl);
            return;
        }
        f->held = NULL;
        f->n_flights++;
        vw_metrics_inc(f->o.metrics, VW_M_BATCHES, 1);
        vw_metrics_observe(f->o.metrics, VW_H_BATCH_SIZE, (double)n);
        vw_metrics_observe(f->o.metrics, VW_H_BATCH_TOKENS, (double)tokens);
    }
}

static bool same_partition(void *item, void *ctx) {
    return ((vw_item *)item)->partition == *(const int32_t *)ctx;
}

void vw_flow_drop_partition(vw_flow *f, int32_t partition) {
    size_t dropped = vw_batcher_remove_if(f->batcher, same_partition, &partition, vw_item_free_cb);
    size_t kept = 0;
    for (size_t i = 0; i < f->n_retry; i++) {
        if (f->retry[i]->partition == partition) {
            vw_item_free(f->retry[i]);
            dropped++;
        } else {
            f->retry[kept++] = f->retry[i];
        }
    }
    f->n_retry = kept;
    if (f->held) {
        dropped += vw_batch_remove_if(f->held, same_partition, &partition, vw_item_free_cb);
        if (!f->held->n) { /* nothing left to prepare */
            vw_batch_free(f->held, NULL);
            f->held = NULL;
        }
    }
    if (dropped)
        VW_LOG(f->o.log, VW_LOG_INFO, "worker", "abandoned queued work tp=%s:%d records=%zu",
               f->o.topic, (int)partition, dropped);
}

/* ---- life cycle ------------------------------------------------------------ */

vw_status vw_flow_new(const vw_flow_opts *o, vw_flow **out, vw_err *err) {
    *out = NULL;
    vw_flow *f = calloc(1, sizeof *f);
    if (!f)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "flow");
    f->o = *o;
    size_t n = o->threads ? o->threads : 1;
    f->o.threads = n;
    /* Intake stops at limits.max_in_flight tracked records (replay: at this
     * many in the lane), so the lane has room for all. */
    vw_lane_opts lo = {.cfg = o->cfg,
                       .log = o->log,
                       .proc = o->proc,
                       .metrics = o->metrics,
                       .topic = o->topic,
                       .wake_fd = o->wake_fd,
                       .threads = n,
                       .cap = (size_t)o->cfg->limits.max_in_flight};
    vw_status st = vw_lane_new(&lo, &f->lane, err);
    if (st) {
        vw_flow_free(f);
        return st;
    }
    f->batcher = vw_batcher_new(o->cfg->batching.max_tokens, o->cfg->batching.max_requests,
                                o->cfg->batching.max_wait_ms);
    f->pool = calloc(n, sizeof *f->pool);
    f->to_exec = vw_queue_new(EXEC_QUEUE);
    f->to_finish = vw_queue_new(n);
    /* Room for every flight that can be past prepare at once (queued for and
     * in the executor, queued for and in processing), so a processing thread
     * never blocks on it and stop can join them before collecting. */
    f->max_flights = EXEC_QUEUE + 1 + 2 * n;
    f->from_exec = vw_queue_new(f->max_flights);
    if (!f->batcher || !f->pool || !f->to_exec || !f->to_finish || !f->from_exec) {
        vw_flow_free(f);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "flow");
    }
    *out = f;
    return VW_OK;
}

vw_status vw_flow_start(vw_flow *f, vw_err *err) {
    for (; f->pool_started < f->o.threads; f->pool_started++) {
        if (pthread_create(&f->pool[f->pool_started], NULL, finish_main, f))
            return VW_FAIL(err, VW_EIO, "thread", "cannot start processing thread %zu",
                           f->pool_started);
        vw_thread_name(f->pool[f->pool_started], "vw-proc", (long)f->pool_started);
    }
    vw_status st = vw_lane_start(f->lane, err);
    if (st)
        return st;
    if (pthread_create(&f->exec_thread, NULL, exec_main, f))
        return VW_FAIL(err, VW_EIO, "thread", "cannot start the executor thread");
    vw_thread_name(f->exec_thread, "vw-exec", -1);
    f->exec_started = true;
    return VW_OK;
}

size_t vw_flow_room(const vw_flow *f) {
    return vw_lane_room(f->lane);
}

void vw_flow_flush(vw_flow *f, int64_t now) {
    vw_batcher_flush(f->batcher, now);
}

int64_t vw_flow_next_due(const vw_flow *f) {
    int64_t t = INT64_MAX;
    if (!f->held && can_dispatch(f))
        t = vw_batcher_deadline(f->batcher);
    for (size_t i = 0; i < f->n_retry; i++)
        if (f->retry[i]->due_ms < t)
            t = f->retry[i]->due_ms;
    return t;
}

size_t vw_flow_flights(const vw_flow *f) {
    return f->n_flights;
}

bool vw_flow_idle(const vw_flow *f) {
    return !vw_lane_busy(f->lane) && !f->held && !f->n_retry && !vw_batcher_pending(f->batcher) &&
           !f->n_flights;
}

void vw_flow_stop(vw_flow *f) {
    vw_lane_stop(f->lane);
    /* The executor drains to_exec into to_finish and closes it; the
     * processing threads drain that into from_exec (never full: see new). */
    vw_queue_close(f->to_exec);
    if (f->exec_started)
        pthread_join(f->exec_thread, NULL);
    else
        vw_queue_close(f->to_finish);
    f->exec_started = false;
    for (; f->pool_started > 0; f->pool_started--)
        pthread_join(f->pool[f->pool_started - 1], NULL);
    vw_flow_collect(f);
}

void vw_flow_free(vw_flow *f) {
    if (!f)
        return;
    if (f->exec_started || f->pool_started)
        vw_flow_stop(f);
    vw_lane_free(f->lane);
    vw_batch_free(f->held, vw_item_free_cb);
    vw_batcher_free(f->batcher, vw_item_free_cb);
    for (size_t i = 0; i < f->n_retry; i++)
        vw_item_free(f->retry[i]);
    free(f->retry);
    vw_queue_free(f->to_exec, flight_free_cb);
    vw_queue_free(f->to_finish, flight_free_cb);
    vw_queue_free(f->from_exec, flight_free_cb);
    free(f->pool);
    free(f);
}
