/* flow.h — the worker's flow: the way of a record between the source and the
 * sink. A consumed record becomes an item (tracked in the ledger) and goes
 * through the admission lane (lane.h); what comes back is either finished (a
 * rejection: filed in the ledger at once) or batched (batcher.h). A closed
 * micro-batch is prepared on the Kafka thread and becomes a flight: the
 * executor thread runs the processor's execute (the device call only), a
 * processing thread its finish, and the Kafka thread collects it, files each
 * result in the ledger or keeps a RETRY item for its backoff. The flow owns
 * the lane, the batcher, the held batch, the retry list, the flight queues
 * and the executor and processing threads.
 *
 * Ownership: vw_flow_new/vw_flow_free; items are the flow's from intake until
 * filed in the ledger (then the ledger's, then the sink's). Everything in
 * vw_flow_opts is borrowed; the ledger is the loop's, lent for tracking
 * consumed offsets, the assignment checks and filing results.
 * Thread-safety: every function on the Kafka thread; the flow's own threads
 * (admission, executor, processing) run the processor's admit, execute and
 * finish, and write wake_fd when they hand something back.
 * Errors: VW_ENOMEM from new, VW_EIO when a thread cannot start; at run time
 * out of memory while tracking a record or making its item is raised into
 * the fault record (fault.h): skipping the record would commit past it. A
 * record that got its item but whose rejection or admit failed (out of memory
 * there included) is dead-lettered like any FATAL result (processor.h).
 */
#ifndef VW_FLOW_H
#define VW_FLOW_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "offsets.h"
#include "processor.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"
#include "vw_status.h"

typedef struct vw_flow vw_flow;

typedef struct vw_flow_opts {
    const vw_config *cfg; /* batching, limits, delivery (retry backoff) */
    const vw_log *log;
    vw_processor *proc;
    vw_metrics *metrics;
    vw_offsets *ledger;   /* tracking, assignment checks, results (the loop's) */
    vw_fault *fault;      /* out of memory in intake is raised here */
    vw_crashpoint *crash; /* after_executor */
    const char *topic;    /* the input topic */
    size_t threads;       /* processing threads, and as many admission threads (>= 1) */
    int wake_fd;          /* written when a thread hands something back; -1: none */
} vw_flow_opts;

vw_status vw_flow_new(const vw_flow_opts *o, vw_flow **out, vw_err *err);
/* Starts the processing, admission and executor threads. */
vw_status vw_flow_start(vw_flow *f, vw_err *err);

/* A consumed record: tracked in the ledger, copied into an item (admitted_ms:
 * now_ms) and queued for admission. A record of a partition no longer
 * assigned is skipped. At most vw_flow_room of them per turn. */
void vw_flow_intake(vw_flow *f, const rd_kafka_message_t *m, int64_t now_ms);
/* A record librdkafka could not hand over (source.h hooks.unreadable; err:
 * librdkafka's error name, reason: its message): tracked like a consumed
 * record and filed at once as a dead letter without a payload (type
 * unreadable_record, the message "ERR: reason"). A record of a partition no
 * longer assigned, or an offset the ledger refuses (not after the last
 * tracked one), is skipped. */
void vw_flow_unreadable(vw_flow *f, int32_t partition, int64_t offset, const char *err,
                        const char *reason, int64_t now_ms);
/* Records the admission lane can still take. */
size_t vw_flow_room(const vw_flow *f);
/* Items back from admission: batched, or their result filed in the ledger;
 * those of a partition revoked meanwhile are dropped. */
void vw_flow_admitted(vw_flow *f);
/* Flights the processing threads sent back: results filed in the ledger,
 * RETRY items kept for their backoff. */
void vw_flow_collect(vw_flow *f);
/* Retries whose backoff is over at now go back to the batcher. */
void vw_flow_requeue_due(vw_flow *f, int64_t now);
/* Closes the open batch now (the drain). */
void vw_flow_flush(vw_flow *f, int64_t now);
/* Prepares closed batches and hands them to the executor while it can take
 * them. */
void vw_flow_dispatch(vw_flow *f, int64_t now);
/* When the flow next needs a turn (ms, vw_now_ms's clock): a retry's backoff
 * ends, or the open batch's wait while dispatch could hand it over (while it
 * cannot, the executor and the processing threads wake the loop when that
 * changes). INT64_MAX when nothing falls due. */
int64_t vw_flow_next_due(const vw_flow *f);
/* A revoke: drops the batched, held and retrying items of a partition. */
void vw_flow_drop_partition(vw_flow *f, int32_t partition);
/* Flights dispatched and not yet collected (in the executor or finishing). */
size_t vw_flow_flights(const vw_flow *f);
/* Nothing in the lane, batched, held, retrying or in flight. */
bool vw_flow_idle(const vw_flow *f);
/* Shutdown: the lane stops (what was not admitted is dropped), the executor
 * drains its queue into the processing threads, which drain theirs; every
 * thread is joined and the flights collected. */
void vw_flow_stop(vw_flow *f);
/* Stops if needed and frees what is left; NULL is a no-op. */
void vw_flow_free(vw_flow *f);

#endif
