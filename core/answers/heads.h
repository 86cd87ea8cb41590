/* heads.h — the decoder readout heads in FP32 (docs/spec/answers.md §1.1, §3, §5).
 *
 * CandidateHead (Choice, Noul, Score, Set): option-endpoint rows and the block's
 * query row -> one logit per option ([ABS] last when the block shows it):
 *   z_i = <W_key LN_c(c_i), W_query LN_q(q)> / sqrt(d)
 *       + w_scalar . GELU(W_cmlp LN_c(c_i) + b_cmlp + W_qmlp LN_q(q)),
 * plus set_bias for Set questions. SpanHeadV2 (span2.* router, span_broad.*
 * broad): word rows and label vectors (the mean of each label block's closed row
 * range) -> a W x L logit matrix:
 *   x_w = LN_word(X_w) - mean_w;  a_l = LN_label(A_l) + slot[min(l, S-1)] (- mean_l if L >= 2)
 *   Z[w,l] = <K x_w, Q a_l> / sqrt(d) + v . GELU(M x_w + b_M + N a_l).
 * LayerNorm eps 1e-5 (biased variance); GELU is the exact erf form. Projections
 * run through OpenBLAS (cblas_sgemm). The weights' names, shapes and loading
 * (vw_cand_head_init, vw_span_head_init) are core/model/head_weights.h's, which
 * the device heads (cuda/heads_cuda.cu) share: these functions are their oracle.
 *
 * Ownership: vw_cand_head / vw_span_head BORROW their weight pointers (from the
 * bundle, through the lookup callback); the weights must outlive the head. The
 * structs are plain values the caller may keep on the stack; nothing to free.
 * Thread-safety: a head is read-only; logits functions may run concurrently
 * (each allocates its own scratch).
 * Errors: VW_EINVAL for a missing tensor or a shape that does not match (named,
 * type "bad_head_tensor"), for zero-sized inputs or out-of-range label ranges
 * ("length_mismatch"); VW_ENOMEM. Non-finite hidden rows give non-finite logits
 * (the answer side turns them into invalid_model_output); no error here.
 */
#ifndef VW_HEADS_H
#define VW_HEADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/head_weights.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* logits[i] for option endpoint rows cands [m, H] and the query row [H]; adds
 * set_bias (in FP32) when is_set. m >= 1. */
vw_status vw_cand_head_logits(const vw_cand_head *h, const float *cands, size_t m,
                              const float *query, bool is_set, float *logits, vw_err *err);

/* A group of candidate-head problems (the engine passes a micro-batch's):
 * problem k has m >= 1 option rows and one query row; its logits (m) are
 * written as vw_cand_head_logits would write them, bit for bit: each
 * problem's rows go through their own GEMM per weight (OpenBLAS rounds a row
 * by where it sits in a call, so rows sharing a call with other problems'
 * came out other bits than alone). */
typedef struct vw_cand_problem {
    const float *cands; /* [m, H] */
    size_t m;
    const float *query; /* [H] */
    bool is_set;
    float *logits; /* [m] out */
} vw_cand_problem;

vw_status vw_cand_head_logits_batch(const vw_cand_head *h, const vw_cand_problem *p, size_t n,
                                    vw_err *err);

/* Label vectors: out[l] = mean of rows[starts[l] .. ends[l]] (inclusive) for rows
 * [n_rows, hidden] (docs/contract.md Decision 8). Accumulated in float64, stored FP32. */
vw_status vw_span_label_means(const float *rows, size_t n_rows, size_t hidden,
                              const int32_t *starts, const int32_t *ends, size_t n_labels,
                              float *out, vw_err *err);

/* Z [n_words, n_labels] from word rows [n_words, H] and label vectors [n_labels, H]
 * (vw_span_label_means). n_labels >= 1; n_words == 0 is a no-op. */
vw_status vw_span_head_logits(const vw_span_head *h, const float *words, size_t n_words,
                              const float *labels, size_t n_labels, float *z, vw_err *err);

/* A group of span-head problems (one per executed span block or window),
 * batched the same way; each z as vw_span_head_logits writes it (the words
 * are centred over their own problem). */
typedef struct vw_span_problem {
    const float *words; /* [n_words, H] */
    size_t n_words;
    const float *labels; /* [n_labels, H] label vectors */
    size_t n_labels;     /* >= 1 */
    float *z;            /* [n_words, n_labels] out */
} vw_span_problem;

vw_status vw_span_head_logits_batch(const vw_span_head *h, const vw_span_problem *p, size_t n,
                                    vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
