/* qmetrics.c — labelled answers into per-question counts, counts into
 * metrics. Owns the label checks (a label that does not fit its question is
 * refused here, with the reason) and the per-type arithmetic of docs/eval.md;
 * never reads a file and never writes output. */
#include "qmetrics.h"
#include "util/reserve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One span as the exact metric and the overlap see it. */
typedef struct vw_eval_triple {
    uint32_t label; /* index in span.per.names */
    bool gold;
    int64_t start, end;
} vw_eval_triple;

vw_status vw_eval_q_new(const char *qid, vw_qtype type, vw_eval_q **out, vw_err *err) {
    *out = calloc(1, sizeof **out);
    if (!*out)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: question %s", qid);
    (*out)->qid = qid;
    (*out)->type = type;
    return VW_OK;
}

static void labelled_free(vw_eval_labelled *l) {
    vw_strmap_free(&l->names);
    free(l->c);
}

void vw_eval_q_set_qid(vw_eval_q *q, const char *qid) {
    q->qid = qid;
}

void vw_eval_q_count(vw_eval_q *q, bool error, vw_qtype type) {
    if (error)
        q->errors++;
    else if (type != q->type)
        q->type_conflicts++;
    else
        q->answered++;
}

void vw_eval_q_compared(vw_eval_q *q, bool agree, double delta, double change) {
    q->cmp_n++;
    q->cmp_agree += agree;
    if (!isnan(delta)) {
        q->cmp_n_delta++;
        q->cmp_delta_sum += delta;
    }
    if (!isnan(change)) {
        q->cmp_hist[vw_eval_delta_bin(change)]++;
        q->cmp_change_sum += change;
    }
}

void vw_eval_q_free(vw_eval_q *q) {
    if (!q)
        return;
    vw_strmap_free(&q->choice.labels);
    free(q->choice.confusion);
    vw_eval_pairs_free(&q->noul.pairs);
    labelled_free(&q->set);
    labelled_free(&q->span.per);
    free(q->span.scratch);
    free(q);
}

vw_eval_prf *vw_eval_labelled_at(vw_eval_labelled *l, const char *name, size_t len) {
    size_t i;
    bool added;
    if (vw_strmap_put(&l->names, name, len, &i, &added, NULL))
        return NULL;
    size_t had = l->cap;
    if (vw_reserve((void **)&l->c, &l->cap, i + 1, sizeof *l->c))
        return NULL; /* the name stays, with no counts: the caller fails */
    memset(l->c + had, 0, (l->cap - had) * sizeof *l->c);
    return &l->c[i];
}

/* ---- choice --------------------------------------------------------------- */

/* The label's index, the confusion matrix grown to hold it. */
static vw_status choice_label(vw_eval_choice_acc *c, const char *s, size_t *i, vw_err *err) {
    vw_status st = vw_strmap_put(&c->labels, s, strlen(s), i, NULL, err);
    if (st || *i < c->k_cap)
        return st;
    size_t k = c->k_cap ? c->k_cap * 2 : 4;
    uint64_t *m = calloc(k * k, sizeof *m);
    if (!m)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: confusion of %zu labels", k);
    for (size_t r = 0; r < c->k_cap; r++)
        memcpy(m + r * k, c->confusion + r * c->k_cap, c->k_cap * sizeof *m);
    free(c->confusion);
    c->confusion = m;
    c->k_cap = k;
    return VW_OK;
}

static vw_status observe_choice(vw_eval_q *q, const json_t *ans, const json_t *label, vw_err *err) {
    const json_t *probs = json_object_get(ans, "probabilities");
    const char *pick = json_string_value(json_object_get(ans, "choice"));
    if (!json_is_string(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "choice question %s: the label must be an option label (a string)", q->qid);
    const char *want = json_string_value(label);
    if (!json_object_get(probs, want))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "choice question %s: \"%.80s\" is not one of its options", q->qid, want);
    double conf = 0.0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)probs, k, v) {
        if (json_number_value(v) > conf)
            conf = json_number_value(v);
    }
    size_t i, j;
    vw_status st;
    /* Both labels interned before either is counted: the matrix may grow. */
    if ((st = choice_label(&q->choice, want, &i, err)) ||
        (st = choice_label(&q->choice, pick, &j, err)))
        return st;
    bool ok = !strcmp(want, pick);
    q->choice.confusion[i * q->choice.k_cap + j]++;
    q->choice.correct += ok;
    vw_eval_ece_add(&q->choice.ece, conf, ok);
    return VW_OK;
}

/* ---- noul, score ---------------------------------------------------------------- */

static vw_status observe_noul(vw_eval_q *q, const json_t *ans, const json_t *label, vw_err *err) {
    if (!json_is_boolean(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "noul question %s: the label must be true or false", q->qid);
    double p = json_number_value(json_object_get(ans, "noul"));
    bool y = json_is_true(label), yes = p >= 0.5;
    vw_status st = vw_eval_pairs_add(&q->noul.pairs, p, y, err);
    if (st)
        return st;
    q->noul.correct += yes == y;
    q->noul.brier_sum += (p - (double)y) * (p - (double)y);
    vw_eval_ece_add(&q->noul.ece, p >= 0.5 ? p : 1.0 - p, yes == y);
    return VW_OK;
}

static vw_status observe_score(vw_eval_q *q, const json_t *ans, const json_t *label, vw_err *err) {
    if (!vw_eval_is_number(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label", "score question %s: the label must be a number",
                       q->qid);
    double pred = json_number_value(json_object_get(ans, "score")), want = json_number_value(label);
    double d = pred - want;
    q->score_abs += fabs(d);
    q->score_sq += d * d;
    vw_eval_score_bins_add(&q->score, pred, want);
    return VW_OK;
}

/* ---- set ---------------------------------------------------------------------- */

static bool in_strings(const json_t *a, const char *s) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!strcmp(json_string_value(v), s))
            return true;
    }
    return false;
}

/* True when a lists a value twice. */
static bool has_duplicate(const json_t *a) {
    for (size_t i = 1; i < json_array_size(a); i++)
        for (size_t j = 0; j < i; j++)
            if (json_equal(json_array_get(a, i), json_array_get(a, j)))
                return true;
    return false;
}

/* The first string of a that probs does not have, or NULL. */
static const char *not_an_option(const json_t *a, const json_t *probs) {
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (!json_object_get(probs, s))
            return s;
    }
    return NULL;
}

static bool all_strings(const json_t *a) {
    for (size_t i = 0; i < json_array_size(a); i++)
        if (!json_is_string(json_array_get(a, i)))
            return false;
    return json_is_array(a);
}

static vw_status observe_set(vw_eval_q *q, const json_t *ans, const json_t *label, vw_err *err) {
    const json_t *sel = json_object_get(ans, "selected");
    const char *bad;
    if (!all_strings(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "set question %s: the label must be a list of label strings", q->qid);
    if ((bad = not_an_option(label, json_object_get(ans, "probabilities"))))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "set question %s: \"%.80s\" is not one of its labels", q->qid, bad);
    if (has_duplicate(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label", "set question %s: a label is listed twice",
                       q->qid);
    /* Every name gets its counts slot first (that may fail), then the counts. */
    const json_t *lists[2] = {label, sel};
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < json_array_size(lists[l]); i++) {
            const json_t *v = json_array_get(lists[l], i);
            if (!vw_eval_labelled_at(&q->set, json_string_value(v), json_string_length(v)))
                return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: set labels");
        }
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < json_array_size(lists[l]); i++) {
            const json_t *v = json_array_get(lists[l], i);
            vw_eval_prf *c =
                vw_eval_labelled_at(&q->set, json_string_value(v), json_string_length(v));
            bool other = in_strings(lists[1 - l], json_string_value(v));
            if (l == 0) /* expected: found (tp) or missed (fn) */
                other ? c->tp++ : c->fn++;
            else if (!other) /* selected, not expected; selected lists a label once */
                c->fp++;
        }
    return VW_OK;
}

/* ---- span ----------------------------------------------------------------------- */

static int by_triple(const void *a, const void *b) {
    const vw_eval_triple *x = a, *y = b;
    if (x->label != y->label)
        return x->label < y->label ? -1 : 1;
    if (x->gold != y->gold)
        return x->gold ? 1 : -1; /* predicted first, then expected */
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Appends the spans of list a to the scratch triples. */
static vw_status add_triples(vw_eval_span_acc *s, const json_t *a, bool gold, size_t *n,
                             vw_err *err) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (vw_reserve((void **)&s->scratch, &s->scratch_cap, *n + 1, sizeof *s->scratch))
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: %zu spans", *n + 1);
        const json_t *lab = json_object_get(v, "label");
        size_t idx;
        vw_status st = vw_strmap_put(&s->per.names, json_string_value(lab), json_string_length(lab),
                                     &idx, NULL, err);
        if (st)
            return st;
        s->scratch[(*n)++] =
            (vw_eval_triple){(uint32_t)idx, gold, json_integer_value(json_object_get(v, "start")),
                             json_integer_value(json_object_get(v, "end"))};
    }
    return VW_OK;
}

/* Removes repeated spans from t[0..n) (sorted); returns the new count. */
static size_t unique(vw_eval_triple *t, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!k || by_triple(&t[k - 1], &t[i]))
            t[k++] = t[i];
    return k;
}

/* Spans present in both sorted, unique lists. */
static uint64_t matches(const vw_eval_triple *p, size_t np, const vw_eval_triple *g, size_t ng) {
    uint64_t tp = 0;
    for (size_t i = 0, j = 0; i < np && j < ng;) {
        int64_t d = p[i].start != g[j].start ? p[i].start - g[j].start : p[i].end - g[j].end;
        if (!d)
            tp++;
        i += d <= 0;
        j += d >= 0;
    }
    return tp;
}

/* Merges sorted intervals into disjoint ones in place (empty ones dropped);
 * returns their count. */
static size_t merge(vw_eval_triple *t, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].end <= t[i].start)
            continue;
        if (k && t[i].start <= t[k - 1].end) {
            if (t[i].end > t[k - 1].end)
                t[k - 1].end = t[i].end;
        } else
            t[k++] = t[i];
    }
    return k;
}

static uint64_t length(const vw_eval_triple *t, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (uint64_t)(t[i].end - t[i].start);
    return total;
}

/* Characters in both sets of disjoint sorted intervals. */
static uint64_t intersection(const vw_eval_triple *p, size_t np, const vw_eval_triple *g,
                             size_t ng) {
    uint64_t total = 0;
    for (size_t i = 0, j = 0; i < np && j < ng;) {
        int64_t lo = p[i].start > g[j].start ? p[i].start : g[j].start;
        int64_t hi = p[i].end < g[j].end ? p[i].end : g[j].end;
        if (hi > lo)
            total += (uint64_t)(hi - lo);
        if (p[i].end < g[j].end)
            i++;
        else
            j++;
    }
    return total;
}

/* One label's spans of one record: predicted p[0..np), expected g[0..ng),
 * each sorted. Exact counts first (they need the lists as given), overlap
 * after (it merges the lists in place). */
static void count_label(vw_eval_span_acc *s, vw_eval_triple *p, size_t np, vw_eval_triple *g,
                        size_t ng) {
    np = unique(p, np);
    ng = unique(g, ng);
    uint64_t tp = matches(p, np, g, ng);
    vw_eval_prf *c = &s->per.c[p ? p[0].label : g[0].label];
    vw_eval_prf d = {tp, np - tp, ng - tp};
    c->tp += d.tp, c->fp += d.fp, c->fn += d.fn;
    s->exact.tp += d.tp, s->exact.fp += d.fp, s->exact.fn += d.fn;
    np = merge(p, np);
    ng = merge(g, ng);
    s->pred_chars += length(p, np);
    s->gold_chars += length(g, ng);
    s->inter += intersection(p, np, g, ng);
}

static vw_status observe_span(vw_eval_q *q, const json_t *ans, const json_t *label, vw_err *err) {
    vw_eval_span_acc *s = &q->span;
    size_t n = 0;
    vw_status st;
    if (!vw_eval_spans_ok(label))
        return VW_FAIL(err, VW_EINVAL, "bad_label",
                       "span question %s: the label must be a list of {\"start\", \"end\", "
                       "\"label\"} with 0 <= start <= end (integers)",
                       q->qid);
    if ((st = add_triples(s, ans, false, &n, err)) || (st = add_triples(s, label, true, &n, err)))
        return st;
    /* Every label seen gets its counts slot before any is counted. */
    for (size_t i = 0; i < n; i++)
        if (!vw_eval_labelled_at(&s->per, vw_strmap_key(&s->per.names, s->scratch[i].label),
                                 s->per.names.lens[s->scratch[i].label]))
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: span labels");
    qsort(s->scratch, n, sizeof *s->scratch, by_triple);
    for (size_t i = 0; i < n;) {
        size_t j = i, k;
        while (j < n && s->scratch[j].label == s->scratch[i].label && !s->scratch[j].gold)
            j++;
        for (k = j; k < n && s->scratch[k].label == s->scratch[i].label; k++)
            ;
        count_label(s, j > i ? s->scratch + i : NULL, j - i, k > j ? s->scratch + j : NULL, k - j);
        i = k;
    }
    return VW_OK;
}

/* ---- dispatch, finish ------------------------------------------------------------- */

vw_status vw_eval_q_observe(vw_eval_q *q, const vw_eval_answer *a, const json_t *label,
                            vw_err *err) {
    vw_status st = VW_EINVAL;
    switch (q->type) {
    case VW_QT_CHOICE:
        st = observe_choice(q, a->v, label, err);
        break;
    case VW_QT_NOUL:
        st = observe_noul(q, a->v, label, err);
        break;
    case VW_QT_SCORE:
        st = observe_score(q, a->v, label, err);
        break;
    case VW_QT_SET:
        st = observe_set(q, a->v, label, err);
        break;
    case VW_QT_SPAN:
        st = observe_span(q, a->v, label, err);
        break;
    case VW_QT_UNKNOWN:
        return VW_FAIL(err, VW_EINVAL, "bad_label", "question %s has no known type", q->qid);
    }
    if (!st)
        q->n++;
    return st;
}

/* Mean F1 over the names seen (each has tp + fp + fn > 0, so each F1 is defined). */
static double macro_f1(const vw_eval_prf *c, size_t n) {
    double sum = 0.0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double f = vw_eval_f1(c[i]);
        if (!isnan(f))
            sum += f, k++;
    }
    return k ? sum / (double)k : NAN;
}

static void finish_choice(vw_eval_q *q, vw_eval_metrics *m) {
    const vw_eval_choice_acc *c = &q->choice;
    size_t k = c->labels.n;
    double sum = 0.0;
    for (size_t l = 0; l < k; l++) {
        vw_eval_prf x = {vw_eval_confusion(q, l, l), 0, 0};
        for (size_t o = 0; o < k; o++) {
            x.fp += o != l ? vw_eval_confusion(q, o, l) : 0;
            x.fn += o != l ? vw_eval_confusion(q, l, o) : 0;
        }
        sum += vw_eval_f1(x); /* defined: label l was expected or picked */
    }
    m->accuracy = vw_eval_ratio((double)c->correct, (double)q->n);
    m->macro_f1 = k ? sum / (double)k : NAN;
    m->ece = vw_eval_ece_value(&c->ece);
}

void vw_eval_q_finish(vw_eval_q *q) {
    vw_eval_metrics *m = &q->m;
    double n = (double)q->n;
    *m = (vw_eval_metrics){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    switch (q->type) {
    case VW_QT_CHOICE:
        finish_choice(q, m);
        break;
    case VW_QT_NOUL:
        m->auroc = vw_eval_auroc(&q->noul.pairs);
        m->accuracy = vw_eval_ratio((double)q->noul.correct, n);
        m->brier = vw_eval_ratio(q->noul.brier_sum, n);
        m->ece = vw_eval_ece_value(&q->noul.ece);
        break;
    case VW_QT_SCORE:
        m->mae = vw_eval_ratio(q->score_abs, n);
        m->rmse = q->n ? sqrt(q->score_sq / n) : NAN;
        break;
    case VW_QT_SET: {
        vw_eval_prf micro = {0};
        for (size_t i = 0; i < q->set.names.n; i++)
            micro.tp += q->set.c[i].tp, micro.fp += q->set.c[i].fp, micro.fn += q->set.c[i].fn;
        m->micro_f1 = vw_eval_f1(micro);
        m->macro_f1 = macro_f1(q->set.c, q->set.names.n);
        break;
    }
    case VW_QT_SPAN: {
        const vw_eval_span_acc *s = &q->span;
        vw_eval_prf o = {s->inter, s->pred_chars - s->inter, s->gold_chars - s->inter};
        m->precision = vw_eval_precision(s->exact);
        m->recall = vw_eval_recall(s->exact);
        m->f1 = vw_eval_f1(s->exact);
        m->overlap_precision = vw_eval_precision(o);
        m->overlap_recall = vw_eval_recall(o);
        m->overlap_f1 = vw_eval_f1(o);
        break;
    }
    case VW_QT_UNKNOWN:
        break;
    }
}

#define COL(key, column, label, field)                                                             \
    { key, column, label, offsetof(vw_eval_metrics, field) }

static const vw_eval_metric_col CHOICE_COLS[] = {
    COL("accuracy", "accuracy", "accuracy", accuracy),
    COL("macro_f1", "macro_f1", "macro F1", macro_f1),
    COL("ece", "ece", "ECE", ece),
};
static const vw_eval_metric_col NOUL_COLS[] = {
    COL("auroc", "auroc", "AUROC", auroc),
    COL("accuracy", "accuracy", "accuracy", accuracy),
    COL("brier", "brier", "Brier", brier),
    COL("ece", "ece", "ECE", ece),
};
static const vw_eval_metric_col SCORE_COLS[] = {
    COL("mae", "mae", "MAE", mae),
    COL("rmse", "rmse", "RMSE", rmse),
};
static const vw_eval_metric_col SET_COLS[] = {
    COL("micro_f1", "micro_f1", "micro F1", micro_f1),
    COL("macro_f1", "macro_f1", "macro F1", macro_f1),
};
static const vw_eval_metric_col SPAN_COLS[] = {
    COL("precision", "precision", "precision", precision),
    COL("recall", "recall", "recall", recall),
    COL("f1", "f1", "F1", f1),
    COL("overlap_precision", "ovl_prec", "overlap P", overlap_precision),
    COL("overlap_recall", "ovl_rec", "overlap R", overlap_recall),
    COL("overlap_f1", "ovl_f1", "overlap F1", overlap_f1),
};

#define COLS(a)                                                                                    \
    { a, sizeof a / sizeof a[0] }

const vw_eval_metric_col *vw_eval_metric_cols(vw_qtype t, size_t *n) {
    static const struct {
        const vw_eval_metric_col *cols;
        size_t n;
    } by_type[VW_QT_COUNT] = {
        [VW_QT_CHOICE] = COLS(CHOICE_COLS), [VW_QT_NOUL] = COLS(NOUL_COLS),
        [VW_QT_SCORE] = COLS(SCORE_COLS),   [VW_QT_SET] = COLS(SET_COLS),
        [VW_QT_SPAN] = COLS(SPAN_COLS),
    };
    bool known = (int)t >= 0 && (int)t < VW_QT_COUNT;
    *n = known ? by_type[t].n : 0;
    return known ? by_type[t].cols : NULL;
}
