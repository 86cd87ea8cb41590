/* lane.h — the admission lane: items queued by the Kafka thread for the
 * admission threads, which run the worker-level record checks (record_in.h:
 * size, UTF-8, JSON, object) and the processor's admit (the plan), and queue
 * each item back for the Kafka thread. Polling, deliveries, commits and the
 * other partitions' records go on meanwhile, so one heavy record delays
 * neither the group's heartbeats nor max.poll.interval.ms. A record taking
 * longer than limits.slow_record_ms is logged and counted. Owned by the flow
 * (flow.c), which batches what comes back.
 *
 * Ownership: vw_lane_new/vw_lane_free; an item pushed is the lane's (an
 * admission thread's while admitted) until popped back; vw_lane_stop and
 * vw_lane_free free what is left. Everything in vw_lane_opts is borrowed.
 * Thread-safety: push, pop, room, busy and stop on the Kafka thread; the
 * admission threads are the lane's own. Errors: VW_ENOMEM from new, VW_EIO
 * when a thread cannot start.
 */
#ifndef VW_LANE_H
#define VW_LANE_H

#include <stdbool.h>
#include <stddef.h>

#include "item.h"
#include "processor.h"
#include "service/config.h"
#include "service/log.h"
#include "service/metrics.h"
#include "vw_status.h"

typedef struct vw_lane vw_lane;

typedef struct vw_lane_opts {
    const vw_config *cfg; /* limits.max_request_bytes, slow_record_ms */
    const vw_log *log;
    vw_processor *proc;
    vw_metrics *metrics;
    const char *topic; /* the input topic (records' topic for the checks) */
    int wake_fd;       /* written for every item admitted; -1: none */
    size_t threads;    /* admission threads (>= 1) */
    size_t cap;        /* items in the lane at most (both queues' capacity) */
} vw_lane_opts;

vw_status vw_lane_new(const vw_lane_opts *o, vw_lane **out, vw_err *err);
/* Starts the admission threads. */
vw_status vw_lane_start(vw_lane *l, vw_err *err);
/* Queues an item for admission (taken on true); false when the lane is full
 * (the caller keeps it; vw_lane_room says how many fit). */
bool vw_lane_push(vw_lane *l, vw_item *it);
/* An item back from admission (with a finished result or a pending processor
 * item), or NULL. Never blocks. A partition's items come back in the order
 * they were pushed: one admitted ahead of an earlier item of its partition
 * waits for it (so the batcher gets each partition in offset order, and the
 * results the ledger hands out in that order are not held behind an early
 * record batched last); other partitions' items pass it. */
vw_item *vw_lane_pop(vw_lane *l);
/* Items the lane can still take. */
size_t vw_lane_room(const vw_lane *l);
/* Items in the lane: queued, being admitted, or back and not popped. */
size_t vw_lane_busy(const vw_lane *l);
/* Shutdown: what was not admitted yet is dropped (uncommitted), the threads
 * finish the record at hand and are joined, what came back is dropped. */
void vw_lane_stop(vw_lane *l);
/* Stops if needed; NULL is a no-op. */
void vw_lane_free(vw_lane *l);

#endif
