// backbone_cuda.cu — the CUDA executor's lifetime: resolves options, checks the
// shapes against the kernels' limits, uploads the bundle's backbone weights
// into one device allocation (stacked like the CPU backend: GDN qkv|z|b|a,
// attention q/gate|k|v, MLP gate|up), sizes the activation arena from
// max_tokens/max_trees, builds the RoPE tables with the CPU's own function,
// and frees it all (see backbone_cuda.h). The forward pass is in
// backbone_cuda_fwd.cu.
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backbone_cuda_impl.cuh"
#include "model/ops_cpu.h"

namespace {

constexpr size_t ALIGN = 256, BLAS_WS = 32u << 20;

size_t max2(size_t a, size_t b) {
    return a > b ? a : b;
}

void derive_dims(cu_model *m) {
    vw_qwen35_dims_of(&m->c, &m->d);
    m->big_w = max2(max2(m->d.gdn_in, m->d.attn_in), 2 * m->d.F);
    m->mix_w = max2(m->d.cd, (m->d.Hq + 2 * m->d.Hk) * m->d.hd); /* Q|K, or Q|K|V planes */
    m->core_w = max2(m->d.vd, m->d.Hq * m->d.hd);
    m->xbf_w = max2(max2(m->d.H, m->core_w), m->d.F);
    m->wt_size = vw_cuda_bf16_weights(m->opts.precision) ? 2 : 4;
}

vw_status resolve_opts(const vw_cuda_opts *in, vw_cuda_opts *o, vw_err *err) {
    *o = in ? *in : vw_cuda_opts{};
    if (!o->max_tokens)
        o->max_tokens = 32768;
    if (!o->max_trees)
        o->max_trees = 256;
    if (!vw_cuda_precision_name(o->precision))
        return VW_FAIL(err, VW_EINVAL, "bad_option", "cuda: unknown precision %d", o->precision);
    if (o->batch_invariant && o->precision != VW_CUDA_FP32)
        return VW_FAIL(err, VW_EINVAL, "bad_option", "cuda: batch_invariant needs precision fp32");
    if (o->max_tokens > INT32_MAX / 2 || o->max_trees > o->max_tokens)
        return VW_FAIL(err, VW_EINVAL, "bad_option",
                       "cuda: max_tokens %zu / max_trees %zu out of range", o->max_tokens,
                       o->max_trees);
    return VW_OK;
}

// Bump allocator over a device range; with base == NULL it only measures.
struct carver {
    char *base;
    size_t off;
    void *take(size_t bytes) {
        off = (off + ALIGN - 1) / ALIGN * ALIGN;
        void *p = base ? base + off : nullptr;
        off += bytes;
        return p;
    }
    float *f32(size_t n) {
        return (float *)take(n * sizeof(float));
    }
};

size_t layout_weights(cu_model *m, char *base) {
    carver cv{base, 0};
    const size_t H = m->d.H, ws = m->wt_size;
    m->embed = cv.take((size_t)m->c.vocab * H * ws);
    m->final_norm = cv.f32(H);
    for (int32_t l = 0; l < m->c.n_layers; l++) {
        cu_layer_w *lw = &m->layers[l];
        lw->full = m->c.full_attention[l];
        lw->in_norm = cv.f32(H), lw->post_norm = cv.f32(H);
        lw->mlp_in = cv.take(2 * m->d.F * H * ws), lw->down = cv.take(H * m->d.F * ws);
        if (lw->full) {
            lw->a.in = cv.take(m->d.attn_in * H * ws);
            lw->a.q_norm = cv.f32(m->d.hd), lw->a.k_norm = cv.f32(m->d.hd);
            lw->a.o = cv.take(H * m->d.Hq * m->d.hd * ws);
        } else {
            lw->g.in = cv.take(m->d.gdn_in * H * ws), lw->g.conv = cv.f32(m->d.cd * m->d.K);
            lw->g.dt_bias = cv.f32(m->d.Hv), lw->g.A = cv.f32(m->d.Hv),
            lw->g.norm = cv.f32(m->d.dv);
            lw->g.out = cv.take(H * m->d.vd * ws);
        }
    }
    return cv.off;
}

size_t layout_arena(cu_model *m, char *base) {
    carver cv{base, 0};
    const size_t R = m->opts.max_tokens, H = m->d.H;
    m->h = cv.f32(R * H), m->x = cv.f32(R * H), m->delta = cv.f32(R * H);
    m->big = cv.f32(R * m->big_w), m->mix = cv.f32(R * m->mix_w), m->core = cv.f32(R * m->core_w);
    m->gb = cv.f32(2 * R * m->d.Hv);
    m->pstate = cv.f32(m->opts.max_trees * m->d.Hv * m->d.dk * m->d.dv);
    m->gdn_ws = cv.f32(max2(vw_cu_gdn_ws_floats(R, m->d.Hv, m->d.dk, m->d.dv),
                            vw_cu_attn_ws_floats(R, m->d.Hq, m->d.hd)));
    m->cos_t = cv.f32(R * (m->d.rot / 2)), m->sin_t = cv.f32(R * (m->d.rot / 2));
    /* The GEMM input's BF16 planes (gemm.cu): hi here; BF16X2's lo in mix, which
     * no GEMM input or output is while its producer writes it (a norm, SwiGLU,
     * the attention out-projection's cast: the mixers are done with mix then,
     * and the next layer's mixer writes it only after its in-projection), so
     * the arena does not grow; carved apart where mix is too narrow. */
    m->gemm.xbf_cap = vw_cuda_bf16_weights(m->opts.precision) ? R * m->xbf_w : 0;
    m->gemm.xbf = (__nv_bfloat16 *)cv.take(m->gemm.xbf_cap * sizeof(__nv_bfloat16));
    m->gemm.xbf_lo = nullptr;
    if (m->opts.precision == VW_CUDA_BF16X2)
        m->gemm.xbf_lo = 2 * m->xbf_w <= 4 * m->mix_w
                             ? (__nv_bfloat16 *)m->mix
                             : (__nv_bfloat16 *)cv.take(m->gemm.xbf_cap * sizeof(__nv_bfloat16));
    m->blas_ws_bytes = BLAS_WS, m->blas_ws = cv.take(BLAS_WS);
    m->dmeta.ids = (int32_t *)cv.take(R * sizeof(int32_t));
    m->dmeta.row_seg = (int32_t *)cv.take(R * sizeof(int32_t));
    m->dmeta.out_rows = (int32_t *)cv.take(R * sizeof(int32_t));
    m->dmeta.segs = (vw_cuda_seg *)cv.take(R * sizeof(vw_cuda_seg));
    m->dmeta.items = (int32_t *)cv.take(VW_ATT_ITEM_INTS * R * sizeof(int32_t));
    m->dmeta.chunks = (int32_t *)cv.take(2 * R * sizeof(int32_t));
    return cv.off;
}

// The same carve-up for the pinned host mirror of the metadata.
size_t layout_hmeta(cu_model *m, char *base) {
    carver cv{base, 0};
    const size_t R = m->opts.max_tokens;
    m->hmeta.ids = (int32_t *)cv.take(R * sizeof(int32_t));
    m->hmeta.row_seg = (int32_t *)cv.take(R * sizeof(int32_t));
    m->hmeta.out_rows = (int32_t *)cv.take(R * sizeof(int32_t));
    m->hmeta.segs = (vw_cuda_seg *)cv.take(R * sizeof(vw_cuda_seg));
    m->hmeta.items = (int32_t *)cv.take(VW_ATT_ITEM_INTS * R * sizeof(int32_t));
    m->hmeta.chunks = (int32_t *)cv.take(2 * R * sizeof(int32_t));
    return cv.off;
}

/* Host staging for tensors that need converting; grows, freed by the caller. */
struct staging {
    float *f = nullptr;
    __nv_bfloat16 *b = nullptr;
    size_t cap = 0;
    bool reserve(size_t n) {
        if (n <= cap)
            return true;
        free(f), free(b);
        f = (float *)malloc(n * sizeof *f);
        b = (__nv_bfloat16 *)malloc(n * sizeof *b);
        cap = f && b ? n : 0;
        return cap != 0;
    }
    ~staging() {
        free(f), free(b);
    }
};

// Copies one described backbone tensor (of layer l, or -1) to dst: matrices
// as WT, vectors FP32, formed as the description says (1 + w, -exp(A_log)) in
// FP32, as the CPU backend does.
vw_status upload(const cu_model *m, const vw_bundle *b, int l, const vw_qwen35_tensor *d, void *dst,
                 staging *sg, vw_err *err) {
    const vw_st_tensor *t = vw_bundle_layer_tensor(b, l, d->name, err);
    if (!t)
        return VW_EINVAL;
    const bool bf16 = d->matrix && vw_cuda_bf16_weights(m->opts.precision);
    const vw_qwen35_xform xf = d->xf;
    vw_status st = VW_OK;
    if (bf16 && xf == VW_QWEN35_AS_IS && t->dtype == VW_DT_BF16) { // as stored: no conversion
        st = VW_CUDA_TRY(err, cudaMemcpy(dst, t->data, t->numel * 2, cudaMemcpyHostToDevice));
    } else {
        if (!sg->reserve(t->numel))
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "staging %s (%zu floats)", t->name,
                           t->numel);
        if ((st = vw_st_to_f32(t, sg->f, err)) != VW_OK)
            return st;
        for (size_t i = 0; xf != VW_QWEN35_AS_IS && i < t->numel; i++)
            sg->f[i] = xf == VW_QWEN35_ONE_PLUS ? 1.0f + sg->f[i] : -expf(sg->f[i]);
        if (bf16)
            for (size_t i = 0; i < t->numel; i++)
                sg->b[i] = __float2bfloat16_rn(sg->f[i]);
        const void *src = bf16 ? (const void *)sg->b : (const void *)sg->f;
        st = VW_CUDA_TRY(err,
                         cudaMemcpy(dst, src, t->numel * (bf16 ? 2 : 4), cudaMemcpyHostToDevice));
    }
    vw_bundle_drop_pages(b, t);
    return st;
}

// Where a described tensor goes on the device (lw: its layer, or NULL).
void *target(const cu_model *m, const cu_layer_w *lw, vw_qwen35_target tg) {
    switch (tg) { VW_QWEN35_TARGET_CASES(m, lw); }
    return nullptr;
}

// The layer's tensors as core/model/qwen35_config.h describes them: stacked
// projections start at their row of the target (matrix rows are H wide).
vw_status upload_layer(const cu_model *m, const vw_bundle *b, int l, staging *sg, vw_err *err) {
    const cu_layer_w *lw = &m->layers[l];
    vw_qwen35_tensor ts[VW_QWEN35_LAYER_TENSORS_MAX];
    size_t n = vw_qwen35_layer_tensors(&m->c, lw->full, ts);
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++) {
        char *dst = (char *)target(m, lw, ts[i].target) + ts[i].row * m->d.H * m->wt_size;
        st = upload(m, b, l, &ts[i], dst, sg, err);
    }
    return st;
}

vw_status upload_weights(cu_model *m, const vw_bundle *b, vw_err *err) {
    size_t bytes = layout_weights(m, nullptr);
    cudaError_t ce = cudaMalloc(&m->weights, bytes);
    if (ce != cudaSuccess) {
        m->weights = nullptr;
        cudaGetLastError();
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cuda: %zu MiB of weights: %s", bytes >> 20,
                       cudaGetErrorString(ce));
    }
    layout_weights(m, (char *)m->weights);
    staging sg;
    vw_qwen35_tensor top[VW_QWEN35_MODEL_TENSORS];
    vw_qwen35_model_tensors(&m->c, top);
    vw_status st = VW_OK;
    for (size_t i = 0; i < VW_QWEN35_MODEL_TENSORS && st == VW_OK; i++)
        st = upload(m, b, -1, &top[i], target(m, nullptr, top[i].target), &sg, err);
    for (int32_t l = 0; l < m->c.n_layers && st == VW_OK; l++)
        st = upload_layer(m, b, l, &sg, err);
    return st;
}

// RoPE tables for positions 0 .. R-1 with the CPU's vw_rope_tables, so the
// angles are bit-identical to the reference (docs/spec/backbone.md §6.2).
vw_status upload_rope(cu_model *m, vw_err *err) {
    const size_t R = m->opts.max_tokens, half = m->d.rot / 2;
    if (!half)
        return VW_OK;
    float *c = (float *)malloc(R * half * sizeof *c), *s = (float *)malloc(R * half * sizeof *s);
    vw_status st = VW_OK;
    if (!c || !s)
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rope tables (%zu positions)", R);
    if (st == VW_OK) {
        vw_rope_tables(0, R, m->d.rot, m->c.rope_theta, c, s);
        st = VW_CUDA_TRY(err, cudaMemcpy(m->cos_t, c, R * half * 4, cudaMemcpyHostToDevice));
    }
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMemcpy(m->sin_t, s, R * half * 4, cudaMemcpyHostToDevice));
    free(c);
    free(s);
    return st;
}

// Which attention kernel the executor runs (the same for every call): the
// tensor-core one where it takes the shape, its FP16 operands bounded by the
// q/k norms: |x| <= sqrt(hd) max|1 + w| after an RMS norm (the sum of squares
// of the normed row is hd) and a rotation (RoPE keeps pair norms).
vw_status attn_choose(cu_model *m, vw_err *err) {
    const size_t hd = m->d.hd, R = m->opts.max_tokens;
    float *w = (float *)malloc(2 * hd * sizeof *w), wmax = 0.0f;
    if (!w)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cuda: norm weights");
    vw_status st = VW_OK;
    for (int32_t l = 0; l < m->c.n_layers && st == VW_OK; l++) {
        const cu_layer_w *lw = &m->layers[l];
        if (!lw->full)
            continue;
        st = VW_CUDA_TRY(err, cudaMemcpy(w, lw->a.q_norm, hd * 4, cudaMemcpyDeviceToHost));
        if (st == VW_OK)
            st = VW_CUDA_TRY(err, cudaMemcpy(w + hd, lw->a.k_norm, hd * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; st == VW_OK && i < 2 * hd; i++)
            wmax = isfinite(w[i]) ? fmaxf(wmax, fabsf(w[i])) : INFINITY;
    }
    free(w);
    vw_cu_attn probe = {};
    probe.Qh = (const __half *)m->mix, probe.Kh = probe.Qh + 2 * R * m->d.Hq * hd;
    probe.Vb = (const __nv_bfloat16 *)(probe.Kh + 2 * R * m->d.Hk * hd);
    probe.qk_max = sqrtf((float)hd) * wmax * 1.001f;
    probe.O = m->core, probe.ldo = m->d.Hq * hd;
    probe.Hq = m->d.Hq, probe.Hk = m->d.Hk, probe.hd = hd, probe.prec = m->opts.precision;
    m->attn_qk_max = probe.qk_max;
    m->attn_tc = st == VW_OK && vw_cu_attn_tc_takes(&probe);
    return st;
}

vw_status check_shapes(const cu_model *m, vw_err *err) {
    if (!m->d.Hk || m->d.Hq % m->d.Hk || !m->d.Hkl || m->d.Hv % m->d.Hkl || m->d.rot % 2 ||
        m->d.rot > m->d.hd)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "cuda: heads %zu/%zu, DeltaNet heads %zu/%zu, rotary %zu of %zu", m->d.Hq,
                       m->d.Hk, m->d.Hv, m->d.Hkl, m->d.rot, m->d.hd);
    vw_status st = vw_cu_attn_supported(m->d.hd, err);
    if (st == VW_OK)
        st = vw_cu_gdn_supported(m->d.dk, m->d.dv, err);
    return st;
}

void prof_free(cu_prof *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->cap; i++)
        if (p->ev[i])
            cudaEventDestroy(p->ev[i]);
    free(p->ev);
    free(p->cls);
    free(p);
}

void model_free(cu_model *m) {
    if (!m)
        return;
    vw_cuda_heads_free(m->heads);
    if (m->uploaded)
        cudaEventDestroy(m->uploaded);
    if (m->copy)
        cudaStreamDestroy(m->copy);
    prof_free(m->prof);
    vw_cu_graphs_free(m->graphs);
    if (m->done)
        cudaEventDestroy(m->done);
    if (m->blas)
        cublasDestroy(m->blas);
    if (m->stream)
        cudaStreamDestroy(m->stream);
    cudaFree(m->arena);
    cudaFree(m->weights);
    cudaFreeHost(m->hmeta_base);
    free(m->layers);
    free(m);
}

vw_status alloc_arena(cu_model *m, vw_err *err) {
    size_t bytes = layout_arena(m, nullptr), hbytes = layout_hmeta(m, nullptr);
    cudaError_t ce = cudaMalloc(&m->arena, bytes);
    if (ce == cudaSuccess)
        ce = cudaMallocHost(&m->hmeta_base, hbytes);
    if (ce != cudaSuccess) {
        cudaGetLastError();
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory",
                       "cuda: arena of %zu MiB for max_tokens %zu / max_trees %zu: %s", bytes >> 20,
                       m->opts.max_tokens, m->opts.max_trees, cudaGetErrorString(ce));
    }
    layout_arena(m, (char *)m->arena);
    layout_hmeta(m, (char *)m->hmeta_base);
    return VW_OK;
}

vw_status setup_device(cu_model *m, vw_err *err) {
    vw_status st = VW_CUDA_TRY(err, cudaSetDevice(m->opts.device));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    /* The end of a forward: waiting on it sleeps (blocking sync) unless the
     * options ask to spin. */
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaEventCreateWithFlags(
                                  &m->done, cudaEventDisableTiming |
                                                (m->opts.spin_wait ? 0u : cudaEventBlockingSync)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaStreamCreateWithFlags(&m->copy, cudaStreamNonBlocking));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaEventCreateWithFlags(&m->uploaded, cudaEventDisableTiming));
    if (st == VW_OK)
        st = VW_CUBLAS_TRY(err, cublasCreate(&m->blas));
    if (st == VW_OK)
        st = VW_CUBLAS_TRY(err, cublasSetStream(m->blas, m->stream));
    return st;
}

void cuda_destroy(vw_executor *ex) {
    if (ex && ex->impl) {
        cu_model *m = (cu_model *)ex->impl;
        cudaSetDevice(m->opts.device);
        model_free(m);
    }
    free(ex);
}

const vw_executor_ops cuda_ops = {"cuda", vw_cu_forward, cuda_destroy, nullptr};
const vw_executor_ops cuda_heads_ops = {"cuda", vw_cu_forward, cuda_destroy, vw_cu_heads_op};

// The package's readout heads onto the device (FP32), unless the options keep
// them on the host or the package has none (a backbone-only package). The
// host copies are freed once uploaded.
vw_status load_heads(cu_model *m, const vw_bundle *b, vw_err *err) {
    if (m->opts.host_heads || !vw_bundle_find(b, VW_HEAD_CAND_PREFIX "key.weight"))
        return VW_OK;
    vw_head_tensors ht = {};
    ht.bundle = b;
    vw_cand_head cand;
    vw_span_head router, broad;
    const bool has_broad = vw_bundle_has_broad_head(b) != 0;
    vw_status st = vw_cand_head_init(&cand, vw_head_tensors_lookup, &ht, VW_HEAD_CAND_PREFIX, err);
    if (st == VW_OK)
        st = vw_span_head_init(&router, vw_head_tensors_lookup, &ht, VW_HEAD_ROUTER_PREFIX, err);
    if (st == VW_OK && has_broad)
        st = vw_span_head_init(&broad, vw_head_tensors_lookup, &ht, VW_HEAD_BROAD_PREFIX, err);
    if (st == VW_OK && cand.hidden != m->d.H)
        st = VW_FAIL(err, VW_EINVAL, "bad_shape", "cuda: head width %zu, backbone %zu", cand.hidden,
                     m->d.H);
    if (st == VW_OK)
        st = vw_cuda_heads_new(&cand, &router, has_broad ? &broad : nullptr, m->opts.max_tokens,
                               &m->heads, err);
    vw_head_tensors_free(&ht);
    return st;
}

} // namespace

size_t vw_backbone_cuda_arena_bytes(const vw_qwen35_config *cfg, const vw_cuda_opts *opts) {
    cu_model m{};
    m.c = *cfg;
    if (resolve_opts(opts, &m.opts, nullptr) != VW_OK)
        return 0;
    derive_dims(&m);
    return layout_arena(&m, nullptr);
}

vw_status vw_backbone_cuda_new(const vw_bundle *b, const vw_cuda_opts *opts, vw_executor **out,
                               vw_err *err) {
    *out = nullptr;
    vw_executor *ex = (vw_executor *)calloc(1, sizeof *ex);
    cu_model *m = (cu_model *)calloc(1, sizeof *m);
    vw_status st = VW_OK;
    if (!ex || !m) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cuda executor");
        goto done;
    }
    m->c = *vw_bundle_backbone_config(b);
    if ((st = resolve_opts(opts, &m->opts, err)) != VW_OK)
        goto done;
    derive_dims(m);
    m->layers = (cu_layer_w *)calloc((size_t)m->c.n_layers, sizeof *m->layers);
    if (!m->layers) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cuda layer table");
        goto done;
    }
    if ((st = setup_device(m, err)) != VW_OK || (st = check_shapes(m, err)) != VW_OK)
        goto done;
    if ((st = upload_weights(m, b, err)) != VW_OK || (st = alloc_arena(m, err)) != VW_OK)
        goto done;
    if ((st = attn_choose(m, err)) != VW_OK)
        goto done;
    if ((st = upload_rope(m, err)) != VW_OK || (st = load_heads(m, b, err)) != VW_OK)
        goto done;
    /* The uploads are cudaMemcpy from pageable memory on the legacy stream: it
     * may return before the DMA lands, and the executor's non-blocking stream
     * does not wait for the legacy one. */
    if ((st = VW_CUDA_TRY(err, cudaDeviceSynchronize())) != VW_OK)
        goto done;
    st = VW_CUBLAS_TRY(err, cublasSetWorkspace(m->blas, m->blas_ws, m->blas_ws_bytes));
    if (st != VW_OK)
        goto done;
    if (!m->opts.no_graphs && !(m->graphs = (cu_graphs *)calloc(1, sizeof *m->graphs))) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cuda graphs");
        goto done;
    }
    m->gemm.blas = m->blas, m->gemm.stream = m->stream;
    m->gemm.prec = m->opts.precision, m->gemm.invariant = m->opts.batch_invariant;
    ex->ops = m->heads ? &cuda_heads_ops : &cuda_ops;
    ex->hidden = m->d.H, ex->vocab = m->c.vocab, ex->impl = m;
    *out = ex;
done:
    if (st != VW_OK) {
        model_free(m);
        free(ex);
    }
    return st;
}

const char *vw_cuda_kclass_name(vw_cuda_kclass k) {
    static const char *const names[VW_CUK_COUNT] = {"delta_rule", "attention", "gemm", "rest"};
    return (unsigned)k < VW_CUK_COUNT ? names[k] : "?";
}

vw_status vw_backbone_cuda_profile(vw_executor *ex, int on, vw_err *err) {
    if (!ex || ex->ops->forward != vw_cu_forward)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "profile: not a CUDA executor");
    cu_model *m = (cu_model *)ex->impl;
    if (on && !m->prof) {
        /* Marks per forward: a few per layer (classes alternate at most ~12
         * times in one), plus the embedding, gather and copies. */
        const size_t cap = 16 * (size_t)m->c.n_layers + 16;
        cu_prof *p = (cu_prof *)calloc(1, sizeof *p);
        if (p) {
            p->ev = (cudaEvent_t *)calloc(cap, sizeof *p->ev);
            p->cls = (int *)calloc(cap, sizeof *p->cls);
            p->cap = p->ev && p->cls ? cap : 0;
        }
        if (!p || !p->cap) {
            prof_free(p);
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "profile marks");
        }
        vw_status st = VW_CUDA_TRY(err, cudaSetDevice(m->opts.device));
        for (size_t i = 0; i < cap && st == VW_OK; i++)
            st = VW_CUDA_TRY(err, cudaEventCreate(&p->ev[i]));
        if (st != VW_OK) {
            prof_free(p);
            return st;
        }
        m->prof = p;
    }
    if (m->prof)
        m->prof->on = on;
    return VW_OK;
}

vw_status vw_backbone_cuda_launches(vw_executor *ex, vw_cuda_launches *out, vw_err *err) {
    if (!ex || ex->ops->forward != vw_cu_forward)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "launches: not a CUDA executor");
    const cu_model *m = (const cu_model *)ex->impl;
    *out = m->graphs ? m->graphs->last : vw_cuda_launches{};
    return VW_OK;
}

vw_status vw_backbone_cuda_profile_read(vw_executor *ex, double ms[VW_CUK_COUNT], double *total_ms,
                                        vw_err *err) {
    if (!ex || ex->ops->forward != vw_cu_forward)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "profile: not a CUDA executor");
    const cu_prof *p = ((const cu_model *)ex->impl)->prof;
    for (int k = 0; k < VW_CUK_COUNT; k++)
        ms[k] = 0;
    *total_ms = 0;
    if (!p || p->n < 2)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "profile: no profiled forward yet");
    for (size_t i = 0; i + 1 < p->n; i++) {
        float t = 0;
        vw_status st = VW_CUDA_TRY(err, cudaEventElapsedTime(&t, p->ev[i], p->ev[i + 1]));
        if (st != VW_OK)
            return st;
        ms[p->cls[i]] += t;
        *total_ms += t;
    }
    return VW_OK;
}
