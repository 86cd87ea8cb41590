/* backbone_layers.c — one segment through the Qwen3.5 layers, FP32
 * (docs/spec/backbone.md §3). Reads top to bottom: embed -> per layer
 * [norm -> GDN (backbone_gdn.c) or gated attention -> residual, norm ->
 * SwiGLU -> residual]. Every stage is a run of the model's pool (ops_par.h):
 * rows, GEMM tiles, or attention (query tile, head) tasks. Never allocates:
 * every buffer comes from cpu_scratch / cpu_segment. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "backbone_cpu_impl.h"
#include "ops_cpu.h"
#include "ops_par.h"

typedef struct attn_job {
    const cpu_model *m;
    const attn_w *w;
    cpu_scratch *sc;
    size_t T, cap, n_past, past_cap, n_tiles;
    float *kv;         /* this segment's K then V, [Hk, cap, hd] each */
    const float *past; /* the prefix's K then V, [Hk, past_cap, hd] each, or NULL */
} attn_job;

/* §3.4 steps 1-4 for rows [r0, r1): q/gate split, q/k norm, partial RoPE;
 * Q into sc->Q [Hq, T, hd], K/V into kv. */
static void attn_prep_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const attn_job *j = ctx;
    const cpu_model *m = j->m;
    const cpu_scratch *sc = j->sc;
    const size_t hd = m->d.hd, W = m->d.attn_in, half = m->d.rot / 2, T = j->T;
    float *K = j->kv, *V = j->kv + m->d.Hk * j->cap * hd;
    for (size_t t = r0; t < r1; t++) {
        const float *row = sc->big + t * W, *cs = sc->cos_t + t * half, *sn = sc->sin_t + t * half;
        for (size_t hq = 0; hq < m->d.Hq; hq++) {
            float *q = sc->Q + (hq * T + t) * hd;
            vw_rmsnorm(row + hq * 2 * hd, hd, q, hd, 1, hd, j->w->q_norm, m->c.rms_eps);
            vw_rope_apply(q, m->d.rot, cs, sn);
        }
        for (size_t g = 0; g < m->d.Hk; g++) {
            float *k = K + (g * j->cap + t) * hd;
            vw_rmsnorm(row + m->d.attn_q2 + g * hd, hd, k, hd, 1, hd, j->w->k_norm, m->c.rms_eps);
            vw_rope_apply(k, m->d.rot, cs, sn);
            memcpy(V + (g * j->cap + t) * hd, row + m->d.attn_q2 + m->d.attn_kv + g * hd,
                   hd * sizeof(float));
        }
    }
}

/* S[m, n] (row stride lds) = scale * Q[m, d] K[n, d]^T */
static void scores_gemm(const float *Q, const float *K, float *S, size_t lds, size_t m, size_t n,
                        size_t d, float scale) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)m, (blasint)n, (blasint)d, scale,
                Q, (blasint)d, K, (blasint)d, 0.0f, S, (blasint)lds);
}

/* O[m, d] (row stride ldo) (+)= P[m, n] (stride ldp) V[n, d] */
static void pv_gemm(const float *P, size_t ldp, const float *V, float *O, size_t ldo, size_t m,
                    size_t n, size_t d, int accumulate) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)m, (blasint)d, (blasint)n, 1.0f,
                P, (blasint)ldp, V, (blasint)d, accumulate ? 1.0f : 0.0f, O, (blasint)ldo);
}

/* §3.4 step 5, one task: query rows [i0, i0 + TILE) of query head hq, causal
 * softmax over [past ; current keys] in the worker's score buffer
 * [TILE, n_past + T]. The last tiles (the most keys) are handed out first. */
static void attn_task(void *ctx, size_t i, unsigned wk) {
    const attn_job *j = ctx;
    const cpu_model *m = j->m;
    const size_t hd = m->d.hd, Hq = m->d.Hq, Hk = m->d.Hk, ldo = Hq * hd, T = j->T;
    const size_t hq = i % Hq, i0 = (j->n_tiles - 1 - i / Hq) * VW_ATTN_TILE;
    const size_t g = hq / (Hq / Hk); /* GQA: kv head = h // (Hq/Hk) */
    const float *cK = j->kv + g * j->cap * hd, *cV = j->kv + (Hk + g) * j->cap * hd;
    const float *pK = j->past ? j->past + g * j->past_cap * hd : NULL;
    const float *pV = j->past ? j->past + (Hk + g) * j->past_cap * hd : NULL;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *Q = j->sc->Q + hq * T * hd;
    size_t mrows = T - i0 < VW_ATTN_TILE ? T - i0 : VW_ATTN_TILE, ncur = i0 + mrows;
    size_t width = j->n_past + ncur;
    float *Sc = j->sc->scores + (size_t)wk * VW_ATTN_TILE * (j->sc->cap_past + j->sc->cap_T);
    if (j->n_past)
        scores_gemm(Q + i0 * hd, pK, Sc, width, mrows, j->n_past, hd, scale);
    scores_gemm(Q + i0 * hd, cK, Sc + j->n_past, width, mrows, ncur, hd, scale);
    for (size_t r = 0; r < mrows; r++)
        vw_softmax_prefix(Sc + r * width, j->n_past + i0 + r + 1, width);
    float *O = j->sc->core + i0 * ldo + hq * hd;
    if (j->n_past)
        pv_gemm(Sc, width, pV, O, ldo, mrows, j->n_past, hd, 0);
    pv_gemm(Sc + j->n_past, width, cV, O, ldo, mrows, ncur, hd, j->n_past > 0);
}

/* §3.4 step 6 for rows [r0, r1): o *= sigmoid(gate); each head's gate
 * follows its query. */
static void attn_gate_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const attn_job *j = ctx;
    const size_t hd = j->m->d.hd, Hq = j->m->d.Hq, W = j->m->d.attn_in;
    for (size_t t = r0; t < r1; t++) {
        const float *row = j->sc->big + t * W;
        float *o = j->sc->core + t * Hq * hd;
        for (size_t hq = 0; hq < Hq; hq++)
            for (size_t d = 0; d < hd; d++)
                o[hq * hd + d] *= vw_sigmoidf(row[hq * 2 * hd + hd + d]);
    }
}

/* §3.4: gated GQA attention; adds o_proj(...) into h. K/V of this segment are
 * kept in seg->keep_kv (the prefix) or in scratch (a block); a block also
 * reads the prefix's K/V from seg->past_kv. */
static void attn_layer(const cpu_model *m, const layer_w *lw, cpu_scratch *sc,
                       const cpu_segment *seg, float *h) {
    const size_t T = seg->T, hd = m->d.hd, Hk = m->d.Hk;
    vw_pool *p = m->pool;
    attn_job j = {.m = m, .w = &lw->a, .sc = sc, .T = T};
    j.cap = seg->keep_kv ? seg->keep_cap : sc->cap_T;
    j.kv = seg->keep_kv ? seg->keep_kv + lw->slot * 2 * Hk * j.cap * hd : sc->kv;
    if (seg->past_kv) {
        j.past_cap = seg->past_cap;
        j.past = seg->past_kv + lw->slot * 2 * Hk * seg->past_cap * hd;
        j.n_past = seg->n_past;
    }
    j.n_tiles = (T + VW_ATTN_TILE - 1) / VW_ATTN_TILE;
    vw_par_linear(p, sc->x, m->d.H, lw->a.in, sc->big, m->d.attn_in, T, m->d.attn_in, m->d.H, 0);
    vw_par_rows(p, T, 4, attn_prep_rows, &j);
    vw_pool_for(p, j.n_tiles * m->d.Hq, attn_task, &j);
    vw_par_rows(p, T, 4, attn_gate_rows, &j);
    vw_par_linear(p, sc->core, m->d.Hq * hd, lw->a.o, h, m->d.H, T, m->d.H, m->d.Hq * hd, 1);
}

typedef struct mlp_job {
    const cpu_model *m;
    const layer_w *lw;
    cpu_scratch *sc;
    size_t r0, n, tr, tc, n_cols; /* rows [r0, r0 + n) of the segment, tiles */
} mlp_job;

/* §3.6 gate and up for one tile (rows x columns of F), then silu(gate) * up
 * into the gate columns of sc->mlp [n, 2F]. */
static void mlp_up_task(void *ctx, size_t i, unsigned wk) {
    (void)wk;
    const mlp_job *j = ctx;
    const size_t H = j->m->d.H, F = j->m->d.F;
    size_t a = (i / j->n_cols) * j->tr, c0 = (i % j->n_cols) * j->tc;
    size_t nr = j->n - a < j->tr ? j->n - a : j->tr, nc = F - c0 < j->tc ? F - c0 : j->tc;
    const float *x = j->sc->x + (j->r0 + a) * H;
    float *gate = j->sc->mlp + a * 2 * F + c0, *up = gate + F;
    vw_linear(x, H, j->lw->mlp_in + c0 * H, gate, 2 * F, nr, nc, H, 0);
    vw_linear(x, H, j->lw->mlp_in + (F + c0) * H, up, 2 * F, nr, nc, H, 0);
    for (size_t r = 0; r < nr; r++)
        for (size_t c = 0; c < nc; c++)
            gate[r * 2 * F + c] = vw_silu(gate[r * 2 * F + c]) * up[r * 2 * F + c];
}

/* §3.6: h += down(silu(gate(x)) * up(x)), x = post-norm(h), in passes of
 * VW_MLP_ROWS rows so the [rows, 2F] buffer stays small. */
static void mlp_block(const cpu_model *m, const layer_w *lw, cpu_scratch *sc, size_t T, float *h) {
    const size_t H = m->d.H, F = m->d.F;
    vw_pool *p = m->pool;
    vw_par_rmsnorm(p, h, H, sc->x, H, T, H, lw->post_norm, m->c.rms_eps);
    for (size_t r0 = 0; r0 < T; r0 += VW_MLP_ROWS) {
        mlp_job j = {.m = m, .lw = lw, .sc = sc, .r0 = r0};
        j.n = T - r0 < VW_MLP_ROWS ? T - r0 : VW_MLP_ROWS;
        vw_par_linear_tiles(j.n, F, &j.tr, &j.tc);
        j.n_cols = (F + j.tc - 1) / j.tc;
        vw_pool_for(p, (j.n + j.tr - 1) / j.tr * j.n_cols, mlp_up_task, &j);
        vw_par_linear(p, sc->mlp, 2 * F, lw->down, h + r0 * H, H, j.n, H, F, 1);
    }
}

typedef struct embed_job {
    const cpu_model *m;
    const cpu_segment *seg;
    cpu_scratch *sc;
} embed_job;

/* §3.1: embedding rows (no scaling) and their RoPE table rows. */
static void embed_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const embed_job *j = ctx;
    const size_t H = j->m->d.H, half = j->m->d.rot / 2;
    for (size_t t = r0; t < r1; t++)
        memcpy(j->sc->h + t * H, j->m->embed + (size_t)j->seg->ids[t] * H, H * sizeof(float));
    vw_rope_tables(j->seg->pos0 + r0, r1 - r0, j->m->d.rot, j->m->c.rope_theta,
                   j->sc->cos_t + r0 * half, j->sc->sin_t + r0 * half);
}

void vw_cpu_run_segment(const cpu_model *m, cpu_scratch *sc, const cpu_segment *seg) {
    const size_t T = seg->T, H = m->d.H;
    float *h = sc->h;
    embed_job ej = {.m = m, .seg = seg, .sc = sc};
    vw_par_rows(m->pool, T, 8, embed_rows, &ej);
    for (int32_t l = 0; l < m->c.n_layers; l++) { /* §3.3: pre-norm residual layout */
        const layer_w *lw = &m->layers[l];
        vw_par_rmsnorm(m->pool, h, H, sc->x, H, T, H, lw->in_norm, m->c.rms_eps);
        if (lw->full)
            attn_layer(m, lw, sc, seg, h);
        else
            vw_cpu_gdn_layer(m, &lw->g, sc, T, seg->gdn + lw->slot * m->gdn_state, h);
        mlp_block(m, lw, sc, T, h);
    }
}
