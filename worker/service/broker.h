/* broker.h — a Kafka "broker" for tests and demos: librdkafka's mock cluster.
 *
 * librdkafka 2.0.2 ships an in-process mock cluster (rdkafka_mock.h) whose
 * listeners bind 127.0.0.1 on kernel-chosen ports, so other processes (kcat,
 * vela-worker run, Python clients) can talk to it over TCP. It speaks Produce,
 * Fetch, ListOffsets, consumer groups and offset commits, but not CreateTopics,
 * so topics are created here (docs/kafka-notes.md §1.2-§1.4).
 *
 * Ownership: vw_broker_new returns a broker the caller frees with vw_broker_free;
 * the bootstrap string is owned by the broker. Thread-safety: the mock runs on
 * its own threads; the functions below are called from one thread.
 * Errors: VW_EINVAL for a malformed topic list, VW_EKAFKA when librdkafka refuses.
 */
#ifndef VW_BROKER_H
#define VW_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_broker vw_broker;

/* Starts a mock cluster of n_brokers (>= 1) brokers. */
vw_status vw_broker_new(int n_brokers, vw_broker **out, vw_err *err);

/* Creates topics from a spec "name:partitions[,name:partitions...]" (partitions
 * >= 1; replication factor min(3, brokers)). Stops at the first bad entry. */
vw_status vw_broker_create_topics(vw_broker *b, const char *spec, vw_err *err);

/* "127.0.0.1:port[,127.0.0.1:port...]"; valid until vw_broker_free. */
const char *vw_broker_bootstraps(const vw_broker *b);

/* One control command, as read from the --control stdin stream:
 *   topic NAME PARTITIONS      create a topic
 *   err APIKEY COUNT CODE      next COUNT requests of APIKEY fail with CODE
 *                              (Kafka protocol numbers: Produce 0, Fetch 1,
 *                              OffsetCommit 8, ...; CODE -195 is a disconnect)
 *   down BROKER / up BROKER    take a broker down / bring it back
 *   leader TOPIC PART BROKER   move a partition leader
 *   topic_error TOPIC CODE     Metadata answers CODE for the topic (3: unknown,
 *                              29: not authorised; 0 clears it): to clients it
 *                              is gone or forbidden until cleared
 * Returns VW_EINVAL for an unknown or malformed command. */
vw_status vw_broker_control(vw_broker *b, const char *line, vw_err *err);

/* KIP-848 groups (group.protocol=consumer; the mock of librdkafka 2.12 and
 * later serves them): the session timeout and heartbeat interval the broker
 * hands its members (group.consumer.session.timeout.ms and
 * group.consumer.heartbeat.interval.ms on a real broker). VW_EUNSUPPORTED
 * when the loaded librdkafka's mock has no such setting. */
vw_status vw_broker_group_timeouts(vw_broker *b, int session_ms, int heartbeat_ms, vw_err *err);

/* Destroys the cluster; NULL is a no-op. */
void vw_broker_free(vw_broker *b);

#endif
