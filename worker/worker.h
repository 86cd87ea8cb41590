/* worker.h — the Kafka worker: consumer group in, micro-batches through a
 * processor, one result record out per request, offsets committed after
 * delivery (docs/worker.md "Design").
 *
 * Threads: the caller of vw_worker_run/vw_worker_replay becomes the Kafka
 * thread: it alone polls the consumer and the producer, so the rebalance,
 * commit, delivery-report and error callbacks run on it, and it alone owns the
 * offset tracker and the batcher, and prepares closed micro-batches. An
 * executor thread runs the processor's execute (the device call) on them and
 * processing.threads threads its finish; they meet in bounded queues. Backpressure stops taking
 * records (polling continues; librdkafka's fetch queue bounds stop the fetcher) while
 * limits.max_in_flight records are unacknowledged; a rejoin of the group holds intake the same way.
 *
 * Ownership: cfg, log, proc and metrics are borrowed and must outlive the
 * worker. Errors: VW_EKAFKA for client failures (and a fatal librdkafka error
 * during the run), VW_EINVAL for a bad configuration, VW_ENOMEM.
 */
#ifndef VW_WORKER_H
#define VW_WORKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "service/config.h"
#include "service/log.h"
#include "service/metrics.h"
#include "processor.h"
#include "vw_status.h"

typedef struct vw_worker vw_worker;

/* The start check, before anything slow (the model) loads: builds the
 * consumer's and the producer's configuration as the worker (replay: as
 * replay) would, and creates each client with no broker and destroys it at
 * once, because librdkafka checks some properties only then: the SSL context
 * (ssl.key.location, ssl.ca.location, ssl.certificate.location, key
 * passwords), SASL mechanisms and their required properties, and properties
 * that contradict each other. Connects to nothing. librdkafka's own error
 * lines go to log. VW_EINVAL "config_invalid" as vw_kafka_client_error words
 * it (kafka_conf.h), VW_ENOMEM. */
vw_status vw_worker_check(const vw_config *cfg, const vw_log *log, bool replay, vw_err *err);

vw_status vw_worker_new(const vw_config *cfg, const vw_log *log, vw_processor *proc,
                        vw_metrics *metrics, vw_worker **out, vw_err *err);

/* Joins the group and serves until *stop becomes non-zero (SIGTERM/SIGINT),
 * then drains: stops fetching, finishes the batcher and the executor, produces
 * and flushes every result, commits, closes the consumer, all within
 * shutdown.grace_ms (work still unfinished then is left uncommitted, so it is
 * replayed later). *stop counts the signals: at 2 the drain ends at once, as
 * if the grace period were over. Logs "shutdown requested: grace N ms, in
 * flight M", every second "draining: answered A, left L", and last "stopped:
 * answered A, left unanswered U" (docs/worker.md "Shutdown"). VW_OK after a
 * stop (vw_worker_stop_report_get tells how it went), else the fault. */
vw_status vw_worker_run(vw_worker *w, volatile sig_atomic_t *stop, vw_err *err);

/* How a stop ended: every record in flight at the signal answered; the grace
 * period over with some left; a second signal. */
typedef enum vw_stop_end { VW_STOP_DRAINED = 0, VW_STOP_GRACE_OVER, VW_STOP_AT_ONCE } vw_stop_end;

/* What a vw_worker_run that returned VW_OK did with the records in flight. */
typedef struct vw_worker_stop_report {
    vw_stop_end end;
    size_t in_flight_at_signal; /* tracked and not yet answered at the signal */
    uint64_t answered;          /* records answered (acknowledged) since */
    size_t unanswered;          /* of those at the signal, left: not committed */
    int64_t elapsed_ms;         /* from the signal to the clients' close */
} vw_worker_stop_report;

void vw_worker_stop_report_get(const vw_worker *w, vw_worker_stop_report *out);

/* One replayed partition range [start, end) of the input topic. */
typedef struct vw_replay_range {
    int32_t partition;
    int64_t start, end;
} vw_replay_range;

/* Replay: reads the given ranges of the input topic without a group (no
 * commits), runs every record through the same admission and processor path
 * as run, and writes each result either as one JSON line to out (when out is
 * not NULL) or to results_topic. Progress goes to stderr. Returns when every
 * range is done (VW_OK) or *stop is set (VW_ETRANSIENT). */
vw_status vw_worker_replay(vw_worker *w, const vw_replay_range *ranges, size_t n_ranges, FILE *out,
                           const char *results_topic, volatile sig_atomic_t *stop, vw_err *err);

/* NULL is a no-op. */
void vw_worker_free(vw_worker *w);

#endif
