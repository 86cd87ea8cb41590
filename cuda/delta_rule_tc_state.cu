// delta_rule_tc_state.cu — the delta rule's state pass on tensor cores (the
// bf16 and bf16x2 precisions; docs/cuda-mixers.md "The delta rule"), after
// flash-linear-attention's chunk_delta_h: the only loop over a sequence's
// chunks, and it does nothing else than (CPU: vw_gdn_chunk_state in
// core/model/delta_rule.c)
//
//   V_new = U' - W' S                   (written over U', as planes rows)
//   S     = e^{c_last} S + (K e^{c_last - c})^T V_new
//
// storing the state entering each next chunk (planes, for gdn_out_tc_k) and
// the final state. One block per (value slice of BV = 16 MT columns,
// sequence, v-head), MT = 1 or 2, 4 warps. The state slice lives in FP32 registers as Sᵀ
// (value rows x key columns, C fragments): warp w holds key columns
// w dk/4 .. (w+1) dk/4 - 1 for all BV values. Per chunk:
//   P1  warp w: V_newᵀ of chunk rows 16w .. 16w+15 = Sᵀ W'ᵀ over all dk
//       (A: Sᵀ planes in shared memory, written once per chunk by P3; B: its
//       own 16 W' rows), then V_new = U' - that (U' read into registers one
//       chunk ahead), scaled by e^{c_last - c_i} into the block's V_new
//       planes tile, and unscaled to the scratch as planes rows;
//   P3  warp w: its Sᵀ columns += V_newᵀ (A, all 64 rows) K (B: its own key
//       columns of the chunk's 64 k̂ rows), then Sᵀ as planes into shared
//       memory (the next P1) and the scratch (the next chunk's entering state).
// Every tile a warp reads from the scratch is its own (W' rows, c, k̂
// columns), staged by cp.async into its private buffers and refilled with
// the next chunk's as soon as read — W', c after P1/P2 (landing during P3),
// k̂ after P3 (landing during the next P1/P2) — so loads overlap the other
// phase's MMAs; two block barriers per chunk (V_new tile, Sᵀ planes). Products
// are BF16x3 (planes.cuh) in chains of 32 summed dims, each chain's result
// added in FP32. An element's operations are the same for every MT, so the
// slice width never changes a number (test_cuda_delta tc_wide_slices).
#include "delta_rule_tc.cuh"

namespace {

using namespace vw_gdn_tc;
using vw_gdn::min_i;
using vw_gdn::ws_split;
using vw_gdn::ws_view;

constexpr int WARPS = 4, THREADS = 32 * WARPS;
constexpr int LV = pl_ld(CH); // V_new tile rows (one per value column)
static_assert(CH == 16 * WARPS, "P1: a warp per 16 chunk rows");

// Shared memory, byte offsets: Sᵀ planes [BV][dk], V_new planes [BV][CH],
// then per warp W' rows [16][dk] planes, k̂ columns [CH][dk/4] planes, c [CH].
// At dk = 128: 83,456 bytes (MT 1), 96,256 (MT 2): within sm_89's opt-in.
struct state_layout {
    int ldk, lkb;
    size_t vs, warp0, warp_bytes, kb, total;
};

__host__ __device__ inline state_layout state_lay(int dk, int bv) {
    state_layout L;
    L.ldk = pl_ld(dk), L.lkb = pl_ld(dk / 4);
    L.vs = (size_t)bv * L.ldk;
    L.warp0 = L.vs + (size_t)bv * LV;
    L.kb = 16 * (size_t)L.ldk;
    L.warp_bytes = L.kb + CH * (size_t)L.lkb;
    L.total = L.warp0 + WARPS * L.warp_bytes;
    return L;
}

// Sᵀ (this lane's C fragments) split into planes words once per chunk:
// [m][nt][hf] holds values 16m + g + 8hf, key columns 8nt + 2t, + 1.
template <int MT> struct st_words { uint32_t hi[MT][4][2], lo[MT][4][2]; };

template <int MT>
__device__ __forceinline__ void split_st(st_words<MT> &o, const float (&S)[MT][4][4]) {
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
                vw_pl_split2(S[m][nt][2 * hf], S[m][nt][2 * hf + 1], o.hi[m][nt][hf],
                             o.lo[m][nt][hf]);
}

// ... stored at (v, dw + d) of a planes tile with row stride ld bytes.
template <int MT>
__device__ __forceinline__ void put_st(char *T, int ld, const st_words<MT> &o, int nd, int dw) {
    const int lane = lane_id(), g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                if (nt >= nd)
                    continue;
                const int v = 16 * m + g + 8 * hf, d = dw + 8 * nt + 2 * t;
                *(uint32_t *)vw_pl_at(T, ld, v, d, 0) = o.hi[m][nt][hf];
                *(uint32_t *)vw_pl_at(T, ld, v, d, 1) = o.lo[m][nt][hf];
            }
}

template <int MT>
__global__ void __launch_bounds__(THREADS) gdn_state_tc_k(vw_cu_gdn a, vw_cu_gdn_pass p, int pass) {
    constexpr int BV = 16 * MT;
    VW_DYN_SMEM(float4, sm4);
    char *sm = (char *)sm4;
    const int dk = (int)a.dk, dv = (int)a.dv, nd = dk / 32; // P3's n-tiles per warp
    const int lane = lane_id(), w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const size_t h = blockIdx.z, kh = h / (a.Hv / a.Hk), rows = a.rows;
    const int j0 = blockIdx.x * BV, dw = w * (dk / 4);
    const vw_cuda_seg sg = p.segs[blockIdx.y];
    const state_layout L = state_lay(dk, BV);
    char *Sp = sm, *Vs = sm + L.vs, *mine = sm + L.warp0 + w * L.warp_bytes;
    char *Wb = mine, *Kb = mine + L.kb;
    const ws_view ws = ws_split(a.ws, rows, a.Hv, dk, dv);
    const float *S0 =
        (p.init && sg.state >= 0) ? p.init + ((size_t)sg.state * a.Hv + h) * dk * dv : nullptr;
    const float *wsrc = ws.w + h * rows * dk, *ksrc = ws.kp + kh * rows * dk + dw;
    const float *csrc = ws.c + h * rows;
    float *usrc = ws.u + h * rows * dv + j0;

    // The next chunk's tiles of this warp (commits even when there is none,
    // so every wait below counts the same groups), and its U' and c values.
    auto issue_w = [&](int t0) {
        if (t0 < sg.len) {
            const int n = min_i(CH, sg.len - t0), r = sg.start + t0 + 16 * w;
            cp_rows(Wb, L.ldk, wsrc + (size_t)r * dk, dk * 4, 16, n - 16 * w, dk * 4, lane, 32);
        }
        vw_cp_async_commit();
    };
    auto issue_k = [&](int t0) {
        if (t0 < sg.len) {
            const int n = min_i(CH, sg.len - t0);
            cp_rows(Kb, L.lkb, ksrc + (size_t)(sg.start + t0) * dk, dk * 4, CH, n, dk, lane, 32);
        }
        vw_cp_async_commit();
    };
    float un[MT][2][4]; // U' in the C layout: value 16m + g (+8), row 16w + 8j + 2t (+1)
    float cr[2][2], cl; // c at those rows (0 past n); c of the chunk's last row
    auto load_uc = [&](int t0) {
        const int n = t0 < sg.len ? min_i(CH, sg.len - t0) : 0;
        const float *u = usrc + (size_t)(sg.start + t0) * dv, *c = csrc + sg.start + t0;
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int r = 16 * w + 8 * j + 2 * t + (i & 1);
                    un[m][j][i] = r < n ? u[(size_t)r * dv + 16 * m + g + 8 * (i >> 1)] : 0.0f;
                }
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int r = 16 * w + 8 * j + 2 * t + e;
                cr[j][e] = r < n ? c[r] : 0.0f;
            }
        cl = n ? c[n - 1] : 0.0f;
    };
    // P1's chain over key columns c0 .. c0 + 31: x += Sᵀ W'ᵀ
    auto p1_chain = [&](int c0, float(&x)[MT][2][4]) {
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            const int k = c0 + 16 * kk;
            vw_pl_b2x2 b;
            vw_pl_load_bt(b, Wb, L.ldk, 0, k, lane);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                vw_pl_a4 f;
                vw_pl_load_a(f, Sp, L.ldk, 16 * m, k, lane);
                vw_pl_mma(x[m][0], f, b, 0);
                vw_pl_mma(x[m][1], f, b, 1);
            }
        }
    };
    // P3's chain over chunk rows 32 ci .. 32 ci + 31: x += V_newᵀ K
    auto p3_chain = [&](int ci, int n, float(&x)[MT][4][4]) {
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            const int k = KC * ci + 16 * kk;
            if (k >= n)
                break;
            vw_pl_a4 f[MT];
#pragma unroll
            for (int m = 0; m < MT; m++)
                vw_pl_load_a(f[m], Vs, LV, 16 * m, k, lane);
#pragma unroll
            for (int np = 0; np < 2; np++) {
                if (2 * np >= nd)
                    break;
                vw_pl_b2x2 b;
                const bool two = 2 * np + 1 < nd;
                if (two)
                    vw_pl_load_bk(b, Kb, L.lkb, k, 16 * np, lane);
                else
                    vw_pl_load_bk1(b, Kb, L.lkb, k, 16 * np, lane);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    vw_pl_mma(x[m][2 * np], f[m], b, 0);
                    if (two)
                        vw_pl_mma(x[m][2 * np + 1], f[m], b, 1);
                }
            }
        }
    };

    float S[MT][4][4]; // Sᵀ: value 16m + g (+8), key column dw + 8nt + 2t (+1)
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int v = 16 * m + g + 8 * (i >> 1), d = dw + 8 * nt + 2 * t + (i & 1);
                S[m][nt][i] = (S0 && nt < nd) ? S0[(size_t)d * dv + j0 + v] : 0.0f;
            }
    {
        st_words<MT> o;
        split_st(o, S);
        put_st<MT>(Sp, L.ldk, o, nd, dw);
    }
    issue_w(0);
    issue_k(0);
    load_uc(0);
    __syncthreads(); // Sᵀ planes; every block reaches a barrier, even for an empty sequence
    for (int t0 = 0; t0 < sg.len; t0 += CH) {
        const int n = min_i(CH, sg.len - t0);
        const size_t r0 = (size_t)sg.start + t0;
        if (blockIdx.x == 0 && h == 0 && threadIdx.x == 0)
            ws.tab[r0] = t0 ? ENTER_SLOT : S0 ? (sg.state << 1 | pass) : ENTER_ZERO;
        vw_cp_async_wait<1>(); // W' of this chunk (k̂ may still be in flight)
        __syncwarp();
        // P1: acc = Sᵀ W'ᵀ for rows 16w .. (CPU: sgemm W S), chains of 32 key
        // columns, the first in acc itself
        float acc[MT][2][4] = {};
        if (16 * w < n) {
            p1_chain(0, acc);
            for (int c0 = KC; c0 < dk; c0 += KC) {
                float d[MT][2][4] = {};
                p1_chain(c0, d);
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int j = 0; j < 2; j++)
#pragma unroll
                        for (int i = 0; i < 4; i++)
                            acc[m][j][i] += d[m][j][i];
            }
        }
        __syncwarp(); // W' is read: refill
        issue_w(t0 + CH);
        // P2: V_new = U' - acc, to the scratch as planes rows, and times
        // e^{c_last - c_i} (<= 1: a difference, never e^c e^-c) into the tile
        const float el = expf(cl);
        float kd[2][2];
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int r = 16 * w + 8 * j + 2 * t + e;
                kd[j][e] = r < n ? expf(cl - cr[j][e]) : 0.0f;
            }
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    float x[2];
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        x[e] = un[m][j][2 * hf + e] - acc[m][j][2 * hf + e];
                    // rows 2t, 2t + 1 of value v here; lane g ^ 1 holds value
                    // v ^ 1: even g writes row 2t, odd g row 2t + 1, each as
                    // the value pair (v & ~1, v | 1), one 32-bit word per plane
                    const float y0 = __shfl_xor_sync(0xffffffffu, x[0], 4);
                    const float y1 = __shfl_xor_sync(0xffffffffu, x[1], 4);
                    const int odd = g & 1, v = 16 * m + g + 8 * hf;
                    const int r = 16 * w + 8 * j + 2 * t + odd;
                    uint32_t hi, lo;
                    if (r < n) {
                        vw_pl_split2(odd ? y1 : x[0], odd ? x[1] : y0, hi, lo);
                        char *row = (char *)(usrc + (r0 + r) * dv);
                        *(uint32_t *)vw_pl_at(row, 0, 0, v & ~1, 0) = hi;
                        *(uint32_t *)vw_pl_at(row, 0, 0, v & ~1, 1) = lo;
                    }
                    vw_pl_split2(x[0] * kd[j][0], x[1] * kd[j][1], hi, lo);
                    const int c = 16 * w + 8 * j + 2 * t;
                    *(uint32_t *)vw_pl_at(Vs, LV, v, c, 0) = hi;
                    *(uint32_t *)vw_pl_at(Vs, LV, v, c, 1) = lo;
                }
        load_uc(t0 + CH);      // the next chunk's U' and c, in flight during P3
        __syncthreads();       // the V_new tile is whole, and no warp reads Sᵀ planes any more
        vw_cp_async_wait<1>(); // k̂ of this chunk
        __syncwarp();
        // P3: Sᵀ = e^{c_last} Sᵀ + V_newᵀ K over chunk rows (CPU: S *= el;
        // sgemm), chains of 32 rows, the first in up itself
        float up[MT][4][4] = {};
        p3_chain(0, n, up);
        if (n > KC) {
            float d[MT][4][4] = {};
            p3_chain(1, n, d);
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        up[m][nt][i] += d[m][nt][i];
        }
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    S[m][nt][i] = fmaf(el, S[m][nt][i], up[m][nt][i]);
        __syncwarp(); // k̂ is read: refill
        issue_k(t0 + CH);
        st_words<MT> o;
        split_st(o, S);
        put_st<MT>(Sp, L.ldk, o, nd, dw);
        if (t0 + CH < sg.len) { // the state entering the next chunk (slot of its row r0 + 64)
            const size_t slot = (r0 + CH - 1) / CH;
            put_st<MT>((char *)(ws.st + ((slot * a.Hv + h) * dv + j0) * dk), dk * 4, o, nd, dw);
        }
        __syncthreads(); // Sᵀ planes whole; the V_new tile no longer read
    }
    vw_cp_async_wait<-1>(); // the last groups are empty
    if (p.final && sg.state >= 0) {
        float *Sf = p.final + ((size_t)sg.state * a.Hv + h) * dk * dv;
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int nt = 0; nt < 4; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int v = 16 * m + g + 8 * (i >> 1), d = dw + 8 * nt + 2 * t + (i & 1);
                    if (nt < nd)
                        Sf[(size_t)d * dv + j0 + v] = S[m][nt][i];
                }
    }
}

size_t state_bytes(size_t dk, int mt) {
    return state_lay((int)dk, 16 * mt).total;
}

// The slice width: 32 columns where that still makes >= 32 blocks (batch 1
// at 0.8B: 64), else 16. Every block reads the chunk's W' rows and k̂ columns
// whatever its width, so wider slices cut the L2 reads of a pass (the state
// pass's bound at batch 1, docs/cuda.md) at the price of fewer blocks.
int pick_mt(const vw_cu_gdn *a, const vw_cu_gdn_pass *p) {
    return p->n_segs * a->Hv * (a->dv / 32) >= 32 ? 2 : 1;
}

} // namespace

size_t vw_cu_gdn_tc_state_smem_table(size_t dk, vw_cu_kernel_smem *t) {
    t[0] = {(const void *)gdn_state_tc_k<1>, state_bytes(dk, 1), "gdn_state_tc_k<1>"};
    t[1] = {(const void *)gdn_state_tc_k<2>, state_bytes(dk, 2), "gdn_state_tc_k<2>"};
    return 2;
}

vw_status vw_cu_gdn_tc_state(const vw_cu_gdn *a, int pass, cudaStream_t s, vw_err *err) {
    const vw_cu_gdn_pass *p = &a->pass[pass];
    const int mt = pick_mt(a, p);
    const size_t bytes = state_bytes(a->dk, mt); // opted in at creation
    vw_status st = VW_OK;
    // grid y <= 65,535: a pass of more sequences runs as several launches (they
    // are independent), so no batch falls back to other kernels
    constexpr size_t max_y = 65535;
    for (size_t s0 = 0; s0 < p->n_segs && st == VW_OK; s0 += max_y) {
        vw_cu_gdn_pass part = *p;
        part.segs = p->segs + s0;
        part.n_segs = p->n_segs - s0 < max_y ? p->n_segs - s0 : max_y;
        const dim3 grid((unsigned)(a->dv / (16 * mt)), (unsigned)part.n_segs, (unsigned)a->Hv);
        st = mt == 2 ? VW_LAUNCH(err, gdn_state_tc_k<2>, grid, THREADS, bytes, s, *a, part, pass)
                     : VW_LAUNCH(err, gdn_state_tc_k<1>, grid, THREADS, bytes, s, *a, part, pass);
    }
    return st;
}
