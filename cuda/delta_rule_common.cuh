/* delta_rule_common.cuh — what the delta rule's two kernel sets share: the
 * FP32 SIMT kernels (delta_rule.cu: the fp32 precision and the fallback) and
 * the tensor-core kernels (delta_rule_tc.cu: bf16 and bf16x2). The scratch
 * layout, the chunk's gate cumsum and the FP32 triangular inverse, which both
 * run unchanged, so the two paths differ only in how the products are summed.
 * Internal to those two files (device code; each includes its own copy).
 * Thread-safety: device functions of one block, called by all its threads
 * (barriers inside). */
#ifndef VW_DELTA_RULE_COMMON_CUH
#define VW_DELTA_RULE_COMMON_CUH

#include "kernels.cuh"

namespace vw_gdn {

constexpr int CH = VW_GDN_CHUNK; // rows per chunk
static_assert(CH == 64, "the scan, the inverse and the tiles assume 64-row chunks");

// The scratch of one call (kernels.cuh vw_cu_gdn.ws), rows = the call's rows:
//   w   [Hv][rows][dk]  W' (FP32; planes rows in the tensor-core kernels)
//   u   [Hv][rows][dv]  U' (FP32), then V_new (FP32; planes rows on tensor cores)
//   qp  [Hv][rows][dk]  q̂ as planes rows (tensor cores; Hk heads used)
//   kp  [Hv][rows][dk]  k̂ as planes rows (tensor cores; Hk heads used)
//   st  [rows/64 + 1][Hv][dv][dk]  the state entering each chunk but a
//       sequence's first, as planes rows of Sᵀ (tensor cores), at slot
//       (first row - 1) / 64: the 64 rows before such a chunk are its
//       sequence's, so slots never collide
//   tab [rows] int      per chunk, at its first row: where its entering state
//       is (tensor cores: ENTER_* in delta_rule_tc.cuh)
//   c   [Hv][rows]      the gate cumsum, last, so every region above starts
//       16-byte aligned when dk and dv are multiples of 4.
// The FP32 SIMT kernels use w, u and c only.
struct ws_view {
    float *c, *w, *u, *qp, *kp, *st;
    int *tab;
};

__host__ __device__ inline size_t ws_slots(size_t rows) {
    return rows / CH + 1;
}

__device__ __forceinline__ ws_view ws_split(float *ws, size_t rows, size_t Hv, size_t dk,
                                            size_t dv) {
    ws_view v;
    v.w = ws;
    v.u = v.w + Hv * rows * dk;
    v.qp = v.u + Hv * rows * dv;
    v.kp = v.qp + Hv * rows * dk;
    v.st = v.kp + Hv * rows * dk;
    v.tab = (int *)(v.st + ws_slots(rows) * Hv * dv * dk);
    v.c = (float *)(v.tab + rows);
    return v;
}

__device__ __forceinline__ int min_i(int a, int b) {
    return a < b ? a : b;
}

// c = inclusive cumsum of the chunk's g (rows >= n add 0, so they repeat
// c_last). Warps 0 and 1 each scan 32 rows (Hillis-Steele over shuffles, a
// fixed tree), then warp 1 adds warp 0's total (tot: 4 floats). Also stages
// bet = beta, sb = beta e^c and stores c to the scratch. Every thread calls
// it (barriers inside); blockDim >= CH.
__device__ __forceinline__ void chunk_cumsum(const vw_cu_gdn &a, const ws_view &w, int r0, int n,
                                             size_t h, float *c, float *bet, float *sb,
                                             float *tot) {
    const int tid = threadIdx.x, lane = tid & 31;
    float x = 0.0f;
    if (tid < CH) {
        const size_t r = (size_t)r0 + tid;
        x = tid < n ? a.g[r * a.Hv + h] : 0.0f;
        bet[tid] = tid < n ? a.beta[r * a.Hv + h] : 0.0f;
        for (int off = 1; off < 32; off <<= 1) {
            const float y = __shfl_sync(0xffffffffu, x, lane >= off ? lane - off : lane);
            if (lane >= off)
                x += y;
        }
        if (lane == 31)
            tot[tid >> 5] = x;
    }
    __syncthreads();
    if (tid < CH) {
        if (tid >= 32)
            x += tot[0];
        c[tid] = x;
        sb[tid] = bet[tid] * expf(x); // CPU: b * ec, then times K
        if (tid < n)
            w.c[h * a.rows + (size_t)r0 + tid] = x;
    }
    __syncthreads();
}

// A = (I + L)^-1 (row stride ld) for L strictly lower (stride ld; zero rows
// and columns >= n give identity rows there), in FP32 on the CUDA cores
// (spec §4.4). (I + L) A = I by blocks of 16: the diagonal blocks A_II by
// forward substitution (one thread per column), then for distance
// d = I - J = 1, 2, 3: T = sum_{K=J}^{I-1} L_IK A_KJ, A_IJ = -A_II T
// (T: 3 * 256 floats). Starts and ends with every thread past a barrier.
__device__ __forceinline__ void chunk_inverse(const float *L, float *A, float *T, int ld) {
    const int tid = threadIdx.x;
    for (int idx = tid; idx < CH * ld; idx += blockDim.x)
        A[idx] = 0.0f;
    __syncthreads();
    if (tid < CH) {
        const int o = (tid >> 4) * 16, col = tid & 15;
        float *Ad = A + o * ld + o;
        const float *Ld = L + o * ld + o;
        Ad[col * ld + col] = 1.0f;
        for (int r = col + 1; r < 16; r++) {
            float acc = 0.0f;
            for (int k = col; k < r; k++)
                acc = fmaf(Ld[r * ld + k], Ad[k * ld + col], acc);
            Ad[r * ld + col] = -acc;
        }
    }
    __syncthreads();
    for (int dist = 1; dist < 4; dist++) {
        const int items = (4 - dist) * 256;
        for (int e = tid; e < items; e += blockDim.x) {
            const int bj = e >> 8, r = (e >> 4) & 15, cc = e & 15, bi = bj + dist;
            float acc = 0.0f;
            for (int k = 16 * bj; k < 16 * bi; k++)
                acc = fmaf(L[(16 * bi + r) * ld + k], A[k * ld + 16 * bj + cc], acc);
            T[e] = acc;
        }
        __syncthreads();
        for (int e = tid; e < items; e += blockDim.x) {
            const int bj = e >> 8, r = (e >> 4) & 15, cc = e & 15, bi = bj + dist;
            const float *Aii = A + (16 * bi + r) * ld + 16 * bi;
            float acc = 0.0f;
            for (int k = 0; k <= r; k++)
                acc = fmaf(Aii[k], T[(bj << 8) + k * 16 + cc], acc);
            A[(16 * bi + r) * ld + 16 * bj + cc] = -acc;
        }
        __syncthreads();
    }
}

// A kernel, its dynamic shared memory and its name (kernels.cuh).
using kernel_smem = vw_cu_kernel_smem;

} // namespace vw_gdn

#endif
