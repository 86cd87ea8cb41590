/* cuda_common.cuh — checked CUDA/cuBLAS calls and the small device helpers
 * every kernel file shares. Internal to cuda/ (C++ only).
 *
 * VW_CUDA_TRY(err, call) / VW_CUBLAS_TRY(err, call) evaluate the call and
 * return VW_OK, or fill *err with the stringified call, the CUDA/cuBLAS
 * error name and the file:line, and return VW_ECUDA (docs/style.md). They do not
 * jump: callers write `if (st == VW_OK) st = VW_CUDA_TRY(...)` or goto done.
 * VW_CUDA_LAUNCHED(err, "name") is the cudaGetLastError check after every
 * kernel launch. Thread-safety: pure functions.
 */
#ifndef VW_CUDA_COMMON_CUH
#define VW_CUDA_COMMON_CUH

#ifdef VW_CUDA_EMU
#include "cuda_emu.h" /* CPU emulation of the kernel language (cuda/emu.cu) */
#endif
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

static inline vw_status vw_cuda_check(cudaError_t e, const char *what, const char *file, int line,
                                      vw_err *err) {
    if (e == cudaSuccess)
        return VW_OK;
    return vw_err_set(err, VW_ECUDA, "cuda_error", file, line, "%s: %s (%s)", what,
                      cudaGetErrorName(e), cudaGetErrorString(e));
}

static inline vw_status vw_cublas_check(cublasStatus_t s, const char *what, const char *file,
                                        int line, vw_err *err) {
    if (s == CUBLAS_STATUS_SUCCESS)
        return VW_OK;
    return vw_err_set(err, VW_ECUDA, "cublas_error", file, line, "%s: %s (%s)", what,
                      cublasGetStatusName(s), cublasGetStatusString(s));
}

#define VW_CUDA_TRY(err, call) vw_cuda_check((call), #call, __FILE__, __LINE__, (err))
#define VW_CUBLAS_TRY(err, call) vw_cublas_check((call), #call, __FILE__, __LINE__, (err))
#define VW_CUDA_LAUNCHED(err, name)                                                                \
    vw_cuda_check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__, (err))

/* Launches kernel k on `grid` x `block` with `smem` dynamic shared bytes on
 * stream s, then checks the launch. Under VW_CUDA_EMU the same kernel runs on
 * the CPU emulator (cuda_emu.h); nothing else differs. */
template <typename... KArgs, typename... Args>
static inline vw_status vw_launch_at(const char *file, int line, const char *name,
                                     void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                     cudaStream_t s, vw_err *err, Args... args) {
#ifdef VW_CUDA_EMU
    (void)s;
    vw_emu_launch(k, grid, block, smem, args...);
#else
    k<<<grid, block, smem, s>>>(args...);
#endif
    return vw_cuda_check(cudaGetLastError(), name, file, line, err);
}
#define VW_LAUNCH(err, kernel, grid, block, smem, stream, ...)                                     \
    vw_launch_at(__FILE__, __LINE__, "launch of " #kernel, kernel, grid, block, smem, stream, err, \
                 __VA_ARGS__)

/* The dynamic shared memory of a kernel: `VW_DYN_SMEM(float, sm);`. */
#ifdef VW_CUDA_EMU
#define VW_DYN_SMEM(type, name) type *name = (type *)vw_emu_dyn_smem()
#else
#define VW_DYN_SMEM(type, name) extern __shared__ type name[]
#endif

/* Grid size for n independent items of `per_block` each; at least 1 so an
 * empty launch is still a valid one (kernels bound-check). */
static inline unsigned vw_blocks_for(size_t n, unsigned per_block) {
    size_t b = (n + per_block - 1) / per_block;
    return (unsigned)(b ? b : 1);
}

/* Opts a kernel into `bytes` of dynamic shared memory (above the 48 KiB
 * default) after checking the device allows it. */
vw_status vw_cuda_smem_optin(const void *kernel, size_t bytes, const char *name, vw_err *err);

#if defined(__CUDACC__) || defined(VW_CUDA_EMU)
/* Warp sums by xor butterfly: at each step lane x adds v[x] + v[x^s] and
 * lane x^s adds the same two values, so every lane ends with the bitwise
 * same result, and the order never depends on the data or the launch. */
__device__ __forceinline__ float vw_warp_sum(float v) {
    for (int s = 16; s > 0; s >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

__device__ __forceinline__ double vw_warp_sum_d(double v) {
    for (int s = 16; s > 0; s >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

__device__ __forceinline__ float vw_warp_max(float v) {
    for (int s = 16; s > 0; s >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, s));
    return v;
}

/* ops_cpu.h's scalar functions, same formulas (expf/log1pf, not the fast
 * intrinsics). */
__device__ __forceinline__ float vw_d_sigmoid(float x) {
    return 1.0f / (1.0f + expf(-x));
}
__device__ __forceinline__ float vw_d_silu(float x) {
    return x / (1.0f + expf(-x));
}
__device__ __forceinline__ float vw_d_softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

/* Element i of a GEMM input's BF16 planes (kernels.cuh vw_cu_planes): hi =
 * bf16(v); lo = bf16(v - hi) when lo is given (BF16X2). */
__device__ __forceinline__ void vw_put_planes(__nv_bfloat16 *hi, __nv_bfloat16 *lo, size_t i,
                                              float v) {
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    hi[i] = h;
    if (lo)
        lo[i] = __float2bfloat16_rn(v - __bfloat162float(h));
}

__device__ __forceinline__ float vw_load_f(const float *p) {
    return *p;
}
__device__ __forceinline__ float vw_load_f(const __nv_bfloat16 *p) {
    return __bfloat162float(*p);
}
#endif

#endif
