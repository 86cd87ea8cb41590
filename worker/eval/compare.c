/* compare.c — two answers to one question, two records of one request, and
 * the bounded list of the records that changed most. Owns the agreement and
 * |Δ| rules of docs/eval.md "A/B"; never reads a file or writes output. */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same_selection(const json_t *a, const json_t *b) {
    const json_t *sa = json_object_get(a, "selected"), *sb = json_object_get(b, "selected");
    size_t i, j;
    json_t *x, *y;
    /* selected lists each label once (option order), so equal sizes and
     * a ⊆ b make the sets equal. */
    if (json_array_size(sa) != json_array_size(sb))
        return false;
    json_array_foreach(sa, i, x) {
        bool found = false;
        json_array_foreach(sb, j, y) {
            found = found || json_equal(x, y);
        }
        if (!found)
            return false;
    }
    return true;
}

static bool same_span(const json_t *x, const json_t *y) {
    return json_integer_value(json_object_get(x, "start")) ==
               json_integer_value(json_object_get(y, "start")) &&
           json_integer_value(json_object_get(x, "end")) ==
               json_integer_value(json_object_get(y, "end")) &&
           json_equal(json_object_get(x, "label"), json_object_get(y, "label"));
}

/* Every span of a has its (start, end, label) in b. */
static bool spans_within(const json_t *a, const json_t *b) {
    size_t i, j;
    json_t *x, *y;
    json_array_foreach(a, i, x) {
        bool found = false;
        json_array_foreach(b, j, y) {
            found = found || same_span(x, y);
        }
        if (!found)
            return false;
    }
    return true;
}

void vw_eval_compare_answers(vw_qtype t, const json_t *a, const json_t *b, bool *agree,
                             double *delta) {
    *delta = NAN;
    *agree = false;
    switch (t) {
    case VW_QT_CHOICE: {
        const char *pick = json_string_value(json_object_get(a, "choice"));
        const json_t *pb = json_object_get(json_object_get(b, "probabilities"), pick);
        *agree = !strcmp(pick, json_string_value(json_object_get(b, "choice")));
        /* An option B does not have is a probability of 0 there. */
        *delta =
            fabs(json_number_value(json_object_get(json_object_get(a, "probabilities"), pick)) -
                 (pb ? json_number_value(pb) : 0.0));
        break;
    }
    case VW_QT_NOUL: {
        double pa = json_number_value(json_object_get(a, "noul"));
        double pb = json_number_value(json_object_get(b, "noul"));
        *agree = (pa >= 0.5) == (pb >= 0.5);
        *delta = fabs(pa - pb);
        break;
    }
    case VW_QT_SCORE: {
        double sa = json_number_value(json_object_get(a, "score"));
        double sb = json_number_value(json_object_get(b, "score"));
        *agree = round(sa) == round(sb); /* halves away from zero */
        *delta = fabs(sa - sb);
        break;
    }
    case VW_QT_SET:
        *agree = same_selection(a, b);
        break;
    case VW_QT_SPAN:
        *agree = spans_within(a, b) && spans_within(b, a);
        break;
    case VW_QT_UNKNOWN:
        break;
    }
}

/* ---- the top list ---------------------------------------------------------------- */

/* > 0 when x changed more than y. */
static int rank(const vw_eval_change *x, const vw_eval_change *y) {
    if (x->status_changed != y->status_changed)
        return x->status_changed ? 1 : -1;
    if (x->disagreements != y->disagreements)
        return x->disagreements > y->disagreements ? 1 : -1;
    double dx = isnan(x->max_delta) ? -1.0 : x->max_delta;
    double dy = isnan(y->max_delta) ? -1.0 : y->max_delta;
    if (dx != dy)
        return dx > dy ? 1 : -1;
    return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

static void swap(vw_eval_change *a, vw_eval_change *b) {
    vw_eval_change t = *a;
    *a = *b;
    *b = t;
}

static void sift_down(vw_eval_top *top, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < top->n && rank(&top->v[l], &top->v[m]) < 0)
            m = l;
        if (r < top->n && rank(&top->v[r], &top->v[m]) < 0)
            m = r;
        if (m == i)
            return;
        swap(&top->v[i], &top->v[m]);
        i = m;
    }
}

/* Keeps c when the list has room or c outranks its least-changed record. */
static vw_status offer(vw_eval_top *top, const vw_eval_change *c, vw_err *err) {
    if (!top->cap || (top->n == top->cap && rank(c, &top->v[0]) <= 0))
        return VW_OK;
    char *id = strdup(c->id);
    if (!id)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: top list");
    if (!top->v && !(top->v = calloc(top->cap, sizeof *top->v))) {
        free(id);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: top list of %zu", top->cap);
    }
    vw_eval_change kept = *c;
    kept.id = id;
    if (top->n == top->cap) {
        free(top->v[0].id);
        top->v[0] = kept;
        sift_down(top, 0);
        return VW_OK;
    }
    size_t i = top->n++;
    top->v[i] = kept;
    while (i && rank(&top->v[i], &top->v[(i - 1) / 2]) < 0) {
        swap(&top->v[i], &top->v[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return VW_OK;
}

static int by_rank_desc(const void *a, const void *b) {
    return rank(b, a);
}

void vw_eval_top_sort(vw_eval_top *top) {
    if (top->n)
        qsort(top->v, top->n, sizeof *top->v, by_rank_desc);
}

void vw_eval_top_free(vw_eval_top *top) {
    if (!top)
        return;
    for (size_t i = 0; i < top->n; i++)
        free(top->v[i].id);
    free(top->v);
    top->v = NULL;
    top->n = 0;
}

/* ---- records ------------------------------------------------------------------------ */

static void note_disagreement(vw_eval_change *c, const char *qid) {
    size_t used = strlen(c->changed), n = strlen(qid);
    c->disagreements++;
    if (used + n + 2 > 150) {
        if (used && c->changed[used - 1] != '.' && used + 4 < sizeof c->changed)
            memcpy(c->changed + used, ",...", 5);
        return;
    }
    if (used)
        c->changed[used++] = ',';
    memcpy(c->changed + used, qid, n + 1);
}

/* The probability change of a choice (its pick in A) or a Noul, A − B;
 * NaN for the other types. */
static double prob_change(vw_qtype t, const json_t *a, const json_t *b) {
    if (t == VW_QT_NOUL)
        return json_number_value(json_object_get(a, "noul")) -
               json_number_value(json_object_get(b, "noul"));
    if (t != VW_QT_CHOICE)
        return NAN;
    const char *pick = json_string_value(json_object_get(a, "choice"));
    const json_t *pb = json_object_get(json_object_get(b, "probabilities"), pick);
    return json_number_value(json_object_get(json_object_get(a, "probabilities"), pick)) -
           (pb ? json_number_value(pb) : 0.0);
}

/* An answer's decision in words, for the flip list. */
static void decision(vw_qtype t, const json_t *v, char *buf, size_t cap) {
    switch (t) {
    case VW_QT_CHOICE:
        snprintf(buf, cap, "%s", json_string_value(json_object_get(v, "choice")));
        return;
    case VW_QT_NOUL: {
        double p = json_number_value(json_object_get(v, "noul"));
        snprintf(buf, cap, "%s %.2f", p >= 0.5 ? "yes" : "no", p);
        return;
    }
    case VW_QT_SCORE:
        snprintf(buf, cap, "%.2f", json_number_value(json_object_get(v, "score")));
        return;
    case VW_QT_SET: {
        size_t i, n = 0;
        json_t *x;
        buf[n++] = '{';
        json_array_foreach(json_object_get(v, "selected"), i, x) {
            int w = snprintf(buf + n, cap - n, "%s%s", i ? "," : "", json_string_value(x));
            n = w < 0 || (size_t)w >= cap - n ? cap - 2 : n + (size_t)w;
        }
        snprintf(buf + n, cap - n, "}");
        return;
    }
    case VW_QT_SPAN: {
        size_t k = json_array_size(v); /* a span answer is its list */
        snprintf(buf, cap, "%zu span%s", k, k == 1 ? "" : "s");
        return;
    }
    case VW_QT_UNKNOWN:
        break;
    }
    snprintf(buf, cap, "?");
}

static void note_flip(vw_eval_flips *f, const char *id, const vw_eval_q *q, const json_t *a,
                      const json_t *b) {
    f->total++;
    if (f->n == VW_EVAL_KEEP_FLIPS)
        return;
    vw_eval_flip *x = &f->v[f->n++];
    snprintf(x->id, sizeof x->id, "%s", id);
    snprintf(x->qid, sizeof x->qid, "%s", q->qid);
    decision(q->type, b, x->from, sizeof x->from);
    decision(q->type, a, x->to, sizeof x->to);
}

vw_status vw_eval_compare_records(vw_eval_qtable *t, const vw_eval_rec *a, const vw_eval_rec *b,
                                  uint64_t seq, vw_eval_top *top, vw_eval_flips *flips,
                                  bool *status_changed, vw_err *err) {
    vw_eval_change c = {.id = (char *)a->id, .max_delta = NAN, .seq = seq};
    vw_eval_rec_status_key(a, c.status_a, sizeof c.status_a);
    vw_eval_rec_status_key(b, c.status_b, sizeof c.status_b);
    c.status_changed = *status_changed = strcmp(c.status_a, c.status_b) != 0;
    for (size_t i = 0; i < a->n_ans; i++) {
        const vw_eval_answer *x = &a->ans[i], *y = vw_eval_rec_find(b, x->qid);
        vw_eval_q *q = vw_eval_qtable_find(t, x->qid);
        if (!q || !y || x->error || y->error || x->type != q->type || y->type != q->type)
            continue;
        bool agree;
        double delta;
        vw_eval_compare_answers(q->type, x->v, y->v, &agree, &delta);
        vw_eval_q_compared(q, agree, delta, prob_change(q->type, x->v, y->v));
        if (!isnan(delta) && (isnan(c.max_delta) || delta > c.max_delta))
            c.max_delta = delta;
        if (!agree) {
            note_disagreement(&c, x->qid);
            if (flips)
                note_flip(flips, a->id, q, x->v, y->v);
        }
    }
    if (!top || (!c.status_changed && !c.disagreements && !(c.max_delta > 0.0)))
        return VW_OK;
    return offer(top, &c, err);
}
