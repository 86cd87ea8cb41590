// heads_cuda.cu — CandidateHead and SpanHeadV2 on the device (see heads_cuda.h).
// Twin of core/answers/heads.c, step for step:
//   head_ln_k      layer_norm         (one warp per row; statistics in float64)
//   label_ln_k     vw_span_label_means + layer_norm + slot (one warp per label)
//   centre_k       centre_rows        (one thread per column; float64, rows in order)
//   projections    project            (gemm_f32_fixed: fixed order, batch-invariant)
//   cand_pairs_k   the candidate loop (bilinear + mlp_score; one warp per option)
//   span_pairs_k   the span pair loop (one warp per word, labels in order)
// A job's rows are the readouts a forward gathered; every table the kernels
// read is built on the host into pinned memory and sent in one copy.
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heads_cuda.cuh"
#include "kernels.cuh"

namespace {

constexpr unsigned WARPS = 8, THREADS = WARPS * 32, COLS = 128;

// ---- kernels ----------------------------------------------------------------

// heads.c gelu: x * 0.5 * (1 + erf(x / sqrt 2)), FP32.
__device__ __forceinline__ float gelu(float x) {
    return x * 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
}

__device__ __forceinline__ size_t warp_id() {
    return ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
}

// y = LN(x) * w + b (+ add) over H columns, by one warp; x may be y. The
// reductions are warp collectives, so every lane has read all of x before any
// lane writes its own columns.
__device__ void warp_layer_norm(const float *x, size_t H, const float *w, const float *b,
                                const float *add, float *y) {
    const unsigned lane = threadIdx.x % 32;
    double s = 0.0;
    for (size_t c = lane; c < H; c += 32)
        s += x[c];
    const double mean = vw_warp_sum_d(s) / (double)H;
    double v = 0.0;
    for (size_t c = lane; c < H; c += 32)
        v += ((double)x[c] - mean) * ((double)x[c] - mean);
    v = vw_warp_sum_d(v) / (double)H;
    const float rstd = (float)(1.0 / sqrt(v + VW_HEAD_LN_EPS)), mf = (float)mean;
    for (size_t c = lane; c < H; c += 32) {
        float o = ((x[c] - mf) * rstd) * w[c] + b[c];
        y[c] = add ? o + add[c] : o;
    }
}

// dst[i] = LN(rows[idx[i]]), i < n.
__global__ void head_ln_k(const float *__restrict__ rows, size_t H, const int32_t *__restrict__ idx,
                          size_t n, const float *__restrict__ w, const float *__restrict__ b,
                          float *__restrict__ dst) {
    const size_t i = warp_id();
    if (i >= n)
        return;
    warp_layer_norm(rows + (size_t)idx[i] * H, H, w, b, nullptr, dst + i * H);
}

// dst[l] = LN(mean of rows[start[l] .. end[l]]) + slot[slot_of[l]]: the mean
// per column in float64, rows in order, as vw_span_label_means.
__global__ void label_ln_k(const float *__restrict__ rows, size_t H,
                           const int32_t *__restrict__ start, const int32_t *__restrict__ end,
                           const int32_t *__restrict__ slot_of, size_t n, const float *w,
                           const float *b, const float *__restrict__ slot, float *dst) {
    const size_t l = warp_id();
    if (l >= n)
        return;
    float *y = dst + l * H;
    const unsigned lane = threadIdx.x % 32;
    for (size_t c = lane; c < H; c += 32) {
        double acc = 0.0;
        for (int32_t r = start[l]; r <= end[l]; r++)
            acc += rows[(size_t)r * H + c];
        y[c] = (float)(acc / (double)(end[l] - start[l] + 1));
    }
    __syncwarp();
    warp_layer_norm(y, H, w, b, slot + (size_t)slot_of[l] * H, y);
}

// Group g's rows [first[g], first[g] + n[g]) of x [*, H] lose their column
// mean (float64 sum in row order, rounded to FP32), as centre_rows.
__global__ void centre_k(float *__restrict__ x, size_t H, const int32_t *__restrict__ first,
                         const int32_t *__restrict__ n) {
    const size_t g = blockIdx.x, c = (size_t)blockIdx.y * COLS + threadIdx.x;
    if (c >= H)
        return;
    float *col = x + (size_t)first[g] * H + c;
    double acc = 0.0;
    for (int32_t r = 0; r < n[g]; r++)
        acc += col[(size_t)r * H];
    const float mean = (float)(acc / (double)n[g]);
    for (int32_t r = 0; r < n[g]; r++)
        col[(size_t)r * H] -= mean;
}

// One pair term: <a, q> * scale + v . GELU(m + bias + n), both sums in float64
// over lane-strided t, then the warp's butterfly (a fixed order).
__device__ float pair_logit(const float *a, const float *q, const float *m, const float *bias,
                            const float *nq, const float *v, size_t d, float scale) {
    double dot = 0.0, mlp = 0.0;
    for (size_t t = threadIdx.x % 32; t < d; t += 32) {
        dot += (double)a[t] * (double)q[t];
        mlp += (double)v[t] * (double)gelu((m[t] + bias[t]) + nq[t]);
    }
    return (float)vw_warp_sum_d(dot) * scale + (float)vw_warp_sum_d(mlp);
}

// Option j (projections pc [C, 2d]: key | cmlp) of problem prob[j] (pq [Q, 2d]:
// query | qmlp) -> out[out_at[j]].
__global__ void cand_pairs_k(const float *__restrict__ pc, const float *__restrict__ pq, size_t d,
                             const int32_t *__restrict__ prob, const int32_t *__restrict__ out_at,
                             const int32_t *__restrict__ is_set, const float *__restrict__ cmlp_b,
                             const float *__restrict__ scalar, float set_bias, float scale,
                             size_t C, float *__restrict__ out) {
    const size_t j = warp_id();
    if (j >= C)
        return;
    const float *kc = pc + j * 2 * d, *qq = pq + (size_t)prob[j] * 2 * d;
    float z = pair_logit(kc, qq, kc + d, cmlp_b, qq + d, scalar, d, scale);
    if (threadIdx.x % 32 == 0)
        out[out_at[j]] = is_set[prob[j]] ? z + set_bias : z;
}

// Word row i (px [W, 2d]: K | M) of problem prob[i], against each of its
// labels (pa [L, 2d]: Q | N) -> out[p_out + w * nl + l].
__global__ void span_pairs_k(const float *__restrict__ px, const float *__restrict__ pa, size_t d,
                             const int32_t *__restrict__ prob, const int32_t *__restrict__ p_w0,
                             const int32_t *__restrict__ p_l0, const int32_t *__restrict__ p_nl,
                             const int32_t *__restrict__ p_out, const float *__restrict__ m_b,
                             const float *__restrict__ v, float scale, size_t W,
                             float *__restrict__ out) {
    const size_t i = warp_id();
    if (i >= W)
        return;
    const int32_t p = prob[i], nl = p_nl[p];
    const float *kx = px + i * 2 * d;
    float *z = out + (size_t)p_out[p] + (i - (size_t)p_w0[p]) * (size_t)nl;
    for (int32_t l = 0; l < nl; l++) {
        const float *qa = pa + (size_t)(p_l0[p] + l) * 2 * d;
        float zl = pair_logit(kx, qa, kx + d, m_b, qa + d, v, d, scale);
        if (threadIdx.x % 32 == 0)
            z[l] = zl;
    }
}

} // namespace

// ---- weights ------------------------------------------------------------------

namespace {

struct cu_cand_w {
    float *cln_w, *cln_b, *qln_w, *qln_b; // [H]
    float *ck, *cq;                       // [2d, H]: key | candidate_mlp, query | query_mlp
    float *cmlp_b, *scalar;               // [d]
    float set_bias;
    size_t d;
};

struct cu_span_w {
    float *wn_w, *wn_b, *ln_w, *ln_b; // [H]
    float *slot;                      // [S, H]
    float *wx, *wa;                   // [2d, H]: K | M, Q | N
    float *m_b, *v;                   // [d]
    size_t d, slots;
    int loaded;
};

} // namespace

struct vw_cuda_heads {
    size_t H;
    void *weights; // device, every tensor below
    cu_cand_w cand;
    cu_span_w span[VW_SPAN_HEADS];
    int32_t *hmeta; // pinned tables
    int32_t *dmeta; // their device copy: its own, as the upload may run beside a forward
    size_t hmeta_cap;
    float *hout; // pinned logits staging
    size_t hout_cap;
    int pending; // a run enqueued copies from the pinned tables and did not wait
};

namespace {

// Bump allocator over the weight block (base NULL: measures); 256-byte aligned.
struct wcarver {
    char *base;
    size_t off;
    float *take(size_t n) {
        off = (off + 255) / 256 * 256;
        float *p = base ? (float *)(base + off) : nullptr;
        off += n * sizeof(float);
        return p;
    }
};

size_t layout(vw_cuda_heads *h, const vw_cand_head *c, const vw_span_head *const sp[2],
              char *base) {
    wcarver cv{base, 0};
    const size_t H = h->H;
    cu_cand_w *cw = &h->cand;
    cw->cln_w = cv.take(H), cw->cln_b = cv.take(H), cw->qln_w = cv.take(H);
    cw->qln_b = cv.take(H), cw->ck = cv.take(2 * c->d * H), cw->cq = cv.take(2 * c->d * H);
    cw->cmlp_b = cv.take(c->d), cw->scalar = cv.take(c->d);
    for (int k = 0; k < VW_SPAN_HEADS; k++) {
        if (!sp[k])
            continue;
        cu_span_w *w = &h->span[k];
        const size_t d = sp[k]->d;
        w->wn_w = cv.take(H), w->wn_b = cv.take(H), w->ln_w = cv.take(H), w->ln_b = cv.take(H);
        w->slot = cv.take(sp[k]->slots * H), w->wx = cv.take(2 * d * H);
        w->wa = cv.take(2 * d * H), w->m_b = cv.take(d), w->v = cv.take(d);
    }
    return cv.off;
}

vw_status put(float *dst, const float *src, size_t n, vw_err *err) {
    return VW_CUDA_TRY(err, cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
}

vw_status upload(vw_cuda_heads *h, const vw_cand_head *c, const vw_span_head *const sp[2],
                 vw_err *err) {
    const size_t H = h->H, dc = c->d;
    const cu_cand_w *cw = &h->cand;
    vw_status st = VW_OK;
    const struct {
        float *dst;
        const float *src;
        size_t n;
    } cand[] = {{cw->cln_w, c->cand_ln_w, H},  {cw->cln_b, c->cand_ln_b, H},
                {cw->qln_w, c->query_ln_w, H}, {cw->qln_b, c->query_ln_b, H},
                {cw->ck, c->key, dc * H},      {cw->ck + dc * H, c->cmlp_w, dc * H},
                {cw->cq, c->query, dc * H},    {cw->cq + dc * H, c->qmlp_w, dc * H},
                {cw->cmlp_b, c->cmlp_b, dc},   {cw->scalar, c->scalar, dc}};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0] && st == VW_OK; i++)
        st = put(cand[i].dst, cand[i].src, cand[i].n, err);
    for (int k = 0; k < VW_SPAN_HEADS && st == VW_OK; k++) {
        if (!sp[k])
            continue;
        const vw_span_head *s = sp[k];
        const cu_span_w *w = &h->span[k];
        const size_t d = s->d;
        const struct {
            float *dst;
            const float *src;
            size_t n;
        } span[] = {{w->wn_w, s->wn_w, H},
                    {w->wn_b, s->wn_b, H},
                    {w->ln_w, s->ln_w, H},
                    {w->ln_b, s->ln_b, H},
                    {w->slot, s->slot, s->slots * H},
                    {w->wx, s->k, d * H},
                    {w->wx + d * H, s->m_w, d * H},
                    {w->wa, s->q, d * H},
                    {w->wa + d * H, s->n, d * H},
                    {w->m_b, s->m_b, d},
                    {w->v, s->v, d}};
        for (size_t i = 0; i < sizeof span / sizeof span[0] && st == VW_OK; i++)
            st = put(span[i].dst, span[i].src, span[i].n, err);
    }
    /* Pageable cudaMemcpy on the legacy stream may return before the DMA
     * lands; the runs use non-blocking streams that do not wait for it. */
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaDeviceSynchronize());
    return st;
}

} // namespace

vw_status vw_cuda_heads_new(const vw_cand_head *cand, const vw_span_head *router,
                            const vw_span_head *broad, size_t max_rows, vw_cuda_heads **out,
                            vw_err *err) {
    *out = nullptr;
    const vw_span_head *sp[VW_SPAN_HEADS] = {router, broad};
    for (int k = 0; k < VW_SPAN_HEADS; k++)
        if (sp[k] && sp[k]->hidden != cand->hidden)
            return VW_FAIL(err, VW_EINVAL, "bad_shape",
                           "device heads: span head width %zu differs from the candidate head's "
                           "%zu",
                           sp[k]->hidden, cand->hidden);
    if (!router)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "device heads: no router span head");
    vw_cuda_heads *h = (vw_cuda_heads *)calloc(1, sizeof *h);
    if (!h)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "device heads");
    h->H = cand->hidden;
    h->cand.d = cand->d, h->cand.set_bias = cand->set_bias;
    for (int k = 0; k < VW_SPAN_HEADS; k++)
        if (sp[k])
            h->span[k].d = sp[k]->d, h->span[k].slots = sp[k]->slots, h->span[k].loaded = 1;
    h->hmeta_cap = 16 * max_rows + 256;
    h->hout_cap = 16 * max_rows > 4096 ? 16 * max_rows : 4096;
    vw_status st = VW_CUDA_TRY(err, cudaMalloc(&h->weights, layout(h, cand, sp, nullptr)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMallocHost((void **)&h->hmeta, h->hmeta_cap * sizeof(int32_t)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMalloc((void **)&h->dmeta, h->hmeta_cap * sizeof(int32_t)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMallocHost((void **)&h->hout, h->hout_cap * sizeof(float)));
    if (st == VW_OK) {
        layout(h, cand, sp, (char *)h->weights);
        st = upload(h, cand, sp, err);
    }
    if (st != VW_OK) {
        vw_cuda_heads_free(h);
        return st;
    }
    *out = h;
    return VW_OK;
}

void vw_cuda_heads_free(vw_cuda_heads *h) {
    if (!h)
        return;
    cudaFree(h->weights);
    cudaFree(h->dmeta);
    cudaFreeHost(h->hmeta);
    cudaFreeHost(h->hout);
    free(h);
}

int vw_cu_heads_has(const vw_cuda_heads *h, int head) {
    return head >= 0 && head < VW_SPAN_HEADS && h->span[head].loaded;
}

// ---- a job's tables ----------------------------------------------------------

namespace {

// One pass's tables: host (pinned) and device addresses of the same ints.
struct tab {
    int32_t *h, *d;
};

struct planner {
    int32_t *hbase, *dbase;
    size_t n, cap;
    tab take(size_t k) {
        tab t = {hbase + n, dbase + n};
        n += k;
        return t;
    }
    bool fits() const {
        return n <= cap;
    }
};

// Candidate pass: C option rows of Q problems; outputs [0, C).
struct cand_pass {
    size_t C, Q;
    tab src, prob, out, qsrc, qset;
};

// Span pass of one head: W word rows, L labels of P problems (those with words).
struct span_pass {
    size_t W, L, P, G;
    tab wsrc, wprob, lstart, lend, lslot, pw0, pl0, pnl, pout, gfirst, gn;
};

// Calls f(host logits, first output, count) for every output of the job in
// the device order: candidate problems, then the router's span problems, then
// the broad head's (problems without words have none).
template <typename F> void for_each_output(const vw_head_job *job, F f) {
    size_t o = 0;
    for (size_t k = 0; k < job->n_cand; k++) {
        f(job->cand[k].logits, o, (size_t)job->cand[k].m);
        o += (size_t)job->cand[k].m;
    }
    for (int h = 0; h < VW_SPAN_HEADS; h++)
        for (size_t k = 0; k < job->n_span; k++) {
            const vw_head_span_job *s = &job->span[k];
            if (s->head != h || !s->n_words)
                continue;
            const size_t n = (size_t)s->n_words * (size_t)s->n_labels;
            f(s->z, o, n);
            o += n;
        }
}

void plan_cand(const vw_head_job *job, planner *pl, cand_pass *c) {
    c->C = 0, c->Q = job->n_cand;
    for (size_t k = 0; k < job->n_cand; k++)
        c->C += (size_t)job->cand[k].m;
    c->src = pl->take(c->C), c->prob = pl->take(c->C), c->out = pl->take(c->C);
    c->qsrc = pl->take(c->Q), c->qset = pl->take(c->Q);
    if (!pl->fits())
        return;
    for (size_t k = 0, j = 0; k < job->n_cand; k++) {
        const vw_head_cand_job *cj = &job->cand[k];
        for (int32_t i = 0; i < cj->m; i++, j++) {
            c->src.h[j] = cj->row + i;
            c->prob.h[j] = (int32_t)k;
            c->out.h[j] = (int32_t)j; // candidate outputs come first, in option order
        }
        c->qsrc.h[k] = cj->query;
        c->qset.h[k] = cj->is_set;
    }
}

// o: the first output of this pass (after the candidates and earlier heads);
// returns the one after its last.
size_t plan_span(const vw_head_job *job, int head, size_t slots, size_t o, planner *pl,
                 span_pass *s) {
    *s = span_pass{};
    for (size_t k = 0; k < job->n_span; k++) {
        const vw_head_span_job *sj = &job->span[k];
        if (sj->head != head || !sj->n_words)
            continue;
        s->W += (size_t)sj->n_words, s->L += (size_t)sj->n_labels, s->P++;
        s->G += sj->n_labels >= 2 ? 2 : 1;
    }
    s->wsrc = pl->take(s->W), s->wprob = pl->take(s->W);
    s->lstart = pl->take(s->L), s->lend = pl->take(s->L), s->lslot = pl->take(s->L);
    s->pw0 = pl->take(s->P), s->pl0 = pl->take(s->P), s->pnl = pl->take(s->P);
    s->pout = pl->take(s->P), s->gfirst = pl->take(s->G), s->gn = pl->take(s->G);
    size_t w = 0, l = 0, p = 0, g = 0;
    for (size_t k = 0; k < job->n_span; k++) {
        const vw_head_span_job *sj = &job->span[k];
        if (sj->head != head || !sj->n_words)
            continue;
        if (pl->fits()) {
            s->pw0.h[p] = (int32_t)w, s->pl0.h[p] = (int32_t)l, s->pnl.h[p] = sj->n_labels;
            s->pout.h[p] = (int32_t)o;
            // Centring groups in the normed rows: words at [0, W), labels after them.
            s->gfirst.h[g] = (int32_t)w, s->gn.h[g++] = sj->n_words;
            if (sj->n_labels >= 2) // a single label is not centred (heads.c)
                s->gfirst.h[g] = (int32_t)(s->W + l), s->gn.h[g++] = sj->n_labels;
            for (int32_t i = 0; i < sj->n_words; i++)
                s->wsrc.h[w + i] = sj->words + i, s->wprob.h[w + i] = (int32_t)p;
            for (int32_t i = 0; i < sj->n_labels; i++) {
                s->lstart.h[l + i] = sj->starts[i], s->lend.h[l + i] = sj->ends[i];
                s->lslot.h[l + i] = (int32_t)vw_span_slot((size_t)i, slots);
            }
        }
        w += (size_t)sj->n_words, l += (size_t)sj->n_labels, p++;
        o += (size_t)sj->n_words * (size_t)sj->n_labels;
    }
    return o;
}

vw_status too_large(vw_err *err, const char *what, size_t need, size_t have) {
    return VW_FAIL(err, VW_ETRANSIENT, "batch_too_large",
                   "device heads: the job needs %zu %s, the scratch holds %zu; split the batch",
                   need, what, have);
}

// Scratch a pass of `rows` normed rows projected to 2d needs.
vw_status check_pass(const vw_cu_heads_scratch *sc, size_t rows, size_t H, size_t d, vw_err *err) {
    if (rows * H > sc->xn_floats)
        return too_large(err, "normed floats", rows * H, sc->xn_floats);
    if (rows * 2 * d > sc->proj_floats)
        return too_large(err, "projected floats", rows * 2 * d, sc->proj_floats);
    return VW_OK;
}

size_t warps_grid(size_t n) {
    return vw_blocks_for(n * 32, THREADS);
}

// The fixed-order FP32 GEMM (batch-invariant): Y [T, 2d] = X [T, H] W^T.
vw_status project(const float *X, size_t T, size_t H, const float *W, size_t d, float *Y,
                  cudaStream_t s, vw_err *err) {
    if (!T)
        return VW_OK;
    vw_cu_gemm g = {};
    g.stream = s, g.prec = VW_CUDA_FP32, g.invariant = 1;
    return vw_cu_linear(&g, X, H, W, Y, 2 * d, T, 2 * d, H, 0, err);
}

vw_status run_cand(const vw_cuda_heads *h, const float *rows, const cand_pass *c,
                   const vw_cu_heads_scratch *sc, cudaStream_t s, vw_err *err) {
    const cu_cand_w *w = &h->cand;
    const size_t H = h->H, d = w->d;
    float *xq = sc->xn + c->C * H, *pq = sc->proj + c->C * 2 * d;
    vw_status st = VW_LAUNCH(err, head_ln_k, warps_grid(c->C), THREADS, 0, s, rows, H, c->src.d,
                             c->C, w->cln_w, w->cln_b, sc->xn);
    if (st == VW_OK)
        st = VW_LAUNCH(err, head_ln_k, warps_grid(c->Q), THREADS, 0, s, rows, H, c->qsrc.d, c->Q,
                       w->qln_w, w->qln_b, xq);
    if (st == VW_OK)
        st = project(sc->xn, c->C, H, w->ck, d, sc->proj, s, err);
    if (st == VW_OK)
        st = project(xq, c->Q, H, w->cq, d, pq, s, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, cand_pairs_k, warps_grid(c->C), THREADS, 0, s, sc->proj, pq, d,
                       c->prob.d, c->out.d, c->qset.d, w->cmlp_b, w->scalar, w->set_bias,
                       vw_head_scale(d), c->C, sc->out);
    return st;
}

vw_status run_span(const cu_span_w *w, size_t H, const float *rows, const span_pass *p,
                   const vw_cu_heads_scratch *sc, cudaStream_t s, vw_err *err) {
    const size_t d = w->d;
    float *xa = sc->xn + p->W * H, *pa = sc->proj + p->W * 2 * d;
    vw_status st = VW_LAUNCH(err, head_ln_k, warps_grid(p->W), THREADS, 0, s, rows, H, p->wsrc.d,
                             p->W, w->wn_w, w->wn_b, sc->xn);
    if (st == VW_OK)
        st = VW_LAUNCH(err, label_ln_k, warps_grid(p->L), THREADS, 0, s, rows, H, p->lstart.d,
                       p->lend.d, p->lslot.d, p->L, w->ln_w, w->ln_b, w->slot, xa);
    if (st == VW_OK)
        st = VW_LAUNCH(err, centre_k, dim3((unsigned)p->G, vw_blocks_for(H, COLS)), COLS, 0, s,
                       sc->xn, H, p->gfirst.d, p->gn.d);
    if (st == VW_OK)
        st = project(sc->xn, p->W, H, w->wx, d, sc->proj, s, err);
    if (st == VW_OK)
        st = project(xa, p->L, H, w->wa, d, pa, s, err);
    if (st == VW_OK)
        st = VW_LAUNCH(err, span_pairs_k, warps_grid(p->W), THREADS, 0, s, sc->proj, pa, d,
                       p->wprob.d, p->pw0.d, p->pl0.d, p->pnl.d, p->pout.d, w->m_b, w->v,
                       vw_head_scale(d), p->W, sc->out);
    return st;
}

// The logits [0, n_out) back through the pinned staging, chunk by chunk, each
// scattered to the problems' host buffers it covers.
vw_status copy_back(vw_cuda_heads *h, const vw_head_job *job, const float *dout, size_t n_out,
                    cudaStream_t s, cudaEvent_t done, vw_err *err) {
    vw_status st = VW_OK;
    for (size_t c0 = 0; c0 < n_out && st == VW_OK; c0 += h->hout_cap) {
        const size_t c1 = c0 + h->hout_cap < n_out ? c0 + h->hout_cap : n_out;
        st = VW_CUDA_TRY(err, cudaMemcpyAsync(h->hout, dout + c0, (c1 - c0) * sizeof(float),
                                              cudaMemcpyDeviceToHost, s));
        if (st == VW_OK)
            st = VW_CUDA_TRY(err, cudaEventRecord(done, s));
        if (st == VW_OK)
            st = VW_CUDA_TRY(err, cudaEventSynchronize(done));
        if (st != VW_OK)
            break;
        for_each_output(job, [&](float *dst, size_t o, size_t n) {
            const size_t a = o > c0 ? o : c0, b = o + n < c1 ? o + n : c1;
            if (a < b)
                memcpy(dst + (a - o), h->hout + (a - c0), (b - a) * sizeof(float));
        });
    }
    return st;
}

} // namespace

vw_status vw_cu_heads_run(vw_cuda_heads *h, const float *rows, size_t n_rows,
                          const vw_head_job *job, const vw_cu_heads_scratch *sc,
                          const vw_cu_heads_streams *ss, vw_err *err) {
    const cudaStream_t s = ss->s;
    (void)n_rows; // the job was checked against it (vw_head_job_validate)
    for (size_t k = 0; k < job->n_span; k++)
        if (!vw_cu_heads_has(h, job->span[k].head))
            return VW_FAIL(err, VW_EINVAL, "bad_head_job",
                           "span problem %zu asks for the %s head, which this package lacks", k,
                           job->span[k].head == VW_SPAN_HEAD_BROAD ? "broad" : "?");
    vw_status st = VW_OK;
    /* A run that failed after queueing its table upload may still be reading
     * the pinned tables. */
    if (h->pending && (st = VW_CUDA_TRY(err, cudaStreamSynchronize(s))) == VW_OK && ss->copy)
        st = VW_CUDA_TRY(err, cudaStreamSynchronize(ss->copy));
    if (st != VW_OK)
        return st;
    h->pending = 0;
    size_t n_out = 0;
    for_each_output(job, [&](float *, size_t, size_t n) { n_out += n; });
    if (n_out > sc->out_floats || n_out > INT32_MAX)
        return too_large(err, "logits", n_out, sc->out_floats);
    if (!n_out)
        return VW_OK; // only span problems without words: nothing to compute
    planner pl = {h->hmeta, h->dmeta, 0, h->hmeta_cap};
    cand_pass cp;
    span_pass sp[VW_SPAN_HEADS];
    plan_cand(job, &pl, &cp);
    for (size_t k = 0, o = cp.C; k < VW_SPAN_HEADS; k++)
        o = plan_span(job, (int)k, h->span[k].slots, o, &pl, &sp[k]);
    if (!pl.fits())
        return too_large(err, "table ints", pl.n, pl.cap);
    if (cp.C)
        st = check_pass(sc, cp.C + cp.Q, h->H, h->cand.d, err);
    for (int k = 0; k < VW_SPAN_HEADS && st == VW_OK; k++)
        if (sp[k].P)
            st = check_pass(sc, sp[k].W + sp[k].L, h->H, h->span[k].d, err);
    if (st != VW_OK)
        return st;
    h->pending = 1;
    st = VW_CUDA_TRY(err, cudaMemcpyAsync(h->dmeta, h->hmeta, pl.n * sizeof(int32_t),
                                          cudaMemcpyHostToDevice, ss->copy ? ss->copy : s));
    if (st == VW_OK && ss->copy)
        st = VW_CUDA_TRY(err, cudaEventRecord(ss->uploaded, ss->copy));
    if (st == VW_OK && ss->copy)
        st = VW_CUDA_TRY(err, cudaStreamWaitEvent(s, ss->uploaded, 0));
    if (st == VW_OK && cp.C)
        st = run_cand(h, rows, &cp, sc, s, err);
    for (int k = 0; k < VW_SPAN_HEADS && st == VW_OK; k++)
        if (sp[k].P)
            st = run_span(&h->span[k], h->H, rows, &sp[k], sc, s, err);
    if (st == VW_OK)
        st = copy_back(h, job, sc->out, n_out, s, ss->done, err);
    if (st == VW_OK)
        h->pending = 0;
    return st;
}

vw_status vw_cuda_heads_run_host(vw_cuda_heads *h, const float *rows, size_t n_rows,
                                 const vw_head_job *job, vw_err *err) {
    vw_status st = vw_head_job_validate(job, n_rows, err);
    if (st != VW_OK)
        return st;
    /* Scratch for every row the job names at once (more than any pass needs). */
    size_t refs = 0, d = h->cand.d, n_out = 0;
    for (size_t k = 0; k < job->n_cand; k++)
        refs += (size_t)job->cand[k].m + 1;
    for (size_t k = 0; k < job->n_span; k++)
        refs += (size_t)job->span[k].n_words + (size_t)job->span[k].n_labels;
    for (int k = 0; k < VW_SPAN_HEADS; k++)
        d = h->span[k].d > d ? h->span[k].d : d;
    for_each_output(job, [&](float *, size_t, size_t n) { n_out += n; });
    vw_cu_heads_scratch sc = {};
    sc.xn_floats = refs * h->H, sc.proj_floats = refs * 2 * d;
    sc.out_floats = n_out;
    float *drows = nullptr;
    cudaStream_t s = nullptr;
    cudaEvent_t done = nullptr;
    const size_t rb = n_rows * h->H * sizeof(float);
    st = VW_CUDA_TRY(err, cudaMalloc(&drows, rb ? rb : 4));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMalloc(&sc.xn, (sc.xn_floats + 1) * sizeof(float)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMalloc(&sc.proj, (sc.proj_floats + 1) * sizeof(float)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaMalloc(&sc.out, (sc.out_floats + 1) * sizeof(float)));
    if (st == VW_OK)
        st = VW_CUDA_TRY(err, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (st == VW_OK)
        st = VW_CUDA_TRY(
            err, cudaEventCreateWithFlags(&done, cudaEventDisableTiming | cudaEventBlockingSync));
    if (st == VW_OK && rb)
        st = VW_CUDA_TRY(err, cudaMemcpy(drows, rows, rb, cudaMemcpyHostToDevice));
    if (st == VW_OK) /* the pageable copy ran on the legacy stream */
        st = VW_CUDA_TRY(err, cudaDeviceSynchronize());
    const vw_cu_heads_streams ss = {s, nullptr, nullptr, done};
    if (st == VW_OK)
        st = vw_cu_heads_run(h, drows, n_rows, job, &sc, &ss, err);
    if (s)
        cudaStreamSynchronize(s);
    if (done)
        cudaEventDestroy(done);
    if (s)
        cudaStreamDestroy(s);
    cudaFree(drows);
    cudaFree(sc.xn);
    cudaFree(sc.proj);
    cudaFree(sc.out);
    return st;
}
