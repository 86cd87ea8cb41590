/* worker_impl.h — the worker's internals, shared by worker.c (loop, executor
 * thread, results), consumer.c (intake, rebalance, commits) and producer.c
 * (results, dead letters, delivery reports). Not a public header.
 *
 * Threads: the Kafka thread (vw_worker_run's caller) owns everything here
 * except the executor thread's side of to_exec/from_exec and the items of the
 * batch it is running; metrics are atomic; the wake pipe is written by
 * librdkafka (queue I/O events) and the executor, read by the Kafka thread.
 */
#ifndef VW_WORKER_IMPL_H
#define VW_WORKER_IMPL_H

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "batcher.h"
#include "canonical_json.h" /* vw_sbuf */
#include "config.h"
#include "crashpoint.h"
#include "log.h"
#include "metrics.h"
#include "offsets.h"
#include "processor.h"
#include "starts.h"
#include "worker.h"

/* One consumed record on its way to a result. Owned by whoever holds it: the
 * batcher, the executor batch, the retry list, the tracker (READY) or
 * librdkafka's opaque (PRODUCING, until the delivery report). */
typedef struct vw_item {
    struct vw_worker *w;
    int32_t partition;
    int64_t offset;
    uint32_t epoch;
    int64_t timestamp;   /* record timestamp (ms), -1 if none */
    int64_t admitted_ms; /* monotonic, for queue delay */
    /* request_id, key and value live in this allocation (data[], one malloc
     * per record); value is kept for the dead-letter topic. */
    char *request_id;
    void *key; /* NULL when the record has none */
    size_t key_len;
    void *value;
    size_t value_len;
    const char *reply_topic; /* from the allow-list (config-owned) or NULL */
    void *proc_item;         /* the processor's pending item, or NULL */
    int64_t tokens;
    int attempts;   /* RETRY results so far */
    int64_t due_ms; /* retry list: when to batch again */
    /* The outcome, set at admission (finished) or from the executor's result
     * (vw_item_take), or by a failure (vw_item_fail). */
    vw_result_kind kind;
    int vela_status; /* RECORD */
    char *res_value; /* RECORD from a processor: its value, without request_id/source */
    size_t res_len;
    vw_header *headers; /* RECORD: the processor's extra headers */
    size_t n_headers;
    char type[48];   /* the rejection type the result named (metrics), or why RETRY/FATAL */
    char *msg;       /* RETRY/FATAL/dead letter: the message (malloc'd; NULL: see vw_item_msg) */
    char *out_value; /* produced bytes (owned here until the delivery report) */
    bool out_inline; /* out_value lives in data[] (a worker-level rejection) */
    size_t out_len;
    bool dead_letter; /* produced to the DLQ topic */
    bool redo_dlq;    /* redo list: dead-letter it (else produce the result again) */
    char data[];      /* request_id NUL key value */
} vw_item;

/* A replay range of one partition: [start, end). */
typedef struct vw_range {
    int32_t partition;
    int64_t start, end;
} vw_range;

struct vw_worker {
    const vw_config *cfg;
    const vw_log *log;
    vw_processor *proc;
    vw_metrics *metrics;
    const char *topic; /* input topic (config-owned) */
    rd_kafka_t *consumer, *producer;
    rd_kafka_queue_t *cq; /* the consumer queue: events (I/O events -> wake pipe) */
    rd_kafka_queue_t *mq; /* records of the assigned partitions (consumer.c "routing") */
    rd_kafka_queue_t *pq; /* the producer main queue */
    int wake[2];          /* non-blocking pipe */
    vw_offsets *tracker;
    vw_batcher *batcher;
    vw_batch *held; /* a closed batch the executor queue had no room for */
    vw_queue *to_exec, *from_exec;
    pthread_t exec_thread;
    bool exec_started;
    size_t exec_items; /* items handed to the executor and not yet back */
    vw_item **retry;   /* RETRY items waiting for their backoff */
    size_t n_retry, cap_retry;
    vw_item **redo; /* failed deliveries to produce again (outside the DR callback) */
    size_t n_redo, cap_redo;
    bool intake_held; /* a rebalance may be running: no records taken (consumer.c flow) */
    bool stopping, commit_in_flight;
    bool fatal;         /* stop, exit 1, commit nothing past what was delivered */
    bool producer_dead; /* the producer can deliver nothing more (implies fatal) */
    bool backpressure;  /* in-flight limit reached: records stay in librdkafka's queue */
    bool more;          /* the last turn left work queued: do not sleep */
    int64_t turn_ms;    /* vw_now_ms() at the start of this turn (admission times) */
    vw_sbuf scratch;    /* rejection values are written here before their item exists */
    int64_t next_commit_ms;
    int64_t next_route_ms;     /* vw_consumer_reroute: every assigned partition routed again */
    vw_starts starts;          /* input partitions assigned, not yet known to fetch (starts.h) */
    bool starts_check;         /* statistics arrived: look for partitions that never started */
    int64_t stop_deadline_ms;  /* while stopping: the end of the grace period */
    int64_t commit_hold_until; /* no async commits before this (a rebalance is running) */
    bool group_unsteady;       /* statistics: this member is rejoining the group */
    atomic_bool joining;       /* librdkafka's cgrp join state is not "steady" */
    atomic_bool joined_group; /* a JoinGroup succeeded (-> wait-sync, wait-join -> wait-metadata) */
    bool assigned_once;       /* a rebalance callback came (see destroy_would_abort) */
    bool sticky_assignor;     /* partition.assignment.strategy may pick cooperative-sticky */
    bool second_round;        /* a cooperative revoke came: its assignment starts another round */
    atomic_int log_calls;     /* librdkafka threads inside the consumer's log callback */
    atomic_bool log_abandoned; /* the consumer was left undestroyed: its log callback is off */
    bool kafka_debug;          /* the user set librdkafka's `debug`: print its debug lines */
    vw_crashpoint crash;       /* VW_CRASH_AT test hook (crashpoint.h) */
    /* replay mode (vw_worker_replay) */
    bool replay;
    vw_range *ranges;
    size_t n_ranges;
    FILE *sink; /* JSONL output instead of a results topic, or NULL */
    const char *results_topic;
    size_t replay_total, replay_done;
};

/* Monotonic and wall-clock milliseconds. */
int64_t vw_now_ms(void);
int64_t vw_wall_ms(void);

/* Wakes the Kafka thread (any thread). */
void vw_worker_wake(struct vw_worker *w);

/* Appends to a growable item list; false on allocation failure. */
bool vw_items_push(vw_item ***list, size_t *n, size_t *cap, vw_item *it);

/* Items. vw_item_free releases the processor item too; NULL is a no-op. */
void vw_item_free(vw_item *it);
/* Moves a processor result into the item (r is left empty). */
void vw_item_take(vw_item *it, vw_result *r);
/* Sets the outcome to kind (RETRY or FATAL) with an error type and message,
 * dropping any result value; also names why a record is dead-lettered. */
void vw_item_fail(vw_item *it, vw_result_kind kind, const char *type, const char *msg);
/* The failure message (the type if the message could not be kept). */
const char *vw_item_msg(const vw_item *it);
void vw_item_free_cb(void *it);

/* consumer.c */
vw_status vw_consumer_open(struct vw_worker *w, vw_err *err);
/* Serves consumer events, then admits up to 1000 records while fewer than
 * limits.max_in_flight are in flight; true when more may be waiting. */
bool vw_consumer_poll(struct vw_worker *w);
/* Routes the records of newly assigned partitions to w->mq. */
void vw_consumer_route(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts);
/* Routes every assigned partition again (see consumer.c "Routing"). */
void vw_consumer_reroute(struct vw_worker *w);
/* Shutdown: pauses the assignment (never resumed). */
void vw_consumer_stop_fetching(struct vw_worker *w);
void vw_consumer_commit(struct vw_worker *w, bool sync);
void vw_consumer_close(struct vw_worker *w);

/* producer.c */
vw_status vw_producer_open(struct vw_worker *w, vw_err *err);
void vw_produce_ready(struct vw_worker *w);
void vw_producer_poll(struct vw_worker *w, int timeout_ms);

/* worker.c: admission of one consumed record (the Kafka thread). */
void vw_worker_intake(struct vw_worker *w, const rd_kafka_message_t *m);
/* worker.c: results the executor sent back, handled on the Kafka thread. */
void vw_worker_collect(struct vw_worker *w);
/* worker.c: drops batched/retrying items of a partition (revoke). */
void vw_worker_drop_partition(struct vw_worker *w, int32_t partition);
/* Marks the worker fatal: the loop ends, it exits 1 and commits nothing past
 * what was delivered; /healthz turns 503. The caller logs why. */
void vw_worker_set_fatal(struct vw_worker *w);

/* The error callback of both clients (consumer.c): a fatal error (e.g. of the
 * idempotent producer) stops the worker; anything else is logged. */
void vw_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);

/* librdkafka conf helpers (consumer.c): set one property, logging failures;
 * apply a list, except the key `skip` (NULL: none). */
vw_status vw_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, vw_err *err);
vw_status vw_conf_apply(rd_kafka_conf_t *conf, const vw_kvlist *l, const char *skip, vw_err *err);

#endif
