/* consumer.h — the worker's consumer side (consumer.c): the client, intake
 * from the assigned partitions, the intake hold, offset commits, rebalances and
 * the start watchdog. Its state is its own (struct vw_consumer, opaque here).
 * Thread-safety: the Kafka thread only; librdkafka serves its callbacks from
 * vw_consumer_poll. Errors: VW_EKAFKA / VW_EINVAL from open, named.
 */
#ifndef VW_CONSUMER_H
#define VW_CONSUMER_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>

#include "vw_status.h"

struct vw_worker;

vw_status vw_consumer_open(struct vw_worker *w, vw_err *err);
/* The consumer's configuration into conf (the caller's): the worker's settings,
 * the user's properties, the callbacks with w as opaque. Allocates the
 * consumer side's state when w has none (vw_consumer_free releases it). */
vw_status vw_consumer_conf(struct vw_worker *w, rd_kafka_conf_t *conf, vw_err *err);
/* Serves consumer events, then admits up to 1000 records while fewer than
 * limits.max_in_flight are in flight; true when more may be waiting. */
bool vw_consumer_poll(struct vw_worker *w);
/* Routes the records of newly assigned partitions to the record queue. */
void vw_consumer_route(struct vw_worker *w, const rd_kafka_topic_partition_list_t *parts);
/* Routes every assigned partition again (see consumer.c "Routing"). */
void vw_consumer_reroute(struct vw_worker *w);
/* Shutdown: pauses the assignment (never resumed). */
void vw_consumer_stop_fetching(struct vw_worker *w);
/* Commits what the tracker allows; async unless sync. */
void vw_consumer_commit(struct vw_worker *w, bool sync);
/* Leaves the group (a last revoke may still produce and commit) and destroys
 * the client. */
void vw_consumer_close(struct vw_worker *w);
/* Reads one librdkafka log line (facility, text): true when it is a change
 * of the group's join state, librdkafka's "CGRPJOINSTATE" debug line `Group
 * "<id>" changed join state <from> -> <to> (...)`; *steady: <to> is
 * "steady"; *joined: a JoinGroup was answered (-> wait-sync, or the leader's
 * wait-join -> wait-metadata). The worker asks librdkafka for these lines
 * (debug cgrp); tests/test_kafka_worker.c checks the text on the library
 * loaded. */
bool vw_consumer_join_line(const char *fac, const char *buf, bool *steady, bool *joined);

/* Frees the consumer side's state (after close); NULL state is a no-op. */
void vw_consumer_free(struct vw_worker *w);

#endif
