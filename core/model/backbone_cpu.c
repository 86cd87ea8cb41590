/* backbone_cpu.c — the CPU executor: loads FP32 weights from a bundle and runs
 * token trees (see backbone_cpu.h). The layer math lives in backbone_layers.c;
 * this file owns the weight arena, the per-call scratch and the prefix/block
 * state handling. */
#include "backbone_cpu.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backbone_cpu_impl.h"
#include "delta_rule.h"
#include "ops_cpu.h"
#include "ops_par.h"

/* ---- load ---------------------------------------------------------------- */

static void derive_dims(cpu_model *m) {
    vw_qwen35_dims_of(&m->c, &m->d);
    m->gdn_state = m->d.Hv * m->d.dk * m->d.dv + (m->d.K - 1) * m->d.cd;
}

/* Floats of one layer's weights, in the order slice_layer hands them out. */
static size_t layer_floats(const cpu_model *m, int full) {
    size_t n = 2 * m->d.H + 2 * m->d.F * m->d.H + m->d.H * m->d.F;
    if (full)
        return n + m->d.attn_in * m->d.H + 2 * m->d.hd + m->d.H * m->d.Hq * m->d.hd;
    return n + m->d.gdn_in * m->d.H + m->d.cd * m->d.K + 2 * m->d.Hv + m->d.dv + m->d.H * m->d.vd;
}

static float *take(float **p, size_t n) {
    float *r = *p;
    *p += n;
    return r;
}

static void slice_layer(cpu_model *m, layer_w *lw, float **p) {
    const size_t H = m->d.H;
    lw->in_norm = take(p, H), lw->post_norm = take(p, H);
    lw->mlp_in = take(p, 2 * m->d.F * H), lw->down = take(p, H * m->d.F);
    if (lw->full) {
        lw->a.in = take(p, m->d.attn_in * H);
        lw->a.q_norm = take(p, m->d.hd), lw->a.k_norm = take(p, m->d.hd);
        lw->a.o = take(p, H * m->d.Hq * m->d.hd);
    } else {
        lw->g.in = take(p, m->d.gdn_in * H), lw->g.conv = take(p, m->d.cd * m->d.K);
        lw->g.dt_bias = take(p, m->d.Hv), lw->g.A = take(p, m->d.Hv);
        lw->g.norm = take(p, m->d.dv), lw->g.out = take(p, H * m->d.vd);
    }
}

/* Upcasts the backbone tensor t (of layer l, or -1) into dst, forms it as the
 * description says (1 + w, -exp), then drops its pages from the resident set. */
static vw_status load(const vw_bundle *b, int l, const vw_qwen35_tensor *t, float *dst,
                      vw_err *err) {
    const vw_st_tensor *st_t = vw_bundle_layer_tensor(b, l, t->name, err);
    if (!st_t)
        return VW_EINVAL;
    vw_status st = vw_st_to_f32(st_t, dst, err);
    if (st != VW_OK)
        return st;
    for (size_t i = 0; t->xf != VW_QWEN35_AS_IS && i < st_t->numel; i++)
        dst[i] = t->xf == VW_QWEN35_ONE_PLUS ? 1.0f + dst[i] : -expf(dst[i]);
    vw_bundle_drop_pages(b, st_t);
    return VW_OK;
}

/* Where a described tensor goes in this layer (or in the model). */
static float *target(const cpu_model *m, const layer_w *lw, vw_qwen35_target tg) {
    switch (tg) { VW_QWEN35_TARGET_CASES(m, lw); }
    return NULL;
}

/* The layer's tensors as qwen35_config.h describes them: stacked projections
 * start at their row of the target. */
static vw_status load_layer(const cpu_model *m, const vw_bundle *b, int l, const layer_w *lw,
                            vw_err *err) {
    vw_qwen35_tensor ts[VW_QWEN35_LAYER_TENSORS_MAX];
    size_t n = vw_qwen35_layer_tensors(&m->c, lw->full, ts);
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++)
        st = load(b, l, &ts[i], target(m, lw, ts[i].target) + ts[i].row * m->d.H, err);
    return st;
}

static void model_free(cpu_model *m) {
    if (!m)
        return;
    vw_pool_free(m->pool);
    free(m->layers);
    free(m->arena);
    free(m);
}

static vw_status model_load(const vw_bundle *b, cpu_model **out, vw_err *err) {
    cpu_model *m = calloc(1, sizeof *m);
    if (!m)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cpu backbone");
    m->c = *vw_bundle_backbone_config(b);
    derive_dims(m);
    size_t total = (size_t)m->c.vocab * m->d.H + m->d.H;
    for (int32_t l = 0; l < m->c.n_layers; l++)
        total += layer_floats(m, m->c.full_attention[l]);
    vw_status st = VW_OK;
    m->layers = calloc((size_t)m->c.n_layers, sizeof *m->layers);
    m->arena = malloc(total * sizeof(float));
    if (!m->layers || !m->arena) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "cpu backbone weights (%zu floats)", total);
        goto done;
    }
    float *p = m->arena;
    m->embed = take(&p, (size_t)m->c.vocab * m->d.H), m->final_norm = take(&p, m->d.H);
    size_t n_attn = 0, n_gdn = 0;
    for (int32_t l = 0; l < m->c.n_layers; l++) {
        layer_w *lw = &m->layers[l];
        lw->full = m->c.full_attention[l];
        lw->slot = lw->full ? n_attn++ : n_gdn++;
        slice_layer(m, lw, &p);
    }
    vw_qwen35_tensor top[VW_QWEN35_MODEL_TENSORS];
    vw_qwen35_model_tensors(&m->c, top);
    for (size_t i = 0; i < VW_QWEN35_MODEL_TENSORS && st == VW_OK; i++)
        st = load(b, -1, &top[i], target(m, NULL, top[i].target), err);
    for (int32_t l = 0; l < m->c.n_layers && st == VW_OK; l++)
        st = load_layer(m, b, l, &m->layers[l], err);
done:
    if (st != VW_OK) {
        model_free(m);
        m = NULL;
    }
    *out = m;
    return st;
}

/* ---- forward ------------------------------------------------------------- */

typedef struct call_mem {
    float *base;
    cpu_scratch sc;
    float *prefix_gdn, *block_gdn, *prefix_kv;
} call_mem;

/* One allocation for a call: scratch for segments <= T tokens after <= P
 * prefix tokens and the pool's workers, the prefix state and a block's copy
 * of the GDN state. */
static vw_status call_alloc(const cpu_model *m, size_t T, size_t P, call_mem *cm, vw_err *err) {
    const size_t big = m->d.gdn_in > m->d.attn_in ? m->d.gdn_in : m->d.attn_in;
    const size_t core = m->d.vd > m->d.Hq * m->d.hd ? m->d.vd : m->d.Hq * m->d.hd;
    const size_t workers = vw_pool_threads(m->pool);
    const size_t mlp_rows = T < VW_MLP_ROWS ? T : VW_MLP_ROWS;
    const size_t window = (T + VW_GDN_CHUNK - 1) / VW_GDN_CHUNK < VW_GDN_WINDOW
                              ? (T + VW_GDN_CHUNK - 1) / VW_GDN_CHUNK
                              : VW_GDN_WINDOW;
    size_t sizes[] = {T * m->d.H,
                      T * m->d.H,
                      T * big,
                      T * m->d.cd,
                      T * core,
                      T * 2 * m->d.Hv,
                      mlp_rows * 2 * m->d.F,
                      T * m->d.rot / 2,
                      T * m->d.rot / 2,
                      m->d.Hq * T * m->d.hd,
                      workers * VW_ATTN_TILE * (P + T),
                      workers * VW_GDN_CHUNK * VW_GDN_CHUNK,
                      m->d.n_gdn ? m->d.Hv * window * vw_gdn_chunk_floats(m->d.dk, m->d.dv) : 0,
                      2 * m->d.Hk * T * m->d.hd,
                      m->d.n_gdn * m->gdn_state,
                      m->d.n_gdn * m->gdn_state,
                      m->d.n_attn * 2 * m->d.Hk * P * m->d.hd};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        total += sizes[i];
    float *p = cm->base = malloc(total * sizeof(float));
    if (!p)
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory",
                       "cpu backbone: %zu MiB of activations for %zu tokens after a %zu-token "
                       "prefix; split the batch",
                       total * sizeof(float) >> 20, T, P);
    cpu_scratch *sc = &cm->sc;
    sc->cap_T = T, sc->cap_past = P, sc->workers = workers;
    float **dst[] = {&sc->h,         &sc->x,        &sc->big,        &sc->conv,  &sc->core,
                     &sc->gb,        &sc->mlp,      &sc->cos_t,      &sc->sin_t, &sc->Q,
                     &sc->scores,    &sc->gdn_L,    &sc->gdn_chunks, &sc->kv,    &cm->prefix_gdn,
                     &cm->block_gdn, &cm->prefix_kv};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        *dst[i] = take(&p, sizes[i]);
    return VW_OK;
}

typedef struct readout_job {
    const cpu_model *m;
    const float *h;
    const int32_t *idx;
    float *rows;
} readout_job;

static void readout_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const readout_job *j = ctx;
    const size_t H = j->m->d.H;
    for (size_t i = r0; i < r1; i++)
        vw_rmsnorm(j->h + (size_t)j->idx[i] * H, H, j->rows + i * H, H, 1, H, j->m->final_norm,
                   j->m->c.rms_eps);
}

/* Final RMSNorm of the readout rows of h into rows. */
static float *readouts(const cpu_model *m, const float *h, const int32_t *idx, size_t n,
                       float *rows) {
    readout_job j = {.m = m, .h = h, .idx = idx, .rows = rows};
    vw_par_rows(m->pool, n, 16, readout_rows, &j);
    return rows + n * m->d.H;
}

static float *run_tree(const cpu_model *m, call_mem *cm, const vw_tree *tr, float *rows) {
    const size_t P = cm->sc.cap_past;
    memset(cm->prefix_gdn, 0, m->d.n_gdn * m->gdn_state * sizeof(float));
    cpu_segment seg = {.ids = tr->prefix,
                       .T = tr->n_prefix,
                       .pos0 = 0,
                       .gdn = cm->prefix_gdn,
                       .keep_kv = cm->prefix_kv,
                       .keep_cap = P};
    vw_cpu_run_segment(m, &cm->sc, &seg);
    rows = readouts(m, cm->sc.h, tr->prefix_readouts, tr->n_prefix_readouts, rows);
    for (size_t bi = 0; bi < tr->n_blocks; bi++) {
        const vw_block *bl = &tr->blocks[bi];
        memcpy(cm->block_gdn, cm->prefix_gdn, m->d.n_gdn * m->gdn_state * sizeof(float));
        cpu_segment bs = {.ids = bl->ids,
                          .T = bl->n_ids,
                          .pos0 = tr->n_prefix,
                          .gdn = cm->block_gdn,
                          .past_kv = cm->prefix_kv,
                          .n_past = tr->n_prefix,
                          .past_cap = P};
        vw_cpu_run_segment(m, &cm->sc, &bs);
        rows = readouts(m, cm->sc.h, bl->readouts, bl->n_readouts, rows);
    }
    return rows;
}

static vw_status cpu_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                             vw_err *err) {
    const cpu_model *m = ex->impl; /* trees validated by vw_executor_forward */
    vw_status st = VW_OK;
    size_t T = 0, P = 0;
    for (size_t t = 0; t < n_trees; t++) {
        P = trees[t].n_prefix > P ? trees[t].n_prefix : P;
        for (size_t b = 0; b < trees[t].n_blocks; b++)
            T = trees[t].blocks[b].n_ids > T ? trees[t].blocks[b].n_ids : T;
    }
    T = P > T ? P : T;
    call_mem cm = {0};
    if ((st = call_alloc(m, T, P, &cm, err)) != VW_OK)
        return st;
    for (size_t t = 0; t < n_trees && st == VW_OK; t++) {
        if (vw_executor_cancelled(ex, err))
            st = VW_ETRANSIENT;
        else
            rows = run_tree(m, &cm, &trees[t], rows);
    }
    free(cm.base);
    return st;
}

static void cpu_destroy(vw_executor *ex) {
    model_free(ex->impl);
    free(ex);
}

static const vw_executor_ops cpu_ops = {
    .name = "cpu", .forward = cpu_forward, .destroy = cpu_destroy};

vw_status vw_backbone_cpu_new_threads(const vw_bundle *b, unsigned threads, vw_executor **out,
                                      vw_err *err) {
    *out = NULL;
    if (threads > VW_POOL_MAX_THREADS)
        return VW_FAIL(err, VW_EINVAL, "bad_threads", "cpu backbone: %u threads (at most %d)",
                       threads, VW_POOL_MAX_THREADS);
    vw_executor *ex = calloc(1, sizeof *ex);
    if (!ex)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "executor");
    cpu_model *m = NULL;
    vw_status st = model_load(b, &m, err);
    if (st == VW_OK)
        st = vw_pool_new(threads ? threads : vw_cpu_count(), &m->pool, err);
    if (st != VW_OK) {
        model_free(m);
        free(ex);
        return st;
    }
    /* The pool is the only threading: each GEMM tile is one single-threaded
     * OpenBLAS call (ops_par.h). Process-wide, so other OpenBLAS users in the
     * process (the CPU heads) run single-threaded on their own threads too. */
    openblas_set_num_threads(1);
    ex->ops = &cpu_ops;
    ex->hidden = m->d.H;
    ex->vocab = m->c.vocab;
    ex->impl = m;
    *out = ex;
    return VW_OK;
}

vw_status vw_backbone_cpu_new(const vw_bundle *b, vw_executor **out, vw_err *err) {
    return vw_backbone_cpu_new_threads(b, 0, out, err);
}

unsigned vw_backbone_cpu_threads(const vw_executor *ex) {
    return ex && ex->ops == &cpu_ops ? vw_pool_threads(((const cpu_model *)ex->impl)->pool) : 0;
}
