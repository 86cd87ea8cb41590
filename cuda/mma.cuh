/* mma.cuh — tensor-core building blocks for cuda/ kernels: mma.sync wrappers
 * (inline PTX under nvcc, the emulator's warp collective under VW_CUDA_EMU),
 * cvt.rna.tf32.f32, the exact splits of an FP32 value into two TF32 parts
 * (3xTF32), two BF16 parts (BF16x3) or two FP16 parts (FP16x3), and the PTX
 * ISA fragment layouts.
 * Internal to cuda/ (device code, sm_80 and newer). Thread-safety: per-thread
 * functions, except the MMAs: warp collectives that all 32 lanes of a warp
 * execute together, converged (.sync.aligned).
 *
 * Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k8" .tf32 and
 * "for mma.m16n8k16 with floating point type"; g = lane >> 2, t = lane & 3):
 *   TF32 m16n8k8   A 16x8, 4 regs:           a[i] = A[g + 8(i&1)][t + 4(i>>1)]
 *                  B 8x8, 2 regs:            b[i] = B[t + 4i][g]
 *   BF16/FP16      A 16x16, 4 regs of two:   a[i] = A[g + 8(i&1)][2t + 8(i>>1) + h]
 *   m16n8k16       B 16x8, 2 regs of two:    b[i] = B[2t + 8i + h][g]
 *                  (h = 0 in the low 16 bits, h = 1 in the high 16 bits)
 *   both           C/D 16x8 FP32, 4 regs:    c[i] = C[g + 8(i>>1)][2t + (i&1)]
 * The vw_mma_*_pos functions below return these (row, col) pairs; the
 * emulator (emu.cu) transcribes the inverse maps separately, and the
 * `mma_layouts` test (tests/test_cuda_kernels.c) checks both against a plain
 * product, on the emulator in CI and on a GPU in scripts/gpu-check.
 *
 * Precision. Products of TF32/BF16 operands are exact in FP32; the sum over
 * k and C is FP32 on the hardware, not IEEE round-to-nearest (cuda_emu.h).
 * FP32-grade products from split operands (x = big + small + r):
 *   3xTF32: big = tf32(x), small = tf32(x - big) (x - big is exact in FP32),
 *           |r| <= 2^-22 |x|; a*b ~ big_a big_b + big_a small_b + small_a big_b,
 *           dropped terms <= ~3 * 2^-22 |a b| (~7e-7) per product;
 *   BF16x3: hi = bf16(x), lo = bf16(x - hi), |r| <= 2^-18 |x|; dropped terms
 *           <= ~3 * 2^-18 |a b| (~1.1e-5) per product;
 *   FP16x3: hi = fp16(x), lo = fp16(x - hi), |r| <= 2^-22 |x| while |x| lies in
 *           [2^-3, 2^15] (lo stays normal; below, lo's rounding is at most
 *           2^-25 absolute), so FP32 grade like 3xTF32 at the m16n8k16 rate;
 *           x must stay below 65,504 (fp16's largest), which the callers
 *           check (attention: |q|, |k| bounded by their RMS norm).
 * The small products are accumulated first (as CUTLASS's fast-FP32 MMA does)
 * so they are not lost below the big one's rounding. */
#ifndef VW_MMA_CUH
#define VW_MMA_CUH

#include "cuda_common.cuh"

#if defined(__CUDACC__) || defined(VW_CUDA_EMU)
#include <cuda_fp16.h>
#include <string.h>

/* The bits of x as another type of the same size (a register move on the GPU). */
template <typename To, typename From> __device__ __forceinline__ To vw_bit_cast(From x) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To y;
    memcpy(&y, &x, sizeof y);
    return y;
}

/* cvt.rna.tf32.f32: x rounded to 10 mantissa bits, ties away from zero; the
 * result is an FP32 bit pattern with the low 13 bits zero. The emulation is
 * bit-exact for finite x (NaN becomes the canonical 0x7fffffff). */
__device__ __forceinline__ uint32_t vw_cvt_tf32(float x) {
#ifdef VW_CUDA_EMU
    const uint32_t u = vw_bit_cast<uint32_t>(x);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return u & 0x007fffffu ? 0x7fffffffu : u;
    return (u + 0x1000u) & 0xffffe000u; /* sign-magnitude: +half ulp rounds |x| up on ties */
#else
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
#endif
}

/* 3xTF32 operand split: x = big + small + r, |r| <= 2^-22 |x|. */
__device__ __forceinline__ void vw_split_tf32(float x, uint32_t &big, uint32_t &small) {
    big = vw_cvt_tf32(x);
    small = vw_cvt_tf32(x - vw_bit_cast<float>(big));
}

/* BF16x3 operand split: x = hi + lo + r, |r| <= 2^-18 |x|. */
__device__ __forceinline__ void vw_split_bf16(float x, __nv_bfloat16 &hi, __nv_bfloat16 &lo) {
    hi = __float2bfloat16_rn(x);
    lo = __float2bfloat16_rn(x - __bfloat162float(hi));
}

/* FP16x3 operand split: x = hi + lo + r (above). */
__device__ __forceinline__ void vw_split_f16(float x, __half &hi, __half &lo) {
    hi = __float2half_rn(x);
    lo = __float2half_rn(x - __half2float(hi));
}

/* The register holding two BF16 elements: k0 (the lower k) in the low half. */
__device__ __forceinline__ uint32_t vw_pack_bf16(__nv_bfloat16 k0, __nv_bfloat16 k1) {
    return (uint32_t)__bfloat16_as_ushort(k0) | (uint32_t)__bfloat16_as_ushort(k1) << 16;
}
__device__ __forceinline__ uint32_t vw_pack_f16(__half k0, __half k1) {
    return (uint32_t)__half_as_ushort(k0) | (uint32_t)__half_as_ushort(k1) << 16;
}

/* The BF16x3 split of two values straight into the hi and lo registers of a
 * fragment (x0 the lower k): the pair conversions the hardware has. */
__device__ __forceinline__ void vw_split2_bf16(float x0, float x1, uint32_t &hi, uint32_t &lo) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
    const float2 hf = __bfloat1622float2(h);
    const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - hf.x, x1 - hf.y);
    hi = vw_bit_cast<uint32_t>(h), lo = vw_bit_cast<uint32_t>(l);
}

/* The three instructions, and the emulator's names for them. */
enum { VW_MMA_TF32 = 1, VW_MMA_BF16 = 2, VW_MMA_F16 = 3 };
#ifdef VW_CUDA_EMU
static_assert((int)VW_MMA_TF32 == (int)VW_EMU_MMA_TF32_M16N8K8 &&
                  (int)VW_MMA_BF16 == (int)VW_EMU_MMA_BF16_M16N8K16 &&
                  (int)VW_MMA_F16 == (int)VW_EMU_MMA_F16_M16N8K16,
              "the emulator's kinds");
#endif

/* d = A B + d: VW_MMA_TF32 mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32,
 * VW_MMA_BF16 mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32,
 * VW_MMA_F16 mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32. */
template <int KIND>
__device__ __forceinline__ void vw_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#ifdef VW_CUDA_EMU
    vw_emu_mma(KIND, d, a, b);
#else
#define VW_MMA_ASM(instr)                                                                          \
    asm volatile(instr " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                    \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
    if constexpr (KIND == VW_MMA_TF32)
        VW_MMA_ASM("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    else if constexpr (KIND == VW_MMA_BF16)
        VW_MMA_ASM("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    else
        VW_MMA_ASM("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
#undef VW_MMA_ASM
#endif
}

/* d += A B at FP32 grade from split operands (3xTF32: big/small; BF16x3,
 * FP16x3: hi/lo), the small products first. */
template <int KIND>
__device__ __forceinline__ void vw_mma_x3(float d[4], const uint32_t a_hi[4],
                                          const uint32_t a_lo[4], const uint32_t b_hi[2],
                                          const uint32_t b_lo[2]) {
    vw_mma<KIND>(d, a_lo, b_hi);
    vw_mma<KIND>(d, a_hi, b_lo);
    vw_mma<KIND>(d, a_hi, b_hi);
}

/* The layout tables above as (row, col) of register i of lane `lane`; for BF16
 * (and FP16, the same tables) A/B the element in half h. */
struct vw_rc {
    int r, c;
};
__device__ __forceinline__ vw_rc vw_mma_tf32_a_pos(int lane, int i) {
    return {(lane >> 2) + 8 * (i & 1), (lane & 3) + 4 * (i >> 1)};
}
__device__ __forceinline__ vw_rc vw_mma_tf32_b_pos(int lane, int i) {
    return {(lane & 3) + 4 * i, lane >> 2};
}
__device__ __forceinline__ vw_rc vw_mma_bf16_a_pos(int lane, int i, int h) {
    return {(lane >> 2) + 8 * (i & 1), 2 * (lane & 3) + 8 * (i >> 1) + h};
}
__device__ __forceinline__ vw_rc vw_mma_bf16_b_pos(int lane, int i, int h) {
    return {2 * (lane & 3) + 8 * i + h, lane >> 2};
}
__device__ __forceinline__ vw_rc vw_mma_c_pos(int lane, int i) {
    return {(lane >> 2) + 8 * (i >> 1), 2 * (lane & 3) + (i & 1)};
}
#endif

#endif
