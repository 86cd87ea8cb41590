/* source.h — the worker's source: the consumer client and what it owns (its
 * event and record queues, the intake hold and backpressure, the rebalance
 * holds, the start watchdog, the commits). It takes records from the assigned
 * partitions while the loop has room, handles assignments and revokes, and
 * commits what the ledger allows. Never produces; never holds a record: each
 * consumed one goes to the loop through the record hook.
 *
 * Hooks (vw_source_hooks), installed at open as Redis installs handlers into
 * its event loop: the source reaches the loop only through them, from inside
 * vw_source_poll (and vw_source_close, whose revoke runs them once more):
 *   record  a consumed record of an assigned partition (not while stopping);
 *   unreadable  a record librdkafka cannot hand over (poison.h): its offset,
 *           the error and librdkafka's reason; the source seeks past it;
 *   drop    a partition is being revoked: drop its queued work;
 *   settle  before a revoke's commit: let the revoked partitions' results
 *           finish (the loop collects, produces and serves deliveries) until
 *           none is on its way or deadline_ms (exactly_once: and end the open
 *           transaction, which commits their offsets);
 *   lost    (optional) an assignment is lost: nothing of it may be committed
 *           (exactly_once: the open transaction is aborted).
 *
 * Ownership: vw_source_open/vw_source_free; everything in vw_source_opts is
 * borrowed and must outlive the source; the ledger is the loop's, lent for
 * assignments, revokes, commits and the in-flight count.
 * Thread-safety: the Kafka thread, except the log callback (librdkafka's
 * threads; it touches atomics only). librdkafka serves the other callbacks
 * from vw_source_poll and vw_source_close.
 * Errors: VW_EKAFKA / VW_EINVAL / VW_ENOMEM from open, named; at run time a
 * fatal consumer error, a record outside its partition's queue, a partition's
 * consume errors for delivery.start_timeout_ms with no record between
 * (partition_stalled), a consume error in replay other than an unreadable
 * record, and out of memory while assigning are raised into the fault record
 * (fault.h).
 */
#ifndef VW_SOURCE_H
#define VW_SOURCE_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "kafka_conf.h"
#include "offsets.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"
#include "vw_status.h"

typedef struct vw_source vw_source;

typedef struct vw_source_hooks {
    void *ctx;
    void (*record)(void *ctx, const rd_kafka_message_t *m);
    void (*unreadable)(void *ctx, int32_t partition, int64_t offset, rd_kafka_resp_err_t e,
                       const char *reason);
    void (*drop)(void *ctx, int32_t partition);
    void (*settle)(void *ctx, const rd_kafka_topic_partition_list_t *parts, int64_t deadline_ms);
    void (*lost)(void *ctx, const rd_kafka_topic_partition_list_t *parts); /* may be NULL */
} vw_source_hooks;

typedef struct vw_source_opts {
    const vw_config *cfg;
    const vw_log *log;
    vw_metrics *metrics;
    vw_offsets *ledger;   /* assignments, revokes, commits (the loop's) */
    vw_fault *fault;      /* what stops the worker is raised here */
    vw_crashpoint *crash; /* after_commit */
    const char *topic;    /* the input topic */
    bool replay;          /* no group: vw_source_assign, no commits, no hooks but record */
    int wake_fd;          /* written when the event or record queue turns non-empty; -1: none */
    vw_source_hooks hooks;
    /* delivery.mode exactly_once: offsets are committed by the producer's
     * transactions (txn.h), never by the consumer (vw_source_commit and the
     * revoke's commit do nothing). */
    bool txn_offsets;
} vw_source_opts;

/* Opens the consumer (run: subscribes to the input topic). */
vw_status vw_source_open(const vw_source_opts *o, vw_source **out, vw_err *err);

/* Serves consumer events (rebalances, commit results, errors, statistics),
 * then takes up to 1,000 records, at most `room` of them (what the loop can
 * still admit) and, in run mode, while fewer than limits.max_in_flight are in
 * the ledger; each goes to the record hook. True when more may be waiting:
 * the caller must not sleep then. */
bool vw_source_poll(vw_source *s, size_t room);

/* Routes every assigned partition again (source.c "Routing"). */
void vw_source_reroute(vw_source *s);

/* Commits what the ledger allows; async unless sync (held while a rebalance
 * may run). No-op in replay and with txn_offsets. */
void vw_source_commit(vw_source *s, bool sync);

/* Shutdown: pauses the assignment (never resumed); later revokes settle by
 * deadline_ms at the latest. */
void vw_source_stop_fetching(vw_source *s, int64_t deadline_ms);

/* Replay: routes and assigns the partitions of l at their offsets. */
vw_status vw_source_assign(vw_source *s, const rd_kafka_topic_partition_list_t *l, vw_err *err);
/* Replay: the positions of the partitions of l into l; false when librdkafka
 * has none. */
bool vw_source_positions(vw_source *s, rd_kafka_topic_partition_list_t *l);
/* Replay: stops fetching one partition of the input topic. */
void vw_source_pause(vw_source *s, int32_t partition);

/* The consumer's group metadata (member, generation) for
 * rd_kafka_send_offsets_to_transaction; the caller destroys it
 * (rd_kafka_consumer_group_metadata_destroy). NULL once closed. */
rd_kafka_consumer_group_metadata_t *vw_source_group_metadata(vw_source *s);

/* A rebalance may be running for this member (rejoin.h: it rejoins, or a
 * hold after REBALANCE_IN_PROGRESS or a cooperative revoke): offsets sent now
 * could carry a generation about to change (exactly_once waits to end its
 * transaction; the revoke settle does not). */
bool vw_source_rebalancing(vw_source *s);

/* What the consumer learnt of its brokers (the loop's start check). */
const vw_kafka_health *vw_source_health(const vw_source *s);

/* Leaves the group by deadline_ms (a last revoke still runs the hooks and
 * commits) and destroys the client. Idempotent. */
void vw_source_close(vw_source *s, int64_t deadline_ms);
/* Closes if needed; NULL is a no-op. */
void vw_source_free(vw_source *s);

#endif
