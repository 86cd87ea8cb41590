/* metrics.h — worker metrics and the HTTP endpoint (libmicrohttpd).
 *
 * GET /metrics  Prometheus text format 0.0.4 (names below, prefix vela_worker_)
 * GET /healthz  200 "ok" while the worker runs, 503 after a fatal error
 * GET /readyz   200 when the processor is ready, a partition assignment was
 *               received and no result waits out a transient produce error,
 *               else 503
 *
 * Counters, gauges and fixed-bucket histograms are C11 atomics: the Kafka
 * thread, the executor thread and the HTTP thread use them without locks.
 * Consumer lag per partition comes from librdkafka statistics JSON
 * (vw_metrics_stats_json, STATISTICS.md: partitions[].consumer_lag) and is kept
 * under a mutex. Label values are bounded: vela status codes, the rejection
 * types of errlist.h, partitions.
 *
 * Ownership: vw_metrics_new/free; vw_metrics_serve starts the HTTP thread
 * (httpd.h: its limits, and the guard that keeps /healthz and /readyz
 * answerable under a flood of connections that never finish a request),
 * stopped by vw_metrics_free. Errors: VW_EIO when the listen address cannot be
 * bound, VW_EINVAL for a malformed address, VW_ENOMEM.
 */
#ifndef VW_METRICS_H
#define VW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_metrics vw_metrics;

typedef enum vw_counter {
    VW_M_RECORDS_IN = 0,     /* request records consumed */
    VW_M_DLQ,                /* records sent to the dead-letter topic */
    VW_M_RETRIES,            /* transient processor failures (item re-run) */
    VW_M_PRODUCE_ERRORS,     /* failed deliveries (re-produced or dead-lettered) */
    VW_M_COMMITS,            /* successful offset commits (partitions) */
    VW_M_COMMIT_FAILURES,    /* failed offset commits (partitions) */
    VW_M_REBALANCES,         /* assignments and revocations */
    VW_M_BACKPRESSURE,       /* intake stopped at limits.max_in_flight */
    VW_M_BATCHES,            /* micro-batches run */
    VW_M_PARTITION_RESTARTS, /* partitions assigned again by the start watchdog */
    VW_M_SLOW_RECORDS,       /* admission + plan over limits.slow_record_ms */
    VW_M_UNREADABLE,         /* records librdkafka could not hand over: dead-lettered, skipped */
    VW_M_DLQ_TRUNCATED,      /* dead letters whose payload was cut to fit */
    VW_M_DLQ_FAILURES,       /* dead letters refused even empty: the worker stops */
    VW_M_PRODUCE_WAITS,      /* results kept for another try after a transient produce error */
    VW_M_TXN_COMMITS,        /* exactly_once: transactions committed */
    VW_M_TXN_ABORTS,         /* exactly_once: transactions aborted (their records produced again) */
    VW_M_COUNTERS
} vw_counter;

typedef enum vw_histogram {
    VW_H_BATCH_SIZE = 0, /* records per micro-batch */
    VW_H_BATCH_TOKENS,   /* tokens per micro-batch */
    VW_H_QUEUE_DELAY,    /* seconds from admission to the start of its batch */
    VW_H_EXEC,           /* seconds the processor spent on one batch */
    VW_H_E2E,            /* seconds from the request's timestamp to the result's ack */
    VW_H_TXN,            /* exactly_once: seconds to commit one transaction (flush to EndTxn) */
    VW_H_COUNT
} vw_histogram;

/* Where host CPU time goes (vela_worker_stage_cpu_seconds_total{stage}): the
 * Kafka thread's intake (polling, copying records), admission (the record
 * checks and the JSON parse), plan (the processor's admit), batching (the
 * batcher and each batch's prepare step), produce (results, delivery reports)
 * and commit; the executor thread's execute (its CPU, not the device's time);
 * the processing threads' heads, answers and envelope. Thread CPU time, so a
 * stage waiting on a lock or the device costs nothing here (admission and plan:
 * their share of the intake's CPU time by per-record wall time, worker.c). */
typedef enum vw_stage {
    VW_S_INTAKE = 0,
    VW_S_ADMISSION,
    VW_S_PLAN,
    VW_S_BATCHING,
    VW_S_EXECUTE,
    VW_S_HEADS,
    VW_S_ANSWERS,
    VW_S_ENVELOPE,
    VW_S_PRODUCE,
    VW_S_COMMIT,
    VW_S_COUNT
} vw_stage;

vw_metrics *vw_metrics_new(void);
void vw_metrics_free(vw_metrics *m);

void vw_metrics_inc(vw_metrics *m, vw_counter c, uint64_t n);
/* Adds thread CPU seconds to a stage. */
void vw_metrics_stage(vw_metrics *m, vw_stage s, double seconds);
/* The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID). */
double vw_thread_cpu_s(void);
/* Results produced (acknowledged) by vela status. */
void vw_metrics_result(vw_metrics *m, int vela_status);
/* A rejection of a given type (unknown types count as "other"). */
void vw_metrics_rejection(vw_metrics *m, const char *type);
/* Observes a value: a count for the size/token histograms, seconds otherwise. */
void vw_metrics_observe(vw_metrics *m, vw_histogram h, double v);
void vw_metrics_set_in_flight(vw_metrics *m, int64_t n);
void vw_metrics_set_paused(vw_metrics *m, bool paused);
void vw_metrics_set_assigned(vw_metrics *m, bool assigned);
void vw_metrics_set_ready(vw_metrics *m, bool ready);
void vw_metrics_set_fatal(vw_metrics *m);
/* Results wait out a transient produce error (an unknown or unauthorised
 * topic, a leader change): /readyz answers 503 meanwhile. */
void vw_metrics_set_produce_blocked(vw_metrics *m, bool blocked);
/* Updates consumer lag gauges from a librdkafka statistics JSON document. */
void vw_metrics_stats_json(vw_metrics *m, const char *json, size_t len);

/* Renders the Prometheus text (malloc'd, NUL-terminated); NULL on VW_ENOMEM. */
char *vw_metrics_render(vw_metrics *m, size_t *len);

/* Checks a listen address as vw_metrics_serve takes it: "host:port" or
 * "[v6]:port", port decimal digits in [0, 65535], host resolvable
 * (getaddrinfo). VW_EINVAL with the reason alone in err->msg (the config names
 * the key and the line). Binds nothing. */
vw_status vw_metrics_check_listen(const char *listen, vw_err *err);

/* Starts the HTTP endpoint on "host:port" (port 0: any free port). *port_out
 * (may be NULL) receives the bound port. Errors, the reason alone in err->msg
 * (the caller names the key and its source): VW_EINVAL as check_listen;
 * VW_EIO "metrics_listen" "'ADDR': cannot bind: <strerror>" (in use, not a
 * local address, a privileged port). */
vw_status vw_metrics_serve(vw_metrics *m, const char *listen, int *port_out, vw_err *err);

#endif
