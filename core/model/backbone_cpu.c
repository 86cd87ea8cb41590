/* backbone_cpu.c — the CPU executor: loads FP32 weights from a bundle and runs
 * token trees (see backbone_cpu.h). The layer math lives in backbone_layers.c;
 * this file owns the weight arena, the per-call scratch and the prefix/block
 * state handling. */
#include "backbone_cpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backbone_cpu_impl.h"
#include "delta_rule.h"
#include "ops_cpu.h"

typedef enum xform { AS_IS, ONE_PLUS, NEG_EXP } xform;

/* ---- load ---------------------------------------------------------------- */

static void derive_dims(cpu_model *m) {
    const vw_qwen35_config *c = &m->c;
    m->H = (size_t)c->hidden, m->ffn = (size_t)c->intermediate;
    m->hd = (size_t)c->head_dim, m->Hq = (size_t)c->n_heads, m->Hk = (size_t)c->n_kv_heads;
    m->rot = (size_t)c->rotary_dim;
    m->Hv = (size_t)c->lin_v_heads, m->Hkl = (size_t)c->lin_k_heads;
    m->dk = (size_t)c->lin_k_dim, m->dv = (size_t)c->lin_v_dim, m->K = (size_t)c->conv_kernel;
    m->kd = m->Hkl * m->dk, m->vd = m->Hv * m->dv, m->cd = 2 * m->kd + m->vd;
    m->gdn_in = m->cd + m->vd + 2 * m->Hv;
    m->attn_q2 = m->Hq * 2 * m->hd, m->attn_kv = m->Hk * m->hd;
    m->attn_in = m->attn_q2 + 2 * m->attn_kv;
    m->gdn_state = m->Hv * m->dk * m->dv + (m->K - 1) * m->cd;
    for (int32_t l = 0; l < c->n_layers; l++)
        c->full_attention[l] ? m->n_attn++ : m->n_gdn++;
}

/* Floats of one layer's weights, in the order slice_layer hands them out. */
static size_t layer_floats(const cpu_model *m, int full) {
    size_t n = 2 * m->H + 2 * m->ffn * m->H + m->H * m->ffn;
    if (full)
        return n + m->attn_in * m->H + 2 * m->hd + m->H * m->Hq * m->hd;
    return n + m->gdn_in * m->H + m->cd * m->K + 2 * m->Hv + m->dv + m->H * m->vd;
}

static float *take(float **p, size_t n) {
    float *r = *p;
    *p += n;
    return r;
}

static void slice_layer(cpu_model *m, layer_w *lw, float **p) {
    const size_t H = m->H;
    lw->in_norm = take(p, H), lw->post_norm = take(p, H);
    lw->mlp_in = take(p, 2 * m->ffn * H), lw->down = take(p, H * m->ffn);
    if (lw->full) {
        lw->a.in = take(p, m->attn_in * H);
        lw->a.q_norm = take(p, m->hd), lw->a.k_norm = take(p, m->hd);
        lw->a.o = take(p, H * m->Hq * m->hd);
    } else {
        lw->g.in = take(p, m->gdn_in * H), lw->g.conv = take(p, m->cd * m->K);
        lw->g.dt_bias = take(p, m->Hv), lw->g.A = take(p, m->Hv);
        lw->g.norm = take(p, m->dv), lw->g.out = take(p, H * m->vd);
    }
}

/* Upcasts the backbone tensor `name` (layer l, or -1) into dst, then drops its
 * pages from the resident set. */
static vw_status load(const vw_bundle *b, int l, const char *name, float *dst, xform xf,
                      vw_err *err) {
    char full[128];
    if (l >= 0)
        snprintf(full, sizeof full, "layers.%d.%s", l, name);
    else
        snprintf(full, sizeof full, "%s", name);
    const vw_st_tensor *t = vw_bundle_backbone_tensor(b, full);
    if (!t)
        return VW_FAIL(err, VW_EINVAL, "missing_tensor", "backbone tensor '%s' is missing", full);
    vw_status st = vw_st_to_f32(t, dst, err);
    if (st != VW_OK)
        return st;
    for (size_t i = 0; xf != AS_IS && i < t->numel; i++)
        dst[i] = xf == ONE_PLUS ? 1.0f + dst[i] : -expf(dst[i]);
    vw_bundle_drop_pages(b, t);
    return VW_OK;
}

typedef struct load_item {
    const char *name;
    float *dst;
    xform xf;
} load_item;

/* The tensors of layer lw and where each goes (stacked rows for the fused
 * projections); returns how many (<= 14). */
static size_t layer_items(const cpu_model *m, const layer_w *lw, load_item *it) {
    const size_t H = m->H;
    size_t n = 0;
    it[n++] = (load_item){"input_layernorm.weight", lw->in_norm, ONE_PLUS};
    it[n++] = (load_item){"post_attention_layernorm.weight", lw->post_norm, ONE_PLUS};
    it[n++] = (load_item){"mlp.gate_proj.weight", lw->mlp_in, AS_IS};
    it[n++] = (load_item){"mlp.up_proj.weight", lw->mlp_in + m->ffn * H, AS_IS};
    it[n++] = (load_item){"mlp.down_proj.weight", lw->down, AS_IS};
    if (lw->full) {
        it[n++] = (load_item){"self_attn.q_proj.weight", lw->a.in, AS_IS};
        it[n++] = (load_item){"self_attn.k_proj.weight", lw->a.in + m->attn_q2 * H, AS_IS};
        it[n++] =
            (load_item){"self_attn.v_proj.weight", lw->a.in + (m->attn_q2 + m->attn_kv) * H, AS_IS};
        it[n++] = (load_item){"self_attn.o_proj.weight", lw->a.o, AS_IS};
        it[n++] = (load_item){"self_attn.q_norm.weight", lw->a.q_norm, ONE_PLUS};
        it[n++] = (load_item){"self_attn.k_norm.weight", lw->a.k_norm, ONE_PLUS};
        return n;
    }
    it[n++] = (load_item){"linear_attn.in_proj_qkv.weight", lw->g.in, AS_IS};
    it[n++] = (load_item){"linear_attn.in_proj_z.weight", lw->g.in + m->cd * H, AS_IS};
    it[n++] = (load_item){"linear_attn.in_proj_b.weight", lw->g.in + (m->cd + m->vd) * H, AS_IS};
    it[n++] =
        (load_item){"linear_attn.in_proj_a.weight", lw->g.in + (m->cd + m->vd + m->Hv) * H, AS_IS};
    it[n++] = (load_item){"linear_attn.conv1d.weight", lw->g.conv, AS_IS};
    it[n++] = (load_item){"linear_attn.dt_bias", lw->g.dt_bias, AS_IS};
    it[n++] = (load_item){"linear_attn.A_log", lw->g.A, NEG_EXP};
    it[n++] = (load_item){"linear_attn.norm.weight", lw->g.norm, AS_IS};
    it[n++] = (load_item){"linear_attn.out_proj.weight", lw->g.out, AS_IS};
    return n;
}

static vw_status load_layer(const cpu_model *m, const vw_bundle *b, int l, const layer_w *lw,
                            vw_err *err) {
    load_item it[16];
    size_t n = layer_items(m, lw, it);
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++)
        st = load(b, l, it[i].name, it[i].dst, it[i].xf, err);
    return st;
}

static void model_free(cpu_model *m) {
    if (!m)
        return;
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
    size_t total = (size_t)m->c.vocab * m->H + m->H;
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
    m->embed = take(&p, (size_t)m->c.vocab * m->H), m->final_norm = take(&p, m->H);
    size_t n_attn = 0, n_gdn = 0;
    for (int32_t l = 0; l < m->c.n_layers; l++) {
        layer_w *lw = &m->layers[l];
        lw->full = m->c.full_attention[l];
        lw->slot = lw->full ? n_attn++ : n_gdn++;
        slice_layer(m, lw, &p);
    }
    st = load(b, -1, "embed_tokens.weight", m->embed, AS_IS, err);
    if (st == VW_OK)
        st = load(b, -1, "norm.weight", m->final_norm, ONE_PLUS, err);
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
 * prefix tokens, the prefix state and a block's copy of the GDN state. */
static vw_status call_alloc(const cpu_model *m, size_t T, size_t P, call_mem *cm, vw_err *err) {
    const size_t big = m->gdn_in > m->attn_in ? m->gdn_in : m->attn_in;
    const size_t core = m->vd > m->Hq * m->hd ? m->vd : m->Hq * m->hd;
    size_t sizes[] = {T * m->H,
                      T * m->H,
                      T * big,
                      T * m->cd,
                      T * core,
                      T * 2 * m->Hv,
                      (size_t)VW_MLP_ROWS * 2 * m->ffn,
                      T * m->rot / 2,
                      T * m->rot / 2,
                      m->Hq * T * m->hd,
                      (size_t)VW_ATTN_TILE * (P + T),
                      vw_gdn_workspace_floats(m->dk, m->dv),
                      2 * m->Hk * T * m->hd,
                      m->n_gdn * m->gdn_state,
                      m->n_gdn * m->gdn_state,
                      m->n_attn * 2 * m->Hk * P * m->hd};
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
    sc->cap_T = T, sc->cap_past = P;
    float **dst[] = {&sc->h,     &sc->x,          &sc->big,       &sc->conv,
                     &sc->core,  &sc->gb,         &sc->mlp,       &sc->cos_t,
                     &sc->sin_t, &sc->Q,          &sc->scores,    &sc->gdn_ws,
                     &sc->kv,    &cm->prefix_gdn, &cm->block_gdn, &cm->prefix_kv};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        *dst[i] = take(&p, sizes[i]);
    return VW_OK;
}

/* Final RMSNorm of the readout rows of h into rows. */
static float *readouts(const cpu_model *m, const float *h, const int32_t *idx, size_t n,
                       float *rows) {
    for (size_t i = 0; i < n; i++)
        vw_rmsnorm(h + (size_t)idx[i] * m->H, m->H, rows + i * m->H, m->H, 1, m->H, m->final_norm,
                   m->c.rms_eps);
    return rows + n * m->H;
}

static float *run_tree(const cpu_model *m, call_mem *cm, const vw_tree *tr, float *rows) {
    const size_t P = cm->sc.cap_past;
    memset(cm->prefix_gdn, 0, m->n_gdn * m->gdn_state * sizeof(float));
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
        memcpy(cm->block_gdn, cm->prefix_gdn, m->n_gdn * m->gdn_state * sizeof(float));
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
    const cpu_model *m = ex->impl;
    vw_status st = vw_trees_validate(trees, n_trees, m->c.vocab, err);
    if (st != VW_OK)
        return st;
    if (!n_trees)
        return VW_FAIL(err, VW_EINVAL, "bad_tree", "empty batch of trees");
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
    for (size_t t = 0; t < n_trees; t++)
        rows = run_tree(m, &cm, &trees[t], rows);
    free(cm.base);
    return VW_OK;
}

static void cpu_destroy(vw_executor *ex) {
    model_free(ex->impl);
    free(ex);
}

static const vw_executor_ops cpu_ops = {
    .name = "cpu", .forward = cpu_forward, .destroy = cpu_destroy};

vw_status vw_backbone_cpu_new(const vw_bundle *b, vw_executor **out, vw_err *err) {
    *out = NULL;
    vw_executor *ex = calloc(1, sizeof *ex);
    if (!ex)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "executor");
    cpu_model *m = NULL;
    vw_status st = model_load(b, &m, err);
    if (st != VW_OK) {
        free(ex);
        return st;
    }
    ex->ops = &cpu_ops;
    ex->hidden = m->H;
    ex->impl = m;
    *out = ex;
    return VW_OK;
}
