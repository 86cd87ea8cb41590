/* starts.h — partitions assigned but not yet fetching (the start watchdog).
 *
 * After an assignment, librdkafka fetches the committed offset (OffsetFetch)
 * before it starts fetching a partition. In librdkafka 2.0.2 an OffsetFetch
 * answered at request level with NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE
 * is not retried: the partition stays assigned and is never fetched
 * (librdkafka issue #5586; reproduced on the mock with one injected error,
 * docs/worker.md "A partition that never starts"). Only a new assignment of the partition
 * recovers it. The worker keeps here, per partition of its input topic, when
 * it was assigned; the partition leaves the list once it proves to be fetching
 * (a record arrived, or librdkafka's statistics show a fetch state other than
 * none/stopping/stopped), or when it is revoked. A partition still listed
 * timeout_ms after its assignment is due: the worker assigns it again and the
 * clock restarts.
 *
 * Pure bookkeeping (no Kafka calls): one thread (the Kafka thread) owns a
 * list. Errors: VW_ENOMEM from vw_starts_add (the list is unchanged).
 */
#ifndef VW_STARTS_H
#define VW_STARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_starts {
    struct vw_start {
        int32_t partition;
        int64_t since_ms; /* assigned (or assigned again) at this time */
    } * items;
    size_t n, cap;
} vw_starts;

/* Frees the list's memory; the struct may be reused (empty) afterwards. */
void vw_starts_free(vw_starts *s);

/* A partition was assigned at now_ms (an entry already there restarts). */
vw_status vw_starts_add(vw_starts *s, int32_t partition, int64_t now_ms);

/* The partition fetches (a record arrived) or was revoked: forget it. Cheap
 * when the list is empty, as it is in steady state. */
void vw_starts_remove(vw_starts *s, int32_t partition);

/* A librdkafka statistics fetch_state ("none", "stopping", "stopped",
 * "offset-query", "offset-wait", "active"; STATISTICS.md): true when the
 * fetcher was started, i.e. librdkafka itself now retries whatever fails. */
bool vw_starts_fetching(const char *fetch_state);

/* Writes up to cap partitions listed for at least timeout_ms by now_ms into
 * out, restarts their clocks, and returns how many. */
size_t vw_starts_due(vw_starts *s, int64_t now_ms, int64_t timeout_ms, int32_t *out, size_t cap);

#endif
