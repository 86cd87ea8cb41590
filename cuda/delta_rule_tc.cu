// delta_rule_tc.cu — the chunked gated delta rule with its products on tensor
// cores: the path of the bf16 and bf16x2 precisions (docs/cuda-mixers.md "The delta
// rule"); delta_rule.cu's FP32 SIMT kernels are the fp32 precision and the
// fallback for other shapes. Three kernels after flash-linear-attention's
// chunked gated delta rule (CPU reference: vw_gdn_chunk_prep + vw_gdn_chunk_state in
// core/model/delta_rule.c):
//
//   gdn_prep_tc_k   grid (chunk, v-head), every chunk of the call at once:
//                   c = cumsum(g); q̂, k̂ -> planes (once, for every later
//                   product); L = strict_lower(beta K K^T Γ); the FP32 inverse
//                   A = (I + L)^-1; W' = (A diag(beta e^c)) K as planes,
//                   U' = (A diag(beta)) V in FP32
//   gdn_state_tc_k  grid (value slice, sequence, v-head), per pass, the only
//                   loop over chunks (delta_rule_tc_state.cu)
//   gdn_out_tc_k    grid (chunk, v-head), every chunk at once:
//                   O = e^c (Q S_c) + (Q K^T ⊙ Γ, causal) V_new, S_c the state
//                   entering the chunk (the state pass's, or the sequence's
//                   initial one)
//
// Every product is BF16x3 m16n8k16 (planes.cuh: hi·hi + hi·lo + lo·hi, FP32
// accumulation) on operands split once, where they are produced: q̂, k̂ and
// V when prep stages them, A diag(·) after the inverse, W' by prep, V_new and
// the chunk states by the state pass, P in registers; tiles reach the MMAs
// through ldmatrix. Accumulation chains are 32 summed dims (6 MMAs) from the
// product's first dim, each chain's result added in FP32 on the CUDA cores:
// the tensor cores' accumulation truncates (Fasi et al. 2021), so no chain is
// long. The gate cumsum, Γ, β, the inverse, e^c and the state's own sums stay
// FP32 (delta_rule_common.cuh, shared with the SIMT kernels). A warp owns whole
// 16-row output tiles and every sum runs in a fixed order that depends only on
// the chunk's own rows, so a sequence's numbers never depend on the batch
// (test_cuda_delta tc_packed, tc_wide_slices).
#include "delta_rule_tc.cuh"

namespace {

using namespace vw_gdn_tc;
using vw_gdn::min_i;
using vw_gdn::ws_split;
using vw_gdn::ws_view;

constexpr int LA = CH + 4;    // FP32 64 x 64 matrices (L, A): row stride in floats
constexpr int XC = 128;       // columns of a staged k̂ / V tile in prep
constexpr int LX = pl_ld(XC); // its planes-row stride
constexpr int LP = pl_ld(CH); // A diag(·) planes (64 x 64): 272 bytes = LA floats
static_assert(LP == LA * 4, "A diag(·) planes overlay L");

// FP32 rows (stride ld floats) [rows r0 .. r0 + n) x cols [0, nc) -> planes
// tile (stride ldt bytes) rows 0 .. 63, zero past n; also to global planes
// rows gdst (stride ldg floats) when gdst. nc a multiple of 8; every thread.
__device__ void split_rows(char *T, int ldt, const float *src, size_t ld, int n, int nc,
                           float *gdst, size_t ldg) {
    const int per = nc / 8;
    for (int idx = threadIdx.x; idx < CH * per; idx += blockDim.x) {
        const int i = idx / per, c = 8 * (idx % per);
        uint4 hi = make_uint4(0, 0, 0, 0), lo = hi;
        if (i < n) {
            const float *x = src + (size_t)i * ld + c;
            vw_pl_split8(*(const float4 *)x, *(const float4 *)(x + 4), hi, lo);
            if (gdst) {
                uint4 *g = (uint4 *)(gdst + (size_t)i * ldg + c);
                g[0] = hi, g[1] = lo;
            }
        }
        if (T) {
            uint4 *s = (uint4 *)(T + i * ldt + 4 * c);
            s[0] = hi, s[1] = lo;
        }
    }
}

// ---- kernel 1: everything that does not depend on the state ------------------

constexpr int PREP_THREADS = 256;
constexpr size_t prep_bytes = 4 * CH * 4 + CH * LX + 2 * CH * LA * 4 + 3 * 256 * 4;

// The warp's 16 x (nc/2) output tile of (A diag(·)) X: A planes P (64 x 64,
// lower triangular, stride LP), X planes (rows = A's columns, stride LX, nc
// columns): warp w owns rows 16 (w >> 1) .., columns (w & 1) nc/2 .., k over
// A's nonzero columns < 16 (mi + 1) and rows < n. Results to planes rows
// (PLANES) or FP32 rows at dst (stride ldd floats), rows < n.
template <bool PLANES>
__device__ void lower_apply(const char *P, const char *X, int nc, int n, float *dst, size_t ldd) {
    const int lane = lane_id(), warp = threadIdx.x >> 5, mi = warp >> 1;
    const int c0 = (warp & 1) * (nc / 2), np = nc / 32; // n-tile pairs of the warp
    if (16 * mi >= n)
        return;
    float acc[8][4] = {};
    const int kend = min_i(16 * (mi + 1), n);
    for (int kc = 0; kc < kend; kc += KC) {
        float d[8][4] = {};
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            const int k = kc + 16 * kk;
            if (k >= kend)
                break;
            vw_pl_a4 f;
            vw_pl_load_a(f, P, LP, 16 * mi, k, lane);
#pragma unroll
            for (int q = 0; q < 4; q++) {
                if (q >= np)
                    break;
                vw_pl_b2x2 b;
                vw_pl_load_bk(b, X, LX, k, c0 + 16 * q, lane);
                vw_pl_mma(d[2 * q], f, b, 0);
                vw_pl_mma(d[2 * q + 1], f, b, 1);
            }
        }
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[j][i] += d[j][i];
    }
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int r = 16 * mi + g + 8 * hf, c = c0 + 8 * j + 2 * t;
            if (j >= 2 * np || r >= n)
                continue;
            if (PLANES) {
                uint32_t hi, lo;
                vw_pl_split2(acc[j][2 * hf], acc[j][2 * hf + 1], hi, lo);
                *(uint32_t *)vw_pl_at(dst, (int)ldd * 4, r, c, 0) = hi;
                *(uint32_t *)vw_pl_at(dst, (int)ldd * 4, r, c, 1) = lo;
            } else {
                *(float2 *)(dst + (size_t)r * ldd + c) =
                    make_float2(acc[j][2 * hf], acc[j][2 * hf + 1]);
            }
        }
}

// P (planes, stride LP) = A (FP32, stride LA) times column scale s[j].
__device__ void scaled_planes(char *P, const float *A, const float *s) {
    for (int idx = threadIdx.x; idx < CH * CH / 8; idx += blockDim.x) {
        const int i = idx / (CH / 8), c = 8 * (idx % (CH / 8));
        float x[8];
        for (int e = 0; e < 8; e++)
            x[e] = A[i * LA + c + e] * s[c + e];
        uint4 hi, lo;
        vw_pl_split8(make_float4(x[0], x[1], x[2], x[3]), make_float4(x[4], x[5], x[6], x[7]), hi,
                     lo);
        uint4 *d = (uint4 *)(P + i * LP + 4 * c);
        d[0] = hi, d[1] = lo;
    }
}

__global__ void __launch_bounds__(PREP_THREADS) gdn_prep_tc_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float4, sm4);
    float *c = (float *)sm4, *bet = c + CH, *sb = bet + CH, *tot = sb + CH;
    char *X = (char *)(tot + CH); // [CH] planes: k̂, then V tiles
    float *Lf = (float *)(X + CH * LX), *A = Lf + CH * LA, *T = A + CH * LA;
    char *P = (char *)Lf; // A diag(·) planes, over L
    const size_t h = blockIdx.y, grp = a.Hv / a.Hk, kh = h / grp, dk = a.dk, dv = a.dv;
    const size_t rows = a.rows;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int lane = lane_id(), warp = threadIdx.x >> 5, mi = warp >> 1, nh = warp & 1;
    const ws_view w = ws_split(a.ws, rows, a.Hv, dk, dv);
    const bool writer = h % grp == 0; // one v-head per k-head writes q̂, k̂ planes
    vw_gdn::chunk_cumsum(a, w, r0, n, h, c, bet, sb, tot);
    // k̂ (and q̂) -> planes: the tile here, the scratch for the other kernels
    const size_t off = (kh * rows + r0) * dk;
    split_rows(X, LX, a.k + (size_t)r0 * a.ldk + kh * dk, a.ldk, n, (int)dk,
               writer ? w.kp + off : nullptr, dk);
    if (writer)
        split_rows(nullptr, 0, a.q + (size_t)r0 * a.ldq + kh * dk, a.ldq, n, (int)dk, w.qp + off,
                   dk);
    __syncthreads();
    // K K^T (CPU: sgemm into L): warp rows 16 mi, columns 32 nh .. (4 n-tiles),
    // tiles wholly above the diagonal and rows past n skipped
    float acc[4][4] = {};
    if (32 * nh < 16 * (mi + 1) && 16 * mi < n)
        for (int k0 = 0; k0 < (int)dk; k0 += KC) {
            float d[4][4] = {};
#pragma unroll
            for (int kk = 0; kk < 2; kk++) {
                vw_pl_a4 f;
                vw_pl_load_a(f, X, LX, 16 * mi, k0 + 16 * kk, lane);
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    vw_pl_b2x2 b;
                    vw_pl_load_bt(b, X, LX, 32 * nh + 16 * q, k0 + 16 * kk, lane);
                    vw_pl_mma(d[2 * q], f, b, 0);
                    vw_pl_mma(d[2 * q + 1], f, b, 1);
                }
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[j][i] += d[j][i];
        }
    // L = strict_lower(beta K K^T Γ) (CPU: b * kk * decay)
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = 16 * mi + g + 8 * (e >> 1), jj = 32 * nh + 8 * j + 2 * t + (e & 1);
            Lf[i * LA + jj] = (jj < i && i < n) ? bet[i] * acc[j][e] * expf(c[i] - c[jj]) : 0.0f;
        }
    __syncthreads();
    vw_gdn::chunk_inverse(Lf, A, T, LA);
    // W' = (A diag(beta e^c)) K, planes (CPU: strsm on beta e^c K)
    scaled_planes(P, A, sb);
    __syncthreads();
    for (int d0 = 0; d0 < (int)dk; d0 += XC) // dk <= XC: one tile
        lower_apply<true>(P, X, min_i(XC, (int)dk - d0), n, w.w + (h * rows + r0) * dk + d0, dk);
    __syncthreads();
    // U' = (A diag(beta)) V, FP32 (CPU: strsm on beta V), by 128-column tiles
    scaled_planes(P, A, bet);
    for (int j0 = 0; j0 < (int)dv; j0 += XC) {
        const int nc = min_i(XC, (int)dv - j0);
        if (j0)
            __syncthreads();
        split_rows(X, LX, a.v + (size_t)r0 * a.ldv + h * dv + j0, a.ldv, n, nc, nullptr, 0);
        __syncthreads();
        lower_apply<false>(P, X, nc, n, w.u + (h * rows + r0) * dv + j0, dv);
    }
}

// ---- kernel 3: the output -----------------------------------------------------

constexpr int OUT_THREADS = 128; // 4 warps: a warp per 16 chunk rows
constexpr int OV = 32;           // value columns per output slice
constexpr int LVN = pl_ld(OV);   // V_new slice rows

// Shared memory, bytes: c [CH]; k̂ tile [CH][dk] planes; two slice buffers,
// each S_c slice [OV][dk] planes (Sᵀ rows) + V_new slice [CH][OV] planes. The
// q̂ tile [CH][dk] is staged in the slice buffers first.
__host__ __device__ inline size_t out_buf_bytes(int dk) {
    return (size_t)OV * pl_ld(dk) + (size_t)CH * LVN;
}
__host__ __device__ inline size_t out_bytes(int dk) {
    return CH * 4 + (size_t)CH * pl_ld(dk) + 2 * out_buf_bytes(dk);
}

__global__ void __launch_bounds__(OUT_THREADS) gdn_out_tc_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float4, sm4);
    const int dk = (int)a.dk, dv = (int)a.dv, ldk = pl_ld(dk), nk = dk / 16;
    float *cs = (float *)sm4;
    char *Kt = (char *)(cs + CH), *B0 = Kt + CH * ldk;
    const size_t bb = out_buf_bytes(dk);
    const size_t h = blockIdx.y, kh = h / (a.Hv / a.Hk), rows = a.rows;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int lane = lane_id(), w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const ws_view ws = ws_split(a.ws, rows, a.Hv, dk, dv);
    const int code = ws.tab[r0], nsl = dv / OV;
    const float *Sf = nullptr; // FP32 initial state [dk][dv] (a sequence's first chunk)
    const float *Sp = nullptr; // planes Sᵀ [dv][dk] (a later chunk)
    if (code >= 0)
        Sf = a.pass[code & 1].init + ((size_t)(code >> 1) * a.Hv + h) * dk * dv;
    else if (code == ENTER_SLOT)
        Sp = ws.st + ((size_t)(r0 - 1) / CH * a.Hv + h) * dv * dk;
    const float *vn = ws.u + (h * rows + r0) * dv;
    auto issue_slice = [&](int s) {
        if (s < nsl) {
            char *buf = B0 + (s & 1) * bb;
            if (Sp)
                cp_rows(buf, ldk, Sp + (size_t)s * OV * dk, dk * 4, OV, OV, dk * 4, threadIdx.x,
                        OUT_THREADS);
            cp_rows(buf + OV * ldk, LVN, vn + s * OV, dv * 4, CH, n, OV * 4, threadIdx.x,
                    OUT_THREADS);
        }
        vw_cp_async_commit();
    };
    if (threadIdx.x < CH)
        cs[threadIdx.x] = (int)threadIdx.x < n ? ws.c[h * rows + r0 + threadIdx.x] : 0.0f;
    const size_t off = (kh * rows + r0) * dk;
    cp_rows(B0, ldk, ws.qp + off, dk * 4, CH, n, dk * 4, threadIdx.x, OUT_THREADS);
    cp_rows(Kt, ldk, ws.kp + off, dk * 4, CH, n, dk * 4, threadIdx.x, OUT_THREADS);
    vw_cp_async_wait<-1>();
    __syncthreads();
    vw_pl_a4 qf[MAX_DK / 16]; // the warp's q̂ rows, all dk, in registers
#pragma unroll
    for (int kk = 0; kk < MAX_DK / 16; kk++)
        if (kk < nk)
            vw_pl_load_a(qf[kk], B0, ldk, 16 * w, 16 * kk, lane);
    __syncthreads(); // the slice buffers are free
    issue_slice(0);
    issue_slice(1);
    // P = Q K^T (CPU: sgemm) for the warp's rows, key tiles up to the diagonal
    float pc[8][4] = {};
#pragma unroll
    for (int kc = 0; kc < MAX_DK / 16; kc += 2) {
        if (kc >= nk)
            break;
        float d[8][4] = {};
#pragma unroll
        for (int kk = kc; kk < kc + 2; kk++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                if (q > w)
                    break;
                vw_pl_b2x2 b;
                vw_pl_load_bt(b, Kt, ldk, 16 * q, 16 * kk, lane);
                vw_pl_mma(d[2 * q], qf[kk], b, 0);
                vw_pl_mma(d[2 * q + 1], qf[kk], b, 1);
            }
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                pc[j][i] += d[j][i];
    }
    // P ⊙ Γ with the diagonal (CPU: P *= decay, upper zeroed), as A fragments
    vw_pl_a4 pf[4];
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = 16 * w + g + 8 * (e >> 1), jj = 8 * j + 2 * t + (e & 1);
            if (j < 2 * (w + 1)) // the n-tiles QKᵀ computed (the others are 0)
                pc[j][e] = (jj <= i && i < n) ? pc[j][e] * expf(cs[i] - cs[jj]) : 0.0f;
        }
#pragma unroll
    for (int q = 0; q < 4; q++)
        if (q <= w)
            vw_pl_c_to_a(pf[q], pc[2 * q], pc[2 * q + 1]);
    const float ec[2] = {expf(cs[16 * w + g]), expf(cs[16 * w + g + 8])};
    for (int s = 0; s < nsl; s++) {
        char *Sb = B0 + (s & 1) * bb, *Vb = Sb + OV * ldk;
        vw_cp_async_wait<1>(); // this slice (the next may be in flight)
        if (Sf)                // a first chunk from its initial state: Sᵀ planes here, once
            for (int idx = threadIdx.x; idx < OV * dk / 2; idx += OUT_THREADS) {
                const int v = idx % OV, d = 2 * (idx / OV);
                const float *x = Sf + (size_t)d * dv + s * OV + v;
                uint32_t hi, lo;
                vw_pl_split2(x[0], x[dv], hi, lo);
                *(uint32_t *)vw_pl_at(Sb, ldk, v, d, 0) = hi;
                *(uint32_t *)vw_pl_at(Sb, ldk, v, d, 1) = lo;
            }
        __syncthreads();
        float o[4][4] = {};
        if (Sf || Sp) { // O = e^c (Q S_c) (CPU: sgemm of Q e^c and S)
#pragma unroll
            for (int kc = 0; kc < MAX_DK / 16; kc += 2) {
                if (kc >= nk)
                    break;
                float d[4][4] = {};
#pragma unroll
                for (int kk = kc; kk < kc + 2; kk++)
#pragma unroll
                    for (int q = 0; q < 2; q++) {
                        vw_pl_b2x2 b;
                        vw_pl_load_bt(b, Sb, ldk, 16 * q, 16 * kk, lane);
                        vw_pl_mma(d[2 * q], qf[kk], b, 0);
                        vw_pl_mma(d[2 * q + 1], qf[kk], b, 1);
                    }
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        o[j][i] += d[j][i];
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    o[j][i] *= ec[i >> 1];
        }
        // O += P V_new (CPU: sgemm with beta 1), key rows up to the diagonal
#pragma unroll
        for (int kc = 0; kc < 4; kc += 2) {
            if (kc > w)
                break;
            float d[4][4] = {};
#pragma unroll
            for (int kk = kc; kk < kc + 2; kk++) {
                if (kk > w)
                    break;
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    vw_pl_b2x2 b;
                    vw_pl_load_bk(b, Vb, LVN, 16 * kk, 16 * q, lane);
                    vw_pl_mma(d[2 * q], pf[kk], b, 0);
                    vw_pl_mma(d[2 * q + 1], pf[kk], b, 1);
                }
            }
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    o[j][i] += d[j][i];
        }
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int i = 16 * w + g + 8 * hf;
                if (i < n)
                    *(float2 *)(a.out + ((size_t)r0 + i) * a.ldo + h * dv + s * OV + 8 * j +
                                2 * t) = make_float2(o[j][2 * hf], o[j][2 * hf + 1]);
            }
        __syncthreads(); // this buffer is read: the slice after next goes there
        issue_slice(s + 2);
    }
    vw_cp_async_wait<-1>();
}

bool shape_taken(size_t dk, size_t dv) {
    return dk && dv && dk % 32 == 0 && dv % 32 == 0 && dk <= MAX_DK && dv <= MAX_DV;
}

} // namespace

int vw_cu_gdn_tc_takes(const vw_cu_gdn *a) {
    const uintptr_t align =
        (uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->out | (uintptr_t)a->ws;
    return a->prec != VW_CUDA_FP32 && shape_taken(a->dk, a->dv) && align % 16 == 0 &&
           (a->ldq | a->ldk | a->ldv | a->ldo) % 4 == 0;
}

size_t vw_cu_gdn_tc_smem_table(size_t dk, size_t dv, vw_cu_kernel_smem *t) {
    if (!shape_taken(dk, dv))
        return 0;
    t[0] = {(const void *)gdn_prep_tc_k, prep_bytes, "gdn_prep_tc_k"};
    t[1] = {(const void *)gdn_out_tc_k, out_bytes((int)dk), "gdn_out_tc_k"};
    return 2 + vw_cu_gdn_tc_state_smem_table(dk, t + 2);
}

vw_status vw_cu_gdn_tc_prep(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gdn_prep_tc_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), PREP_THREADS,
                     prep_bytes, s, *a); // opted in at creation
}

vw_status vw_cu_gdn_tc_out(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gdn_out_tc_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), OUT_THREADS,
                     out_bytes((int)a->dk), s, *a);
}

void vw_cu_gdn_tc_planes_to_f32(float *x, size_t n) {
    vw_planes_to_f32(x, n);
}
