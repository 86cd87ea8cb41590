/* engine.h — one loaded Vela 2.0 decoder package, end to end: request bytes ->
 * plan (admission + render) -> executor (token trees -> hidden rows) -> heads
 * -> calibrated answers -> the System One envelope (docs/spec/answers.md §8,
 * docs/contract.md). Shared by `vela-worker score` and the Kafka pipeline.
 *
 * The backbone is injected through an executor factory (executor.h), so core
 * never depends on CUDA: the CPU backbone is the default, the worker passes the
 * CUDA one when asked.
 *
 * Ownership: vw_engine_open returns an engine owning the bundle, tokenizer,
 * renderer, calibration, head weights (FP32 copies) and executor;
 * vw_engine_free releases them. Plans from vw_engine_plan belong to the caller
 * (vw_plan_free) and must not outlive the engine.
 * Thread-safety: vw_engine_plan may run on any number of threads at once
 * (renderer and tokenizer are thread-safe), concurrently with one thread
 * calling vw_engine_score or vw_engine_execute (the executor is single-driver)
 * and any number calling vw_engine_finish (the engine is read-only there).
 * Errors: open -> the bundle's/tokenizer's/head's error naming the file or
 * tensor. score -> VW_ETRANSIENT when the executor asks to retry (split the
 * batch), other statuses when the batch cannot be answered at all; per-question
 * model failures are answers (invalid_model_output), not call failures.
 */
#ifndef VW_ENGINE_H
#define VW_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/bundle.h"
#include "admission/canonical_json.h"
#include "admission/errlist.h"
#include "model/executor.h"
#include "render/plan.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_engine vw_engine;

/* Builds the backbone executor for an open bundle (the bundle outlives it). */
typedef vw_status (*vw_executor_factory)(const vw_bundle *b, void *ctx, vw_executor **out,
                                         vw_err *err);

typedef struct vw_engine_opts {
    vw_executor_factory make_executor; /* NULL: the CPU reference backbone */
    void *make_ctx;
    int noul_calibration;        /* -1: calibration.json's default; 0 off; 1 on */
    int64_t max_request_tokens;  /* plans running more model tokens: 413 (Decision 9); 0: none */
    const char *manifest_sha256; /* the anchor of bundle.h vw_bundle_open_anchored; NULL: none */
    int scan_weights_full;       /* 1: every weight read for sense (bundle verify); 0: sampled */
} vw_engine_opts;

/* Opens and verifies the package in dir (bundle.h), checks it for sense
 * (model/bundle_sense.h: config keys, weights sampled or in full; the
 * tokenizer's split patterns vetted and its ids within the backbone's
 * vocab_size), loads its tokenizer, calibration, heads and the executor.
 * opts may be NULL (defaults). */
vw_status vw_engine_open(const char *dir, const vw_engine_opts *opts, vw_engine **out, vw_err *err);
void vw_engine_free(vw_engine *e);

/* Asks the executor to stop the forward at hand (between trees) and every
 * later one with VW_ETRANSIENT, type "cancelled": the owner is shutting down
 * and will not use the results. Any thread; cannot fail. */
void vw_engine_cancel(vw_engine *e);

/* "model_name@revision" for the vela-model header (borrowed). */
const char *vw_engine_model(const vw_engine *e);
/* The executor's name ("cpu", "cuda"). */
const char *vw_engine_device(const vw_engine *e);
/* The admission/render configuration (limits, presets). */
const vw_renderer *vw_engine_renderer(const vw_engine *e);

/* Admission + planning of one request body (plan.h vw_plan_request). */
vw_status vw_engine_plan(const vw_engine *e, const char *body, size_t len, vw_plan **plan,
                         int *status, vw_errlist *detail, vw_err *err);
/* The same for a body of len bytes already parsed into doc (borrowed). */
vw_status vw_engine_plan_doc(const vw_engine *e, size_t len, const vw_json_doc *doc, vw_plan **plan,
                             int *status, vw_errlist *detail, vw_err *err);

/* Scores n plans in one executor call and writes each envelope (a JSON object:
 * answers, usage, then spans, span_heads, sets, thresholds when present) into
 * out[i] (appended): vw_engine_pack, _execute and _finish in a row. On failure
 * (the first plan's that failed) out[] content is unspecified. */
vw_status vw_engine_score(vw_engine *e, vw_plan *const *plans, size_t n, vw_sbuf *out, vw_err *err);

/* The three steps of scoring a micro-batch, so a caller can overlap them (the
 * worker: the next batch is packed while one executes, the last one's heads,
 * answers and envelopes run on other threads):
 *   pack     host: each plan's executable trees (vw_plan_exec), in one array;
 *   execute  the executor call (the one thread that drives the executor),
 *            and the heads there when the executor runs them (executor.h
 *            "Heads": no rows come back, only logits); when the whole call
 *            fails (not VW_ETRANSIENT), every plan is run alone so one poison
 *            plan cannot sink the rest;
 *   finish   host: the heads over every plan unless the executor ran them
 *            (one GEMM per head weight and question), then each plan's
 *            answers and envelope into out[i]; any thread, several batches
 *            at once.
 * Each plan keeps its own outcome (vw_engine_batch_status). Plans are borrowed
 * until vw_engine_batch_free. pack and execute return VW_ETRANSIENT when the
 * whole batch should be retried (out of memory, the executor asks); other
 * failures are per plan. */
typedef struct vw_engine_batch vw_engine_batch;

/* Thread CPU seconds spent in finish, added to (heads; answers: calibration,
 * span decoding; envelope: the JSON). */
typedef struct vw_engine_times {
    double heads, answers, envelope;
} vw_engine_times;

vw_status vw_engine_pack(const vw_engine *e, vw_plan *const *plans, size_t n, vw_engine_batch **out,
                         vw_err *err);
vw_status vw_engine_execute(vw_engine *e, vw_engine_batch *b, vw_err *err);
/* out[n]: plan i's envelope is appended to out[i] when its outcome is VW_OK.
 * t may be NULL. */
void vw_engine_finish(const vw_engine *e, vw_engine_batch *b, vw_sbuf *out, vw_engine_times *t);
/* Plan i's outcome after the steps run so far (err filled when not VW_OK). */
vw_status vw_engine_batch_status(const vw_engine_batch *b, size_t i, vw_err *err);
void vw_engine_batch_free(vw_engine_batch *b);

#ifdef __cplusplus
}
#endif
#endif
