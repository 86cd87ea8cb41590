// attention_tc.cu — gated tree attention on tensor cores, FlashAttention-2
// style: the path of the bf16 and bf16x2 precisions (docs/cuda-mixers.md "Attention
// on tensor cores"); attention.cu's FP32 SIMT kernel is the fp32 precision
// and the fallback for other shapes. CPU reference: attn_task and attn_layer
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

// The shapes of one head width. A 64-key tile is consumed in steps of SK keys
// (S, online softmax, P V): SK = 64, but 32 at hd 256, where O's 128
// registers leave no room for P of 64 keys in hi and lo and the MMAs' fresh
// accumulators. K and V stream through a ring of NST stages of 8 KiB: per
// step NPK panels of K (SK keys x PDK dims) then NPV panels of V (SK x PDV:
// 32 dims, 4 P V accumulation chains in flight, which is what fits beside O at
// hd 256), PPS in all, a multiple of NST so that a panel's stage is known at
// compile time. KS: Q Kᵀ k-steps per K panel; NTS: S n-tiles (8 keys) per
// step; KK: P V k-steps (16 keys) per step; NTV: P V n-tiles (8 dims) per V
// panel; QC, PCK, PCV: 16-byte chunks per row of Q, a K panel, a V panel.
template <int HD> struct tc_cfg {
    static constexpr int SK = HD >= 256 ? 32 : 64;
    static constexpr int PDK = 8192 / (SK * 4) < HD ? 8192 / (SK * 4) : HD, PDV = 32;
    static constexpr int NPK = HD / PDK, NPV = HD / PDV, PPS = NPK + NPV;
    static constexpr int NST = PPS % 4 == 0 ? 4 : 2;
    static constexpr int KS = PDK / 16, NTS = SK / 8, KK = SK / 16, NTV = PDV / 8;
    static constexpr int QC = HD / 8, PCK = PDK / 8, PCV = PDV / 8;
    static constexpr int QPLANE = TQ * HD * 2, PPLANEK = SK * PDK * 2, PPLANEV = SK * PDV * 2;
    static constexpr int STAGE = 8192;
    static_assert(2 * PPLANEK <= STAGE && 2 * PPLANEV <= STAGE, "a panel fits its stage");
    static_assert(QC == 4 || QC % 8 == 0, "swizzle");
    static_assert((PCK == 4 || PCK % 8 == 0) && PCV == 4, "swizzle");
    static_assert(PPS % NST == 0, "stage of a panel");
};

template <int HD> constexpr size_t tc_stage_bytes() {
    return (size_t)tc_cfg<HD>::NST * tc_cfg<HD>::STAGE;
}
size_t tc_smem_bytes(size_t hd, size_t heads) {
    const size_t stages = hd == 32    ? tc_stage_bytes<32>()
                          : hd == 64  ? tc_stage_bytes<64>()
                          : hd == 128 ? tc_stage_bytes<128>()
                                      : tc_stage_bytes<256>();
    return heads * 2 * TQ * hd * 2 + stages;
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
// The fragment loads' form of it: with lane_off = swz<C>(r, c) for r < 8 (16)
// and c below cx's lowest set bit, swz<C>(r + R, c + cx) = (lane_off ^ ((cx &
// 7) << 4)) + (cx & ~7) * 16 + R * C * 16 for R a multiple of 8 (cx < 4 when C
// == 4): one lane-dependent offset per kind of fragment, the rest constants.
template <int C> __device__ __forceinline__ int swz_at(int lane_off, int cx, int R) {
    const int lo = C >= 8 ? cx & 7 : cx, hi = C >= 8 ? cx & ~7 : 0;
    return (lane_off ^ (lo << 4)) + hi * 16 + R * C * 16;
}

// One softmax step of an item: its range (own rows or the parent's), first key
// within the range, the range's keys anyone of the item sees, the range's first
// packed row.
struct step_at {
    bool own;
    int k0, len, base;
};

// What the key loop needs of the item and part, kept in shared memory and
// read (volatile) where used: block-uniform values, which would otherwise sit
// in registers through the loop, where O and P leave none to spare at hd 256.
struct item_info {
    int start, parent_start, parent_len, npt, own_len, i0, nrows, t1, part, parts;
};

// The first step of tile t of the item's tiles (parent range first). A tile's
// next step is k0 + SK while that stays in the tile and below the range's end.
__device__ __forceinline__ step_at tile_of(const volatile item_info &in, int t) {
    const int npt = in.npt;
    const bool own = t >= npt;
    return {own, (own ? t - npt : t) * BK, own ? in.own_len : in.parent_len,
            own ? in.start : in.parent_start};
}

// cp.async of panel pi of a step's K planes (dims pi*PDK ..) or V planes
// (dims pi*PDV ..) into stage st: SK keys x the panel's dims, hi and lo, 16
// bytes per copy; keys past the range's end are zero-filled (their scores are
// masked, their P is 0). Thread x copies chunk x % PC of keys x / PC + k *
// (THREADS / PC), both planes.
template <int HD, bool V>
__device__ __forceinline__ void load_panel(const vw_cu_attn &a, unsigned g, const step_at &sa,
                                           int pi, unsigned char *st) {
    using C = tc_cfg<HD>;
    constexpr int W = V ? C::PDV : C::PDK, PC = W / 8, PLANE = C::SK * W * 2;
    constexpr int RSTEP = THREADS / PC, NR = C::SK / RSTEP; // key rows apart, rows per thread
    static_assert(NR >= 1 && C::SK % RSTEP == 0, "whole rows per thread");
    const uint16_t *planes =
        V ? reinterpret_cast<const uint16_t *>(a.Vb) : reinterpret_cast<const uint16_t *>(a.Kh);
    const int c = threadIdx.x % PC, j0 = threadIdx.x / PC;
    const unsigned rstride = (unsigned)a.Hk * 2 * HD; // elements per packed row
    planes += g * 2 * HD + pi * W + c * 8;
#pragma unroll
    for (int k = 0; k < NR; k++) {
        const int j = j0 + k * RSTEP;
        const bool ok = sa.k0 + j < sa.len;
        const uint16_t *src = planes + (size_t)(unsigned)(sa.base + sa.k0 + (ok ? j : 0)) * rstride;
#pragma unroll
        for (int pl = 0; pl < 2; pl++)
            vw_cp_async_cg(st + pl * PLANE + swz<PC>(j, c), src + pl * HD, ok ? 16 : 0);
    }
}

// S (16 x SK, C fragments: s[nt][i] = row g + 8(i >> 1), key 8 nt + 2t +
// (i & 1)) plus K panel PI's part of Q Kᵀ: FP16x3, the small products first.
// Q's A fragment (x4): lane l reads row l % 16 at chunk 2 ks + l / 16; Kᵀ's B
// fragments (x4): key 8 nt + l % 8 at chunk 2 ks + (l / 8) % 2, hi for lanes
// below 16, lo above.
template <int HD, int PI>
__device__ __forceinline__ void s_panel(float s[tc_cfg<HD>::NTS][4], const unsigned char *Qw,
                                        const unsigned char *st) {
    using C = tc_cfg<HD>;
    const int lane = threadIdx.x & 31;
    const int qoff = swz<C::QC>(lane & 15, lane >> 4);
    const int koff = swz<C::PCK>(lane & 7, (lane >> 3) & 1);
    const unsigned char *kp = st + (lane >> 4) * C::PPLANEK;
#pragma unroll
    for (int ks = 0; ks < C::KS; ks++) {
        uint32_t qa[2][4];
#pragma unroll
        for (int pl = 0; pl < 2; pl++)
            vw_ldsm<4>(qa[pl], Qw + pl * C::QPLANE + swz_at<C::QC>(qoff, PI * C::PCK + 2 * ks, 0));
#pragma unroll
        for (int nt = 0; nt < C::NTS; nt++) {
            uint32_t kb[4]; // B = Kᵀ: hi b[0..1], lo b[2..3]
            vw_ldsm<4>(kb, kp + swz_at<C::PCK>(koff, 2 * ks, 8 * nt));
            if (PI == 0 && ks == 0)
                s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
            vw_mma<VW_MMA_F16>(s[nt], qa[1], kb);
            vw_mma<VW_MMA_F16>(s[nt], qa[0], kb + 2);
            vw_mma<VW_MMA_F16>(s[nt], qa[0], kb);
        }
    }
}

// O (16 x HD, C fragments o[nt][i]) for V panel PI's dims: o = fma(o, alpha,
// P V) with P V over the step's keys, BF16x3, 3 KK MMAs per 8 dims in a fresh
// accumulator. ph/pl: P's A fragments per 16 keys. V's B fragments (x4
// .trans): key 16 kk + l % 16 at chunk nt, hi for lanes below 16, lo above.
template <int HD, int PI>
__device__ __forceinline__ void pv_panel(float o[HD / 8][4], const uint32_t ph[][4],
                                         const uint32_t pl[][4], const float alpha[2],
                                         const unsigned char *st) {
    using C = tc_cfg<HD>;
    const int lane = threadIdx.x & 31;
    const int voff = swz<C::PCV>(lane & 15, 0);
    const unsigned char *vp = st + (lane >> 4) * C::PPLANEV;
#pragma unroll
    for (int nt = 0; nt < C::NTV; nt++) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int kk = 0; kk < C::KK; kk++) {
            uint32_t vb[4]; // B = V (keys x dims, k-major): hi b[0..1], lo b[2..3]
            vw_ldsm<4, true>(vb, vp + swz_at<C::PCV>(voff, nt, 16 * kk));
            vw_mma<VW_MMA_BF16>(acc, pl[kk], vb);
            vw_mma<VW_MMA_BF16>(acc, ph[kk], vb + 2);
            vw_mma<VW_MMA_BF16>(acc, ph[kk], vb);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
            o[PI * C::NTV + nt][i] = fmaf(o[PI * C::NTV + nt][i], alpha[i >> 1], acc[i]);
    }
}

// 2^x: ex2.approx.ftz on the GPU (one MUFU.EX2; relative error ~2^-22, results
// below 2^-126 flushed to 0), exp2f on the emulator.
__device__ __forceinline__ float ex2(float x) {
#ifdef VW_CUDA_EMU
    return exp2f(x);
#else
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#endif
}

// The running softmax of this lane's two rows (g and g + 8 of the warp's 16).
// m: the row max in units of c = hd^-1/2 log2(e) (raw score max times c), l:
// this lane's part of the row sum relative to m.
struct soft_state {
    float m[2], l[2];
};

// Mask (edge steps only), online softmax update, P into BF16 hi/lo A
// fragments (k-step kk = keys 16 kk ..: n-tiles 2 kk and 2 kk + 1 of S), alpha.
template <int HD>
__device__ __forceinline__ void softmax_step(float s[tc_cfg<HD>::NTS][4], soft_state &ss,
                                             const step_at &sa, bool edge, int i0, float c,
                                             float alpha[2], uint32_t ph[][4], uint32_t pl[][4]) {
    using C = tc_cfg<HD>;
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int qrow = i0 + g + 8 * h; // the query row's index in its sequence
        float mt = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < C::NTS; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                float v = s[nt][2 * h + j];
                if (edge) {
                    const int key = sa.k0 + 8 * nt + 2 * t + j;
                    if (key >= sa.len || (sa.own && key > qrow))
                        v = -INFINITY;
                    s[nt][2 * h + j] = v;
                }
                mt = fmaxf(mt, v);
            }
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        const float mn = fmaxf(ss.m[h], mt * c);
        const float mref = mn == -INFINITY ? 0.0f : mn; // no key seen yet: P = 0
        alpha[h] = ex2(ss.m[h] - mref); // 1 when the step has no visible key for the row
        float psum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < C::NTS; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float p = ex2(fmaf(s[nt][2 * h + j], c, -mref)); // 0 for a masked key
                s[nt][2 * h + j] = p;
                psum += p;
            }
        ss.l[h] = fmaf(ss.l[h], alpha[h], psum);
        ss.m[h] = mn;
    }
#pragma unroll
    for (int kk = 0; kk < C::KK; kk++) {
        vw_split2_bf16(s[2 * kk][0], s[2 * kk][1], ph[kk][0], pl[kk][0]);         // row g, k 2t
        vw_split2_bf16(s[2 * kk][2], s[2 * kk][3], ph[kk][1], pl[kk][1]);         // row g + 8
        vw_split2_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1], ph[kk][2], pl[kk][2]); // k 2t + 8
        vw_split2_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3], ph[kk][3], pl[kk][3]);
    }
}

// The step after sa (of tile t): this tile's next, or the next tile's first
// (then t advances). false when the part has none.
template <int HD>
__device__ __forceinline__ bool next_step(const volatile item_info &in, step_at &sa, int &t) {
    constexpr int SK = tc_cfg<HD>::SK;
    sa.k0 += SK;
    if (sa.k0 % BK != 0 && sa.k0 < sa.len)
        return true;
    if (++t >= in.t1)
        return false;
    sa = tile_of(in, t);
    return true;
}

// Starts the copy of panel U of the step sequence counted from the current
// step sa (U >= PPS: panel U - PPS of the next step, if any) into its stage.
template <int HD, int U>
__device__ __forceinline__ void issue(const vw_cu_attn &a, unsigned g, const step_at &sa,
                                      const volatile item_info &in, int t, unsigned char *stg) {
    using C = tc_cfg<HD>;
    constexpr int P = U % C::PPS;
    unsigned char *st = stg + U % C::NST * C::STAGE;
    step_at at = sa;
    if (U >= C::PPS && !next_step<HD>(in, at, t))
        return;
    if (P < C::NPK)
        load_panel<HD, false>(a, g, at, P, st);
    else
        load_panel<HD, true>(a, g, at, P - C::NPK, st);
}

// Panel Q of a step: wait until it has landed (for every thread: the barrier,
// which also frees the stage of panel Q - 1), start the copy of panel Q + NST
// - 1, then K panel Q's part of S (the last one followed by the softmax) or V
// panel Q - NPK's part of O.
template <int HD, int Q>
__device__ __forceinline__ void
panels(float s[tc_cfg<HD>::NTS][4], float o[HD / 8][4], soft_state &ss, const vw_cu_attn &a,
       unsigned g, const step_at &sa, bool edge, float c, const volatile item_info &in, int t,
       bool active, const unsigned char *Qw, unsigned char *stg, uint32_t ph[][4], uint32_t pl[][4],
       float alpha[2]) {
    using C = tc_cfg<HD>;
    if constexpr (Q < C::PPS) {
        unsigned char *st = stg + Q % C::NST * C::STAGE;
        vw_cp_async_wait<C::NST - 2>();
        __syncthreads();
        issue<HD, Q + C::NST - 1>(a, g, sa, in, t, stg);
        vw_cp_async_commit();
        if (active) {
            if constexpr (Q < C::NPK) {
                s_panel<HD, Q>(s, Qw, st);
                if (Q + 1 == C::NPK)
                    softmax_step<HD>(s, ss, sa, edge, in.i0, c, alpha, ph, pl);
            } else {
                pv_panel<HD, Q - C::NPK>(o, ph, pl, alpha, st);
            }
        }
        panels<HD, Q + 1>(s, o, ss, a, g, sa, edge, c, in, t, active, Qw, stg, ph, pl, alpha);
    }
}

// The copies before the first step: its panels 0 .. NST - 2, a group each.
template <int HD, int U>
__device__ __forceinline__ void prologue(const vw_cu_attn &a, unsigned g, const step_at &sa,
                                         const volatile item_info &in, int t, bool any,
                                         unsigned char *stg) {
    if constexpr (U < tc_cfg<HD>::NST - 1) {
        if (any)
            issue<HD, U>(a, g, sa, in, t, stg);
        vw_cp_async_commit();
        prologue<HD, U + 1>(a, g, sa, in, t, any, stg);
    }
}

template <int HD>
__global__ void __launch_bounds__(THREADS)
    attention_tc_k(vw_cu_attn a, unsigned G, int heads, float c) {
    using C = tc_cfg<HD>;
    VW_DYN_SMEM(uint4, smv);
    __shared__ item_info info;
    const volatile item_info &in = info;
    unsigned char *sm = reinterpret_cast<unsigned char *>(smv);
    const int tid = threadIdx.x, warp = tid / 32;
    // Grid (parts, KV heads, groups of query heads): the part, KV head g and
    // the block's first query head h0 straight from the block index.
    const unsigned e = blockIdx.x, g = blockIdx.y; // G: query heads per KV head
    const unsigned h0 = blockIdx.z * heads;
    const int nh = G - h0 < (unsigned)heads ? (int)(G - h0) : heads; // heads of this block
    unsigned char *Qs = sm, *stg = sm + heads * 2 * C::QPLANE;
    int t0;
    {
        const int32_t *it = a.items + VW_ATT_ENTRY * (size_t)e;
        const vw_cuda_seg sg = a.segs[it[0]];
        const int i0 = it[1], part = it[2], parts = it[3];
        const int nrows = sg.len - i0 < TQ ? sg.len - i0 : TQ, own_len = i0 + nrows;
        const int npt = (sg.parent_len + BK - 1) / BK, T = npt + (own_len + BK - 1) / BK;
        const int per = T / parts, ex = T % parts;
        t0 = part * per + (part < ex ? part : ex);
        if (tid == 0)
            info = {sg.start, sg.parent_start, sg.parent_len,          npt,  own_len,
                    i0,       nrows,           t0 + per + (part < ex), part, parts};

        // Q planes of the block's heads, once for the item (rows past the end: zeros).
        const unsigned qstride = (unsigned)a.Hq * 2 * HD; // elements per packed row
        for (int idx = tid; idx < nh * 2 * TQ * C::QC; idx += THREADS) {
            const int ch = idx % C::QC, r = idx / C::QC % TQ, pl = idx / (C::QC * TQ) % 2,
                      w = idx / (C::QC * TQ * 2);
            const unsigned row = (unsigned)(sg.start + i0 + (r < nrows ? r : 0));
            const __half *src =
                a.Qh + (size_t)row * qstride + ((g * G + h0 + w) * 2 + pl) * HD + ch * 8;
            vw_cp_async_cg(Qs + (w * 2 + pl) * C::QPLANE + swz<C::QC>(r, ch), src,
                           r < nrows ? 16 : 0);
        }
        vw_cp_async_commit();
    }
    __syncthreads(); // info
    step_at sa = tile_of(in, t0);
    prologue<HD, 0>(a, g, sa, in, t0, t0 < in.t1, stg);

    const bool active = warp < nh; // warp-uniform
    const unsigned char *Qw = Qs + warp * 2 * C::QPLANE;
    float o[HD / 8][4];
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            o[nt][i] = 0.0f;
    soft_state ss = {{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
    // The steps of tiles t0, t0 + 1, ... in order (sa: the current one, of tile t).
#pragma unroll 1
    for (int t = t0; t < in.t1;) { // left by next_step at the part's end
        const bool edge = sa.k0 + C::SK > sa.len || (sa.own && sa.k0 + C::SK - 1 > in.i0);
        float s[C::NTS][4];
        float alpha[2] = {1.0f, 1.0f};
        uint32_t ph[C::KK][4], pl[C::KK][4];
        panels<HD, 0>(s, o, ss, a, g, sa, edge, c, in, t, active, Qw, stg, ph, pl, alpha);
        if (!next_step<HD>(in, sa, t))
            break;
    }
    vw_cp_async_wait<-1>(); // nothing is left in flight (the last commits are empty)
    if (!active)
        return;

    // Epilogue: O through this warp's own Q region (16 rows x HD floats, the
    // same bytes, 16-byte chunks swizzled), then coalesced stores: divided by
    // l and gated, or, for a part, as it is with m and l beside it.
    const int part = in.part, parts = in.parts, nrows = in.nrows, row0 = in.start + in.i0;
    const int lane = threadIdx.x & 31, gr = lane >> 2, tq = lane & 3;
    const unsigned hq = g * G + h0 + warp;
    float *ml = a.ws + (NP - 1) * a.rows * a.Hq * HD; // [part][row][Hq][m, l]
    unsigned char *Ow = Qs + warp * 2 * C::QPLANE;
    __syncwarp(); // every lane's last ldmatrix of Q is done
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float l = ss.l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int r = gr + 8 * h;
        const float inv = parts == 1 ? 1.0f / l : 1.0f;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt++)
            *reinterpret_cast<float2 *>(Ow + swz<HD / 4>(r, 2 * nt + (tq >> 1)) + (tq & 1) * 8) =
                make_float2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
        if (parts > 1 && tq == 0 && r < nrows) {
            float *p = ml + (((size_t)part * a.rows + row0 + r) * a.Hq + hq) * 2;
            p[0] = ss.m[h], p[1] = l;
        }
    }
    __syncwarp();
#pragma unroll 1
    for (int idx = lane; idx < nrows * (HD / 4); idx += 32) {
        const int r = idx / (HD / 4), ch = idx % (HD / 4);
        const size_t row = (size_t)row0 + r;
        float4 v = *reinterpret_cast<const float4 *>(Ow + swz<HD / 4>(r, ch));
        float *dst = parts == 1 || part == 0
                         ? a.O + row * a.ldo + hq * HD
                         : a.ws + ((size_t)(part - 1) * a.rows + row) * a.Hq * HD + hq * HD;
        if (parts == 1 && a.G) {
            const float *gp = a.G + row * a.ldg + hq * a.gstride + ch * 4;
            v.x *= vw_d_sigmoid(gp[0]), v.y *= vw_d_sigmoid(gp[1]);
            v.z *= vw_d_sigmoid(gp[2]), v.w *= vw_d_sigmoid(gp[3]);
        }
        *reinterpret_cast<float4 *>(dst + ch * 4) = v;
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
using tc_kernel = void (*)(vw_cu_attn, unsigned, int, float);
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
    const size_t smem = tc_smem_bytes(a->hd, heads);
    if (a->n_items > 0x7fffffffu || a->Hk > 65535 || groups > 65535 ||
        a->n_split * a->Hq > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention_tc: %zu parts, %zu KV heads, %zu groups", a->n_items, a->Hk,
                       groups);
    const float c = 1.4426950408889634f / sqrtf((float)a->hd); // hd^-1/2 log2(e)
    const tc_kernel k = tc_kernel_for(a->hd);                  // opted in by vw_cu_attn_supported
    const dim3 grid((unsigned)a->n_items, (unsigned)a->Hk, (unsigned)groups);
    vw_status st =
        VW_LAUNCH(err, k, grid, THREADS, smem, s, *a, (unsigned)(a->Hq / a->Hk), (int)heads, c);
    if (st == VW_OK && a->n_split)
        st = VW_LAUNCH(err, comb_kernel_for(a->hd), (unsigned)(a->n_split * a->Hq), THREADS, 0, s,
                       *a);
    return st;
}
