/* source_conf.h — the consumer's configuration, apart from the client: the
 * properties the source sets (its own, the user's, the delivery rule's), the
 * group protocol check, the heartbeat advice and the commit-hold window. No
 * client, no callbacks: the start check (worker.h vw_worker_check) builds a
 * client of the same properties without them, the source (source.h) adds its
 * own.
 * Thread-safety: pure functions of the config (vw_source_conf writes conf,
 * the caller's). Errors: VW_EINVAL "kafka_config" naming the property.
 */
#ifndef VW_SOURCE_CONF_H
#define VW_SOURCE_CONF_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdint.h>

#include "service/config.h"
#include "service/log.h"
#include "vw_status.h"

/* What librdkafka may hold of the input (source_conf.c fetch_bounds), bytes
 * but queued_kb (kB, librdkafka's unit). */
typedef struct vw_bounds {
    int64_t partition; /* max.partition.fetch.bytes */
    int64_t fetch;     /* fetch.max.bytes */
    int64_t receive;   /* receive.message.max.bytes */
    int64_t queued_kb; /* queued.max.messages.kbytes */
} vw_bounds;

/* What the properties decided, for the source's own state. */
typedef struct vw_source_conf_info {
    vw_bounds bounds;     /* the fetch bounds (the user's where set) */
    bool kip848;          /* group.protocol consumer: the broker assigns (KIP-848) */
    bool sticky_assignor; /* partition.assignment.strategy may pick cooperative-sticky */
    bool kafka_debug;     /* the user set librdkafka's `debug`: print its debug lines */
} vw_source_conf_info;

/* The consumer's properties into conf (the caller's): cooperative-sticky (not
 * under KIP-848), auto.offset.reset, statistics, client.id, the user's common
 * and consumer sections, cgrp debug lines (not in replay), the group id
 * (kafka.group.id, "vela-worker" when none, "vela-worker-replay" in replay),
 * no auto commit or offset store, no partition EOF, read_committed, and the
 * fetch bounds from limits.max_request_bytes (vw_bounds; the user's
 * properties win). info (may be NULL) receives what they decided. */
vw_status vw_source_conf(const vw_config *cfg, bool replay, rd_kafka_conf_t *conf,
                         vw_source_conf_info *info, vw_err *err);

/* How long async commits and intake wait for a rebalance to show (ms). */
int64_t vw_source_conf_hold_ms(const vw_config *cfg);

/* Logs a warning when the heartbeat is over a third of the session (the
 * classic protocol, not in replay): one missed heartbeat can end it. */
void vw_source_conf_advise(const vw_config *cfg, bool replay, const vw_log *log);

#endif
