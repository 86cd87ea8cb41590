// elementwise.cu — the row-local kernels of the CUDA backbone: embedding
// gather, BF16 rounding of GEMM inputs, causal conv + SiLU with a prefix
// history, q/k L2 norm, DeltaNet gates, SwiGLU and the readout gather. Each
// names the CPU function (core/model/ops_cpu.c, core/model/backbone_layers.c) it mirrors;
// every output element is computed by one thread from its own row (plus, for
// the conv, the K-1 rows before it), so batching never changes a value.
#include "kernels.cuh"

namespace {

constexpr unsigned THREADS = 256;
constexpr size_t MAX_GRID = 1u << 20; // grid-stride loops cover the rest

unsigned grid_for(size_t n) {
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_GRID ? (b ? b : 1) : MAX_GRID);
}

__device__ __forceinline__ size_t gtid() {
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t gstride() {
    return (size_t)gridDim.x * blockDim.x;
}

// vw_cpu_run_segment: h[r,:] = E[ids[r],:] (§3.1, no scaling).
template <typename WT>
__global__ void embed_k(const WT *__restrict__ E, const int32_t *__restrict__ ids, size_t rows,
                        size_t H, float *__restrict__ h) {
    for (size_t i = gtid(); i < rows * H; i += gstride()) {
        size_t r = i / H, d = i % H;
        h[i] = vw_load_f(E + (size_t)ids[r] * H + d);
    }
}

// hi = bf16(x), and lo = bf16(x - float(hi)), the remainder (gemm.cu, BF16X2).
__global__ void cast_bf16_k(const float *__restrict__ x, size_t ldx, size_t rows, size_t cols,
                            __nv_bfloat16 *__restrict__ hi, __nv_bfloat16 *__restrict__ lo) {
    for (size_t i = gtid(); i < rows * cols; i += gstride()) {
        size_t r = i / cols, c = i % cols;
        vw_put_planes(hi, lo, i, x[r * ldx + c]);
    }
}

// vw_causal_conv_silu + vw_conv_history (§3.5 steps 2-3, §4.3) of channel c
// at row r: tap j reads position t-(K-1)+j; positions before the sequence come
// from the parent prefix's last rows (a block) or are zero (a prefix, or
// before the parent).
__device__ __forceinline__ float conv_silu_at(const float *__restrict__ x, size_t ldx,
                                              const float *__restrict__ w, size_t K,
                                              const vw_cuda_seg &sg, size_t r, size_t c) {
    const long t = (long)r - sg.start;
    float acc = 0.0f;
    for (size_t j = 0; j < K; j++) {
        const long p = t - (long)(K - 1) + (long)j;
        float xv = 0.0f;
        if (p >= 0)
            xv = x[(size_t)(sg.start + p) * ldx + c];
        else if (sg.parent_len + p >= 0)
            xv = x[(size_t)(sg.parent_start + sg.parent_len + p) * ldx + c];
        acc += w[c * K + j] * xv;
    }
    return vw_d_silu(acc);
}

__global__ void conv_silu_k(const float *__restrict__ x, size_t ldx, const float *__restrict__ w,
                            size_t C, size_t K, const vw_cuda_seg *__restrict__ segs,
                            const int32_t *__restrict__ row_seg, size_t rows,
                            float *__restrict__ y) {
    for (size_t i = gtid(); i < rows * C; i += gstride()) {
        const size_t r = i / C, c = i % C;
        y[i] = conv_silu_at(x, ldx, w, K, segs[row_seg[r]], r, c);
    }
}

// vw_l2norm_scale (§3.5 step 7) of one head v [dk] by one warp, times scale.
// Sum of squares in double like the CPU, lanes strided, then the butterfly.
__device__ __forceinline__ void l2norm_warp(float *v, size_t dk, float eps, float scale,
                                            unsigned lane) {
    double ss = 0.0;
    for (size_t d = lane; d < dk; d += 32)
        ss += (double)v[d] * v[d];
    ss = vw_warp_sum_d(ss);
    const float inv = 1.0f / sqrtf((float)ss + eps) * scale;
    for (size_t d = lane; d < dk; d += 32)
        v[d] *= inv;
}

// One warp per (row, head); heads [0, Hk) are q (times qscale), [Hk, 2Hk) are k.
__global__ void l2norm_qk_k(float *__restrict__ x, size_t ld, size_t rows, size_t Hk, size_t dk,
                            float eps, float qscale) {
    const size_t warp = gtid() / 32;
    if (warp >= rows * 2 * Hk)
        return;
    const size_t r = warp / (2 * Hk), hh = warp % (2 * Hk);
    l2norm_warp(x + r * ld + hh * dk, dk, eps, hh < Hk ? qscale : 1.0f, threadIdx.x % 32);
}

// gdn_layer steps 5-6: g = A softplus(a + dt_bias) (A = -exp(A_log)), beta = sigmoid(b).
__device__ __forceinline__ void gates_at(const float *__restrict__ ba, size_t ld,
                                         const float *__restrict__ A,
                                         const float *__restrict__ dt_bias, size_t Hv, size_t r,
                                         size_t h, float *__restrict__ g,
                                         float *__restrict__ beta) {
    const float b = ba[r * ld + h], a = ba[r * ld + Hv + h];
    g[r * Hv + h] = A[h] * vw_d_softplus(a + dt_bias[h]);
    beta[r * Hv + h] = vw_d_sigmoid(b);
}

__global__ void gates_k(const float *__restrict__ ba, size_t ld, const float *__restrict__ A,
                        const float *__restrict__ dt_bias, size_t rows, size_t Hv,
                        float *__restrict__ g, float *__restrict__ beta) {
    for (size_t i = gtid(); i < rows * Hv; i += gstride())
        gates_at(ba, ld, A, dt_bias, Hv, i / Hv, i % Hv, g, beta);
}

// The three above in one launch, a warp per unit of a row: units [0, 2 Hk)
// are the q and k heads (conv + SiLU of the head's dk channels into y, then,
// once the warp's stores are visible to it, the L2 norm in place), then
// ceil(vd / 256) units of 256 value channels (conv + SiLU), then one for the
// Hv gates. Every value is computed by the same device functions, in the same
// order, as by conv_silu_k, l2norm_qk_k and gates_k.
constexpr size_t V_UNIT = 256;
__global__ void gdn_inputs_k(vw_cu_gdn_in a) {
    const size_t vunits = (a.vd + V_UNIT - 1) / V_UNIT, units = 2 * a.Hk + vunits + 1;
    const size_t warp = gtid() / 32;
    const unsigned lane = threadIdx.x % 32;
    if (warp >= a.rows * units)
        return;
    const size_t r = warp / units, u = warp % units, C = 2 * a.Hk * a.dk + a.vd;
    const vw_cuda_seg sg = a.segs[a.row_seg[r]];
    float *yr = a.y + r * C;
    if (u < 2 * a.Hk) {
        for (size_t d = lane; d < a.dk; d += 32)
            yr[u * a.dk + d] = conv_silu_at(a.x, a.ldx, a.w, a.K, sg, r, u * a.dk + d);
        __syncwarp();
        l2norm_warp(yr + u * a.dk, a.dk, a.eps, u < a.Hk ? a.qscale : 1.0f, lane);
    } else if (u < 2 * a.Hk + vunits) {
        const size_t c0 = 2 * a.Hk * a.dk + (u - 2 * a.Hk) * V_UNIT;
        const size_t c1 = c0 + V_UNIT < C ? c0 + V_UNIT : C;
        for (size_t c = c0 + lane; c < c1; c += 32)
            yr[c] = conv_silu_at(a.x, a.ldx, a.w, a.K, sg, r, c);
    } else {
        for (size_t h = lane; h < a.Hv; h += 32)
            gates_at(a.ba, a.ldba, a.A, a.dt_bias, a.Hv, r, h, a.g, a.beta);
    }
}

// mlp_block: gate = silu(gate) * up, in place in the gate half (ld 2F), and
// into the down projection's planes when hi is given (dense [rows, F]).
__global__ void swiglu_k(float *__restrict__ gu, size_t rows, size_t F,
                         __nv_bfloat16 *__restrict__ hi, __nv_bfloat16 *__restrict__ lo) {
    for (size_t i = gtid(); i < rows * F; i += gstride()) {
        const size_t r = i / F, c = i % F;
        float *gate = gu + r * 2 * F;
        const float v = vw_d_silu(gate[c]) * gate[F + c];
        gate[c] = v;
        if (hi)
            vw_put_planes(hi, lo, i, v);
    }
}

__global__ void gather_rows_k(const float *__restrict__ x, size_t H,
                              const int32_t *__restrict__ idx, size_t n, float *__restrict__ out) {
    for (size_t i = gtid(); i < n * H; i += gstride()) {
        const size_t k = i / H, d = i % H;
        out[i] = x[(size_t)idx[k] * H + d];
    }
}

} // namespace

vw_status vw_cu_embed(const void *E, int bf16, const int32_t *ids, size_t rows, size_t H, float *h,
                      cudaStream_t s, vw_err *err) {
    if (bf16)
        return VW_LAUNCH(err, embed_k<__nv_bfloat16>, grid_for(rows * H), THREADS, 0, s,
                         (const __nv_bfloat16 *)E, ids, rows, H, h);
    return VW_LAUNCH(err, embed_k<float>, grid_for(rows * H), THREADS, 0, s, (const float *)E, ids,
                     rows, H, h);
}

vw_status vw_cu_cast_bf16(const float *x, size_t ldx, size_t rows, size_t cols, vw_cu_planes p,
                          cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, cast_bf16_k, grid_for(rows * cols), THREADS, 0, s, x, ldx, rows, cols,
                     p.hi, p.lo);
}

vw_status vw_cu_conv_silu(const float *x, size_t ldx, const float *w, size_t C, size_t K,
                          const vw_cuda_seg *segs, const int32_t *row_seg, size_t rows, float *y,
                          cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, conv_silu_k, grid_for(rows * C), THREADS, 0, s, x, ldx, w, C, K, segs,
                     row_seg, rows, y);
}

vw_status vw_cu_l2norm_qk(float *x, size_t ld, size_t rows, size_t Hk, size_t dk, float eps,
                          float qscale, cudaStream_t s, vw_err *err) {
    const size_t warps = rows * 2 * Hk;
    return VW_LAUNCH(err, l2norm_qk_k, vw_blocks_for(warps * 32, THREADS), THREADS, 0, s, x, ld,
                     rows, Hk, dk, eps, qscale);
}

vw_status vw_cu_gdn_inputs(const vw_cu_gdn_in *a, cudaStream_t s, vw_err *err) {
    const size_t units = 2 * a->Hk + (a->vd + V_UNIT - 1) / V_UNIT + 1;
    return VW_LAUNCH(err, gdn_inputs_k, vw_blocks_for(a->rows * units * 32, THREADS), THREADS, 0, s,
                     *a);
}

vw_status vw_cu_gates(const float *ba, size_t ld, const float *A, const float *dt_bias, size_t rows,
                      size_t Hv, float *g, float *beta, cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gates_k, grid_for(rows * Hv), THREADS, 0, s, ba, ld, A, dt_bias, rows, Hv,
                     g, beta);
}

vw_status vw_cu_swiglu(float *gu, size_t rows, size_t F, vw_cu_planes p, cudaStream_t s,
                       vw_err *err) {
    return VW_LAUNCH(err, swiglu_k, grid_for(rows * F), THREADS, 0, s, gu, rows, F, p.hi, p.lo);
}

vw_status vw_cu_gather_rows(const float *x, size_t H, const int32_t *idx, size_t n, float *out,
                            cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gather_rows_k, grid_for(n * H), THREADS, 0, s, x, H, idx, n, out);
}
