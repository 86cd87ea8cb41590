// gemm.cu — Y[T,N] (+)= X[T,K] W[N,K]^T, the PyTorch Linear of every projection
// (CPU reference: vw_linear in core/model/ops_cpu.c). Three engines:
//  - BF16: X rounded to BF16 into scratch, W stored BF16, cublasGemmEx with FP32
//    accumulation and FP32 output (docs/spec/backbone.md §6.1 mapping: OP_T on W, OP_N on X).
//  - BF16X2: as BF16, twice: X = hi + lo with hi = bf16(X), lo = bf16(X - hi);
//    Y = W hi (+ beta Y), then Y += W lo. W is exact in BF16 (the bundle stores
//    it so), so only lo's own rounding (~2^-17 relative) and FP32
//    accumulation remain. Both planes are written at once, by one cast kernel
//    (vw_cu_linear) or by X's producer (vw_cu_linear_planes: the norms and
//    SwiGLU write them beside their FP32 output).
//  - FP32: the same call on FP32 operands with CUBLAS_COMPUTE_32F_PEDANTIC, so
//    no TF32 or other reduced-precision path is taken.
//  - FP32 invariant: gemm_f32_fixed below. Each output element is one FMA chain
//    over k = 0..K-1 in order, so its value depends only on its row of X and
//    its row of W, never on T or the launch — the property the tree-batching
//    test checks bit for bit (cuBLAS chooses kernels and split-K by shape).
#include <limits.h>

#include "kernels.cuh"

namespace {

constexpr int BM = 64, BN = 64, BK = 16, GEMM_THREADS = 256;
static_assert(BM == BN && BM * BK % GEMM_THREADS == 0, "tile loads share one index");

__global__ void gemm_f32_fixed(const float *__restrict__ X, size_t ldx, const float *__restrict__ W,
                               float *__restrict__ Y, size_t ldy, int T, int N, int K,
                               int accumulate) {
    __shared__ float As[BK][BM + 1]; // As[k][row]: X tile, transposed
    __shared__ float Bs[BK][BN + 1]; // Bs[k][col]: W tile, transposed
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += GEMM_THREADS) {
            const int r = e / BK, kk = e % BK, gk = k0 + kk;
            const int gr = row0 + r, gc = col0 + r;
            // Zero padding past K adds fmaf(0, 0, acc) == acc: same for every T.
            As[kk][r] = (gr < T && gk < K) ? X[(size_t)gr * ldx + gk] : 0.0f;
            Bs[kk][r] = (gc < N && gk < K) ? W[(size_t)gc * K + gk] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < BK; kk++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++) {
                a[i] = As[kk][ty * 4 + i];
                b[i] = Bs[kk][tx * 4 + i];
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
        const int r = row0 + ty * 4 + i;
        if (r >= T)
            continue;
        for (int j = 0; j < 4; j++) {
            const int c = col0 + tx * 4 + j;
            if (c >= N)
                continue;
            float *y = Y + (size_t)r * ldy + c;
            *y = accumulate ? *y + acc[i][j] : acc[i][j];
        }
    }
}

// Y (ld ldy) = W xb^T + beta Y: BF16 operands, FP32 accumulation and output.
vw_status gemm_bf16(const vw_cu_gemm *g, const __nv_bfloat16 *xb, const void *W, float *Y,
                    size_t ldy, size_t T, size_t N, size_t K, float beta, vw_err *err) {
    const float alpha = 1.0f;
    return VW_CUBLAS_TRY(err, cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)T,
                                           (int)K, &alpha, W, CUDA_R_16BF, (int)K, xb, CUDA_R_16BF,
                                           (int)K, &beta, Y, CUDA_R_32F, (int)ldy,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

vw_status check_dims(size_t T, size_t N, size_t K, size_t ldx, size_t ldy, vw_err *err) {
    if (T > INT_MAX || N > INT_MAX || K > INT_MAX || ldx > INT_MAX || ldy > INT_MAX)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "gemm %zux%zux%zu exceeds int range", T,
                       N, K);
    return VW_OK;
}

} // namespace

vw_cu_planes vw_cu_gemm_planes(const vw_cu_gemm *g) {
    if (g->prec == VW_CUDA_FP32)
        return {nullptr, nullptr};
    return {g->xbf, g->prec == VW_CUDA_BF16X2 ? g->xbf_lo : nullptr};
}

vw_status vw_cu_linear_planes(const vw_cu_gemm *g, const float *X, size_t ldx, const void *W,
                              float *Y, size_t ldy, size_t T, size_t N, size_t K, int accumulate,
                              vw_err *err) {
    if (g->prec == VW_CUDA_FP32)
        return vw_cu_linear(g, X, ldx, W, Y, ldy, T, N, K, accumulate, err);
    vw_status st = check_dims(T, N, K, ldx, ldy, err);
    if (st != VW_OK)
        return st;
    if (T * K > g->xbf_cap)
        return VW_FAIL(err, VW_EINVAL, "internal", "gemm: %zux%zu input exceeds the BF16 scratch",
                       T, K);
    const vw_cu_planes p = vw_cu_gemm_planes(g);
    st = gemm_bf16(g, p.hi, W, Y, ldy, T, N, K, accumulate ? 1.0f : 0.0f, err);
    if (st == VW_OK && p.lo)
        st = gemm_bf16(g, p.lo, W, Y, ldy, T, N, K, 1.0f, err);
    return st;
}

vw_status vw_cu_linear(const vw_cu_gemm *g, const float *X, size_t ldx, const void *W, float *Y,
                       size_t ldy, size_t T, size_t N, size_t K, int accumulate, vw_err *err) {
    vw_status st = check_dims(T, N, K, ldx, ldy, err);
    if (st != VW_OK)
        return st;
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    if (g->prec == VW_CUDA_FP32 && g->invariant) {
        dim3 grid(vw_blocks_for(N, BN), vw_blocks_for(T, BM));
        if (grid.y > 65535)
            return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "gemm: %zu rows exceed the grid", T);
        return VW_LAUNCH(err, gemm_f32_fixed, grid, dim3(GEMM_THREADS), 0, g->stream, X, ldx,
                         (const float *)W, Y, ldy, (int)T, (int)N, (int)K, accumulate);
    }
    if (g->prec == VW_CUDA_FP32)
        return VW_CUBLAS_TRY(err, cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)T,
                                               (int)K, &alpha, W, CUDA_R_32F, (int)K, X, CUDA_R_32F,
                                               (int)ldx, &beta, Y, CUDA_R_32F, (int)ldy,
                                               CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT));
    if (T * K > g->xbf_cap)
        return VW_FAIL(err, VW_EINVAL, "internal", "gemm: %zux%zu input exceeds the BF16 scratch",
                       T, K);
    st = vw_cu_cast_bf16(X, ldx, T, K, vw_cu_gemm_planes(g), g->stream, err);
    return st == VW_OK ? vw_cu_linear_planes(g, X, ldx, W, Y, ldy, T, N, K, accumulate, err) : st;
}
