/* heads.c — CandidateHead and SpanHeadV2 in FP32 over OpenBLAS (see heads.h;
 * docs/spec/answers.md §3, §5). Reads hidden rows the executor produced; never
 * calibrates or decodes. */
#include "heads.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- FP32 building blocks ------------------------------------------------------ */

/* y[r] = (x[r] - mean) / sqrt(var + eps) * w + b per row (VW_HEAD_LN_EPS); biased variance.
 * Statistics in float64 (PyTorch accumulates above FP32 too; agreement ~1e-7). */
static void layer_norm(const float *x, size_t rows, size_t h, const float *w, const float *b,
                       float *y) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * h;
        double mean = 0.0, var = 0.0;
        for (size_t i = 0; i < h; i++)
            mean += xr[i];
        mean /= (double)h;
        for (size_t i = 0; i < h; i++)
            var += ((double)xr[i] - mean) * ((double)xr[i] - mean);
        var /= (double)h;
        float rstd = (float)(1.0 / sqrt(var + VW_HEAD_LN_EPS));
        for (size_t i = 0; i < h; i++)
            y[r * h + i] = ((xr[i] - (float)mean) * rstd) * w[i] + b[i];
    }
}

/* Subtracts the column mean over rows (the head's centring). The sums run
 * row by row (each column's terms in row order, float64), so rows are read in
 * memory order; acc holds h doubles. */
static void centre_rows(float *x, size_t rows, size_t h, double *acc) {
    memset(acc, 0, h * sizeof *acc);
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < h; i++)
            acc[i] += x[r * h + i];
    for (size_t i = 0; i < h; i++)
        acc[i] = (float)(acc[i] / (double)rows); /* the mean, rounded to float */
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < h; i++)
            x[r * h + i] -= (float)acc[i];
}

/* Exact GELU: x * 0.5 * (1 + erf(x / sqrt 2)). */
static inline float gelu(float x) {
    return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
}

/* out[rows, d] = x[rows, H] . w[d, H]^T for each problem's rows on its own:
 * rows[k] rows of problem k, one after the other in x and out. One GEMM per
 * problem, not per batch: OpenBLAS rounds a row differently by where it sits
 * in a call (the tail of its unrolled row blocks, and each thread's share of
 * them), so rows projected with a whole micro-batch came out other bits than
 * the same rows alone (envelopes differing in the 7th digit by batch, on a
 * 12-row-unrolled kernel). A problem's call shape is its own, so its logits
 * do not depend on the batch. */
static void project(const float *x, const size_t *rows, size_t n, size_t h, const float *w,
                    size_t d, float *out) {
    for (size_t k = 0, r = 0; k < n; r += rows[k], k++)
        if (rows[k])
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows[k], (int)d, (int)h, 1.0f,
                        x + r * h, (int)h, w, (int)h, 0.0f, out + r * d, (int)d);
}

/* v . GELU(a + c) over d. */
static float mlp_score(const float *a, const float *c, const float *v, size_t d) {
    double s = 0.0;
    for (size_t k = 0; k < d; k++)
        s += (double)v[k] * (double)gelu(a[k] + c[k]);
    return (float)s;
}

/* ---- CandidateHead -------------------------------------------------------------- */

vw_status vw_cand_head_logits_batch(const vw_cand_head *h, const vw_cand_problem *p, size_t n,
                                    vw_err *err) {
    size_t H = h->hidden, d = h->d, R = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k].m == 0)
            return VW_FAIL(err, VW_EINVAL, "length_mismatch", "candidate head: 0 option rows");
        R += p[k].m;
    }
    if (n == 0)
        return VW_OK;
    /* c [R,H] | q [n,H] | kc [R,d] | mc [R,d] | qq [n,d] | mq [n,d] */
    float *ws = malloc(((R + n) * H + 2 * (R + n) * d) * sizeof *ws);
    size_t *rows = malloc(2 * n * sizeof *rows); /* [n] option rows | [n] ones */
    if (!ws || !rows) {
        free(ws);
        free(rows);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "candidate head, %zu rows", R);
    }
    for (size_t k = 0; k < n; k++) {
        rows[k] = p[k].m;
        rows[n + k] = 1;
    }
    float *c = ws, *q = c + R * H, *kc = q + n * H, *mc = kc + R * d, *qq = mc + R * d,
          *mq = qq + n * d;
    for (size_t k = 0, r = 0; k < n; r += p[k].m, k++) {
        layer_norm(p[k].cands, p[k].m, H, h->cand_ln_w, h->cand_ln_b, c + r * H);
        layer_norm(p[k].query, 1, H, h->query_ln_w, h->query_ln_b, q + k * H);
    }
    project(c, rows, n, H, h->key, d, kc);        /* (R,d) K c_i */
    project(c, rows, n, H, h->cmlp_w, d, mc);     /* (R,d) Mc c_i */
    project(q, rows + n, n, H, h->query, d, qq);  /* (n,d) Q q */
    project(q, rows + n, n, H, h->qmlp_w, d, mq); /* (n,d) Mq q */
    free(rows);
    float scale = vw_head_scale(d);
    for (size_t k = 0, r = 0; k < n; r += p[k].m, k++)
        for (size_t i = 0; i < p[k].m; i++) {
            float *mci = mc + (r + i) * d;
            for (size_t t = 0; t < d; t++)
                mci[t] += h->cmlp_b[t]; /* candidate_mlp carries the only bias */
            float bil = cblas_sdot((int)d, kc + (r + i) * d, 1, qq + k * d, 1) * scale;
            float z = bil + mlp_score(mci, mq + k * d, h->scalar, d);
            p[k].logits[i] = p[k].is_set ? z + h->set_bias : z;
        }
    free(ws);
    return VW_OK;
}

vw_status vw_cand_head_logits(const vw_cand_head *h, const float *cands, size_t m,
                              const float *query, bool is_set, float *logits, vw_err *err) {
    vw_cand_problem one = {cands, m, query, is_set, logits};
    return vw_cand_head_logits_batch(h, &one, 1, err);
}

/* ---- SpanHeadV2 ----------------------------------------------------------------- */

vw_status vw_span_label_means(const float *rows, size_t n_rows, size_t hidden,
                              const int32_t *starts, const int32_t *ends, size_t n_labels,
                              float *out, vw_err *err) {
    double *acc = malloc(hidden * sizeof *acc);
    if (!acc)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "label means");
    for (size_t l = 0; l < n_labels; l++) {
        int32_t a = starts[l], b = ends[l];
        if (a < 0 || b < a || (size_t)b >= n_rows) {
            free(acc);
            return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                           "label %zu: row range [%d, %d] outside the block's %zu rows", l, a, b,
                           n_rows);
        }
        /* Row by row (each element's terms in row order, float64): the rows are
         * read in memory order. */
        memset(acc, 0, hidden * sizeof *acc);
        for (int32_t r = a; r <= b; r++)
            for (size_t i = 0; i < hidden; i++)
                acc[i] += rows[(size_t)r * hidden + i];
        for (size_t i = 0; i < hidden; i++)
            out[l * hidden + i] = (float)(acc[i] / (double)(b - a + 1));
    }
    free(acc);
    return VW_OK;
}

vw_status vw_span_head_logits_batch(const vw_span_head *h, const vw_span_problem *p, size_t n,
                                    vw_err *err) {
    size_t H = h->hidden, d = h->d, W = 0, L = 0;
    for (size_t k = 0; k < n; k++) {
        if (p[k].n_labels == 0)
            return VW_FAIL(err, VW_EINVAL, "length_mismatch", "span head: 0 labels for %zu words",
                           p[k].n_words);
        W += p[k].n_words;
        L += p[k].n_labels;
    }
    if (W == 0)
        return VW_OK;
    /* x [W,H] | a [L,H] | kx [W,d] | mx [W,d] | qa [L,d] | na [L,d] */
    float *ws = malloc(((W + L) * H + 2 * (W + L) * d) * sizeof *ws);
    double *acc = malloc(H * sizeof *acc);
    size_t *rows = malloc(2 * n * sizeof *rows); /* [n] words | [n] labels */
    if (!ws || !acc || !rows) {
        free(ws);
        free(acc);
        free(rows);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span head %zu x %zu", W, L);
    }
    for (size_t k = 0; k < n; k++) {
        rows[k] = p[k].n_words;
        rows[n + k] = p[k].n_labels;
    }
    float *x = ws, *a = x + W * H, *kx = a + L * H, *mx = kx + W * d, *qa = mx + W * d,
          *na = qa + L * d;
    for (size_t k = 0, w0 = 0, l0 = 0; k < n; w0 += p[k].n_words, l0 += p[k].n_labels, k++) {
        size_t nw = p[k].n_words, nl = p[k].n_labels;
        float *xk = x + w0 * H, *ak = a + l0 * H;
        layer_norm(p[k].words, nw, H, h->wn_w, h->wn_b, xk);
        if (nw)
            centre_rows(xk, nw, H, acc); /* over this block's (or window's) words */
        layer_norm(p[k].labels, nl, H, h->ln_w, h->ln_b, ak);
        for (size_t l = 0; l < nl; l++) {
            const float *slot = h->slot + vw_span_slot(l, h->slots) * H;
            for (size_t i = 0; i < H; i++)
                ak[l * H + i] += slot[i];
        }
        if (nl >= 2) /* a single label is not centred (it would vanish) */
            centre_rows(ak, nl, H, acc);
    }
    project(x, rows, n, H, h->k, d, kx);     /* (W,d) K x_w */
    project(x, rows, n, H, h->m_w, d, mx);   /* (W,d) M x_w */
    project(a, rows + n, n, H, h->q, d, qa); /* (L,d) Q a_l */
    project(a, rows + n, n, H, h->n, d, na); /* (L,d) N a_l */
    free(rows);
    for (size_t w = 0; w < W; w++)
        for (size_t t = 0; t < d; t++)
            mx[w * d + t] += h->m_b[t];
    /* z = kx . qa^T / sqrt(d), then + the MLP term per pair, problem by problem. */
    float scale = vw_head_scale(d);
    for (size_t k = 0, w0 = 0, l0 = 0; k < n; w0 += p[k].n_words, l0 += p[k].n_labels, k++) {
        size_t nw = p[k].n_words, nl = p[k].n_labels;
        if (!nw)
            continue;
        float *z = p[k].z;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nw, (int)nl, (int)d, scale,
                    kx + w0 * d, (int)d, qa + l0 * d, (int)d, 0.0f, z, (int)nl);
        for (size_t w = 0; w < nw; w++)
            for (size_t l = 0; l < nl; l++)
                z[w * nl + l] += mlp_score(mx + (w0 + w) * d, na + (l0 + l) * d, h->v, d);
    }
    free(ws);
    free(acc);
    return VW_OK;
}

vw_status vw_span_head_logits(const vw_span_head *h, const float *words, size_t n_words,
                              const float *labels, size_t n_labels, float *z, vw_err *err) {
    vw_span_problem one = {words, n_words, labels, n_labels, z};
    return vw_span_head_logits_batch(h, &one, 1, err);
}
