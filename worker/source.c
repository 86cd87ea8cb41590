/* source.c — the worker's source: client set-up, intake polling, the intake
 * hold, offset commits and the rebalance protocol (see source.h). Runs on the
 * Kafka thread (the log callback on librdkafka's threads); librdkafka serves
 * every other callback here from rd_kafka_consumer_poll. Never produces, and
 * reaches the loop only through the hooks it was given. */
#include "source.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "poison.h"
#include "service/clock.h"
#include "source_conf.h"
#include "rejoin.h"
#include "starts.h"

struct vw_source {
    vw_source_opts o;
    rd_kafka_t *rk;       /* NULL once closed */
    rd_kafka_queue_t *cq; /* the consumer queue: events (I/O events -> wake_fd) */
    rd_kafka_queue_t *mq; /* records of the assigned partitions ("Routing" below) */
    bool stopping;        /* shutdown: nothing taken, no restarts, assignments paused */
    int64_t stop_deadline_ms;
    bool intake_held; /* a rebalance may be running: no records taken (flow) */
    bool commit_in_flight;
    bool backpressure;         /* in-flight limit reached: records stay in librdkafka's queue */
    vw_starts starts;          /* input partitions assigned, not yet known to fetch (starts.h) */
    bool starts_check;         /* statistics arrived: look for partitions that never started */
    vw_rejoin rejoin;          /* the rebalance holds of commits and intake (rejoin.h) */
    bool wa_4312;              /* librdkafka < 2.3.0: destroy may abort (#4312) */
    bool assigned_once;        /* a rebalance callback came (see destroy_would_abort) */
    bool sticky_assignor;      /* partition.assignment.strategy may pick cooperative-sticky */
    atomic_int log_calls;      /* librdkafka threads inside the log callback */
    atomic_bool log_abandoned; /* the consumer was left undestroyed: its log callback is off */
    bool kafka_debug;          /* the user set librdkafka's `debug`: print its debug lines */
    vw_poison poison;          /* consume errors per partition (poison.h) */
    vw_kafka_health health;
};

static void route(vw_source *s, const rd_kafka_topic_partition_list_t *parts);

/* ---- callbacks (all on the Kafka thread) -------------------------------- */

/* The consumer's error callback (fault.h for a fatal one). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    vw_source *s = opaque;
    vw_kafka_error(rk, "consumer", err, reason, s->o.log, s->o.fault, &s->health);
}

/* A librdkafka log line [thread: librdkafka]: a join-state change goes to
 * the rebalance holds (rejoin.h); the line is printed as the user asked. */
static void log_line(vw_source *s, const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf) {
    vw_rejoin_log_line(&s->rejoin, fac, buf);
    if ((!strcmp(fac, "CGRPJOINSTATE") || vw_kafka_log_twin(fac)) && !s->kafka_debug)
        return; /* a broker's failure: the error callback logs it (kafka_conf.h) */
    if (level >= 7 && !s->kafka_debug)
        return; /* debug lines we asked for ourselves */
    /* syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug */
    vw_log_level lvl = level <= 3   ? VW_LOG_ERROR
                       : level == 4 ? VW_LOG_WARN
                       : level <= 6 ? VW_LOG_INFO
                                    : VW_LOG_DEBUG;
    VW_LOG(s->o.log, lvl, "librdkafka", "%s client=%s facility=%s", buf, rd_kafka_name(rk), fac);
}

/* `log_calls` lets a consumer handle left undestroyed (vw_source_close)
 * wait out the calls already in here before the worker is freed. [thread: librdkafka] */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    vw_source *s = rd_kafka_opaque(rk);
    atomic_fetch_add(&s->log_calls, 1);
    if (!atomic_load(&s->log_abandoned))
        log_line(s, rk, level, fac, buf);
    atomic_fetch_sub(&s->log_calls, 1);
}

/* The start watchdog (starts.h): partitions of the input topic whose
 * statistics show a started fetcher leave the list; the next turn assigns
 * again those listed past delivery.start_timeout_ms (restart_due). Deciding
 * right after a report means a partition is never judged on a state older
 * than the statistics interval. */
static void note_fetch_states(vw_source *s, const json_t *root) {
    if (!s->starts.n)
        return;
    const json_t *parts =
        json_object_get(json_object_get(json_object_get(root, "topics"), s->o.topic), "partitions");
    for (size_t i = s->starts.n; i-- > 0;) {
        char key[16];
        int32_t p = s->starts.items[i].partition;
        snprintf(key, sizeof key, "%d", (int)p);
        const char *fs =
            json_string_value(json_object_get(json_object_get(parts, key), "fetch_state"));
        if (vw_starts_fetching(fs))
            vw_starts_remove(&s->starts, p);
    }
    s->starts_check = s->starts.n > 0;
}

static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    (void)rk;
    vw_source *s = opaque;
    vw_metrics_stats_json(s->o.metrics, json, len);
    /* cgrp.join_state (STATISTICS.md) other than "steady" means this member is
     * rejoining (rejoin.h). */
    json_t *root = json_loadb(json, len, 0, NULL);
    const char *bname;
    json_t *broker;
    json_object_foreach(json_object_get(root, "brokers"), bname, broker) {
        const char *state = json_string_value(json_object_get(broker, "state"));
        if (state && !strcmp(state, "UP"))
            s->health.up = true;
    }
    const char *js =
        s->o.replay
            ? NULL
            : json_string_value(json_object_get(json_object_get(root, "cgrp"), "join_state"));
    if (vw_rejoin_stats(&s->rejoin, js))
        VW_LOG(s->o.log, VW_LOG_DEBUG, "consumer", "group join_state=%s", js);
    note_fetch_states(s, root);
    json_decref(root);
    return 0; /* librdkafka frees json */
}

/* A commit answered REBALANCE_IN_PROGRESS: commits and intake wait (rejoin.h). */
static void hold_commits(vw_source *s, rd_kafka_resp_err_t e) {
    if (e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS &&
        vw_rejoin_in_progress(&s->rejoin, vw_now_ms()))
        VW_LOG(s->o.log, VW_LOG_INFO, "consumer", "group rebalancing: commits wait for it");
}

static bool cooperative(rd_kafka_t *rk) {
    const char *p = rd_kafka_rebalance_protocol(rk); /* NULL once the group is closing */
    return p && !strcmp(p, "COOPERATIVE");
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque) {
    (void)rk;
    vw_source *s = opaque;
    s->commit_in_flight = false;
    hold_commits(s, err);
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET || !offsets)
        return;
    for (int i = 0; i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &offsets->elems[i];
        if (!p->err && !err && p->offset >= 0) {
            vw_offsets_committed(s->o.ledger, p->topic, p->partition, p->offset);
            vw_metrics_inc(s->o.metrics, VW_M_COMMITS, 1);
            vw_crashpoint_hit(s->o.crash, VW_CRASH_AFTER_COMMIT);
        } else {
            /* Still pending in the tracker: the next commit tick retries it. */
            hold_commits(s, p->err);
            vw_metrics_inc(s->o.metrics, VW_M_COMMIT_FAILURES, 1);
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "commit failed tp=%s:%d offset=%lld err=%s",
                   p->topic, (int)p->partition, (long long)p->offset,
                   rd_kafka_err2name(p->err ? p->err : err));
        }
    }
}

/* ---- commits ------------------------------------------------------------ */

/* The tracker's uncommitted positions, optionally only of the partitions in
 * `only`; NULL when there are none. */
static rd_kafka_topic_partition_list_t *
pending_commits(vw_source *s, const rd_kafka_topic_partition_list_t *only) {
    size_t n = vw_offsets_commits(s->o.ledger, NULL, 0);
    if (!n)
        return NULL;
    vw_offset_pos *pos = malloc(n * sizeof *pos);
    rd_kafka_topic_partition_list_t *l = pos ? rd_kafka_topic_partition_list_new((int)n) : NULL;
    if (l) {
        vw_offsets_commits(s->o.ledger, pos, n);
        for (size_t i = 0; i < n; i++) {
            if (only && !rd_kafka_topic_partition_list_find(only, pos[i].topic, pos[i].partition))
                continue;
            rd_kafka_topic_partition_list_add(l, pos[i].topic, pos[i].partition)->offset =
                pos[i].offset;
        }
    }
    free(pos);
    if (l && !l->cnt) {
        rd_kafka_topic_partition_list_destroy(l);
        l = NULL;
    }
    return l;
}

static void commit_list(vw_source *s, rd_kafka_topic_partition_list_t *l, bool sync) {
    /* Store too, so librdkafka's statistics show the stored offset and lag;
     * ERR__STATE for a partition no longer assigned is expected. */
    rd_kafka_offsets_store(s->rk, l);
    rd_kafka_resp_err_t e = rd_kafka_commit(s->rk, l, sync ? 0 : 1);
    if (!sync) {
        s->commit_in_flight = !e;
        if (e)
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "commit not sent err=%s",
                   rd_kafka_err2name(e));
        return;
    }
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *p = &l->elems[i];
        if (!e && !p->err) {
            vw_offsets_committed(s->o.ledger, p->topic, p->partition, p->offset);
            vw_metrics_inc(s->o.metrics, VW_M_COMMITS, 1);
        } else {
            vw_metrics_inc(s->o.metrics, VW_M_COMMIT_FAILURES, 1);
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "commit failed tp=%s:%d offset=%lld err=%s",
                   p->topic, (int)p->partition, (long long)p->offset,
                   rd_kafka_err2name(e ? e : p->err));
        }
    }
}

void vw_source_commit(vw_source *s, bool sync) {
    if (s->o.replay || s->o.txn_offsets ||
        (!sync && (s->commit_in_flight || vw_rejoin_commit_gated(&s->rejoin, vw_now_ms()))))
        return;
    rd_kafka_topic_partition_list_t *l = pending_commits(s, NULL);
    if (l) {
        commit_list(s, l, sync);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

/* ---- rebalance ------------------------------------------------------------ */

/* Revoke (docs/style.md "State and threads"): stop scheduling the partitions, let
 * what is in flight finish for at most delivery.revoke_wait_ms, commit what is
 * contiguous and acknowledged, then forget them. A lost assignment commits
 * nothing (another member may own the partitions already). */
static void revoke_partitions(vw_source *s, const rd_kafka_topic_partition_list_t *parts,
                              bool lost) {
    for (int i = 0; i < parts->cnt; i++) {
        s->o.hooks.drop(s->o.hooks.ctx, parts->elems[i].partition);
        vw_starts_remove(&s->starts, parts->elems[i].partition);
        vw_poison_forget(&s->poison, parts->elems[i].partition);
    }
    if (lost && s->o.hooks.lost)
        s->o.hooks.lost(s->o.hooks.ctx, parts);
    if (!lost) {
        int64_t deadline = vw_now_ms() + s->o.cfg->delivery.revoke_wait_ms;
        if (s->stopping && s->stop_deadline_ms < deadline)
            deadline = s->stop_deadline_ms;
        s->o.hooks.settle(s->o.hooks.ctx, parts, deadline);
        rd_kafka_topic_partition_list_t *l = s->o.txn_offsets ? NULL : pending_commits(s, parts);
        if (l) {
            commit_list(s, l, true);
            rd_kafka_topic_partition_list_destroy(l);
        }
    }
    for (int i = 0; i < parts->cnt; i++) {
        int64_t pos = -1;
        size_t left =
            vw_offsets_in_flight(s->o.ledger, parts->elems[i].topic, parts->elems[i].partition);
        if (vw_offsets_revoke(s->o.ledger, parts->elems[i].topic, parts->elems[i].partition, &pos,
                              NULL) == VW_OK)
            VW_LOG(s->o.log, VW_LOG_INFO, "consumer",
                   "partition revoked tp=%s:%d position=%lld abandoned=%zu lost=%d",
                   parts->elems[i].topic, (int)parts->elems[i].partition, (long long)pos, left,
                   (int)lost);
    }
}

static void assign_partitions(vw_source *s, rd_kafka_topic_partition_list_t *parts) {
    /* One clock for the whole assignment: its partitions fall due for the
     * start watchdog together and are assigned again in one call (with a
     * clock read per partition, a statistics report landing exactly
     * start_timeout_ms later could split them across two restarts). */
    int64_t now = vw_now_ms();
    for (int i = 0; i < parts->cnt; i++) {
        vw_err err = {0};
        if (vw_offsets_assign(s->o.ledger, parts->elems[i].topic, parts->elems[i].partition, NULL,
                              &err)) { /* out of memory: the partition could not move */
            VW_LOG(s->o.log, VW_LOG_ERROR, "consumer", "tracker: %s, stopping", err.msg);
            VW_RAISE(s->o.fault, VW_ENOMEM, "out_of_memory", "assigning tp=%s:%d: %s",
                     parts->elems[i].topic, (int)parts->elems[i].partition, err.msg);
        }
        /* Without it the watchdog misses this partition: nothing else changes. */
        if (vw_starts_add(&s->starts, parts->elems[i].partition, now))
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "start watchdog: out of memory tp=%s:%d",
                   parts->elems[i].topic, (int)parts->elems[i].partition);
        VW_LOG(s->o.log, VW_LOG_INFO, "consumer", "partition assigned tp=%s:%d",
               parts->elems[i].topic, (int)parts->elems[i].partition);
    }
}

/* Assigns again the partitions the start watchdog found never fetching (see
 * starts.h): nothing of theirs was consumed, so the tracker is untouched;
 * librdkafka forgets the partition and looks its committed offset up anew.
 * Called after a statistics report, once the consumer queue was drained.
 * Never while a rebalance may be pending: librdkafka 2.0.2 takes any
 * incremental (un)assign made while it waits for the application's answer to
 * a rebalance as that answer (and clears a lost flag), so the revoke wait and
 * commit would be skipped. `joining` is set from the log line librdkafka
 * writes before it queues the rebalance; a check-then-act gap of one poll
 * remains. Skipped checks wait for the next report. Only the cooperative
 * protocol can drop and add one partition; under an eager strategy (set by
 * the user) the stall is reported only. */
static void restart_due(vw_source *s) {
    enum { MAX = 64 };
    int32_t due[MAX];
    s->starts_check = false;
    int64_t timeout = s->o.cfg->delivery.start_timeout_ms;
    if (timeout <= 0 || s->stopping || vw_fault_raised(s->o.fault) ||
        vw_rejoin_commits_held(&s->rejoin, vw_now_ms()) || vw_rejoin_rejoining(&s->rejoin))
        return;
    size_t k = vw_starts_due(&s->starts, vw_now_ms(), timeout, due, MAX);
    rd_kafka_topic_partition_list_t *cur = NULL;
    if (!k || rd_kafka_assignment(s->rk, &cur) || !cur)
        return;
    bool coop = cooperative(s->rk);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)k);
    for (size_t i = 0; i < k; i++) {
        /* One partition librdkafka does not hold would fail the whole call. */
        if (!rd_kafka_topic_partition_list_find(cur, s->o.topic, due[i])) {
            vw_starts_remove(&s->starts, due[i]);
            continue;
        }
        rd_kafka_topic_partition_list_add(l, s->o.topic, due[i]);
        VW_LOG(s->o.log, VW_LOG_WARN, "consumer",
               "partition still not fetched start_timeout_ms after its assignment, %s tp=%s:%d "
               "start_timeout_ms=%lld",
               coop ? "assigning it again" : "eager protocol: restart the worker", s->o.topic,
               (int)due[i], (long long)timeout);
    }
    rd_kafka_topic_partition_list_destroy(cur);
    if (coop && l->cnt) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(s->rk, l);
        if (!e)
            e = rd_kafka_incremental_assign(s->rk, l);
        if (e) {
            VW_LOG(s->o.log, VW_LOG_ERROR, "consumer", "assigning again: %s",
                   rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        } else {
            route(s, l);
            vw_metrics_inc(s->o.metrics, VW_M_PARTITION_RESTARTS, (uint64_t)l->cnt);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    vw_source *s = opaque;
    bool coop = cooperative(rk);
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
    vw_metrics_inc(s->o.metrics, VW_M_REBALANCES, 1);
    s->health.up = true;
    s->assigned_once = true;
    vw_rejoin_callback(&s->rejoin); /* this member's generation is current */
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        assign_partitions(s, parts);
        route(s, parts);
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            re = rd_kafka_assign(rk, parts);
        if (s->stopping)
            rd_kafka_pause_partitions(rk, parts);
        vw_metrics_set_assigned(s->o.metrics, true);
        /* After a cooperative revoke this assignment is followed by a second
         * round (librdkafka rejoins once the new partitions' offsets are
         * fetched): hold until it shows in the join state. */
        vw_rejoin_assigned(&s->rejoin, vw_now_ms());
    } else {
        bool lost = rd_kafka_assignment_lost(rk);
        revoke_partitions(s, parts, lost);
        if (coop) {
            e = rd_kafka_incremental_unassign(rk, parts);
            /* A classic cooperative revoke is followed by a second rebalance
             * round; KIP-848 has no rounds (the broker reconciles). */
            vw_rejoin_revoked_cooperative(&s->rejoin, vw_now_ms(), lost);
        } else {
            re = rd_kafka_assign(rk, NULL);
        }
    }
    if (e) {
        VW_LOG(s->o.log, VW_LOG_ERROR, "consumer", "rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (re) {
        VW_LOG(s->o.log, VW_LOG_ERROR, "consumer", "rebalance: %s", rd_kafka_err2str(re));
    }
}

/* ---- set-up, polling, pause ---------------------------------------------- */

vw_status vw_source_open(const vw_source_opts *o, vw_source **out, vw_err *err) {
    char errstr[512];
    *out = NULL;
    vw_source *s = calloc(1, sizeof *s);
    if (!s)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "source");
    s->o = *o;
    vw_source_conf_advise(o->cfg, o->replay, o->log);
    vw_source_conf_info info = {0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    vw_status st = conf ? vw_source_conf(o->cfg, o->replay, conf, &info, err)
                        : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rd_kafka_conf_new");
    if (st)
        goto done;
    s->sticky_assignor = info.sticky_assignor;
    s->kafka_debug = info.kafka_debug;
    VW_LOG(o->log, VW_LOG_INFO, "consumer",
           "fetch bounds max_partition_fetch_bytes=%lld fetch_max_bytes=%lld "
           "receive_message_max_bytes=%lld queued_max_messages_kbytes=%lld",
           (long long)info.bounds.partition, (long long)info.bounds.fetch,
           (long long)info.bounds.receive, (long long)info.bounds.queued_kb);
    rd_kafka_conf_set_opaque(conf, s);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    if (!o->replay) {
        rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
        rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    }
    /* Before the client: its log callback may run from rd_kafka_new on. */
    vw_rejoin_init(&s->rejoin, vw_source_conf_hold_ms(o->cfg), vw_kafka_issue_on(4059),
                   info.kip848);
    s->wa_4312 = vw_kafka_issue_on(4312);
    s->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!s->rk) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "consumer: %s", errstr);
        goto done;
    }
    conf = NULL; /* owned by the consumer now */
    /* Every event (rebalance, commits, errors, stats) comes through the consumer
     * queue; its I/O event wakes the loop when it turns non-empty. */
    rd_kafka_poll_set_consumer(s->rk);
    s->cq = rd_kafka_queue_get_consumer(s->rk);
    if (!s->cq) { /* librdkafka gives none without a group.id */
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "consumer: no consumer queue (group.id)");
        goto done;
    }
    if (o->wake_fd >= 0)
        rd_kafka_queue_io_event_enable(s->cq, o->wake_fd, "c", 1);
    s->mq = rd_kafka_queue_new(s->rk);
    if (!s->mq) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "consumer record queue");
        goto done;
    }
    if (o->wake_fd >= 0)
        rd_kafka_queue_io_event_enable(s->mq, o->wake_fd, "m", 1);
    if (!o->replay) {
        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, o->topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(s->rk, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        if (e)
            st = VW_FAIL(err, VW_EKAFKA, "kafka_subscribe", "subscribe %s: %s", o->topic,
                         rd_kafka_err2str(e));
    }
done:
    if (conf)
        rd_kafka_conf_destroy(conf);
    if (st) {
        vw_source_free(s); /* closes a client that was created */
        return st;
    }
    *out = s;
    return VW_OK;
}

void vw_source_stop_fetching(vw_source *s, int64_t deadline_ms) {
    s->stopping = true;
    s->stop_deadline_ms = deadline_ms;
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(s->rk, &l) || !l)
        return;
    rd_kafka_pause_partitions(s->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
}

vw_status vw_source_assign(vw_source *s, const rd_kafka_topic_partition_list_t *l, vw_err *err) {
    route(s, l);
    rd_kafka_resp_err_t e = l->cnt ? rd_kafka_assign(s->rk, l) : 0;
    if (e)
        return VW_FAIL(err, VW_EKAFKA, "kafka_assign", "assign: %s", rd_kafka_err2str(e));
    return VW_OK;
}

bool vw_source_positions(vw_source *s, rd_kafka_topic_partition_list_t *l) {
    return rd_kafka_position(s->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

void vw_source_pause(vw_source *s, int32_t partition) {
    rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(one, s->o.topic, partition);
    rd_kafka_pause_partitions(s->rk, one);
    rd_kafka_topic_partition_list_destroy(one);
}

bool vw_source_rebalancing(vw_source *s) {
    return vw_rejoin_commits_held(&s->rejoin, vw_now_ms()) || vw_rejoin_rejoining(&s->rejoin);
}

rd_kafka_consumer_group_metadata_t *vw_source_group_metadata(vw_source *s) {
    return s->rk ? rd_kafka_consumer_group_metadata(s->rk) : NULL;
}

const vw_kafka_health *vw_source_health(const vw_source *s) {
    return &s->health;
}

/* Routing. The records of every assigned partition are forwarded to s->mq,
 * apart from the consumer queue that carries librdkafka's events (rebalances,
 * commit results, errors, statistics). Events are served every turn; records
 * are taken from s->mq only while fewer than limits.max_in_flight are in
 * flight. Beyond that they wait in librdkafka's fetch queue, whose own bounds
 * (queued.min.messages, queued.max.messages.kbytes) stop the fetcher: no
 * pause, so nothing prefetched is thrown away (a pause purges the partition's
 * fetch queue and refetches on resume: ~1,200 records/s with a 1024 limit on a
 * backlog, docs/worker.md "Backpressure").
 * librdkafka 2.0.2 clears a partition's forwarding when its broker thread
 * handles the stop of fetching (FETCH_STOP, asynchronous), and a partition
 * forwarded once is never forwarded to the consumer queue again: a re-assign
 * routed before the previous stop was handled would leave the partition's
 * records in its own queue, read by no one. Routing again is harmless (records
 * already in that queue move to s->mq, in order), so the worker routes every
 * assigned partition again once a second (vw_source_reroute). A record can
 * therefore never reach the consumer queue; if one does, admitting it there
 * could pass records of its partition still in s->mq (their offsets would then
 * be refused as out of order and committed past), so the worker stops instead
 * (exit 1): nothing is committed past it, and a restart answers it. */
static void route_one(vw_source *s, const char *topic, int32_t partition) {
    rd_kafka_queue_t *q = rd_kafka_queue_get_partition(s->rk, topic, partition);
    if (!q) {
        VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "no queue for tp=%s:%d: records come unrouted",
               topic, (int)partition);
        return;
    }
    rd_kafka_queue_forward(q, s->mq);
    rd_kafka_queue_destroy(q);
}

static void route(vw_source *s, const rd_kafka_topic_partition_list_t *parts) {
    for (int i = 0; i < parts->cnt; i++)
        route_one(s, parts->elems[i].topic, parts->elems[i].partition);
}

void vw_source_reroute(vw_source *s) {
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(s->rk, &l) || !l)
        return;
    route(s, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* A consumer error that ends the run: the client's fatal error (posted to the
 * consumer queue, not to the error callback), and in replay any error but the
 * end of a partition or an unreadable record (e.g. the range's start deleted
 * by retention meanwhile: the range can no longer be read whole). */
static bool ends_run(const vw_source *s, const rd_kafka_message_t *m) {
    return m->err == RD_KAFKA_RESP_ERR__FATAL ||
           (s->o.replay && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
            !vw_poison_unreadable(m, s->o.topic));
}

/* Takes one message (and destroys it). Returns the partition an unreadable
 * record sent elsewhere (the messages of it already taken from the queue are
 * outdated), else -1. */
static int32_t take(vw_source *s, rd_kafka_message_t *m) {
    int32_t sought = -1;
    if (m->err) {
        if (ends_run(s, m)) {
            VW_LOG(s->o.log, VW_LOG_ERROR, "consumer",
                   "consume error, stopping err=%s reason=\"%s\"", rd_kafka_err2name(m->err),
                   rd_kafka_message_errstr(m));
            VW_RAISE(s->o.fault, VW_EKAFKA,
                     m->err == RD_KAFKA_RESP_ERR__FATAL ? "kafka_fatal" : "consume_error",
                     "consumer: %s: %s", rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
        } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF || s->stopping) {
            /* nothing to do: a stopping worker answers no more */
        } else if (m->rkt && m->partition >= 0 &&
                   !strcmp(rd_kafka_topic_name(m->rkt), s->o.topic)) {
            vw_poison_env env = {s->rk,
                                 s->o.topic,
                                 s->o.log,
                                 s->o.metrics,
                                 s->o.fault,
                                 s->o.cfg->delivery.start_timeout_ms,
                                 s->o.hooks.unreadable,
                                 s->o.hooks.ctx};
            sought = vw_poison_error(&s->poison, &env, m);
        } else {
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "consume error err=%s reason=\"%s\"",
                   rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
        }
    } else if (!s->stopping) {
        s->health.up = true; /* a record came: a broker answered (replay to a file sees
                                no rebalance or delivery, maybe no statistics) */
        if (s->starts.n)     /* a record: its partition fetches */
            vw_starts_remove(&s->starts, m->partition);
        uint64_t run = s->poison.n ? vw_poison_record(&s->poison, m->partition) : 0;
        if (run)
            VW_LOG(s->o.log, VW_LOG_INFO, "consumer", "consume errors over tp=%s:%d errors=%llu",
                   s->o.topic, (int)m->partition, (unsigned long long)run);
        s->o.hooks.record(s->o.hooks.ctx, m);
    }
    rd_kafka_message_destroy(m);
    return sought;
}

/* Intake is held (no record taken from s->mq, librdkafka's fetch queue
 * bounds stop the fetcher, as under backpressure) while this member rejoins
 * or its commits are held (rejoin.h), so the uncommitted tail stays within
 * what was in flight. Not rd_kafka_pause_partitions: librdkafka 2.0.2 may drop
 * a resume that comes right after an assignment as an outdated op (#5591),
 * leaving the partition paused for good (docs/kafka-notes.md "The worker's
 * rebalance holds"). Called at each poll, after the events and before
 * records are taken. */
static void hold_intake(vw_source *s) {
    if (s->o.replay || s->stopping)
        return;
    bool want = vw_rejoin_intake_held(&s->rejoin, vw_now_ms());
    if (want == s->intake_held)
        return;
    s->intake_held = want;
    vw_metrics_set_paused(s->o.metrics, want);
    VW_LOG(s->o.log, VW_LOG_DEBUG, "consumer", "intake %s in_flight=%zu", want ? "held" : "resumed",
           vw_offsets_in_flight(s->o.ledger, NULL, 0));
}

/* Records the ledger may still take (0 under backpressure), at most lane
 * (what the loop can still admit). */
static size_t room(vw_source *s, size_t lane) {
    size_t in_flight = vw_offsets_in_flight(s->o.ledger, NULL, 0);
    size_t max = (size_t)s->o.cfg->limits.max_in_flight;
    bool full = !s->o.replay && in_flight >= max;
    if (full && !s->backpressure)
        vw_metrics_inc(s->o.metrics, VW_M_BACKPRESSURE, 1);
    s->backpressure = full;
    /* In-flight records include the loop's admission lane. */
    if (s->o.replay)
        return lane;
    return full ? 0 : (max - in_flight < lane ? max - in_flight : lane);
}

bool vw_source_poll(vw_source *s, size_t lane) {
    /* Bounded per call so results, deliveries and commits keep flowing. A
     * queue's I/O event fires only when it turns non-empty after being
     * served, so the caller must not sleep while this returns true. */
    enum { EVENTS = 64, RECORDS = 1000 };
    bool more = false;
    int n = 0;
    for (rd_kafka_message_t *m; n < EVENTS && (m = rd_kafka_consumer_poll(s->rk, 0)); n++) {
        if (!m->err && m->rkt) { /* see "Routing" above */
            VW_LOG(s->o.log, VW_LOG_ERROR, "consumer",
                   "record outside its partition's queue, stopping tp=%s:%d:%lld",
                   rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
            VW_RAISE(s->o.fault, VW_EKAFKA, "record_unrouted",
                     "a record outside its partition's queue tp=%s:%d:%lld",
                     rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
            rd_kafka_message_destroy(m);
            continue;
        }
        take(s, m);
    }
    more = n == EVENTS;
    if (s->starts_check && n < EVENTS)
        restart_due(s);
    hold_intake(s);
    if (s->stopping || s->intake_held || vw_fault_raised(s->o.fault))
        return more && !vw_fault_raised(s->o.fault);
    size_t k = room(s, lane);
    if (k > RECORDS)
        k = RECORDS;
    rd_kafka_message_t *batch[RECORDS];
    ssize_t got = k ? rd_kafka_consume_batch_queue(s->mq, 0, batch, k) : 0;
    int32_t sought[RECORDS]; /* partitions an unreadable record sent elsewhere */
    size_t n_sought = 0;
    for (ssize_t i = 0; i < got; i++) {
        /* Taken before a seek of their partition: outdated, fetched again. */
        bool outdated = false;
        for (size_t j = 0; j < n_sought && !outdated; j++)
            outdated = sought[j] == batch[i]->partition;
        if (outdated) {
            rd_kafka_message_destroy(batch[i]);
            continue;
        }
        int32_t p = take(s, batch[i]);
        if (p >= 0)
            sought[n_sought++] = p;
    }
    return more || (got > 0 && (size_t)got == k);
}

/* librdkafka 2.0.2 aborts in rd_kafka_destroy (an assertion in the sticky
 * assignor's state destructor) when a JoinGroup chose it and no SyncGroup
 * answer has yet given the assignor its state (librdkafka #4312, fixed in
 * 2.3.0): a worker stopped in that window, e.g. while a slow group
 * rebalances at startup, would exit 134. The assignor has its state once a
 * rebalance callback came (the SyncGroup answer is handled first). */
static bool destroy_would_abort(vw_source *s) {
    return s->wa_4312 && s->sticky_assignor && vw_rejoin_joined(&s->rejoin) && !s->assigned_once;
}

/* So a worker stopped in that window first waits, until its grace period
 * ends, for the assignment (handled like any other while stopping: routed,
 * paused, then revoked by the close without a record taken). */
static void await_first_assignment(vw_source *s) {
    if (destroy_would_abort(s))
        VW_LOG(s->o.log, VW_LOG_INFO, "consumer",
               "stopped before the group's first assignment: waiting for it (librdkafka #4312)");
    while (destroy_would_abort(s) && !vw_fault_raised(s->o.fault) &&
           vw_now_ms() < s->stop_deadline_ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(s->rk, 100);
        if (m)
            take(s, m); /* an event's error is logged; a record is not admitted while stopping */
    }
}

void vw_source_close(vw_source *s, int64_t deadline_ms) {
    if (!s->rk)
        return;
    if (!s->stopping) /* a fatal stop, or replay: no drain ran */
        s->stop_deadline_ms = deadline_ms;
    s->stopping = true;
    if (!s->o.replay)
        await_first_assignment(s);
    if (s->cq) {
        rd_kafka_queue_io_event_enable(s->cq, -1, NULL, 0);
        rd_kafka_queue_destroy(s->cq);
        s->cq = NULL;
    }
    if (s->mq) {
        rd_kafka_queue_io_event_enable(s->mq, -1, NULL, 0);
        rd_kafka_queue_destroy(s->mq);
        s->mq = NULL;
    }
    if (!s->o.replay) {
        /* Leaves the group (its revoke runs on_rebalance once more). */
        rd_kafka_resp_err_t e = rd_kafka_consumer_close(s->rk);
        if (e)
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer", "close: %s", rd_kafka_err2str(e));
        if (destroy_would_abort(s)) {
            /* Still in the window at the end of the grace period: the client
             * has left the group and holds nothing; its handle is left to the
             * process's exit (a deliberate leak) rather than aborting.
             * Its threads must log nothing more: on_log reads s, freed
             * soon after. */
            VW_LOG(s->o.log, VW_LOG_WARN, "consumer",
                   "no assignment came within the grace period: the consumer is closed but not "
                   "destroyed (librdkafka 2.0.2 would abort, #4312)");
            rd_kafka_set_log_level(s->rk, -1);
            atomic_store(&s->log_abandoned, true);
            /* A thread past librdkafka's level check may still enter on_log. */
            usleep(200 * 1000);
            for (int i = 0; i < 100 && atomic_load(&s->log_calls); i++)
                usleep(10 * 1000);
            s->rk = NULL;
            return;
        }
    } else {
        rd_kafka_assign(s->rk, NULL);
    }
    rd_kafka_destroy(s->rk);
    s->rk = NULL;
}

void vw_source_free(vw_source *s) {
    if (!s)
        return;
    vw_source_close(s, vw_now_ms());
    vw_starts_free(&s->starts);
    vw_poison_free(&s->poison);
    free(s);
}
