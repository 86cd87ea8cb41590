// attention.cu — gated causal GQA attention over a packed batch with prefix
// continuation (docs/spec/backbone.md §3.4 steps 5-6; CPU reference: attn_task
// and attn_layer in core/model/backbone_layers.c).
//
// A work item is a tile of VW_ATT_BR query rows of one sequence for one query
// head; a block of 4 warps owns it, 4 rows per warp. Keys are walked in tiles
// of 32 through shared memory: first the parent prefix's rows (a block sees
// the whole prefix), then the sequence's own rows up to the query (causal).
// Softmax is online (running max m, sum l, output o per row, all FP32): lane j
// scores key j of the tile, the warp reduces max and sum by xor butterflies,
// and each lane accumulates o over its hd/32 dims with p_j broadcast through
// shared memory, in key order. A tile with no visible key for a row is skipped for
// that row, so the tiling never changes a row's numbers. The epilogue divides
// by l and multiplies by sigmoid(gate) (the output gate, step 6).
// The prefix's K/V are simply its rows in the same packed buffers: this layer
// projected every row of the batch at once, so nothing is copied per block.
#include <math.h>

#include <algorithm>

#include "kernels.cuh"

namespace {

constexpr int BR = VW_ATT_BR, BC = 32, ATT_WARPS = 4, RPW = BR / ATT_WARPS, MAXE = 8;
static_assert(BR % ATT_WARPS == 0, "rows split evenly over warps");

size_t att_smem_floats(size_t hd) {
    return BR * hd + BC * (hd + 1) + BC * hd; // Qs, Ks (padded rows), Vs
}

// Loads key/value tile rows kt .. kt+BC-1 of the key sequence [parent ; own rows].
__device__ void load_kv(const vw_cu_attn &a, const vw_cuda_seg &sg, int kt, int kmax, size_t g,
                        float *Ks, float *Vs) {
    const size_t hd = a.hd;
    for (size_t idx = threadIdx.x; idx < BC * hd; idx += blockDim.x) {
        const int j = (int)(idx / hd), kk = kt + j;
        const size_t d = idx % hd;
        float kv = 0.0f, vv = 0.0f;
        if (kk < kmax) {
            const size_t row = kk < sg.parent_len ? (size_t)sg.parent_start + kk
                                                  : (size_t)sg.start + (kk - sg.parent_len);
            kv = a.K[(row * a.Hk + g) * hd + d];
            vv = a.V[row * a.ldv + g * hd + d];
        }
        Ks[j * (hd + 1) + d] = kv;
        Vs[j * hd + d] = vv;
    }
}

__global__ void __launch_bounds__(ATT_WARPS * 32) attention_k(vw_cu_attn a) {
    VW_DYN_SMEM(float, sm);
    __shared__ float pbuf[ATT_WARPS][BC];
    const size_t hd = a.hd, E = hd / 32, hq = blockIdx.y, g = hq / (a.Hq / a.Hk);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const vw_cuda_seg sg = a.segs[a.items[VW_ATT_ENTRY * (size_t)blockIdx.x]];
    const int i0 = a.items[VW_ATT_ENTRY * (size_t)blockIdx.x + 1];
    const int nrows = sg.len - i0 < BR ? sg.len - i0 : BR;
    float *Qs = sm, *Ks = Qs + BR * hd, *Vs = Ks + BC * (hd + 1);
    for (size_t idx = threadIdx.x; idx < BR * hd; idx += blockDim.x) {
        const int r = (int)(idx / hd);
        const size_t row = (size_t)sg.start + i0 + r;
        Qs[idx] = r < nrows ? a.Q[(row * a.Hq + hq) * hd + idx % hd] : 0.0f;
    }
    float o[RPW][MAXE], mrow[RPW], lrow[RPW];
#pragma unroll
    for (int rr = 0; rr < RPW; rr++) {
        mrow[rr] = -INFINITY, lrow[rr] = 0.0f;
#pragma unroll
        for (int e = 0; e < MAXE; e++)
            o[rr][e] = 0.0f;
    }
    const float scale = 1.0f / sqrtf((float)hd);
    const int kmax = sg.parent_len + i0 + nrows; // keys the tile's last row sees
    for (int kt = 0; kt < kmax; kt += BC) {
        __syncthreads(); // Q loaded / previous tile consumed
        load_kv(a, sg, kt, kmax, g, Ks, Vs);
        __syncthreads();
#pragma unroll
        for (int rr = 0; rr < RPW; rr++) {
            const int r = warp * RPW + rr;
            if (r >= nrows)
                continue; // warp-uniform
            const int nk = sg.parent_len + i0 + r + 1, kk = kt + lane;
            float s = -INFINITY;
            if (kk < nk) {
                float dot = 0.0f;
                for (size_t d = 0; d < hd; d++)
                    dot += Qs[r * hd + d] * Ks[lane * (hd + 1) + d];
                s = dot * scale;
            }
            const float mt = vw_warp_max(s);
            if (mt == -INFINITY)
                continue; // no visible key in this tile for row r (warp-uniform)
            const float mn = fmaxf(mrow[rr], mt);
            const float alpha = expf(mrow[rr] - mn); // 0 on the first tile (m = -inf)
            const float p = kk < nk ? expf(s - mn) : 0.0f;
            lrow[rr] = lrow[rr] * alpha + vw_warp_sum(p);
            pbuf[warp][lane] = p; // broadcast p_0..p_31 to the warp
            __syncwarp();
#pragma unroll
            for (int e = 0; e < MAXE; e++) {
                if ((size_t)e >= E)
                    break;
                float acc = 0.0f;
                for (int j = 0; j < BC; j++)
                    acc += pbuf[warp][j] * Vs[j * hd + lane + 32 * e];
                o[rr][e] = o[rr][e] * alpha + acc;
            }
            __syncwarp(); // every lane has read pbuf before the next row writes it
            mrow[rr] = mn;
        }
    }
#pragma unroll
    for (int rr = 0; rr < RPW; rr++) {
        const int r = warp * RPW + rr;
        if (r >= nrows)
            continue;
        const size_t row = (size_t)sg.start + i0 + r;
        const float inv = 1.0f / lrow[rr];
#pragma unroll
        for (int e = 0; e < MAXE; e++) {
            if ((size_t)e >= E)
                break;
            const size_t d = lane + 32 * (size_t)e;
            float v = o[rr][e] * inv;
            if (a.G)
                v *= vw_d_sigmoid(a.G[row * a.ldg + hq * a.gstride + d]);
            a.O[row * a.ldo + hq * hd + d] = v;
        }
    }
}

} // namespace

size_t vw_cu_attn_items(const vw_cuda_seg *segs, size_t n_segs, int split_tiles, int32_t *items,
                        size_t *n_split) {
    struct entry {
        int32_t seg, row, part, parts;
    };
    static_assert(sizeof(entry) == VW_ATT_ENTRY * sizeof(int32_t), "entry layout");
    entry *it = reinterpret_cast<entry *>(items);
    // The item's key tiles (VW_ATT_BK, each range from its own start) and its
    // parts: a rule of the item alone.
    auto tiles = [segs](int32_t seg, int32_t row) {
        const vw_cuda_seg &sg = segs[seg];
        const int32_t own = sg.len - row < BR ? sg.len : row + BR;
        return (sg.parent_len + VW_ATT_BK - 1) / VW_ATT_BK + (own + VW_ATT_BK - 1) / VW_ATT_BK;
    };
    auto parts_of = [split_tiles](int32_t T) {
        if (split_tiles <= 0 || T <= split_tiles)
            return 1;
        const int32_t n = (T + split_tiles - 1) / split_tiles;
        return n < VW_ATT_MAX_PARTS ? n : (int)VW_ATT_MAX_PARTS;
    };
    size_t n = 0, ns = 0;
    for (size_t s = 0; s < n_segs; s++)
        for (int32_t r = 0; r < segs[s].len; r += BR) {
            const int32_t np = parts_of(tiles((int32_t)s, r));
            for (int32_t p = 0; p < np; p++)
                it[n++] = entry{(int32_t)s, r, p, np};
            ns += np > 1;
        }
    // Longest first: the part's tiles (a tile count per part as the kernel
    // cuts them); ties in (segment, row, part) order, so the order is total.
    auto len = [&](const entry &x) {
        const int32_t T = tiles(x.seg, x.row);
        return T / x.parts + (x.part < T % x.parts);
    };
    std::sort(it, it + n, [&](const entry &x, const entry &y) {
        const int32_t lx = len(x), ly = len(y);
        return lx != ly         ? lx > ly
               : x.seg != y.seg ? x.seg < y.seg
               : x.row != y.row ? x.row < y.row
                                : x.part < y.part;
    });
    // Then the split items for the combine pass, in (segment, row) order.
    size_t k = n;
    for (size_t s = 0; s < n_segs; s++)
        for (int32_t r = 0; r < segs[s].len; r += BR) {
            const int32_t np = parts_of(tiles((int32_t)s, r));
            if (np > 1)
                it[k++] = entry{(int32_t)s, r, 0, np};
        }
    *n_split = ns;
    return n;
}

// The SIMT kernel at hd, and the tensor-core one where it takes hd.
size_t vw_cu_attn_smem_table(size_t hd, size_t group, vw_cu_kernel_smem *t) {
    size_t n = 0;
    t[n++] = {(const void *)attention_k, att_smem_floats(hd) * sizeof(float), "attention_k"};
    const vw_cu_kernel_smem tc = vw_cu_attn_tc_smem(hd, group);
    if (tc.fn)
        t[n++] = tc;
    return n;
}

// The tensor-core kernel at 4 heads per block, the most it uses.
vw_status vw_cu_attn_supported(size_t hd, vw_err *err) {
    if (!hd || hd % 32 || hd > 32 * MAXE)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention: head_dim %zu must be a multiple of 32 up to %d", hd, 32 * MAXE);
    vw_cu_kernel_smem t[VW_CU_SMEM_ROWS];
    const size_t n = vw_cu_attn_smem_table(hd, 0, t);
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++)
        st = vw_cuda_smem_optin(t[i].fn, t[i].bytes, t[i].name, err);
    return st;
}

vw_status vw_cu_attention(const vw_cu_attn *a, cudaStream_t s, vw_err *err) {
    if (!a->n_items)
        return VW_OK;
    if (vw_cu_attn_tc_takes(a))
        return vw_cu_attention_tc(a, s, err);
    if (a->n_split)
        return VW_FAIL(err, VW_EINVAL, "bad_shape",
                       "attention: %zu items split into parts, which only the tensor-core kernel "
                       "runs",
                       a->n_split);
    if (!a->hd || a->hd % 32 || a->hd > 32 * MAXE) // opted in by vw_cu_attn_supported
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention: head_dim %zu must be a multiple of 32 up to %d", a->hd,
                       32 * MAXE);
    if (a->Hk == 0 || a->Hq % a->Hk || a->Hq > 65535 || a->n_items > 0x7fffffffu)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "attention: %zu heads over %zu, %zu items", a->Hq, a->Hk, a->n_items);
    dim3 grid((unsigned)a->n_items, (unsigned)a->Hq);
    return VW_LAUNCH(err, attention_k, grid, ATT_WARPS * 32, att_smem_floats(a->hd) * sizeof(float),
                     s, *a);
}
