/* span_decode.c — the span decoder, sparse gate, clipping and window averaging
 * (see span_decode.h; docs/spec/answers.md §4.6, §6.5, §6.6, §7.1). */
#include "span_decode.h"
#include "util/pairwise_sum.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void vw_span_list_free(vw_span_list *l) {
    if (!l)
        return;
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

/* NumPy's pairwise sum in float32 (float accumulators), as np.mean of a
 * float32 vector sums (pairwise_sum.h). */
VW_DEFINE_PAIRWISE_SUM(static, sum_pairwise_f32, float)

/* Working arrays of one decode. */
typedef struct decode_ws {
    float *p32;        /* [W][L] probabilities rounded to float32 */
    float *pbest;      /* [W] */
    int32_t *label;    /* [W] best label above the threshold, else -1 */
    int64_t *unit;     /* [W] */
    int32_t *vote_lab; /* [L] labels in order first met */
    double *vote_sum;  /* [L] */
    float *tmp;        /* [W] mean buffer */
} decode_ws;

static void ws_free(decode_ws *ws) {
    free(ws->p32);
    free(ws->pbest);
    free(ws->label);
    free(ws->unit);
    free(ws->vote_lab);
    free(ws->vote_sum);
    free(ws->tmp);
}

static vw_status ws_alloc(decode_ws *ws, size_t w, size_t l, vw_err *err) {
    memset(ws, 0, sizeof *ws);
    ws->p32 = malloc(w * l * sizeof *ws->p32);
    ws->pbest = malloc(w * sizeof *ws->pbest);
    ws->label = malloc(w * sizeof *ws->label);
    ws->unit = malloc(w * sizeof *ws->unit);
    ws->vote_lab = malloc(l * sizeof *ws->vote_lab);
    ws->vote_sum = malloc(l * sizeof *ws->vote_sum);
    ws->tmp = malloc(w * sizeof *ws->tmp);
    if (!ws->p32 || !ws->pbest || !ws->label || !ws->unit || !ws->vote_lab || !ws->vote_sum ||
        !ws->tmp) {
        ws_free(ws);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span decode of %zu x %zu", w, l);
    }
    return VW_OK;
}

/* Step 1: per-word best label (first on ties) above float32(threshold).
 * Returns the number of labelled words. */
static size_t label_words(decode_ws *ws, const double *probs, size_t nw, size_t nl,
                          double threshold) {
    /* NumPy compares a float32 array with a Python float in float32 (weak scalar). */
    const float thr = (float)threshold;
    size_t labelled = 0;
    for (size_t w = 0; w < nw; w++) {
        float *row = ws->p32 + w * nl;
        size_t best = 0;
        for (size_t l = 0; l < nl; l++) {
            row[l] = (float)probs[w * nl + l];
            if (row[l] > row[best])
                best = l;
        }
        ws->pbest[w] = row[best];
        ws->label[w] = row[best] > thr ? (int32_t)best : -1;
        labelled += ws->label[w] >= 0;
    }
    return labelled;
}

/* Step 2 for one run [r0, r1) of words sharing a unit: vote, then fill. */
static void vote_and_fill(decode_ws *ws, size_t r0, size_t r1) {
    size_t first = r1, last = r0, n_votes = 0;
    for (size_t w = r0; w < r1; w++) {
        if (ws->label[w] < 0)
            continue;
        if (first == r1)
            first = w;
        last = w;
        size_t v = 0;
        while (v < n_votes && ws->vote_lab[v] != ws->label[w])
            v++;
        if (v == n_votes) {
            ws->vote_lab[n_votes] = ws->label[w];
            ws->vote_sum[n_votes++] = 0.0;
        }
        /* Python float (double) sums of the float32 probabilities, in word order. */
        ws->vote_sum[v] += (double)ws->pbest[w];
    }
    if (first == r1)
        return;
    if (n_votes > 1) {
        size_t win = 0; /* max() keeps the first maximal label in first-met order */
        for (size_t v = 1; v < n_votes; v++)
            if (ws->vote_sum[v] > ws->vote_sum[win])
                win = v;
        for (size_t w = first; w <= last; w++)
            if (ws->label[w] >= 0)
                ws->label[w] = ws->vote_lab[win];
    }
    for (size_t w = first + 1; w < last; w++)
        if (ws->label[w] < 0)
            ws->label[w] = ws->label[first];
}

/* Step 3–6: join equal-label stretches, trim, average. */
static void join_spans(decode_ws *ws, const vw_text *text, const int32_t *words, size_t nw,
                       size_t nl, vw_span_list *out) {
    size_t w = 0;
    while (w < nw) {
        size_t stop = w + 1;
        while (stop < nw && ws->label[stop] == ws->label[w])
            stop++;
        int32_t lab = ws->label[w];
        if (lab >= 0) {
            int64_t a = words[2 * w], b = words[2 * (stop - 1) + 1];
            vw_span_trim(text, &a, &b);
            if (b > a) {
                for (size_t k = w; k < stop; k++)
                    ws->tmp[k - w] = ws->p32[k * nl + (size_t)lab];
                /* np.mean(float32): float32 pairwise sum, float32 divide. */
                float mean = sum_pairwise_f32(ws->tmp, stop - w) / (float)(stop - w);
                out->items[out->n++] = (vw_span){lab, a, b, a, b, (double)mean};
            }
        }
        w = stop;
    }
}

vw_status vw_span_decode(const vw_text *text, const int32_t *words, size_t n_words,
                         const double *probs, size_t n_labels, double threshold, vw_span_list *out,
                         vw_err *err) {
    out->items = NULL;
    out->n = 0;
    if (n_words == 0)
        return VW_OK;
    if (n_labels == 0)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch", "span decode: %zu words but 0 labels",
                       n_words);
    vw_status st = vw_text_check_words(text, words, n_words, err);
    if (st != VW_OK)
        return st;
    for (size_t i = 0; i < n_words * n_labels; i++)
        if (!isfinite(probs[i]))
            return VW_FAIL(err, VW_EINVAL, "invalid_model_output",
                           "span decode: probability [%zu][%zu] is not finite", i / n_labels,
                           i % n_labels);
    decode_ws ws;
    if ((st = ws_alloc(&ws, n_words, n_labels, err)) != VW_OK)
        return st;
    if (label_words(&ws, probs, n_words, n_labels, threshold) == 0)
        goto done;
    if ((st = vw_word_units(text, words, n_words, ws.unit, err)) != VW_OK)
        goto done;
    for (size_t r0 = 0; r0 < n_words;) {
        size_t r1 = r0 + 1;
        while (r1 < n_words && ws.unit[r1] == ws.unit[r0])
            r1++;
        if (ws.unit[r0] >= 0) /* words outside every unit never change */
            vote_and_fill(&ws, r0, r1);
        r0 = r1;
    }
    out->items = malloc(n_words * sizeof *out->items);
    if (!out->items) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%zu spans", n_words);
        goto done;
    }
    join_spans(&ws, text, words, n_words, n_labels, out);
done:
    ws_free(&ws);
    if (st != VW_OK)
        vw_span_list_free(out);
    return st;
}

vw_status vw_span_sparse_gate(const vw_cal *cal, const vw_text *text, const int32_t *words,
                              size_t n_words, const double *probs, size_t n_labels,
                              vw_span_threshold *thr, vw_err *err) {
    int64_t k;
    double t_sparse, probe;
    if (thr->rule != VW_THR_PII_LENGTH && thr->rule != VW_THR_PII_BUCKET)
        return VW_OK;
    if (!vw_cal_sparse_gate(cal, &k, &t_sparse, &probe) || thr->value >= t_sparse || n_words == 0)
        return VW_OK;
    vw_span_list spans;
    vw_status st = vw_span_decode(text, words, n_words, probs, n_labels, probe, &spans, err);
    if (st != VW_OK)
        return st;
    if ((int64_t)spans.n <= k) {
        thr->value = t_sparse;
        thr->sparse = true;
    }
    vw_span_list_free(&spans);
    return VW_OK;
}

vw_status vw_span_clip(const vw_text *text, vw_span_list *spans, int64_t lo, int64_t hi,
                       vw_err *err) {
    if (lo < 0 || hi < lo || hi > (int64_t)text->n)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span range [%lld, %lld) outside a text of %zu code points", (long long)lo,
                       (long long)hi, text->n);
    size_t kept = 0;
    for (size_t i = 0; i < spans->n; i++) {
        vw_span s = spans->items[i];
        int64_t a = s.start > lo ? s.start : lo;
        int64_t b = s.end < hi ? s.end : hi;
        vw_span_trim(text, &a, &b);
        if (b <= a)
            continue;
        s.text_start = a;
        s.text_end = b;
        s.start = a - lo;
        s.end = b - lo;
        spans->items[kept++] = s;
    }
    spans->n = kept;
    return VW_OK;
}

vw_status vw_span_window_average(const vw_span_window *windows, size_t n_windows, size_t n_words,
                                 size_t n_labels, double *logits, vw_err *err) {
    size_t *count = calloc(n_words ? n_words : 1, sizeof *count);
    if (!count)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "window counts of %zu words", n_words);
    vw_status st = VW_OK;
    memset(logits, 0, n_words * n_labels * sizeof *logits);
    for (size_t k = 0; k < n_windows; k++) {
        const vw_span_window *win = &windows[k];
        for (size_t i = 0; i < win->n; i++) {
            int64_t w = win->word_index[i];
            if (w < 0 || (size_t)w >= n_words || (i > 0 && w <= win->word_index[i - 1])) {
                st = VW_FAIL(err, VW_EINVAL, "length_mismatch",
                             "window %zu: word_index[%zu] = %lld is not ascending inside the "
                             "part's %zu words",
                             k, i, (long long)w, n_words);
                goto done;
            }
            for (size_t l = 0; l < n_labels; l++)
                logits[(size_t)w * n_labels + l] += (double)win->logits[i * n_labels + l];
            count[w]++;
        }
    }
    for (size_t w = 0; w < n_words; w++)
        for (size_t l = 0; l < n_labels; l++) {
            double *z = &logits[w * n_labels + l];
            *z = count[w] ? *z / (double)count[w] : VW_SPAN_UNCOVERED_LOGIT;
        }
done:
    free(count);
    return st;
}
