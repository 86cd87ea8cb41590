/* kafka_conf.h — what the worker's two librdkafka clients share: setting
 * configuration properties with a named error, and the error callback.
 * Thread-safety: the conf helpers run on the Kafka thread before a client
 * exists; the error callback runs on the Kafka thread (served by the clients'
 * polls). Errors: VW_EINVAL names the key, the value and librdkafka's reason.
 */
#ifndef VW_KAFKA_CONF_H
#define VW_KAFKA_CONF_H

#include <librdkafka/rdkafka.h>

#include "service/config.h"
#include "vw_status.h"

/* Sets one property. */
vw_status vw_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, vw_err *err);
/* Applies a list, except the key `skip` (NULL: none). */
vw_status vw_conf_apply(rd_kafka_conf_t *conf, const vw_kvlist *l, const char *skip, vw_err *err);

/* The error callback of both clients (opaque: the worker): a fatal error (e.g.
 * of the idempotent producer) stops the worker; anything else is logged. */
void vw_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque);

#endif
