// backbone_cuda_fwd.cu — the CUDA executor's forward pass (see backbone_cuda.h).
// Reads top to bottom like core/model/backbone_layers.c: plan the packed batch,
// embed, then per layer [norm -> DeltaNet or gated attention -> add + norm ->
// SwiGLU -> add + next norm], gather the readout rows. Never allocates.
#include <math.h>
#include <string.h>

#include "backbone_cuda_impl.cuh"

namespace {

// ---- plan ----------------------------------------------------------------

vw_status plan_size(const cu_model *m, const vw_tree *trees, size_t n_trees, cu_plan *p,
                    vw_err *err) {
    *p = cu_plan{};
    p->n_trees = p->n_segs = n_trees;
    for (size_t t = 0; t < n_trees; t++) {
        p->rows += trees[t].n_prefix;
        p->n_out += trees[t].n_prefix_readouts;
        p->n_segs += trees[t].n_blocks;
        for (size_t b = 0; b < trees[t].n_blocks; b++) {
            p->rows += trees[t].blocks[b].n_ids;
            p->n_out += trees[t].blocks[b].n_readouts;
        }
    }
    const size_t R = m->opts.max_tokens;
    if (p->rows > R || n_trees > m->opts.max_trees || p->n_out > R)
        return VW_FAIL(err, VW_ETRANSIENT, "batch_too_large",
                       "cuda: batch of %zu trees, %zu tokens, %zu readouts exceeds the arena "
                       "(max_trees %zu, max_tokens %zu); split the batch",
                       n_trees, p->rows, p->n_out, m->opts.max_trees, R);
    return VW_OK;
}

void put_seg(const cu_model *m, size_t s, const int32_t *ids, vw_cuda_seg sg) {
    const cu_meta *h = &m->hmeta;
    h->segs[s] = sg;
    memcpy(h->ids + sg.start, ids, (size_t)sg.len * sizeof *ids);
    for (int32_t i = 0; i < sg.len; i++)
        h->row_seg[sg.start + i] = (int32_t)s;
}

size_t put_readouts(const cu_model *m, size_t k, int32_t start, const int32_t *idx, size_t n) {
    for (size_t i = 0; i < n; i++)
        m->hmeta.out_rows[k++] = start + idx[i];
    return k;
}

// Fills the pinned metadata: prefixes first (segment t = tree t), then every
// block in tree order, each continuing its tree's prefix at position n_prefix.
void plan_fill(const cu_model *m, const vw_tree *trees, cu_plan *p) {
    int32_t row = 0;
    for (size_t t = 0; t < p->n_trees; t++) {
        const vw_tree *tr = &trees[t];
        put_seg(m, t, tr->prefix, vw_cuda_seg{row, (int32_t)tr->n_prefix, 0, 0, 0, (int32_t)t});
        row += (int32_t)tr->n_prefix;
    }
    size_t s = p->n_trees, k = 0;
    for (size_t t = 0; t < p->n_trees; t++) {
        const vw_tree *tr = &trees[t];
        const vw_cuda_seg pre = m->hmeta.segs[t];
        k = put_readouts(m, k, pre.start, tr->prefix_readouts, tr->n_prefix_readouts);
        for (size_t b = 0; b < tr->n_blocks; b++, s++) {
            const vw_block *bl = &tr->blocks[b];
            put_seg(m, s, bl->ids,
                    vw_cuda_seg{row, (int32_t)bl->n_ids, pre.len, pre.start, pre.len, (int32_t)t});
            k = put_readouts(m, k, row, bl->readouts, bl->n_readouts);
            row += (int32_t)bl->n_ids;
        }
    }
    const int ts = m->opts.attn_split_tiles, split = !m->attn_tc ? 0
                                                     : ts        ? (ts > 0 ? ts : 0)
                                                                 : vw_cu_attn_split_tiles(p->rows);
    p->n_items = vw_cu_attn_items(m->hmeta.segs, p->n_segs, split, m->hmeta.items, &p->n_split);
    p->n_chunks = vw_cu_gdn_chunks(m->hmeta.segs, p->n_segs, m->hmeta.chunks);
}

vw_status plan_upload(const cu_model *m, const cu_plan *p, vw_err *err) {
    const cu_meta *h = &m->hmeta, *d = &m->dmeta;
    struct {
        void *dst;
        const void *src;
        size_t bytes;
    } cp[] = {{d->ids, h->ids, p->rows * 4},
              {d->row_seg, h->row_seg, p->rows * 4},
              {d->out_rows, h->out_rows, p->n_out * 4},
              {d->segs, h->segs, p->n_segs * sizeof(vw_cuda_seg)},
              {d->items, h->items, (p->n_items + p->n_split) * VW_ATT_ENTRY * 4},
              {d->chunks, h->chunks, p->n_chunks * 2 * 4}};
    vw_status st = VW_OK;
    for (size_t i = 0; i < sizeof cp / sizeof cp[0] && st == VW_OK; i++)
        if (cp[i].bytes)
            st = VW_CUDA_TRY(err, cudaMemcpyAsync(cp[i].dst, cp[i].src, cp[i].bytes,
                                                  cudaMemcpyHostToDevice, m->stream));
    return st;
}

// ---- layers ----------------------------------------------------------------

// §3.5: Gated DeltaNet on x [R, H]; out_proj(...) into delta [R, H].
vw_status gdn_layer(const cu_model *m, const cu_gdn_w *w, const cu_plan *p, vw_err *err) {
    const size_t R = p->rows, W = m->d.gdn_in, cd = m->d.cd, kd = m->d.kd, vd = m->d.vd;
    const cudaStream_t s = m->stream;
    float *g = m->gb, *beta = m->gb + R * m->d.Hv;
    /* 1. qkv | z | b | a = x W^T -> big [R, W] */
    vw_cu_mark(m, VW_CUK_GEMM); /* x's planes: from the norm before (mlp_block, run_layers) */
    vw_status st =
        vw_cu_linear_planes(&m->gemm, m->x, m->d.H, w->in, m->big, W, R, W, m->d.H, 0, err);
    /* 2-3. causal conv from each sequence's history + SiLU -> mix [R, cd] */
    /* 7. l2norm q (times dk^-0.5) and k per key head; 5-6. g, beta from the
     * b | a columns: one launch with the conv (vw_cu_gdn_inputs) */
    vw_cu_mark(m, VW_CUK_REST);
    vw_cu_gdn_in in = {};
    in.x = m->big, in.ldx = W, in.w = w->conv, in.K = m->d.K;
    in.segs = m->dmeta.segs, in.row_seg = m->dmeta.row_seg, in.rows = R;
    in.Hk = m->d.Hkl, in.dk = m->d.dk, in.vd = vd, in.y = m->mix;
    in.eps = 1e-6f, in.qscale = 1.0f / sqrtf((float)m->d.dk);
    in.ba = m->big + cd + vd, in.ldba = W, in.A = w->A, in.dt_bias = w->dt_bias, in.Hv = m->d.Hv;
    in.g = g, in.beta = beta;
    if (st == VW_OK)
        st = vw_cu_gdn_inputs(&in, s, err);
    /* 8. delta rule over every chunk at once; the state passes: prefixes from
     * zero (keeping their final state), then blocks from their prefix's state
     * -> core [R, vd] */
    vw_cu_gdn a = {};
    a.q = m->mix, a.k = m->mix + kd, a.v = m->mix + 2 * kd, a.ldq = a.ldk = a.ldv = cd;
    a.g = g, a.beta = beta, a.out = m->core, a.ldo = vd;
    a.Hk = m->d.Hkl, a.Hv = m->d.Hv, a.dk = m->d.dk, a.dv = m->d.dv;
    a.rows = R, a.chunks = m->dmeta.chunks, a.n_chunks = p->n_chunks, a.ws = m->gdn_ws;
    a.prec = m->opts.precision;
    a.pass[0] = vw_cu_gdn_pass{m->dmeta.segs, p->n_trees, nullptr, m->pstate};
    a.pass[1] =
        vw_cu_gdn_pass{m->dmeta.segs + p->n_trees, p->n_segs - p->n_trees, m->pstate, nullptr};
    vw_cu_mark(m, VW_CUK_DELTA);
    if (st == VW_OK)
        st = vw_cu_gdn_run(&a, s, err);
    /* 9. gated RMSNorm with silu(z) */
    vw_cu_mark(m, VW_CUK_REST);
    if (st == VW_OK)
        st = vw_cu_gated_rmsnorm(m->core, vd, m->big + cd, W, w->norm, m->c.rms_eps, R, m->d.Hv,
                                 m->d.dv, vw_cu_gemm_planes(&m->gemm), s, err);
    /* 10. delta = y W_out^T */
    vw_cu_mark(m, VW_CUK_GEMM);
    if (st == VW_OK)
        st = vw_cu_linear_planes(&m->gemm, m->core, vd, w->out, m->delta, m->d.H, R, m->d.H, vd, 0,
                                 err);
    return st;
}

// §3.4: gated GQA attention on x [R, H]; o_proj(...) into delta [R, H]. Blocks
// read their prefix's K/V rows in place (same packed buffers). On tensor
// cores attn_prep writes Q, K and V once as the planes the kernel reads.
vw_status attn_layer(const cu_model *m, const cu_attn_w *w, const cu_plan *p, vw_err *err) {
    const size_t R = p->rows, W = m->d.attn_in, hd = m->d.hd, qw = m->d.Hq * hd;
    const size_t cap = m->opts.max_tokens;
    float *Q = m->mix, *K = m->mix + R * qw;
    __half *Qh = (__half *)m->mix, *Kh = Qh + 2 * cap * qw;
    __nv_bfloat16 *Vb = (__nv_bfloat16 *)(Kh + 2 * cap * m->d.Hk * hd);
    const float *V = m->big + m->d.attn_q2 + m->d.attn_kv;
    vw_cu_mark(m, VW_CUK_GEMM); /* x's planes: from the norm before */
    vw_status st =
        vw_cu_linear_planes(&m->gemm, m->x, m->d.H, w->in, m->big, W, R, W, m->d.H, 0, err);
    vw_cu_attn_prep ap = {};
    ap.proj = m->big, ap.ldp = W, ap.q_norm = w->q_norm, ap.k_norm = w->k_norm;
    ap.eps = m->c.rms_eps, ap.cos_t = m->cos_t, ap.sin_t = m->sin_t, ap.rot = m->d.rot;
    ap.segs = m->dmeta.segs, ap.row_seg = m->dmeta.row_seg, ap.rows = R;
    ap.Hq = m->d.Hq, ap.Hk = m->d.Hk, ap.hd = hd;
    if (m->attn_tc)
        ap.Qh = Qh, ap.Kh = Kh, ap.Vb = Vb, ap.V = V, ap.ldv = W;
    else
        ap.Q = Q, ap.K = K;
    vw_cu_mark(m, VW_CUK_REST);
    if (st == VW_OK)
        st = vw_cu_attn_prep_run(&ap, m->stream, err);
    vw_cu_attn at = {};
    at.Q = Q, at.K = K, at.V = V, at.ldv = W;
    if (m->attn_tc)
        at.Qh = Qh, at.Kh = Kh, at.Vb = Vb;
    at.qk_max = m->attn_qk_max;
    at.G = m->big + hd, at.ldg = W, at.gstride = 2 * hd;
    at.O = m->core, at.ldo = qw, at.Hq = m->d.Hq, at.Hk = m->d.Hk, at.hd = hd, at.rows = R;
    at.segs = m->dmeta.segs, at.items = m->dmeta.items, at.n_items = p->n_items;
    at.n_split = p->n_split, at.ws = m->gdn_ws, at.prec = m->opts.precision;
    vw_cu_mark(m, VW_CUK_ATTENTION);
    if (st == VW_OK)
        st = vw_cu_attention(&at, m->stream, err);
    vw_cu_mark(m, VW_CUK_GEMM);
    if (st == VW_OK)
        st = vw_cu_linear(&m->gemm, m->core, qw, w->o, m->delta, m->d.H, R, m->d.H, qw, 0, err);
    return st;
}

// §3.3 + §3.6: h += mixer; x = post_norm(h); delta = down(silu(gate) * up);
// h += delta; x = next_norm(h) (the next layer's input norm, or the final norm).
vw_status mlp_block(const cu_model *m, const cu_layer_w *lw, const float *next_norm,
                    const cu_plan *p, vw_err *err) {
    const size_t R = p->rows, H = m->d.H, F = m->d.F;
    const float eps = m->c.rms_eps;
    /* Each producer writes the next GEMM's BF16 planes beside its FP32 output
     * (none in FP32 mode; none after the final norm, whose rows are gathered). */
    const vw_cu_planes pl = vw_cu_gemm_planes(&m->gemm), none = {nullptr, nullptr};
    vw_cu_mark(m, VW_CUK_REST);
    vw_status st =
        vw_cu_add_rmsnorm(m->h, m->delta, lw->post_norm, eps, R, H, m->x, pl, m->stream, err);
    vw_cu_mark(m, VW_CUK_GEMM);
    if (st == VW_OK)
        st = vw_cu_linear_planes(&m->gemm, m->x, H, lw->mlp_in, m->big, 2 * F, R, 2 * F, H, 0, err);
    vw_cu_mark(m, VW_CUK_REST);
    if (st == VW_OK)
        st = vw_cu_swiglu(m->big, R, F, pl, m->stream, err);
    vw_cu_mark(m, VW_CUK_GEMM);
    if (st == VW_OK)
        st = vw_cu_linear_planes(&m->gemm, m->big, 2 * F, lw->down, m->delta, H, R, H, F, 0, err);
    vw_cu_mark(m, VW_CUK_REST);
    if (st == VW_OK)
        st = vw_cu_add_rmsnorm(m->h, m->delta, next_norm, eps, R, H, m->x,
                               next_norm == m->final_norm ? none : pl, m->stream, err);
    return st;
}

vw_status run_layers(const cu_model *m, const cu_plan *p, vw_err *err) {
    const size_t R = p->rows, H = m->d.H;
    const bool bf16 = vw_cuda_bf16_weights(m->opts.precision);
    vw_status st = vw_cu_embed(m->embed, bf16, m->dmeta.ids, R, H, m->h, m->stream, err);
    if (st == VW_OK) /* x = input_norm_0(h) */
        st = vw_cu_add_rmsnorm(m->h, nullptr, m->layers[0].in_norm, m->c.rms_eps, R, H, m->x,
                               vw_cu_gemm_planes(&m->gemm), m->stream, err);
    for (int32_t l = 0; l < m->c.n_layers && st == VW_OK; l++) {
        const cu_layer_w *lw = &m->layers[l];
        st = lw->full ? attn_layer(m, &lw->a, p, err) : gdn_layer(m, &lw->g, p, err);
        const float *next = l + 1 < m->c.n_layers ? m->layers[l + 1].in_norm : m->final_norm;
        if (st == VW_OK)
            st = mlp_block(m, lw, next, p, err);
    }
    return st;
}

// The forward's device work on m->stream: the metadata uploads, the layers,
// the gather of the readout rows into delta.
vw_status enqueue(const cu_model *m, const cu_plan *p, vw_err *err) {
    vw_cu_mark(m, VW_CUK_REST);
    vw_status st = plan_upload(m, p, err);
    if (st == VW_OK)
        st = run_layers(m, p, err);
    /* x now holds the final-normed rows; gather the readouts into delta. */
    vw_cu_mark(m, VW_CUK_REST);
    if (st == VW_OK && p->n_out)
        st = vw_cu_gather_rows(m->x, m->d.H, m->dmeta.out_rows, p->n_out, m->delta, m->stream, err);
    vw_cu_mark(m, VW_CUK_COUNT); /* closes the last span */
    return st;
}

} // namespace

void vw_cu_mark(const cu_model *m, int k) {
    cu_prof *p = m->prof;
    if (!p || !p->on || k == p->last || p->n == p->cap)
        return;
    if (cudaEventRecord(p->ev[p->n], m->stream) != cudaSuccess) {
        cudaGetLastError();
        return; /* a lost mark merges two spans: timing only */
    }
    p->cls[p->n++] = k;
    p->last = k;
}

vw_status vw_cu_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                        vw_err *err) {
    const cu_model *m = (const cu_model *)ex->impl; // trees validated by vw_executor_forward
    vw_status st;
    cu_plan p;
    if ((st = plan_size(m, trees, n_trees, &p, err)) != VW_OK)
        return st;
    if ((st = VW_CUDA_TRY(err, cudaSetDevice(m->opts.device))) != VW_OK)
        return st;
    /* The pinned metadata may still feed the previous call's copies (a call
     * that failed half-way; after a whole one the stream is idle and this
     * returns at once). */
    if ((st = VW_CUDA_TRY(err, cudaStreamSynchronize(m->stream))) != VW_OK)
        return st;
    if (m->prof) {
        m->prof->n = 0;
        m->prof->last = -1;
    }
    plan_fill(m, trees, &p);
    /* As one graph (kept per shape), unless graphs are off or the forward is
     * profiled (its event marks are direct calls). */
    if (m->graphs && !(m->prof && m->prof->on))
        st = vw_cu_graph_forward(m, m->graphs, &p, enqueue, err);
    else {
        if (m->graphs)
            m->graphs->last = vw_cuda_launches{};
        st = enqueue(m, &p, err);
    }
    /* No rows wanted (the heads op follows, executor.h "Heads"): return with
     * the device still working; the heads op queues behind the forward and
     * waits for both. */
    if (st != VW_OK || !rows)
        return st;
    /* Wait for the end: the thread sleeps in a blocking-sync event (or spins,
     * opts.spin_wait) instead of polling the stream. Only then the copy: a
     * copy to pageable memory returns when it is done, so queued behind the
     * forward it would hold the thread in the driver's own wait (a spin) for
     * the whole forward. The stream is idle by now: the copy starts at once. */
    st = VW_CUDA_TRY(err, cudaEventRecord(m->done, m->stream));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaEventSynchronize(m->done));
    if (st == VW_OK && p.n_out)
        st = VW_CUDA_TRY(err, cudaMemcpy(rows, m->delta, p.n_out * m->d.H * sizeof(float),
                                         cudaMemcpyDeviceToHost));
    return st;
}

vw_status vw_cu_heads_op(vw_executor *ex, const vw_head_job *job, vw_err *err) {
    const cu_model *m = (const cu_model *)ex->impl;
    vw_status st = VW_CUDA_TRY(err, cudaSetDevice(m->opts.device));
    if (st != VW_OK)
        return st;
    /* After the gather the forward is done with h (the residual stream), big
     * (projections) and core (mixer output): the heads' scratch, used on the
     * same stream, after it. The rows are the gathered readouts in delta. */
    const size_t R = m->opts.max_tokens;
    const vw_cu_heads_scratch sc = {m->h, R * m->d.H, m->big, R * m->big_w, m->core, R * m->core_w};
    const vw_cu_heads_streams ss = {m->stream, m->copy, m->uploaded, m->done};
    return vw_cu_heads_run(m->heads, m->delta, ex->rows_left, job, &sc, &ss, err);
}
