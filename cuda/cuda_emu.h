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
 * Tensor cores: mma.sync (cuda/mma.cuh) is a warp collective like the
 * shuffles: every lane deposits its A/B fragments, all 32 arrive, and each
 * lane rebuilds the elements it needs by the PTX ISA fragment layouts and
 * computes its four outputs: exact products (BF16/TF32 products are exact in
 * FP32, as on the hardware), the k products plus C summed in double and
 * rounded once to FP32. The hardware's accumulation is not IEEE (addends
 * aligned to the largest exponent and truncated, Fasi et al. 2021), so it can
 * differ from the emulator by an ulp or two of the largest addend per MMA;
 * tests with mixed-magnitude data must allow that, small-integer data is
 * exact on both. VW_CUDA_EMU_MMA=truncate (read at each launch) sums that way
 * instead: every addend truncated to 24 bits below the largest, the sum
 * truncated to FP32 (a pessimistic model of the hardware). ldmatrix is a
 * warp collective too; cp.async copies are deferred to the issuing thread's
 * wait, their destination NaN until then (below).
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
#include <stdint.h>
#include <functional>
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

/* mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (TF32_M16N8K8),
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (BF16_M16N8K16) and
 * mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 (F16_M16N8K16):
 * d (this lane's 4 accumulators) = A B + d, with a[4] and b[2] this lane's
 * fragment registers (TF32: the low 13 bits are ignored; BF16, F16: two
 * elements per register, the lower k in the low half). All 32 lanes of the
 * warp must call it with the same kind, as the same (n-th) MMA of each lane
 * (.aligned). */
enum { VW_EMU_MMA_TF32_M16N8K8 = 1, VW_EMU_MMA_BF16_M16N8K16 = 2, VW_EMU_MMA_F16_M16N8K16 = 3 };
void vw_emu_mma(int kind, float d[4], const uint32_t a[4], const uint32_t b[2]);

/* ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 (cuda/ldst.cuh):
 * a warp collective like mma.sync. Lane l gives `row`, the address of row
 * l % 8 of matrix l / 8 (only lanes < 8 n count), 16 bytes, 16-byte aligned;
 * r[i] (i < n) gets matrix i's (row g, cols 2t, 2t+1), or with trans (rows 2t,
 * 2t+1, col g), g = l >> 2, t = l & 3, the lower index in the low half. The
 * first lane to resume reads every lane's elements, so no lane's later stores
 * reach what the instruction loaded, as on the hardware. */
void vw_emu_ldmatrix(int n, int trans, uint32_t *r, const void *row);
/* cp.async (cuda/ldst.cuh), per thread: the source's first src_bytes are read
 * at the issue, the destination (cp_bytes) is filled with 0xFF bytes then and
 * gets the data (zero-filled past src_bytes) at the issuing thread's covering
 * wait: commit closes its pending copies into a group; wait(n) completes all
 * but the n most recent groups (n < 0: commit, then all). Alignment, sizes
 * (4, 8, 16; cg: 16) and copies left at thread exit are reported. */
void vw_emu_cp_async(void *dst, const void *src, int cp_bytes, int src_bytes, int cg);
void vw_emu_cp_async_commit(void);
void vw_emu_cp_async_wait(int n);

/* Runs body(ctx) as every thread of every block of the grid of kernel fn; a
 * launch with more than 48 KiB of dynamic shared memory needs fn opted in to
 * at least that much (cudaFuncSetAttribute MaxDynamicSharedMemorySize), as on
 * the hardware, else it is reported. */
void vw_emu_run_grid(const void *fn, dim3 grid, dim3 block, size_t smem, void (*body)(void *),
                     void *ctx);

/* Stream capture (cudaStreamBeginCapture .. cudaStreamEndCapture): while the
 * host captures, kernel launches, cuBLAS GEMMs and cudaMemcpyAsync become the
 * graph's nodes (arguments by value, buffers by address), and each
 * cudaGraphLaunch of its instance runs them in order; a call that would wait
 * or act at once (cudaMemcpy, cudaMemset, a synchronize, an event record,
 * cudaMalloc, cudaFree) invalidates the capture and fails, as in CUDA's
 * thread-local capture mode. */
bool vw_emu_capturing(void);
void vw_emu_capture(std::function<void()> node);
/* A call that cannot be captured: true (and the capture fails, as in the
 * thread-local mode) while capturing, else false. */
bool vw_emu_capture_breaks(void);
/* The tally behind vw_cuda_emu_calls_read (ops_cuda.h), for emu_rt.cu. */
struct vw_cuda_emu_calls *vw_emu_calls(void);

/* kernel<<<grid, block, smem>>>(args...) on the emulator, or its node. */
template <typename... KArgs, typename... Args>
void vw_emu_launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, Args... args) {
    using tuple = std::tuple<std::decay_t<KArgs>...>;
    auto run = [k, grid, block, smem](tuple &t) {
        auto body = [&]() { std::apply(k, t); }; // by-value parameters: each thread gets copies
        vw_emu_run_grid((const void *)k, grid, block, smem,
                        [](void *c) { (*static_cast<decltype(body) *>(c))(); }, &body);
    };
    tuple t(args...);
    if (vw_emu_capturing()) {
        vw_emu_capture([run, t]() mutable { run(t); });
        return;
    }
    run(t);
}

#endif
