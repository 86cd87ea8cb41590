/* planes.cuh — the mixer operands split once (issue 31 item 1): the format in
 * which a producing kernel writes an operand of the tensor-core mixers so that
 * their inner loops load fragments and never convert. Internal to cuda/
 * (device code). docs/cuda.md "Operand planes" describes it for the kernels
 * that will consume it.
 *
 * Format. An operand x (FP32, any layout) gets two planes of BF16 at the same
 * element index as x itself — same rows, heads, columns and row stride in
 * elements — hi = bf16(x) (round to nearest even) and lo = bf16(x - hi): x =
 * hi + lo + r with |r| <= 2^-18 |x| (mma.cuh's BF16x3 split, bit for bit the
 * split vw_split_bf16 makes in a register). A product a·b then runs at FP32
 * grade on m16n8k16 as hi_a·hi_b + hi_a·lo_b + lo_a·hi_b (vw_mma_x3<BF16>, the
 * small products first), dropping ~3 * 2^-18 |a b| per product; a plain BF16
 * product reads hi alone. A plane row of 8 consecutive elements is 16 bytes:
 * with the operand's row stride a multiple of 8 elements and the planes
 * 16-byte aligned, ldmatrix (ldst.cuh) loads fragments straight from plane
 * tiles that cp.async copied into shared memory. The same struct and split as
 * the GEMM input planes (kernels.cuh vw_cu_planes, vw_put_planes): one format.
 *
 * Producers (each writes the planes of its own FP32 output, after its last
 * change to it, when given planes; NULL: none): gdn_inputs_k (q̂, k̂ after the
 * L2 norm and the q scale, v after the conv: vw_cu_gdn_in.qkv), attn_prep_k
 * (Q, K after the norm and RoPE: vw_cu_attn_prep.q, .k). Attention's V comes
 * straight from the projection GEMM and has no elementwise producer; its
 * consumer splits it once per tile. The executor does not ask for planes yet:
 * no mixer consumes them (the rewrites of attention_tc.cu and delta_rule_tc.cu
 * will, with arena room for them).
 */
#ifndef VW_PLANES_CUH
#define VW_PLANES_CUH

#include "kernels.cuh"

#if defined(__CUDACC__) || defined(VW_CUDA_EMU)
/* Element i of p from the operand's final value v (no-op when p.hi is NULL). */
__device__ __forceinline__ void vw_planes_put(const vw_cu_planes &p, size_t i, float v) {
    if (p.hi)
        vw_put_planes(p.hi, p.lo, i, v);
}
#endif

#endif
