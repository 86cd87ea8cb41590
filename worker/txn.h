/* txn.h — exactly-once delivery (`delivery.mode: exactly_once`): the
 * producer's transactions, KIP-447 style (docs/exactly-once.md "Exactly once").
 * One transactional producer per worker; a transaction holds what the loop
 * produced in one turn (a micro-batch's results and dead letters at low load,
 * several batches' under load) and the input offsets those records complete,
 * sent with the consumer's group metadata: begin -> produce -> flush ->
 * send_offsets_to_transaction -> commit. The consumer commits nothing in this
 * mode. Results become visible to read_committed readers, and their offsets
 * committed, together or not at all.
 *
 * The ledger maps onto it unchanged: a delivery report of a record in the open
 * transaction acknowledges its offset (offsets.h), so the ledger's positions
 * (contiguous acknowledged offsets + 1) are exactly the offsets whose results
 * are in this transaction or an earlier committed one; those are the offsets
 * the transaction sends. The transaction keeps every record it produced until
 * it ends: an abort (an abortable error) hands them back, in produce order, to
 * be produced again in the next transaction before anything new — the redo
 * that KIP-447 does by rewinding the consumer, done from the results at hand
 * (no seek, no second run of the model). Records of partitions revoked
 * meanwhile are dropped at the redo (their offsets were not committed: the
 * next owner answers them).
 *
 * Errors as librdkafka classes them (rd_kafka_error_is_retriable,
 * _txn_requires_abort, _is_fatal): retriable -> the call again, after a pause,
 * until the deadline; abortable -> abort, redo; fatal (a fenced producer among
 * them) or unclassified -> raised into the fault record ("kafka_fatal",
 * "txn_failed"): the loop stops, commits nothing more, exit 1.
 *
 * Ownership: vw_txn_new/vw_txn_free (the sink creates it on its producer and
 * owns it); items handed to vw_txn_sent/_refused are the transaction's until
 * it ends (then freed, or handed back by vw_txn_take_redo: the caller's).
 * Everything in vw_txn_opts and the producer are borrowed.
 * Thread-safety: the Kafka thread only; librdkafka serves delivery reports
 * from inside vw_txn_commit's flush (the sink's callback, which calls back
 * vw_txn_delivered / _failed). Errors: VW_EKAFKA / VW_ENOMEM, named.
 */
#ifndef VW_TXN_H
#define VW_TXN_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "item.h"
#include "offsets.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"
#include "vw_status.h"

typedef struct vw_txn vw_txn;

typedef struct vw_txn_opts {
    const vw_config *cfg;
    const vw_log *log;
    vw_metrics *metrics;
    vw_offsets *ledger;   /* acknowledgements, the positions to send, commits confirmed */
    vw_fault *fault;      /* fatal and unclassified errors are raised here */
    vw_crashpoint *crash; /* after_txn_offsets, after_txn_commit */
    const char *topic;    /* the input topic */
    /* Called once per record when its transaction commits (the sink counts
     * results then: they are visible from that moment). May be NULL. */
    void (*committed)(void *ctx, vw_item *it);
    void *ctx;
} vw_txn_opts;

/* The worker's transactional.id into buf (cap bytes): "<prefix>-<identity>",
 * the prefix delivery.transactional_id_prefix (the group id when empty), the
 * identity delivery.worker_id, else the consumer's group.instance.id, else
 * "<host name>-<pid>" (unique per live worker, but not kept across a restart;
 * *stable is then false). stable may be NULL. */
void vw_txn_id(const vw_config *cfg, char *buf, size_t cap, bool *stable);

/* The producer properties of the mode into conf (the caller's):
 * transactional.id (idempotence and acks=all are the sink's). */
vw_status vw_txn_conf(const vw_config *cfg, rd_kafka_conf_t *conf, vw_err *err);

/* A transaction keeper for producer (borrowed; created with vw_txn_conf's
 * properties). Nothing is sent to a broker yet. */
vw_status vw_txn_new(const vw_txn_opts *o, rd_kafka_t *producer, vw_txn **out, vw_err *err);

/* rd_kafka_init_transactions: gets the producer id and epoch for the
 * transactional.id, aborting the open transaction of an earlier producer with
 * the same id and fencing that producer (a zombie). Blocks; retriable errors
 * are retried until deadline_ms (< 0: librdkafka's own limit, twice
 * transaction.timeout.ms). VW_EKAFKA "txn_init" naming librdkafka's error. */
vw_status vw_txn_init(vw_txn *t, int64_t deadline_ms, vw_err *err);

/* Before a record is produced: begins a transaction when none is open and
 * makes room to keep one more record. False when the record must not be
 * produced now: the open transaction failed (it must be aborted first), after
 * an abort the redo's pause has not passed, or out of memory (raised). */
bool vw_txn_begin(vw_txn *t, int64_t now_ms);

/* Whether records may be produced now (vw_txn_begin would begin or continue
 * a transaction): no failed transaction waiting for its abort, and the pause
 * after an abort is over. */
bool vw_txn_ready(const vw_txn *t, int64_t now_ms);

/* A record librdkafka took in the open transaction (after vw_txn_begin): kept
 * (taken) until the transaction ends. */
void vw_txn_sent(vw_txn *t, vw_item *it);

/* A record librdkafka refused because the transaction is no longer open for
 * records (ERR__STATE): kept (taken) to be produced again after the abort,
 * which this makes due. */
void vw_txn_refused(vw_txn *t, vw_item *it);

/* A kept record was delivered: its offset is acknowledged in the ledger the
 * first time (a redo after an abort does not acknowledge it again). */
void vw_txn_delivered(vw_txn *t, vw_item *it);

/* A kept record's delivery failed: the transaction must be aborted. */
void vw_txn_failed(vw_txn *t);

/* Forgets a kept record (it is the caller's again), e.g. a dead letter that
 * was refused even without its payload (the worker stops). */
void vw_txn_forget(vw_txn *t, vw_item *it);

/* Commits the open transaction, or one for offsets acknowledged without a
 * record (a dropped record's): flushes (delivery reports are served), sends
 * the ledger's positions ahead of the last commit with gmd
 * (rd_kafka_consumer_group_metadata of the consumer), commits; then confirms
 * the positions in the ledger and frees the records. Nothing to do while
 * records wait to be produced again. A failed transaction, an abortable
 * error, or a flush that does not end by deadline_ms is aborted (its records
 * kept for the redo); a fatal error is raised. deadline_ms < 0: librdkafka's
 * limit for each call (the remaining transaction time, as librdkafka
 * recommends). True when committed (or nothing to do), false otherwise. */
bool vw_txn_commit(vw_txn *t, const rd_kafka_consumer_group_metadata_t *gmd, int64_t deadline_ms);

/* Aborts the open transaction (a failed one included): its records are kept
 * for the redo, the next transaction waits a backoff (delivery.retry_backoff_ms,
 * doubling per abort in a row up to retry_backoff_max_ms). Retriable errors
 * are retried until deadline_ms (< 0: librdkafka's limit); a fatal one is
 * raised. No-op when none is open, or while a commit that outlived its
 * deadline goes on (the next vw_txn_commit resumes it). */
void vw_txn_abort(vw_txn *t, int64_t deadline_ms);

/* The records an abort handed back, in produce order; the caller takes them
 * (and the array: free()). NULL and *n = 0 when there are none. */
vw_item **vw_txn_take_redo(vw_txn *t, size_t *n);

/* Work the transaction still holds: an open transaction, a failed one, or
 * records waiting to be produced again. */
bool vw_txn_busy(const vw_txn *t);

/* Records waiting to be produced again. */
size_t vw_txn_redo_count(const vw_txn *t);

/* When the pause after an abort ends (vw_now_ms's clock); 0 when none. */
int64_t vw_txn_due(const vw_txn *t);

/* The transactional.id in use. */
const char *vw_txn_name(const vw_txn *t);

/* Frees the kept and redo records (never committed: their offsets are not);
 * NULL is a no-op. The producer is not touched. */
void vw_txn_free(vw_txn *t);

#endif
