/* producer.h — the worker's producer side (producer.c): result records in
 * per-partition input order, dead letters, delivery reports (which acknowledge
 * to the offset tracker), replay lines to a file. Never consumes or commits.
 * Thread-safety: the Kafka thread only; delivery reports are served from its
 * polls. Errors: VW_EKAFKA / VW_EINVAL from open, named.
 */
#ifndef VW_PRODUCER_H
#define VW_PRODUCER_H

#include <librdkafka/rdkafka.h>

#include "vw_status.h"

struct vw_worker;

vw_status vw_producer_open(struct vw_worker *w, vw_err *err);
/* The producer's configuration into conf (the caller's): the user's
 * properties, the fixed idempotence and acks, the callbacks with w as opaque. */
vw_status vw_producer_conf(struct vw_worker *w, rd_kafka_conf_t *conf, vw_err *err);
/* Produces every result the tracker has ready, in partition order, and the
 * failed deliveries waiting to be produced again. */
void vw_produce_ready(struct vw_worker *w);
/* Serves delivery reports for up to timeout_ms. */
void vw_producer_poll(struct vw_worker *w, int timeout_ms);
/* Flushes until the stop deadline (at least 1 s), purges what is left (left
 * uncommitted) and destroys the client. No-op without a producer. */
void vw_producer_close(struct vw_worker *w);

#endif
