/* sink.h — the worker's sink: the producer client and what it owns (its
 * event queue, the redo list of failed deliveries, the dead flag). It turns
 * a finished item into a result record (request id and source first, the
 * contract's headers) or a dead letter, serves the delivery reports, which
 * acknowledge the record's offset in the ledger, and keeps a failed delivery
 * to produce again. Replay to a file writes one JSON line per result instead
 * (no client). Never consumes, commits or decides the produce order: the
 * loop hands it items in the ledger's per-partition order (worker.c).
 *
 * Ownership: vw_sink_open/vw_sink_free; an item handed to vw_sink_produce is
 * the sink's (librdkafka's opaque until its delivery report, then freed or
 * kept for redo). Everything in vw_sink_opts is borrowed and must outlive the
 * sink; the ledger is the loop's, lent for acknowledgements and the
 * assignment checks of failed deliveries.
 * Thread-safety: the Kafka thread only; librdkafka serves the delivery reports
 * and the error callback from this unit's polls and produce calls (its log
 * callback, which only logs, from librdkafka's own threads).
 * Errors: VW_EKAFKA / VW_EINVAL from open, named; at run time a fatal
 * producer error or an out-of-memory redo list is raised into the fault
 * record (fault.h) and makes the sink dead.
 */
#ifndef VW_SINK_H
#define VW_SINK_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fault.h"
#include "item.h"
#include "kafka_conf.h"
#include "offsets.h"
#include "processor.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"
#include "txn.h"
#include "vw_status.h"

typedef struct vw_sink vw_sink;

typedef struct vw_sink_opts {
    const vw_config *cfg; /* topics (results, dlq), kafka.common/producer */
    const vw_log *log;
    vw_processor *proc; /* the vela-model header (proc->ops->model) */
    vw_metrics *metrics;
    vw_offsets *ledger;   /* acknowledgements go here (the loop's) */
    vw_fault *fault;      /* a fatal producer error is raised here */
    vw_crashpoint *crash; /* before_produce, after_produce, after_delivery */
    const char *topic;    /* the input topic (the source header) */
    const char *results_topic;
    FILE *file;  /* replay to a file: one JSON line per result, no client */
    bool replay; /* replay: counts what is done; no assignment checks */
    /* delivery.mode exactly_once (run only): a transactional producer; every
     * record goes into the open transaction (txn.h), which keeps it until the
     * transaction ends. */
    bool transactions;
    int wake_fd; /* written when the producer's queue turns non-empty; -1: none */
} vw_sink_opts;

/* The producer's configuration into conf (the caller's): the user's
 * properties, the fixed idempotence and acks; no callbacks (the start check,
 * worker.h vw_worker_check, creates a client of it with none). */
vw_status vw_sink_conf(const vw_config *cfg, rd_kafka_conf_t *conf, vw_err *err);

/* Opens the sink: the producer client, or none for a file; with
 * transactions, the transaction keeper on it (vw_sink_txn; its
 * init_transactions is the loop's). */
vw_status vw_sink_open(const vw_sink_opts *o, vw_sink **out, vw_err *err);

/* Produces one finished item (taken): its result to its reply topic or the
 * results topic, or the request to the DLQ (FATAL), or a line to the file. A
 * record librdkafka refuses at once is dead-lettered (or left unanswered by
 * a dead producer). */
void vw_sink_produce(vw_sink *s, vw_item *it);

/* Produces again the failed deliveries kept since the last call, and with
 * transactions the records of an aborted transaction (first, in their order)
 * (each still of the current assignment of its partition; others are freed). */
void vw_sink_redo(vw_sink *s);

/* Serves delivery reports for up to timeout_ms (no-op without a client). */
void vw_sink_poll(vw_sink *s, int timeout_ms);

/* The producer can deliver nothing more (a fatal error; raised already). */
bool vw_sink_dead(const vw_sink *s);

/* Failed deliveries (and an aborted transaction's records) waiting to be
 * produced again. */
size_t vw_sink_pending(const vw_sink *s);

/* Replay: results delivered (or written to the file) so far. */
size_t vw_sink_done(const vw_sink *s);

/* The producer's transactions (txn.h), the sink's; NULL unless
 * opts.transactions. */
vw_txn *vw_sink_txn(vw_sink *s);

/* What the producer learnt of its brokers (the loop's start check). */
const vw_kafka_health *vw_sink_health(const vw_sink *s);

/* Flushes until deadline_ms (at least 1 s), purges what is left (left
 * uncommitted: the purged reports free their items) and destroys the client;
 * a transaction still open is aborted first (by deadline_ms). Idempotent. */
void vw_sink_close(vw_sink *s, int64_t deadline_ms);

/* Closes if needed and frees the redo list; NULL is a no-op. */
void vw_sink_free(vw_sink *s);

#endif
