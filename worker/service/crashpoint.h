/* crashpoint.h — deterministic crash points for the reliability tests.
 *
 * `VW_CRASH_AT=<point>[:<n>]` in the worker's environment makes the process
 * abort() the n-th time (default 1) execution passes the named point:
 *   after_executor  a processing thread has finished a batch: its results exist
 *                   (executed and finished), none produced
 *   after_produce   a result or dead letter was handed to librdkafka (not acked)
 *   after_delivery  a delivery report acknowledged a record (offset not committed)
 *   after_commit    an offset commit was confirmed by the broker
 *   before_produce  a result is about to be handed to librdkafka
 *   after_txn_offsets  exactly_once: a transaction's offsets were sent, it is
 *                   not committed
 *   after_txn_commit   exactly_once: a transaction was committed
 * `<point>:<n>:fatal` (before_produce, after_produce and after_delivery only)
 * does not abort: the hit returns true and the worker makes its producer fail
 * fatally (rd_kafka_test_fatal_error, as an idempotent producer's sequence
 * error would), so tests can check that a fatal error commits nothing
 * unanswered.
 * Without the variable every hit is one relaxed atomic load and a compare, so
 * the points are compiled into every build (docs/reliability.md).
 *
 * Ownership: vw_crashpoint is a plain struct embedded in its owner (the
 * worker); nothing to free. Thread-safety: vw_crashpoint_hit may be called from
 * any thread (the counter is atomic); vw_crashpoint_init before any hit.
 * Errors: vw_crashpoint_init returns VW_EINVAL for an unknown point or a bad
 * count, naming the variable; the struct is then inert.
 * abort() here is deliberate: the point is to die like a crash, without
 * atexit handlers, flushes or commits (docs/style.md's no-abort rule is waived for
 * this test hook only).
 */
#ifndef VW_CRASHPOINT_H
#define VW_CRASHPOINT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "vw_status.h"

typedef enum vw_crash_point {
    VW_CRASH_NONE = 0,
    VW_CRASH_AFTER_EXECUTOR,
    VW_CRASH_AFTER_PRODUCE,
    VW_CRASH_AFTER_DELIVERY,
    VW_CRASH_AFTER_COMMIT,
    VW_CRASH_BEFORE_PRODUCE,
    VW_CRASH_AFTER_TXN_OFFSETS,
    VW_CRASH_AFTER_TXN_COMMIT,
} vw_crash_point;

typedef enum vw_crash_action {
    VW_CRASH_ABORT = 0,      /* abort() */
    VW_CRASH_FATAL_PRODUCER, /* the hit returns true: the caller fails its producer */
} vw_crash_action;

typedef struct vw_crashpoint {
    vw_crash_point point; /* VW_CRASH_NONE: inert */
    long at;              /* act on this hit (1-based) */
    vw_crash_action action;
    atomic_long hits;
} vw_crashpoint;

/* Parses spec ("after_produce", "after_commit:3", "after_delivery:60:fatal";
 * NULL or "" = inert). */
vw_status vw_crashpoint_init(vw_crashpoint *cp, const char *spec, vw_err *err);

/* The point's name ("after_produce"), or NULL for VW_CRASH_NONE / unknown. */
const char *vw_crashpoint_name(vw_crash_point p);

/* Counts a pass through p; on the configured hit aborts the process (action
 * abort) or returns true (fatal_producer). Writes one line to stderr first, so
 * tests can tell the crash from other deaths. False otherwise. */
bool vw_crashpoint_hit(vw_crashpoint *cp, vw_crash_point p);

#endif
