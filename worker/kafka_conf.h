/* kafka_conf.h — what the worker's two librdkafka clients share: setting
 * configuration properties with a named error, and the error callback.
 * Thread-safety: the conf helpers run on the Kafka thread before a client
 * exists; the error callback runs on the Kafka thread (served by the clients'
 * polls). Errors: VW_EINVAL names the key, the value and librdkafka's reason.
 */
#ifndef VW_KAFKA_CONF_H
#define VW_KAFKA_CONF_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

#include "service/config.h"
#include "vw_status.h"

/* Sets one property. */
vw_status vw_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, vw_err *err);
/* Applies a list, except the key `skip` (NULL: none). */
vw_status vw_kafka_conf_apply(rd_kafka_conf_t *conf, const vw_kvlist *l, const char *skip,
                              vw_err *err);

/* A client librdkafka refused to create (rd_kafka_new's errstr; client:
 * "consumer" or "producer") as a config error: VW_EINVAL, type
 * "config_invalid", "FILE:LINE: kafka[.client].<prop>: librdkafka <client>:
 * <errstr>" naming the user's property the reason names first (its variable
 * for an environment override; a *.location value is shown, as librdkafka's
 * reason leaves the path out), else "FILE: kafka: librdkafka <client>: ...". */
vw_status vw_kafka_client_error(const vw_config *cfg, const char *client, const char *errstr,
                                vw_err *err);

/* The consumer group of a config without kafka.group.id. */
#define VW_DEFAULT_GROUP_ID "vela-worker"

/* A consumer property as the consumer gets it: kafka.consumer.<key>, else
 * kafka.<key> (the consumer section is applied last), else NULL. */
const char *vw_kafka_consumer_prop(const vw_config *cfg, const char *key);

/* librdkafka as loaded at run time (rd_kafka_version(), which may differ
 * from the headers the worker was built against: the C ABI is stable and a
 * newer library runs the same binary) is older than major.minor.revision. */
bool vw_kafka_before(int major, int minor, int revision);

/* A workaround for a librdkafka defect, and the versions it applies to. */
typedef struct vw_kafka_workaround {
    int issue;         /* confluentinc/librdkafka issue number */
    const char *fixed; /* "2.3.0", or NULL while the issue is open */
    const char *what;  /* what the worker does about it */
} vw_kafka_workaround;

/* The table (docs/worker.md "librdkafka versions"), n entries. */
const vw_kafka_workaround *vw_kafka_workarounds(size_t *n);
/* Whether a workaround applies to the loaded library (open: always). */
bool vw_kafka_workaround_on(const vw_kafka_workaround *wa);
/* The same by issue number (an issue not in the table: false). */
bool vw_kafka_issue_on(int issue);

/* "2.16.0 (built against 2.0.2)" into buf. */
void vw_kafka_versions(char *buf, size_t cap);

/* The error callback of both clients (opaque: the worker): a fatal error (e.g.
 * of the idempotent producer) stops the worker; anything else is logged. */
void vw_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);

#endif
