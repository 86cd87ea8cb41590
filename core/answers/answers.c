/* answers.c — head logits to per-question answer values (see answers.h;
 * docs/spec/answers.md §4, §6.6, §8.2). Never formats JSON. */
#include "answers.h"
#include "util/f64.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vw_answer_free(vw_answer *a) {
    if (!a)
        return;
    free(a->probabilities);
    free(a->selected);
    vw_span_list_free(&a->spans);
    memset(a, 0, sizeof *a);
}

static void start(vw_answer *out, vw_answer_kind kind) {
    memset(out, 0, sizeof *out);
    out->kind = kind;
}

/* A per-question failure: the answer carries the error, the call succeeds. */
__attribute__((format(printf, 2, 3))) static vw_status invalid(vw_answer *out, const char *fmt,
                                                               ...) {
    free(out->probabilities);
    free(out->selected);
    vw_span_list_free(&out->spans);
    out->probabilities = NULL;
    out->selected = NULL;
    out->n = 0;
    out->error = VW_ANSWER_INVALID_MODEL_OUTPUT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->detail, sizeof out->detail, fmt, ap);
    va_end(ap);
    return VW_OK;
}

static vw_status check_len(const char *what, size_t got, size_t want, vw_err *err) {
    if (got != want)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "%s: %zu logits given but the question has %zu", what, got, want);
    return VW_OK;
}

/* Copies the logits; false (and the index) when one is not finite. */
static bool copy_finite(const double *src, size_t n, double *z, size_t *bad) {
    for (size_t i = 0; i < n; i++) {
        z[i] = src[i];
        if (!isfinite(z[i])) {
            *bad = i;
            return false;
        }
    }
    return true;
}

static vw_status alloc_probs(vw_answer *out, size_t n, vw_err *err) {
    out->probabilities = calloc(n ? n : 1, sizeof *out->probabilities);
    if (!out->probabilities)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%zu probabilities", n);
    out->n = n;
    return VW_OK;
}

vw_status vw_answer_choice(const vw_cal *cal, const double *logits, size_t n_logits,
                           size_t n_options, bool abstain, vw_answer *out, vw_err *err) {
    start(out, VW_ANS_CHOICE);
    vw_status st = check_len("choice", n_logits, n_options + (abstain ? 1 : 0), err);
    if (st != VW_OK)
        return st;
    if (n_options == 0)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch", "choice: 0 options");
    double *z = malloc(n_logits * sizeof *z);
    if (!z)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "choice logits");
    size_t bad;
    if (!copy_finite(logits, n_logits, z, &bad)) {
        free(z);
        return invalid(out, "choice logit %zu is not finite", bad);
    }
    /* probabilities doubles as the n + 1 scratch of the abstain softmax. */
    if ((st = alloc_probs(out, n_options + 1, err)) != VW_OK) {
        free(z);
        return st;
    }
    out->n = n_options;
    vw_choice_stats cs;
    vw_cal_choice(cal, z, n_options, abstain, out->probabilities, &cs);
    out->pick = cs.pick;
    out->confidence = cs.confidence;
    out->has_abstain = abstain;
    out->abstain = cs.abstain;
    free(z);
    return VW_OK;
}

vw_status vw_answer_noul(const vw_cal *cal, const double *logits, size_t n_logits, bool abstain,
                         bool calibrate, vw_answer *out, vw_err *err) {
    start(out, VW_ANS_NOUL);
    vw_status st = check_len("noul", n_logits, abstain ? 3 : 2, err);
    if (st != VW_OK)
        return st;
    double z[3];
    size_t bad;
    if (!copy_finite(logits, n_logits, z, &bad))
        return invalid(out, "noul logit %zu is not finite", bad);
    out->noul = vw_cal_noul(cal, vw_cal_noul_yes(cal, z[0], z[1]), calibrate);
    return VW_OK;
}

vw_status vw_answer_score(const vw_cal *cal, const double *logits, size_t n_logits, size_t n_levels,
                          vw_answer *out, vw_err *err) {
    start(out, VW_ANS_SCORE);
    vw_status st = check_len("score", n_logits, n_levels, err);
    if (st != VW_OK)
        return st;
    if (n_levels < 2) /* the confidence divides by (n^2 - 1) / 12 */
        return VW_FAIL(err, VW_EINVAL, "length_mismatch", "score: %zu levels, at least 2 needed",
                       n_levels);
    if ((st = alloc_probs(out, n_levels, err)) != VW_OK)
        return st;
    size_t bad;
    if (!copy_finite(logits, n_levels, out->probabilities, &bad))
        return invalid(out, "score logit %zu is not finite", bad);
    vw_cal_score(cal, out->probabilities, n_levels, out->probabilities, &out->score,
                 &out->confidence);
    return VW_OK;
}

vw_status vw_answer_set(const vw_cal *cal, const double *logits, size_t n_logits, size_t n_labels,
                        const char *key, const double *given, vw_answer *out, vw_err *err) {
    start(out, VW_ANS_SET);
    vw_status st = check_len("set", n_logits, n_labels, err);
    if (st != VW_OK)
        return st;
    if ((st = alloc_probs(out, n_labels, err)) != VW_OK)
        return st;
    out->selected = calloc(n_labels ? n_labels : 1, sizeof *out->selected);
    if (!out->selected)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "set of %zu labels", n_labels);
    size_t bad;
    if (!copy_finite(logits, n_labels, out->probabilities, &bad))
        return invalid(out, "set logit %zu is not finite", bad);
    vw_err ce = {0};
    if (vw_cal_set_threshold(cal, key, given, &out->threshold, &ce) != VW_OK)
        return invalid(out, "%s", ce.msg);
    vw_cal_set_probs(cal, out->probabilities, n_labels, out->probabilities);
    for (size_t j = 0; j < n_labels; j++)
        out->selected[j] = out->probabilities[j] > out->threshold;
    return VW_OK;
}

/* Shape checks of a span question; VW_OK or a call failure. */
static vw_status span_check(const vw_span_answer_in *in, vw_err *err) {
    if (in->n_labels == 0)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch", "span: 0 labels");
    if (in->n_logits != in->n_words * in->n_labels)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span: %zu logits given for %zu words x %zu labels = %zu", in->n_logits,
                       in->n_words, in->n_labels, in->n_words * in->n_labels);
    if (in->has_range && (in->lo < 0 || in->hi < in->lo || in->hi > (int64_t)in->text->n))
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span: range [%lld, %lld) outside the part's %zu code points",
                       (long long)in->lo, (long long)in->hi, in->text->n);
    return vw_text_check_words(in->text, in->words, in->n_words, err);
}

/* The Noul view: max over (in-range) words of max over labels of P (float64). */
static double span_noul(const vw_span_answer_in *in, const double *p) {
    double best = 0.0;
    bool any = false;
    for (size_t w = 0; w < in->n_words; w++) {
        if (in->has_range && (in->words[2 * w] < in->lo || in->words[2 * w + 1] > in->hi))
            continue;
        for (size_t l = 0; l < in->n_labels; l++) {
            double v = p[w * in->n_labels + l];
            if (!any || v > best)
                best = v;
            any = true;
        }
    }
    return any ? best : 0.0;
}

vw_status vw_answer_span(const vw_cal *cal, const vw_span_answer_in *in, vw_answer *out,
                         vw_err *err) {
    start(out, VW_ANS_SPAN);
    out->head = in->head;
    vw_status st = span_check(in, err);
    if (st != VW_OK)
        return st;
    size_t n = in->n_logits;
    double *p = malloc((n ? n : 1) * sizeof *p);
    if (!p)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span of %zu logits", n);
    vw_span_query q = {in->key, in->labels, in->n_labels, in->part_tokens, in->head, in->given};
    vw_err ce = {0};
    double t = 1.0;
    for (size_t i = 0; i < n; i++) {
        p[i] = in->logits[i];
        if (!isfinite(p[i])) {
            invalid(out, "span logit [%zu][%zu] is not finite", i / in->n_labels, i % in->n_labels);
            goto done;
        }
    }
    if (vw_cal_span_threshold(cal, &q, &out->span_threshold, &ce) != VW_OK ||
        vw_cal_span_temperature(cal, in->head, &t, &ce) != VW_OK) {
        invalid(out, "%s", ce.msg);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = vw_f64_sigmoid(p[i] / t);
    if ((st = vw_span_sparse_gate(cal, in->text, in->words, in->n_words, p, in->n_labels,
                                  &out->span_threshold, err)) != VW_OK ||
        (st = vw_span_decode(in->text, in->words, in->n_words, p, in->n_labels,
                             out->span_threshold.value, &out->spans, err)) != VW_OK)
        goto done;
    if (in->has_range && (st = vw_span_clip(in->text, &out->spans, in->lo, in->hi, err)) != VW_OK)
        goto done;
    out->threshold = out->span_threshold.value;
    out->noul = span_noul(in, p);
done:
    free(p);
    if (st != VW_OK)
        vw_span_list_free(&out->spans);
    return st;
}
