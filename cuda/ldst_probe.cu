// ldst_probe.cu — one warp or block runs the loads of ldst.cuh on given data
// (ops_cuda.h vw_cuda_op_ldmatrix, vw_cuda_op_ldsm_mma, vw_cuda_op_cp_async),
// for tests/test_cuda_kernels.c `ldmatrix_layouts`, `ldmatrix_feeds_mma` and
// `cp_async_groups`: against the PTX ISA's definition and against plain loads,
// on the emulator in CI and on a GPU (scripts/gpu-check), which proves the
// emulator's models and the wrappers' inline PTX.
#include "ldst.cuh"
#include "mma.cuh"
#include "ops_cuda.h"

namespace {

// out[32 lanes][4 registers]: ldmatrix .x(n)[.trans] of a 32-row tile of 8
// 16-bit elements, lane l pointing at tile row rows[l].
__global__ void ldmatrix_probe_k(int n, int trans, const uint16_t *tile, const int32_t *rows,
                                 uint32_t *out) {
    __shared__ __align__(16) uint16_t t[32 * 8];
    const int lane = threadIdx.x;
    for (int i = 0; i < 8; i++)
        t[lane * 8 + i] = tile[lane * 8 + i];
    __syncwarp();
    uint32_t r[4] = {0, 0, 0, 0};
    const uint16_t *row = t + rows[lane] * 8;
    if (n == 1)
        trans ? vw_ldsm<1, true>(r, row) : vw_ldsm<1>(r, row);
    else if (n == 2)
        trans ? vw_ldsm<2, true>(r, row) : vw_ldsm<2>(r, row);
    else
        trans ? vw_ldsm<4, true>(r, row) : vw_ldsm<4>(r, row);
    for (int i = 0; i < 4; i++)
        out[lane * 4 + i] = r[i];
}

// D [16, 8] = A [16, K] B [K, 8] + C with one mma.sync whose fragments come
// from ldmatrix (ldst.cuh's row helpers) on shared tiles: A row-major, B as
// Bᵀ [8][K] (b_kmajor = 0) or, BF16 only, as B [K][8] with .trans. The rows
// are padded (stride K + 8 elements) as a kernel pads them.
__global__ void ldsm_mma_probe_k(int kind, int b_kmajor, const float *A, const float *B,
                                 const float *C, float *D) {
    const int lane = threadIdx.x;
    const bool tf32 = kind == VW_CUDA_MMA_TF32;
    const int K = tf32 ? 8 : 16, ld = K + 8;
    __shared__ __align__(16) float af[16 * 16], bf[16 * 16];
    __shared__ __align__(16) __nv_bfloat16 ah[16 * 24], bh[16 * 24];
    for (int e = lane; e < 16 * K; e += 32) { // A [16][K]
        const int r = e / K, k = e % K;
        if (tf32)
            af[r * ld + k] = vw_bit_cast<float>(vw_cvt_tf32(A[e]));
        else
            ah[r * ld + k] = __float2bfloat16_rn(A[e]);
    }
    for (int e = lane; e < K * 8; e += 32) { // B [K][8]
        const int k = e / 8, n = e % 8;
        const float v = B[e];
        if (tf32)
            bf[n * ld + k] = vw_bit_cast<float>(vw_cvt_tf32(v));
        else if (b_kmajor)
            bh[k * 16 + n] = __float2bfloat16_rn(v); // [K][8], rows of 16 elements
        else
            bh[n * ld + k] = __float2bfloat16_rn(v);
    }
    __syncwarp();
    float d[4];
    for (int i = 0; i < 4; i++) {
        const vw_rc p = vw_mma_c_pos(lane, i);
        d[i] = C[p.r * 8 + p.c];
    }
    uint32_t a[4], b[2];
    if (tf32) {
        vw_ldsm<4>(a, vw_ldsm_a_row(af, ld, lane));
        vw_ldsm<2>(b, vw_ldsm_bt_row(bf, ld, lane));
        vw_mma<VW_MMA_TF32>(d, a, b);
    } else {
        vw_ldsm<4>(a, vw_ldsm_a_row(ah, ld, lane));
        if (b_kmajor)
            vw_ldsm<2, true>(b, vw_ldsm_b_row(bh, 16, lane));
        else
            vw_ldsm<2>(b, vw_ldsm_bt_row(bh, ld, lane));
        vw_mma<VW_MMA_BF16>(d, a, b);
    }
    for (int i = 0; i < 4; i++) {
        const vw_rc p = vw_mma_c_pos(lane, i);
        D[p.r * 8 + p.c] = d[i];
    }
}

// 64 threads copy src into a shared buffer in three groups (layout in
// ops_cuda.h), waiting for one group at a time: early[t] gets what thread t
// reads of its own group-0 and group-1 slots after wait_group 2 (8 floats),
// out the whole buffer after the last wait and a barrier, read by another
// thread than the one that copied it.
constexpr int CP_THREADS = 64, CP_FLOATS = 4 * CP_THREADS * 4;
__global__ void cp_async_probe_k(const float *src, size_t n_src, float *early, float *out) {
    __shared__ __align__(16) float s[CP_FLOATS];
    const int t = threadIdx.x;
    // group 0: one 16-byte .cg copy; region [0, 256)
    vw_cp_async_cg(s + 4 * t, src + 4 * t);
    vw_cp_async_commit();
    // group 1: two 8-byte copies, the second reading only (t % 9) bytes; [256, 512)
    vw_cp_async<8>(s + 256 + 4 * t, src + 256 + 4 * t);
    vw_cp_async<8>(s + 256 + 4 * t + 2, src + 256 + 4 * t + 2, t % 9);
    vw_cp_async_commit();
    // group 2: four scattered 4-byte copies; [512, 768)
    for (int j = 0; j < 4; j++)
        vw_cp_async<4>(s + 512 + 4 * t + j, src + (size_t)(t * 37 + j * 11) % n_src);
    vw_cp_async_commit();
    // not committed: a 16-byte .ca copy with src-size 0 (zero fill); [768, 1024)
    vw_cp_async<16>(s + 768 + 4 * t, src, 0);
    vw_cp_async_wait<2>(); // group 0 landed
    for (int j = 0; j < 4; j++)
        early[8 * t + j] = s[4 * t + j], early[8 * t + 4 + j] = s[256 + 4 * t + j];
    vw_cp_async_wait<1>();
    vw_cp_async_wait<-1>(); // commit and wait for everything
    __syncthreads();
    const int o = (t + 1) % CP_THREADS; // another thread's slots
    for (int j = 0; j < 4; j++)
        for (int q = 0; q < 4; q++)
            out[256 * q + 4 * o + j] = s[256 * q + 4 * o + j];
}

// Device copies of the probes' buffers, freed together.
struct bufs {
    void *p[4] = {};
    ~bufs() {
        for (void *q : p)
            cudaFree(q);
    }
    vw_status put(int i, const void *src, size_t bytes, vw_err *err) {
        vw_status st = VW_CUDA_TRY(err, cudaMalloc(&p[i], bytes));
        if (st == VW_OK && src)
            st = VW_CUDA_TRY(err, cudaMemcpy(p[i], src, bytes, cudaMemcpyHostToDevice));
        return st;
    }
    vw_status get(void *dst, int i, size_t bytes, vw_err *err) {
        vw_status st = VW_CUDA_TRY(err, cudaDeviceSynchronize());
        if (st == VW_OK)
            st = VW_CUDA_TRY(err, cudaMemcpy(dst, p[i], bytes, cudaMemcpyDeviceToHost));
        return st;
    }
};

} // namespace

extern "C" vw_status vw_cuda_op_ldmatrix(int n, int trans, const uint16_t *tile,
                                         const int32_t *rows, uint32_t *out, vw_err *err) {
    if (n != 1 && n != 2 && n != 4)
        return VW_FAIL(err, VW_EINVAL, "bad_kind", "ldmatrix probe: .x%d", n);
    for (int l = 0; l < 32; l++)
        if (rows[l] < 0 || rows[l] >= 32)
            return VW_FAIL(err, VW_EINVAL, "bad_row", "ldmatrix probe: row %d", (int)rows[l]);
    bufs d;
    vw_status st = d.put(0, tile, 32 * 8 * sizeof *tile, err);
    if (st == VW_OK)
        st = d.put(1, rows, 32 * sizeof *rows, err);
    if (st == VW_OK)
        st = d.put(2, nullptr, 32 * 4 * sizeof *out, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, ldmatrix_probe_k, 1, 32, 0, 0, n, trans, (const uint16_t *)d.p[0],
                       (const int32_t *)d.p[1], (uint32_t *)d.p[2]);
    if (st == VW_OK)
        st = d.get(out, 2, 32 * 4 * sizeof *out, err);
    return st;
}

extern "C" vw_status vw_cuda_op_ldsm_mma(vw_cuda_mma_kind kind, int b_kmajor, const float *A,
                                         const float *B, const float *C, float *D, vw_err *err) {
    if ((kind != VW_CUDA_MMA_TF32 && kind != VW_CUDA_MMA_BF16) ||
        (b_kmajor && kind != VW_CUDA_MMA_BF16))
        return VW_FAIL(err, VW_EINVAL, "bad_kind", "ldmatrix mma probe: kind %d, b_kmajor %d",
                       (int)kind, b_kmajor);
    const size_t K = kind == VW_CUDA_MMA_TF32 ? 8 : 16;
    bufs d;
    vw_status st = d.put(0, A, 16 * K * sizeof(float), err);
    if (st == VW_OK)
        st = d.put(1, B, K * 8 * sizeof(float), err);
    if (st == VW_OK)
        st = d.put(2, C, 16 * 8 * sizeof(float), err);
    if (st == VW_OK)
        st = d.put(3, nullptr, 16 * 8 * sizeof(float), err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, ldsm_mma_probe_k, 1, 32, 0, 0, (int)kind, b_kmajor,
                       (const float *)d.p[0], (const float *)d.p[1], (const float *)d.p[2],
                       (float *)d.p[3]);
    if (st == VW_OK)
        st = d.get(D, 3, 16 * 8 * sizeof(float), err);
    return st;
}

extern "C" vw_status vw_cuda_op_cp_async(const float *src, size_t n_src, float *early, float *out,
                                         vw_err *err) {
    if (n_src < 4 * CP_THREADS * 2)
        return VW_FAIL(err, VW_EINVAL, "bad_shape", "cp.async probe: %zu source floats", n_src);
    bufs d;
    vw_status st = d.put(0, src, n_src * sizeof *src, err);
    if (st == VW_OK)
        st = d.put(1, nullptr, 8 * CP_THREADS * sizeof *early, err);
    if (st == VW_OK)
        st = d.put(2, nullptr, CP_FLOATS * sizeof *out, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, cp_async_probe_k, 1, CP_THREADS, 0, 0, (const float *)d.p[0], n_src,
                       (float *)d.p[1], (float *)d.p[2]);
    if (st == VW_OK)
        st = d.get(early, 1, 8 * CP_THREADS * sizeof *early, err);
    if (st == VW_OK)
        st = d.get(out, 2, CP_FLOATS * sizeof *out, err);
    return st;
}
