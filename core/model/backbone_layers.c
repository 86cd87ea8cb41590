/* backbone_layers.c — one segment through the Qwen3.5 layers, FP32
 * (docs/spec/backbone.md §3). Reads top to bottom: embed -> per layer
 * [norm -> GDN or gated attention -> residual, norm -> SwiGLU -> residual].
 * Never allocates: every buffer comes from cpu_scratch / cpu_segment. */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "backbone_cpu_impl.h"
#include "delta_rule.h"
#include "ops_cpu.h"

/* §3.5: Gated DeltaNet. x [T,H] normed input; adds out_proj(...) into h. */
static void gdn_layer(const cpu_model *m, const gdn_w *w, cpu_scratch *sc, size_t T, float *state,
                      float *h) {
    const size_t H = m->d.H, cd = m->d.cd, kd = m->d.kd, vd = m->d.vd, Hv = m->d.Hv,
                 W = m->d.gdn_in;
    float *S = state, *hist = state + Hv * m->d.dk * m->d.dv;
    /* 1. qkv | z | b | a = x W^T  -> big [T, W] */
    vw_linear(sc->x, H, w->in, sc->big, W, T, W, H, 0);
    /* 2-3. causal depthwise conv over qkv (history = previous K-1 rows) + SiLU */
    vw_causal_conv_silu(sc->big, W, hist, w->conv, T, cd, m->d.K, sc->conv);
    vw_conv_history(sc->big, W, T, cd, m->d.K, hist);
    /* 7. q, k per key head: l2norm (eps 1e-6 inside the root), q also * dk^-0.5 */
    const float qscale = 1.0f / sqrtf((float)m->d.dk);
    for (size_t t = 0; t < T; t++)
        for (size_t kh = 0; kh < m->d.Hkl; kh++) {
            vw_l2norm_scale(sc->conv + t * cd + kh * m->d.dk, m->d.dk, 1e-6f, qscale);
            vw_l2norm_scale(sc->conv + t * cd + kd + kh * m->d.dk, m->d.dk, 1e-6f, 1.0f);
        }
    /* 5-6. g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b) */
    float *g = sc->gb, *beta = sc->gb + T * Hv;
    for (size_t t = 0; t < T; t++) {
        const float *b = sc->big + t * W + cd + vd, *a = b + Hv;
        for (size_t hh = 0; hh < Hv; hh++) {
            g[t * Hv + hh] = w->A[hh] * vw_softplus(a[hh] + w->dt_bias[hh]);
            beta[t * Hv + hh] = vw_sigmoidf(b[hh]);
        }
    }
    /* 8. gated delta rule from the incoming state -> core [T, vd] */
    vw_gdn_io io = {.T = T,
                    .Hk = m->d.Hkl,
                    .Hv = Hv,
                    .dk = m->d.dk,
                    .dv = m->d.dv,
                    .q = sc->conv,
                    .k = sc->conv + kd,
                    .v = sc->conv + 2 * kd,
                    .ldq = cd,
                    .ldk = cd,
                    .ldv = cd,
                    .g = g,
                    .beta = beta,
                    .out = sc->core,
                    .ldo = vd};
    vw_gdn_chunked(&io, 0, Hv, S, sc->gdn_ws);
    /* 9. gated RMSNorm per (t, head): w * norm(o) * silu(z) */
    vw_rmsnorm(sc->core, m->d.dv, sc->core, m->d.dv, T * Hv, m->d.dv, w->norm, m->c.rms_eps);
    for (size_t t = 0; t < T; t++) {
        const float *z = sc->big + t * W + cd;
        float *o = sc->core + t * vd;
        for (size_t i = 0; i < vd; i++)
            o[i] *= vw_silu(z[i]);
    }
    /* 10. h += y W_out^T */
    vw_linear(sc->core, vd, w->out, h, H, T, H, vd, 1);
}

/* §3.4 steps 1-4: q/gate split, q/k norm, partial RoPE; K/V into kv. */
static void attn_prep(const cpu_model *m, const attn_w *w, cpu_scratch *sc, size_t T, float *kv,
                      size_t cap) {
    const size_t hd = m->d.hd, W = m->d.attn_in, half = m->d.rot / 2;
    float *K = kv, *V = kv + m->d.Hk * cap * hd;
    for (size_t t = 0; t < T; t++) {
        const float *row = sc->big + t * W, *cs = sc->cos_t + t * half, *sn = sc->sin_t + t * half;
        for (size_t hq = 0; hq < m->d.Hq; hq++) {
            float *q = sc->Q + (hq * T + t) * hd;
            vw_rmsnorm(row + hq * 2 * hd, hd, q, hd, 1, hd, w->q_norm, m->c.rms_eps);
            vw_rope_apply(q, m->d.rot, cs, sn);
        }
        for (size_t g = 0; g < m->d.Hk; g++) {
            float *k = K + (g * cap + t) * hd;
            vw_rmsnorm(row + m->d.attn_q2 + g * hd, hd, k, hd, 1, hd, w->k_norm, m->c.rms_eps);
            vw_rope_apply(k, m->d.rot, cs, sn);
            memcpy(V + (g * cap + t) * hd, row + m->d.attn_q2 + m->d.attn_kv + g * hd,
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

/* §3.4 step 5 for one query head: causal softmax over [past ; current keys],
 * in query tiles so the score buffer stays [TILE, n_past + T]. */
static void attn_head(const cpu_model *m, cpu_scratch *sc, size_t T, size_t hq, const float *pK,
                      const float *pV, size_t n_past, const float *cK, const float *cV) {
    const size_t hd = m->d.hd, ldo = m->d.Hq * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *Q = sc->Q + hq * T * hd;
    for (size_t i0 = 0; i0 < T; i0 += VW_ATTN_TILE) {
        size_t mrows = T - i0 < VW_ATTN_TILE ? T - i0 : VW_ATTN_TILE, ncur = i0 + mrows;
        size_t width = n_past + ncur;
        float *Sc = sc->scores;
        if (n_past)
            scores_gemm(Q + i0 * hd, pK, Sc, width, mrows, n_past, hd, scale);
        scores_gemm(Q + i0 * hd, cK, Sc + n_past, width, mrows, ncur, hd, scale);
        for (size_t r = 0; r < mrows; r++)
            vw_softmax_prefix(Sc + r * width, n_past + i0 + r + 1, width);
        float *O = sc->core + i0 * ldo + hq * hd;
        if (n_past)
            pv_gemm(Sc, width, pV, O, ldo, mrows, n_past, hd, 0);
        pv_gemm(Sc + n_past, width, cV, O, ldo, mrows, ncur, hd, n_past > 0);
    }
}

/* §3.4: gated GQA attention; adds o_proj(...) into h. K/V of this segment are
 * kept in seg->keep_kv (the prefix) or in scratch (a block); a block also
 * reads the prefix's K/V from seg->past_kv. */
static void attn_layer(const cpu_model *m, const layer_w *lw, cpu_scratch *sc,
                       const cpu_segment *seg, float *h) {
    const attn_w *w = &lw->a;
    const size_t T = seg->T, hd = m->d.hd, W = m->d.attn_in, Hk = m->d.Hk;
    vw_linear(sc->x, m->d.H, w->in, sc->big, W, T, W, m->d.H, 0);
    size_t cap = seg->keep_kv ? seg->keep_cap : sc->cap_T;
    float *kv = seg->keep_kv ? seg->keep_kv + lw->slot * 2 * Hk * cap * hd : sc->kv;
    const float *past = seg->past_kv ? seg->past_kv + lw->slot * 2 * Hk * seg->past_cap * hd : NULL;
    attn_prep(m, w, sc, T, kv, cap);
    for (size_t hq = 0; hq < m->d.Hq; hq++) {
        size_t g = hq / (m->d.Hq / Hk); /* GQA: kv head = h // (Hq/Hk) */
        const float *pK = past ? past + g * seg->past_cap * hd : NULL;
        const float *pV = past ? past + (Hk + g) * seg->past_cap * hd : NULL;
        attn_head(m, sc, T, hq, pK, pV, past ? seg->n_past : 0, kv + g * cap * hd,
                  kv + (Hk + g) * cap * hd);
    }
    /* §3.4 step 6: o *= sigmoid(gate); each head's gate follows its query */
    for (size_t t = 0; t < T; t++) {
        const float *row = sc->big + t * W;
        float *o = sc->core + t * m->d.Hq * hd;
        for (size_t hq = 0; hq < m->d.Hq; hq++)
            for (size_t d = 0; d < hd; d++)
                o[hq * hd + d] *= vw_sigmoidf(row[hq * 2 * hd + hd + d]);
    }
    vw_linear(sc->core, m->d.Hq * hd, w->o, h, m->d.H, T, m->d.H, m->d.Hq * hd, 1);
}

/* §3.6: h += down(silu(gate(x)) * up(x)), x = post-norm(h), in row blocks so
 * the [rows, 2I] buffer stays small. */
static void mlp_block(const cpu_model *m, const layer_w *lw, cpu_scratch *sc, size_t T, float *h) {
    const size_t H = m->d.H, F = m->d.F;
    vw_rmsnorm(h, H, sc->x, H, T, H, lw->post_norm, m->c.rms_eps);
    for (size_t r0 = 0; r0 < T; r0 += VW_MLP_ROWS) {
        size_t n = T - r0 < VW_MLP_ROWS ? T - r0 : VW_MLP_ROWS;
        vw_linear(sc->x + r0 * H, H, lw->mlp_in, sc->mlp, 2 * F, n, 2 * F, H, 0);
        for (size_t r = 0; r < n; r++) {
            float *gate = sc->mlp + r * 2 * F, *up = gate + F;
            for (size_t i = 0; i < F; i++)
                gate[i] = vw_silu(gate[i]) * up[i];
        }
        vw_linear(sc->mlp, 2 * F, lw->down, h + r0 * H, H, n, H, F, 1);
    }
}

void vw_cpu_run_segment(const cpu_model *m, cpu_scratch *sc, const cpu_segment *seg) {
    const size_t T = seg->T, H = m->d.H;
    float *h = sc->h;
    for (size_t t = 0; t < T; t++) /* §3.1: embedding, no scaling */
        memcpy(h + t * H, m->embed + (size_t)seg->ids[t] * H, H * sizeof *h);
    vw_rope_tables(seg->pos0, T, m->d.rot, m->c.rope_theta, sc->cos_t, sc->sin_t);
    for (int32_t l = 0; l < m->c.n_layers; l++) { /* §3.3: pre-norm residual layout */
        const layer_w *lw = &m->layers[l];
        vw_rmsnorm(h, H, sc->x, H, T, H, lw->in_norm, m->c.rms_eps);
        if (lw->full)
            attn_layer(m, lw, sc, seg, h);
        else
            gdn_layer(m, &lw->g, sc, T, seg->gdn + lw->slot * m->gdn_state, h);
        mlp_block(m, lw, sc, T, h);
    }
}
