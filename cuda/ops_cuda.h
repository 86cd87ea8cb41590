/* ops_cuda.h — the CUDA backbone's kernels, one C call each, on host buffers,
 * so tests (tests/test_cuda_kernels.c) can run every kernel against its CPU
 * reference (core/model/ops_cpu.h, core/model/delta_rule.h) on the same inputs.
 *
 * Each vw_cuda_op_* call copies its inputs to freshly allocated device
 * memory, runs exactly the launcher the executor uses (cuda/kernels.cuh),
 * copies the outputs back and frees everything: convenient, slow, and never
 * used on the request path. Shapes are [rows, cols] row-major; ld arguments
 * are row strides in floats, as in ops_cpu.h.
 *
 * Packed batches: several sequences share one buffer of rows, each described
 * by a vw_cuda_seg (seg.h), as the executor builds them.
 *
 * Ownership: every buffer is the caller's. Thread-safety: calls on different
 * threads are independent (each uses the default device). Errors: VW_ECUDA
 * (no device, launch or copy failure, named), VW_EUNSUPPORTED (a shape the
 * kernel does not handle), VW_ENOMEM (host staging).
 */
#ifndef VW_OPS_CUDA_H
#define VW_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "model/delta_rule.h"
#include "precision.h"
#include "seg.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Y[T,N] (+)= X[T,K] W[N,K]^T (vw_linear). BF16 rounds X and W to BF16 first;
 * FP32 uses cuBLAS pedantic FP32, or the fixed-order kernel if invariant. */
vw_status vw_cuda_op_linear(vw_cuda_precision prec, int invariant, const float *X, const float *W,
                            float *Y, size_t T, size_t N, size_t K, int accumulate, vw_err *err);

/* h[r,:] = E[ids[r],:] for rows r (vw_cpu_run_segment's embedding copy); E is
 * rounded to BF16 first when bf16 != 0 (as the serving weights are). */
vw_status vw_cuda_op_embed(const float *E, size_t vocab, size_t H, int bf16, const int32_t *ids,
                           size_t rows, float *h, vw_err *err);

/* The fused casts: add_rmsnorm, gated_rmsnorm and swiglu also write their
 * output as the next GEMM's BF16 planes (kernels.cuh vw_cu_planes) when hi is
 * given: hi = bf16(y) and, when lo is given, lo = bf16(y - hi), as bit
 * patterns, dense [rows, width]; NULL: not asked (the kernel then writes
 * none, as in FP32 mode). */

/* h += delta (when delta != NULL), then y = rmsnorm(h) * w (vw_rmsnorm with
 * w = 1 + weight); h is updated in place. h, delta, y: [rows, D]. */
vw_status vw_cuda_op_add_rmsnorm(float *h, const float *delta, const float *w, float eps,
                                 size_t rows, size_t D, float *y, uint16_t *hi, uint16_t *lo,
                                 vw_err *err);

/* Gated RMSNorm of the DeltaNet output, in place: for each row and head,
 * o = rmsnorm(o) * w * silu(z) (o, z: [rows, Hv*dv]; w: [dv]). */
vw_status vw_cuda_op_gated_rmsnorm(float *o, const float *z, const float *w, float eps, size_t rows,
                                   size_t Hv, size_t dv, uint16_t *hi, uint16_t *lo, vw_err *err);

/* In place on x [rows, 2*Hk*dk] (q heads then k heads): vw_l2norm_scale with
 * eps, scale qscale on q heads and 1 on k heads. */
vw_status vw_cuda_op_l2norm_qk(float *x, size_t rows, size_t Hk, size_t dk, float eps, float qscale,
                               vw_err *err);

/* g = A * softplus(a + dt_bias), beta = sigmoid(b); ba: [rows, 2*Hv] (b then a),
 * A = -exp(A_log): [Hv]; g, beta: [rows, Hv]. */
vw_status vw_cuda_op_gates(const float *ba, const float *A, const float *dt_bias, size_t rows,
                           size_t Hv, float *g, float *beta, vw_err *err);

/* In place on gu [rows, 2F]: gu[r, i] = silu(gu[r, i]) * gu[r, F + i], i < F;
 * planes [rows, F]. */
vw_status vw_cuda_op_swiglu(float *gu, size_t rows, size_t F, uint16_t *hi, uint16_t *lo,
                            vw_err *err);

/* The executor's fused DeltaNet inputs (kernels.cuh vw_cu_gdn_inputs): x
 * [rows, C + 2 Hv] holds the C = 2 Hk dk + vd conv channels (q heads, k
 * heads, v) then b and a; y [rows, C] = causal conv (taps w [C, K]) + SiLU
 * with the packed sequences' histories as vw_cuda_op_conv_silu, then the q
 * and k heads L2-normed as vw_cuda_op_l2norm_qk; g, beta [rows, Hv] as
 * vw_cuda_op_gates. */
vw_status vw_cuda_op_gdn_inputs(const float *x, const float *w, size_t K, const vw_cuda_seg *segs,
                                size_t n_segs, size_t rows, size_t Hk, size_t dk, size_t vd,
                                float eps, float qscale, const float *A, const float *dt_bias,
                                size_t Hv, float *y, float *g, float *beta, vw_err *err);

/* Causal depthwise conv (kernel K) + SiLU over C channels of x [rows, C] for the
 * packed sequences segs (history of a block = its parent's last K-1 rows,
 * zeros before position 0); w: [C, K]; y: [rows, C]. */
vw_status vw_cuda_op_conv_silu(const float *x, const float *w, size_t C, size_t K,
                               const vw_cuda_seg *segs, size_t n_segs, size_t rows, float *y,
                               vw_err *err);

/* Attention prep of docs/spec/backbone.md §3.4 steps 1-4: proj [rows, Hq*2*hd + Hk*hd] holds
 * per q head [query | gate] then the k heads; q/k heads are RMS-normed with
 * qn/kn (1 + weight, [hd]) and rotated on the first `rot` dims at position
 * seg.pos0 + (row - seg.start) (theta, tables as vw_rope_tables). Q: [rows,
 * Hq, hd], Kout: [rows, Hk, hd]. */
vw_status vw_cuda_op_attn_prep(const float *proj, const float *qn, const float *kn, float eps,
                               double theta, size_t rot, const vw_cuda_seg *segs, size_t n_segs,
                               size_t rows, size_t Hq, size_t Hk, size_t hd, float *Q, float *Kout,
                               vw_err *err);

/* The same with the tensor-core attention's operands out instead (the
 * executor's path in bf16/bf16x2): Qh [rows, Hq, 2, hd] and Kh [rows, Hk, 2,
 * hd] the FP16 hi and lo (bits) of the values above, lo = fp16(x - hi); Vb
 * [rows, Hk, 2, hd] the BF16 hi and lo of V [rows, Hk, hd]. */
vw_status vw_cuda_op_attn_prep_planes(const float *proj, const float *qn, const float *kn,
                                      float eps, double theta, size_t rot, const vw_cuda_seg *segs,
                                      size_t n_segs, size_t rows, size_t Hq, size_t Hk, size_t hd,
                                      const float *V, uint16_t *Qh, uint16_t *Kh, uint16_t *Vb,
                                      vw_err *err);

/* Gated causal GQA attention (docs/spec/backbone.md §3.4 steps 5-6): query row r of sequence s
 * attends to s's parent rows, then to s's rows up to r; query head h reads KV
 * head h / (Hq/Hk); scale hd^-0.5. Q: [rows, Hq, hd], K, V: [rows, Hk, hd],
 * gate: [rows, Hq, hd] or NULL; O: [rows, Hq, hd] = softmax(QK^T)V * sigmoid(gate).
 * prec picks the kernel as the executor does: FP32 the SIMT one, BF16 and
 * BF16X2 the tensor-core one (FP16x3 Q Kᵀ, BF16x3 P V; operands split on the
 * device first) where it takes the shape and max |Q|, |K| < 2^15. split_tiles:
 * the split-KV rule of vw_cu_attn_items (0: none; the executor's is
 * vw_cu_attn_split_tiles), tensor-core kernel only. */
vw_status vw_cuda_op_attention(vw_cuda_precision prec, const float *Q, const float *K,
                               const float *V, const float *gate, const vw_cuda_seg *segs,
                               size_t n_segs, size_t rows, size_t Hq, size_t Hk, size_t hd,
                               int split_tiles, float *O, vw_err *err);

/* Tensor-core probe (cuda/mma_probe.cu, cuda/mma.cuh): one warp computes
 * D [16, 8] = A [16, K] B [K, 8] + C [16, 8] (row-major) with mma.sync, each
 * element placed in its lane by the PTX ISA fragment tables. TF32: m16n8k8,
 * K = 8, A and B rounded by cvt.rna.tf32; BF16, F16: m16n8k16, K = 16, rounded to
 * nearest even; 3XTF32 / BF16X3 / F16X3: the same MMAs on split operands (three
 * each). VW_EINVAL for an unknown kind. */
typedef enum vw_cuda_mma_kind {
    VW_CUDA_MMA_TF32 = 0,
    VW_CUDA_MMA_BF16 = 1,
    VW_CUDA_MMA_3XTF32 = 2,
    VW_CUDA_MMA_BF16X3 = 3,
    VW_CUDA_MMA_F16 = 4,
    VW_CUDA_MMA_F16X3 = 5,
} vw_cuda_mma_kind;
vw_status vw_cuda_op_mma(vw_cuda_mma_kind kind, const float *A, const float *B, const float *C,
                         float *D, vw_err *err);

/* y[i] = x[i] rounded by cvt.rna.tf32.f32 (10 mantissa bits, ties away from
 * zero; as an FP32 value with the low 13 bits zero). */
vw_status vw_cuda_op_tf32_round(const float *x, size_t n, float *y, vw_err *err);

/* Load probes (cuda/ldst_probe.cu, cuda/ldst.cuh). vw_cuda_op_ldmatrix: one
 * warp runs ldmatrix .x(n) (1, 2, 4), .trans when trans, on a shared copy of
 * tile [32 rows][8], lane l pointing at row rows[l] (0..31); out[l*4 + i] =
 * lane l's register i (i >= n: 0). vw_cuda_op_ldsm_mma: vw_cuda_op_mma's
 * product (kind TF32 or BF16, one MMA) with the fragments loaded by ldmatrix
 * from shared tiles through ldst.cuh's row helpers, B stored transposed, or
 * k-major with .trans (b_kmajor, BF16 only). vw_cuda_op_cp_async: 64 threads
 * copy src (n_src >= 512 floats) into a 1,024-float shared buffer with
 * cp.async, thread t: group 0, 16 bytes (.cg) src[4t..] -> [4t..]; group 1,
 * two 8-byte copies src[256 + 4t..] -> [256 + 4t..], the second reading only
 * t % 9 bytes (zero-filled after); group 2, four 4-byte copies
 * src[(37t + 11j) % n_src] -> [512 + 4t + j]; uncommitted, 16 bytes reading
 * none -> [768 + 4t..] (zeros). After wait_group 2 it reads its group-0 and
 * group-1 slots into early[8t..8t+7]; after wait_group 1, wait_all and a
 * barrier the whole buffer goes to out[1024], each slot read by the next
 * thread. VW_EINVAL for a bad argument. */
vw_status vw_cuda_op_ldmatrix(int n, int trans, const uint16_t *tile, const int32_t *rows,
                              uint32_t *out, vw_err *err);
vw_status vw_cuda_op_ldsm_mma(vw_cuda_mma_kind kind, int b_kmajor, const float *A, const float *B,
                              const float *C, float *D, vw_err *err);
vw_status vw_cuda_op_cp_async(const float *src, size_t n_src, float *early, float *out,
                              vw_err *err);

#ifdef VW_CUDA_EMU
/* The CPU emulator's tally of host calls since the process started (cuda/emu.cu):
 * kernel launches; cuBLAS GEMMs; copies and memsets (those three launched at
 * once, not captured); the shared-memory opt-in's calls (cudaGetDevice,
 * cudaDeviceGetAttribute, cudaFuncSetAttribute); event records; waits
 * (stream, event); graph launches; launches, GEMMs and copies captured into a
 * graph. What a forward asks of the driver: the difference of two reads
 * around it (tests/test_cuda_forward.c). */
typedef struct vw_cuda_emu_calls {
    size_t kernels, gemms, copies, attrs, events, syncs, graph_launches, captured;
} vw_cuda_emu_calls;
void vw_cuda_emu_calls_read(vw_cuda_emu_calls *c);
#endif

/* The chunked gated delta rule (chunk 64) of io's T rows split into n_seq
 * consecutive sequences of lengths seq_len[]; sequence i starts from
 * state_in[i] ([Hv, dk, dv]; NULL: zeros) and leaves its final state in
 * state_out[i] (NULL: not kept). io's pointers are host buffers. prec picks
 * the kernels as the executor does: FP32 the SIMT ones, BF16 and BF16X2 the
 * tensor-core ones (3xTF32) where they take the shape (kernels.cuh). */
vw_status vw_cuda_op_gdn(vw_cuda_precision prec, const vw_gdn_io *io, const size_t *seq_len,
                         size_t n_seq, const float *state_in, float *state_out, vw_err *err);

/* The executor's two passes: segs[0, n_pre) (prefixes) run from zero and
 * leave their final state in slot seg.state of slots ([n_slots, Hv, dk, dv];
 * NULL: not returned); then segs[n_pre, n_segs) (blocks) start from slot
 * seg.state. Sequences index io's rows (start, len); io's pointers are host
 * buffers. */
vw_status vw_cuda_op_gdn_tree(vw_cuda_precision prec, const vw_gdn_io *io, const vw_cuda_seg *segs,
                              size_t n_segs, size_t n_pre, size_t n_slots, float *slots,
                              vw_err *err);

/* The delta rule's first kernel alone (kernels.cuh vw_cu_gdn_prep) on the
 * sequences of vw_cuda_op_gdn, returning its scratch: per value head h and
 * row t (chunks of 64 from each sequence's start) c[h*T + t] = cumsum of g
 * within the chunk, w[(h*T + t)*dk + d] = W' = (I + L)^-1 beta e^c K and
 * u[(h*T + t)*dv + j] = U' = (I + L)^-1 beta V (docs/spec/backbone.md §4.1). */
vw_status vw_cuda_op_gdn_prep(vw_cuda_precision prec, const vw_gdn_io *io, const size_t *seq_len,
                              size_t n_seq, float *c, float *w, float *u, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
