/* fault.h — the worker's fault record: the first cause that stops it, kept as
 * librdkafka keeps its fatal error (rd_kafka_set_fatal_error0: the first one
 * wins, later ones do not overwrite it). Every unit (source, flow, sink, the
 * loop) raises into the one record the loop owns; the loop ends at its next
 * turn, commits nothing past what was delivered, and `vela-worker run` exits 1
 * naming the first cause in its last log line (docs/worker.md "Exit status"
 * lists the causes).
 *
 * Ownership: a plain struct embedded in its owner (vw_fault_init, then
 * vw_fault_destroy); metrics are borrowed. Thread-safety: vw_fault_raise,
 * vw_fault_raised and vw_fault_cause may be called from any thread (the
 * Kafka thread raises most causes; librdkafka's threads none). Errors: none;
 * raising cannot fail.
 */
#ifndef VW_FAULT_H
#define VW_FAULT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "service/metrics.h"
#include "vw_status.h"

typedef struct vw_fault {
    pthread_mutex_t mu;
    atomic_bool raised;
    vw_err first;        /* status, type, msg, where of the first raise */
    vw_metrics *metrics; /* /healthz turns 503 at the first raise (may be NULL) */
} vw_fault;

/* An empty record; metrics may be NULL. */
void vw_fault_init(vw_fault *f, vw_metrics *metrics);
void vw_fault_destroy(vw_fault *f);

/* Raises a cause (st, a stable snake_case type, a message naming what failed,
 * the raising file:line): kept when it is the first, dropped otherwise. True
 * when it was the first. The raiser logs its own line; the record
 * is what the worker exits with. */
bool vw_fault_raise(vw_fault *f, vw_status st, const char *type, const char *file, int line,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#define VW_RAISE(f, st, type, ...)                                                                 \
    vw_fault_raise((f), (st), (type), __FILE__, __LINE__, __VA_ARGS__)

/* Whether anything was raised. A relaxed load: cheap enough for every turn. */
bool vw_fault_raised(vw_fault *f);

/* The first cause into *err (may be NULL) and its status; VW_OK, err
 * untouched, when nothing was raised. */
vw_status vw_fault_cause(vw_fault *f, vw_err *err);

#endif
