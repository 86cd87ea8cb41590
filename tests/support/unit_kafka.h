/* unit_kafka.h — helpers for the worker's unit suites (test_sink, test_source,
 * test_flow): an in-process mock cluster (worker/service/broker.h), a config
 * pointing at it, items made by hand, and a poll-until loop. Ownership: each
 * helper says what the caller frees. Thread-safety: one test thread. Errors:
 * a failing set-up fails the test (cr_assert).
 */
#ifndef VW_UNIT_KAFKA_H
#define VW_UNIT_KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "item.h"
#include "offsets.h"
#include "processor.h"
#include "service/broker.h"
#include "service/config.h"
#include "service/crashpoint.h"
#include "service/log.h"
#include "service/metrics.h"

/* What every unit suite sets up around the unit: a mock cluster with topics,
 * a config for it, the echo processor, metrics, a ledger, a fault record, a
 * crash point and a log to stderr (warnings). */
typedef struct vw_unit_env {
    vw_broker *b;
    vw_config *cfg;
    vw_processor *proc;
    vw_metrics *metrics;
    vw_offsets *ledger;
    vw_fault fault;
    vw_crashpoint crash;
    vw_log log;
} vw_unit_env;

/* topics: vw_unit_broker's spec; group, extra_yaml: vw_unit_config's; crash:
 * a VW_CRASH_AT spec or NULL; free_result: the ledger's (NULL: none). */
void vw_unit_env_init(vw_unit_env *e, const char *topics, const char *group, const char *extra_yaml,
                      const char *crash, void (*free_result)(void *));
void vw_unit_env_free(vw_unit_env *e);

/* A one-broker mock cluster with the topics of spec ("name:parts,..."). */
vw_broker *vw_unit_broker(const char *topics);

/* A config for the broker: topics requests/results/requests.dlq, the
 * consumer's test timings of docs/kafka-notes.md §1.5 (group `group`, may be
 * NULL), plus extra YAML (may be NULL). vw_config_free it. */
vw_config *vw_unit_config(const vw_broker *b, const char *group, const char *extra_yaml);

/* The test-echo processor (echo.h). vw_processor_free it. */
vw_processor *vw_unit_echo(void);

/* An item as the flow makes one (one allocation: request id, no key, value),
 * for partition:offset of the input topic in ledger epoch `epoch`. With a
 * result (kind RECORD, vela status 200, value `result`) when result is not
 * NULL. vw_item_free it (or hand it on). */
vw_item *vw_unit_item(vw_processor *p, int32_t partition, int64_t offset, uint32_t epoch,
                      const char *request_id, const char *value, const char *result);

/* Real consumed records (librdkafka's own messages: the flow reads their
 * headers and timestamps): n of topic:partition from offset 0, read by a
 * consumer without a group. vw_unit_fetched_free releases them and it. */
typedef struct vw_unit_fetched {
    rd_kafka_t *rk;
    rd_kafka_message_t **m;
    size_t n;
} vw_unit_fetched;
vw_unit_fetched vw_unit_fetch(const vw_broker *b, const char *topic, int32_t partition, size_t n);
void vw_unit_fetched_free(vw_unit_fetched *f);

/* Calls step(ctx) until done(ctx) is true or timeout_ms passed; true when
 * done. */
bool vw_unit_until(bool (*done)(void *ctx), void (*step)(void *ctx), void *ctx, int timeout_ms);

#endif
