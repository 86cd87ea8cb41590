// mma_probe.cu — one warp runs the tensor-core wrappers of mma.cuh on given
// matrices, and cvt.rna.tf32 on given values (ops_cuda.h vw_cuda_op_mma,
// vw_cuda_op_tf32_round). For tests/test_cuda_kernels.c `mma_layouts`: with
// small-integer matrices the result equals the plain product exactly on the
// emulator and on a GPU (scripts/gpu-check), which proves mma.cuh's fragment
// tables, the emulator's own (inverse) transcription and its TF32 rounding.
#include "mma.cuh"
#include "ops_cuda.h"

namespace {

// D [16, 8] = A [16, K] B [K, 8] + C [16, 8], row-major, K = 8 (TF32 kinds) or
// 16 (BF16 and F16 kinds); every element reaches its lane through mma.cuh's tables.
__global__ void mma_probe_k(int kind, const float *A, const float *B, const float *C, float *D) {
    const int lane = threadIdx.x;
    const bool tf32 = kind == VW_CUDA_MMA_TF32 || kind == VW_CUDA_MMA_3XTF32;
    const int K = tf32 ? 8 : 16;
    uint32_t a[4], a2[4], b[2], b2[2]; // big/hi and small/lo parts
    float d[4];
    for (int i = 0; i < 4; i++) {
        const vw_rc p = vw_mma_c_pos(lane, i);
        d[i] = C[p.r * 8 + p.c];
    }
    if (tf32) {
        for (int i = 0; i < 4; i++) {
            const vw_rc p = vw_mma_tf32_a_pos(lane, i);
            vw_split_tf32(A[p.r * K + p.c], a[i], a2[i]);
        }
        for (int i = 0; i < 2; i++) {
            const vw_rc p = vw_mma_tf32_b_pos(lane, i);
            vw_split_tf32(B[p.r * 8 + p.c], b[i], b2[i]);
        }
    } else if (kind == VW_CUDA_MMA_F16 || kind == VW_CUDA_MMA_F16X3) {
        __half hi[2], lo[2];
        for (int i = 0; i < 4; i++) {
            for (int h = 0; h < 2; h++) {
                const vw_rc p = vw_mma_bf16_a_pos(lane, i, h);
                vw_split_f16(A[p.r * K + p.c], hi[h], lo[h]);
            }
            a[i] = vw_pack_f16(hi[0], hi[1]), a2[i] = vw_pack_f16(lo[0], lo[1]);
        }
        for (int i = 0; i < 2; i++) {
            for (int h = 0; h < 2; h++) {
                const vw_rc p = vw_mma_bf16_b_pos(lane, i, h);
                vw_split_f16(B[p.r * 8 + p.c], hi[h], lo[h]);
            }
            b[i] = vw_pack_f16(hi[0], hi[1]), b2[i] = vw_pack_f16(lo[0], lo[1]);
        }
    } else {
        __nv_bfloat16 hi[2], lo[2];
        for (int i = 0; i < 4; i++) {
            for (int h = 0; h < 2; h++) {
                const vw_rc p = vw_mma_bf16_a_pos(lane, i, h);
                vw_split_bf16(A[p.r * K + p.c], hi[h], lo[h]);
            }
            a[i] = vw_pack_bf16(hi[0], hi[1]), a2[i] = vw_pack_bf16(lo[0], lo[1]);
        }
        for (int i = 0; i < 2; i++) {
            for (int h = 0; h < 2; h++) {
                const vw_rc p = vw_mma_bf16_b_pos(lane, i, h);
                vw_split_bf16(B[p.r * 8 + p.c], hi[h], lo[h]);
            }
            b[i] = vw_pack_bf16(hi[0], hi[1]), b2[i] = vw_pack_bf16(lo[0], lo[1]);
        }
    }
    if (kind == VW_CUDA_MMA_TF32)
        vw_mma<VW_MMA_TF32>(d, a, b);
    else if (kind == VW_CUDA_MMA_BF16)
        vw_mma<VW_MMA_BF16>(d, a, b);
    else if (kind == VW_CUDA_MMA_3XTF32)
        vw_mma_x3<VW_MMA_TF32>(d, a, a2, b, b2);
    else if (kind == VW_CUDA_MMA_BF16X3)
        vw_mma_x3<VW_MMA_BF16>(d, a, a2, b, b2);
    else if (kind == VW_CUDA_MMA_F16)
        vw_mma<VW_MMA_F16>(d, a, b);
    else
        vw_mma_x3<VW_MMA_F16>(d, a, a2, b, b2);
    for (int i = 0; i < 4; i++) {
        const vw_rc p = vw_mma_c_pos(lane, i);
        D[p.r * 8 + p.c] = d[i];
    }
}

__global__ void tf32_round_k(const float *x, size_t n, float *y) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = vw_bit_cast<float>(vw_cvt_tf32(x[i]));
}

// Device copies of the probe's operands, freed together.
struct probe_bufs {
    float *p[5] = {};
    ~probe_bufs() {
        for (float *q : p)
            cudaFree(q);
    }
    vw_status put(int i, const float *src, size_t n, vw_err *err) {
        vw_status st = VW_CUDA_TRY(err, cudaMalloc((void **)&p[i], n * sizeof(float)));
        if (st == VW_OK && src)
            st = VW_CUDA_TRY(err, cudaMemcpy(p[i], src, n * sizeof(float), cudaMemcpyHostToDevice));
        return st;
    }
    vw_status get(float *dst, int i, size_t n, vw_err *err) {
        vw_status st = VW_CUDA_TRY(err, cudaDeviceSynchronize());
        if (st == VW_OK)
            st = VW_CUDA_TRY(err, cudaMemcpy(dst, p[i], n * sizeof(float), cudaMemcpyDeviceToHost));
        return st;
    }
};

} // namespace

extern "C" vw_status vw_cuda_op_mma(vw_cuda_mma_kind kind, const float *A, const float *B,
                                    const float *C, float *D, vw_err *err) {
    if (kind < VW_CUDA_MMA_TF32 || kind > VW_CUDA_MMA_F16X3)
        return VW_FAIL(err, VW_EINVAL, "bad_kind", "mma probe: kind %d", (int)kind);
    const size_t K = kind == VW_CUDA_MMA_TF32 || kind == VW_CUDA_MMA_3XTF32 ? 8 : 16;
    probe_bufs d;
    vw_status st = d.put(0, A, 16 * K, err);
    if (st == VW_OK)
        st = d.put(1, B, K * 8, err);
    if (st == VW_OK)
        st = d.put(2, C, 16 * 8, err);
    if (st == VW_OK)
        st = d.put(3, nullptr, 16 * 8, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, mma_probe_k, 1, 32, 0, 0, (int)kind, (const float *)d.p[0],
                       (const float *)d.p[1], (const float *)d.p[2], d.p[3]);
    if (st == VW_OK)
        st = d.get(D, 3, 16 * 8, err);
    return st;
}

extern "C" vw_status vw_cuda_op_tf32_round(const float *x, size_t n, float *y, vw_err *err) {
    probe_bufs d;
    vw_status st = d.put(0, x, n ? n : 1, err);
    if (st == VW_OK)
        st = d.put(1, nullptr, n ? n : 1, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, tf32_round_k, vw_blocks_for(n, 128), 128, 0, 0, (const float *)d.p[0],
                       n, d.p[1]);
    if (st == VW_OK)
        st = d.get(y, 1, n, err);
    return st;
}
