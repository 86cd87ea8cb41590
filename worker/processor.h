/* processor.h — the seam between the Kafka worker and whatever turns requests
 * into results (the model pipeline, or the test-only echo processor).
 *
 * The worker calls a processor in two steps:
 *   1. admit(record) on an admission thread, as records arrive. It returns either a
 *      finished result (a rejection: the record needs no model time) or a
 *      pending item with a token cost, which the worker batches.
 *   2. a micro-batch of pending items in three steps: prepare (Kafka thread),
 *      execute (the executor thread: the device call only), finish (a
 *      processing thread), filling one result per item; the executor thread
 *      drives the device while the next batch is prepared and the last ones
 *      are finished.
 * Before admit, the worker has already checked the record itself
 * (record_in.h): size, UTF-8, JSON syntax with Python's json.loads rules,
 * no unpaired surrogate, top-level object. A processor therefore only sees
 * values that are JSON objects.
 *
 * Results. kind RECORD: vela_status (200/400/413/422) and value, a JSON object
 * text WITHOUT "request_id" and "source" (the worker puts those two first, see
 * vw_result_out_value in result_out.h), plus optional extra headers. kind RETRY: a
 * transient failure (device out of memory, executor busy); the worker keeps the
 * item and runs it again after a backoff (it is never turned into a rejection).
 * kind FATAL: this record can never produce a result; the worker sends the
 * request to the dead-letter topic with err in a header and moves on.
 *
 * Ownership: a vw_result owns value and headers (vw_result_clear frees them);
 * the worker takes results out of the arrays it passes. Pending items belong to
 * the processor's item_free, called by the worker exactly once per item, after
 * its last batch (an item may go through several batches when it gets RETRY).
 * Records and their bytes are borrowed for the admit call only.
 *
 * Thread-safety: admit runs on the worker's admission threads (several
 * records at once), prepare on the Kafka thread, execute on the executor
 * thread, finish on any processing thread (several at once, for different
 * batches); a processor must allow them to overlap. ready/model may
 * be called from any thread.
 *
 * The model pipeline (pipeline.h) and the test-only echo (echo.h) implement
 * it; processors.h picks one by model.device.
 */
#ifndef VW_PROCESSOR_H
#define VW_PROCESSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/json_in.h"
#include "service/log.h"
#include "vw_status.h"

/* A consumed request record (borrowed). */
typedef struct vw_record {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp; /* ms since the epoch, -1 when the record has none */
    const void *key;   /* NULL when the record has no key */
    size_t key_len;
    const void *value; /* NULL for an empty (tombstone) value */
    size_t value_len;
    const char *request_id; /* request-id header, else key, else topic:partition:offset */
    const vw_json_doc *doc; /* the value as the worker's check parsed it, or NULL (admit may
                               parse it itself); borrowed for the admit call */
} vw_record;

/* One header to add to a result record. */
typedef struct vw_header {
    char *name;
    char *value;
    size_t value_len;
} vw_header;

typedef enum vw_result_kind {
    VW_RESULT_RECORD = 0, /* produce value (any vela status) */
    VW_RESULT_RETRY,      /* transient: run the item again after a backoff */
    VW_RESULT_FATAL,      /* no result possible: dead-letter the request */
} vw_result_kind;

typedef struct vw_result {
    vw_result_kind kind;
    int vela_status; /* RECORD: 200, 400, 413 or 422 */
    char *value;     /* RECORD: JSON object text (malloc'd), without request_id/source */
    size_t value_len;
    vw_header *headers; /* extra headers (malloc'd array of malloc'd fields) */
    size_t n_headers;
    vw_err err; /* RETRY / FATAL: why (err.type goes to metrics and the DLQ header);
                   RECORD with a rejection status: err.type may name the rejection type
                   for the metrics (else the worker reads the types of `detail`) */
} vw_result;

/* What admit decided. */
typedef struct vw_admission {
    bool finished;    /* true: result is the answer (e.g. a 422); no batch needed */
    vw_result result; /* when finished */
    void *item;       /* when !finished: the processor's item for its batches */
    int64_t tokens;   /* its cost against batching.max_tokens (>= 0) */
} vw_admission;

/* Thread CPU seconds a processor's finish spent, added to (the worker's
 * per-stage metrics). */
typedef struct vw_stage_times {
    double heads;    /* the model's readout heads */
    double answers;  /* calibration, span decoding */
    double envelope; /* the result JSON */
} vw_stage_times;

typedef struct vw_processor vw_processor;

typedef struct vw_processor_ops {
    const char *name;
    /* An admission thread. A non-OK status means the record cannot even be rejected:
     * the worker dead-letters it with err. */
    vw_status (*admit)(vw_processor *p, const vw_record *rec, vw_admission *out, vw_err *err);
    /* A micro-batch of pending items, in three steps so the worker can overlap
     * them: prepare on the Kafka thread as the batch is dispatched (host work
     * before the device, e.g. packing token trees), execute on the executor
     * thread (the device call, nothing else), finish on one of the worker's
     * processing threads (host work after the device: results[i], zeroed by
     * the worker, answers items[i]). A batch's steps run in that order, one at
     * a time; finish runs for several batches at once. prepare returns the
     * batch's state, which release frees after finish. A non-OK status from
     * prepare or execute makes every item of the batch RETRY (VW_ETRANSIENT) or
     * FATAL (anything else); finish is then not called. t (may be NULL)
     * receives finish's thread CPU time by stage. */
    vw_status (*prepare)(vw_processor *p, void *const *items, size_t n, void **batch, vw_err *err);
    vw_status (*execute)(vw_processor *p, void *batch, vw_err *err);
    void (*finish)(vw_processor *p, void *batch, vw_result *results, vw_stage_times *t);
    void (*release)(vw_processor *p, void *batch);
    void (*item_free)(vw_processor *p, void *item);
    /* (optional) The shutdown grace period is over: stop the execute at hand as
     * soon as possible (between trees) and make later ones fail at once, with
     * VW_ETRANSIENT (the worker then neither produces nor commits those
     * records: the next owner reads them again). Any thread. */
    void (*cancel)(vw_processor *p);
    /* (optional) false while the processor cannot take work (loading); NULL = ready. */
    bool (*ready)(vw_processor *p);
    /* The vela-model header: model name + revision. */
    const char *(*model)(vw_processor *p);
    void (*destroy)(vw_processor *p);
} vw_processor_ops;

struct vw_processor {
    const vw_processor_ops *ops;
    void *impl;
};

/* Releases a processor; NULL is a no-op. */
void vw_processor_free(vw_processor *p);

/* Frees what a result owns and zeroes it. */
void vw_result_clear(vw_result *r);

/* Appends a header (copies name and value). VW_ENOMEM leaves r unchanged. */
vw_status vw_result_add_header(vw_result *r, const char *name, const void *value, size_t len);

#endif
