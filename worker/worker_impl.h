/* worker_impl.h — the worker's internals, shared by its units (not a public
 * header). The units, each on the Kafka thread unless said otherwise:
 *   worker.c    lifecycle and the loop (turn: deliveries, intake, results,
 *               dispatch, produce, commit);
 *   flow.c      the way of a record: an item queued for the admission threads
 *               (checks and plan) and back, micro-batches
 *               prepared here, executed on the executor thread, finished on
 *               the processing threads and collected back, retries, a revoked
 *               partition's work dropped or settled;
 *   consumer.c  intake, commits, rebalances (its own state: struct vw_consumer);
 *   producer.c  results, dead letters, delivery reports;
 *   replay.c    the replay loop; kafka_conf.c, item.c: shared helpers.
 * Dependencies run one way: item, kafka_conf < producer < flow < consumer <
 * worker < replay (scripts/check-deps).
 *
 * Threads: the Kafka thread (vw_worker_run's caller) owns everything here
 * except the queues' other ends, the items in the admission lane (to_admit
 * to from_admit: an admission thread holds each in turn), and the flights
 * (batches and their items) between dispatch and collect, which the executor
 * thread and the processing threads hold in turn; metrics are atomic; the
 * wake pipe is written by librdkafka (queue I/O events), the admission
 * threads (an admitted item), the executor thread (room in to_exec) and the
 * processing threads (a finished flight), read by the Kafka thread.
 */
#ifndef VW_WORKER_IMPL_H
#define VW_WORKER_IMPL_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "batcher.h"
#include "fault.h"
#include "queue.h"
#include "sink.h"
#include "source.h"
#include "item.h"
#include "kafka_conf.h"
#include "offsets.h"
#include "processor.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"
#include "util/sbuf.h"

/* A replay range of one partition: [start, end). */
typedef struct vw_range {
    int32_t partition;
    int64_t start, end;
} vw_range;

struct vw_flight; /* a micro-batch between prepare and collect (flow.c) */

/* Batches prepared and waiting for the executor thread: one runs while the
 * next waits, so the device never waits for the host to prepare one. */
enum { EXEC_QUEUE = 2 };

struct vw_worker {
    const vw_config *cfg;
    const vw_log *log;
    vw_processor *proc;
    vw_metrics *metrics;
    const char *topic; /* input topic (config-owned) */
    vw_source *source; /* the consumer side (source.h) */
    vw_sink *sink;     /* the producer side (sink.h) */
    int wake[2];       /* non-blocking pipe */
    vw_offsets *tracker;
    vw_batcher *batcher;
    vw_batch *held; /* a closed batch whose prepare ran out of memory: tried again */
    vw_queue *to_exec, *to_finish, *from_exec; /* flights (flow.c) */
    pthread_t exec_thread;
    bool exec_started;
    pthread_t *pool; /* processing threads (finish), n_pool of them */
    size_t n_pool, pool_started;
    size_t n_flights;   /* flights dispatched and not yet collected */
    size_t max_flights; /* from_exec's capacity: more in flight could block a
                           processing thread on it (vw_flow_can_dispatch) */
    vw_item **retry;    /* RETRY items waiting for their backoff */
    size_t n_retry, cap_retry;
    bool stopping;
    vw_fault fault;                  /* the first cause that stops the worker (fault.h) */
    bool more;                       /* the last turn left work queued: do not sleep */
    int64_t turn_ms;                 /* vw_now_ms() at the start of this turn (admission times) */
    vw_queue *to_admit, *from_admit; /* the admission lane (flow.c "Admission") */
    pthread_t *admitters;            /* admission threads, n_pool of them */
    size_t admit_started;
    size_t n_admitting; /* items in the lane: queued, being admitted, or back */
    size_t admit_cap;   /* the lane's capacity (both queues') */
    int64_t next_commit_ms;
    int64_t next_route_ms;    /* vw_source_reroute: every assigned partition routed again */
    int64_t stop_deadline_ms; /* while stopping: the end of the grace period */
    int64_t started_ms;       /* when the clients were opened */
    bool started;             /* vw_worker_start ran: vw_worker_stop is due */
    vw_crashpoint crash;      /* VW_CRASH_AT test hook (crashpoint.h) */
    /* replay mode (vw_worker_replay) */
    bool replay;
    vw_range *ranges;
    size_t n_ranges;
    FILE *replay_out; /* JSONL output instead of a results topic, or NULL */
    const char *results_topic;
    size_t replay_total;
};

/* ---- flow.c ---- */
/* Intake of one consumed record: tracked, copied into an item and queued for
 * admission (at most vw_flow_admit_room of them per turn). */
void vw_flow_intake(struct vw_worker *w, const rd_kafka_message_t *m);
/* Records the admission lane can still take. */
size_t vw_flow_admit_room(const struct vw_worker *w);
/* An admission thread's main (arg: the worker): record checks and the
 * processor's admit, off the Kafka thread. */
void *vw_flow_admit_main(void *arg);
/* Items back from admission: batched, or their result filed; those of a
 * partition revoked meanwhile are dropped. */
void vw_flow_admitted(struct vw_worker *w);
/* Stops the admission lane (shutdown): what was not admitted yet is dropped
 * uncommitted, the threads finish the record at hand and are joined. */
void vw_flow_stop_admission(struct vw_worker *w);
/* The executor thread's main and a processing thread's main (arg: the worker). */
void *vw_flow_exec_main(void *arg);
void *vw_flow_finish_main(void *arg);
/* Frees a flight left in a queue (its processor state, its items). */
void vw_flow_flight_free_cb(void *flight);
/* Results the executor sent back. */
void vw_flow_collect(struct vw_worker *w);
/* Retries whose backoff is over go back to the batcher. */
void vw_flow_requeue_due(struct vw_worker *w, int64_t now);
/* Hands closed batches to the executor while its queue has room. */
void vw_flow_dispatch(struct vw_worker *w, int64_t now);
/* Whether dispatch could hand over a batch now: the executor queue has room
 * and the flights in flight stay within from_exec's capacity. While it cannot,
 * the batcher's deadline does not shorten the loop's sleep (the executor and
 * the processing threads wake the loop when that changes). */
bool vw_flow_can_dispatch(const struct vw_worker *w);
/* Drops batched/retrying items of a partition (revoke). */
void vw_flow_drop_partition(struct vw_worker *w, int32_t partition);

/* ---- worker.c (for replay.c) ---- */
/* The replay range of a partition, or NULL (run mode). */
const vw_range *vw_range_of(const struct vw_worker *w, int32_t partition);
/* Opens the clients, starts the executor thread. */
vw_status vw_worker_start(struct vw_worker *w, vw_err *err);
/* One turn of the loop, waiting at most until the next thing falls due. */
void vw_worker_step(struct vw_worker *w);
/* Nothing in flight, queued, retrying or waiting to be produced again. */
bool vw_worker_idle(struct vw_worker *w);
/* Closes the clients and the executor, in the order the commit rule needs. */
void vw_worker_stop(struct vw_worker *w);

#endif
