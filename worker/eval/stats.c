/* stats.c — reliability bins, ROC AUC and F1 arithmetic. Owns no file or
 * format; every formula is the one docs/eval.md writes out (the goldens'
 * recipe, tools/make_eval_goldens.py, computes the same). */
#include "stats.h"
#include "util/reserve.h"

#include <math.h>
#include <stdlib.h>

void vw_eval_ece_add(vw_eval_ece *e, double c, bool correct) {
    if (!(c >= 0.0)) /* NaN too */
        c = 0.0;
    if (c > 1.0)
        c = 1.0;
    int b = (int)(c * VW_EVAL_BINS);
    if (b > VW_EVAL_BINS - 1)
        b = VW_EVAL_BINS - 1;
    e->n[b]++;
    e->conf[b] += c;
    e->correct[b] += correct;
}

double vw_eval_ece_value(const vw_eval_ece *e) {
    uint64_t total = 0;
    for (int b = 0; b < VW_EVAL_BINS; b++)
        total += e->n[b];
    if (!total)
        return NAN;
    double ece = 0.0;
    for (int b = 0; b < VW_EVAL_BINS; b++) {
        if (!e->n[b])
            continue;
        double n = (double)e->n[b];
        ece += n / (double)total * fabs((double)e->correct[b] / n - e->conf[b] / n);
    }
    return ece;
}

vw_status vw_eval_pairs_add(vw_eval_pairs *ps, double p, bool y, vw_err *err) {
    if (vw_reserve((void **)&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: %zu AUROC pairs", ps->n + 1);
    ps->v[ps->n++] = (vw_eval_pair){p, y};
    return VW_OK;
}

void vw_eval_pairs_free(vw_eval_pairs *ps) {
    if (!ps)
        return;
    free(ps->v);
    ps->v = NULL;
    ps->n = ps->cap = 0;
}

static int by_score(const void *a, const void *b) {
    double x = ((const vw_eval_pair *)a)->p, y = ((const vw_eval_pair *)b)->p;
    return (x > y) - (x < y);
}

double vw_eval_auroc(vw_eval_pairs *ps) {
    uint64_t pos = 0;
    for (size_t i = 0; i < ps->n; i++)
        pos += ps->v[i].y;
    uint64_t neg = ps->n - pos;
    if (!pos || !neg)
        return NAN;
    qsort(ps->v, ps->n, sizeof *ps->v, by_score);
    /* Sum of the positives' ranks (1-based), a tied group sharing the mean
     * rank of its positions. Ranks and their sums are integers or halves,
     * exact in a double up to 2^52. */
    double rank_sum = 0.0;
    for (size_t i = 0; i < ps->n;) {
        size_t j = i;
        uint64_t pos_in = 0;
        while (j < ps->n && ps->v[j].p == ps->v[i].p)
            pos_in += ps->v[j++].y;
        double mean_rank = ((double)(i + 1) + (double)j) / 2.0;
        rank_sum += mean_rank * (double)pos_in;
        i = j;
    }
    double u = rank_sum - (double)pos * ((double)pos + 1.0) / 2.0;
    return u / ((double)pos * (double)neg);
}

double vw_eval_precision(vw_eval_prf c) {
    return vw_eval_ratio((double)c.tp, (double)(c.tp + c.fp));
}

double vw_eval_recall(vw_eval_prf c) {
    return vw_eval_ratio((double)c.tp, (double)(c.tp + c.fn));
}

double vw_eval_f1(vw_eval_prf c) {
    return vw_eval_ratio(2.0 * (double)c.tp, (double)(2 * c.tp + c.fp + c.fn));
}

double vw_eval_ratio(double a, double b) {
    return b == 0.0 ? NAN : a / b;
}

static size_t clamp_bin(double x, size_t n) {
    return x < 0 ? 0 : x >= (double)(n - 1) ? n - 1 : (size_t)x;
}

void vw_eval_score_bins_add(vw_eval_score_bins *s, double pred, double label) {
    size_t b = clamp_bin(floor(pred / VW_EVAL_SCORE_STEP), VW_EVAL_SCORE_BINS);
    s->n[b]++;
    s->pred[b] += pred;
    s->label[b] += label;
    double r = pred - label;
    s->res[clamp_bin(floor(r / VW_EVAL_SCORE_STEP) + VW_EVAL_RES_BINS / 2, VW_EVAL_RES_BINS)]++;
    s->res_sum += r;
    if (pred > s->top)
        s->top = pred;
    if (label > s->top)
        s->top = label;
}

size_t vw_eval_delta_bin(double delta) {
    return clamp_bin(floor((delta + 1.0) / 2.0 * VW_EVAL_DELTA_BINS), VW_EVAL_DELTA_BINS);
}
