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

typedef struct vw_executor vw_executor;

/* The backend table. Slots marked (optional) may be NULL. */
typedef struct vw_executor_ops {
    const char *name; /* "cpu", "cuda" */
    vw_status (*forward)(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                         vw_err *err);
    void (*destroy)(vw_executor *ex);
} vw_executor_ops;

struct vw_executor {
    const vw_executor_ops *ops;
    size_t hidden; /* width of one output row */
    int32_t vocab; /* token ids must be below it (vw_executor_forward checks) */
    void *impl;    /* backend state, owned */
    /* (optional, set by the executor's owner) Asked between trees (and by a
     * backend wherever it can stop cheaply): true ends the call with
     * VW_ETRANSIENT, type "cancelled" (the caller is shutting down). Called
     * from the driving thread; it must be cheap. */
    bool (*cancelled)(void *ctx);
    void *cancel_ctx;
};

/* Total number of readout rows of a batch of trees. */
size_t vw_trees_readout_count(const vw_tree *trees, size_t n_trees);
/* Tokens of one tree: its prefix and every block. */
size_t vw_tree_tokens(const vw_tree *t);

/* Checks the structural rules above (ids < vocab, readouts in range, n >= 1);
 * it names the first offending tree/block/index. vw_executor_forward calls it
 * (and refuses an empty batch) before a backend's forward runs. */
vw_status vw_trees_validate(const vw_tree *trees, size_t n_trees, int32_t vocab, vw_err *err);

/* rows: [vw_trees_readout_count(trees, n_trees) x ex->hidden] floats, caller-owned. */
vw_status vw_executor_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                              vw_err *err);

/* Whether the owner asked ex to stop (ex->cancelled); fills err when so. */
bool vw_executor_cancelled(const vw_executor *ex, vw_err *err);

/* Releases the executor; NULL is a no-op. */
void vw_executor_free(vw_executor *ex);

#ifdef __cplusplus
}
#endif
#endif
