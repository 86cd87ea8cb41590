/* replay.c — replay's own steps (see replay.h): the ranges assigned without a
 * group, their end seen, progress on stderr. The loop that runs them is
 * worker.c's vw_worker_replay; results go to the results topic or, one JSON
 * line each, to a file (sink.c). */
#include "replay.h"

#include <stdio.h>
#include <unistd.h>

#include "service/clock.h"

const vw_range *vw_replay_range_of(const vw_range *r, size_t n, int32_t partition) {
    for (size_t i = 0; i < n; i++)
        if (r[i].partition == partition)
            return &r[i];
    return NULL;
}

bool vw_replay_consumed(vw_source *src, const vw_range *r, size_t n,
                        rd_kafka_topic_partition_list_t *l) {
    bool all = true;
    if (!vw_source_positions(src, l))
        return false;
    for (int i = 0; i < l->cnt; i++) {
        const vw_range *one = vw_replay_range_of(r, n, l->elems[i].partition);
        if (l->elems[i].offset >= one->end) {
            vw_source_pause(src, l->elems[i].partition);
        } else {
            all = false;
        }
    }
    return all;
}

void vw_replay_progress(FILE *out, size_t done, size_t total, int64_t t0_ms, bool last) {
    double secs = (double)(vw_now_ms() - t0_ms) / 1e3, rate = secs > 0 ? (double)done / secs : 0;
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    char speed[64] = "";
    if (rate > 0)
        snprintf(speed, sizeof speed, ", %.*f records/s", rate < 10 ? 1 : 0, rate);
    if (last) {
        fprintf(out, "replay: %zu/%zu records (%.1f%%) in %.3f s%s\n", done, total, pct, secs,
                speed);
    } else {
        size_t left = total > done ? total - done : 0;
        char eta[32] = "?";
        if (rate > 0)
            snprintf(eta, sizeof eta, "%.1f s", (double)left / rate);
        fprintf(out, "replay: %zu/%zu records (%.1f%%)%s, ETA %s%s", done, total, pct, speed, eta,
                isatty(fileno(out)) ? "\r" : "\n");
    }
    fflush(out);
}

vw_status vw_replay_assign(vw_source *src, vw_offsets *ledger, const vw_range *r, size_t n,
                           const char *topic, const vw_log *log, rd_kafka_topic_partition_list_t *l,
                           size_t *total, vw_err *err) {
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        /* debug: `replay` printed each range when it resolved them */
        VW_LOG(log, VW_LOG_DEBUG, "replay", "range tp=%s:%d start=%lld end=%lld", topic,
               (int)r[i].partition, (long long)r[i].start, (long long)r[i].end);
        if (r[i].start >= r[i].end)
            continue;
        rd_kafka_topic_partition_list_add(l, topic, r[i].partition)->offset = r[i].start;
        vw_offsets_assign(ledger, topic, r[i].partition, NULL, NULL);
        *total += (size_t)(r[i].end - r[i].start);
    }
    return vw_source_assign(src, l, err);
}
