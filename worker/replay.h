/* replay.h — replay's own steps, for the loop's vw_worker_replay (worker.c):
 * assign the ranges without a group, see them consumed, report progress on
 * stderr.
 * Ownership: everything is borrowed. Thread-safety: the Kafka thread.
 * Errors: vw_replay_assign returns vw_source_assign's.
 */
#ifndef VW_REPLAY_H
#define VW_REPLAY_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include "offsets.h"
#include "service/log.h"
#include "source.h"

/* A replayed range of one input partition: [start, end) (worker.h's
 * vw_replay_range, as the loop keeps it). */
typedef struct vw_range {
    int32_t partition;
    int64_t start, end;
} vw_range;

/* The range of a partition, or NULL (none: run mode, or not replayed). */
const vw_range *vw_replay_range_of(const vw_range *r, size_t n, int32_t partition);

/* Logs each range, starts the non-empty ones in the ledger, lists them in l
 * at their start offsets and assigns them; *total: the records they hold. */
vw_status vw_replay_assign(vw_source *src, vw_offsets *ledger, const vw_range *r, size_t n,
                           const char *topic, const vw_log *log, rd_kafka_topic_partition_list_t *l,
                           size_t *total, vw_err *err);

/* Pauses the partitions of l whose range is consumed; true when every one is. */
bool vw_replay_consumed(vw_source *src, const vw_range *r, size_t n,
                        rd_kafka_topic_partition_list_t *l);

/* One progress line on out ("replay: done/total records (P%), R records/s,
 * ETA T s"; the last: "replay: done/total records (P%) in T s, R records/s");
 * a rate is shown only once time has passed (it read "0 records/s" at 100%).
 * On a terminal the lines overwrite each other (\r) but the last. */
void vw_replay_progress(FILE *out, size_t done, size_t total, int64_t t0_ms, bool last);

#endif
