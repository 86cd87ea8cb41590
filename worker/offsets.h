/* offsets.h — per-partition delivery order and commit tracker: the worker's
 * ledger (worker.c owns it and lends it to the source, the flow and the sink).
 *
 * The worker's commit rule (docs/contract.md "Delivery guarantees"): a
 * partition's offset is committed only when the result of that record and of
 * every earlier record of the partition was acknowledged by the broker. Results
 * of one partition are also produced in input order, whatever order the
 * processor finishes them in. The tracker holds, per (topic, partition), the
 * consumed offsets in order, each in one state:
 *
 *   PENDING --set_result--> READY --next_ready--> PRODUCING --ack--> DONE
 *
 * next_ready hands out a READY result only when every earlier record of its
 * partition is PRODUCING or DONE (per-partition produce order). DONE records at
 * the front are dropped and move the partition's commit position to offset+1.
 * The commit position is committed through vw_offsets_commits/_committed; a
 * failed commit leaves it pending, so it is retried.
 *
 * Each assignment of a partition gets a new epoch; a result or acknowledgement
 * for an older epoch (work started before a revoke) is refused, so late work
 * never lands in a newer assignment.
 *
 * Ownership: the tracker owns results between set_result and next_ready, and
 * frees them with the free_result callback if the partition is revoked or the
 * tracker freed. Topic names are copied. Thread-safety: none; one thread (the
 * worker's Kafka thread) owns a tracker. Errors: VW_EINVAL for an unknown
 * partition, an offset not tracked or not increasing, or a stale epoch;
 * VW_ENOMEM. A failed call leaves the tracker unchanged.
 */
#ifndef VW_OFFSETS_H
#define VW_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_offsets vw_offsets;

/* A record position; topic is borrowed from the tracker (valid until the
 * partition is revoked). */
typedef struct vw_offset_pos {
    const char *topic;
    int32_t partition;
    int64_t offset;
    uint32_t epoch;
    void *result; /* next_ready: the result, now owned by the caller */
} vw_offset_pos;

/* free_result may be NULL (results are then never freed by the tracker). */
vw_offsets *vw_offsets_new(void (*free_result)(void *result));
void vw_offsets_free(vw_offsets *t);

/* Starts (or restarts) tracking a partition; *epoch (may be NULL) receives its
 * new epoch. Re-assigning a tracked partition first drops its records. */
vw_status vw_offsets_assign(vw_offsets *t, const char *topic, int32_t partition, uint32_t *epoch,
                            vw_err *err);

/* True and *epoch set when the partition is assigned. */
bool vw_offsets_is_assigned(const vw_offsets *t, const char *topic, int32_t partition,
                            uint32_t *epoch);

/* Records a consumed offset (PENDING); offsets must increase per partition. */
vw_status vw_offsets_track(vw_offsets *t, const char *topic, int32_t partition, int64_t offset,
                           vw_err *err);

/* PENDING -> READY with its result (ownership moves to the tracker on VW_OK). */
vw_status vw_offsets_set_result(vw_offsets *t, const char *topic, int32_t partition, uint32_t epoch,
                                int64_t offset, void *result, vw_err *err);

/* The next READY record whose predecessors are all PRODUCING/DONE, scanning
 * partitions round-robin; marks it PRODUCING and hands its result to the
 * caller. False when there is none. */
bool vw_offsets_next_ready(vw_offsets *t, vw_offset_pos *out);

/* PRODUCING -> DONE (the broker acknowledged the result, or the DLQ copy). */
vw_status vw_offsets_ack(vw_offsets *t, const char *topic, int32_t partition, uint32_t epoch,
                         int64_t offset, vw_err *err);

/* Next offset to commit for a partition (last contiguous DONE + 1), or -1 when
 * no record of the partition is done yet. */
int64_t vw_offsets_position(const vw_offsets *t, const char *topic, int32_t partition);

/* Partitions whose position is ahead of what was committed; writes up to cap of
 * them to out and returns how many there are. */
size_t vw_offsets_commits(const vw_offsets *t, vw_offset_pos *out, size_t cap);

/* The same positions as if every record handed out by next_ready
 * (PRODUCING) were acknowledged: the last one handed out + 1 where that is
 * ahead of the position (exactly_once sends these with the transaction that
 * holds those records, before their delivery reports: they count only if
 * every record of it is delivered, txn.h). */
size_t vw_offsets_commits_produced(const vw_offsets *t, vw_offset_pos *out, size_t cap);

/* The broker confirmed a commit of offset (ignored when older than known). */
void vw_offsets_committed(vw_offsets *t, const char *topic, int32_t partition, int64_t offset);

/* Stops tracking a partition: drops its records (freeing held results) and
 * returns in *position (may be NULL) the last position (-1 if none). VW_EINVAL
 * when it is not assigned. */
vw_status vw_offsets_revoke(vw_offsets *t, const char *topic, int32_t partition, int64_t *position,
                            vw_err *err);

/* Records acknowledged since the tracker was made (every vw_offsets_ack that
 * made one DONE): what the worker answered (a result, a rejection or a dead
 * letter, or a record it gave up on). */
uint64_t vw_offsets_acked(const vw_offsets *t);

/* Records tracked and not yet DONE: in one partition, or (topic NULL) in all. */
size_t vw_offsets_in_flight(const vw_offsets *t, const char *topic, int32_t partition);

/* Records of a partition that can still be acknowledged without waiting for
 * another result: PRODUCING ones, and READY ones with no PENDING record before
 * them (a READY record behind a PENDING one is produced only after it). What a
 * revoke waits for, beside the records the executor holds. */
size_t vw_offsets_unacked(const vw_offsets *t, const char *topic, int32_t partition);

/* Number of assigned partitions, and the i-th of them (i < count). */
size_t vw_offsets_count(const vw_offsets *t);
vw_offset_pos vw_offsets_at(const vw_offsets *t, size_t i);

/* Replay by timestamp, when ListOffsets-by-time is unavailable (librdkafka's
 * mock answers -1): binary search for the first record in [lo, hi) whose
 * timestamp is >= ts, assuming timestamps do not decrease with the offset.
 * first_at(ctx, from, hi, &offset, &timestamp) must return 1 and the first
 * record at or after `from` (and before hi), 0 when there is none, -1 on error.
 * *out is that record's offset, or hi when no record qualifies. */
typedef int (*vw_first_record_fn)(void *ctx, int64_t from, int64_t hi, int64_t *offset,
                                  int64_t *timestamp);
vw_status vw_offsets_find_time(int64_t lo, int64_t hi, int64_t ts, vw_first_record_fn first_at,
                               void *ctx, int64_t *out, vw_err *err);

#endif
