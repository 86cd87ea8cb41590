/* worker.c — the loop: the Kafka thread's turn and the worker's life cycle
 * (start, the SIGTERM drain, stop; see worker.h, docs/worker.md "Design").
 * It owns the three units and is the only place that moves a record from one
 * to the next: the source hands it each consumed record through the hooks it
 * installs (record, drop, settle), the flow turns it into a result in the
 * ledger, and the loop hands the ledger's ready results to the sink. It also
 * owns the ledger (offsets.h, lent to the units), the fault record, the wake
 * pipe and replay's ranges (replay's own steps are replay.c's). */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "flow.h"
#include "kafka_conf.h"
#include "offsets.h"
#include "replay.h"
#include "service/clock.h"
#include "service/crashpoint.h"
#include "sink.h"
#include "source.h"
#include "source_conf.h"

enum {
    IDLE_POLL_MS = 100,
    STOP_RESERVE_MS = 3000, /* the most of the grace period kept for the stop itself */
};

/* The worker. Everything here is the Kafka thread's (vw_worker_run's caller)
 * but what the units say of their own threads (flow.h, source.h); the wake
 * pipe is written by librdkafka (queue I/O events) and the flow's threads,
 * read by the Kafka thread. */
struct vw_worker {
    const vw_config *cfg;
    const vw_log *log;
    vw_processor *proc;
    vw_metrics *metrics;
    const char *topic;   /* input topic (config-owned) */
    vw_source *source;   /* the consumer side (source.h) */
    vw_flow *flow;       /* records to results (flow.h) */
    vw_sink *sink;       /* the producer side (sink.h) */
    vw_txn *txn;         /* exactly_once: the sink's transactions (txn.h, borrowed); else NULL */
    vw_offsets *ledger;  /* per-partition order and commits, lent to the units */
    vw_fault fault;      /* the first cause that stops the worker (fault.h) */
    vw_crashpoint crash; /* VW_CRASH_AT test hook (crashpoint.h), lent to the units */
    int wake[2];         /* non-blocking pipe: [0] polled by the loop, [1] the units' */
    bool started;        /* vw_worker_start ran: stop is due */
    bool stopping;
    bool more;       /* the last turn left work queued: do not sleep */
    int64_t turn_ms; /* vw_now_ms() at the start of this turn (admission times) */
    int64_t next_commit_ms;
    int64_t next_route_ms;    /* vw_source_reroute: every assigned partition routed again */
    int64_t stop_deadline_ms; /* while stopping: the end of the grace period */
    int64_t started_ms;       /* when the clients were opened */
    /* the stop: what vw_worker_stop_report tells */
    vw_worker_stop_report report;
    int64_t signal_ms;        /* when the stop was asked for (0: not asked) */
    uint64_t acked_at_signal; /* vw_offsets_acked then */
    size_t left_at_drain;     /* in flight when the drain ended */
    uint64_t acked_at_drain;  /* vw_offsets_acked then */
    /* replay mode (vw_worker_replay) */
    bool replay;
    vw_range *ranges;
    size_t n_ranges;
    FILE *replay_out; /* JSONL output instead of a results topic, or NULL */
    const char *results_topic;
};

/* ---- moving records: the units' hooks and the hand-over to the sink -------- */

/* The source's record hook: a consumed record goes to the flow, unless it is
 * outside its replay range. */
static void on_record(void *ctx, const rd_kafka_message_t *m) {
    struct vw_worker *w = ctx;
    const vw_range *r = vw_replay_range_of(w->ranges, w->n_ranges, m->partition);
    if (r && (m->offset < r->start || m->offset >= r->end))
        return;
    vw_flow_intake(w->flow, m, w->turn_ms);
}

/* The source's unreadable hook: a record librdkafka cannot hand over gets
 * its dead letter (unless outside its replay range). */
static void on_unreadable(void *ctx, int32_t partition, int64_t offset, rd_kafka_resp_err_t e,
                          const char *reason) {
    struct vw_worker *w = ctx;
    const vw_range *r = vw_replay_range_of(w->ranges, w->n_ranges, partition);
    if (r && (offset < r->start || offset >= r->end))
        return;
    vw_flow_unreadable(w->flow, partition, offset, rd_kafka_err2name(e), reason, w->turn_ms);
}

/* The source's drop hook: a revoked partition's queued work goes. */
static void on_drop(void *ctx, int32_t partition) {
    struct vw_worker *w = ctx;
    vw_flow_drop_partition(w->flow, partition);
}

/* Hands the sink what it may produce: the failed deliveries it keeps, then
 * every result the ledger has ready, in partition order. */
static void produce_ready(struct vw_worker *w) {
    vw_offset_pos pos;
    if (w->txn && !vw_txn_ready(w->txn, vw_now_ms()))
        return; /* a failed transaction is aborted first; after an abort, its pause */
    vw_sink_redo(w->sink);
    while (!vw_sink_dead(w->sink) && vw_offsets_next_ready(w->ledger, &pos))
        vw_sink_produce(w->sink, pos.result);
}

/* Partitions being revoked still have results on the way: in the executor,
 * or produced and not yet acknowledged. */
static bool revoked_busy(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts) {
    if (vw_sink_dead(w->sink))
        return false; /* nothing more will be acknowledged: queued results were purged */
    if (vw_flow_flights(w->flow))
        return true;
    for (int i = 0; i < parts->cnt; i++)
        if (vw_offsets_unacked(w->ledger, parts->elems[i].topic, parts->elems[i].partition))
            return true;
    return false;
}

/* Exactly once: something for a transaction to do — records in one, records
 * to produce again, or offsets acknowledged and not committed. */
static bool txn_pending(struct vw_worker *w) {
    return w->txn && (vw_txn_busy(w->txn) || vw_offsets_commits(w->ledger, NULL, 0));
}

/* Exactly once: commits the open transaction with the consumer's group
 * metadata (txn.h); deadline_ms < 0: librdkafka's limits. True when nothing
 * is left uncommitted. */
static bool commit_txn(struct vw_worker *w, int64_t deadline_ms) {
    if (!txn_pending(w))
        return true;
    rd_kafka_consumer_group_metadata_t *gmd = vw_source_group_metadata(w->source);
    bool ok = vw_txn_commit(w->txn, gmd, deadline_ms);
    if (gmd)
        rd_kafka_consumer_group_metadata_destroy(gmd);
    return ok && !txn_pending(w);
}

/* Exactly once, in the revoke settle: the revoked partitions' offsets go with
 * the transaction that holds their results, so it ends before they go:
 * committed (records to produce again first, after an abort) or, when that
 * cannot be done in time or the worker failed, aborted. A revoke's commit has
 * librdkafka's limits; a stop's, the grace period (at least a second). */
static void settle_txn(struct vw_worker *w) {
    int64_t deadline = -1;
    if (w->stopping) {
        deadline = w->stop_deadline_ms;
        if (deadline < vw_now_ms() + 1000)
            deadline = vw_now_ms() + 1000;
    }
    for (int i = 0; i < 100 && !vw_fault_raised(&w->fault); i++) {
        if (commit_txn(w, deadline) || (deadline >= 0 && vw_now_ms() >= deadline))
            break;
        int64_t due = vw_txn_due(w->txn) - vw_now_ms();
        vw_sink_poll(w->sink, due > 0 ? (int)(due < 100 ? due : 100) : 0);
        produce_ready(w);
    }
    vw_txn_abort(w->txn, deadline); /* what is still open (a no-op when committed) */
}

/* The source's settle hook (source.h): before a revoke's commit, collect,
 * produce and serve deliveries until the revoked partitions' results are
 * acknowledged or deadline_ms (exactly_once: then the transaction ends).
 * Runs inside the rebalance callback. */
static void on_settle(void *ctx, const rd_kafka_topic_partition_list_t *parts,
                      int64_t deadline_ms) {
    struct vw_worker *w = ctx;
    if (!w->sink)
        return; /* a revoke at the close of a start that failed before the sink opened */
    for (;;) {
        vw_flow_collect(w->flow);
        produce_ready(w);
        if (!revoked_busy(w, parts) || vw_now_ms() >= deadline_ms)
            break;
        vw_sink_poll(w->sink, 10);
    }
    if (w->txn)
        settle_txn(w);
}

/* The source's lost hook: the partitions may be another member's already, so
 * the open transaction (which may hold their results) is aborted; the records
 * of the partitions kept are produced again. */
static void on_lost(void *ctx, const rd_kafka_topic_partition_list_t *parts) {
    struct vw_worker *w = ctx;
    (void)parts;
    if (w->txn)
        vw_txn_abort(w->txn, -1);
}

/* ---- the turn ----------------------------------------------------------------- */

static int timeout_ms(struct vw_worker *w, int64_t now) {
    int64_t t = IDLE_POLL_MS, d = vw_flow_next_due(w->flow);
    if (d - now < t)
        t = d - now;
    if (!w->replay && !w->txn && w->next_commit_ms - now < t)
        t = w->next_commit_ms - now;
    if (w->txn && vw_txn_redo_count(w->txn) && vw_txn_due(w->txn) - now < t)
        t = vw_txn_due(w->txn) - now; /* the redo after an abort */
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
                      "a newer librdkafka may (docs/operations.md \"librdkafka versions\")"
                    : "check bootstrap.servers, the network and the broker's listeners");
    VW_RAISE(&w->fault, VW_EKAFKA, "broker_timeout",
             "no Kafka broker answered within delivery.start_timeout_ms (%lld ms), bootstrap=%s "
             "last_error=\"%s\"",
             (long long)limit, bootstrap(w->cfg), last[0] ? last : "none reported");
}

/* One turn of the Kafka thread; its CPU time goes to the stages of metrics.h
 * (admission and plan are the admission threads', lane.c). */
static void turn(struct vw_worker *w, int wait) {
    wait_and_drain(w, w->more ? 0 : wait);
    w->turn_ms = vw_now_ms();
    /* Delivery reports first: they make room under limits.max_in_flight, and
     * the record queue's I/O event does not fire again for records that were
     * already waiting while intake was stopped. */
    double c0 = vw_thread_cpu_s();
    vw_sink_poll(w->sink, 0);
    double c1 = vw_thread_cpu_s();
    w->more = vw_source_poll(w->source, vw_flow_room(w->flow));
    vw_flow_admitted(w->flow);
    vw_metrics_stage(w->metrics, VW_S_INTAKE, vw_thread_cpu_s() - c1);
    vw_flow_collect(w->flow);
    int64_t now = vw_now_ms();
    vw_flow_requeue_due(w->flow, now);
    if (w->stopping)
        vw_flow_flush(w->flow, now);
    vw_flow_dispatch(w->flow, now);
    double c3 = vw_thread_cpu_s();
    produce_ready(w);
    double c4 = vw_thread_cpu_s();
    vw_metrics_stage(w->metrics, VW_S_PRODUCE, (c1 - c0) + (c4 - c3));
    if (w->txn) {
        /* The transaction of what this turn produced, with its offsets; while
         * this member rejoins its group it stays open (offsets sent now could
         * carry the generation that ends: ILLEGAL_GENERATION, an abort). */
        if (!vw_source_rebalancing(w->source))
            commit_txn(w, w->stopping ? w->stop_deadline_ms : -1);
        vw_metrics_stage(w->metrics, VW_S_COMMIT, vw_thread_cpu_s() - c4);
    } else if (!w->replay && now >= w->next_commit_ms) {
        vw_source_commit(w->source, false);
        w->next_commit_ms = now + w->cfg->delivery.commit_interval_ms;
        vw_metrics_stage(w->metrics, VW_S_COMMIT, vw_thread_cpu_s() - c4);
    }
    if (!w->replay && !w->stopping && now >= w->next_route_ms) {
        vw_source_reroute(w->source);
        w->next_route_ms = now + 1000;
    }
    check_broker(w, now);
    vw_metrics_set_in_flight(w->metrics, (int64_t)vw_offsets_in_flight(w->ledger, NULL, 0));
}

/* One turn, waiting at most until the next thing falls due. */
static void step(struct vw_worker *w) {
    turn(w, timeout_ms(w, vw_now_ms()));
}

/* Nothing in flight, queued, retrying or waiting to be produced again. */
static bool idle(struct vw_worker *w) {
    return vw_offsets_in_flight(w->ledger, NULL, 0) == 0 && vw_flow_idle(w->flow) &&
           !vw_sink_pending(w->sink) && !txn_pending(w);
}

/* ---- life cycle -------------------------------------------------------------- */

/* delivery.mode exactly_once, in run (replay has no group to commit to: its
 * results are produced without transactions). */
static bool exactly_once(const struct vw_worker *w) {
    return w->cfg->delivery.mode == VW_DELIVERY_EXACTLY_ONCE && !w->replay;
}

/* Exactly once: the producer's transactions are initialised before any
 * record is taken (a producer of the same transactional.id still alive is
 * fenced, its open transaction aborted), within delivery.start_timeout_ms. */
static vw_status init_txn(struct vw_worker *w, vw_err *err) {
    bool stable = false;
    char id[256];
    vw_txn_id(w->cfg, id, sizeof id, &stable);
    w->txn = vw_sink_txn(w->sink);
    if (!stable)
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "exactly_once without delivery.worker_id or group.instance.id: the "
               "transactional.id is this process's; a successor will not fence it, so a "
               "transaction left open by a crash holds read_committed readers of its partitions "
               "until transaction.timeout.ms transactional_id=%s",
               id);
    VW_LOG(w->log, VW_LOG_INFO, "worker",
           "delivery exactly_once: results and offsets in one transaction per micro-batch "
           "transactional_id=%s",
           id);
    int64_t limit = w->cfg->delivery.start_timeout_ms;
    return vw_txn_init(w->txn, limit > 0 ? w->started_ms + limit : -1, err);
}

/* Opens the clients, starts the flow's threads. */
static vw_status start(struct vw_worker *w, vw_err *err) {
    w->started_ms = vw_now_ms();
    w->started = true;
    vw_source_opts so = {.cfg = w->cfg,
                         .log = w->log,
                         .metrics = w->metrics,
                         .ledger = w->ledger,
                         .fault = &w->fault,
                         .crash = &w->crash,
                         .topic = w->topic,
                         .replay = w->replay,
                         .wake_fd = w->wake[1],
                         .hooks = {w, on_record, on_unreadable, on_drop, on_settle, on_lost},
                         .txn_offsets = exactly_once(w)};
    vw_status st = vw_source_open(&so, &w->source, err);
    if (!st) {
        vw_sink_opts o = {.cfg = w->cfg,
                          .log = w->log,
                          .proc = w->proc,
                          .metrics = w->metrics,
                          .ledger = w->ledger,
                          .fault = &w->fault,
                          .crash = &w->crash,
                          .topic = w->topic,
                          .results_topic = w->results_topic,
                          .file = w->replay_out,
                          .replay = w->replay,
                          .wake_fd = w->wake[1],
                          .transactions = exactly_once(w)};
        st = vw_sink_open(&o, &w->sink, err);
    }
    if (!st && exactly_once(w))
        st = init_txn(w, err);
    if (!st)
        st = vw_flow_start(w->flow, err);
    if (st)
        return st;
    bool ready = !w->proc->ops->ready || w->proc->ops->ready(w->proc);
    vw_metrics_set_ready(w->metrics, ready);
    return VW_OK;
}

/* Records answered since the stop was asked for. */
static uint64_t answered(const struct vw_worker *w) {
    return vw_offsets_acked(w->ledger) - w->acked_at_signal;
}

/* SIGTERM: stop fetching, finish what is in flight within the grace period
 * (saying so every second), commit what was delivered. A second signal
 * (*stop_flag 2) ends the wait at once: the grace period is over now. */
static void drain(struct vw_worker *w, volatile sig_atomic_t *stop_flag) {
    int64_t t0 = vw_now_ms(), next_note = t0 + 1000;
    size_t in_flight = vw_offsets_in_flight(w->ledger, NULL, 0);
    w->stopping = true;
    w->signal_ms = t0;
    w->acked_at_signal = vw_offsets_acked(w->ledger);
    w->report.in_flight_at_signal = in_flight;
    w->stop_deadline_ms = t0 + w->cfg->shutdown.grace_ms;
    VW_LOG(w->log, VW_LOG_INFO, "worker", "shutdown requested: grace %lld ms, in flight %zu",
           (long long)w->cfg->shutdown.grace_ms, in_flight);
    vw_source_stop_fetching(w->source, w->stop_deadline_ms);
    /* The last tenth of the grace period (at most STOP_RESERVE_MS) is the
     * stop's own: cancelling the device work at hand (it ends at its next
     * tree) and closing the clients, so the process exits within the grace
     * period (it exited 2.5 s after it, the device finishing its tree). */
    int64_t reserve = w->cfg->shutdown.grace_ms / 10;
    int64_t answer_until =
        w->stop_deadline_ms - (reserve < STOP_RESERVE_MS ? reserve : STOP_RESERVE_MS);
    while (!vw_fault_raised(&w->fault) && !idle(w) && vw_now_ms() < answer_until &&
           *stop_flag < 2) {
        turn(w, 10);
        if (vw_now_ms() >= next_note) {
            VW_LOG(w->log, VW_LOG_INFO, "worker",
                   "draining: answered %llu, left %zu elapsed_ms=%lld",
                   (unsigned long long)answered(w), vw_offsets_in_flight(w->ledger, NULL, 0),
                   (long long)(vw_now_ms() - t0));
            next_note += 1000;
        }
    }
    if (*stop_flag >= 2) {
        /* The operator's second signal: what is left stays unanswered and
         * uncommitted (the commit below, the consumer's close and the
         * sink's follow the ledger: nothing past an unanswered record). */
        w->report.end = VW_STOP_AT_ONCE;
        w->stop_deadline_ms = vw_now_ms();
        vw_source_stop_fetching(w->source, w->stop_deadline_ms);
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "second stop signal: stopping at once, left %zu elapsed_ms=%lld",
               vw_offsets_in_flight(w->ledger, NULL, 0), (long long)(vw_now_ms() - t0));
    } else if (!idle(w)) {
        w->report.end = VW_STOP_GRACE_OVER;
    }
    w->left_at_drain = vw_offsets_in_flight(w->ledger, NULL, 0);
    w->acked_at_drain = vw_offsets_acked(w->ledger);
    if (!w->replay)
        vw_source_commit(w->source, true);
    if (w->txn && !vw_fault_raised(&w->fault)) /* not committed within the grace period */
        vw_txn_abort(w->txn,
                     w->stop_deadline_ms > vw_now_ms() ? w->stop_deadline_ms : vw_now_ms() + 1000);
}

/* The last line: what the stop came to (after stop()). */
static void stopped(struct vw_worker *w) {
    vw_worker_stop_report *r = &w->report;
    r->answered = answered(w);
    /* those the drain left, less what the closes still answered */
    uint64_t late = vw_offsets_acked(w->ledger) - w->acked_at_drain;
    r->unanswered = w->left_at_drain > late ? w->left_at_drain - (size_t)late : 0;
    if (r->end == VW_STOP_DRAINED && r->unanswered)
        r->end = VW_STOP_GRACE_OVER; /* e.g. a revoke during the drain took some */
    r->elapsed_ms = vw_now_ms() - w->signal_ms;
    static const char *const ends[] = {"drained", "grace_period_over", "second_signal"};
    VW_LOG(w->log, r->unanswered ? VW_LOG_WARN : VW_LOG_INFO, "worker",
           "stopped: answered %llu, left unanswered %zu%s end=%s elapsed_ms=%lld grace_ms=%lld",
           (unsigned long long)r->answered, r->unanswered,
           r->unanswered ? " (not committed: the group answers them)" : "", ends[r->end],
           (long long)r->elapsed_ms, (long long)w->cfg->shutdown.grace_ms);
}

/* Closes the clients and the flow, in the order the commit rule needs: the
 * source first (its last revoke may still produce and commit), the flow's
 * threads next, the sink last. */
static void stop(struct vw_worker *w) {
    w->stopping = true;
    if (!w->stop_deadline_ms)
        w->stop_deadline_ms = vw_now_ms() + w->cfg->shutdown.grace_ms;
    size_t flights = vw_flow_flights(w->flow);
    if (flights &&
        (vw_fault_raised(&w->fault) || vw_now_ms() >= w->stop_deadline_ms ||
         w->report.end != VW_STOP_DRAINED) &&
        w->proc->ops->cancel) {
        /* The grace period is over (or the worker failed): the device work at
         * hand stops at its next tree, so the process exits in time; those
         * records are neither produced nor committed (the next owner reads
         * them again). */
        VW_LOG(w->log, VW_LOG_WARN, "worker",
               "%s, cancelling the work in flight batches=%zu in_flight=%zu",
               w->report.end == VW_STOP_AT_ONCE ? "stopping at once" : "grace period over", flights,
               vw_offsets_in_flight(w->ledger, NULL, 0));
        w->proc->ops->cancel(w->proc);
    }
    if (w->source)
        vw_source_close(w->source, w->stop_deadline_ms);
    vw_flow_stop(w->flow);
    if (w->sink)
        vw_sink_close(w->sink, w->stop_deadline_ms);
    w->started = false;
}

/* ---- the start check (worker.h) ------------------------------------------- */

/* librdkafka's error lines while a check client is created (the SSL reasons
 * name the file there) go to the worker's log; debug lines and CONFWARN
 * (which the real clients log again) are dropped. */
/* [thread: librdkafka] */
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
    if (!st && !replay && cfg->delivery.mode == VW_DELIVERY_EXACTLY_ONCE)
        st = vw_txn_conf(cfg, pc, err);
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
    if (pipe2(w->wake, O_NONBLOCK | O_CLOEXEC)) {
        vw_worker_free(w);
        return VW_FAIL(err, VW_EIO, "pipe", "wake pipe: %s", strerror(errno));
    }
    w->ledger = vw_offsets_new(vw_item_free_cb);
    if (!w->ledger) {
        vw_worker_free(w);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "worker");
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    vw_flow_opts fo = {.cfg = cfg,
                       .log = log,
                       .proc = proc,
                       .metrics = metrics,
                       .ledger = w->ledger,
                       .fault = &w->fault,
                       .crash = &w->crash,
                       .topic = w->topic,
                       .threads = cfg->processing.threads > 0 ? (size_t)cfg->processing.threads
                                  : cpus > 0                  ? (size_t)cpus
                                                              : 1,
                       .wake_fd = w->wake[1]};
    vw_status st = vw_flow_new(&fo, &w->flow, err);
    if (st) {
        vw_worker_free(w);
        return st;
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
    char kv[128];
    vw_kafka_versions(kv, sizeof kv);
    VW_LOG(w->log, VW_LOG_INFO, "worker",
           "running topic=%s results=%s processor=%s librdkafka=\"%s\"", w->topic, w->results_topic,
           w->proc->ops->name, kv);
    while (!*stop_flag && !vw_fault_raised(&w->fault))
        step(w);
    if (!vw_fault_raised(&w->fault))
        drain(w, stop_flag);
    stop(w);
    /* The first cause (fault.h): the caller's last log line names it. */
    st = vw_fault_cause(&w->fault, err);
    if (!st)
        stopped(w);
    return st;
}

void vw_worker_stop_report_get(const vw_worker *w, vw_worker_stop_report *out) {
    *out = w->report;
}

vw_status vw_worker_replay(vw_worker *w, const vw_replay_range *ranges, size_t n_ranges, FILE *out,
                           const char *results_topic, volatile sig_atomic_t *stop_flag,
                           vw_err *err) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n_ranges + 1);
    w->replay = true;
    w->replay_out = out;
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
    size_t total = 0;
    vw_status st = start(w, err);
    if (!st)
        st = vw_replay_assign(w->source, w->ledger, w->ranges, n_ranges, w->topic, w->log, l,
                              &total, err);
    int64_t t0 = vw_now_ms(), next_report = t0 + 1000; /* the first after a second */
    while (!st && !*stop_flag && !vw_fault_raised(&w->fault)) {
        step(w);
        bool done = (!l->cnt || vw_replay_consumed(w->source, w->ranges, n_ranges, l)) && idle(w);
        if (done || vw_now_ms() >= next_report) {
            vw_replay_progress(stderr, vw_sink_done(w->sink), total, t0, done);
            next_report = vw_now_ms() + 1000;
        }
        if (done)
            break;
    }
    vw_err cause = {0};
    if (!st && vw_fault_cause(&w->fault, &cause)) {
        /* The first cause (fault.h), its status kept. */
        vw_replay_progress(stderr, vw_sink_done(w->sink), total, t0, true);
        st = VW_FAIL(err, cause.status, "replay_stopped",
                     "replay stopped before the end (%zu of %zu records): %s (%s)",
                     vw_sink_done(w->sink), total, cause.msg, cause.type);
    } else if (!st && *stop_flag) {
        vw_replay_progress(stderr, vw_sink_done(w->sink), total, t0, true);
        st = VW_FAIL(err, VW_ETRANSIENT, "replay_stopped",
                     "replay stopped before the end (%zu of %zu records)", vw_sink_done(w->sink),
                     total);
    }
    stop(w);
    rd_kafka_topic_partition_list_destroy(l);
    return st;
}

void vw_worker_free(vw_worker *w) {
    if (!w)
        return;
    if (w->started)
        stop(w);
    vw_source_free(w->source);
    vw_flow_free(w->flow);
    vw_sink_free(w->sink);
    vw_offsets_free(w->ledger);
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    free(w->ranges);
    vw_fault_destroy(&w->fault);
    free(w);
}
