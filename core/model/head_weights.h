/* head_weights.h — the decoder readout heads' description (docs/spec/answers.md
 * §1.1, §3, §5): the tensors of CandidateHead and SpanHeadV2 by name and shape,
 * the constants of their math, and loading their FP32 weights by name.
 *
 * Both sides of the heads read it, as both backbones read qwen35_config.h:
 * core/answers/heads.c (the CPU heads, the oracle) and cuda/ (the heads on the
 * device behind executor.h's heads op). The math itself is heads.h's:
 *   CandidateHead (prefix "head.", plus the top-level `set_bias`):
 *     z_i = <W_key LN_c(c_i), W_query LN_q(q)> / sqrt(d)
 *         + w_scalar . GELU(W_cmlp LN_c(c_i) + b_cmlp + W_qmlp LN_q(q))  (+ set_bias)
 *   SpanHeadV2 ("span2." router, "span_broad." broad):
 *     x_w = LN_word(X_w) - mean_w;  a_l = LN_label(A_l) + slot[min(l, S-1)] (- mean_l if L >= 2)
 *     Z[w,l] = <K x_w, Q a_l> / sqrt(d) + v . GELU(M x_w + b_M + N a_l)
 * LayerNorm eps VW_HEAD_LN_EPS with the biased variance; GELU the exact erf form.
 *
 * Ownership: vw_cand_head / vw_span_head BORROW their weight pointers (from
 * the lookup's owner); the weights must outlive the head. vw_head_tensors owns
 * the FP32 copies it hands out until vw_head_tensors_free. Thread-safety: a
 * loaded head is read-only; one vw_head_tensors is filled by one thread.
 * Errors: VW_EINVAL for a missing tensor or a shape that does not match (named,
 * type "bad_head_tensor" or the bundle's "missing_tensor"); VW_ENOMEM.
 */
#ifndef VW_HEAD_WEIGHTS_H
#define VW_HEAD_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bundle.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The heads' LayerNorm epsilon (PyTorch nn.LayerNorm's default). */
#define VW_HEAD_LN_EPS 1e-5

/* Tensor name prefixes (docs/spec/answers.md §1.1). */
#define VW_HEAD_CAND_PREFIX "head."
#define VW_HEAD_ROUTER_PREFIX "span2."
#define VW_HEAD_BROAD_PREFIX "span_broad."

/* The span heads, as a head job names them (executor.h vw_head_span_job.head). */
enum { VW_SPAN_HEAD_ROUTER = 0, VW_SPAN_HEAD_BROAD = 1, VW_SPAN_HEADS = 2 };

/* A borrowed FP32 tensor: row-major, ndim <= 4 (0 = scalar). */
typedef struct vw_tensor_view {
    const float *data;
    size_t ndim;
    int64_t shape[4];
} vw_tensor_view;

/* Looks a tensor up by its package name ("head.key.weight"). Returns VW_OK and
 * fills *out, or VW_EINVAL when the name is absent (err names it). The bundle
 * adapter casts stored dtypes to FP32 before handing them out. */
typedef vw_status (*vw_tensor_lookup)(void *ctx, const char *name, vw_tensor_view *out,
                                      vw_err *err);

typedef struct vw_cand_head {
    size_t hidden, d;
    const float *cand_ln_w, *cand_ln_b;   /* [H] candidate_norm */
    const float *query_ln_w, *query_ln_b; /* [H] query_norm */
    const float *key;                     /* [d, H] */
    const float *query;                   /* [d, H] */
    const float *cmlp_w;                  /* [d, H] candidate_mlp.weight */
    const float *cmlp_b;                  /* [d]    candidate_mlp.bias */
    const float *qmlp_w;                  /* [d, H] query_mlp.weight */
    const float *scalar;                  /* [d]    scalar.weight ([1, d]) */
    float set_bias;                       /* `set_bias` ([] or [1]) */
} vw_cand_head;

typedef struct vw_span_head {
    size_t hidden, d, slots;
    const float *wn_w, *wn_b; /* [H] word LayerNorm */
    const float *ln_w, *ln_b; /* [H] label LayerNorm */
    const float *slot;        /* [S, H] */
    const float *k, *q, *n;   /* [d, H] K, Q, N */
    const float *m_w, *m_b;   /* [d, H], [d] M */
    const float *v;           /* [d] v.weight ([1, d]) */
} vw_span_head;

/* Fills *h from `<prefix>candidate_norm.weight` ... `<prefix>scalar.weight` (prefix
 * "head." in decoder packages) and the top-level `set_bias` tensor. hidden and d
 * are read from the shapes and cross-checked. */
vw_status vw_cand_head_init(vw_cand_head *h, vw_tensor_lookup lookup, void *ctx, const char *prefix,
                            vw_err *err);

/* Fills *h from `<prefix>wn.weight` ... `<prefix>v.weight` ("span2." router,
 * "span_broad." broad); d from K.weight, S from slot.weight. The shipped `o`
 * readout is never read. */
vw_status vw_span_head_init(vw_span_head *h, vw_tensor_lookup lookup, void *ctx, const char *prefix,
                            vw_err *err);

/* 1 / sqrt(d) in FP32, the bilinear term's scale. */
float vw_head_scale(size_t d);

/* The slot row of label l: min(l, slots - 1) (labels past the last slot share it). */
static inline size_t vw_span_slot(size_t l, size_t slots) {
    return l < slots ? l : slots - 1;
}

/* FP32 copies of a bundle's head tensors, kept alive together: ctx of
 * vw_head_tensors_lookup (a vw_tensor_lookup over vw_bundle_tensor_f32).
 * vw_head_tensors_init, look up, then vw_head_tensors_free. */
typedef struct vw_head_tensors {
    const vw_bundle *bundle;
    vw_tensor_f32 *t;
    size_t n, cap;
} vw_head_tensors;

vw_status vw_head_tensors_lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err);
/* An empty set of copies of b's head tensors. */
void vw_head_tensors_init(vw_head_tensors *ht, const vw_bundle *b);
/* Frees every copy; the struct may be reused (bundle kept). NULL is a no-op. */
void vw_head_tensors_free(vw_head_tensors *ht);

#ifdef __cplusplus
}
#endif
#endif
