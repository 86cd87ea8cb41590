// delta_rule.cu — the chunked gated delta rule (chunk 64) on the GPU, FP32
// throughout, as three kernels (docs/spec/backbone.md §4.1-§4.2; CPU reference:
// vw_gdn_chunked = vw_gdn_chunk_prep + vw_gdn_chunk_state in core/model/delta_rule.c, whose steps
// and rounding points each kernel names). Per value head h and chunk of n <= 64 rows:
//
//   gdn_prep_k  grid (chunk, v-head) over every chunk of every sequence of the
//               call at once — nothing here depends on the state:
//                 c = cumsum(g)                      (two-warp shuffle scan)
//                 L = strict_lower(beta K K^T Γ), Γ_ij = exp(c_i - c_j)
//                 A = (I + L)^-1                     (16x16 diagonal blocks by
//                     forward substitution, then 3 rounds of block merges)
//                 U' = A (beta V), W' = A (beta e^c K)  -> scratch c, U', W'
//   gdn_state_k grid (sequence, 16 value columns, v-head), the only loop over
//               chunks; the S slice [dk x 16] stays in shared memory:
//                 V_new = U' - W' S   (written over U')
//                 O     = (Q e^c) S   (the state's part of the output, into out)
//                 S     = e^{c_last} S + (K e^{c_last - c})^T V_new
//   gdn_out_k   grid (chunk, v-head), all chunks again:
//                 O    += (Q K^T ⊙ Γ, causal) V_new
//
// Prefixes then blocks: the state kernel runs once per vw_cu_gdn_pass, in order,
// so a block's pass reads the final states the prefixes' pass wrote. K·Kᵀ,
// Q·Kᵀ, the inverse and the state stay FP32 (spec §4.4). Every sum is one
// FMA chain in a fixed index order (tile_mma, the scan's fixed tree, the
// block merges), so a row's value never depends on the launch or on the
// other sequences of the batch (tests: fp32_packed, tree_batching_bit_exact).
//
// These are the fp32 precision's kernels and the fallback: vw_cu_gdn_run and
// vw_cu_gdn_prep hand BF16 and BF16X2 calls that vw_cu_gdn_tc_takes to the
// tensor-core kernels of delta_rule_tc.cu (same steps, same scratch).
#include "delta_rule_common.cuh"

namespace {

using vw_gdn::CH;
using vw_gdn::min_i;
using vw_gdn::ws_split;
using vw_gdn::ws_view;
constexpr int DT = 64;     // key / value columns per staged tile
constexpr int LD = DT + 1; // row stride of a tile (odd: column walks hit 32 banks)
constexpr int VS = 16;     // value columns of the state per state-pass block
constexpr int TILE_THREADS = 256, STATE_THREADS = 128;
static_assert(CH == 64 && DT == CH, "the 64x64 tile products assume 64-row chunks and tiles");
static_assert(TILE_THREADS == 256 && STATE_THREADS == 4 * (CH / 2) && VS == 16,
              "thread maps: 16x16 threads of 4x4 outputs; 32 row pairs x 4 column quads");

// X[i][j] (stride LD) = scale_i * src[(r0 + i) * ld + j] for i < n, j < nc;
// zero elsewhere in the 64x64 tile. scale NULL: 1 (no multiply).
__device__ void stage(float *X, const float *src, size_t ld, size_t r0, int n, int nc,
                      const float *scale) {
    for (int idx = threadIdx.x; idx < CH * DT; idx += blockDim.x) {
        const int i = idx / DT, j = idx % DT;
        float x = 0.0f;
        if (i < n && j < nc) {
            x = src[(r0 + i) * ld + j];
            if (scale)
                x = scale[i] * x;
        }
        X[i * LD + j] = x;
    }
}

// acc[r][s] += sum_{k < kn} A(ti + 16r, k) B(k, tj + 16s), A(i, k) = a[i*ai + k*ak],
// B(k, j) = b[k*bk + j*bj], for the thread's 4x4 outputs (ti = tid / 16,
// tj = tid % 16 of 256 threads): a 64x64 product. One FMA chain per output, k
// in increasing order. Interleaved rows/columns keep a warp's reads on distinct
// banks or broadcast.
__device__ __forceinline__ void tile_mma(float acc[4][4], const float *a, int ai, int ak,
                                         const float *b, int bk, int bj, int kn) {
    const int ti = threadIdx.x >> 4, tj = threadIdx.x & 15;
    for (int k = 0; k < kn; k++) {
        float av[4], bv[4];
        for (int r = 0; r < 4; r++)
            av[r] = a[(ti + 16 * r) * ai + k * ak];
        for (int s = 0; s < 4; s++)
            bv[s] = b[k * bk + (tj + 16 * s) * bj];
        for (int r = 0; r < 4; r++)
            for (int s = 0; s < 4; s++)
                acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
    }
}

__device__ __forceinline__ void zero4x4(float acc[4][4]) {
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 4; s++)
            acc[r][s] = 0.0f;
}

// ---- kernel 1: everything that does not depend on the state ------------------

size_t prep_smem_floats() {
    return 3 * CH + 4 + 2 * CH * LD + 3 * 256;
}

struct prep_smem {
    float *c, *bet, *sb; // [CH] cumsum(g), beta, beta e^c
    float *tot;          // [4] the scan's carry
    float *X;            // [CH][LD] K / V tiles; L during the inverse
    float *A;            // [CH][LD] (I + L)^-1
    float *T;            // [3][16][16] block-merge products
};

__device__ prep_smem prep_carve(float *sm) {
    prep_smem m;
    m.c = sm;
    m.bet = m.c + CH;
    m.sb = m.bet + CH;
    m.tot = m.sb + CH;
    m.X = m.tot + 4;
    m.A = m.X + CH * LD;
    m.T = m.A + CH * LD;
    return m;
}

// dst[h][r0 + i][j0 + j] = (A (scale ⊙ src))[i][j] for the ncols columns of
// src (row stride ld, first column already applied), tile by tile.
__device__ void prep_apply(const prep_smem &m, const float *src, size_t ld, const float *scale,
                           float *dst, size_t ldd, int r0, int n, int ncols) {
    const int ti = threadIdx.x >> 4, tj = threadIdx.x & 15;
    for (int j0 = 0; j0 < ncols; j0 += DT) {
        const int nc = min_i(DT, ncols - j0);
        __syncthreads(); // the previous tile (or L) is no longer read
        stage(m.X, src + j0, ld, (size_t)r0, n, nc, scale);
        __syncthreads();
        float acc[4][4];
        zero4x4(acc);
        tile_mma(acc, m.A, LD, 1, m.X, LD, 1, n);
        for (int r = 0; r < 4; r++)
            for (int s = 0; s < 4; s++) {
                const int i = ti + 16 * r, j = tj + 16 * s;
                if (i < n && j < nc)
                    dst[(size_t)i * ldd + j0 + j] = acc[r][s];
            }
    }
}

__global__ void __launch_bounds__(TILE_THREADS) gdn_prep_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float, sm);
    const prep_smem m = prep_carve(sm);
    const size_t h = blockIdx.y, kh = h / (a.Hv / a.Hk), dk = a.dk, dv = a.dv;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int ti = threadIdx.x >> 4, tj = threadIdx.x & 15;
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    vw_gdn::chunk_cumsum(a, w, r0, n, h, m.c, m.bet, m.sb, m.tot);
    // K K^T over key tiles (CPU: sgemm into L)
    float acc[4][4];
    zero4x4(acc);
    for (size_t d0 = 0; d0 < dk; d0 += DT) {
        const int nd = min_i(DT, (int)(dk - d0));
        if (d0)
            __syncthreads();
        stage(m.X, a.k + kh * dk + d0, a.ldk, (size_t)r0, n, nd, nullptr);
        __syncthreads();
        tile_mma(acc, m.X, LD, 1, m.X, 1, LD, nd);
    }
    __syncthreads();
    // L = strict_lower(beta K K^T Γ) (CPU: b * kk * decay)
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 4; s++) {
            const int i = ti + 16 * r, j = tj + 16 * s;
            m.X[i * LD + j] =
                (j < i && i < n) ? m.bet[i] * acc[r][s] * expf(m.c[i] - m.c[j]) : 0.0f;
        }
    __syncthreads();
    vw_gdn::chunk_inverse(m.X, m.A, m.T, LD);
    // W' = A (beta e^c K), U' = A (beta V)
    prep_apply(m, a.k + kh * dk, a.ldk, m.sb, w.w + (h * a.rows + r0) * dk, dk, r0, n, (int)dk);
    prep_apply(m, a.v + h * dv, a.ldv, m.bet, w.u + (h * a.rows + r0) * dv, dv, r0, n, (int)dv);
}

// ---- kernel 2: the state pass, sequential over a sequence's chunks ---------------

size_t state_smem_floats(size_t dk) {
    return dk * VS + CH * VS + 2 * CH + 2 * CH * LD;
}

struct state_smem {
    float *S;       // [dk][VS] the state slice
    float *Vn;      // [CH][VS] V_new of the chunk
    float *ec, *kd; // [CH] e^{c_i}, e^{c_last - c_i}
    float *X, *Y;   // [CH][LD] W' / K tiles, Q tiles
};

__device__ state_smem state_carve(float *sm, size_t dk) {
    state_smem m;
    m.S = sm; // offsets stay multiples of 4 floats: S and Vn are read as float4
    m.Vn = m.S + dk * VS;
    m.ec = m.Vn + CH * VS;
    m.kd = m.ec + CH;
    m.X = m.kd + CH;
    m.Y = m.X + CH * LD;
    return m;
}

__device__ __forceinline__ float4 ld4(const float *p) {
    return *reinterpret_cast<const float4 *>(p);
}

// Thread map (128 threads): rows rg and rg + 32 of the chunk, or key rows
// d0 + rg and d0 + rg + 32 of a tile, times value columns 4cg .. 4cg + 3.
__global__ void __launch_bounds__(STATE_THREADS) gdn_state_k(vw_cu_gdn a, vw_cu_gdn_pass p) {
    VW_DYN_SMEM(float, sm);
    const size_t dk = a.dk, dv = a.dv, h = blockIdx.z, j0 = (size_t)blockIdx.y * VS;
    const size_t kh = h / (a.Hv / a.Hk);
    const int cols = dv - j0 < (size_t)VS ? (int)(dv - j0) : VS;
    const int tid = threadIdx.x, cg = tid & 3, rg = tid >> 2;
    const vw_cuda_seg sg = p.segs[blockIdx.x];
    const state_smem m = state_carve(sm, dk);
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    const float *S0 =
        (p.init && sg.state >= 0) ? p.init + ((size_t)sg.state * a.Hv + h) * dk * dv : nullptr;
    for (size_t idx = tid; idx < dk * VS; idx += blockDim.x) {
        const size_t d = idx / VS, jc = idx % VS;
        m.S[idx] = (S0 && (int)jc < cols) ? S0[d * dv + j0 + jc] : 0.0f;
    }
    __syncthreads(); // every block reaches a barrier, even for an empty sequence (emulator)
    for (int t0 = 0; t0 < sg.len; t0 += CH) {
        const int n = min_i(CH, sg.len - t0);
        const size_t r0 = (size_t)sg.start + t0;
        const float *cr = w.c + h * a.rows + r0;
        if (tid < CH) {
            const float cl = cr[n - 1], ci = tid < n ? cr[tid] : cl;
            m.ec[tid] = tid < n ? expf(ci) : 0.0f;
            m.kd[tid] = tid < n ? expf(cl - ci) : 0.0f; // <= 1: a difference, never e^c e^-c
        }
        __syncthreads();
        // V_new = U' - W' S and O = (Q e^c) S, over key tiles (CPU: two sgemm)
        float aw[2][4] = {}, aq[2][4] = {};
        for (size_t d0 = 0; d0 < dk; d0 += DT) {
            const int nd = min_i(DT, (int)(dk - d0));
            if (d0)
                __syncthreads();
            stage(m.X, w.w + (h * a.rows) * dk + d0, dk, r0, n, nd, nullptr);
            stage(m.Y, a.q + kh * dk + d0, a.ldq, r0, n, nd, m.ec);
            __syncthreads();
            for (int dd = 0; dd < nd; dd++) {
                const float4 s4 = ld4(m.S + (d0 + dd) * VS + 4 * cg);
                const float sv[4] = {s4.x, s4.y, s4.z, s4.w};
                for (int r = 0; r < 2; r++) {
                    const float wv = m.X[(rg + 32 * r) * LD + dd],
                                qv = m.Y[(rg + 32 * r) * LD + dd];
                    for (int s = 0; s < 4; s++) {
                        aw[r][s] = fmaf(wv, sv[s], aw[r][s]);
                        aq[r][s] = fmaf(qv, sv[s], aq[r][s]);
                    }
                }
            }
        }
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 4; s++) {
                const int i = rg + 32 * r, jc = 4 * cg + s;
                float vn = 0.0f;
                if (i < n && jc < cols) {
                    float *u = w.u + (h * a.rows + r0 + i) * dv + j0 + jc;
                    vn = *u - aw[r][s];
                    *u = vn;
                    a.out[(r0 + i) * a.ldo + h * dv + j0 + jc] = aq[r][s];
                }
                m.Vn[i * VS + jc] = vn;
            }
        __syncthreads();
        // S = e^{c_last} S + (K e^{c_last - c})^T V_new (CPU: S *= el, then sgemm)
        const float el = m.ec[n - 1];
        for (size_t d0 = 0; d0 < dk; d0 += DT) {
            const int nd = min_i(DT, (int)(dk - d0));
            if (d0)
                __syncthreads();
            stage(m.X, a.k + kh * dk + d0, a.ldk, r0, n, nd, m.kd);
            __syncthreads();
            for (int r = 0; r < 2; r++) {
                const int dl = rg + 32 * r;
                if (dl >= nd)
                    continue;
                float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                for (int i = 0; i < n; i++) {
                    const float kv = m.X[i * LD + dl];
                    const float4 v4 = ld4(m.Vn + i * VS + 4 * cg);
                    acc[0] = fmaf(kv, v4.x, acc[0]);
                    acc[1] = fmaf(kv, v4.y, acc[1]);
                    acc[2] = fmaf(kv, v4.z, acc[2]);
                    acc[3] = fmaf(kv, v4.w, acc[3]);
                }
                float *Sr = m.S + (d0 + dl) * VS + 4 * cg;
                for (int s = 0; s < 4; s++)
                    Sr[s] = fmaf(el, Sr[s], acc[s]);
            }
        }
        __syncthreads(); // S updated; ec, Vn and the tiles free for the next chunk
    }
    if (p.final && sg.state >= 0) {
        float *Sf = p.final + ((size_t)sg.state * a.Hv + h) * dk * dv;
        for (size_t idx = tid; idx < dk * VS; idx += blockDim.x) {
            const size_t d = idx / VS, jc = idx % VS;
            if ((int)jc < cols)
                Sf[d * dv + j0 + jc] = m.S[idx];
        }
    }
}

// ---- kernel 3: the intra-chunk part of the output ------------------------------

size_t out_smem_floats() {
    return CH + 2 * CH * LD;
}

__global__ void __launch_bounds__(TILE_THREADS) gdn_out_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float, sm);
    float *c = sm, *X = c + CH, *Y = X + CH * LD; // X: Q tiles, then P; Y: K, then V_new tiles
    const size_t h = blockIdx.y, kh = h / (a.Hv / a.Hk), dk = a.dk, dv = a.dv;
    const int r0 = a.chunks[2 * blockIdx.x], n = a.chunks[2 * blockIdx.x + 1];
    const int ti = threadIdx.x >> 4, tj = threadIdx.x & 15;
    const ws_view w = ws_split(a.ws, a.rows, a.Hv, dk, dv);
    if (threadIdx.x < CH)
        c[threadIdx.x] = (int)threadIdx.x < n ? w.c[h * a.rows + r0 + threadIdx.x] : 0.0f;
    // P = Q K^T over key tiles (CPU: sgemm), then P ⊙ Γ with the diagonal
    float acc[4][4];
    zero4x4(acc);
    for (size_t d0 = 0; d0 < dk; d0 += DT) {
        const int nd = min_i(DT, (int)(dk - d0));
        __syncthreads();
        stage(X, a.q + kh * dk + d0, a.ldq, (size_t)r0, n, nd, nullptr);
        stage(Y, a.k + kh * dk + d0, a.ldk, (size_t)r0, n, nd, nullptr);
        __syncthreads();
        tile_mma(acc, X, LD, 1, Y, 1, LD, nd);
    }
    __syncthreads();
    for (int r = 0; r < 4; r++)
        for (int s = 0; s < 4; s++) {
            const int i = ti + 16 * r, j = tj + 16 * s;
            X[i * LD + j] = (j <= i && i < n) ? acc[r][s] * expf(c[i] - c[j]) : 0.0f;
        }
    // O += P V_new over value tiles (CPU: sgemm with beta 1)
    const float *vn = w.u + (h * a.rows) * dv;
    for (int j0 = 0; j0 < (int)dv; j0 += DT) {
        const int nc = min_i(DT, (int)dv - j0);
        __syncthreads();
        stage(Y, vn + j0, dv, (size_t)r0, n, nc, nullptr);
        __syncthreads();
        zero4x4(acc);
        tile_mma(acc, X, LD, 1, Y, LD, 1, n);
        for (int r = 0; r < 4; r++)
            for (int s = 0; s < 4; s++) {
                const int i = ti + 16 * r, j = tj + 16 * s;
                if (i < n && j < nc) {
                    float *o = a.out + ((size_t)r0 + i) * a.ldo + h * dv + j0 + j;
                    *o = *o + acc[r][s];
                }
            }
    }
}

void smem_table(size_t dk, vw_gdn::kernel_smem t[3]) {
    t[0] = {(const void *)gdn_prep_k, prep_smem_floats() * sizeof(float), "gdn_prep_k"};
    t[1] = {(const void *)gdn_state_k, state_smem_floats(dk) * sizeof(float), "gdn_state_k"};
    t[2] = {(const void *)gdn_out_k, out_smem_floats() * sizeof(float), "gdn_out_k"};
}

vw_status check_shape(const vw_cu_gdn *a, vw_err *err) {
    if (!a->dk || !a->dv || a->Hk == 0 || a->Hv % a->Hk || a->Hv > 65535 ||
        a->n_chunks > 0x7fffffffu || a->rows > 0x7fffffffu || a->pass[0].n_segs > 0x7fffffffu ||
        a->pass[1].n_segs > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "delta rule: Hv %zu over Hk %zu, dk %zu, dv %zu, %zu chunks", a->Hv, a->Hk,
                       a->dk, a->dv, a->n_chunks);
    return VW_OK;
}

} // namespace

size_t vw_cu_gdn_ws_floats(size_t rows, size_t Hv, size_t dk, size_t dv) {
    return rows * Hv * (1 + 3 * dk + dv) + vw_gdn::ws_slots(rows) * Hv * dv * dk + rows;
}

void vw_cu_gdn_ws_at(size_t rows, size_t Hv, size_t dk, size_t dv, size_t *w, size_t *u,
                     size_t *c) {
    *w = 0, *u = rows * Hv * dk;
    *c = vw_cu_gdn_ws_floats(rows, Hv, dk, dv) - rows * Hv;
}

size_t vw_cu_gdn_chunks(const vw_cuda_seg *segs, size_t n_segs, int32_t *chunks) {
    size_t n = 0;
    for (size_t s = 0; s < n_segs; s++)
        for (int32_t t0 = 0; t0 < segs[s].len; t0 += CH, n++) {
            chunks[2 * n] = segs[s].start + t0;
            chunks[2 * n + 1] = segs[s].len - t0 < CH ? segs[s].len - t0 : CH;
        }
    return n;
}

size_t vw_cu_gdn_smem_table(size_t dk, size_t dv, vw_cu_kernel_smem *t) {
    smem_table(dk, t);
    return 3 + vw_cu_gdn_tc_smem_table(dk, dv, t + 3);
}

vw_status vw_cu_gdn_supported(size_t dk, size_t dv, vw_err *err) {
    if (!dk || !dv)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "delta rule: dk %zu, dv %zu", dk, dv);
    vw_cu_kernel_smem t[VW_CU_SMEM_ROWS];
    const size_t n = vw_cu_gdn_smem_table(dk, dv, t);
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++)
        st = vw_cuda_smem_optin(t[i].fn, t[i].bytes, t[i].name, err);
    return st;
}

vw_status vw_cu_gdn_prep(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    vw_status st = check_shape(a, err);
    if (st != VW_OK || !a->n_chunks)
        return st;
    if (vw_cu_gdn_tc_takes(a))
        return vw_cu_gdn_tc_prep(a, s, err);
    vw_gdn::kernel_smem t[3]; // opted in by vw_cu_gdn_supported
    smem_table(a->dk, t);
    return VW_LAUNCH(err, gdn_prep_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), TILE_THREADS,
                     t[0].bytes, s, *a);
}

vw_status vw_cu_gdn_run(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    vw_status st = vw_cu_gdn_prep(a, s, err);
    const bool tc = vw_cu_gdn_tc_takes(a);
    vw_gdn::kernel_smem t[3]; // opted in by vw_cu_gdn_supported
    smem_table(a->dk, t);
    for (int i = 0; i < 2 && st == VW_OK; i++) { // empty sequences still pass init to final
        const vw_cu_gdn_pass &p = a->pass[i];
        if (!p.n_segs)
            continue;
        if (tc) {
            st = vw_cu_gdn_tc_state(a, i, s, err);
            continue;
        }
        dim3 grid((unsigned)p.n_segs, vw_blocks_for(a->dv, VS), (unsigned)a->Hv);
        st = VW_LAUNCH(err, gdn_state_k, grid, STATE_THREADS, t[1].bytes, s, *a, p);
    }
    if (st != VW_OK || !a->n_chunks)
        return st;
    if (tc)
        return vw_cu_gdn_tc_out(a, s, err);
    return VW_LAUNCH(err, gdn_out_k, dim3((unsigned)a->n_chunks, (unsigned)a->Hv), TILE_THREADS,
                     t[2].bytes, s, *a);
}
