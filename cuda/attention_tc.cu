// attention_tc.cu — gated tree attention on tensor cores, flash-style: the
// path of the bf16 and bf16x2 precisions (docs/cuda.md "Attention on tensor
// cores"); attention.cu's FP32 SIMT kernel is the fp32 precision and the
// fallback for other shapes. CPU reference: attn_head and attn_layer in
// core/model/backbone_layers.c (docs/spec/backbone.md §3.4 steps 5-6).
//
// A work item is 16 query rows (tokens) of one sequence — the items of
// vw_cu_attn_items, longest first — times the query heads of one KV head:
// GQA packed, up to 4 heads per block (8/2 heads: 4 heads x 16 tokens = 64
// rows), one warp per query head, so every K/V tile in shared memory serves
// all of them. Keys come in two ranges, each tiled in 16s from its own start
// (so a row's tiles, and its numbers, depend only on its own sequence): the
// parent prefix's rows, then the sequence's own rows up to the item's last
// row. Tiles past that row are never visited; only tiles that cross the
// item's first row (the diagonal) or a range's end are masked.
//
// Per warp and tile: S = Q Kᵀ (16 x 16) and P V (16 x hd) on mma.sync
// m16n8k8 TF32 with 3xTF32 operands (mma.cuh; FP32 grade), each in short
// fresh accumulation chains whose results are summed in FP32 on the CUDA
// cores (the tensor cores' accumulation truncates: a chain of hundreds of
// MMAs would lose up to an ulp per step); online softmax in FP32 as in
// attention.cu (running max m, sum l, o = o * exp(m_old - m_new) + P V); the
// epilogue divides by l and multiplies by sigmoid(gate). A row with no visible
// key in a tile gets alpha = 1 and P = 0 there, which leaves m, l and O
// bit-identical, so batching never changes a row. P goes from the S
// accumulators straight into the A operand of P V: the sum index of P V is
// permuted within each 8 keys (k' = t <-> key 2t, k' = t + 4 <-> key 2t + 1),
// so each lane already holds its A elements, and V's rows are read in the
// same order.
//
// Shared memory: Q of the block's heads (16 rows each) and one K and one V
// tile of 16 keys, FP32, rows padded to hd + 4 floats (every fragment load is
// conflict-free): (16 heads_per_block + 32)(hd + 4) floats = 99,840 bytes at
// hd 256 with 4 heads, within sm_89's 99 KB (101,376 bytes) per block.
#include <math.h>

#include "kernels.cuh"
#include "mma.cuh"

namespace {

constexpr int TQ = VW_ATT_BR, BC = 16, MAXW = 4;
static_assert(TQ == 16, "one m16 tile of query rows per warp");

size_t tc_smem_bytes(size_t hd, size_t heads) {
    return (heads * TQ + 2 * BC) * (hd + 4) * sizeof(float);
}

// Blocks per (item, KV head): ceil(G / 4); heads per block: ceil(G / groups).
void tc_split(size_t G, size_t *groups, size_t *heads) {
    *groups = (G + MAXW - 1) / MAXW;
    *heads = (G + *groups - 1) / *groups;
}

// One K/V tile: rows base + kt .. + BC - 1 of the packed buffers, zeros past
// the range's end (len) so masked products are finite. float4 throughout
// (vw_cu_attn_tc_takes checks the alignment); padded rows keep 16 bytes.
template <int HD>
__device__ void load_kv_tile(const vw_cu_attn &a, size_t g, int base, int kt, int len, float *Ks,
                             float *Vs) {
    constexpr int LD = HD + 4, V4 = HD / 4;
    for (int idx = threadIdx.x; idx < BC * V4; idx += blockDim.x) {
        const int j = idx / V4, d = idx % V4 * 4;
        float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
        if (kt + j < len) {
            const size_t row = (size_t)base + kt + j;
            kv = *reinterpret_cast<const float4 *>(a.K + (row * a.Hk + g) * HD + d);
            vv = *reinterpret_cast<const float4 *>(a.V + row * a.ldv + g * HD + d);
        }
        *reinterpret_cast<float4 *>(Ks + j * LD + d) = kv;
        *reinterpret_cast<float4 *>(Vs + j * LD + d) = vv;
    }
}

// The running softmax state of this lane's two rows (g and g + 8 of the warp's 16).
template <int HD> struct tc_state {
    float o[HD / 8][4]; // O [16, HD] in C fragments: n-tile nt, c[i]
    float m[2], l[2];   // row max; this lane's part of the row sum
};

// S for one tile: Q (16 x HD, this warp's rows) times Kᵀ (HD x 16 keys).
// Each chunk of 32 dims accumulates on the tensor cores in two fresh
// accumulators (big·big; the two small products), which are then added to s in
// FP32 on the CUDA cores: the hardware's truncating accumulation only ever
// spans 4 MMAs of one chunk, and the long sum over HD rounds to nearest.
template <int HD> __device__ void tile_scores(float s[2][4], const float *Qw, const float *Ks) {
    constexpr int LD = HD + 4, CH = 32;
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            s[nt][i] = 0.0f;
#pragma unroll 1
    for (int c0 = 0; c0 < HD; c0 += CH) {
        float big[2][4] = {}, small[2][4] = {};
#pragma unroll
        for (int k0 = c0; k0 < c0 + CH; k0 += 8) {
            uint32_t ab[4], as[4];
            vw_split_tf32(Qw[g * LD + k0 + t], ab[0], as[0]);
            vw_split_tf32(Qw[(g + 8) * LD + k0 + t], ab[1], as[1]);
            vw_split_tf32(Qw[g * LD + k0 + t + 4], ab[2], as[2]);
            vw_split_tf32(Qw[(g + 8) * LD + k0 + t + 4], ab[3], as[3]);
#pragma unroll
            for (int nt = 0; nt < 2; nt++) {
                uint32_t bb[2], bs[2];
                vw_split_tf32(Ks[(nt * 8 + g) * LD + k0 + t], bb[0], bs[0]);
                vw_split_tf32(Ks[(nt * 8 + g) * LD + k0 + t + 4], bb[1], bs[1]);
                vw_mma<VW_MMA_TF32>(small[nt], as, bb);
                vw_mma<VW_MMA_TF32>(small[nt], ab, bs);
                vw_mma<VW_MMA_TF32>(big[nt], ab, bb);
            }
        }
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                s[nt][i] += big[nt][i] + small[nt][i];
    }
}

// One key tile for one warp: S (tile_scores), mask (edge tiles only), online
// softmax update, O = alpha O + P V. r0 = the warp's first row's index in its
// sequence; kt, len, own: the tile's start, the range's loaded length, and
// whether the range is causal (the own rows). P V for each 8 output dims is
// summed over the tile's 16 keys in fresh accumulators (big·big; small
// products) and folded in as o = fma(o, alpha, big + small), the SIMT kernel's
// o * alpha + acc: the long sum over tiles rounds to nearest on the CUDA cores.
template <int HD>
__device__ void tile_step(tc_state<HD> &st, const float *Qw, const float *Ks, const float *Vs,
                          int kt, int len, bool own, int r0, bool edge, float scale) {
    constexpr int LD = HD + 4;
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
    float s[2][4];
    tile_scores<HD>(s, Qw, Ks);
    // s[nt][i]: row g + 8(i >> 1), key kt + 8 nt + 2t + (i & 1).
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = r0 + g + 8 * h;
        float mt = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const int key = kt + 8 * nt + 2 * t + j;
                float v = s[nt][2 * h + j] * scale;
                if (edge && (key >= len || (own && key > row)))
                    v = -INFINITY;
                s[nt][2 * h + j] = v;
                mt = fmaxf(mt, v);
            }
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        const float mn = fmaxf(st.m[h], mt);
        const float mref = mn == -INFINITY ? 0.0f : mn; // no key seen yet: P = 0
        alpha[h] = expf(st.m[h] - mref); // 1 when the tile has no visible key for the row
        float psum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const float p = expf(s[nt][2 * h + j] - mref); // 0 for a masked key
                s[nt][2 * h + j] = p;
                psum += p;
            }
        st.l[h] = st.l[h] * alpha[h] + psum;
        st.m[h] = mn;
    }
    // P as the A operand of P V, k-step ks = S n-tile ks (keys 8 ks .. 8 ks + 7).
    uint32_t pb[2][4], ps[2][4];
#pragma unroll
    for (int ks = 0; ks < 2; ks++) {
        vw_split_tf32(s[ks][0], pb[ks][0], ps[ks][0]); // (row g,     k' = t)     = key 2t
        vw_split_tf32(s[ks][2], pb[ks][1], ps[ks][1]); // (row g + 8, k' = t)     = key 2t
        vw_split_tf32(s[ks][1], pb[ks][2], ps[ks][2]); // (row g,     k' = t + 4) = key 2t + 1
        vw_split_tf32(s[ks][3], pb[ks][3], ps[ks][3]); // (row g + 8, k' = t + 4) = key 2t + 1
    }
    const float *v0 = Vs + 2 * t * LD + g; // V[key 2t][dim g]: B[k' = t][n = g]
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++) {
        float big[4] = {}, small[4] = {};
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            uint32_t vb[2], vs[2];
            vw_split_tf32(v0[8 * ks * LD + nt * 8], vb[0], vs[0]);       // key 8 ks + 2t
            vw_split_tf32(v0[(8 * ks + 1) * LD + nt * 8], vb[1], vs[1]); // key 8 ks + 2t + 1
            vw_mma<VW_MMA_TF32>(small, ps[ks], vb);
            vw_mma<VW_MMA_TF32>(small, pb[ks], vs);
            vw_mma<VW_MMA_TF32>(big, pb[ks], vb);
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
            st.o[nt][i] = fmaf(st.o[nt][i], alpha[i >> 1], big[i] + small[i]);
    }
}

template <int HD>
__global__ void __launch_bounds__(MAXW * 32) attention_tc_k(vw_cu_attn a, int groups, int heads) {
    constexpr int LD = HD + 4;
    VW_DYN_SMEM(float, sm);
    const int warp = threadIdx.x / 32, nw = blockDim.x / 32;
    const size_t G = a.Hq / a.Hk, per_item = a.Hk * (size_t)groups;
    const size_t item = blockIdx.x / per_item, sub = blockIdx.x % per_item;
    const size_t g = sub / groups, h0 = (sub % groups) * (size_t)heads; // KV head, first head
    const vw_cuda_seg sg = a.segs[a.items[2 * item]];
    const int i0 = a.items[2 * item + 1], nrows = sg.len - i0 < TQ ? sg.len - i0 : TQ;
    float *Qs = sm, *Ks = Qs + nw * TQ * LD, *Vs = Ks + BC * LD;
    for (int idx = threadIdx.x; idx < nw * TQ * HD / 4; idx += blockDim.x) {
        const int w = idx / (TQ * HD / 4), r = idx / (HD / 4) % TQ, d = idx % (HD / 4) * 4;
        float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (r < nrows && h0 + w < G)
            q = *reinterpret_cast<const float4 *>(
                a.Q + (((size_t)sg.start + i0 + r) * a.Hq + g * G + h0 + w) * HD + d);
        *reinterpret_cast<float4 *>(Qs + (w * TQ + r) * LD + d) = q;
    }
    const bool active = h0 + warp < G; // warp-uniform
    const size_t hq = g * G + h0 + warp;
    tc_state<HD> st;
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            st.o[nt][i] = 0.0f;
    st.m[0] = st.m[1] = -INFINITY, st.l[0] = st.l[1] = 0.0f;
    const float scale = 1.0f / sqrtf((float)HD);
    for (int range = 0; range < 2; range++) {
        const bool own = range == 1;
        const int len = own ? i0 + nrows : sg.parent_len; // keys of this range anyone sees
        const int base = own ? sg.start : sg.parent_start;
        for (int kt = 0; kt < len; kt += BC) {
            __syncthreads(); // Q loaded / the previous tile consumed
            load_kv_tile<HD>(a, g, base, kt, len, Ks, Vs);
            __syncthreads();
            if (!active)
                continue;
            const bool edge = kt + BC > len || (own && kt + BC - 1 > i0);
            tile_step<HD>(st, Qs + warp * TQ * LD, Ks, Vs, kt, len, own, i0, edge, scale);
        }
    }
    if (!active)
        return;
    const int lane = threadIdx.x % 32, gr = lane >> 2, t = lane & 3;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float l = st.l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int r = gr + 8 * h;
        if (r >= nrows)
            continue;
        const size_t row = (size_t)sg.start + i0 + r;
        const float inv = 1.0f / l;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const size_t d = (size_t)nt * 8 + 2 * t + j;
                float v = st.o[nt][2 * h + j] * inv;
                if (a.G)
                    v *= vw_d_sigmoid(a.G[row * a.ldg + hq * a.gstride + d]);
                a.O[row * a.ldo + hq * HD + d] = v;
            }
    }
}

// The kernel instance for head_dim hd, or nullptr; its name as the SASS shows it.
using tc_kernel = void (*)(vw_cu_attn, int, int);
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

} // namespace

int vw_cu_attn_tc_takes(const vw_cu_attn *a) {
    const uintptr_t align = (uintptr_t)a->Q | (uintptr_t)a->K | (uintptr_t)a->V;
    return a->prec != VW_CUDA_FP32 && a->Hk && a->Hq % a->Hk == 0 && tc_kernel_for(a->hd) &&
           align % 16 == 0 && a->ldv % 4 == 0;
}

vw_cu_kernel_smem vw_cu_attn_tc_smem(size_t hd, size_t group) {
    const char *name = nullptr;
    const tc_kernel k = tc_kernel_for(hd, &name);
    size_t groups = 1, heads = MAXW;
    if (group)
        tc_split(group, &groups, &heads);
    return {(const void *)k, k ? tc_smem_bytes(hd, heads) : 0, name};
}

vw_status vw_cu_attention_tc(const vw_cu_attn *a, cudaStream_t s, vw_err *err) {
    if (!vw_cu_attn_tc_takes(a))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention_tc does not take %s, head_dim %zu, %zu heads over %zu "
                       "(or Q/K/V are not 16-byte aligned)",
                       vw_cuda_precision_name(a->prec), a->hd, a->Hq, a->Hk);
    if (!a->n_items)
        return VW_OK;
    size_t groups, heads;
    tc_split(a->Hq / a->Hk, &groups, &heads);
    const size_t smem = tc_smem_bytes(a->hd, heads), blocks = a->n_items * a->Hk * groups;
    if (blocks > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "attention_tc: %zu blocks", blocks);
    const tc_kernel k = tc_kernel_for(a->hd); // opted in by vw_cu_attn_supported
    return VW_LAUNCH(err, k, (unsigned)blocks, (unsigned)(32 * heads), smem, s, *a, (int)groups,
                     (int)heads);
}
