/* ldst.cuh — the loads tensor-core kernels feed their MMAs with: ldmatrix
 * (shared memory -> mma.sync fragments, one instruction per warp) and cp.async
 * (global -> shared memory without a register round trip, in groups a thread
 * waits for). Inline PTX under nvcc, the CPU emulator's models under
 * VW_CUDA_EMU (cuda_emu.h). Internal to cuda/ (device code, sm_80 and newer).
 *
 * ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 (vw_ldsm<N, T>):
 * a warp collective (all 32 lanes, converged). Loads N 8x8 matrices of 16-bit
 * elements from shared memory. Lane l gives the address of row l % 8 of
 * matrix l / 8 (lanes 0-7 for x1, 0-15 for x2, all 32 for x4; the other
 * lanes' addresses are ignored); a row is 16 contiguous bytes, 16-byte
 * aligned, rows anywhere. Register i of lane l (g = l >> 2, t = l & 3) then
 * holds matrix i's elements
 *   plain:  (row g, cols 2t, 2t + 1)     — the A/B fragment layouts of mma.cuh
 *   .trans: (rows 2t, 2t + 1, col g)     — the transposed matrix's
 * the lower column (row) in the low 16 bits. 32-bit data (FP32/TF32 tiles)
 * loads with the plain form too: a 16-byte row is 4 floats and lane l gets
 * element (row g, col t), which is mma.m16n8k8 .tf32's layout; .trans has no
 * 32-bit meaning. The helpers below give the per-lane row address for the
 * fragments of mma.cuh from row-major tiles (ld in elements):
 *   vw_ldsm_a_row: A of m16n8k16 BF16 (16 x 16) or m16n8k8 TF32 (16 x 8), x4;
 *   vw_ldsm_bt_row: B of either from Bᵀ stored [n][k] (8 x 16 / 8 x 8), x2;
 *   vw_ldsm_b_row: B of m16n8k16 BF16 from B stored [k][n] (16 x 8), x2 .trans.
 *
 * cp.async (vw_cp_async<BYTES>, vw_cp_async_cg, vw_cp_async_commit,
 * vw_cp_async_wait<N>): per thread. Copies BYTES (4, 8 or 16; .cg: 16 only,
 * bypassing L1) from global to shared memory, both aligned to BYTES; only the
 * first src_bytes (0..BYTES) are read and the rest of the destination is
 * zero-filled (src_bytes = 0 reads nothing: a zero row past a tile's end, from
 * any valid address). The copy lands at some point before the issuing thread's
 * wait that covers it: commit closes the thread's pending copies into a
 * group; wait<N> returns when at most the N most recent groups are still in
 * flight (wait<0>: commit, then wait for everything: cp.async.wait_all). The
 * destination may be read only after that wait by the issuing thread, and by
 * the others after a barrier that follows it. The emulator makes a missing
 * wait visible: the destination is filled with 0xFF bytes (NaN) at the issue
 * and the data lands at the covering wait; a thread that ends with copies not
 * waited for is an error.
 */
#ifndef VW_LDST_CUH
#define VW_LDST_CUH

#include "cuda_common.cuh"

#if defined(__CUDACC__) || defined(VW_CUDA_EMU)

#ifndef VW_CUDA_EMU
/* The shared-state-space address of a generic pointer into shared memory. */
__device__ __forceinline__ uint32_t vw_smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
#endif

/* ldmatrix .x1/.x2/.x4 (N = 1, 2, 4), .trans when TRANS; r[N]. */
template <int N, bool TRANS = false>
__device__ __forceinline__ void vw_ldsm(uint32_t r[N], const void *row) {
    static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
#ifdef VW_CUDA_EMU
    vw_emu_ldmatrix(N, TRANS, r, row);
#else
    const uint32_t a = vw_smem_u32(row);
    if constexpr (N == 1 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(a));
    else if constexpr (N == 1)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
                     : "=r"(r[0])
                     : "r"(a));
    else if constexpr (N == 2 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(a));
    else if constexpr (N == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
                     : "=r"(r[0]), "=r"(r[1])
                     : "r"(a));
    else if constexpr (!TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(a));
#endif
}

/* Row addresses for the fragments of mma.cuh from row-major tiles of element
 * type T (__nv_bfloat16 for m16n8k16 BF16, float for m16n8k8 TF32), each
 * pointing at the fragment's first element; a 16-byte span = 8 BF16 or 4
 * floats, so the same formulas serve both.
 * A [16][K-step], x4: lane l reads row l % 16 at column (l / 16) * span;
 * registers a[0..3] as mma.cuh's a[i]. */
template <typename T>
__device__ __forceinline__ const T *vw_ldsm_a_row(const T *A, int ld, int lane) {
    return A + (lane & 15) * ld + (lane >> 4) * (16 / (int)sizeof(T));
}
/* Bᵀ [8 n][K-step k], x2: lane l (< 16) reads n-row l % 8 at k = (l / 8) *
 * span; registers b[0..1] as mma.cuh's b[i]. */
template <typename T>
__device__ __forceinline__ const T *vw_ldsm_bt_row(const T *Bt, int ld, int lane) {
    return Bt + (lane & 7) * ld + ((lane >> 3) & 1) * (16 / (int)sizeof(T));
}
/* B [16 k][8 n] BF16 (k-major), x2 .trans: lane l (< 16) reads k-row l. */
__device__ __forceinline__ const __nv_bfloat16 *vw_ldsm_b_row(const __nv_bfloat16 *B, int ld,
                                                              int lane) {
    return B + (lane & 15) * ld;
}

/* cp.async.ca.shared.global [dst], [src], BYTES, src_bytes. */
template <int BYTES>
__device__ __forceinline__ void vw_cp_async(void *dst, const void *src, int src_bytes = BYTES) {
    static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
#ifdef VW_CUDA_EMU
    vw_emu_cp_async(dst, src, BYTES, src_bytes, 0);
#else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(vw_smem_u32(dst)), "l"(src),
                 "n"(BYTES), "r"(src_bytes)
                 : "memory");
#endif
}

/* cp.async.cg.shared.global [dst], [src], 16, src_bytes (L2 only). */
__device__ __forceinline__ void vw_cp_async_cg(void *dst, const void *src, int src_bytes = 16) {
#ifdef VW_CUDA_EMU
    vw_emu_cp_async(dst, src, 16, src_bytes, 1);
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(vw_smem_u32(dst)), "l"(src),
                 "r"(src_bytes)
                 : "memory");
#endif
}

/* cp.async.commit_group. */
__device__ __forceinline__ void vw_cp_async_commit() {
#ifdef VW_CUDA_EMU
    vw_emu_cp_async_commit();
#else
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/* cp.async.wait_group N (N >= 0), or cp.async.wait_all (N < 0). */
template <int N> __device__ __forceinline__ void vw_cp_async_wait() {
#ifdef VW_CUDA_EMU
    vw_emu_cp_async_wait(N);
#else
    if constexpr (N < 0)
        asm volatile("cp.async.wait_all;" ::: "memory");
    else
        asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

#endif

#endif
