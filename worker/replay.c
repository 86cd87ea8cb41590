/* replay.c — replay of partition ranges for evaluation (see worker.h
 * vw_worker_replay): assigns the ranges without a group, runs the worker's
 * loop until every range is consumed and answered, reports progress on stderr.
 * Results go to the results topic or, one JSON line each, to a file
 * (producer.c). */
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "service/clock.h"
#include "worker_impl.h"

/* Pauses finished partitions; true when every range is consumed. */
static bool ranges_consumed(struct vw_worker *w, rd_kafka_topic_partition_list_t *l) {
    bool all = true;
    if (!vw_source_positions(w->source, l))
        return false;
    for (int i = 0; i < l->cnt; i++) {
        const vw_range *r = vw_range_of(w, l->elems[i].partition);
        if (l->elems[i].offset >= r->end) {
            vw_source_pause(w->source, l->elems[i].partition);
        } else {
            all = false;
        }
    }
    return all;
}

/* One line per report; on a terminal the reports overwrite each other (\r),
 * anywhere else (a log file, a pipe) each ends its line. */
static void progress(struct vw_worker *w, int64_t t0, bool last) {
    size_t done = vw_sink_done(w->sink);
    double secs = (double)(vw_now_ms() - t0) / 1e3, rate = secs > 0 ? done / secs : 0;
    size_t left = w->replay_total > done ? w->replay_total - done : 0;
    char eta[32] = "?";
    if (rate > 0)
        snprintf(eta, sizeof eta, "%.1f s", (double)left / rate);
    fprintf(stderr, "replay: %zu/%zu records (%.1f%%), %.0f records/s, ETA %s%s", done,
            w->replay_total,
            w->replay_total ? 100.0 * (double)done / (double)w->replay_total : 100.0, rate, eta,
            last || !isatty(fileno(stderr)) ? "\n" : "\r");
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
    return vw_source_assign(w->source, l, err);
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
    vw_status st = vw_worker_start(w, err);
    if (!st)
        st = replay_assign(w, l, err);
    int64_t t0 = vw_now_ms(), next_report = t0;
    while (!st && !*stop_flag && !vw_fault_raised(&w->fault)) {
        vw_worker_step(w);
        bool done = (!l->cnt || ranges_consumed(w, l)) && vw_worker_idle(w);
        if (done || vw_now_ms() >= next_report) {
            progress(w, t0, done);
            next_report = vw_now_ms() + 1000;
        }
        if (done)
            break;
    }
    vw_err cause = {0};
    if (!st && vw_fault_cause(&w->fault, &cause)) {
        /* The first cause (fault.h), its status kept. */
        progress(w, t0, true);
        st = VW_FAIL(err, cause.status, "replay_stopped",
                     "replay stopped before the end (%zu of %zu records): %s (%s)",
                     vw_sink_done(w->sink), w->replay_total, cause.msg, cause.type);
    } else if (!st && *stop_flag) {
        progress(w, t0, true);
        st = VW_FAIL(err, VW_ETRANSIENT, "replay_stopped",
                     "replay stopped before the end (%zu of %zu records)", vw_sink_done(w->sink),
                     w->replay_total);
    }
    vw_worker_stop(w);
    rd_kafka_topic_partition_list_destroy(l);
    return st;
}
