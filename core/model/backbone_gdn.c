/* backbone_gdn.c — the Gated DeltaNet token mixer of one segment, FP32
 * (docs/spec/backbone.md §3.5), every stage a run of the model's pool:
 * projection tiles, rows (conv, norms, gates), and the delta rule as on the
 * GPU — the state-free part of every (head, chunk) at once, then the state
 * carried through the chunks per (head, value slice). Never allocates. */
#include <math.h>

#include "backbone_cpu_impl.h"
#include "delta_rule.h"
#include "ops_cpu.h"
#include "ops_par.h"

typedef struct gdn_job {
    const cpu_model *m;
    const gdn_w *w;
    cpu_scratch *sc;
    size_t T;
    float *S, *hist;
    vw_gdn_io io;
    size_t t_first, n_chunks, n_slices; /* the window of chunks at hand */
} gdn_job;

/* Steps 2-7 for rows [r0, r1): causal depthwise conv over qkv (the previous
 * K-1 rows from the history) + SiLU; q, k per key head l2-normalised (eps
 * 1e-6 inside the root), q also * dk^-0.5; g = -exp(A_log) softplus(a +
 * dt_bias), beta = sigmoid(b). */
static void gdn_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const gdn_job *j = ctx;
    const cpu_model *m = j->m;
    const size_t cd = m->d.cd, kd = m->d.kd, vd = m->d.vd, Hv = m->d.Hv, W = m->d.gdn_in;
    cpu_scratch *sc = j->sc;
    vw_causal_conv_silu_rows(sc->big, W, j->hist, j->w->conv, r0, r1, cd, m->d.K, sc->conv);
    const float qscale = 1.0f / sqrtf((float)m->d.dk);
    float *g = sc->gb, *beta = sc->gb + j->T * Hv;
    for (size_t t = r0; t < r1; t++) {
        for (size_t kh = 0; kh < m->d.Hkl; kh++) {
            vw_l2norm_scale(sc->conv + t * cd + kh * m->d.dk, m->d.dk, 1e-6f, qscale);
            vw_l2norm_scale(sc->conv + t * cd + kd + kh * m->d.dk, m->d.dk, 1e-6f, 1.0f);
        }
        const float *b = sc->big + t * W + cd + vd, *a = b + Hv;
        for (size_t hh = 0; hh < Hv; hh++) {
            g[t * Hv + hh] = j->w->A[hh] * vw_softplus(a[hh] + j->w->dt_bias[hh]);
            beta[t * Hv + hh] = vw_sigmoidf(b[hh]);
        }
    }
}

static float *chunk_of(const gdn_job *j, size_t h, size_t c) {
    return j->sc->gdn_chunks + (c * j->m->d.Hv + h) * vw_gdn_chunk_floats(j->m->d.dk, j->m->d.dv);
}

/* Phase 1, task (head, chunk of the window). */
static void prep_task(void *ctx, size_t i, unsigned wk) {
    const gdn_job *j = ctx;
    size_t h = i / j->n_chunks, c = i % j->n_chunks;
    vw_gdn_chunk_prep(&j->io, h, j->t_first + c * VW_GDN_CHUNK, chunk_of(j, h, c),
                      j->sc->gdn_L + (size_t)wk * VW_GDN_CHUNK * VW_GDN_CHUNK);
}

/* Phase 2, task (head, value slice): the window's chunks in order. */
static void state_task(void *ctx, size_t i, unsigned wk) {
    (void)wk;
    const gdn_job *j = ctx;
    const size_t dv = j->m->d.dv, h = i / j->n_slices, j0 = (i % j->n_slices) * VW_GDN_SLICE;
    const size_t j1 = dv - j0 < VW_GDN_SLICE ? dv : j0 + VW_GDN_SLICE;
    float *S = j->S + h * j->m->d.dk * dv;
    for (size_t c = 0; c < j->n_chunks; c++)
        vw_gdn_chunk_state(&j->io, h, j->t_first + c * VW_GDN_CHUNK, chunk_of(j, h, c), S, j0, j1);
}

/* Step 9 for rows [r0, r1): gated RMSNorm per (t, head): w * norm(o) * silu(z). */
static void out_rows(void *ctx, size_t r0, size_t r1, unsigned wk) {
    (void)wk;
    const gdn_job *j = ctx;
    const cpu_model *m = j->m;
    const size_t vd = m->d.vd, W = m->d.gdn_in;
    float *core = j->sc->core + r0 * vd;
    vw_rmsnorm(core, m->d.dv, core, m->d.dv, (r1 - r0) * m->d.Hv, m->d.dv, j->w->norm,
               m->c.rms_eps);
    for (size_t t = r0; t < r1; t++) {
        const float *z = j->sc->big + t * W + m->d.cd;
        float *o = j->sc->core + t * vd;
        for (size_t i = 0; i < vd; i++)
            o[i] *= vw_silu(z[i]);
    }
}

void vw_cpu_gdn_layer(const cpu_model *m, const gdn_w *w, cpu_scratch *sc, size_t T, float *state,
                      float *h) {
    const size_t H = m->d.H, cd = m->d.cd, kd = m->d.kd, vd = m->d.vd, Hv = m->d.Hv;
    vw_pool *p = m->pool;
    gdn_job j = {.m = m, .w = w, .sc = sc, .T = T, .S = state};
    j.hist = state + Hv * m->d.dk * m->d.dv;
    /* 1. qkv | z | b | a = x W^T  -> big [T, gdn_in] */
    vw_par_linear(p, sc->x, H, w->in, sc->big, m->d.gdn_in, T, m->d.gdn_in, H, 0);
    /* 2-7, then the history for the next segment (after every row read it) */
    vw_par_rows(p, T, 4, gdn_rows, &j);
    vw_conv_history(sc->big, m->d.gdn_in, T, cd, m->d.K, j.hist);
    /* 8. gated delta rule from the incoming state -> core [T, vd] */
    j.io = (vw_gdn_io){.T = T,
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
                       .g = sc->gb,
                       .beta = sc->gb + T * Hv,
                       .out = sc->core,
                       .ldo = vd};
    j.n_slices = (m->d.dv + VW_GDN_SLICE - 1) / VW_GDN_SLICE;
    const size_t chunks = (T + VW_GDN_CHUNK - 1) / VW_GDN_CHUNK;
    for (size_t c0 = 0; c0 < chunks; c0 += VW_GDN_WINDOW) {
        j.t_first = c0 * VW_GDN_CHUNK;
        j.n_chunks = chunks - c0 < VW_GDN_WINDOW ? chunks - c0 : VW_GDN_WINDOW;
        vw_pool_for(p, Hv * j.n_chunks, prep_task, &j);
        vw_pool_for(p, Hv * j.n_slices, state_task, &j);
    }
    /* 9. gated RMSNorm, 10. h += y W_out^T */
    vw_par_rows(p, T, 4, out_rows, &j);
    vw_par_linear(p, sc->core, vd, w->out, h, H, T, H, vd, 1);
}
