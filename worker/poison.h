/* poison.h — what the source makes of a consume error of one of its
 * partitions (docs/worker.md "Poison records at the Kafka layer"): the state
 * of each partition's errors, the decisions, and vw_poison_error, which
 * carries them out for the source (the dead-letter hook, the seek, the log,
 * the count, the fault).
 *
 * A record error (vw_poison_record_error) is librdkafka telling it cannot
 * hand over the record batch at an offset: one that will not decompress
 * (zstd past receive.message.max.bytes, a corrupt frame, an unknown codec),
 * fails its CRC, or is too large to fetch. librdkafka reports the batch's
 * first offset and fetches the same batch again forever (2.0.2 and 2.16
 * alike). The source dead-letters one offset and seeks past it; when the
 * error comes back with an offset below where it sought, the broker returned
 * the same batch: the offset sought is inside it, and it is dead-lettered
 * and passed in turn (vw_poison_next). So every offset of an unreadable batch
 * gets one dead letter, and no offset past the batch is skipped.
 *
 * Any other error of a partition is about the partition (an unknown or
 * unauthorised topic, a broker's error answer to every Fetch, ...): logged
 * when a run of them starts, and a fault when the run goes on stall_ms and
 * VW_POISON_STALL_REPEATS errors with no record of the partition in between
 * (vw_poison_partition_error), instead of a silent loop. The repeats keep a
 * few errors far apart (an OffsetFetch refused at each start, which the
 * start watchdog handles: starts.h) from counting as a loop.
 *
 * Ownership: vw_poison_free releases the table; everything in vw_poison_env
 * is borrowed. Thread-safety: the Kafka thread (the source's). Errors: out of
 * memory loses a partition's state (its next error starts afresh): never a
 * record; a stalled partition is raised into the fault record
 * (partition_stalled).
 */
#ifndef VW_POISON_H
#define VW_POISON_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "service/log.h"
#include "service/metrics.h"

typedef struct vw_poison_part {
    int32_t partition;
    int64_t sought;          /* where the last record error sent the partition; -1: none */
    rd_kafka_resp_err_t err; /* the partition error of the current run (0: none) */
    int64_t run_start_ms;    /* when that run started */
    uint64_t run_count;      /* errors in it */
} vw_poison_part;

typedef struct vw_poison {
    vw_poison_part *items;
    size_t n, cap;
} vw_poison;

/* librdkafka reports this error with the offset of a record batch it cannot
 * hand over: _BAD_COMPRESSION, _BAD_MSG (a failed CRC, a batch it cannot
 * parse), _NOT_IMPLEMENTED (an unknown codec), _CRIT_SYS_RESOURCE (no memory
 * to decompress it), MSG_SIZE_TOO_LARGE, INVALID_MSG (the broker's CORRUPT_MESSAGE). */
bool vw_poison_record_error(rd_kafka_resp_err_t e);

/* The error of m is a record error of a partition of topic, with an offset. */
bool vw_poison_unreadable(const rd_kafka_message_t *m, const char *topic);

/* What vw_poison_error works with (the source's). */
typedef struct vw_poison_env {
    rd_kafka_t *rk; /* the consumer: seeks */
    const char *topic;
    const vw_log *log;
    vw_metrics *metrics; /* unreadable_records_total */
    vw_fault *fault;     /* partition_stalled */
    int64_t stall_ms;    /* delivery.start_timeout_ms (0: no stall fault) */
    /* the dead letter of an offset (source.h hooks.unreadable) */
    void (*dead_letter)(void *ctx, int32_t partition, int64_t offset, rd_kafka_resp_err_t e,
                        const char *reason);
    void *ctx;
} vw_poison_env;

/* A consume error m of a partition of env->topic (not the end of a
 * partition): a record error is dead-lettered (env->dead_letter, logged,
 * counted) and the partition sought past it, its partition returned (what
 * was taken of it from the queue before the seek is outdated); a partition
 * error is logged when a run starts and raised as partition_stalled once the
 * run lasts env->stall_ms; -1 returned. */
int32_t vw_poison_error(vw_poison *t, const vw_poison_env *env, const rd_kafka_message_t *m);

/* A record error of partition p reported at offset `at`: the offset to
 * dead-letter, `at` itself unless the partition was sent past it already
 * (the same batch again: then the offset it was sent to). The caller seeks
 * to the returned offset + 1 and tells vw_poison_sought. */
int64_t vw_poison_next(const vw_poison *t, int32_t p, int64_t at);
/* The partition was sent to `next`. */
void vw_poison_sought(vw_poison *t, int32_t p, int64_t next);

/* Errors of one run before it can count as a stall (a Fetch loop makes two a
 * second: librdkafka's fetch.error.backoff.ms, 500 ms). */
#define VW_POISON_STALL_REPEATS 10

/* A partition error e of p at now_ms. Returns true when it starts a run
 * (the caller logs it); *stalled is set when the run has lasted stall_ms
 * (> 0) or more and counts VW_POISON_STALL_REPEATS errors or more. */
bool vw_poison_partition_error(vw_poison *t, int32_t p, rd_kafka_resp_err_t e, int64_t now_ms,
                               int64_t stall_ms, bool *stalled);

/* A record of p was handed over: a run of partition errors is over (its
 * length returned, 0: none) and nothing is sought any more. */
uint64_t vw_poison_record(vw_poison *t, int32_t p);

/* p was revoked: its state goes. */
void vw_poison_forget(vw_poison *t, int32_t p);

void vw_poison_free(vw_poison *t);

#endif
