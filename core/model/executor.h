/* executor.h — the one seam between the processor (host) and a backbone backend.
 *
 * Token trees in, final-normed hidden rows out. A tree is a shared prefix (the
 * rendered state) plus blocks (one per question); every block attends to the
 * whole prefix and causally to itself, never to other blocks, and block token j
 * sits at position n_prefix + j. Recurrent layers continue each block from the
 * prefix's final state (DeltaNet state and conv tail), attention layers from the
 * prefix's K/V. (docs/spec/request.md §5.1, docs/spec/backbone.md §1.3, §4.3.)
 *
 * Output layout: rows are written in order tree 0 .. n_trees-1; inside a tree
 * first the prefix readouts, then block 0's readouts, block 1's, ...; each row
 * has `hidden` floats (the backbone's final RMSNorm output, FP32).
 * vw_trees_readout_count() gives the number of rows the caller must provide.
 *
 * The CPU backend (backbone_cpu.c) is the reference; the CUDA backend
 * (cuda/) implements the same table and is tested against it.
 *
 * Heads (optional op): a backend that holds the readout heads' weights
 * (head_weights.h) may offer `heads`: right after a forward, on the same
 * thread, it computes CandidateHead and SpanHeadV2 from the rows that forward
 * left where it ran and returns only their logits (per candidate problem m
 * floats, per span problem words x labels), as core/answers/heads.h's
 * functions would from the same rows; a problem's logits do not depend on the
 * other problems of the job. A forward may then pass rows = NULL: nothing is
 * copied back, and the backend may return before its device finishes (the
 * heads call waits, and a device fault of the forward may surface there). The
 * CPU backend offers no heads op (its rows are already on the host, and
 * core/answers/heads.c is the oracle).
 *
 * Ownership: trees and their arrays are borrowed for the call. The executor owns
 * its weights/arena; vw_executor_free releases them. Thread-safety: one
 * executor is driven by one thread at a time.
 * Errors: VW_EINVAL for a malformed tree (readout out of range, token id out of
 * the vocabulary, empty tree); VW_ETRANSIENT for a retryable failure (e.g. out of
 * device memory for this batch: split and retry); anything else is fatal for
 * the executor. On failure the content of rows is unspecified.
 */
#ifndef VW_EXECUTOR_H
#define VW_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_block {
    const int32_t *ids; /* [n_ids] token ids, n_ids >= 1 */
    size_t n_ids;
    const int32_t *readouts; /* [n_readouts] block-relative indices in [0, n_ids) */
    size_t n_readouts;
} vw_block;

typedef struct vw_tree {
    const int32_t *prefix; /* [n_prefix] token ids, n_prefix >= 1 */
    size_t n_prefix;
    const int32_t *prefix_readouts; /* [n_prefix_readouts] indices in [0, n_prefix) */
    size_t n_prefix_readouts;
    const vw_block *blocks; /* [n_blocks], may be 0 */
    size_t n_blocks;
} vw_tree;

/* One CandidateHead problem of a head job: option rows [row, row + m) and the
 * query row of the last forward's readout order (above). */
typedef struct vw_head_cand_job {
    int32_t row, m; /* m >= 1 */
    int32_t query;
    bool is_set;   /* adds set_bias */
    float *logits; /* [m] out, host memory */
} vw_head_cand_job;

/* One SpanHeadV2 problem: word rows [words, words + n_words) and one label
 * vector per label, the mean of the closed row range [starts[l], ends[l]]. */
typedef struct vw_head_span_job {
    int32_t head;                 /* VW_SPAN_HEAD_ROUTER or VW_SPAN_HEAD_BROAD (head_weights.h) */
    int32_t words, n_words;       /* n_words may be 0 (nothing written) */
    const int32_t *starts, *ends; /* [n_labels] readout rows, closed ranges */
    int32_t n_labels;             /* >= 1 */
    float *z;                     /* [n_words x n_labels] out, row-major, host memory */
} vw_head_span_job;

/* The heads' problems over one forward's rows; arrays borrowed for the call. */
typedef struct vw_head_job {
    const vw_head_cand_job *cand;
    size_t n_cand;
    const vw_head_span_job *span;
    size_t n_span;
} vw_head_job;

typedef struct vw_executor vw_executor;

/* The backend table. Slots marked (optional) may be NULL. */
typedef struct vw_executor_ops {
    const char *name; /* "cpu", "cuda" */
    vw_status (*forward)(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                         vw_err *err);
    void (*destroy)(vw_executor *ex);
    /* (optional) The heads over the last forward's rows (see above); the job
     * was checked by vw_executor_heads. */
    vw_status (*heads)(vw_executor *ex, const vw_head_job *job, vw_err *err);
} vw_executor_ops;

struct vw_executor {
    const vw_executor_ops *ops;
    size_t hidden; /* width of one output row */
    int32_t vocab; /* token ids must be below it (vw_executor_forward checks) */
    void *impl;    /* backend state, owned */
    /* (optional, set by the executor's owner: vw_executor_set_cancel) Asked
     * between trees (and by a backend wherever it can stop cheaply): true
     * ends the call with VW_ETRANSIENT, type "cancelled" (the caller is
     * shutting down). Called from the driving thread; it must be cheap. */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
    /* Readout rows the last successful forward left (0 after a failed one):
     * what a head job may index. Set by vw_executor_forward. */
    size_t rows_left;
};

/* Total number of readout rows of a batch of trees. */
size_t vw_trees_readout_count(const vw_tree *trees, size_t n_trees);
/* Tokens of one tree: its prefix and every block. */
size_t vw_tree_tokens(const vw_tree *t);

/* Checks the structural rules above (ids < vocab, readouts in range, n >= 1);
 * it names the first offending tree/block/index. vw_executor_forward calls it
 * (and refuses an empty batch) before a backend's forward runs. */
vw_status vw_trees_validate(const vw_tree *trees, size_t n_trees, int32_t vocab, vw_err *err);

/* rows: [vw_trees_readout_count(trees, n_trees) x ex->hidden] floats, caller-owned;
 * NULL only when the executor offers heads (vw_executor_has_heads). Once the
 * owner has cancelled (ex->cancelled), it returns VW_ETRANSIENT "cancelled"
 * before the backend runs, for every backend. */
vw_status vw_executor_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                              vw_err *err);

/* Whether ex offers the heads op. */
bool vw_executor_has_heads(const vw_executor *ex);

/* Checks a head job against the last forward (rows and ranges inside its
 * readouts, m >= 1, n_labels >= 1, a known span head, outputs given):
 * VW_EINVAL "bad_head_job" naming the first offending problem. */
vw_status vw_head_job_validate(const vw_head_job *job, size_t n_rows, vw_err *err);

/* The heads over the last forward's rows (see "Heads" above): checks the job
 * (vw_head_job_validate) and runs it. VW_EUNSUPPORTED when ex offers no heads
 * op; VW_ETRANSIENT when the job does not fit the backend's scratch (split the
 * batch) or the owner has cancelled ("cancelled"); other errors are the
 * backend's. On failure the outputs are unspecified. */
vw_status vw_executor_heads(vw_executor *ex, const vw_head_job *job, vw_err *err);

/* Whether the owner asked ex to stop (ex->cancelled); fills err when so. */
bool vw_executor_cancelled(const vw_executor *ex, vw_err *err);

/* The owner's cancel question (cancelled above; NULL: never cancelled). */
void vw_executor_set_cancel(vw_executor *ex, bool (*cancelled)(void *ctx), void *ctx);

/* Releases the executor; NULL is a no-op. */
void vw_executor_free(vw_executor *ex);

#ifdef __cplusplus
}
#endif
#endif
