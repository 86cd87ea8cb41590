// delta_rule_tc.cu — the chunked gated delta rule with its products on tensor
// cores: the path of the bf16 and bf16x2 precisions (docs/cuda.md "The delta
// rule"); delta_rule.cu's FP32 SIMT kernels are the fp32 precision and the
// fallback for other shapes. The same three kernels, scratch and steps as
// there (CPU reference: vw_gdn_chunked / chunk_head in core/model/delta_rule.c):
//
//   gdn_prep_tc_k  grid (chunk, v-head): c = cumsum(g); K K^T -> L; the FP32
//                  inverse A = (I + L)^-1; U' = A (beta V), W' = A (beta e^c K)
//   gdn_state_tc_k grid (16 or 64 value columns, sequence, v-head), per pass,
//                  the only loop over chunks: V_new = U' - W' S, O = (Q e^c) S,
//                  S = e^{c_last} S + (K e^{c_last - c})^T V_new
//   gdn_out_tc_k   grid (chunk, v-head): O += (Q K^T ⊙ Γ, causal) V_new
//
// Every product runs on mma.sync m16n8k8 TF32 with 3xTF32 operands
// (mma.cuh vw_mma_x3: FP32 grade, spec §4.4), in fresh accumulation chains of
// 32 summed dims (4 k-steps, 12 MMAs) whose results are added in FP32 on the
// CUDA cores, as attention_tc.cu does: the tensor cores' accumulation
// truncates, so no chain is long. The gate cumsum, Γ, β, the inverse and the
// state S itself stay FP32 (delta_rule_common.cuh, shared with the SIMT kernels).
//
// Tiles: 64 rows x 64 columns in shared memory, FP32, zero-padded past the
// chunk's rows and the head's columns; a tile whose fragments are read along
// rows (A operands; K as Bᵀ in K K^T) has stride 68 (g·68 + t: 32 banks), one
// read down columns (B operands; K as Aᵀ in Kᵀ V_new) stride 72 (t·72 + g).
// A warp owns whole 16 x 8 output tiles, and every sum runs in a fixed order
// that depends only on the chunk's own rows, so a sequence's numbers never
// depend on the batch (test_cuda_delta tc_packed, tc_wide_slices).
#include "delta_rule_common.cuh"
#include "mma.cuh"

namespace {

using vw_gdn::CH;
using vw_gdn::min_i;
using vw_gdn::ws_split;
using vw_gdn::ws_view;

constexpr int DP = 64;       // columns per staged tile
constexpr int LA = DP + 4;   // stride of a tile read along rows
constexpr int LB = DP + 8;   // stride of a tile read down columns
constexpr int KC = 32;       // summed dims per accumulation chain
constexpr int THREADS = 256; // 8 warps
constexpr int MAX_D = 256;   // widest dk, dv taken
static_assert(CH == DP && THREADS == 8 * 32, "warp maps: 4 m-tiles x 8 n-tiles of a 64x64 tile");

// Operand views: element (r, c) of a row-major or a column-major matrix.
struct rowm {
    const float *p;
    int ld;
    __device__ float operator()(int r, int c) const {
        return p[r * ld + c];
    }
};
struct colm {
    const float *p;
    int ld;
    __device__ float operator()(int r, int c) const {
        return p[c * ld + r];
    }
};

// This lane's A fragment (rows 0-15, columns k .. k+7) and B fragment (rows
// k .. k+7, columns n0 .. n0+7), split into TF32 big and small parts
// (mma.cuh's m16n8k8 layout tables).
template <class FA>
__device__ __forceinline__ void frag_a(const FA &A, int k, uint32_t big[4], uint32_t small[4]) {
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    vw_split_tf32(A(g, k + t), big[0], small[0]);
    vw_split_tf32(A(g + 8, k + t), big[1], small[1]);
    vw_split_tf32(A(g, k + t + 4), big[2], small[2]);
    vw_split_tf32(A(g + 8, k + t + 4), big[3], small[3]);
}
template <class FB>
__device__ __forceinline__ void frag_b(const FB &B, int k, int n0, uint32_t big[2],
                                       uint32_t small[2]) {
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    vw_split_tf32(B(k + t, n0 + g), big[0], small[0]);
    vw_split_tf32(B(k + t + 4, n0 + g), big[1], small[1]);
}

// acc[a][nt] += sum_{k0 <= k < k1} A[a](r, k) B(k, 8 nt + c): the warp's
// 16 x 8 NT output tile(s) of NA products sharing their B operand (W' S and
// (Q e^c) S share S's fragments), C fragment layout. k0, k1 multiples of 8;
// each KC dims from k0 sum in a fresh accumulator (3xTF32), added to acc in
// FP32; per element the same MMAs in the same order whatever NA and NT.
template <int NA, int NT, class FA, class FB>
__device__ __forceinline__ void warp_mma(float (&acc)[NA][NT][4], const FA (&A)[NA], const FB &B,
                                         int k0, int k1) {
    for (int c0 = k0; c0 < k1; c0 += KC) {
        float d[NA][NT][4] = {};
        const int ce = min_i(c0 + KC, k1);
        for (int k = c0; k < ce; k += 8) {
            uint32_t ab[NA][4], as[NA][4];
#pragma unroll
            for (int m = 0; m < NA; m++)
                frag_a(A[m], k, ab[m], as[m]);
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                uint32_t bb[2], bs[2];
                frag_b(B, k, 8 * nt, bb, bs);
#pragma unroll
                for (int m = 0; m < NA; m++)
                    vw_mma_x3<VW_MMA_TF32>(d[m][nt], ab[m], as[m], bb, bs);
            }
        }
#pragma unroll
        for (int m = 0; m < NA; m++)
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[m][nt][i] += d[m][nt][i];
    }
}

// The (row, column) of this lane's accumulator i in a 16 x 8 tile.
__device__ __forceinline__ int c_row(int i) {
    return ((threadIdx.x & 31) >> 2) + 8 * (i >> 1);
}
__device__ __forceinline__ int c_col(int i) {
    return 2 * (threadIdx.x & 3) + (i & 1);
}

// X[i][j] (stride ld) = scale_i * src[(r0 + i) * lds + j] for i < n, j < nc;
// zero for the other rows and columns of the 64 x 64 tile. float4 moves
// (vw_cu_gdn_tc_takes checks the alignment; nc % 4 == 0). scale NULL: 1.
__device__ void stage(float *X, int ld, const float *src, size_t lds, size_t r0, int n, int nc,
                      const float *scale) {
    for (int idx = threadIdx.x; idx < CH * DP / 4; idx += blockDim.x) {
        const int i = idx / (DP / 4), j = idx % (DP / 4) * 4;
        float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (i < n && j < nc) {
            x = *reinterpret_cast<const float4 *>(src + (r0 + i) * lds + j);
            if (scale) {
                const float s = scale[i];
                x.x = s * x.x, x.y = s * x.y, x.z = s * x.z, x.w = s * x.w;
            }
        }
        *reinterpret_cast<float4 *>(X + i * ld + j) = x;
    }
}

// acc = M Mᵀ or Q Kᵀ over the dk columns (rows r0 .. r0 + n - 1 of x and y,
// head columns at x, y, stride ldx, ldy), 64 x 64 in C fragments: warp w owns
// rows 16 (w >> 1) .., columns 32 (w & 1) .. + 31 (4 n-tiles) and skips tiles
// wholly above the diagonal and rows past n. Xs, Ys: two tiles of stride LA
// (Ys == Xs when y == x). Ends past a barrier.
__device__ void lower_gram(float (&acc)[1][4][4], const float *x, size_t ldx, const float *y,
                           size_t ldy, size_t dk, size_t r0, int n, float *Xs, float *Ys) {
    const int warp = threadIdx.x >> 5, mi = warp >> 1, nh = warp & 1;
    const bool busy = 32 * nh < 16 * (mi + 1) && 16 * mi < n;
    for (size_t d0 = 0; d0 < dk; d0 += DP) {
        const int nd = min_i(DP, (int)(dk - d0));
        if (d0)
            __syncthreads();
        stage(Xs, LA, x + d0, ldx, r0, n, nd, nullptr);
        if (Ys != Xs)
            stage(Ys, LA, y + d0, ldy, r0, n, nd, nullptr);
        __syncthreads();
        if (busy)
            warp_mma(acc, {rowm{Xs + 16 * mi * LA, LA}}, colm{Ys + 32 * nh * LA, LA}, 0, nd);
    }
    __syncthreads();
}

// ---- kernel 1: everything that does not depend on the state ------------------

constexpr size_t prep_floats = 4 * CH + CH * LB + CH * LA + 3 * 256;

// dst[i][j] (stride ldd) = (or += with ACC) (A (scale ⊙ src))[i][j] for the
// ncols columns of src (rows r0 .., stride ld) and rows i < n, A lower
// triangular (64 x 64, stride LA), by 64-column tiles staged in X: warp w owns
// output columns 8w .. 8w + 7 of a tile, all m-tiles below row n, each summed
// over k < 16 (mi + 1) only. Starts with a barrier (X's previous contents).
template <bool ACC>
__device__ void lower_apply(const float *A, float *X, const float *src, size_t ld,
                            const float *scale, float *dst, size_t ldd, size_t r0, int n,
                            int ncols) {
    const int warp = threadIdx.x >> 5, kn = (n + 7) & ~7;
    for (int j0 = 0; j0 < ncols; j0 += DP) {
        const int nc = min_i(DP, ncols - j0);
        __syncthreads(); // the previous tile (or L, or Q and K) is no longer read
        stage(X, LB, src + j0, ld, r0, n, nc, scale);
        __syncthreads();
        if (8 * warp >= nc)
            continue;
        for (int mi = 0; mi < 4 && 16 * mi < n; mi++) {
            float acc[1][1][4] = {};
            warp_mma(acc, {rowm{A + 16 * mi * LA, LA}}, rowm{X + 8 * warp, LB}, 0,
                     min_i(16 * (mi + 1), kn));
            for (int i = 0; i < 4; i++) {
                const int r = 16 * mi + c_row(i);
                if (r >= n)
                    continue;
                float *d = dst + (size_t)r * ldd + j0 + 8 * warp + c_col(i);
                *d = ACC ? *d + acc[0][0][i] : acc[0][0][i];
            }
        }
    }
}

__global__ void __launch_bounds__(THREADS) gdn_prep_tc_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float, sm);
    float *c = sm, *bet = c + CH, *sb = bet + CH, *tot = sb + CH; // tot: 4 of CH floats
    float *X = tot + CH; // [CH][LB]: K tiles (stride LA), then L (LA), then B tiles (LB)
    float *A = X + CH * LB, *T = A + CH * LA; // (I + L)^-1 [CH][LA]; merge products
    const size_t h = blockIdx.y, kh = h / (a.Hv / a.Hk), dk = a.dk, dv = a.dv;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int warp = threadIdx.x >> 5, mi = warp >> 1, nh = warp & 1;
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    vw_gdn::chunk_cumsum(a, w, r0, n, h, c, bet, sb, tot);
    // K K^T (CPU: sgemm into L), then L = strict_lower(beta K K^T Γ) into X
    float acc[1][4][4] = {};
    const float *k = a.k + kh * dk;
    lower_gram(acc, k, a.ldk, k, a.ldk, dk, (size_t)r0, n, X, X);
    for (int nt = 0; nt < 4; nt++)
        for (int e = 0; e < 4; e++) {
            const int i = 16 * mi + c_row(e), j = 32 * nh + 8 * nt + c_col(e);
            X[i * LA + j] = (j < i && i < n) ? bet[i] * acc[0][nt][e] * expf(c[i] - c[j]) : 0.0f;
        }
    __syncthreads();
    vw_gdn::chunk_inverse(X, A, T, LA);
    // W' = A (beta e^c K), U' = A (beta V)
    lower_apply<false>(A, X, k, a.ldk, sb, w.w + (h * a.rows + r0) * dk, dk, (size_t)r0, n,
                       (int)dk);
    lower_apply<false>(A, X, a.v + h * dv, a.ldv, bet, w.u + (h * a.rows + r0) * dv, dv, (size_t)r0,
                       n, (int)dv);
}

// ---- kernel 2: the state pass, sequential over a sequence's chunks ---------------

// Value columns per block: VS = 16 (NARROW: 8 blocks per head at dv 128, for
// passes of few sequences) or 64 (WIDE: a quarter of the blocks, each reading
// the chunk's W', Q, K tiles once for 4x the columns, for passes of many). An
// element's operations are the same in both, so its value is too.
constexpr int NARROW = 16, WIDE = 64;

size_t state_floats(size_t dk, int vs) {
    const size_t ls = (size_t)vs + 8;
    return dk * ls + CH * ls + 2 * CH + CH * LB + CH * LA;
}

// Warp w: phase 1 rows 16 (w >> 1) .. of the chunk x value columns
// (w & 1) VS / 2 .. + VS / 2 - 1 of the slice; phase 2 key rows d0 + 16 (w >> 1)
// .. of a 64-dim tile x the same columns. Each S element is written by one lane.
template <int VS>
__global__ void __launch_bounds__(THREADS) gdn_state_tc_k(vw_cu_gdn a, vw_cu_gdn_pass p) {
    constexpr int LS = VS + 8, NT = VS / 16; // S, V_new stride (read down columns); n-tiles
    VW_DYN_SMEM(float, sm);
    const size_t dk = a.dk, dv = a.dv, h = blockIdx.z, j0 = (size_t)blockIdx.x * VS;
    const size_t kh = h / (a.Hv / a.Hk);
    const int warp = threadIdx.x >> 5, mi = warp >> 1, c0 = 8 * NT * (warp & 1);
    const vw_cuda_seg sg = p.segs[blockIdx.y];
    float *S = sm, *Vn = S + dk * LS;        // [dk][LS] the state slice; [CH][LS] V_new
    float *ec = Vn + CH * LS, *kd = ec + CH; // e^{c_i}, e^{c_last - c_i}
    float *X = kd + CH, *Y = X + CH * LB;    // W' (LA) then K (LB) tiles; Q tiles (LA)
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    const float *S0 =
        (p.init && sg.state >= 0) ? p.init + ((size_t)sg.state * a.Hv + h) * dk * dv : nullptr;
    for (size_t idx = threadIdx.x; idx < dk * VS; idx += blockDim.x) {
        const size_t d = idx / VS, jc = idx % VS;
        S[d * LS + jc] = S0 ? S0[d * dv + j0 + jc] : 0.0f;
    }
    __syncthreads(); // every block reaches a barrier, even for an empty sequence (emulator)
    for (int t0 = 0; t0 < sg.len; t0 += CH) {
        const int n = min_i(CH, sg.len - t0), kn = (n + 7) & ~7;
        const size_t r0 = (size_t)sg.start + t0;
        const float *cr = w.c + h * a.rows + r0;
        if (threadIdx.x < CH) {
            const int i = threadIdx.x;
            const float cl = cr[n - 1], ci = i < n ? cr[i] : cl;
            ec[i] = i < n ? expf(ci) : 0.0f;
            kd[i] = i < n ? expf(cl - ci) : 0.0f; // <= 1: a difference, never e^c e^-c
        }
        __syncthreads();
        // V_new = U' - W' S and O = (Q e^c) S over key tiles (CPU: two sgemm)
        float wq[2][NT][4] = {}; // W' S, (Q e^c) S
        for (size_t d0 = 0; d0 < dk; d0 += DP) {
            const int nd = min_i(DP, (int)(dk - d0));
            if (d0)
                __syncthreads();
            stage(X, LA, w.w + (h * a.rows) * dk + d0, dk, r0, n, nd, nullptr);
            stage(Y, LA, a.q + kh * dk + d0, a.ldq, r0, n, nd, ec);
            __syncthreads();
            if (16 * mi < n)
                warp_mma(wq, {rowm{X + 16 * mi * LA, LA}, rowm{Y + 16 * mi * LA, LA}},
                         rowm{S + d0 * LS + c0, LS}, 0, nd);
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = 16 * mi + c_row(e), jc = c0 + 8 * nt + c_col(e);
                float vn = 0.0f;
                if (i < n) {
                    float *u = w.u + (h * a.rows + r0 + i) * dv + j0 + jc;
                    vn = *u - wq[0][nt][e];
                    *u = vn;
                    a.out[(r0 + i) * a.ldo + h * dv + j0 + jc] = wq[1][nt][e];
                }
                Vn[i * LS + jc] = vn;
            }
        __syncthreads();
        // S = e^{c_last} S + (K e^{c_last - c})^T V_new (CPU: S *= el, then sgemm)
        const float el = ec[n - 1];
        for (size_t d0 = 0; d0 < dk; d0 += DP) {
            const int nd = min_i(DP, (int)(dk - d0));
            if (d0)
                __syncthreads();
            stage(X, LB, a.k + kh * dk + d0, a.ldk, r0, n, nd, kd);
            __syncthreads();
            if (16 * mi >= nd)
                continue;
            float acc[1][NT][4] = {};
            warp_mma(acc, {colm{X + 16 * mi, LB}}, rowm{Vn + c0, LS}, 0, kn);
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float *s = S + (d0 + 16 * mi + c_row(e)) * LS + c0 + 8 * nt + c_col(e);
                    *s = fmaf(el, *s, acc[0][nt][e]);
                }
        }
        __syncthreads(); // S updated; ec, Vn and the tiles free for the next chunk
    }
    if (p.final && sg.state >= 0) {
        float *Sf = p.final + ((size_t)sg.state * a.Hv + h) * dk * dv;
        for (size_t idx = threadIdx.x; idx < dk * VS; idx += blockDim.x) {
            const size_t d = idx / VS, jc = idx % VS;
            Sf[d * dv + j0 + jc] = S[d * LS + jc];
        }
    }
}

// ---- kernel 3: the intra-chunk part of the output ------------------------------

constexpr size_t out_floats = CH + CH * LB + CH * LB;

__global__ void __launch_bounds__(THREADS) gdn_out_tc_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float, sm);
    float *c = sm, *X = c + CH, *Y = X + CH * LB; // X: Q tiles, then P (LA); Y: K (LA), V_new (LB)
    const size_t h = blockIdx.y, kh = h / (a.Hv / a.Hk), dk = a.dk, dv = a.dv;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int warp = threadIdx.x >> 5, mi = warp >> 1, nh = warp & 1;
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    if (threadIdx.x < CH)
        c[threadIdx.x] = (int)threadIdx.x < n ? w.c[h * a.rows + r0 + threadIdx.x] : 0.0f;
    // P = Q K^T (CPU: sgemm), then P ⊙ Γ with the diagonal
    float acc[1][4][4] = {};
    lower_gram(acc, a.q + kh * dk, a.ldq, a.k + kh * dk, a.ldk, dk, (size_t)r0, n, X, Y);
    for (int nt = 0; nt < 4; nt++)
        for (int e = 0; e < 4; e++) {
            const int i = 16 * mi + c_row(e), j = 32 * nh + 8 * nt + c_col(e);
            X[i * LA + j] = (j <= i && i < n) ? acc[0][nt][e] * expf(c[i] - c[j]) : 0.0f;
        }
    // O += P V_new over value tiles (CPU: sgemm with beta 1)
    lower_apply<true>(X, Y, w.u + (h * a.rows) * dv, dv, nullptr,
                      a.out + (size_t)r0 * a.ldo + h * dv, a.ldo, (size_t)r0, n, (int)dv);
}

// The kernels and their shared memory: prep, state (narrow, wide), out.
enum { K_PREP, K_NARROW, K_WIDE, K_OUT, K_COUNT };
void smem_table(size_t dk, vw_gdn::kernel_smem t[K_COUNT]) {
    t[K_PREP] = {(const void *)gdn_prep_tc_k, prep_floats * sizeof(float), "gdn_prep_tc_k"};
    t[K_NARROW] = {(const void *)gdn_state_tc_k<NARROW>, state_floats(dk, NARROW) * sizeof(float),
                   "gdn_state_tc_k<16>"};
    t[K_WIDE] = {(const void *)gdn_state_tc_k<WIDE>, state_floats(dk, WIDE) * sizeof(float),
                 "gdn_state_tc_k<64>"};
    t[K_OUT] = {(const void *)gdn_out_tc_k, out_floats * sizeof(float), "gdn_out_tc_k"};
}

bool shape_taken(size_t dk, size_t dv) {
    return dk && dv && dk % 32 == 0 && dv % 32 == 0 && dk <= MAX_D && dv <= MAX_D;
}

// Wide slices where they fit sm_89's 99 KB (dk <= 128: 91,648 bytes) and the
// pass has enough (sequence, head) pairs to fill the GPU with a quarter of the
// blocks (256 pairs: 512 blocks at dv 128).
bool wide_fits(size_t dk, size_t dv) {
    return dv % WIDE == 0 && dk <= 128;
}
bool wide_for(const vw_cu_gdn *a, const vw_cu_gdn_pass *p) {
    return wide_fits(a->dk, a->dv) && p->n_segs * a->Hv >= 256;
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
    vw_gdn::kernel_smem all[K_COUNT];
    smem_table(dk, all);
    size_t n = 0;
    for (int i = 0; i < K_COUNT; i++)
        if (i != K_WIDE || wide_fits(dk, dv))
            t[n++] = all[i];
    return n;
}

vw_status vw_cu_gdn_tc_prep(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gdn_prep_tc_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), THREADS,
                     prep_floats * sizeof(float), s, *a);
}

vw_status vw_cu_gdn_tc_state(const vw_cu_gdn *a, const vw_cu_gdn_pass *p, cudaStream_t s,
                             vw_err *err) {
    vw_gdn::kernel_smem t[K_COUNT];
    smem_table(a->dk, t);
    const bool wide = wide_for(a, p);
    const vw_gdn::kernel_smem &k = t[wide ? K_WIDE : K_NARROW]; // opted in at creation
    vw_status st = VW_OK;
    // grid y <= 65,535: a pass of more sequences runs as several launches (they
    // are independent), so no batch falls back to other kernels
    constexpr size_t max_y = 65535;
    for (size_t s0 = 0; s0 < p->n_segs && st == VW_OK; s0 += max_y) {
        vw_cu_gdn_pass part = *p;
        part.segs = p->segs + s0;
        part.n_segs = p->n_segs - s0 < max_y ? p->n_segs - s0 : max_y;
        dim3 grid((unsigned)(a->dv / (wide ? WIDE : NARROW)), (unsigned)part.n_segs,
                  (unsigned)a->Hv);
        st = wide ? VW_LAUNCH(err, gdn_state_tc_k<WIDE>, grid, THREADS, k.bytes, s, *a, part)
                  : VW_LAUNCH(err, gdn_state_tc_k<NARROW>, grid, THREADS, k.bytes, s, *a, part);
    }
    return st;
}

vw_status vw_cu_gdn_tc_out(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    return VW_LAUNCH(err, gdn_out_tc_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), THREADS,
                     out_floats * sizeof(float), s, *a);
}
