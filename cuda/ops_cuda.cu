// ops_cuda.cu — the per-op C API of ops_cuda.h: copy in, run the executor's
// own launcher on the default stream, copy out. For tests only; allocates.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.cuh"
#include "ops_cuda.h"
#include "model/ops_cpu.h"

namespace {

// Device buffers of one op call, freed together.
struct dev_bufs {
    void *p[16] = {};
    int n = 0;
    ~dev_bufs() {
        for (int i = 0; i < n; i++)
            cudaFree(p[i]);
    }
    // Allocates `bytes` and fills them from src (or zeros when src is NULL and
    // clear is set).
    template <typename T>
    vw_status put(T **out, const void *src, size_t bytes, vw_err *err, bool clear = true) {
        *out = nullptr;
        if (n == 16)
            return VW_FAIL(err, VW_EINVAL, "internal", "ops_cuda: too many buffers");
        void *d = nullptr;
        vw_status st = VW_CUDA_TRY(err, cudaMalloc(&d, bytes ? bytes : 1));
        if (st != VW_OK)
            return st;
        p[n++] = d;
        if (src)
            st = VW_CUDA_TRY(err, cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
        else if (clear)
            st = VW_CUDA_TRY(err, cudaMemset(d, 0, bytes));
        *out = (T *)d;
        return st;
    }
};

vw_status get(void *dst, const void *src, size_t bytes, vw_err *err) {
    vw_status st = VW_CUDA_TRY(err, cudaDeviceSynchronize());
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    return st;
}

__nv_bfloat16 *to_bf16(const float *x, size_t n) {
    __nv_bfloat16 *b = (__nv_bfloat16 *)malloc((n ? n : 1) * sizeof *b);
    for (size_t i = 0; b && i < n; i++)
        b[i] = __float2bfloat16_rn(x[i]);
    return b;
}

size_t seg_rows(const vw_cuda_seg *segs, size_t n) {
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r = (size_t)(segs[i].start + segs[i].len) > r ? (size_t)(segs[i].start + segs[i].len) : r;
    return r;
}

// row -> segment index for rows covered by segs (others: 0).
int32_t *row_segs(const vw_cuda_seg *segs, size_t n, size_t rows) {
    int32_t *rs = (int32_t *)calloc(rows ? rows : 1, sizeof *rs);
    for (size_t s = 0; rs && s < n; s++)
        for (int32_t i = 0; i < segs[s].len; i++)
            rs[segs[s].start + i] = (int32_t)s;
    return rs;
}

} // namespace

extern "C" vw_status vw_cuda_op_linear(vw_cuda_precision prec, int invariant, const float *X,
                                       const float *W, float *Y, size_t T, size_t N, size_t K,
                                       int accumulate, vw_err *err) {
    dev_bufs d;
    float *dX, *dY;
    void *dW;
    vw_cu_gemm g = {};
    g.prec = prec, g.invariant = invariant;
    const bool bf16 = vw_cuda_bf16_weights(prec);
    __nv_bfloat16 *wb = bf16 ? to_bf16(W, N * K) : nullptr;
    vw_status st = VW_OK;
    if (bf16 && !wb)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda linear");
    st = d.put(&dX, X, T * K * 4, err);
    if (st == VW_OK)
        st = d.put(&dW, bf16 ? (const void *)wb : (const void *)W, N * K * (bf16 ? 2 : 4), err);
    if (st == VW_OK)
        st = d.put(&dY, Y, T * N * 4, err);
    g.xbf_cap = bf16 ? T * K : 0;
    if (st == VW_OK && bf16) /* hi and lo planes */
        st = d.put(&g.xbf, nullptr, 2 * T * K * 2, err);
    if (st == VW_OK && prec == VW_CUDA_BF16X2)
        g.xbf_lo = g.xbf + T * K;
    if (st == VW_OK)
        st = VW_CUBLAS_TRY(err, cublasCreate(&g.blas));
    if (st == VW_OK)
        st = vw_cu_linear(&g, dX, K, dW, dY, N, T, N, K, accumulate, err);
    if (st == VW_OK)
        st = get(Y, dY, T * N * 4, err);
    if (g.blas)
        cublasDestroy(g.blas);
    free(wb);
    return st;
}

extern "C" vw_status vw_cuda_op_embed(const float *E, size_t vocab, size_t H, int bf16,
                                      const int32_t *ids, size_t rows, float *h, vw_err *err) {
    dev_bufs d;
    void *dE;
    int32_t *dI;
    float *dH;
    __nv_bfloat16 *eb = bf16 ? to_bf16(E, vocab * H) : nullptr;
    if (bf16 && !eb)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda embed");
    vw_status st =
        d.put(&dE, bf16 ? (const void *)eb : (const void *)E, vocab * H * (bf16 ? 2 : 4), err);
    if (st == VW_OK)
        st = d.put(&dI, ids, rows * 4, err);
    if (st == VW_OK)
        st = d.put(&dH, nullptr, rows * H * 4, err);
    if (st == VW_OK)
        st = vw_cu_embed(dE, bf16, dI, rows, H, dH, 0, err);
    if (st == VW_OK)
        st = get(h, dH, rows * H * 4, err);
    free(eb);
    return st;
}

// Device planes for the host buffers hi / lo (each may be NULL), and back.
static vw_status planes_put(dev_bufs &d, vw_cu_planes *p, const uint16_t *hi, const uint16_t *lo,
                            size_t n, vw_err *err) {
    vw_status st = VW_OK;
    if (hi)
        st = d.put(&p->hi, nullptr, n * 2, err);
    if (st == VW_OK && hi && lo)
        st = d.put(&p->lo, nullptr, n * 2, err);
    return st;
}
static vw_status planes_get(const vw_cu_planes &p, uint16_t *hi, uint16_t *lo, size_t n,
                            vw_err *err) {
    vw_status st = VW_OK;
    if (p.hi)
        st = get(hi, p.hi, n * 2, err);
    if (st == VW_OK && p.lo)
        st = get(lo, p.lo, n * 2, err);
    return st;
}

extern "C" vw_status vw_cuda_op_add_rmsnorm(float *h, const float *delta, const float *w, float eps,
                                            size_t rows, size_t D, float *y, uint16_t *hi,
                                            uint16_t *lo, vw_err *err) {
    dev_bufs d;
    float *dh, *dd = nullptr, *dw, *dy;
    vw_cu_planes p = {nullptr, nullptr};
    vw_status st = planes_put(d, &p, hi, lo, rows * D, err);
    if (st == VW_OK)
        st = d.put(&dh, h, rows * D * 4, err);
    if (st == VW_OK && delta)
        st = d.put(&dd, delta, rows * D * 4, err);
    if (st == VW_OK)
        st = d.put(&dw, w, D * 4, err);
    if (st == VW_OK)
        st = d.put(&dy, nullptr, rows * D * 4, err);
    if (st == VW_OK)
        st = vw_cu_add_rmsnorm(dh, dd, dw, eps, rows, D, dy, p, 0, err);
    if (st == VW_OK)
        st = get(h, dh, rows * D * 4, err);
    if (st == VW_OK)
        st = get(y, dy, rows * D * 4, err);
    if (st == VW_OK)
        st = planes_get(p, hi, lo, rows * D, err);
    return st;
}

extern "C" vw_status vw_cuda_op_gated_rmsnorm(float *o, const float *z, const float *w, float eps,
                                              size_t rows, size_t Hv, size_t dv, uint16_t *hi,
                                              uint16_t *lo, vw_err *err) {
    dev_bufs d;
    float *dO, *dz, *dw;
    const size_t n = rows * Hv * dv;
    vw_cu_planes p = {nullptr, nullptr};
    vw_status st = planes_put(d, &p, hi, lo, n, err);
    if (st == VW_OK)
        st = d.put(&dO, o, n * 4, err);
    if (st == VW_OK)
        st = d.put(&dz, z, n * 4, err);
    if (st == VW_OK)
        st = d.put(&dw, w, dv * 4, err);
    if (st == VW_OK)
        st = vw_cu_gated_rmsnorm(dO, Hv * dv, dz, Hv * dv, dw, eps, rows, Hv, dv, p, 0, err);
    if (st == VW_OK)
        st = get(o, dO, n * 4, err);
    if (st == VW_OK)
        st = planes_get(p, hi, lo, n, err);
    return st;
}

extern "C" vw_status vw_cuda_op_l2norm_qk(float *x, size_t rows, size_t Hk, size_t dk, float eps,
                                          float qscale, vw_err *err) {
    dev_bufs d;
    float *dx;
    const size_t ld = 2 * Hk * dk;
    vw_status st = d.put(&dx, x, rows * ld * 4, err);
    if (st == VW_OK)
        st = vw_cu_l2norm_qk(dx, ld, rows, Hk, dk, eps, qscale, 0, err);
    if (st == VW_OK)
        st = get(x, dx, rows * ld * 4, err);
    return st;
}

extern "C" vw_status vw_cuda_op_gates(const float *ba, const float *A, const float *dt_bias,
                                      size_t rows, size_t Hv, float *g, float *beta, vw_err *err) {
    dev_bufs d;
    float *dba, *dA, *ddt, *dg, *db;
    vw_status st = d.put(&dba, ba, rows * 2 * Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&dA, A, Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&ddt, dt_bias, Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&dg, nullptr, rows * Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&db, nullptr, rows * Hv * 4, err);
    if (st == VW_OK)
        st = vw_cu_gates(dba, 2 * Hv, dA, ddt, rows, Hv, dg, db, 0, err);
    if (st == VW_OK)
        st = get(g, dg, rows * Hv * 4, err);
    if (st == VW_OK)
        st = get(beta, db, rows * Hv * 4, err);
    return st;
}

extern "C" vw_status vw_cuda_op_swiglu(float *gu, size_t rows, size_t F, uint16_t *hi, uint16_t *lo,
                                       vw_err *err) {
    dev_bufs d;
    float *dg;
    vw_cu_planes p = {nullptr, nullptr};
    vw_status st = planes_put(d, &p, hi, lo, rows * F, err);
    if (st == VW_OK)
        st = d.put(&dg, gu, rows * 2 * F * 4, err);
    if (st == VW_OK)
        st = vw_cu_swiglu(dg, rows, F, p, 0, err);
    if (st == VW_OK)
        st = get(gu, dg, rows * 2 * F * 4, err);
    if (st == VW_OK)
        st = planes_get(p, hi, lo, rows * F, err);
    return st;
}

extern "C" vw_status vw_cuda_op_gdn_inputs(const float *x, const float *w, size_t K,
                                           const vw_cuda_seg *segs, size_t n_segs, size_t rows,
                                           size_t Hk, size_t dk, size_t vd, float eps, float qscale,
                                           const float *A, const float *dt_bias, size_t Hv,
                                           float *y, float *g, float *beta, vw_err *err) {
    dev_bufs d;
    const size_t C = 2 * Hk * dk + vd, W = C + 2 * Hv;
    vw_cu_gdn_in a = {};
    float *dx = nullptr, *dw = nullptr, *dy = nullptr, *dA = nullptr, *ddt = nullptr, *dg = nullptr,
          *db = nullptr;
    vw_cuda_seg *ds = nullptr;
    int32_t *drs = nullptr, *rs = row_segs(segs, n_segs, rows);
    if (!rs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda gdn_inputs");
    vw_status st = d.put(&dx, x, rows * W * 4, err);
    if (st == VW_OK)
        st = d.put(&dw, w, C * K * 4, err);
    if (st == VW_OK)
        st = d.put(&dy, nullptr, rows * C * 4, err);
    if (st == VW_OK)
        st = d.put(&ds, segs, n_segs * sizeof *segs, err);
    if (st == VW_OK)
        st = d.put(&drs, rs, rows * 4, err);
    if (st == VW_OK)
        st = d.put(&dA, A, Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&ddt, dt_bias, Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&dg, nullptr, rows * Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&db, nullptr, rows * Hv * 4, err);
    a.x = dx, a.ldx = W, a.w = dw, a.K = K, a.segs = ds, a.row_seg = drs, a.rows = rows;
    a.Hk = Hk, a.dk = dk, a.vd = vd, a.eps = eps, a.qscale = qscale, a.y = dy;
    a.ba = dx + C, a.ldba = W, a.A = dA, a.dt_bias = ddt, a.Hv = Hv, a.g = dg, a.beta = db;
    if (st == VW_OK)
        st = vw_cu_gdn_inputs(&a, 0, err);
    if (st == VW_OK)
        st = get(y, dy, rows * C * 4, err);
    if (st == VW_OK)
        st = get(g, dg, rows * Hv * 4, err);
    if (st == VW_OK)
        st = get(beta, db, rows * Hv * 4, err);
    free(rs);
    return st;
}

extern "C" vw_status vw_cuda_op_conv_silu(const float *x, const float *w, size_t C, size_t K,
                                          const vw_cuda_seg *segs, size_t n_segs, size_t rows,
                                          float *y, vw_err *err) {
    dev_bufs d;
    float *dx, *dw, *dy;
    vw_cuda_seg *ds;
    int32_t *drs, *rs = row_segs(segs, n_segs, rows);
    if (!rs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda conv");
    vw_status st = d.put(&dx, x, rows * C * 4, err);
    if (st == VW_OK)
        st = d.put(&dw, w, C * K * 4, err);
    if (st == VW_OK)
        st = d.put(&dy, nullptr, rows * C * 4, err);
    if (st == VW_OK)
        st = d.put(&ds, segs, n_segs * sizeof *segs, err);
    if (st == VW_OK)
        st = d.put(&drs, rs, rows * 4, err);
    if (st == VW_OK)
        st = vw_cu_conv_silu(dx, C, dw, C, K, ds, drs, rows, dy, 0, err);
    if (st == VW_OK)
        st = get(y, dy, rows * C * 4, err);
    free(rs);
    return st;
}

// attn_prep on the device: FP32 Q, Kout, or with V given the planes Qh, Kh, Vb.
static vw_status attn_prep_op(const float *proj, const float *qn, const float *kn, float eps,
                              double theta, size_t rot, const vw_cuda_seg *segs, size_t n_segs,
                              size_t rows, size_t Hq, size_t Hk, size_t hd, float *Q, float *Kout,
                              const float *V, uint16_t *Qh, uint16_t *Kh, uint16_t *Vb,
                              vw_err *err) {
    dev_bufs d;
    const size_t ldp = Hq * 2 * hd + Hk * hd, half = rot / 2;
    size_t npos = 1;
    for (size_t s = 0; s < n_segs; s++)
        npos = (size_t)(segs[s].pos0 + segs[s].len) > npos ? (size_t)(segs[s].pos0 + segs[s].len)
                                                           : npos;
    float *cs = (float *)calloc(npos * half + 1, 4), *sn = (float *)calloc(npos * half + 1, 4);
    int32_t *rs = row_segs(segs, n_segs, rows);
    vw_status st = VW_OK;
    vw_cu_attn_prep a = {};
    if (!cs || !sn || !rs)
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda attn_prep");
    if (st == VW_OK && half)
        vw_rope_tables(0, npos, rot, theta, cs, sn);
    a.ldp = ldp, a.eps = eps, a.rot = rot, a.rows = rows, a.Hq = Hq, a.Hk = Hk, a.hd = hd;
    a.ldv = Hk * hd;
    if (st == VW_OK)
        st = d.put(&a.proj, proj, rows * ldp * 4, err);
    if (st == VW_OK)
        st = d.put(&a.q_norm, qn, hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.k_norm, kn, hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.cos_t, cs, (npos * half + 1) * 4, err);
    if (st == VW_OK)
        st = d.put(&a.sin_t, sn, (npos * half + 1) * 4, err);
    if (st == VW_OK)
        st = d.put(&a.segs, segs, n_segs * sizeof *segs, err);
    if (st == VW_OK)
        st = d.put(&a.row_seg, rs, rows * 4, err);
    if (st == VW_OK && V) {
        st = d.put(&a.V, V, rows * Hk * hd * 4, err);
        if (st == VW_OK)
            st = d.put(&a.Qh, nullptr, rows * Hq * hd * 4, err, false);
        if (st == VW_OK)
            st = d.put(&a.Kh, nullptr, rows * Hk * hd * 4, err, false);
        if (st == VW_OK)
            st = d.put(&a.Vb, nullptr, rows * Hk * hd * 4, err, false);
    } else {
        if (st == VW_OK)
            st = d.put(&a.Q, nullptr, rows * Hq * hd * 4, err);
        if (st == VW_OK)
            st = d.put(&a.K, nullptr, rows * Hk * hd * 4, err);
    }
    if (st == VW_OK)
        st = vw_cu_attn_prep_run(&a, 0, err);
    if (st == VW_OK && V) {
        st = get(Qh, a.Qh, rows * Hq * hd * 4, err);
        if (st == VW_OK)
            st = get(Kh, a.Kh, rows * Hk * hd * 4, err);
        if (st == VW_OK)
            st = get(Vb, a.Vb, rows * Hk * hd * 4, err);
    } else {
        if (st == VW_OK)
            st = get(Q, a.Q, rows * Hq * hd * 4, err);
        if (st == VW_OK)
            st = get(Kout, a.K, rows * Hk * hd * 4, err);
    }
    free(cs), free(sn), free(rs);
    return st;
}

extern "C" vw_status vw_cuda_op_attn_prep(const float *proj, const float *qn, const float *kn,
                                          float eps, double theta, size_t rot,
                                          const vw_cuda_seg *segs, size_t n_segs, size_t rows,
                                          size_t Hq, size_t Hk, size_t hd, float *Q, float *Kout,
                                          vw_err *err) {
    return attn_prep_op(proj, qn, kn, eps, theta, rot, segs, n_segs, rows, Hq, Hk, hd, Q, Kout,
                        nullptr, nullptr, nullptr, nullptr, err);
}

extern "C" vw_status vw_cuda_op_attn_prep_planes(const float *proj, const float *qn,
                                                 const float *kn, float eps, double theta,
                                                 size_t rot, const vw_cuda_seg *segs, size_t n_segs,
                                                 size_t rows, size_t Hq, size_t Hk, size_t hd,
                                                 const float *V, uint16_t *Qh, uint16_t *Kh,
                                                 uint16_t *Vb, vw_err *err) {
    return attn_prep_op(proj, qn, kn, eps, theta, rot, segs, n_segs, rows, Hq, Hk, hd, nullptr,
                        nullptr, V, Qh, Kh, Vb, err);
}

extern "C" vw_status vw_cuda_op_attention(vw_cuda_precision prec, const float *Q, const float *K,
                                          const float *V, const float *gate,
                                          const vw_cuda_seg *segs, size_t n_segs, size_t rows,
                                          size_t Hq, size_t Hk, size_t hd, int split_tiles,
                                          float *O, vw_err *err) {
    dev_bufs d;
    vw_cu_attn a = {};
    const size_t ni = VW_ATT_ITEM_INTS * seg_rows(segs, n_segs) + VW_ATT_ENTRY;
    int32_t *items = (int32_t *)malloc(ni * sizeof *items);
    if (!items)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda attention");
    a.ldv = Hk * hd, a.ldg = Hq * hd, a.gstride = hd, a.ldo = Hq * hd;
    a.Hq = Hq, a.Hk = Hk, a.hd = hd, a.rows = rows, a.prec = prec;
    for (size_t i = 0; i < rows * Hq * hd; i++) /* the executor: from the q/k norm weights */
        a.qk_max = fabsf(Q[i]) > a.qk_max ? fabsf(Q[i]) : a.qk_max;
    for (size_t i = 0; i < rows * Hk * hd; i++)
        a.qk_max = fabsf(K[i]) > a.qk_max ? fabsf(K[i]) : a.qk_max;
    vw_status st = d.put(&a.Q, Q, rows * Hq * hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.K, K, rows * Hk * hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.V, V, rows * Hk * hd * 4, err);
    if (st == VW_OK && gate)
        st = d.put(&a.G, gate, rows * Hq * hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.O, nullptr, rows * Hq * hd * 4, err);
    if (st == VW_OK)
        st = d.put(&a.Qh, nullptr, rows * Hq * hd * 4, err, false);
    if (st == VW_OK)
        st = d.put(&a.Kh, nullptr, rows * Hk * hd * 4, err, false);
    if (st == VW_OK)
        st = d.put(&a.Vb, nullptr, rows * Hk * hd * 4, err, false);
    const bool tc = st == VW_OK && vw_cu_attn_tc_takes(&a);
    a.n_items = vw_cu_attn_items(segs, n_segs, tc ? split_tiles : 0, items, &a.n_split);
    if (st == VW_OK)
        st = d.put(&a.segs, segs, n_segs * sizeof *segs, err);
    if (st == VW_OK)
        st = d.put(&a.items, items, (a.n_items + a.n_split) * VW_ATT_ENTRY * 4, err);
    if (st == VW_OK && a.n_split) /* not cleared: a part that reads what none wrote shows */
        st = d.put(&a.ws, nullptr, vw_cu_attn_ws_floats(rows, Hq, hd) * 4, err, false);
    if (st == VW_OK) /* the executor opts in at creation; here, per call */
        st = vw_cu_attn_supported(hd, err);
    if (st == VW_OK && tc) /* the executor: attn_prep writes the planes */
        st = vw_cu_attn_planes(a.Q, a.K, a.V, rows, Hq, Hk, hd, (__half *)a.Qh, (__half *)a.Kh,
                               (__nv_bfloat16 *)a.Vb, 0, err);
    if (st == VW_OK)
        st = vw_cu_attention(&a, 0, err);
    if (st == VW_OK)
        st = get(O, a.O, rows * Hq * hd * 4, err);
    free(items);
    return st;
}

// Floats spanned by T rows of `width` at stride ld.
static size_t span(size_t T, size_t ld, size_t width) {
    return T ? (T - 1) * ld + width : 0;
}

// The device side of a delta-rule op: io's buffers, the sequences, their
// chunks and the scratch, uploaded into d; the caller sets the passes.
static vw_status gdn_upload(dev_bufs &d, vw_cuda_precision prec, const vw_gdn_io *io,
                            const vw_cuda_seg *segs, size_t n_segs, vw_cu_gdn *a, vw_err *err) {
    const size_t kw = io->Hk * io->dk, vw = io->Hv * io->dv, T = io->T;
    for (size_t i = 0; i < n_segs; i++)
        if (segs[i].start < 0 || segs[i].len < 0 || (size_t)segs[i].start + segs[i].len > T)
            return VW_FAIL(err, VW_EINVAL, "bad_shape", "ops_cuda gdn: sequence %zu outside T %zu",
                           i, T);
    vw_status st0 = vw_cu_gdn_supported(io->dk, io->dv, err); /* the executor: at creation */
    if (st0 != VW_OK)
        return st0;
    int32_t *chunks = (int32_t *)malloc((2 * T + 2) * sizeof *chunks);
    if (!chunks)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda gdn");
    *a = vw_cu_gdn{};
    a->n_chunks = vw_cu_gdn_chunks(segs, n_segs, chunks);
    a->ldq = io->ldq, a->ldk = io->ldk, a->ldv = io->ldv, a->ldo = io->ldo;
    a->Hk = io->Hk, a->Hv = io->Hv, a->dk = io->dk, a->dv = io->dv, a->rows = T, a->prec = prec;
    vw_status st = d.put(&a->q, io->q, span(T, io->ldq, kw) * 4, err);
    if (st == VW_OK)
        st = d.put(&a->k, io->k, span(T, io->ldk, kw) * 4, err);
    if (st == VW_OK)
        st = d.put(&a->v, io->v, span(T, io->ldv, vw) * 4, err);
    if (st == VW_OK)
        st = d.put(&a->g, io->g, T * io->Hv * 4, err);
    if (st == VW_OK)
        st = d.put(&a->beta, io->beta, T * io->Hv * 4, err);
    if (st == VW_OK) /* keep whatever the caller has between output rows */
        st = d.put(&a->out, io->out, span(T, io->ldo, vw) * 4, err);
    if (st == VW_OK)
        st = d.put(&a->chunks, chunks, a->n_chunks * 2 * 4, err);
    if (st == VW_OK) /* not cleared: NaN on the emulator, so reading an unwritten value shows */
        st = d.put(&a->ws, nullptr, vw_cu_gdn_ws_floats(T, io->Hv, io->dk, io->dv) * 4, err, false);
    free(chunks);
    return st;
}

// The sequences of io's rows into *out (the caller frees): seq_len[i] rows
// each, state slot i.
static vw_status gdn_segs(const vw_gdn_io *io, const size_t *seq_len, size_t n_seq,
                          vw_cuda_seg **out, vw_err *err) {
    vw_cuda_seg *segs = (vw_cuda_seg *)calloc(n_seq ? n_seq : 1, sizeof *segs);
    *out = segs;
    if (!segs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "ops_cuda gdn");
    size_t row = 0;
    for (size_t i = 0; i < n_seq; i++) {
        segs[i] = vw_cuda_seg{(int32_t)row, (int32_t)seq_len[i], 0, 0, 0, (int32_t)i};
        row += seq_len[i];
    }
    if (row != io->T)
        return VW_FAIL(err, VW_EINVAL, "bad_shape", "ops_cuda gdn: lengths sum to %zu, T = %zu",
                       row, io->T);
    return VW_OK;
}

extern "C" vw_status vw_cuda_op_gdn(vw_cuda_precision prec, const vw_gdn_io *io,
                                    const size_t *seq_len, size_t n_seq, const float *state_in,
                                    float *state_out, vw_err *err) {
    dev_bufs d;
    vw_cu_gdn a = {};
    const size_t sbytes = n_seq * io->Hv * io->dk * io->dv * 4;
    vw_cuda_seg *segs = nullptr;
    vw_status st = gdn_segs(io, seq_len, n_seq, &segs, err);
    if (st == VW_OK)
        st = gdn_upload(d, prec, io, segs, n_seq, &a, err);
    vw_cu_gdn_pass &p = a.pass[0];
    p.n_segs = n_seq;
    if (st == VW_OK && state_in)
        st = d.put(&p.init, state_in, sbytes, err);
    if (st == VW_OK && state_out)
        st = d.put(&p.final, nullptr, sbytes, err);
    if (st == VW_OK)
        st = d.put(&p.segs, segs, n_seq * sizeof *segs, err);
    if (st == VW_OK)
        st = vw_cu_gdn_run(&a, 0, err);
    if (st == VW_OK)
        st = get(io->out, a.out, span(io->T, io->ldo, io->Hv * io->dv) * 4, err);
    if (st == VW_OK && state_out)
        st = get(state_out, p.final, sbytes, err);
    free(segs);
    return st;
}

extern "C" vw_status vw_cuda_op_gdn_tree(vw_cuda_precision prec, const vw_gdn_io *io,
                                         const vw_cuda_seg *segs, size_t n_segs, size_t n_pre,
                                         size_t n_slots, float *slots, vw_err *err) {
    dev_bufs d;
    vw_cu_gdn a = {};
    const size_t sbytes = n_slots * io->Hv * io->dk * io->dv * 4;
    for (size_t i = 0; i < n_segs; i++)
        if (segs[i].state >= (int32_t)n_slots)
            return VW_FAIL(err, VW_EINVAL, "bad_shape", "ops_cuda gdn_tree: slot %d of %zu",
                           segs[i].state, n_slots);
    if (n_pre > n_segs)
        return VW_FAIL(err, VW_EINVAL, "bad_shape", "ops_cuda gdn_tree: %zu of %zu prefixes", n_pre,
                       n_segs);
    vw_status st = gdn_upload(d, prec, io, segs, n_segs, &a, err);
    vw_cuda_seg *dsegs = nullptr;
    float *dslots = nullptr;
    if (st == VW_OK)
        st = d.put(&dsegs, segs, n_segs * sizeof *segs, err);
    if (st == VW_OK)
        st = d.put(&dslots, nullptr, sbytes, err);
    a.pass[0] = vw_cu_gdn_pass{dsegs, n_pre, nullptr, dslots};
    a.pass[1] = vw_cu_gdn_pass{dsegs + n_pre, n_segs - n_pre, dslots, nullptr};
    if (st == VW_OK)
        st = vw_cu_gdn_run(&a, 0, err);
    if (st == VW_OK)
        st = get(io->out, a.out, span(io->T, io->ldo, io->Hv * io->dv) * 4, err);
    if (st == VW_OK && slots)
        st = get(slots, dslots, sbytes, err);
    return st;
}

extern "C" vw_status vw_cuda_op_gdn_prep(vw_cuda_precision prec, const vw_gdn_io *io,
                                         const size_t *seq_len, size_t n_seq, float *c, float *w,
                                         float *u, vw_err *err) {
    dev_bufs d;
    vw_cu_gdn a = {};
    const size_t T = io->T, Hv = io->Hv;
    vw_cuda_seg *segs = nullptr;
    vw_status st = gdn_segs(io, seq_len, n_seq, &segs, err);
    if (st == VW_OK)
        st = gdn_upload(d, prec, io, segs, n_seq, &a, err);
    if (st == VW_OK)
        st = vw_cu_gdn_prep(&a, 0, err);
    size_t ow, ou, oc; /* kernels.cuh: W' (planes on tensor cores), U', c */
    vw_cu_gdn_ws_at(T, Hv, io->dk, io->dv, &ow, &ou, &oc);
    if (st == VW_OK)
        st = get(w, a.ws + ow, T * Hv * io->dk * 4, err);
    if (st == VW_OK && vw_cu_gdn_tc_takes(&a))
        vw_cu_gdn_tc_planes_to_f32(w, T * Hv * io->dk);
    if (st == VW_OK)
        st = get(u, a.ws + ou, T * Hv * io->dv * 4, err);
    if (st == VW_OK)
        st = get(c, a.ws + oc, T * Hv * 4, err);
    free(segs);
    return st;
}
