/* ops_cpu.h — FP32 building blocks of the CPU reference backbone
 * (docs/spec/backbone.md §3, regime R-FP32). Plain C plus OpenBLAS sgemm.
 *
 * Matrices are row-major; "ld" arguments are row strides in floats, so a
 * view into a wider (stacked) buffer needs no copy. Shapes are given as
 * [rows, cols]. Ownership: every buffer is the caller's; nothing allocates.
 * Thread-safety: pure functions over disjoint outputs; each GEMM is one
 * OpenBLAS call (single-threaded under the CPU executor, which spreads calls
 * over its pool: ops_par.h). No function can fail.
 */
#ifndef VW_OPS_CPU_H
#define VW_OPS_CPU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Y[T,N] = X[T,K] · W[N,K]^T (PyTorch Linear, no bias); accumulate adds to Y. */
void vw_linear(const float *X, size_t ldx, const float *W, float *Y, size_t ldy, size_t T, size_t N,
               size_t K, int accumulate);

/* RMSNorm of `rows` rows of width D: y = x * rsqrt(mean(x^2) + eps) * w.
 * Zero-centred norms pass w = 1 + weight (precomputed at load, as HF forms
 * 1 + w in FP32); the DeltaNet output norm passes its plain weight.
 * y may alias x (same ld). */
void vw_rmsnorm(const float *x, size_t ldx, float *y, size_t ldy, size_t rows, size_t D,
                const float *w, float eps);

/* Per-position RoPE tables for positions pos0 .. pos0+T-1: cos/sin [T, rot/2],
 * (rot <= VW_QWEN35_MAX_ROTARY) with inv_freq_i = 1 / theta^(2i/rot) and
 * angle = fp32(pos) * inv_freq in
 * FP32 exactly as transformers computes them (spec §3.4 step 4, §6.2). */
void vw_rope_tables(size_t pos0, size_t T, size_t rot, double theta, float *cos_t, float *sin_t);

/* Rotate-half RoPE on the first `rot` dims of one head vector x (in place);
 * cos/sin are one row [rot/2] of the tables. Dims >= rot pass through. */
void vw_rope_apply(float *x, size_t rot, const float *cos_r, const float *sin_r);

static inline float vw_sigmoidf(float x);
float vw_silu(float x);
float vw_softplus(float x); /* log(1 + e^x), x for x > 20 (PyTorch threshold) */

/* x[i] *= 1/sqrt(sum(x^2) + eps) * scale over n elements (spec §3.5 step 7). */
void vw_l2norm_scale(float *x, size_t n, float eps, float scale);

/* Causal depthwise conv (kernel K, no bias) + SiLU over C channels:
 * y[t,c] = silu(sum_j w[c,j] * x[t-K+1+j, c]); rows before t = 0 come from
 * hist [K-1, C] (the previous K-1 pre-conv rows, oldest first; zeros for an
 * empty state). x: [T, C] with stride ldx, y: [T, C] dense. */
void vw_causal_conv_silu(const float *x, size_t ldx, const float *hist, const float *w, size_t T,
                         size_t C, size_t K, float *y);

/* Rows [t0, t1) of vw_causal_conv_silu's y (the same bits): row-parallel use. */
void vw_causal_conv_silu_rows(const float *x, size_t ldx, const float *hist, const float *w,
                              size_t t0, size_t t1, size_t C, size_t K, float *y);

/* New conv history after x: the last K-1 pre-conv rows of hist ++ x. */
void vw_conv_history(const float *x, size_t ldx, size_t T, size_t C, size_t K, float *hist);

/* Row-wise in-place softmax over the first n entries; entries [n, width) are
 * set to 0 (the causal mask). */
void vw_softmax_prefix(float *row, size_t n, size_t width);

static inline float vw_sigmoidf(float x) {
    return 1.0f / (1.0f + __builtin_expf(-x));
}

#ifdef __cplusplus
}
#endif
#endif
