/* processor.h — the seam between the Kafka worker and whatever turns requests
 * into results (the model pipeline, or the test-only echo processor).
 *
 * The worker calls a processor in two steps:
 *   1. admit(record) on the Kafka thread, as records arrive. It returns either a
 *      finished result (a rejection: the record needs no model time) or a
 *      pending item with a token cost, which the worker batches.
 *   2. run_batch(items) on the executor thread, with one micro-batch of pending
 *      items. It fills one result per item.
 * Before admit, the worker has already checked the record itself
 * (admit_record.h): size, UTF-8, JSON syntax with Python's json.loads rules,
 * no unpaired surrogate, top-level object. A processor therefore only sees
 * values that are JSON objects.
 *
 * Results. kind RECORD: vela_status (200/400/413/422) and value, a JSON object
 * text WITHOUT "request_id" and "source" (the worker puts those two first, see
 * vw_result_value in admit_record.h), plus optional extra headers. kind RETRY: a
 * transient failure (device out of memory, executor busy); the worker keeps the
 * item and runs it again after a backoff (it is never turned into a rejection).
 * kind FATAL: this record can never produce a result; the worker sends the
 * request to the dead-letter topic with err in a header and moves on.
 *
 * Ownership: a vw_result owns value and headers (vw_result_clear frees them);
 * the worker takes results out of the arrays it passes. Pending items belong to
 * the processor's item_free, called by the worker exactly once per item, after
 * its last run_batch (an item may go through run_batch several times when it
 * gets RETRY). Records and their bytes are borrowed for the admit call only.
 *
 * Thread-safety: admit runs on the Kafka thread while run_batch runs on the
 * executor thread; a processor must allow these two calls to overlap. Each of
 * them is called by one thread only. ready/model may be called from any thread.
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
    void *item;       /* when !finished: the processor's item for run_batch */
    int64_t tokens;   /* its cost against batching.max_tokens (>= 0) */
} vw_admission;

typedef struct vw_processor vw_processor;

typedef struct vw_processor_ops {
    const char *name;
    /* Kafka thread. A non-OK status means the record cannot even be rejected:
     * the worker dead-letters it with err. */
    vw_status (*admit)(vw_processor *p, const vw_record *rec, vw_admission *out, vw_err *err);
    /* Executor thread. results[i] (zeroed by the worker) answers items[i]. */
    void (*run_batch)(vw_processor *p, void *const *items, size_t n, vw_result *results);
    void (*item_free)(vw_processor *p, void *item);
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
