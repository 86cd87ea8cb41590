/* delta_rule.c — chunked and recurrent gated delta rule (see delta_rule.h).
 * The chunked form is the one of docs/spec/backbone.md §4.1 (HF
 * torch_chunk_gated_delta_rule, FLA): per chunk of n <= 64 rows,
 *   c = cumsum(g), Gamma_ij = exp(c_i - c_j) (j <= i),
 *   L = strict_lower(diag(beta) K K^T * Gamma), (I + L) U = diag(beta) V,
 *   (I + L) W = diag(beta e^c) K, V_new = U - W S,
 *   O = (Q e^c) S + (Q K^T * Gamma) V_new,
 *   S <- e^{c_last} S + (K e^{c_last - c})^T V_new.
 * The triangular solves are BLAS strsm with a unit diagonal, as HF's
 * solve_triangular(unitriangular=True). */
#include "delta_rule.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define C VW_GDN_CHUNK

size_t vw_gdn_chunk_floats(size_t dk, size_t dv) {
    /* c, P (QK^T), U [C,dv], W/Qd/Kd [C,dk] */
    return C + C * C + C * dv + 3 * C * dk;
}

size_t vw_gdn_workspace_floats(size_t dk, size_t dv) {
    return vw_gdn_chunk_floats(dk, dv) + C * C; /* + L (KK^T) */
}

typedef struct chunk_ws {
    float *c, *P, *U, *W, *Qd, *Kd;
} chunk_ws;

static chunk_ws split_chunk(float *chunk, size_t dk, size_t dv) {
    chunk_ws w;
    w.c = chunk;
    w.P = w.c + C;
    w.U = w.P + C * C;
    w.W = w.U + C * dv;
    w.Qd = w.W + C * dk;
    w.Kd = w.Qd + C * dk;
    return w;
}

static size_t chunk_rows(const vw_gdn_io *io, size_t t0) {
    return io->T - t0 < C ? io->T - t0 : C;
}

/* Intra-chunk matrices: c, L (strictly lower, unit diagonal implied), P. */
static void chunk_lp(const vw_gdn_io *io, size_t h, size_t t0, size_t n, const float *Q,
                     const float *K, chunk_ws *w, float *L) {
    const size_t Hv = io->Hv, dk = io->dk;
    float acc = 0.0f;
    for (size_t i = 0; i < n; i++) {
        acc += io->g[(t0 + i) * Hv + h];
        w->c[i] = acc;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)n, (blasint)dk, 1.0f,
                K, (blasint)io->ldk, K, (blasint)io->ldk, 0.0f, L, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)n, (blasint)dk, 1.0f,
                Q, (blasint)io->ldq, K, (blasint)io->ldk, 0.0f, w->P, C);
    for (size_t i = 0; i < n; i++) {
        float b = io->beta[(t0 + i) * Hv + h];
        for (size_t j = 0; j <= i; j++) {
            float decay = expf(w->c[i] - w->c[j]); /* <= 1: difference, never exp(c)exp(-c) */
            L[i * C + j] = j < i ? b * L[i * C + j] * decay : 0.0f;
            w->P[i * C + j] *= decay;
        }
        for (size_t j = i + 1; j < n; j++)
            w->P[i * C + j] = 0.0f;
    }
}

void vw_gdn_chunk_prep(const vw_gdn_io *io, size_t h, size_t t0, float *chunk, float *L) {
    const size_t Hv = io->Hv, dk = io->dk, dv = io->dv, kh = h / (Hv / io->Hk);
    const size_t n = chunk_rows(io, t0);
    const float *Q = io->q + t0 * io->ldq + kh * dk, *K = io->k + t0 * io->ldk + kh * dk;
    const float *V = io->v + t0 * io->ldv + h * dv;
    chunk_ws w = split_chunk(chunk, dk, dv);
    chunk_lp(io, h, t0, n, Q, K, &w, L);
    float last = w.c[n - 1];
    for (size_t i = 0; i < n; i++) {
        float b = io->beta[(t0 + i) * Hv + h], ec = expf(w.c[i]), e = expf(last - w.c[i]);
        for (size_t d = 0; d < dv; d++)
            w.U[i * dv + d] = b * V[i * io->ldv + d];
        for (size_t d = 0; d < dk; d++) {
            w.W[i * dk + d] = b * ec * K[i * io->ldk + d];
            w.Qd[i * dk + d] = Q[i * io->ldq + d] * ec;
            w.Kd[i * dk + d] = K[i * io->ldk + d] * e;
        }
    }
    /* U = (I + L)^-1 beta V, W = (I + L)^-1 beta e^c K */
    cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (blasint)n,
                (blasint)dv, 1.0f, L, C, w.U, (blasint)dv);
    cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, (blasint)n,
                (blasint)dk, 1.0f, L, C, w.W, (blasint)dk);
}

void vw_gdn_chunk_state(const vw_gdn_io *io, size_t h, size_t t0, float *chunk, float *S, size_t j0,
                        size_t j1) {
    const size_t dk = io->dk, dv = io->dv, n = chunk_rows(io, t0), m = j1 - j0;
    chunk_ws w = split_chunk(chunk, dk, dv);
    float *U = w.U + j0, *Sj = S + j0, *O = io->out + t0 * io->ldo + h * dv + j0;
    /* V_new = U - W S (in U) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)m, (blasint)dk,
                -1.0f, w.W, (blasint)dk, Sj, (blasint)dv, 1.0f, U, (blasint)dv);
    /* O = Qd S + P V_new */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)m, (blasint)dk,
                1.0f, w.Qd, (blasint)dk, Sj, (blasint)dv, 0.0f, O, (blasint)io->ldo);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)m, (blasint)n, 1.0f,
                w.P, C, U, (blasint)dv, 1.0f, O, (blasint)io->ldo);
    /* S = e^{c_last} S + (K e^{c_last - c})^T V_new */
    float el = expf(w.c[n - 1]);
    for (size_t i = 0; i < dk; i++)
        for (size_t j = 0; j < m; j++)
            Sj[i * dv + j] *= el;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)dk, (blasint)m, (blasint)n, 1.0f,
                w.Kd, (blasint)dk, U, (blasint)dv, 1.0f, Sj, (blasint)dv);
}

void vw_gdn_chunked(const vw_gdn_io *io, size_t h0, size_t h1, float *state, float *ws) {
    float *chunk = ws, *L = ws + vw_gdn_chunk_floats(io->dk, io->dv);
    for (size_t h = h0; h < h1; h++) {
        float *S = state + h * io->dk * io->dv;
        for (size_t t0 = 0; t0 < io->T; t0 += C) {
            vw_gdn_chunk_prep(io, h, t0, chunk, L);
            for (size_t j0 = 0; j0 < io->dv; j0 += VW_GDN_SLICE)
                vw_gdn_chunk_state(io, h, t0, chunk, S, j0,
                                   io->dv - j0 < VW_GDN_SLICE ? io->dv : j0 + VW_GDN_SLICE);
        }
    }
}

void vw_gdn_recurrent(const vw_gdn_io *io, size_t h0, size_t h1, float *state) {
    const size_t Hv = io->Hv, dk = io->dk, dv = io->dv;
    for (size_t h = h0; h < h1; h++) {
        const size_t kh = h / (Hv / io->Hk);
        float *S = state + h * dk * dv;
        for (size_t t = 0; t < io->T; t++) {
            const float *q = io->q + t * io->ldq + kh * dk, *k = io->k + t * io->ldk + kh * dk;
            const float *v = io->v + t * io->ldv + h * dv;
            float *o = io->out + t * io->ldo + h * dv;
            float decay = expf(io->g[t * Hv + h]), b = io->beta[t * Hv + h];
            for (size_t i = 0; i < dk * dv; i++)
                S[i] *= decay;
            for (size_t j = 0; j < dv; j++) { /* delta_j = beta (v_j - (S^T k)_j) */
                double u = 0.0;
                for (size_t i = 0; i < dk; i++)
                    u += (double)S[i * dv + j] * k[i];
                float delta = b * (v[j] - (float)u);
                for (size_t i = 0; i < dk; i++)
                    S[i * dv + j] += k[i] * delta;
            }
            for (size_t j = 0; j < dv; j++) { /* o = S^T q */
                double acc = 0.0;
                for (size_t i = 0; i < dk; i++)
                    acc += (double)S[i * dv + j] * q[i];
                o[j] = (float)acc;
            }
        }
    }
}
