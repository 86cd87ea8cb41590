/* report_text.c — the report as terminal tables. Owns the column layout
 * (100 columns: a question id column of at most 20, numbers of 9); computes
 * nothing but the per-label ratios it prints. */
#include "report_text.h"

#include <math.h>
#include <string.h>

#define QID_MAX 20 /* + 2 counts + 6 metrics of 10 = 100 columns */

/* A number column: 9 wide, 4 decimals, "-" when undefined. */
static void num(vw_sbuf *sb, double v) {
    if (isnan(v))
        vw_sbuf_printf(sb, " %9s", "-");
    else
        vw_sbuf_printf(sb, " %9.4f", v);
}

static void count(vw_sbuf *sb, uint64_t v) {
    vw_sbuf_printf(sb, " %9llu", (unsigned long long)v);
}

/* A record's string (an id, a label, a status) cut to width w, "~" marking
 * a cut, and padded when pad is set. The string is escaped first
 * (vw_sbuf_put_visible: no control byte reaches the terminal), so widths
 * count the bytes shown; a cut never splits a UTF-8 sequence. */
static void cell(vw_sbuf *sb, const char *s, int w, bool pad) {
    vw_sbuf v = {0};
    vw_sbuf_put_visible(&v, s, strlen(s));
    if (v.oom) {
        vw_sbuf_fail(sb);
        return;
    }
    int n = (int)v.len;
    if (n > w) {
        n = w - 1;
        while (n > 0 && ((unsigned char)v.p[n] & 0xC0) == 0x80)
            n--; /* v.p[n] starts a character: keep the bytes before it */
    }
    vw_sbuf_put(sb, v.p, (size_t)n);
    if (n < (int)v.len)
        vw_sbuf_puts(sb, "~");
    for (int k = n + (n < (int)v.len); pad && k < w; k++)
        vw_sbuf_put(sb, " ", 1);
    vw_sbuf_free(&v);
}

static void name(vw_sbuf *sb, const char *s, int w) {
    cell(sb, s, w, true);
}

/* The width s takes once escaped. */
static int shown_width(const char *s) {
    vw_sbuf v = {0};
    vw_sbuf_put_visible(&v, s, strlen(s));
    int n = (int)v.len;
    vw_sbuf_free(&v);
    return n;
}

static int qid_width(const vw_eval_report *r) {
    int w = 8;
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        int n = shown_width(r->questions.q[i]->qid) + 2;
        w = n > w ? n : w;
    }
    return w > QID_MAX ? QID_MAX : w;
}

static void file_line(vw_sbuf *sb, const char *what, const vw_eval_file *f, bool status) {
    vw_sbuf_printf(sb, "%-9s ", what);
    vw_sbuf_put_visible(sb, f->path, strlen(f->path));
    vw_sbuf_printf(sb, ": %llu records, %llu duplicates, %llu bad lines\n",
                   (unsigned long long)f->records, (unsigned long long)f->duplicates,
                   (unsigned long long)f->bad_lines);
    for (size_t i = 0; status && i < f->status.n; i++) {
        const char *key = vw_strmap_key(&f->status, i);
        vw_sbuf_puts(sb, i ? ", " : "          by status: ");
        vw_sbuf_put_visible(sb, key, strlen(key));
        vw_sbuf_printf(sb, ": %llu", (unsigned long long)vw_eval_status_count(f, i));
    }
    if (status && f->status.n)
        vw_sbuf_puts(sb, "\n");
}

static void records(vw_sbuf *sb, const vw_eval_report *r) {
    file_line(sb, "results", &r->results, true);
    if (r->has_baseline)
        file_line(sb, "baseline", &r->baseline, true);
    if (r->has_labels) {
        file_line(sb, "labels", &r->labels, false);
        vw_sbuf_printf(sb, "          %llu labels that do not fit, %llu unknown question ids\n",
                       (unsigned long long)r->bad_labels, (unsigned long long)r->unknown_qids);
        vw_sbuf_printf(sb,
                       "joined    %llu results labelled, %llu unlabelled; %llu labels without a "
                       "result\n",
                       (unsigned long long)r->labelled, (unsigned long long)r->unlabelled,
                       (unsigned long long)r->labels_without_result);
    }
    if (r->has_baseline)
        vw_sbuf_printf(sb,
                       "A/B       %llu in both, %llu only in results, %llu only in baseline; "
                       "status changed in %llu\n",
                       (unsigned long long)r->in_both, (unsigned long long)r->only_in_results,
                       (unsigned long long)r->only_in_baseline,
                       (unsigned long long)r->status_changed);
    if (r->problems_total)
        vw_sbuf_printf(sb, "problems  %llu (file:line on stderr)\n",
                       (unsigned long long)r->problems_total);
}

static void metric_cells(vw_sbuf *sb, const vw_eval_q *q) {
    size_t n;
    const vw_eval_metric_col *cols = vw_eval_metric_cols(q->type, &n);
    for (size_t c = 0; c < n; c++)
        num(sb, vw_eval_metric_value(&q->m, &cols[c]));
}

/* Per-label rows under a set or span question: precision, recall, f1, support. */
static void label_rows(vw_sbuf *sb, const vw_eval_labelled *l, int w) {
    for (size_t i = 0; i < l->names.n; i++) {
        vw_sbuf_puts(sb, "  ");
        name(sb, vw_strmap_key(&l->names, i), w + 20 - 2);
        num(sb, vw_eval_precision(l->c[i]));
        num(sb, vw_eval_recall(l->c[i]));
        num(sb, vw_eval_f1(l->c[i]));
        count(sb, l->c[i].tp + l->c[i].fn);
        vw_sbuf_puts(sb, "\n");
    }
}

/* A question in the metric tables: one with labelled answers. */
static bool shown(const vw_eval_q *q) {
    return q->n > 0;
}

static void type_table(vw_sbuf *sb, const vw_eval_report *r, vw_qtype t, int w) {
    bool any = false;
    for (size_t i = 0; i < r->questions.ids.n && !any; i++)
        any = r->questions.q[i]->type == t && shown(r->questions.q[i]);
    if (!any)
        return;
    const char *title = vw_qtype_name(t);
    vw_sbuf_puts(sb, "\n");
    name(sb, title, w);
    vw_sbuf_printf(sb, " %9s %9s", "n", "errors");
    size_t n_cols;
    const vw_eval_metric_col *cols = vw_eval_metric_cols(t, &n_cols);
    for (size_t c = 0; c < n_cols; c++)
        vw_sbuf_printf(sb, " %9s", cols[c].column);
    vw_sbuf_puts(sb, "\n");
    if (t == VW_QT_SET || t == VW_QT_SPAN) {
        vw_sbuf_puts(sb, "  ");
        name(sb, t == VW_QT_SPAN ? "(per label, exact)" : "(per label)", w + 18);
        vw_sbuf_printf(sb, " %9s %9s %9s %9s\n", "precision", "recall", "f1", "support");
    }
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        if (q->type != t || !shown(q))
            continue;
        name(sb, q->qid, w);
        count(sb, q->n);
        count(sb, q->errors);
        metric_cells(sb, q);
        vw_sbuf_puts(sb, "\n");
        if (t == VW_QT_SET && q->n)
            label_rows(sb, &q->set, w);
        if (t == VW_QT_SPAN && q->n)
            label_rows(sb, &q->span.per, w);
    }
}

static void compare_table(vw_sbuf *sb, const vw_eval_report *r, int w) {
    vw_sbuf_puts(sb, "\nA/B vs ");
    vw_sbuf_put_visible(sb, r->baseline.path, strlen(r->baseline.path));
    vw_sbuf_puts(sb, "\n");
    name(sb, "question", w);
    vw_sbuf_printf(sb, " %9s %9s %9s %14s\n", "type", "n", "agreement", "mean_abs_delta");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        const char *type = vw_qtype_name(q->type);
        name(sb, q->qid, w);
        vw_sbuf_printf(sb, " %9s", type ? type : "-");
        count(sb, q->cmp_n);
        num(sb, vw_eval_ratio((double)q->cmp_agree, (double)q->cmp_n));
        vw_sbuf_puts(sb, "     ");
        num(sb, vw_eval_ratio(q->cmp_delta_sum, (double)q->cmp_n_delta));
        vw_sbuf_puts(sb, "\n");
    }
    vw_sbuf_printf(sb, "status changed in %llu of %llu records in both\n",
                   (unsigned long long)r->status_changed, (unsigned long long)r->in_both);
    if (!r->top.n)
        return;
    vw_sbuf_printf(sb, "\nthe %zu records that changed most\n", r->top.n);
    vw_sbuf_printf(sb, "%-22s %-22s %9s  %s\n", "request_id", "status (B -> A)", "max_delta",
                   "questions that disagree");
    for (size_t i = 0; i < r->top.n; i++) {
        const vw_eval_change *c = &r->top.v[i];
        char st[160];
        snprintf(st, sizeof st, "%s%s%s", c->status_changed ? c->status_b : "",
                 c->status_changed ? " -> " : "", c->status_a);
        name(sb, c->id, 22);
        vw_sbuf_puts(sb, " ");
        name(sb, st, 22);
        num(sb, c->max_delta);
        vw_sbuf_puts(sb, "  ");
        cell(sb, c->changed[0] ? c->changed : "-", 42, false);
        vw_sbuf_puts(sb, "\n");
    }
}

/* Without labels there is nothing to score: what was answered, by question. */
static void answered_table(vw_sbuf *sb, const vw_eval_report *r, int w) {
    vw_sbuf_puts(sb, "\n");
    name(sb, "question", w);
    vw_sbuf_printf(sb, " %9s %9s %9s   (no --labels: no metrics)\n", "type", "answered", "errors");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        const char *type = vw_qtype_name(q->type);
        name(sb, q->qid, w);
        vw_sbuf_printf(sb, " %9s", type ? type : "-");
        count(sb, q->answered);
        count(sb, q->errors);
        vw_sbuf_puts(sb, "\n");
    }
}

/* One line of the questions a filter picks, "label: a b c (N questions)",
 * cut at 80 columns. */
static void qid_line(vw_sbuf *sb, const vw_eval_report *r, const char *label,
                     bool (*pick)(const vw_eval_q *), bool errors) {
    size_t n = 0, start = sb->len;
    bool cut = false;
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        if (!pick(q))
            continue;
        if (!n++)
            vw_sbuf_puts(sb, label);
        vw_sbuf item = {0};
        vw_sbuf_puts(&item, " ");
        cell(&item, q->qid, 60, false);
        if (errors)
            vw_sbuf_printf(&item, ":%llu", (unsigned long long)q->errors);
        if (item.oom)
            vw_sbuf_fail(sb);
        else if (!cut && sb->len - start + item.len <= 80)
            vw_sbuf_put(sb, item.p, item.len);
        else if (!cut) {
            vw_sbuf_puts(sb, " ...");
            cut = true;
        }
        vw_sbuf_free(&item);
    }
    if (n)
        vw_sbuf_printf(sb, " (%zu)\n", n);
}

static bool unlabelled(const vw_eval_q *q) {
    return !q->n;
}

static bool unlabelled_errors(const vw_eval_q *q) {
    return !q->n && q->errors;
}

vw_status vw_eval_write_text(const vw_eval_report *r, vw_sbuf *sb) {
    int w = qid_width(r);
    records(sb, r);
    if (r->has_labels) {
        for (int t = VW_QT_CHOICE; t < VW_QT_COUNT; t++)
            type_table(sb, r, (vw_qtype)t, w);
        vw_sbuf_puts(sb, "\n");
        qid_line(sb, r, "no labelled answer:", unlabelled, false);
        qid_line(sb, r, "errors among them:", unlabelled_errors, true);
    } else
        answered_table(sb, r, w);
    if (r->has_baseline)
        compare_table(sb, r, w);
    return vw_sbuf_status(sb);
}
