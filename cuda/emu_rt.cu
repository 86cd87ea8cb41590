// emu_rt.cu — the CPU emulator's events and cuBLAS subset (cuda_emu.h; the
// rest of the emulator is emu.cu): CUDA events on the host's monotonic clock,
// and cublasGemmEx through OpenBLAS sgemm on FP32 copies of the operands.
// Compiled only in the standalone VW_CUDA_EMU build (cuda/CMakeLists.txt
// excludes emu*.cu from the real one).
#include <cblas.h>
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <new>
#include <time.h>

#include "cuda_emu.h"
#include "ops_cuda.h"

// Events: the emulator runs every launch and copy to completion before it
// returns, so an event recorded on a stream completes at once and its time is
// the host's monotonic clock then (elapsed times measure the emulator, not a
// GPU); synchronizing on one never waits.
struct CUevent_st {
    double ms; // CLOCK_MONOTONIC at the last record, or -1 before any
    unsigned flags;
};
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
    *e = new (std::nothrow) CUevent_st{-1.0, flags};
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) {
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    vw_emu_calls()->events++;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    e->ms = (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    vw_emu_calls()->syncs++;
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t e, unsigned) {
    return e ? cudaSuccess : cudaErrorInvalidResourceHandle; // recorded work is complete
}
cudaError_t cudaEventQuery(cudaEvent_t) {
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if ((a->flags | b->flags) & cudaEventDisableTiming)
        return cudaErrorInvalidResourceHandle;
    if (a->ms < 0 || b->ms < 0)
        return cudaErrorInvalidResourceHandle; // not recorded: as the runtime refuses
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}

// ---- cuBLAS subset ------------------------------------------------------------

struct cublasContext {
    cudaStream_t stream;
};

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
    *h = new cublasContext{nullptr};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void *, size_t) {
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasGetStatusName(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_EMULATED";
}
const char *cublasGetStatusString(cublasStatus_t s) {
    return s == CUBLAS_STATUS_SUCCESS ? "success" : "unsupported in the CPU emulator";
}

// FP32 copy of a column-major operand (rows x cols, leading dimension ld).
static float *as_f32(const void *p, cudaDataType t, size_t rows, size_t cols, int ld) {
    float *f = (float *)malloc((size_t)ld * cols * sizeof *f + 4);
    for (size_t c = 0; f && c < cols; c++)
        for (size_t r = 0; r < rows; r++) {
            const size_t i = r + c * (size_t)ld;
            f[i] = t == CUDA_R_16BF ? __bfloat162float(((const __nv_bfloat16 *)p)[i])
                                    : ((const float *)p)[i];
        }
    return f;
}

// Column-major C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C through OpenBLAS
// sgemm on FP32 copies of the operands (BF16 ones widened exactly).
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t,
                            cublasGemmAlgo_t) {
    vw_emu_calls()->gemms += !vw_emu_capturing();
    if (ct != CUDA_R_32F || (at != CUDA_R_32F && at != CUDA_R_16BF) ||
        (bt != CUDA_R_32F && bt != CUDA_R_16BF))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const bool tA = ta != CUBLAS_OP_N, tB = tb != CUBLAS_OP_N;
    const float al = *(const float *)alpha, be = *(const float *)beta; // host pointer mode
    auto gemm = [=]() {
        float *Af = as_f32(A, at, tA ? k : m, tA ? m : k, lda);
        float *Bf = as_f32(B, bt, tB ? n : k, tB ? k : n, ldb);
        if (Af && Bf) {
            if (be == 0.0f) // C may hold NaN poison: never read it
                for (int j = 0; j < n; j++)
                    memset((float *)C + (size_t)j * ldc, 0, (size_t)m * sizeof(float));
            cblas_sgemm(CblasColMajor, tA ? CblasTrans : CblasNoTrans,
                        tB ? CblasTrans : CblasNoTrans, m, n, k, al, Af, lda, Bf, ldb, be,
                        (float *)C, ldc);
        }
        free(Af), free(Bf);
        return Af && Bf;
    };
    if (vw_emu_capturing()) { // a node: the operands are read at each replay
        vw_emu_capture([gemm]() {
            if (!gemm()) {
                fprintf(stderr, "cuda emulator: out of memory in a replayed GEMM\n");
                abort();
            }
        });
        return CUBLAS_STATUS_SUCCESS;
    }
    return gemm() ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
