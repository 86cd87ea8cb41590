/* kafka_conf.h — what the worker's two librdkafka clients share: setting
 * configuration properties with a named error, and the error callback.
 * Thread-safety: the conf helpers run on the Kafka thread before a client
 * exists; vw_kafka_error runs in the clients' error callbacks, on the Kafka
 * thread (served by their polls). Errors: VW_EINVAL names the key, the value and librdkafka's
 * reason.
 */
#ifndef VW_KAFKA_CONF_H
#define VW_KAFKA_CONF_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "service/config.h"
#include "service/log.h"
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
 * reason leaves the path out; a property the reason names by an alias is
 * found and renamed as the user wrote it: `max.in.flight` for
 * max.in.flight.requests.per.connection), else "FILE: kafka: librdkafka
 * <client>: ...". */
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

/* The table (docs/operations.md "librdkafka versions"), n entries. */
const vw_kafka_workaround *vw_kafka_workarounds(size_t *n);
/* Whether a workaround applies to the loaded library (open: always). */
bool vw_kafka_workaround_on(const vw_kafka_workaround *wa);
/* The same by issue number (an issue not in the table: false). */
bool vw_kafka_issue_on(int issue);

/* "2.16.0 (built against 2.0.2)" into buf. */
void vw_kafka_versions(char *buf, size_t cap);

/* How long an error logged once is not logged again (then with a count). */
#define VW_KAFKA_ERROR_REPEAT_MS 30000
/* Distinct errors a client remembers for that (a broker's and the group
 * coordinator's alternate). */
#define VW_KAFKA_ERROR_KEYS 8

/* An error logged lately: its code, broker and reason (without librdkafka's
 * "(after Nms in state ...)"), when, and how many times since. */
typedef struct vw_kafka_seen {
    int err;
    char key[200];
    int64_t logged_ms;
    uint64_t repeated;
} vw_kafka_seen;

/* What a client learnt of its brokers, for the loop's start check (worker.c
 * check_broker), and the errors it logged lately. Written on the Kafka thread
 * only. */
typedef struct vw_kafka_health {
    bool up;          /* some broker answered (statistics, a rebalance, a record, a delivery) */
    char error[240];  /* librdkafka's last reason a broker could not be used, or "" */
    int64_t error_ms; /* when it was kept (vw_now_ms) */
    vw_kafka_seen seen[VW_KAFKA_ERROR_KEYS];
    int64_t repeat_ms; /* 0: VW_KAFKA_ERROR_REPEAT_MS (tests set less) */
} vw_kafka_health;

/* Whether the client rk can do nothing more: librdkafka raised a fatal error
 * (rd_kafka_fatal_error), or a call answered e == ERR__FATAL before the error
 * callback was served. If so, logs "fatal client error, stopping" with the
 * cause, raises it into fault as "kafka_fatal" ("fatal <client> error NAME:
 * cause"; first wins) and returns true. The one fatal path of both clients:
 * vw_kafka_error below and the sink's producev answers. */
bool vw_kafka_fatal(rd_kafka_t *rk, const char *client, rd_kafka_resp_err_t e, const vw_log *log,
                    vw_fault *fault);

/* The work of either client's error callback (client: "consumer" or
 * "producer"): a fatal error (ERR__FATAL, e.g. of the idempotent producer) is
 * logged with rd_kafka_fatal_error's cause and raised into fault as
 * "kafka_fatal" (true returned); the reason a broker could not be used is
 * kept in h; anything else is logged only (librdkafka recovers by itself), as
 * one warning "kafka error client=C code=NAME broker=\"B\" reason=\"R\"" (the
 * broker read from the reason's "host:port/id: " prefix), and an error
 * already logged in the last VW_KAFKA_ERROR_REPEAT_MS (same code, broker and
 * reason) is counted instead, its count given the next time it is logged
 * ("repeated=N"). */
bool vw_kafka_error(rd_kafka_t *rk, const char *client, int err, const char *reason,
                    const vw_log *log, vw_fault *fault, vw_kafka_health *h);

/* A librdkafka log line its error callback tells again: a broker's failure
 * is logged (facility FAIL) and queued as an error event, which
 * vw_kafka_error logs once; the log callbacks drop these lines (but with
 * kafka debug contexts on). */
bool vw_kafka_log_twin(const char *facility);

#endif
