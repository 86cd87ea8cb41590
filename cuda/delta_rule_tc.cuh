/* delta_rule_tc.cuh — what the tensor-core delta-rule kernels share
 * (delta_rule_tc.cu: prep and output; delta_rule_tc_state.cu: the state
 * pass): sizes, the entering-state codes of the scratch's tab, and the
 * cp.async row copies that stage planes tiles. Internal to those two files
 * (device code). Thread-safety: device functions called by every thread of
 * a block, or of a warp where named so. */
#ifndef VW_DELTA_RULE_TC_CUH
#define VW_DELTA_RULE_TC_CUH

#include "delta_rule_common.cuh"
#include "ldst.cuh"
#include "planes.cuh"

namespace vw_gdn_tc {

using vw_gdn::CH;
constexpr int MAX_DK = 128; // widest dk taken: the state pass's tiles (sm_89's opt-in)
constexpr int MAX_DV = 256;
constexpr int KC = 32; // summed dims per accumulation chain (2 k-steps, 6 MMAs)

// The planes-row stride of a tile of n columns in shared memory (planes.cuh).
__host__ __device__ constexpr int pl_ld(int n) {
    return 4 * n + 16;
}

// tab[first row of a chunk], written by the state pass, read by the output
// kernel: the state entering the chunk is st's slot (first row - 1) / 64
// (ENTER_SLOT), zero (ENTER_ZERO), or for a sequence's first chunk with an
// initial state, FP32 pass[code & 1].init at slot code >> 1 (code >= 0).
enum { ENTER_SLOT = -1, ENTER_ZERO = -2 };

__device__ __forceinline__ int lane_id() {
    return threadIdx.x & 31;
}

// The general case of cp_rows below (a thread's piece moves from row to row):
// out of line, as only dk = 96 takes it.
#ifdef VW_CUDA_EMU
#define VW_GDN_NOINLINE
#else
#define VW_GDN_NOINLINE __noinline__
#endif
static __device__ VW_GDN_NOINLINE void cp_rows_any(char *dst, int ldd, const char *src, size_t lds,
                                                   int nrows, int valid, int per, int me,
                                                   int count) {
    const int di = count / per, dj = count - di * per;
    int i = me / per, j = me - i * per; // piece j of row i
    for (; i < nrows; i += di, j += dj) {
        if (j >= per)
            j -= per, i++;
        if (i >= nrows)
            break;
        const bool in = i < valid;
        vw_cp_async_cg(dst + i * ldd + 16 * j, src + (in ? (size_t)i * lds + 16 * j : 0),
                       in ? 16 : 0);
    }
}

// dst rows i < nrows (stride ldd bytes) = src rows (stride lds bytes, row
// bytes bytes, a multiple of 16) for i < valid, zeros for the others, by
// cp.async 16-byte pieces, threads `me` of `count` of the caller's group (a
// warp: lane, 32; the block: threadIdx.x, blockDim.x). The caller commits and
// waits.
__device__ __forceinline__ void cp_rows(void *dst, int ldd, const void *src, size_t lds, int nrows,
                                        int valid, int bytes, int me, int count) {
    const int per = bytes / 16;
    if (count % per) {
        cp_rows_any((char *)dst, ldd, (const char *)src, lds, nrows, valid, per, me, count);
        return;
    }
    // each thread keeps its column
    const int di = count / per, j = me % per, nv = valid < nrows ? valid : nrows;
    int i = me / per;
    char *d = (char *)dst + 16 * j + i * ldd;
    const char *s = (const char *)src + 16 * j + (size_t)i * lds;
    const int dstep = di * ldd;
    const size_t sstep = (size_t)di * lds;
#pragma unroll 4
    for (; i < nv; i += di, d += dstep, s += sstep)
        vw_cp_async_cg(d, s, 16);
    for (; i < nrows; i += di, d += dstep) // zero rows: nothing is read
        vw_cp_async_cg(d, (const char *)src, 0);
}

// dst[i] = src[i] for i < valid, 0 for valid <= i < n: 4-byte cp.async.
__device__ __forceinline__ void cp_words(float *dst, const float *src, int n, int valid, int me,
                                         int count) {
    for (int i = me; i < n; i += count)
        vw_cp_async<4>(dst + i, src + (i < valid ? i : 0), i < valid ? 4 : 0);
}

} // namespace vw_gdn_tc

#endif
