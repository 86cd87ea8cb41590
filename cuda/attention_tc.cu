// attention_tc.cu — gated tree attention on tensor cores, FlashAttention-2
// style: the path of the bf16 and bf16x2 precisions (docs/cuda.md "Attention
// on tensor cores"); attention.cu's FP32 SIMT kernel is the fp32 precision
// and the fallback for other shapes. CPU reference: attn_head and attn_layer
// in core/model/backbone_layers.c (docs/spec/backbone.md §3.4 steps 5-6).
//
// Work. A work item is 16 query rows of one sequence (vw_cu_attn_items,
// longest first) times the query heads of one KV head, up to 4 per block, one
// warp each: every K/V tile in shared memory serves all of them. Keys come in
// two ranges, each tiled in 64s from its own start, so a row's tiles (and its
// numbers) depend only on its own sequence: the parent prefix's rows, then the
// sequence's own rows up to the item's last row. Tiles past that row are never
// visited; only tiles that cross the item's first row (the diagonal) or a
// range's end are masked. A long item may run as up to 3 parts (split-KV:
// contiguous runs of its tiles, by a rule of the item alone), each leaving its
// unnormalised output, running max and sum; attn_combine_k merges them by
// log-sum-exp in a fixed order.
//
// Operands. Q, K and V arrive split once, by their producer (attn_prep_k, or
// vw_cu_attn_planes here), as the planes the MMAs read: Q and K as FP16 hi/lo
// (FP16x3: FP32 grade, |q|, |k| < 2^15 which the RMS norm bounds), V as BF16
// hi/lo (BF16x3, ~2^-17: V is unbounded). Nothing converts inside the key
// loop but P, once per tile in registers.
//
// Per block: Q of its heads (FP16 hi/lo, 16 rows each) sits in shared memory
// for the whole item, loaded once by cp.async; K and V stream through two
// stages of 64 keys x 64 dims (hi and lo planes), each loaded by cp.async
// while the previous one is consumed, fed to mma.sync m16n8k16 by ldmatrix
// (rows XOR-swizzled in 16-byte chunks: conflict-free). Per warp and tile:
// S = Q Kᵀ (16 x 64) over 4 panels, each panel's products (12 MMAs) in a fresh
// accumulator added to S in FP32 (the tensor cores' accumulation truncates:
// chains stay short); online softmax in FP32 with exp2, the scale and log2(e)
// folded into one FFMA (m kept in that scaled unit); P split in registers into
// BF16 hi/lo A fragments (C and A layouts coincide for m16n8k16); then O =
// alpha O + P V over 4 V panels, each 8-dim slice's 12 MMAs in a fresh
// accumulator folded in by one FFMA. The epilogue divides by l and multiplies
// by sigmoid(gate), or, for a part of a split item, stores O, m and l.
//
// Shared memory: heads * 16 * hd * 4 bytes of Q planes + 2 stages of 64 x
// min(hd, 64) x 4 bytes: 98,304 bytes at hd 256 with 4 heads, within sm_89's
// 101,376-byte opt-in.
#include <math.h>

#include "kernels.cuh"
#include "ldst.cuh"
#include "mma.cuh"

namespace {

constexpr int TQ = VW_ATT_BR, BK = VW_ATT_BK, MAXW = 4, THREADS = 32 * MAXW;
constexpr int NP = VW_ATT_MAX_PARTS;
static_assert(TQ == 16 && BK == 64, "one m16 tile of query rows per warp, 64-key tiles");

// Split-KV rule of the executor (vw_cu_attn_split_tiles): parts of at most
// SPLIT_TILES tiles in calls of at most SPLIT_MAX_ROWS rows.
constexpr int SPLIT_TILES = 10;
constexpr size_t SPLIT_MAX_ROWS = 8192;

// The shapes of one head width: dims per K/V panel, panels per tile, Q Kᵀ
// k-steps and P V n-tiles per panel, 16-byte chunks per Q row and panel row,
// bytes of one head's Q plane and of one panel plane.
template <int HD> struct tc_cfg {
    static constexpr int PD = HD < 64 ? HD : 64;
    static constexpr int NPAN = HD / PD;
    static constexpr int KS = PD / 16;
    static constexpr int NTV = PD / 8;
    static constexpr int QC = HD / 8;
    static constexpr int PC = PD / 8;
    static constexpr int QPLANE = TQ * HD * 2;
    static constexpr int PPLANE = BK * PD * 2;
    static constexpr int STAGE = 2 * PPLANE;
    static_assert(QC == 4 || QC % 8 == 0, "swizzle");
    static_assert(PC == 4 || PC == 8, "swizzle");
};

size_t tc_smem_bytes(size_t hd, size_t heads) {
    const size_t pd = hd < 64 ? hd : 64;
    return heads * 2 * TQ * hd * 2 + 2 * 2 * BK * pd * 2;
}

// Blocks per (item, KV head): ceil(G / 4); heads per block: ceil(G / groups).
void tc_split(size_t G, size_t *groups, size_t *heads) {
    *groups = (G + MAXW - 1) / MAXW;
    *heads = (G + *groups - 1) / *groups;
}

// Byte offset of 16-byte chunk c of row r in a tile of C chunks per row, XOR
// swizzled so that ldmatrix's 8 rows at one chunk hit 8 different bank
// groups: rows of >= 128 bytes permute the chunks of each 128-byte line by
// row % 8; rows of 64 bytes (two per line) by (row / 2) % 4.
template <int C> __device__ __forceinline__ int swz(int r, int c) {
    const int p = C >= 8 ? (c & ~7) | ((c ^ r) & 7) : (c ^ (r >> 1)) & 3;
    return (r * C + p) * 16;
}

// Where a tile of an item lies: its range (own rows or the parent's), first
// key within the range, the range's keys anyone of the item sees, the range's
// first packed row.
struct tile_at {
    bool own;
    int kt, len, base;
};
__device__ __forceinline__ tile_at tile_of(const vw_cuda_seg &sg, int npt, int own_len, int t) {
    const bool own = t >= npt;
    return {own, (own ? t - npt : t) * BK, own ? own_len : sg.parent_len,
            own ? sg.start : sg.parent_start};
}

// cp.async of panel pi (dims pi*PD ..) of tile ta's K (V = false) or V planes
// into stage st: 64 keys x PD dims, hi and lo; keys past the range's end are
// zero-filled (their scores are masked, their P is 0).
template <int HD>
__device__ __forceinline__ void load_panel(const vw_cu_attn &a, size_t g, const tile_at &ta, bool V,
                                           int pi, unsigned char *st) {
    using C = tc_cfg<HD>;
    const uint16_t *planes =
        V ? reinterpret_cast<const uint16_t *>(a.Vb) : reinterpret_cast<const uint16_t *>(a.Kh);
#pragma unroll
    for (int i = 0; i < 2 * BK * C::PC / THREADS; i++) {
        const int idx = threadIdx.x + i * THREADS, c = idx % C::PC, j = idx / C::PC % BK,
                  pl = idx / (C::PC * BK);
        const bool ok = ta.kt + j < ta.len;
        const size_t row = (size_t)ta.base + ta.kt + (ok ? j : 0);
        const uint16_t *src = planes + ((row * a.Hk + g) * 2 + pl) * HD + pi * C::PD + c * 8;
        vw_cp_async_cg(st + pl * C::PPLANE + swz<C::PC>(j, c), src, ok ? 16 : 0);
    }
}

// S (16 x 64, C fragments: s[nt][i] = row g + 8(i >> 1), key 8 nt + 2t +
// (i & 1)) plus this panel's part of Q Kᵀ: FP16x3, the small products first,
// 12 MMAs per 8 keys in a fresh accumulator, added to S in FP32.
template <int HD, int PI>
__device__ __forceinline__ void s_panel(float s[8][4], const unsigned char *Qw,
                                        const unsigned char *st) {
    using C = tc_cfg<HD>;
    const int lane = threadIdx.x & 31;
    uint32_t qa[C::KS][2][4];
#pragma unroll
    for (int ks = 0; ks < C::KS; ks++)
#pragma unroll
        for (int pl = 0; pl < 2; pl++)
            vw_ldsm<4>(qa[ks][pl], Qw + pl * C::QPLANE +
                                       swz<C::QC>(lane & 15, PI * C::PC + 2 * ks + (lane >> 4)));
    const unsigned char *kp = st + (lane >> 4) * C::PPLANE; // lanes 0-15 hi, 16-31 lo
#pragma unroll
    for (int nt = 0; nt < 8; nt++) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int ks = 0; ks < C::KS; ks++) {
            uint32_t kb[4]; // B = Kᵀ: hi b[0..1], lo b[2..3]
            vw_ldsm<4>(kb, kp + swz<C::PC>(8 * nt + (lane & 7), 2 * ks + ((lane >> 3) & 1)));
            vw_mma<VW_MMA_F16>(acc, qa[ks][1], kb);
            vw_mma<VW_MMA_F16>(acc, qa[ks][0], kb + 2);
            vw_mma<VW_MMA_F16>(acc, qa[ks][0], kb);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
            s[nt][i] = PI == 0 ? acc[i] : s[nt][i] + acc[i];
    }
}

// O (16 x HD, C fragments o[nt][i]) for this panel's dims: o = fma(o, alpha,
// P V) with P V over the tile's 64 keys, BF16x3, 12 MMAs per 8 dims in a fresh
// accumulator. ph/pl: P's A fragments per 16 keys.
template <int HD, int PI>
__device__ __forceinline__ void pv_panel(float o[HD / 8][4], const uint32_t ph[4][4],
                                         const uint32_t pl[4][4], const float alpha[2],
                                         const unsigned char *st) {
    using C = tc_cfg<HD>;
    const int lane = threadIdx.x & 31;
    const unsigned char *vp = st + (lane >> 4) * C::PPLANE; // lanes 0-15 hi, 16-31 lo
#pragma unroll
    for (int nt = 0; nt < C::NTV; nt++) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t vb[4]; // B = V (keys x dims, k-major): hi b[0..1], lo b[2..3]
            vw_ldsm<4, true>(vb, vp + swz<C::PC>(16 * kk + (lane & 15), nt));
            vw_mma<VW_MMA_BF16>(acc, pl[kk], vb);
            vw_mma<VW_MMA_BF16>(acc, ph[kk], vb + 2);
            vw_mma<VW_MMA_BF16>(acc, ph[kk], vb);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
            o[PI * C::NTV + nt][i] = fmaf(o[PI * C::NTV + nt][i], alpha[i >> 1], acc[i]);
    }
}

// The running softmax of this lane's two rows (g and g + 8 of the warp's 16).
// m: the row max in units of c = hd^-1/2 log2(e) (raw score max times c), l:
// this lane's part of the row sum relative to m.
struct soft_state {
    float m[2], l[2];
};

// Mask (edge tiles only), online softmax update, P into BF16 hi/lo A
// fragments (k-step kk = keys 16 kk ..: n-tiles 2 kk and 2 kk + 1 of S), alpha.
__device__ __forceinline__ void softmax_tile(float s[8][4], soft_state &ss, const tile_at &ta,
                                             bool edge, int i0, float c, float alpha[2],
                                             uint32_t ph[4][4], uint32_t pl[4][4]) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int qrow = i0 + g + 8 * h; // the query row's index in its sequence
        float mt = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float v = s[nt][2 * h + j];
                if (edge) {
                    const int key = ta.kt + 8 * nt + 2 * t + j;
                    if (key >= ta.len || (ta.own && key > qrow))
                        v = -INFINITY;
                    s[nt][2 * h + j] = v;
                }
                mt = fmaxf(mt, v);
            }
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        const float mn = fmaxf(ss.m[h], mt * c);
        const float mref = mn == -INFINITY ? 0.0f : mn; // no key seen yet: P = 0
        alpha[h] = exp2f(ss.m[h] - mref); // 1 when the tile has no visible key for the row
        float psum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float p = exp2f(fmaf(s[nt][2 * h + j], c, -mref)); // 0 for a masked key
                s[nt][2 * h + j] = p;
                psum += p;
            }
        ss.l[h] = fmaf(ss.l[h], alpha[h], psum);
        ss.m[h] = mn;
    }
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        vw_split2_bf16(s[2 * kk][0], s[2 * kk][1], ph[kk][0], pl[kk][0]);         // row g, k 2t
        vw_split2_bf16(s[2 * kk][2], s[2 * kk][3], ph[kk][1], pl[kk][1]);         // row g + 8
        vw_split2_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1], ph[kk][2], pl[kk][2]); // k 2t + 8
        vw_split2_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3], ph[kk][3], pl[kk][3]);
    }
}

template <int HD, int PI>
__device__ __forceinline__ void k_panels(float s[8][4], const vw_cu_attn &a, size_t g,
                                         const tile_at &ta, bool active, const unsigned char *Qw,
                                         unsigned char *stg) {
    using C = tc_cfg<HD>;
    if constexpr (PI < C::NPAN) {
        vw_cp_async_wait<0>(); // this thread's copies of panel PI (and of Q) landed
        __syncthreads();       // everyone's; and everyone is done with the other stage
        load_panel<HD>(a, g, ta, PI + 1 == C::NPAN, (PI + 1) % C::NPAN,
                       stg + ((PI + 1) & 1) * C::STAGE);
        vw_cp_async_commit();
        if (active)
            s_panel<HD, PI>(s, Qw, stg + (PI & 1) * C::STAGE);
        k_panels<HD, PI + 1>(s, a, g, ta, active, Qw, stg);
    }
}

template <int HD, int PI>
__device__ __forceinline__ void
v_panels(float o[HD / 8][4], const uint32_t ph[4][4], const uint32_t pl[4][4], const float alpha[2],
         const vw_cu_attn &a, size_t g, const tile_at &ta, const tile_at &next, bool has_next,
         bool active, unsigned char *stg) {
    using C = tc_cfg<HD>;
    if constexpr (PI < C::NPAN) {
        constexpr int S = (C::NPAN + PI) & 1; // stage of this panel (a tile has 2 NPAN panels)
        vw_cp_async_wait<0>();
        __syncthreads();
        if (PI + 1 < C::NPAN)
            load_panel<HD>(a, g, ta, true, PI + 1, stg + (S ^ 1) * C::STAGE);
        else if (has_next)
            load_panel<HD>(a, g, next, false, 0, stg + (S ^ 1) * C::STAGE);
        vw_cp_async_commit();
        if (active)
            pv_panel<HD, PI>(o, ph, pl, alpha, stg + S * C::STAGE);
        v_panels<HD, PI + 1>(o, ph, pl, alpha, a, g, ta, next, has_next, active, stg);
    }
}

template <int HD>
__global__ void __launch_bounds__(THREADS)
    attention_tc_k(vw_cu_attn a, int groups, int heads, float c) {
    using C = tc_cfg<HD>;
    VW_DYN_SMEM(uint4, smv);
    unsigned char *sm = reinterpret_cast<unsigned char *>(smv);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid & 31;
    const size_t G = a.Hq / a.Hk, per_item = a.Hk * (size_t)groups;
    const size_t e = blockIdx.x / per_item, sub = blockIdx.x % per_item;
    const size_t g = sub / groups, h0 = (sub % groups) * (size_t)heads; // KV head, first head
    const int32_t *it = a.items + VW_ATT_ENTRY * e;
    const vw_cuda_seg sg = a.segs[it[0]];
    const int i0 = it[1], part = it[2], parts = it[3];
    const int nrows = sg.len - i0 < TQ ? sg.len - i0 : TQ, own_len = i0 + nrows;
    const int npt = (sg.parent_len + BK - 1) / BK, T = npt + (own_len + BK - 1) / BK;
    const int per = T / parts, ex = T % parts;
    const int t0 = part * per + (part < ex ? part : ex), t1 = t0 + per + (part < ex);
    const int nh = (int)(G - h0 < (size_t)heads ? G - h0 : (size_t)heads); // heads of this block
    unsigned char *Qs = sm, *stg = sm + heads * 2 * C::QPLANE;

    // Q planes of the block's heads, once for the item (rows past the end: zeros).
    for (int idx = tid; idx < nh * 2 * TQ * C::QC; idx += THREADS) {
        const int ch = idx % C::QC, r = idx / C::QC % TQ, pl = idx / (C::QC * TQ) % 2,
                  w = idx / (C::QC * TQ * 2);
        const size_t row = (size_t)sg.start + i0 + (r < nrows ? r : 0);
        const __half *src = a.Qh + ((row * a.Hq + g * G + h0 + w) * 2 + pl) * HD + ch * 8;
        vw_cp_async_cg(Qs + (w * 2 + pl) * C::QPLANE + swz<C::QC>(r, ch), src, r < nrows ? 16 : 0);
    }
    vw_cp_async_commit();
    if (t0 < t1)
        load_panel<HD>(a, g, tile_of(sg, npt, own_len, t0), false, 0, stg);
    vw_cp_async_commit();

    const bool active = warp < nh; // warp-uniform
    const unsigned char *Qw = Qs + warp * 2 * C::QPLANE;
    float o[HD / 8][4];
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            o[nt][i] = 0.0f;
    soft_state ss = {{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
#pragma unroll 1
    for (int t = t0; t < t1; t++) {
        const tile_at ta = tile_of(sg, npt, own_len, t);
        const bool edge = ta.kt + BK > ta.len || (ta.own && ta.kt + BK - 1 > i0);
        float s[8][4];
        k_panels<HD, 0>(s, a, g, ta, active, Qw, stg);
        float alpha[2];
        uint32_t ph[4][4], pl[4][4];
        if (active)
            softmax_tile(s, ss, ta, edge, i0, c, alpha, ph, pl);
        const bool has_next = t + 1 < t1;
        const tile_at next = tile_of(sg, npt, own_len, has_next ? t + 1 : t);
        v_panels<HD, 0>(o, ph, pl, alpha, a, g, ta, next, has_next, active, stg);
    }
    vw_cp_async_wait<-1>(); // nothing is left in flight (the last commits are empty)
    if (!active)
        return;

    const int gr = lane >> 2, tq = lane & 3;
    const size_t hq = g * G + h0 + warp;
    float *ml = a.ws + (NP - 1) * a.rows * a.Hq * HD; // [part][row][Hq][m, l]
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float l = ss.l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int r = gr + 8 * h;
        if (r >= nrows)
            continue;
        const size_t row = (size_t)sg.start + i0 + r;
        if (parts == 1) {
            const float inv = 1.0f / l;
#pragma unroll
            for (int nt = 0; nt < HD / 8; nt++) {
                const size_t d = (size_t)nt * 8 + 2 * tq;
                float2 v = make_float2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
                if (a.G) {
                    const float *gp = a.G + row * a.ldg + hq * a.gstride + d;
                    v.x *= vw_d_sigmoid(gp[0]), v.y *= vw_d_sigmoid(gp[1]);
                }
                *reinterpret_cast<float2 *>(a.O + row * a.ldo + hq * HD + d) = v;
            }
        } else { // a part: O unnormalised (part 0 in O itself), m and l
            float *dst = part == 0 ? a.O + row * a.ldo + hq * HD
                                   : a.ws + ((part - 1) * a.rows + row) * a.Hq * HD + hq * HD;
#pragma unroll
            for (int nt = 0; nt < HD / 8; nt++)
                *reinterpret_cast<float2 *>(dst + nt * 8 + 2 * tq) =
                    make_float2(o[nt][2 * h], o[nt][2 * h + 1]);
            if (tq == 0) {
                float *p = ml + ((part * a.rows + row) * a.Hq + hq) * 2;
                p[0] = ss.m[h], p[1] = l;
            }
        }
    }
}

// The parts of one split item, one query head per block: with M = max m_p and
// w_p = 2^(m_p - M), O = sum_p w_p O_p / sum_p w_p l_p * sigmoid(gate), parts in
// order (part 0's O_p is in O itself, overwritten here).
template <int HD> __global__ void __launch_bounds__(THREADS) attn_combine_k(vw_cu_attn a) {
    const size_t e = blockIdx.x / a.Hq, hq = blockIdx.x % a.Hq;
    const int32_t *it = a.items + VW_ATT_ENTRY * (a.n_items + e);
    const vw_cuda_seg sg = a.segs[it[0]];
    const int i0 = it[1], parts = it[3];
    const int nrows = sg.len - i0 < TQ ? sg.len - i0 : TQ;
    const float *ml = a.ws + (NP - 1) * a.rows * a.Hq * HD;
    for (int idx = threadIdx.x; idx < nrows * HD / 4; idx += THREADS) {
        const int r = idx / (HD / 4), d = idx % (HD / 4) * 4;
        const size_t row = (size_t)sg.start + i0 + r;
        float m[NP], M = -INFINITY;
#pragma unroll
        for (int p = 0; p < NP; p++) {
            m[p] = p < parts ? ml[((p * a.rows + row) * a.Hq + hq) * 2] : -INFINITY;
            M = fmaxf(M, m[p]);
        }
        float L = 0.0f;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int p = 0; p < NP; p++) {
            if (p >= parts)
                break;
            const float w = exp2f(m[p] - M);
            L = fmaf(w, ml[((p * a.rows + row) * a.Hq + hq) * 2 + 1], L);
            const float *src = p == 0 ? a.O + row * a.ldo + hq * HD
                                      : a.ws + ((p - 1) * a.rows + row) * a.Hq * HD + hq * HD;
            const float4 v = *reinterpret_cast<const float4 *>(src + d);
            acc.x = fmaf(w, v.x, acc.x), acc.y = fmaf(w, v.y, acc.y);
            acc.z = fmaf(w, v.z, acc.z), acc.w = fmaf(w, v.w, acc.w);
        }
        const float inv = 1.0f / L;
        float4 v = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
        if (a.G) {
            const float *gp = a.G + row * a.ldg + hq * a.gstride + d;
            v.x *= vw_d_sigmoid(gp[0]), v.y *= vw_d_sigmoid(gp[1]);
            v.z *= vw_d_sigmoid(gp[2]), v.w *= vw_d_sigmoid(gp[3]);
        }
        *reinterpret_cast<float4 *>(a.O + row * a.ldo + hq * HD + d) = v;
    }
}

// The planes of Q, K (FP16 hi/lo) and V (BF16 hi/lo) from dense FP32: one
// thread per element of [rows, Hq + 2 Hk, hd].
__global__ void attn_planes_k(const float *Q, const float *K, const float *V, size_t rows,
                              size_t Hq, size_t Hk, size_t hd, __half *Qh, __half *Kh,
                              __nv_bfloat16 *Vb) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nh = Hq + 2 * Hk;
    if (i >= rows * nh * hd)
        return;
    const size_t d = i % hd, h = i / hd % nh, r = i / (hd * nh);
    if (h < Hq) {
        __half *p = Qh + (r * Hq + h) * 2 * hd + d;
        vw_split_f16(Q[(r * Hq + h) * hd + d], p[0], p[hd]);
    } else if (h < Hq + Hk) {
        __half *p = Kh + (r * Hk + h - Hq) * 2 * hd + d;
        vw_split_f16(K[(r * Hk + h - Hq) * hd + d], p[0], p[hd]);
    } else {
        __nv_bfloat16 *p = Vb + (r * Hk + h - Hq - Hk) * 2 * hd + d;
        vw_split_bf16(V[(r * Hk + h - Hq - Hk) * hd + d], p[0], p[hd]);
    }
}

// The kernel instances for head_dim hd, or nullptr; names as the SASS shows them.
using tc_kernel = void (*)(vw_cu_attn, int, int, float);
using comb_kernel = void (*)(vw_cu_attn);
tc_kernel tc_kernel_for(size_t hd, const char **name = nullptr) {
    const char *n = hd == 32    ? "attention_tc_k<32>"
                    : hd == 64  ? "attention_tc_k<64>"
                    : hd == 128 ? "attention_tc_k<128>"
                    : hd == 256 ? "attention_tc_k<256>"
                                : nullptr;
    if (name)
        *name = n;
    return hd == 32    ? attention_tc_k<32>
           : hd == 64  ? attention_tc_k<64>
           : hd == 128 ? attention_tc_k<128>
           : hd == 256 ? attention_tc_k<256>
                       : nullptr;
}
comb_kernel comb_kernel_for(size_t hd) {
    return hd == 32    ? attn_combine_k<32>
           : hd == 64  ? attn_combine_k<64>
           : hd == 128 ? attn_combine_k<128>
           : hd == 256 ? attn_combine_k<256>
                       : nullptr;
}

bool aligned16(const void *p) {
    return (uintptr_t)p % 16 == 0;
}

} // namespace

int vw_cu_attn_tc_takes(const vw_cu_attn *a) {
    return a->prec != VW_CUDA_FP32 && a->Hk && a->Hq % a->Hk == 0 && tc_kernel_for(a->hd) &&
           a->qk_max < 32768.0f && a->Qh && a->Kh && a->Vb && aligned16(a->Qh) &&
           aligned16(a->Kh) && aligned16(a->Vb) && a->ldo % 4 == 0 && aligned16(a->O);
}

vw_cu_kernel_smem vw_cu_attn_tc_smem(size_t hd, size_t group) {
    const char *name = nullptr;
    const tc_kernel k = tc_kernel_for(hd, &name);
    size_t groups = 1, heads = MAXW;
    if (group)
        tc_split(group, &groups, &heads);
    return {(const void *)k, k ? tc_smem_bytes(hd, heads) : 0, name};
}

int vw_cu_attn_split_tiles(size_t rows) {
    return rows <= SPLIT_MAX_ROWS ? SPLIT_TILES : 0;
}

size_t vw_cu_attn_ws_floats(size_t rows, size_t Hq, size_t hd) {
    return (NP - 1) * rows * Hq * hd + NP * rows * Hq * 2;
}

vw_status vw_cu_attn_planes(const float *Q, const float *K, const float *V, size_t rows, size_t Hq,
                            size_t Hk, size_t hd, __half *Qh, __half *Kh, __nv_bfloat16 *Vb,
                            cudaStream_t s, vw_err *err) {
    const size_t n = rows * (Hq + 2 * Hk) * hd;
    if (n / 256 >= 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "attn_planes: %zu elements", n);
    return VW_LAUNCH(err, attn_planes_k, vw_blocks_for(n, 256), 256, 0, s, Q, K, V, rows, Hq, Hk,
                     hd, Qh, Kh, Vb);
}

vw_status vw_cu_attention_tc(const vw_cu_attn *a, cudaStream_t s, vw_err *err) {
    if (!vw_cu_attn_tc_takes(a))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention_tc does not take %s, head_dim %zu, %zu heads over %zu, |q|,|k| "
                       "<= %g (or the planes are not 16-byte aligned)",
                       vw_cuda_precision_name(a->prec), a->hd, a->Hq, a->Hk, (double)a->qk_max);
    if (!a->n_items)
        return VW_OK;
    if (a->n_split && !a->ws)
        return VW_FAIL(err, VW_EINVAL, "bad_shape", "attention_tc: split items and no scratch");
    size_t groups, heads;
    tc_split(a->Hq / a->Hk, &groups, &heads);
    const size_t smem = tc_smem_bytes(a->hd, heads), blocks = a->n_items * a->Hk * groups;
    if (blocks > 0x7fffffffu || a->n_split * a->Hq > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "attention_tc: %zu blocks", blocks);
    const float c = 1.4426950408889634f / sqrtf((float)a->hd); // hd^-1/2 log2(e)
    const tc_kernel k = tc_kernel_for(a->hd);                  // opted in by vw_cu_attn_supported
    vw_status st =
        VW_LAUNCH(err, k, (unsigned)blocks, THREADS, smem, s, *a, (int)groups, (int)heads, c);
    if (st == VW_OK && a->n_split)
        st = VW_LAUNCH(err, comb_kernel_for(a->hd), (unsigned)(a->n_split * a->Hq), THREADS, 0, s,
                       *a);
    return st;
}
