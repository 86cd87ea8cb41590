/* worker.c — the worker's lifecycle and the Kafka thread's loop: start,
 * one turn (deliveries, intake, results, dispatch, produce, commit), the
 * SIGTERM drain, stop (see worker.h, docs/worker.md "Design"). The way of a
 * record is flow.c's; the clients are consumer.c and producer.c; replay's loop
 * is replay.c. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_conf.h"
#include "service/clock.h"
#include "source_conf.h"
#include "worker_impl.h"

enum { IDLE_POLL_MS = 100 };

/* ---- the loop ---------------------------------------------------------------- */

static int timeout_ms(struct vw_worker *w, int64_t now) {
    int64_t t = IDLE_POLL_MS, d = vw_batcher_deadline(w->batcher);
    if (!w->held && vw_flow_can_dispatch(w) && d - now < t)
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

/* The brokers the consumer was given. */
static const char *bootstrap(const vw_config *cfg) {
    const char *b = vw_kafka_consumer_prop(cfg, "bootstrap.servers");
    return b ? b : "(none)";
}

/* No broker answered within delivery.start_timeout_ms of the start: the worker
 * says why (librdkafka's last reason, e.g. a protocol answer this librdkafka
 * cannot parse) and stops with exit 1 instead of retrying in silence. */
static void check_broker(struct vw_worker *w, int64_t now) {
    int64_t limit = w->cfg->delivery.start_timeout_ms;
    const vw_kafka_health *c = vw_source_health(w->source), *p = vw_sink_health(w->sink);
    if (c->up || p->up || limit <= 0 || now - w->started_ms < limit || vw_fault_raised(&w->fault))
        return;
    /* librdkafka's last reason, from either client. */
    const char *last = p->error_ms > c->error_ms ? p->error : c->error;
    char kv[128];
    vw_kafka_versions(kv, sizeof kv);
    bool protocol = strstr(last, "ApiVersion") != NULL;
    VW_LOG(w->log, VW_LOG_ERROR, "worker",
           "no Kafka broker answered within delivery.start_timeout_ms, stopping bootstrap=%s "
           "start_timeout_ms=%lld librdkafka=\"%s\" last_error=\"%s\" hint=\"%s\"",
           bootstrap(w->cfg), (long long)limit, kv, last[0] ? last : "none reported",
           protocol ? "this librdkafka cannot read the broker's protocol answer (ApiVersions); "
                      "a newer librdkafka may (docs/worker.md \"librdkafka versions\")"
                    : "check bootstrap.servers, the network and the broker's listeners");
    VW_RAISE(&w->fault, VW_EKAFKA, "broker_timeout",
             "no Kafka broker answered within delivery.start_timeout_ms (%lld ms), bootstrap=%s "
             "last_error=\"%s\"",
             (long long)limit, bootstrap(w->cfg), last[0] ? last : "none reported");
}

/* Hands the sink what it may produce: the failed deliveries it keeps, then
 * every result the ledger has ready, in partition order. */
static void produce_ready(struct vw_worker *w) {
    vw_offset_pos pos;
    vw_sink_redo(w->sink);
    while (!vw_sink_dead(w->sink) && vw_offsets_next_ready(w->tracker, &pos))
        vw_sink_produce(w->sink, pos.result);
}

/* Partitions being revoked still have results on the way: in the executor,
 * or produced and not yet acknowledged. */
static bool revoked_busy(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts) {
    if (vw_sink_dead(w->sink))
        return false; /* nothing more will be acknowledged: queued results were purged */
    if (w->n_flights)
        return true;
    for (int i = 0; i < parts->cnt; i++)
        if (vw_offsets_unacked(w->tracker, parts->elems[i].topic, parts->elems[i].partition))
            return true;
    return false;
}

/* The source's settle hook (source.h): before a revoke's commit, collect,
 * produce and serve deliveries until the revoked partitions' results are
 * acknowledged or deadline_ms. Runs inside the rebalance callback. */
static void on_settle(void *ctx, const rd_kafka_topic_partition_list_t *parts,
                      int64_t deadline_ms) {
    struct vw_worker *w = ctx;
    if (!w->sink)
        return; /* a revoke at the close of a start that failed before the sink opened */
    for (;;) {
        vw_flow_collect(w);
        produce_ready(w);
        if (!revoked_busy(w, parts) || vw_now_ms() >= deadline_ms)
            break;
        vw_sink_poll(w->sink, 10);
    }
}

/* The source's record hook: a consumed record goes to the flow, unless it is
 * outside its replay range. */
static void on_record(void *ctx, const rd_kafka_message_t *m) {
    struct vw_worker *w = ctx;
    const vw_range *r = vw_range_of(w, m->partition);
    if (r && (m->offset < r->start || m->offset >= r->end))
        return;
    vw_flow_intake(w, m);
}

/* The source's drop hook: a revoked partition's queued work goes. */
static void on_drop(void *ctx, int32_t partition) {
    vw_flow_drop_partition(ctx, partition);
}

const vw_range *vw_range_of(const struct vw_worker *w, int32_t partition) {
    for (size_t i = 0; i < w->n_ranges; i++)
        if (w->ranges[i].partition == partition)
            return &w->ranges[i];
    return NULL;
}

/* One turn of the Kafka thread; its CPU time goes to the stages of metrics.h
 * (admission and plan are the admission threads', flow.c). */
static void turn(struct vw_worker *w, int wait) {
    wait_and_drain(w, w->more ? 0 : wait);
    w->turn_ms = vw_now_ms();
    /* Delivery reports first: they make room under limits.max_in_flight, and
     * the record queue's I/O event does not fire again for records that were
     * already waiting while intake was stopped. */
    double c0 = vw_thread_cpu_s();
    vw_sink_poll(w->sink, 0);
    double c1 = vw_thread_cpu_s();
    w->more = vw_source_poll(w->source, vw_flow_admit_room(w));
    vw_flow_admitted(w);
    vw_metrics_stage(w->metrics, VW_S_INTAKE, vw_thread_cpu_s() - c1);
    vw_flow_collect(w);
    int64_t now = vw_now_ms();
    vw_flow_requeue_due(w, now);
    if (w->stopping)
        vw_batcher_flush(w->batcher, now);
    vw_flow_dispatch(w, now);
    double c3 = vw_thread_cpu_s();
    produce_ready(w);
    double c4 = vw_thread_cpu_s();
    vw_metrics_stage(w->metrics, VW_S_PRODUCE, (c1 - c0) + (c4 - c3));
    if (!w->replay && now >= w->next_commit_ms) {
        vw_source_commit(w->source, false);
        w->next_commit_ms = now + w->cfg->delivery.commit_interval_ms;
        vw_metrics_stage(w->metrics, VW_S_COMMIT, vw_thread_cpu_s() - c4);
    }
    if (!w->replay && !w->stopping && now >= w->next_route_ms) {
        vw_source_reroute(w->source);
        w->next_route_ms = now + 1000;
    }
    check_broker(w, now);
    vw_metrics_set_in_flight(w->metrics, (int64_t)vw_offsets_in_flight(w->tracker, NULL, 0));
}

void vw_worker_step(struct vw_worker *w) {
    turn(w, timeout_ms(w, vw_now_ms()));
}

bool vw_worker_idle(struct vw_worker *w) {
    return vw_offsets_in_flight(w->tracker, NULL, 0) == 0 && !w->n_admitting && !w->held &&
           !w->n_retry && !vw_sink_pending(w->sink) && !vw_batcher_pending(w->batcher) &&
           !w->n_flights;
}

vw_status vw_worker_start(struct vw_worker *w, vw_err *err) {
    w->started_ms = vw_now_ms();
    w->started = true;
    vw_source_opts so = {.cfg = w->cfg,
                         .log = w->log,
                         .metrics = w->metrics,
                         .ledger = w->tracker,
                         .fault = &w->fault,
                         .crash = &w->crash,
                         .topic = w->topic,
                         .replay = w->replay,
                         .wake_fd = w->wake[1],
                         .hooks = {w, on_record, on_drop, on_settle}};
    vw_status st = vw_source_open(&so, &w->source, err);
    if (!st) {
        vw_sink_opts o = {.cfg = w->cfg,
                          .log = w->log,
                          .proc = w->proc,
                          .metrics = w->metrics,
                          .ledger = w->tracker,
                          .fault = &w->fault,
                          .crash = &w->crash,
                          .topic = w->topic,
                          .results_topic = w->results_topic,
                          .file = w->replay_out,
                          .replay = w->replay,
                          .wake_fd = w->wake[1]};
        st = vw_sink_open(&o, &w->sink, err);
    }
    if (st)
        return st;
    for (; w->pool_started < w->n_pool; w->pool_started++)
        if (pthread_create(&w->pool[w->pool_started], NULL, vw_flow_finish_main, w))
            return VW_FAIL(err, VW_EIO, "thread", "cannot start processing thread %zu",
                           w->pool_started);
    for (; w->admit_started < w->n_pool; w->admit_started++)
        if (pthread_create(&w->admitters[w->admit_started], NULL, vw_flow_admit_main, w))
            return VW_FAIL(err, VW_EIO, "thread", "cannot start admission thread %zu",
                           w->admit_started);
    if (pthread_create(&w->exec_thread, NULL, vw_flow_exec_main, w))
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
    vw_source_stop_fetching(w->source, w->stop_deadline_ms);
    while (!vw_fault_raised(&w->fault) && !vw_worker_idle(w) && vw_now_ms() < w->stop_deadline_ms)
        turn(w, 10);
    if (!w->replay)
        vw_source_commit(w->source, true);
    VW_LOG(w->log, VW_LOG_INFO, "worker", "drained in_flight=%zu elapsed_ms=%lld",
           vw_offsets_in_flight(w->tracker, NULL, 0), (long long)(vw_now_ms() - t0));
}

/* Closes the clients and the executor, in the order the commit rule needs. */
void vw_worker_stop(struct vw_worker *w) {
    w->stopping = true;
    if (!w->stop_deadline_ms)
        w->stop_deadline_ms = vw_now_ms() + w->cfg->shutdown.grace_ms;
    if (w->n_flights && (vw_fault_raised(&w->fault) || vw_now_ms() >= w->stop_deadline_ms) &&
        w->proc->ops->cancel) {
        /* The grace period is over (or the worker failed): the device work at
         * hand stops at its next tree, so the process exits in time; those
         * records are neither produced nor committed (the next owner reads
         * them again). */
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "grace period over, cancelling the work in flight batches=%zu in_flight=%zu",
               w->n_flights, vw_offsets_in_flight(w->tracker, NULL, 0));
        w->proc->ops->cancel(w->proc);
    }
    if (w->source) /* a revoke may still produce and commit */
        vw_source_close(w->source, w->stop_deadline_ms);
    vw_flow_stop_admission(w);
    /* The executor drains to_exec into to_finish and closes it; the
     * processing threads drain that into from_exec (never full: see new). */
    vw_queue_close(w->to_exec);
    if (w->exec_started)
        pthread_join(w->exec_thread, NULL);
    else
        vw_queue_close(w->to_finish);
    w->exec_started = false;
    for (; w->pool_started > 0; w->pool_started--)
        pthread_join(w->pool[w->pool_started - 1], NULL);
    vw_flow_collect(w);
    if (w->sink)
        vw_sink_close(w->sink, w->stop_deadline_ms);
    w->started = false;
}

/* ---- the start check (worker.h) ---------------------------------------------- */

/* librdkafka's error lines while a check client is created (the SSL reasons
 * name the file there) go to the worker's log; debug lines and CONFWARN
 * (which the real clients log again) are dropped. */
static void check_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    const vw_log *log = rd_kafka_opaque(rk);
    if (level <= 3)
        VW_LOG(log, VW_LOG_ERROR, "librdkafka", "%s client=%s facility=%s", buf, rd_kafka_name(rk),
               fac);
}

/* Creates a client of conf (taken) without brokers or callbacks but the log,
 * and destroys it at once. */
static vw_status check_client(const vw_config *cfg, const vw_log *log, rd_kafka_type_t type,
                              rd_kafka_conf_t *conf, vw_err *err) {
    char errstr[512];
    vw_status st = vw_kafka_conf_set(conf, "bootstrap.servers", "", err);
    if (st) {
        rd_kafka_conf_destroy(conf);
        return st;
    }
    rd_kafka_conf_set_opaque(conf, (void *)log);
    rd_kafka_conf_set_log_cb(conf, check_log);
    rd_kafka_conf_set_error_cb(conf, NULL);
    rd_kafka_conf_set_stats_cb(conf, NULL);
    rd_kafka_conf_set_dr_msg_cb(conf, NULL);
    rd_kafka_conf_set_rebalance_cb(conf, NULL);
    rd_kafka_conf_set_offset_commit_cb(conf, NULL);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return vw_kafka_client_error(cfg, type == RD_KAFKA_CONSUMER ? "consumer" : "producer",
                                     errstr, err);
    }
    /* Never subscribed, no broker: nothing to leave. */
    rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    return VW_OK;
}

vw_status vw_worker_check(const vw_config *cfg, const vw_log *log, bool replay, vw_err *err) {
    rd_kafka_conf_t *cc = rd_kafka_conf_new(), *pc = rd_kafka_conf_new();
    vw_status st = cc && pc ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "start check");
    if (!st)
        st = vw_source_conf(cfg, replay, cc, NULL, err);
    if (!st) {
        st = check_client(cfg, log, RD_KAFKA_CONSUMER, cc, err);
        cc = NULL; /* taken */
    }
    if (!st)
        st = vw_sink_conf(cfg, pc, err);
    if (!st) {
        st = check_client(cfg, log, RD_KAFKA_PRODUCER, pc, err);
        pc = NULL;
    }
    if (cc)
        rd_kafka_conf_destroy(cc);
    if (pc)
        rd_kafka_conf_destroy(pc);
    return st;
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
    vw_fault_init(&w->fault, metrics);
    if (vw_crashpoint_init(&w->crash, getenv("VW_CRASH_AT"), err)) {
        vw_fault_destroy(&w->fault);
        free(w);
        return VW_EINVAL;
    }
    w->tracker = vw_offsets_new(vw_item_free_cb);
    w->batcher = vw_batcher_new(cfg->batching.max_tokens, cfg->batching.max_requests,
                                cfg->batching.max_wait_ms);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    w->n_pool = cfg->processing.threads > 0 ? (size_t)cfg->processing.threads
                : cpus > 0                  ? (size_t)cpus
                                            : 1;
    w->pool = calloc(w->n_pool, sizeof *w->pool);
    w->admitters = calloc(w->n_pool, sizeof *w->admitters);
    /* Intake stops at limits.max_in_flight tracked records (replay: at this
     * many in the lane), so both queues of the lane have room for all. */
    w->admit_cap = (size_t)cfg->limits.max_in_flight;
    w->to_admit = vw_queue_new(w->admit_cap);
    w->from_admit = vw_queue_new(w->admit_cap);
    w->to_exec = vw_queue_new(EXEC_QUEUE);
    w->to_finish = vw_queue_new(w->n_pool);
    /* Room for every flight that can be past prepare at once (queued for and
     * in the executor, queued for and in processing), so a processing thread
     * never blocks on it and stop() can join them before collecting. */
    w->max_flights = EXEC_QUEUE + 1 + 2 * w->n_pool;
    w->from_exec = vw_queue_new(w->max_flights);
    if (!w->tracker || !w->batcher || !w->pool || !w->to_exec || !w->to_finish || !w->from_exec ||
        !w->admitters || !w->to_admit || !w->from_admit) {
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
    vw_status st = vw_worker_start(w, err);
    if (st) {
        vw_worker_stop(w);
        return st;
    }
    char kv[128];
    vw_kafka_versions(kv, sizeof kv);
    VW_LOG(w->log, VW_LOG_INFO, "worker",
           "running topic=%s results=%s processor=%s librdkafka=\"%s\"", w->topic, w->results_topic,
           w->proc->ops->name, kv);
    while (!*stop_flag && !vw_fault_raised(&w->fault))
        vw_worker_step(w);
    if (!vw_fault_raised(&w->fault))
        drain(w);
    vw_worker_stop(w);
    /* The first cause (fault.h): the caller's last log line names it. */
    return vw_fault_cause(&w->fault, err);
}

void vw_worker_free(vw_worker *w) {
    if (!w)
        return;
    if (w->started)
        vw_worker_stop(w);
    vw_batch_free(w->held, vw_item_free_cb);
    vw_batcher_free(w->batcher, vw_item_free_cb);
    for (size_t i = 0; i < w->n_retry; i++)
        vw_item_free(w->retry[i]);
    free(w->retry);
    vw_sink_free(w->sink);
    vw_queue_free(w->to_exec, vw_flow_flight_free_cb);
    vw_queue_free(w->to_finish, vw_flow_flight_free_cb);
    vw_queue_free(w->from_exec, vw_flow_flight_free_cb);
    vw_queue_free(w->to_admit, vw_item_free_cb);
    vw_queue_free(w->from_admit, vw_item_free_cb);
    free(w->pool);
    free(w->admitters);
    vw_source_free(w->source);
    vw_offsets_free(w->tracker);
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    free(w->ranges);
    vw_fault_destroy(&w->fault);
    free(w);
}
