/* consumer.c — the worker's consumer side: client set-up, intake polling,
 * intake hold, offset commits and the rebalance protocol (see consumer.h).
 * Runs on the Kafka thread only; librdkafka serves every callback here from
 * rd_kafka_consumer_poll. Never produces (producer.c does). */
#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "consumer.h"

#include "kafka_conf.h"
#include "service/clock.h"
#include "starts.h"
#include "worker_impl.h"

/* The consumer side's own state (consumer.h), allocated by vw_consumer_open. */
struct vw_consumer {
    rd_kafka_queue_t *cq; /* the consumer queue: events (I/O events -> wake pipe) */
    rd_kafka_queue_t *mq; /* records of the assigned partitions ("Routing" below) */
    bool intake_held;     /* a rebalance may be running: no records taken (flow) */
    bool commit_in_flight;
    bool backpressure;         /* in-flight limit reached: records stay in librdkafka's queue */
    vw_starts starts;          /* input partitions assigned, not yet known to fetch (starts.h) */
    bool starts_check;         /* statistics arrived: look for partitions that never started */
    int64_t commit_hold_until; /* no async commits before this (a rebalance is running) */
    bool group_unsteady;       /* statistics: this member is rejoining the group */
    atomic_bool joining;       /* librdkafka's cgrp join state is not "steady" */
    atomic_bool join_lines;    /* a join-state log line was read (joining is live) */
    bool wa_4059;              /* librdkafka < 2.10.0: hold commits while rejoining (#4059) */
    bool wa_4312;              /* librdkafka < 2.3.0: destroy may abort (#4312) */
    bool kip848;               /* group.protocol consumer: the broker assigns (KIP-848) */
    atomic_bool joined_group; /* a JoinGroup succeeded (-> wait-sync, wait-join -> wait-metadata) */
    bool assigned_once;       /* a rebalance callback came (see destroy_would_abort) */
    bool sticky_assignor;     /* partition.assignment.strategy may pick cooperative-sticky */
    bool second_round;        /* a cooperative revoke came: its assignment starts another round */
    atomic_int log_calls;     /* librdkafka threads inside the log callback */
    atomic_bool log_abandoned; /* the consumer was left undestroyed: its log callback is off */
    bool kafka_debug;          /* the user set librdkafka's `debug`: print its debug lines */
};

/* ---- callbacks (all on the Kafka thread) -------------------------------- */

/* The consumer's error callback (fault.h for a fatal one). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    struct vw_worker *w = opaque;
    vw_kafka_error(rk, "consumer", err, reason, w->log, &w->fault, &w->health);
}

bool vw_consumer_join_line(const char *fac, const char *buf, bool *steady, bool *joined) {
    if (strcmp(fac, "CGRPJOINSTATE"))
        return false;
    /* After the group id, which may itself hold " -> ". */
    const char *from = strstr(buf, "\" changed join state ");
    const char *arrow = from ? strstr(from, " -> ") : NULL;
    if (!arrow)
        return false;
    const char *to = arrow + 4;
    *steady = !strncmp(to, "steady ", 7);
    /* A JoinGroup answer: the follower's wait-sync, or the leader's
     * wait-metadata from wait-join (init -> wait-metadata is not one). */
    *joined =
        !strncmp(to, "wait-sync ", 10) || (!strncmp(to, "wait-metadata ", 14) && arrow - buf >= 9 &&
                                           !strncmp(arrow - 9, "wait-join", 9));
    return true;
}

/* librdkafka threads. Join-state lines are the only immediate signal that
 * this member is rejoining (librdkafka has no API for it); see hold_commits. */
static void log_line(struct vw_worker *w, const rd_kafka_t *rk, int level, const char *fac,
                     const char *buf) {
    bool steady, joined;
    if (vw_consumer_join_line(fac, buf, &steady, &joined)) {
        atomic_store(&w->cons->joining, !steady);
        atomic_store(&w->cons->join_lines, true);
        if (joined)
            atomic_store(&w->cons->joined_group, true);
    }
    if (!strcmp(fac, "CGRPJOINSTATE") && !w->cons->kafka_debug)
        return;
    if (level >= 7 && !w->cons->kafka_debug)
        return; /* debug lines we asked for ourselves */
    /* syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug */
    vw_log_level lvl = level <= 3   ? VW_LOG_ERROR
                       : level == 4 ? VW_LOG_WARN
                       : level <= 6 ? VW_LOG_INFO
                                    : VW_LOG_DEBUG;
    VW_LOG(w->log, lvl, "librdkafka", "%s client=%s facility=%s", buf, rd_kafka_name(rk), fac);
}

/* `log_calls` lets a consumer handle left undestroyed (vw_consumer_close)
 * wait out the calls already in here before the worker is freed. */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    struct vw_worker *w = rd_kafka_opaque(rk);
    atomic_fetch_add(&w->cons->log_calls, 1);
    if (!atomic_load(&w->cons->log_abandoned))
        log_line(w, rk, level, fac, buf);
    atomic_fetch_sub(&w->cons->log_calls, 1);
}

/* The start watchdog (starts.h): partitions of the input topic whose
 * statistics show a started fetcher leave the list; the next turn assigns
 * again those listed past delivery.start_timeout_ms (restart_due). Deciding
 * right after a report means a partition is never judged on a state older
 * than the statistics interval. */
static void note_fetch_states(struct vw_worker *w, const json_t *root) {
    if (!w->cons->starts.n)
        return;
    const json_t *parts =
        json_object_get(json_object_get(json_object_get(root, "topics"), w->topic), "partitions");
    for (size_t i = w->cons->starts.n; i-- > 0;) {
        char key[16];
        int32_t p = w->cons->starts.items[i].partition;
        snprintf(key, sizeof key, "%d", (int)p);
        const char *fs =
            json_string_value(json_object_get(json_object_get(parts, key), "fetch_state"));
        if (vw_starts_fetching(fs))
            vw_starts_remove(&w->cons->starts, p);
    }
    w->cons->starts_check = w->cons->starts.n > 0;
}

static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
    (void)rk;
    struct vw_worker *w = opaque;
    vw_metrics_stats_json(w->metrics, json, len);
    /* cgrp.join_state (STATISTICS.md) other than "steady" means this member is
     * rejoining: hold async commits (see hold_commits). */
    json_t *root = json_loadb(json, len, 0, NULL);
    const char *bname;
    json_t *broker;
    json_object_foreach(json_object_get(root, "brokers"), bname, broker) {
        const char *state = json_string_value(json_object_get(broker, "state"));
        if (state && !strcmp(state, "UP"))
            w->health.up = true;
    }
    const char *js =
        w->replay ? NULL
                  : json_string_value(json_object_get(json_object_get(root, "cgrp"), "join_state"));
    bool unsteady = js && strcmp(js, "steady") && strcmp(js, "init");
    if (unsteady != w->cons->group_unsteady)
        VW_LOG(w->log, VW_LOG_DEBUG, "consumer", "group join_state=%s", js);
    w->cons->group_unsteady = unsteady;
    note_fetch_states(w, root);
    json_decref(root);
    return 0; /* librdkafka frees json */
}

/* A consumer property in ms as configured (librdkafka's default otherwise). */
static int64_t consumer_ms(const vw_config *cfg, const char *key, int64_t dflt) {
    const char *v = vw_kafka_consumer_prop(cfg, key);
    return v ? atoll(v) : dflt;
}

/* How long async commits and intake wait for a rebalance to show (see
 * hold_commits): a member in a rebalance learns of it from its next
 * heartbeat answer, so two heartbeat intervals and a second for the round
 * trip, at most the session timeout (librdkafka's defaults: 3 s, 45 s).
 * Once the rebalance shows, the join state (`joining`) holds them. Until
 * 2026-12-03 the hold lasted the session timeout, because the join state
 * was then read from statistics only. */
static int64_t hold_ms(const vw_config *cfg) {
    int64_t session = consumer_ms(cfg, "session.timeout.ms", 45000);
    int64_t bridge = 2 * consumer_ms(cfg, "heartbeat.interval.ms", 3000) + 1000;
    return bridge < session ? bridge : session;
}

/* The group is rebalancing. While this member waits for its JoinGroup answer,
 * the coordinator holds its connection, so a commit sent then is answered
 * after the generation changed: ILLEGAL_GENERATION, which librdkafka 2.0.2
 * treats as a lost assignment (no revoke commit: the new owner processes the
 * uncommitted tail again). So while a rebalance is known to run (librdkafka's
 * join state is not steady — from its log lines at once (`joining`; until
 * 2026-12-03 only from statistics, up to an interval late, and a fault sweep
 * saw commits sent in wait-join lose the assignment) or from statistics —, a
 * commit got REBALANCE_IN_PROGRESS, or a cooperative revoke was just handled)
 * async commits wait, and intake is
 * held (flow) so that the uncommitted tail stays within what was
 * in flight. Synchronous commits in the rebalance callback itself are always
 * made: the generation is current there. */
/* On librdkafka 2.10.0 and later (#4059 fixed: such an ILLEGAL_GENERATION no
 * longer drops the assignment) the join state no longer holds commits or
 * intake; REBALANCE_IN_PROGRESS and a cooperative revoke still do (those
 * commits cannot succeed before the rebalance ends). */
static void hold_commits(struct vw_worker *w, rd_kafka_resp_err_t e) {
    if (e != RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS)
        return;
    if (w->cons->commit_hold_until <= vw_now_ms())
        VW_LOG(w->log, VW_LOG_INFO, "consumer", "group rebalancing: commits wait for it");
    w->cons->commit_hold_until = vw_now_ms() + hold_ms(w->cfg);
}

/* librdkafka's join state says this member is rejoining: from its log lines
 * at once; from statistics, which show the same state up to an interval late,
 * only while no such line has been read (a librdkafka that stopped writing
 * them). Until 2026-12-04 the statistics always counted and held every commit
 * for up to an interval after each assignment: on librdkafka 2.16, whose mock
 * acknowledges the first produce at once, a crash in that interval replayed
 * everything answered since the assignment (64 duplicates for a bound of 16). */
static bool rejoining(struct vw_worker *w) {
    return atomic_load(&w->cons->joining) ||
           (w->cons->group_unsteady && !atomic_load(&w->cons->join_lines));
}

/* Commits wait after REBALANCE_IN_PROGRESS or a cooperative revoke (hold_ms). */
static bool commits_held(struct vw_worker *w) {
    return vw_now_ms() < w->cons->commit_hold_until;
}

/* Intake waits while commits are held, and while this member rejoins where
 * librdkafka #4059 applies (before 2.10.0: see hold_commits). */
static bool intake_hold_due(struct vw_worker *w) {
    return commits_held(w) || (w->cons->wa_4059 && atomic_load(&w->cons->joining));
}

/* Async commits wait (see hold_commits). */
static bool commit_gate(struct vw_worker *w) {
    return commits_held(w) || (w->cons->wa_4059 && rejoining(w));
}

static bool cooperative(rd_kafka_t *rk) {
    const char *p = rd_kafka_rebalance_protocol(rk); /* NULL once the group is closing */
    return p && !strcmp(p, "COOPERATIVE");
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque) {
    (void)rk;
    struct vw_worker *w = opaque;
    w->cons->commit_in_flight = false;
    hold_commits(w, err);
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET || !offsets)
        return;
    for (int i = 0; i < offsets->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &offsets->elems[i];
        if (!p->err && !err && p->offset >= 0) {
            vw_offsets_committed(w->tracker, p->topic, p->partition, p->offset);
            vw_metrics_inc(w->metrics, VW_M_COMMITS, 1);
            vw_crashpoint_hit(&w->crash, VW_CRASH_AFTER_COMMIT);
        } else {
            /* Still pending in the tracker: the next commit tick retries it. */
            hold_commits(w, p->err);
            vw_metrics_inc(w->metrics, VW_M_COMMIT_FAILURES, 1);
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "commit failed tp=%s:%d offset=%lld err=%s",
                   p->topic, (int)p->partition, (long long)p->offset,
                   rd_kafka_err2name(p->err ? p->err : err));
        }
    }
}

/* ---- commits ------------------------------------------------------------ */

/* The tracker's uncommitted positions, optionally only of the partitions in
 * `only`; NULL when there are none. */
static rd_kafka_topic_partition_list_t *
pending_commits(struct vw_worker *w, const rd_kafka_topic_partition_list_t *only) {
    size_t n = vw_offsets_commits(w->tracker, NULL, 0);
    if (!n)
        return NULL;
    vw_offset_pos *pos = malloc(n * sizeof *pos);
    rd_kafka_topic_partition_list_t *l = pos ? rd_kafka_topic_partition_list_new((int)n) : NULL;
    if (l) {
        vw_offsets_commits(w->tracker, pos, n);
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

static void commit_list(struct vw_worker *w, rd_kafka_topic_partition_list_t *l, bool sync) {
    /* Store too, so librdkafka's statistics show the stored offset and lag;
     * ERR__STATE for a partition no longer assigned is expected. */
    rd_kafka_offsets_store(w->consumer, l);
    rd_kafka_resp_err_t e = rd_kafka_commit(w->consumer, l, sync ? 0 : 1);
    if (!sync) {
        w->cons->commit_in_flight = !e;
        if (e)
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "commit not sent err=%s", rd_kafka_err2name(e));
        return;
    }
    for (int i = 0; i < l->cnt; i++) {
        rd_kafka_topic_partition_t *p = &l->elems[i];
        if (!e && !p->err) {
            vw_offsets_committed(w->tracker, p->topic, p->partition, p->offset);
            vw_metrics_inc(w->metrics, VW_M_COMMITS, 1);
        } else {
            vw_metrics_inc(w->metrics, VW_M_COMMIT_FAILURES, 1);
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "commit failed tp=%s:%d offset=%lld err=%s",
                   p->topic, (int)p->partition, (long long)p->offset,
                   rd_kafka_err2name(e ? e : p->err));
        }
    }
}

void vw_consumer_commit(struct vw_worker *w, bool sync) {
    if (w->replay || (!sync && (w->cons->commit_in_flight || commit_gate(w))))
        return;
    rd_kafka_topic_partition_list_t *l = pending_commits(w, NULL);
    if (l) {
        commit_list(w, l, sync);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

/* ---- rebalance ------------------------------------------------------------ */

/* Revoke (docs/style.md "State and threads"): stop scheduling the partitions, let
 * what is in flight finish for at most delivery.revoke_wait_ms, commit what is
 * contiguous and acknowledged, then forget them. A lost assignment commits
 * nothing (another member may own the partitions already). */
static void revoke_partitions(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts,
                              bool lost) {
    for (int i = 0; i < parts->cnt; i++) {
        vw_flow_drop_partition(w, parts->elems[i].partition);
        vw_starts_remove(&w->cons->starts, parts->elems[i].partition);
    }
    if (!lost) {
        int64_t deadline = vw_now_ms() + w->cfg->delivery.revoke_wait_ms;
        if (w->stopping && w->stop_deadline_ms < deadline)
            deadline = w->stop_deadline_ms;
        w->settle(w, parts, deadline);
        rd_kafka_topic_partition_list_t *l = pending_commits(w, parts);
        if (l) {
            commit_list(w, l, true);
            rd_kafka_topic_partition_list_destroy(l);
        }
    }
    for (int i = 0; i < parts->cnt; i++) {
        int64_t pos = -1;
        size_t left =
            vw_offsets_in_flight(w->tracker, parts->elems[i].topic, parts->elems[i].partition);
        if (vw_offsets_revoke(w->tracker, parts->elems[i].topic, parts->elems[i].partition, &pos,
                              NULL) == VW_OK)
            VW_LOG(w->log, VW_LOG_INFO, "consumer",
                   "partition revoked tp=%s:%d position=%lld abandoned=%zu lost=%d",
                   parts->elems[i].topic, (int)parts->elems[i].partition, (long long)pos, left,
                   (int)lost);
    }
}

static void assign_partitions(struct vw_worker *w, rd_kafka_topic_partition_list_t *parts) {
    /* One clock for the whole assignment: its partitions fall due for the
     * start watchdog together and are assigned again in one call (with a
     * clock read per partition, a statistics report landing exactly
     * start_timeout_ms later could split them across two restarts). */
    int64_t now = vw_now_ms();
    for (int i = 0; i < parts->cnt; i++) {
        vw_err err = {0};
        if (vw_offsets_assign(w->tracker, parts->elems[i].topic, parts->elems[i].partition, NULL,
                              &err)) { /* out of memory: the partition could not move */
            VW_LOG(w->log, VW_LOG_ERROR, "consumer", "tracker: %s, stopping", err.msg);
            VW_RAISE(&w->fault, VW_ENOMEM, "out_of_memory", "assigning tp=%s:%d: %s",
                     parts->elems[i].topic, (int)parts->elems[i].partition, err.msg);
        }
        /* Without it the watchdog misses this partition: nothing else changes. */
        if (vw_starts_add(&w->cons->starts, parts->elems[i].partition, now))
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "start watchdog: out of memory tp=%s:%d",
                   parts->elems[i].topic, (int)parts->elems[i].partition);
        VW_LOG(w->log, VW_LOG_INFO, "consumer", "partition assigned tp=%s:%d",
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
static void restart_due(struct vw_worker *w) {
    enum { MAX = 64 };
    int32_t due[MAX];
    w->cons->starts_check = false;
    int64_t timeout = w->cfg->delivery.start_timeout_ms;
    if (timeout <= 0 || w->stopping || vw_fault_raised(&w->fault) || commits_held(w) ||
        rejoining(w))
        return;
    size_t k = vw_starts_due(&w->cons->starts, vw_now_ms(), timeout, due, MAX);
    rd_kafka_topic_partition_list_t *cur = NULL;
    if (!k || rd_kafka_assignment(w->consumer, &cur) || !cur)
        return;
    bool coop = cooperative(w->consumer);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)k);
    for (size_t i = 0; i < k; i++) {
        /* One partition librdkafka does not hold would fail the whole call. */
        if (!rd_kafka_topic_partition_list_find(cur, w->topic, due[i])) {
            vw_starts_remove(&w->cons->starts, due[i]);
            continue;
        }
        rd_kafka_topic_partition_list_add(l, w->topic, due[i]);
        VW_LOG(w->log, VW_LOG_WARN, "consumer",
               "partition still not fetched start_timeout_ms after its assignment, %s tp=%s:%d "
               "start_timeout_ms=%lld",
               coop ? "assigning it again" : "eager protocol: restart the worker", w->topic,
               (int)due[i], (long long)timeout);
    }
    rd_kafka_topic_partition_list_destroy(cur);
    if (coop && l->cnt) {
        rd_kafka_error_t *e = rd_kafka_incremental_unassign(w->consumer, l);
        if (!e)
            e = rd_kafka_incremental_assign(w->consumer, l);
        if (e) {
            VW_LOG(w->log, VW_LOG_ERROR, "consumer", "assigning again: %s",
                   rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
        } else {
            vw_consumer_route(w, l);
            vw_metrics_inc(w->metrics, VW_M_PARTITION_RESTARTS, (uint64_t)l->cnt);
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    struct vw_worker *w = opaque;
    bool coop = cooperative(rk);
    rd_kafka_error_t *e = NULL;
    rd_kafka_resp_err_t re = RD_KAFKA_RESP_ERR_NO_ERROR;
    vw_metrics_inc(w->metrics, VW_M_REBALANCES, 1);
    w->health.up = true;
    w->cons->assigned_once = true;
    w->cons->commit_hold_until = 0; /* a callback means this member's generation is current */
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        assign_partitions(w, parts);
        vw_consumer_route(w, parts);
        if (coop)
            e = rd_kafka_incremental_assign(rk, parts);
        else
            re = rd_kafka_assign(rk, parts);
        if (w->stopping)
            rd_kafka_pause_partitions(rk, parts);
        vw_metrics_set_assigned(w->metrics, true);
        /* After a cooperative revoke this assignment is followed by a second
         * round (librdkafka rejoins once the new partitions' offsets are
         * fetched): hold until it shows in the join state. */
        if (w->cons->second_round)
            w->cons->commit_hold_until = vw_now_ms() + hold_ms(w->cfg);
        w->cons->second_round = false;
    } else {
        bool lost = rd_kafka_assignment_lost(rk);
        revoke_partitions(w, parts, lost);
        if (coop) {
            e = rd_kafka_incremental_unassign(rk, parts);
            /* A classic cooperative revoke is followed by a second rebalance
             * round; KIP-848 has no rounds (the broker reconciles). */
            if (!w->cons->kip848) {
                w->cons->commit_hold_until = vw_now_ms() + hold_ms(w->cfg);
                w->cons->second_round = !lost;
            }
        } else {
            re = rd_kafka_assign(rk, NULL);
        }
    }
    if (e) {
        VW_LOG(w->log, VW_LOG_ERROR, "consumer", "rebalance: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    } else if (re) {
        VW_LOG(w->log, VW_LOG_ERROR, "consumer", "rebalance: %s", rd_kafka_err2str(re));
    }
}

/* ---- set-up, polling, pause ---------------------------------------------- */

/* group.protocol: consumer (KIP-848, Kafka 4): the broker runs the group,
 * assigns partitions (group.remote.assignor) and keeps the session timeout and
 * heartbeat interval (group.consumer.* on the broker), so librdkafka refuses
 * the classic group's client settings. */
static const char *const classic_only[] = {"partition.assignment.strategy", "session.timeout.ms",
                                           "heartbeat.interval.ms", "group.protocol.type"};

static bool kip848(const vw_config *cfg) {
    const char *p = vw_kafka_consumer_prop(cfg, "group.protocol");
    return p && !strcmp(p, "consumer");
}

/* A classic-only setting of the user's under group.protocol consumer is named
 * here rather than in librdkafka's words at rd_kafka_new. */
static vw_status check_protocol(const vw_config *cfg, vw_err *err) {
    if (!kip848(cfg))
        return VW_OK;
    if (vw_kafka_before(2, 12, 0))
        return VW_FAIL(err, VW_EINVAL, "kafka_config",
                       "group.protocol consumer (KIP-848) needs librdkafka 2.12 or later; the one "
                       "loaded is %s",
                       rd_kafka_version_str());
    for (size_t i = 0; i < sizeof classic_only / sizeof *classic_only; i++) {
        const char *section = vw_kvlist_get(&cfg->kafka.consumer, classic_only[i]) ? "consumer"
                              : vw_kvlist_get(&cfg->kafka.common, classic_only[i]) ? "common"
                                                                                   : NULL;
        if (section)
            return VW_FAIL(err, VW_EINVAL, "kafka_config",
                           "kafka%s%s.%s is a setting of the classic group protocol, and "
                           "group.protocol is consumer: the broker keeps it "
                           "(group.consumer.* there); remove it",
                           strcmp(section, "common") ? "." : "",
                           strcmp(section, "common") ? section : "", classic_only[i]);
    }
    return VW_OK;
}

vw_status vw_consumer_conf(struct vw_worker *w, rd_kafka_conf_t *conf, vw_err *err) {
    const vw_config *cfg = w->cfg;
    char stats[32];
    if (!w->cons && !(w->cons = calloc(1, sizeof *w->cons)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "consumer state");
    w->cons->kip848 = kip848(cfg);
    snprintf(stats, sizeof stats, "%lld", (long long)cfg->metrics.stats_interval_ms);
    vw_status st = check_protocol(cfg, err);
    if (!st && !w->cons->kip848)
        st = vw_kafka_conf_set(conf, "partition.assignment.strategy", "cooperative-sticky", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "auto.offset.reset", w->replay ? "error" : "earliest", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "statistics.interval.ms", stats, err);
    if (!st)
        st = vw_kafka_conf_set(conf, "client.id", "vela-worker", err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &cfg->kafka.common, NULL, err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &cfg->kafka.consumer, NULL, err);
    /* Join-state lines (see on_log); the user's own `debug` is kept. */
    const char *dbg = vw_kafka_consumer_prop(cfg, "debug");
    w->cons->kafka_debug = dbg != NULL;
    if (!st && !w->replay) {
        char all[512];
        snprintf(all, sizeof all, "%s%scgrp", dbg ? dbg : "", dbg ? "," : "");
        st = vw_kafka_conf_set(conf, "debug", all, err);
    }
    /* Replay assigns partitions itself: a group id nobody joins, no commits.
     * The worker joins kafka.group.id, "vela-worker" when the config has none
     * (config/worker.example.yaml, docs/worker.md "Configuration"). */
    if (!st && w->replay)
        st = vw_kafka_conf_set(conf, "group.id", "vela-worker-replay", err);
    else if (!st && !vw_kafka_consumer_prop(cfg, "group.id"))
        st = vw_kafka_conf_set(conf, "group.id", VW_DEFAULT_GROUP_ID, err);
    /* The delivery rule: offsets move only through the tracker. */
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.auto.commit", "false", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.auto.offset.store", "false", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.partition.eof", "false", err);
    if (st)
        return st;
    /* Only the sticky assignor keeps state (see destroy_would_abort); range
     * and roundrobin, a user's override, do not. */
    char strategy[256];
    size_t len = sizeof strategy;
    w->cons->sticky_assignor = rd_kafka_conf_get(conf, "partition.assignment.strategy", strategy,
                                                 &len) == RD_KAFKA_CONF_OK &&
                               strstr(strategy, "sticky");
    rd_kafka_conf_set_opaque(conf, w);
    rd_kafka_conf_set_log_cb(conf, on_log);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_stats_cb(conf, on_stats);
    if (!w->replay) {
        rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
        rd_kafka_conf_set_offset_commit_cb(conf, on_commit);
    }
    return VW_OK;
}

/* The fault sweep's advice (docs/reliability.md "Heartbeat settings"): after
 * a coordinator error on a Heartbeat librdkafka 2.0.2 sends none until the
 * next interval, so with a heartbeat above a third of the session one missed
 * heartbeat can end the session: the assignment is lost and the acknowledged,
 * uncommitted tail is answered again. */
static void advise_heartbeat(struct vw_worker *w) {
    if (kip848(w->cfg))
        return; /* the broker chooses both */
    int64_t session = consumer_ms(w->cfg, "session.timeout.ms", 45000);
    int64_t hb = consumer_ms(w->cfg, "heartbeat.interval.ms", 3000);
    if (!w->replay && 3 * hb > session)
        VW_LOG(w->log, VW_LOG_WARN, "consumer",
               "heartbeat.interval.ms is more than a third of session.timeout.ms: one missed "
               "heartbeat can end the session heartbeat_ms=%lld session_ms=%lld",
               (long long)hb, (long long)session);
}

vw_status vw_consumer_open(struct vw_worker *w, vw_err *err) {
    char errstr[512];
    advise_heartbeat(w);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    vw_status st = conf ? vw_consumer_conf(w, conf, err) /* allocates w->cons */
                        : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rd_kafka_conf_new");
    if (st)
        goto done;
    w->cons->wa_4059 = vw_kafka_issue_on(4059);
    w->cons->wa_4312 = vw_kafka_issue_on(4312);
    w->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!w->consumer) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "consumer: %s", errstr);
        goto done;
    }
    conf = NULL; /* owned by the consumer now */
    /* Every event (rebalance, commits, errors, stats) comes through the consumer
     * queue; its I/O event wakes the loop when it turns non-empty. */
    rd_kafka_poll_set_consumer(w->consumer);
    w->cons->cq = rd_kafka_queue_get_consumer(w->consumer);
    if (!w->cons->cq) { /* librdkafka gives none without a group.id */
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "consumer: no consumer queue (group.id)");
        goto done;
    }
    rd_kafka_queue_io_event_enable(w->cons->cq, w->wake[1], "c", 1);
    w->cons->mq = rd_kafka_queue_new(w->consumer);
    if (!w->cons->mq) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "consumer record queue");
        goto done;
    }
    rd_kafka_queue_io_event_enable(w->cons->mq, w->wake[1], "m", 1);
    if (!w->replay) {
        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, w->topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(w->consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        if (e)
            st = VW_FAIL(err, VW_EKAFKA, "kafka_subscribe", "subscribe %s: %s", w->topic,
                         rd_kafka_err2str(e));
    }
done:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return st;
}

void vw_consumer_stop_fetching(struct vw_worker *w) {
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(w->consumer, &l) || !l)
        return;
    rd_kafka_pause_partitions(w->consumer, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Routing. The records of every assigned partition are forwarded to w->cons->mq,
 * apart from the consumer queue that carries librdkafka's events (rebalances,
 * commit results, errors, statistics). Events are served every turn; records
 * are taken from w->cons->mq only while fewer than limits.max_in_flight are in
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
 * already in that queue move to w->cons->mq, in order), so the worker routes every
 * assigned partition again once a second (vw_consumer_reroute). A record can
 * therefore never reach the consumer queue; if one does, admitting it there
 * could pass records of its partition still in w->cons->mq (their offsets would then
 * be refused as out of order and committed past), so the worker stops instead
 * (exit 1): nothing is committed past it, and a restart answers it. */
static void route_one(struct vw_worker *w, const char *topic, int32_t partition) {
    rd_kafka_queue_t *q = rd_kafka_queue_get_partition(w->consumer, topic, partition);
    if (!q) {
        VW_LOG(w->log, VW_LOG_WARN, "consumer", "no queue for tp=%s:%d: records come unrouted",
               topic, (int)partition);
        return;
    }
    rd_kafka_queue_forward(q, w->cons->mq);
    rd_kafka_queue_destroy(q);
}

void vw_consumer_route(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts) {
    for (int i = 0; i < parts->cnt; i++)
        route_one(w, parts->elems[i].topic, parts->elems[i].partition);
}

void vw_consumer_reroute(struct vw_worker *w) {
    rd_kafka_topic_partition_list_t *l = NULL;
    if (rd_kafka_assignment(w->consumer, &l) || !l)
        return;
    vw_consumer_route(w, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* A consumer error that ends the run: the client's fatal error (posted to the
 * consumer queue, not to the error callback), and in replay any error but the
 * end of a partition (e.g. the range's start deleted by retention meanwhile:
 * the range can no longer be read whole). */
static bool ends_run(const struct vw_worker *w, rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR__FATAL || (w->replay && e != RD_KAFKA_RESP_ERR__PARTITION_EOF);
}

static void take(struct vw_worker *w, rd_kafka_message_t *m) {
    if (m->err) {
        if (ends_run(w, m->err)) {
            VW_LOG(w->log, VW_LOG_ERROR, "consumer", "consume error, stopping err=%s reason=\"%s\"",
                   rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
            VW_RAISE(&w->fault, VW_EKAFKA,
                     m->err == RD_KAFKA_RESP_ERR__FATAL ? "kafka_fatal" : "consume_error",
                     "consumer: %s: %s", rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "consume error err=%s reason=\"%s\"",
                   rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
        }
    } else if (!w->stopping) {
        w->health.up = true;   /* a record came: a broker answered (replay to a file sees
                                  no rebalance or delivery, maybe no statistics) */
        if (w->cons->starts.n) /* a record: its partition fetches */
            vw_starts_remove(&w->cons->starts, m->partition);
        vw_flow_intake(w, m);
    }
    rd_kafka_message_destroy(m);
}

/* Intake is held (no record taken from w->cons->mq, librdkafka's fetch queue
 * bounds stop the fetcher, as under backpressure) while this member rejoins
 * or its commits are held (see hold_commits), so the uncommitted tail stays
 * within what was in flight. Not rd_kafka_pause_partitions: until 2026-12-03
 * the worker paused the assignment here and resumed it after the rejoin, and
 * a fault sweep saw librdkafka 2.0.2 drop such a resume as an outdated op
 * when it came right after an assignment (librdkafka #5591): that partition
 * stayed paused, fetched nothing and logged nothing. Called at each poll,
 * after the events and before records are taken. */
static void flow(struct vw_worker *w) {
    if (w->replay || w->stopping)
        return;
    bool want = intake_hold_due(w);
    if (want == w->cons->intake_held)
        return;
    w->cons->intake_held = want;
    vw_metrics_set_paused(w->metrics, want);
    VW_LOG(w->log, VW_LOG_DEBUG, "consumer", "intake %s in_flight=%zu", want ? "held" : "resumed",
           vw_offsets_in_flight(w->tracker, NULL, 0));
}

/* Records the tracker may still take (0 under backpressure). */
static size_t room(struct vw_worker *w) {
    size_t in_flight = vw_offsets_in_flight(w->tracker, NULL, 0);
    size_t max = (size_t)w->cfg->limits.max_in_flight;
    bool full = !w->replay && in_flight >= max;
    if (full && !w->cons->backpressure)
        vw_metrics_inc(w->metrics, VW_M_BACKPRESSURE, 1);
    w->cons->backpressure = full;
    size_t lane = vw_flow_admit_room(w); /* in-flight records include the lane's */
    if (w->replay)
        return lane;
    return full ? 0 : (max - in_flight < lane ? max - in_flight : lane);
}

bool vw_consumer_poll(struct vw_worker *w) {
    /* Bounded per call so results, deliveries and commits keep flowing. A
     * queue's I/O event fires only when it turns non-empty after being
     * served, so the caller must not sleep while this returns true. */
    enum { EVENTS = 64, RECORDS = 1000 };
    bool more = false;
    int n = 0;
    for (rd_kafka_message_t *m; n < EVENTS && (m = rd_kafka_consumer_poll(w->consumer, 0)); n++) {
        if (!m->err && m->rkt) { /* see "Routing" above */
            VW_LOG(w->log, VW_LOG_ERROR, "consumer",
                   "record outside its partition's queue, stopping tp=%s:%d:%lld",
                   rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
            VW_RAISE(&w->fault, VW_EKAFKA, "record_unrouted",
                     "a record outside its partition's queue tp=%s:%d:%lld",
                     rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
            rd_kafka_message_destroy(m);
            continue;
        }
        take(w, m);
    }
    more = n == EVENTS;
    if (w->cons->starts_check && n < EVENTS)
        restart_due(w);
    flow(w);
    if (w->stopping || w->cons->intake_held || vw_fault_raised(&w->fault))
        return more && !vw_fault_raised(&w->fault);
    size_t k = room(w);
    if (k > RECORDS)
        k = RECORDS;
    rd_kafka_message_t *batch[RECORDS];
    ssize_t got = k ? rd_kafka_consume_batch_queue(w->cons->mq, 0, batch, k) : 0;
    for (ssize_t i = 0; i < got; i++)
        take(w, batch[i]);
    return more || (got > 0 && (size_t)got == k);
}

/* librdkafka 2.0.2 aborts in rd_kafka_destroy (an assertion in the sticky
 * assignor's state destructor) when a JoinGroup chose it and no SyncGroup
 * answer has yet given the assignor its state (librdkafka #4312, fixed in
 * 2.3.0): a worker stopped in that window, e.g. while a slow group
 * rebalances at startup, would exit 134. The assignor has its state once a
 * rebalance callback came (the SyncGroup answer is handled first). */
static bool destroy_would_abort(const struct vw_worker *w) {
    return w->cons->wa_4312 && w->cons->sticky_assignor && atomic_load(&w->cons->joined_group) &&
           !w->cons->assigned_once;
}

/* So a worker stopped in that window first waits, until its grace period
 * ends, for the assignment (handled like any other while stopping: routed,
 * paused, then revoked by the close without a record taken). */
static void await_first_assignment(struct vw_worker *w) {
    if (destroy_would_abort(w))
        VW_LOG(w->log, VW_LOG_INFO, "consumer",
               "stopped before the group's first assignment: waiting for it (librdkafka #4312)");
    while (destroy_would_abort(w) && !vw_fault_raised(&w->fault) &&
           vw_now_ms() < w->stop_deadline_ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(w->consumer, 100);
        if (m)
            take(w, m); /* an event's error is logged; a record is not admitted while stopping */
    }
}

void vw_consumer_close(struct vw_worker *w) {
    if (!w->consumer)
        return;
    if (!w->replay)
        await_first_assignment(w);
    if (w->cons->cq) {
        rd_kafka_queue_io_event_enable(w->cons->cq, -1, NULL, 0);
        rd_kafka_queue_destroy(w->cons->cq);
        w->cons->cq = NULL;
    }
    if (w->cons->mq) {
        rd_kafka_queue_io_event_enable(w->cons->mq, -1, NULL, 0);
        rd_kafka_queue_destroy(w->cons->mq);
        w->cons->mq = NULL;
    }
    if (!w->replay) {
        /* Leaves the group (its revoke runs on_rebalance once more). */
        rd_kafka_resp_err_t e = rd_kafka_consumer_close(w->consumer);
        if (e)
            VW_LOG(w->log, VW_LOG_WARN, "consumer", "close: %s", rd_kafka_err2str(e));
        if (destroy_would_abort(w)) {
            /* Still in the window at the end of the grace period: the client
             * has left the group and holds nothing; its handle is left to the
             * process's exit (a deliberate leak) rather than aborting.
             * Its threads must log nothing more: on_log reads w, freed
             * soon after. */
            VW_LOG(w->log, VW_LOG_WARN, "consumer",
                   "no assignment came within the grace period: the consumer is closed but not "
                   "destroyed (librdkafka 2.0.2 would abort, #4312)");
            rd_kafka_set_log_level(w->consumer, -1);
            atomic_store(&w->cons->log_abandoned, true);
            /* A thread past librdkafka's level check may still enter on_log. */
            usleep(200 * 1000);
            for (int i = 0; i < 100 && atomic_load(&w->cons->log_calls); i++)
                usleep(10 * 1000);
            w->consumer = NULL;
            return;
        }
    } else {
        rd_kafka_assign(w->consumer, NULL);
    }
    rd_kafka_destroy(w->consumer);
    w->consumer = NULL;
}

void vw_consumer_free(struct vw_worker *w) {
    if (!w->cons)
        return;
    vw_starts_free(&w->cons->starts);
    free(w->cons);
    w->cons = NULL;
}
