/* plan.h — the token plan of one admitted request: the decoder trees to run
 * (docs/spec/request.md §4, §5.1, §7) and the answer plan the answer side needs
 * (question forms, rows, span parts/words, head routes, per-question errors,
 * usage).
 *
 * Trees: one per row (every non-span question + the first span; each further
 * span its own row), plus one per window of a span target longer than
 * hybrid_rmax. A tree is a prefix (Context + every part, kept lengths) and
 * blocks; readouts (block-relative): option_ends (last token of each option
 * piece, abstain last), query (last token), label_ranges (first and last token
 * of each label piece, inclusive: Decision 8), word_positions (first token of
 * each kept word inside the repeated target, with word_index its index in the
 * part's words).
 *
 * Executor order (vw_plan_exec): per executed block, rows are option_ends...,
 * query for choice/score/set blocks; for a span block every row of each label
 * range (label 0 first..last, label 1, ...) then word_positions. Unread span
 * blocks (replaced by windows) and trees left without blocks are not executed:
 * a block attends only to the prefix and itself, so they cannot change a
 * readout; they still count in usage.
 *
 * Ownership: vw_plan_build returns a plan owning the request it was given
 * (vw_plan_free frees both). vw_plan_exec fills a vw_plan_exec_out whose arrays
 * it owns (vw_plan_exec_free); its vw_tree point into the plan, which must
 * outlive it. Thread-safety: a built plan is immutable.
 * Errors: VW_OK when a decision was reached (status 200 with a plan, or 413
 * with detail when no row fits, Decision 1, or when the plan would run more
 * than the configuration's max_request_tokens, Decision 9); VW_ENOMEM;
 * tokenizer errors.
 */
#ifndef VW_PLAN_H
#define VW_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/canonical_json.h"
#include "admission/errlist.h"
#include "model/executor.h"
#include "admission/request.h"
#include "render.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_prow {
    size_t *entries; /* render order: non-span questions, then the span */
    size_t n_entries;
    int span; /* entry index of the row's span question, or -1 */
    bool fits;
    int64_t over;   /* tokens over the budget when !fits */
    int64_t tokens; /* rendered tokens (row tree + windows) when fits */
    size_t tree0, n_trees;
} vw_prow;

typedef struct vw_ppart {
    vw_role role;
    vw_ivec ids;    /* whole part */
    bool has_words; /* a span question reads it */
    vw_ivec words;  /* [2W] code-point offsets */
    vw_ivec first;  /* [W] first token of each word */
} vw_ppart;

typedef struct vw_pspan {
    size_t entry;
    size_t row;
    vw_role role;
    vw_head head;
    bool alias;              /* rendered as the single label `unsupported` */
    const vw_option *labels; /* [n_labels] as rendered (borrowed) */
    size_t n_labels;
    int64_t part_tokens; /* tokens of the whole part (PII length rule) */
    size_t n_windows;
} vw_pspan;

typedef struct vw_plan {
    vw_request *req; /* owned */
    int64_t max_length;
    vw_ppart parts[VW_N_ROLES]; /* n_parts, in state order */
    size_t n_parts;
    vw_prow *rows;
    size_t n_rows;
    vw_ptree *trees;
    size_t n_trees;
    vw_pspan *spans;
    size_t n_spans;
    int *row_of;          /* [req->n] row of each entry, -1 for invalid ones */
    int64_t input_tokens; /* usage: every rendered token of the rows that fit */
    vw_option halu_label; /* the alias rendering (borrowed strings) */
} vw_plan;

/* Plans an admitted request (takes ownership of req, also on failure). */
vw_status vw_plan_build(const vw_renderer *r, vw_request *req, vw_plan **out, int *status,
                        vw_errlist *detail, vw_err *err);
void vw_plan_free(vw_plan *p);

/* Bytes in -> plan or rejection: admission, then planning. */
vw_status vw_plan_request(const vw_renderer *r, const char *body, size_t len, vw_plan **out,
                          int *status, vw_errlist *detail, vw_err *err);
/* The same for a body of len bytes already parsed into doc (borrowed;
 * request.h vw_request_admit_doc). */
vw_status vw_plan_request_doc(const vw_renderer *r, size_t len, const vw_json_doc *doc,
                              vw_plan **out, int *status, vw_errlist *detail, vw_err *err);

/* Appends the plan as JSON (docs/processor.md "plan JSON"). */
void vw_plan_write_json(vw_sbuf *sb, const vw_plan *p);
/* Appends {"status":N,"detail":[...]} for a rejection. */
void vw_plan_write_rejection(vw_sbuf *sb, int status, const vw_errlist *detail);

typedef struct vw_plan_exec_out {
    vw_tree *trees; /* [n_trees] executed trees */
    size_t n_trees;
    vw_block *blocks;   /* storage for the trees' blocks */
    int32_t *readouts;  /* storage for every block's readouts */
    size_t *tree_of;    /* [n_trees] plan tree index of each executed tree */
    int64_t *first_row; /* [per plan block, in tree/block order] first output row, -1 */
    size_t n_rows;      /* vw_trees_readout_count of the batch */
} vw_plan_exec_out;

vw_status vw_plan_exec(const vw_plan *p, vw_plan_exec_out *out, vw_err *err);

/* Tokens the executor will run for this plan: each executed tree's prefix
 * and read blocks (its cost against batching budgets and max_request_tokens). */
int64_t vw_plan_cost(const vw_plan *p);
void vw_plan_exec_free(vw_plan_exec_out *out);

#ifdef __cplusplus
}
#endif
#endif
