/* planes.cuh — FP32 values kept as BF16 hi/lo planes, the operand format of
 * the BF16x3 products (mma.cuh vw_mma_x3<VW_MMA_BF16>: hi·hi + hi·lo + lo·hi,
 * FP32 accumulation): each value is split once, by the kernel that produces
 * it, and every MMA that reads it loads both planes with ldmatrix, so no
 * inner loop converts. Internal to cuda/ (device code, sm_80 and newer; the
 * decoder is host code for tests).
 *
 * The format (the "planes row"): a row of n FP32 values, n a multiple of 8,
 * is stored in the same 4n bytes as n/8 groups of 32 bytes, group j holding
 * x[8j .. 8j+7] as 8 BF16 hi values then 8 BF16 lo values,
 *   hi = bf16_rn(x), lo = bf16_rn(x - hi)   (x - hi is exact in FP32),
 * so |x - hi - lo| <= 2^-16 |x| and hi + lo is exact in FP32 (decode). A group
 * occupies exactly the bytes of its 8 floats, so a kernel owning aligned
 * 8-column groups may turn FP32 rows into planes in place, and a 16-byte half
 * group is one ldmatrix row. Shared-memory tiles keep the format with a row
 * stride of 4n + 16 bytes (an odd multiple of 16 for n a multiple of 32, or
 * n = 16: the 8 rows an ldmatrix phase reads, and the 8 rows of a C fragment
 * store, fall in distinct banks).
 *
 * ldmatrix row addresses (ldst.cuh vw_ldsm; pl_* below, tiles row-major with
 * row stride ld bytes):
 *   pl_a:   A of m16n8k16 (16 x 16 at (r0, c0)), x4: registers a[0..3];
 *   pl_bt:  B of two n-tiles from Bᵀ stored [n][k] (rows n0 .. n0+15, k0 ..
 *           k0+15), x4: registers {b0, b1} of n-tile n0, {b0, b1} of n0 + 8;
 *   pl_bk:  B of two n-tiles from B stored [k][n] (k-major), x4 .trans:
 *           the same registers. */
#ifndef VW_PLANES_CUH
#define VW_PLANES_CUH

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(VW_CUDA_EMU)
#include "ldst.cuh"
#include "mma.cuh"

/* Two values adjacent in k (x0 the lower) as the registers of a fragment:
 * hi pair and lo pair, x0 in the low halves (mma.cuh vw_split_bf16's split,
 * two values per conversion instruction). */
__device__ __forceinline__ void vw_pl_split2(float x0, float x1, uint32_t &hi, uint32_t &lo) {
    hi = vw_bit_cast<uint32_t>(__floats2bfloat162_rn(x0, x1));
    const float h0 = vw_bit_cast<float>(hi << 16), h1 = vw_bit_cast<float>(hi & 0xffff0000u);
    lo = vw_bit_cast<uint32_t>(__floats2bfloat162_rn(x0 - h0, x1 - h1));
}

/* One group: 8 floats -> 16 bytes of hi, 16 bytes of lo. */
__device__ __forceinline__ void vw_pl_split8(const float4 &a, const float4 &b, uint4 &hi,
                                             uint4 &lo) {
    vw_pl_split2(a.x, a.y, hi.x, lo.x);
    vw_pl_split2(a.z, a.w, hi.y, lo.y);
    vw_pl_split2(b.x, b.y, hi.z, lo.z);
    vw_pl_split2(b.z, b.w, hi.w, lo.w);
}

/* The byte address of element (r, c) of plane p (0 hi, 1 lo) in a planes
 * tile with row stride ld bytes. */
__device__ __forceinline__ char *vw_pl_at(void *base, int ld, int r, int c, int p) {
    return (char *)base + r * ld + (c >> 3) * 32 + p * 16 + (c & 7) * 2;
}
__device__ __forceinline__ const char *vw_pl_at(const void *base, int ld, int r, int c, int p) {
    return (const char *)base + r * ld + (c >> 3) * 32 + p * 16 + (c & 7) * 2;
}

/* This lane's ldmatrix row for the three fragment shapes above (lane =
 * threadIdx.x & 31). */
__device__ __forceinline__ const char *vw_pl_a(const void *t, int ld, int r0, int c0, int p,
                                               int lane) {
    return vw_pl_at(t, ld, r0 + (lane & 15), c0 + 8 * (lane >> 4), p);
}
__device__ __forceinline__ const char *vw_pl_bt(const void *t, int ld, int n0, int k0, int p,
                                                int lane) {
    return vw_pl_at(t, ld, n0 + (lane & 7) + 8 * (lane >> 4), k0 + 8 * ((lane >> 3) & 1), p);
}
__device__ __forceinline__ const char *vw_pl_bk(const void *t, int ld, int k0, int n0, int p,
                                                int lane) {
    return vw_pl_at(t, ld, k0 + (lane & 7) + 8 * ((lane >> 3) & 1), n0 + 8 * (lane >> 4), p);
}

/* Fragments of both planes. */
struct vw_pl_a4 {
    uint32_t hi[4], lo[4];
};
struct vw_pl_b2x2 { /* two n-tiles: [n-tile][reg] */
    uint32_t hi[2][2], lo[2][2];
};

__device__ __forceinline__ void vw_pl_load_a(vw_pl_a4 &f, const void *t, int ld, int r0, int c0,
                                             int lane) {
    vw_ldsm<4>(f.hi, vw_pl_a(t, ld, r0, c0, 0, lane));
    vw_ldsm<4>(f.lo, vw_pl_a(t, ld, r0, c0, 1, lane));
}
__device__ __forceinline__ void vw_pl_load_bt(vw_pl_b2x2 &f, const void *t, int ld, int n0, int k0,
                                              int lane) {
    uint32_t h[4], l[4];
    vw_ldsm<4>(h, vw_pl_bt(t, ld, n0, k0, 0, lane));
    vw_ldsm<4>(l, vw_pl_bt(t, ld, n0, k0, 1, lane));
    f.hi[0][0] = h[0], f.hi[0][1] = h[1], f.hi[1][0] = h[2], f.hi[1][1] = h[3];
    f.lo[0][0] = l[0], f.lo[0][1] = l[1], f.lo[1][0] = l[2], f.lo[1][1] = l[3];
}
__device__ __forceinline__ void vw_pl_load_bk(vw_pl_b2x2 &f, const void *t, int ld, int k0, int n0,
                                              int lane) {
    uint32_t h[4], l[4];
    vw_ldsm<4, true>(h, vw_pl_bk(t, ld, k0, n0, 0, lane));
    vw_ldsm<4, true>(l, vw_pl_bk(t, ld, k0, n0, 1, lane));
    f.hi[0][0] = h[0], f.hi[0][1] = h[1], f.hi[1][0] = h[2], f.hi[1][1] = h[3];
    f.lo[0][0] = l[0], f.lo[0][1] = l[1], f.lo[1][0] = l[2], f.lo[1][1] = l[3];
}

/* One n-tile (n0 .. n0+7) of B stored [k][n], x2 .trans: f.hi[0], f.lo[0]
 * (n-tile 1 of f is not loaded). */
__device__ __forceinline__ void vw_pl_load_bk1(vw_pl_b2x2 &f, const void *t, int ld, int k0, int n0,
                                               int lane) {
    vw_ldsm<2, true>(f.hi[0], vw_pl_bk(t, ld, k0, n0, 0, lane));
    vw_ldsm<2, true>(f.lo[0], vw_pl_bk(t, ld, k0, n0, 1, lane));
}

/* d += A B at BF16x3 for n-tile j (0, 1) of a two-tile B fragment. */
__device__ __forceinline__ void vw_pl_mma(float d[4], const vw_pl_a4 &a, const vw_pl_b2x2 &b,
                                          int j) {
    vw_mma_x3<VW_MMA_BF16>(d, a.hi, a.lo, b.hi[j], b.lo[j]);
}

/* The A fragment (16 rows x k 16j .. 16j+15) of an FP32 matrix held as C
 * fragments of its n-tiles 2j (c0) and 2j + 1 (c1) — the C layout's row g /
 * g + 8, columns 2t, 2t + 1 is the A layout's (FlashAttention-2's register
 * reuse) — split into planes. */
__device__ __forceinline__ void vw_pl_c_to_a(vw_pl_a4 &f, const float c0[4], const float c1[4]) {
    vw_pl_split2(c0[0], c0[1], f.hi[0], f.lo[0]);
    vw_pl_split2(c0[2], c0[3], f.hi[1], f.lo[1]);
    vw_pl_split2(c1[0], c1[1], f.hi[2], f.lo[2]);
    vw_pl_split2(c1[2], c1[3], f.hi[3], f.lo[3]);
}

#endif

/* Host: planes rows back to FP32 in place (n values, a multiple of 8): hi + lo,
 * exact. For tests and tools that read a planes buffer. */
static inline void vw_planes_to_f32(float *x, size_t n) {
    for (size_t g = 0; g + 8 <= n; g += 8) {
        uint16_t h[8], l[8];
        memcpy(h, x + g, 16), memcpy(l, (const char *)(x + g) + 16, 16);
        for (int i = 0; i < 8; i++) {
            const uint32_t hb = (uint32_t)h[i] << 16, lb = (uint32_t)l[i] << 16;
            float hf, lf;
            memcpy(&hf, &hb, 4), memcpy(&lf, &lb, 4);
            x[g + i] = hf + lf;
        }
    }
}

#endif
