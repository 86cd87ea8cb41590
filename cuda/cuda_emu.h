/* cuda_emu.h — a CPU emulation of the CUDA kernel-language subset cuda/ uses,
 * so the kernels and the executor run (slowly, exactly as written) on a
 * machine without a GPU. Included by cuda_common.cuh only when VW_CUDA_EMU is
 * defined, i.e. in the standalone emulation build (`cmake -S cuda ...`, see
 * cuda/CMakeLists.txt and docs/cuda.md); the real build never sees it.
 *
 * What it models: one block at a time; every thread is a fiber; warps are
 * 32 consecutive threads. __syncthreads waits for every live thread of the
 * block (exited threads count as arrived, as on the GPU); __syncwarp and the
 * shuffles wait for the 32 lanes of the warp, and a lane that exits while its
 * warp waits is reported as an error, as is a warp split between a warp
 * barrier and __syncthreads. Function-static `__shared__` arrays are the
 * block's shared memory (blocks never overlap); dynamic shared memory and
 * cudaMalloc memory start filled with 0xFF bytes (NaN floats), so reading
 * what no one wrote shows up in the results. cuBLAS GemmEx is OpenBLAS sgemm
 * on FP32 copies of its operands. A launch whose block 0 reaches no barrier or
 * shuffle runs its other blocks as plain calls (fast); a barrier there aborts.
 * What it does not model: timing, concurrency between blocks, memory
 * coherence races, device limits other than the shared-memory opt-in.
 * Errors inside kernels abort the process with the block and thread named.
 * Thread-safety: one host thread at a time (tests fork per test).
 */
#ifndef VW_CUDA_EMU_H
#define VW_CUDA_EMU_H

#ifndef VW_CUDA_EMU
#error "cuda_emu.h belongs to the VW_CUDA_EMU build only"
#endif

#include <cuda_runtime.h>
#include <stddef.h>
#include <tuple>
#include <type_traits>

#undef __shared__
#define __shared__ static /* blocks run one at a time: statics are the block's smem */
#define __launch_bounds__(...)

uint3 vw_emu_thread_idx(void);
uint3 vw_emu_block_idx(void);
dim3 vw_emu_block_dim(void);
dim3 vw_emu_grid_dim(void);
#define threadIdx (vw_emu_thread_idx())
#define blockIdx (vw_emu_block_idx())
#define blockDim (vw_emu_block_dim())
#define gridDim (vw_emu_grid_dim())

void __syncthreads(void);
void __syncwarp(unsigned mask = 0xffffffffu);
float __shfl_xor_sync(unsigned mask, float v, int lane_mask);
double __shfl_xor_sync(unsigned mask, double v, int lane_mask);
float __shfl_sync(unsigned mask, float v, int src_lane);
double __shfl_sync(unsigned mask, double v, int src_lane);
void *vw_emu_dyn_smem(void);

/* Runs body(ctx) as every thread of every block of the grid. */
void vw_emu_run_grid(dim3 grid, dim3 block, size_t smem, void (*body)(void *), void *ctx);

/* kernel<<<grid, block, smem>>>(args...) on the emulator. */
template <typename... KArgs, typename... Args>
void vw_emu_launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, Args... args) {
    std::tuple<std::decay_t<KArgs>...> t(args...);
    auto body = [&]() { std::apply(k, t); }; // by-value parameters: each thread gets copies
    vw_emu_run_grid(
        grid, block, smem, [](void *c) { (*static_cast<decltype(body) *>(c))(); }, &body);
}

#endif
