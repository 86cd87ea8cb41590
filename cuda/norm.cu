// norm.cu — the RMSNorm family of the CUDA backbone (CPU reference:
// vw_rmsnorm in core/model/ops_cpu.c, its uses in core/model/backbone_layers.c):
//  - add_rmsnorm: the residual add fused with the next zero-centred norm
//    (weights stored as 1 + w), docs/spec/backbone.md §3.2/§3.3, S1-N add_rms_norm;
//  - gated_rmsnorm: the DeltaNet output norm times silu(z), docs/spec/backbone.md §3.5 step 9;
//  - attn_prep: q/k per-head norm + partial rotate-half RoPE, docs/spec/backbone.md §3.4 1-4.
// Sums of squares accumulate in double, as the CPU does, in a fixed
// lane/warp order, so a row's result never depends on the batch.
#include "kernels.cuh"
#include "mma.cuh"

namespace {

constexpr unsigned NORM_THREADS = 256, PREP_WARPS = 4, MAX_HD = 256;

// Block-wide sum with a fixed order: warp butterflies, then every thread adds
// the warp partials 0..n-1 in order (identical in every thread).
__device__ double block_sum_d(double v) {
    __shared__ double part[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned nw = (blockDim.x + 31) / 32;
    v = vw_warp_sum_d(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    double s = 0.0;
    for (unsigned i = 0; i < nw; i++)
        s += part[i];
    __syncthreads(); // part[] may be reused by a later call
    return s;
}

// One block per row: h += delta; y = h * rsqrt(mean(h^2) + eps) * w; y also
// into the next GEMM's BF16 planes when hi is given (the fused cast).
__global__ void add_rmsnorm_k(float *__restrict__ h, const float *__restrict__ delta,
                              const float *__restrict__ w, float eps, size_t D,
                              float *__restrict__ y, __nv_bfloat16 *__restrict__ hi,
                              __nv_bfloat16 *__restrict__ lo) {
    const size_t r = blockIdx.x;
    float *hr = h + r * D;
    double ss = 0.0;
    for (size_t d = threadIdx.x; d < D; d += blockDim.x) {
        float v = hr[d];
        if (delta) {
            v += delta[r * D + d];
            hr[d] = v;
        }
        ss += (double)v * v;
    }
    ss = block_sum_d(ss);
    const float inv = 1.0f / sqrtf((float)(ss / (double)D) + eps);
    for (size_t d = threadIdx.x; d < D; d += blockDim.x) {
        const float v = hr[d] * inv * w[d];
        y[r * D + d] = v;
        if (hi)
            vw_put_planes(hi, lo, r * D + d, v);
    }
}

// One warp per (row, head): o = rmsnorm(o) * w * silu(z), also into the out
// projection's BF16 planes (dense [rows, Hv dv]) when hi is given.
__global__ void gated_rmsnorm_k(float *__restrict__ o, size_t ldo, const float *__restrict__ z,
                                size_t ldz, const float *__restrict__ w, float eps, size_t rows,
                                size_t Hv, size_t dv, __nv_bfloat16 *__restrict__ hi,
                                __nv_bfloat16 *__restrict__ lo) {
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x % 32;
    if (warp >= rows * Hv)
        return;
    const size_t r = warp / Hv, hh = warp % Hv;
    float *orow = o + r * ldo + hh * dv;
    const float *zrow = z + r * ldz + hh * dv;
    double ss = 0.0;
    for (size_t d = lane; d < dv; d += 32)
        ss += (double)orow[d] * orow[d];
    ss = vw_warp_sum_d(ss);
    const float inv = 1.0f / sqrtf((float)(ss / (double)dv) + eps);
    for (size_t d = lane; d < dv; d += 32) {
        const float v = orow[d] * inv * w[d] * vw_d_silu(zrow[d]);
        orow[d] = v;
        if (hi)
            vw_put_planes(hi, lo, (r * Hv + hh) * dv + d, v);
    }
}

// One warp per (row, head), heads [0, Hq) are queries and [Hq, Hq+Hk) keys:
// RMSNorm over hd with (1 + w), then rotate-half RoPE on the first rot dims
// (pairs i, i + rot/2) at the row's position, from the host-built tables.
// With planes (a.Qh set) the results are stored as FP16 hi/lo and heads
// [Hq+Hk, Hq+2Hk) split V into BF16 hi/lo: the tensor-core attention's
// operands, split once here (attention_tc.cu).
__global__ void attn_prep_k(vw_cu_attn_prep a) {
    __shared__ float buf[PREP_WARPS][MAX_HD];
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned lane = threadIdx.x % 32, wl = threadIdx.x / 32;
    const bool planes = a.Qh != nullptr;
    const size_t nh = a.Hq + a.Hk + (planes ? a.Hk : 0), hd = a.hd, half = a.rot / 2;
    if (warp >= a.rows * nh)
        return;
    const size_t r = warp / nh, hh = warp % nh;
    if (hh >= a.Hq + a.Hk) { // a V head (planes only): split, nothing else
        const size_t g = hh - a.Hq - a.Hk;
        const float *src = a.V + r * a.ldv + g * hd;
        __nv_bfloat16 *dst = a.Vb + (r * a.Hk + g) * 2 * hd;
        for (size_t d = lane; d < hd; d += 32)
            vw_split_bf16(src[d], dst[d], dst[hd + d]);
        return;
    }
    const bool is_q = hh < a.Hq;
    const float *src = a.proj + r * a.ldp + (is_q ? hh * 2 * hd : a.Hq * 2 * hd + (hh - a.Hq) * hd);
    const float *wn = is_q ? a.q_norm : a.k_norm;
    float *dst = planes ? nullptr
                 : is_q ? a.Q + (r * a.Hq + hh) * hd
                        : a.K + (r * a.Hk + (hh - a.Hq)) * hd;
    double ss = 0.0;
    for (size_t d = lane; d < hd; d += 32)
        ss += (double)src[d] * src[d];
    ss = vw_warp_sum_d(ss);
    const float inv = 1.0f / sqrtf((float)(ss / (double)hd) + a.eps);
    for (size_t d = lane; d < hd; d += 32)
        buf[wl][d] = src[d] * inv * wn[d];
    __syncwarp();
    const vw_cuda_seg sg = a.segs[a.row_seg[r]];
    const size_t pos = (size_t)sg.pos0 + (r - (size_t)sg.start);
    const float *cs = a.cos_t + pos * half, *sn = a.sin_t + pos * half;
    for (size_t d = lane; d < hd; d += 32) {
        float out = buf[wl][d];
        if (d < half)
            out = buf[wl][d] * cs[d] - buf[wl][d + half] * sn[d];
        else if (d < a.rot)
            out = buf[wl][d] * cs[d - half] + buf[wl][d - half] * sn[d - half];
        if (planes) {
            __half *ph =
                is_q ? a.Qh + (r * a.Hq + hh) * 2 * hd : a.Kh + (r * a.Hk + hh - a.Hq) * 2 * hd;
            vw_split_f16(out, ph[d], ph[hd + d]);
        } else {
            dst[d] = out;
        }
    }
}

} // namespace

vw_status vw_cu_add_rmsnorm(float *h, const float *delta, const float *w, float eps, size_t rows,
                            size_t D, float *y, vw_cu_planes p, cudaStream_t s, vw_err *err) {
    if (rows > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "add_rmsnorm: %zu rows", rows);
    if (!rows)
        return VW_OK;
    /* ~4 elements per thread in whole warps, at most NORM_THREADS: a fixed
     * block size per D, so the reduction order never depends on the batch. */
    unsigned threads = (unsigned)((D + 127) / 128 * 32);
    threads = threads < 32 ? 32 : threads > NORM_THREADS ? NORM_THREADS : threads;
    return VW_LAUNCH(err, add_rmsnorm_k, (unsigned)rows, threads, 0, s, h, delta, w, eps, D, y,
                     p.hi, p.lo);
}

vw_status vw_cu_gated_rmsnorm(float *o, size_t ldo, const float *z, size_t ldz, const float *w,
                              float eps, size_t rows, size_t Hv, size_t dv, vw_cu_planes p,
                              cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gated_rmsnorm_k, vw_blocks_for(rows * Hv * 32, NORM_THREADS),
                     NORM_THREADS, 0, s, o, ldo, z, ldz, w, eps, rows, Hv, dv, p.hi, p.lo);
}

vw_status vw_cu_attn_prep_run(const vw_cu_attn_prep *a, cudaStream_t s, vw_err *err) {
    if (a->hd > MAX_HD || a->rot > a->hd || a->rot % 2)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attn_prep: head_dim %zu (max %u) / rotary %zu not supported", a->hd, MAX_HD,
                       a->rot);
    const size_t warps = a->rows * (a->Hq + a->Hk + (a->Qh ? a->Hk : 0));
    return VW_LAUNCH(err, attn_prep_k, vw_blocks_for(warps * 32, PREP_WARPS * 32), PREP_WARPS * 32,
                     0, s, *a);
}
