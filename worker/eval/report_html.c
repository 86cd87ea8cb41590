/* report_html.c — the report as an HTML page. Owns the page's layout and its
 * CSS: per question type a table, then each question's figures
 * (report_svg.h) side by side in one group that wraps as a whole; the A/B
 * section with its histograms and the flipped decisions. Computes nothing
 * but the per-label ratios it shows. */
#include "report_html.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_svg.h"

static void esc(vw_sbuf *sb, const char *s) {
    vw_eval_html_esc(sb, s);
}

static const char style[] =
    "body{font-family:'DejaVu Sans',Arial,Helvetica,sans-serif;margin:24px;color:#1d2430;"
    "max-width:1150px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px "
    "solid #ccd;padding-bottom:3px}h3{font-size:14px;margin:0 0 6px}"
    "table{border-collapse:collapse;font-size:13px;margin:4px 0 10px}"
    "th,td{padding:3px 9px;border-bottom:1px solid #e3e6ee;text-align:right}"
    "th{background:#f0f2f7;font-weight:600}td.l,th.l{text-align:left}"
    ".muted{color:#667}.cards{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}"
    ".figs{display:flex;flex-wrap:wrap;gap:16px 28px;align-items:flex-start;margin:6px 0 4px}"
    ".qfig{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}"
    "h3.sect{margin:16px 0 6px}"
    ".legend{font-size:11px;color:#556;margin:2px 0 0}"
    ".card{border:1px solid #d5d9e3;border-radius:6px;padding:10px 12px;background:#fbfcfe}"
    "table.cm td{min-width:34px;text-align:center}table.cm th{font-size:12px}"
    ".bad{color:#a11}code{font-family:'DejaVu Sans Mono',monospace;font-size:12px}";

static void num(vw_sbuf *sb, double v) {
    if (isnan(v))
        vw_sbuf_puts(sb, "<td class=muted>&ndash;</td>");
    else
        vw_sbuf_printf(sb, "<td>%.4f</td>", v);
}

static void cnt(vw_sbuf *sb, uint64_t v) {
    vw_sbuf_printf(sb, "<td>%llu</td>", (unsigned long long)v);
}

static void file_row(vw_sbuf *sb, const char *what, const vw_eval_file *f, bool status) {
    vw_sbuf_printf(sb, "<tr><td class=l>%s</td><td class=l><code>", what);
    esc(sb, f->path);
    vw_sbuf_puts(sb, "</code></td>");
    cnt(sb, f->records);
    cnt(sb, f->duplicates);
    cnt(sb, f->bad_lines);
    vw_sbuf_puts(sb, "<td class=l>");
    for (size_t i = 0; status && i < f->status.n; i++) {
        vw_sbuf_puts(sb, i ? ", " : "");
        esc(sb, vw_strmap_key(&f->status, i));
        vw_sbuf_printf(sb, ": %llu", (unsigned long long)vw_eval_status_count(f, i));
    }
    vw_sbuf_puts(sb, "</td></tr>");
}

static void records(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, "<h2>Records</h2><table><tr><th class=l>input</th><th class=l>file</th>"
                     "<th>records</th><th>duplicates</th><th>bad lines</th>"
                     "<th class=l>by status</th></tr>");
    file_row(sb, "results", &r->results, true);
    if (r->has_baseline)
        file_row(sb, "baseline", &r->baseline, true);
    if (r->has_labels)
        file_row(sb, "labels", &r->labels, false);
    vw_sbuf_puts(sb, "</table><p>");
    if (r->has_labels)
        vw_sbuf_printf(sb,
                       "Labelled results: %llu; unlabelled: %llu; labels without a result: "
                       "%llu; bad labels: %llu; unknown question ids: %llu.<br>",
                       (unsigned long long)r->labelled, (unsigned long long)r->unlabelled,
                       (unsigned long long)r->labels_without_result,
                       (unsigned long long)r->bad_labels, (unsigned long long)r->unknown_qids);
    if (r->has_baseline)
        vw_sbuf_printf(sb,
                       "In both: %llu; only in results: %llu; only in baseline: %llu; status "
                       "changed: %llu.<br>",
                       (unsigned long long)r->in_both, (unsigned long long)r->only_in_results,
                       (unsigned long long)r->only_in_baseline,
                       (unsigned long long)r->status_changed);
    vw_sbuf_printf(sb, "Problems: %llu.</p>", (unsigned long long)r->problems_total);
}

static void cells(vw_sbuf *sb, const vw_eval_q *q) {
    size_t n;
    const vw_eval_metric_col *cols = vw_eval_metric_cols(q->type, &n);
    for (size_t c = 0; c < n; c++)
        num(sb, vw_eval_metric_value(&q->m, &cols[c]));
}

/* A question's per-label table (set labels; span labels, exact). */
static void label_table(vw_sbuf *sb, const vw_eval_q *q, const vw_eval_labelled *l) {
    vw_sbuf_puts(sb, "<div class=card data-q=\"");
    esc(sb, q->qid);
    vw_sbuf_puts(sb, "\"><h3>");
    esc(sb, q->qid);
    vw_sbuf_printf(sb,
                   " <span class=muted>per label%s</span></h3><table><tr><th class=l>label"
                   "</th><th>support</th><th>precision</th><th>recall</th><th>F1</th></tr>",
                   q->type == VW_QT_SPAN ? ", exact spans" : "");
    for (size_t i = 0; i < l->names.n; i++) {
        vw_eval_prf c = l->c[i];
        vw_sbuf_puts(sb, "<tr><td class=l>");
        esc(sb, vw_strmap_key(&l->names, i));
        vw_sbuf_puts(sb, "</td>");
        cnt(sb, c.tp + c.fn);
        num(sb, vw_eval_precision(c));
        num(sb, vw_eval_recall(c));
        num(sb, vw_eval_f1(c));
        vw_sbuf_puts(sb, "</tr>");
    }
    vw_sbuf_puts(sb, "</table></div>");
}

/* Rows: the expected label; columns: the pick; shade by the row's share. */
static void confusion(vw_sbuf *sb, const vw_eval_q *q) {
    const vw_strmap *l = &q->choice.labels;
    vw_sbuf_puts(sb, "<div class=card data-q=\"");
    esc(sb, q->qid);
    vw_sbuf_puts(sb, "\"><h3>confusion: ");
    esc(sb, q->qid);
    vw_sbuf_puts(sb, " <span class=muted>(rows: label, columns: pick)</span></h3><table class=cm>"
                     "<tr><th></th>");
    for (size_t j = 0; j < l->n; j++) {
        vw_sbuf_puts(sb, "<th>");
        esc(sb, vw_strmap_key(l, j));
        vw_sbuf_puts(sb, "</th>");
    }
    vw_sbuf_puts(sb, "</tr>");
    for (size_t i = 0; i < l->n; i++) {
        uint64_t row = 0;
        for (size_t j = 0; j < l->n; j++)
            row += vw_eval_confusion(q, i, j);
        vw_sbuf_puts(sb, "<tr><th class=l>");
        esc(sb, vw_strmap_key(l, i));
        vw_sbuf_puts(sb, "</th>");
        for (size_t j = 0; j < l->n; j++) {
            uint64_t c = vw_eval_confusion(q, i, j);
            double share = row ? (double)c / (double)row : 0.0;
            vw_sbuf_printf(sb, "<td style='background:rgba(%s,%.2f)'>%llu</td>",
                           i == j ? "46,139,87" : "214,69,65", 0.08 + 0.7 * share,
                           (unsigned long long)c);
        }
        vw_sbuf_puts(sb, "</tr>");
    }
    vw_sbuf_puts(sb, "</table></div>");
}

/* One question's figures, side by side in one group (data-q: its id) that
 * the page wraps as a whole: a row breaks between questions, inside one only
 * when the group is wider than the page (the lang confusion matrix wrapped
 * away from its reliability diagram). */
static void question_figures(vw_sbuf *sb, const vw_eval_q *q) {
    vw_sbuf_puts(sb, "<div class=qfig data-q=\"");
    esc(sb, q->qid);
    vw_sbuf_puts(sb, "\">");
    switch (q->type) {
    case VW_QT_CHOICE:
        vw_eval_svg_reliability(sb, q);
        confusion(sb, q);
        break;
    case VW_QT_NOUL:
        vw_eval_svg_reliability(sb, q);
        break;
    case VW_QT_SCORE:
        vw_eval_svg_score_calibration(sb, q);
        vw_eval_svg_score_residuals(sb, q);
        break;
    case VW_QT_SET:
    case VW_QT_SPAN: {
        const vw_eval_labelled *l = q->type == VW_QT_SET ? &q->set : &q->span.per;
        label_table(sb, q, l);
        vw_eval_svg_prf(sb, q, l);
        break;
    }
    case VW_QT_UNKNOWN:
        break;
    }
    vw_sbuf_puts(sb, "</div>");
}

/* The figures of a type's questions that have labelled answers. */
static void figures(vw_sbuf *sb, const vw_eval_report *r, vw_qtype t) {
    bool any = false;
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        if (q->type != t || !q->n || t == VW_QT_UNKNOWN)
            continue;
        if (!any)
            vw_sbuf_puts(sb, "<div class=figs>");
        any = true;
        question_figures(sb, q);
    }
    if (any)
        vw_sbuf_puts(sb, "</div>");
}

static void type_table(vw_sbuf *sb, const vw_eval_report *r, vw_qtype t) {
    bool any = false;
    for (size_t i = 0; i < r->questions.ids.n && !any; i++)
        any = r->questions.q[i]->type == t;
    if (!any)
        return;
    vw_sbuf_printf(sb,
                   "<h2>%s questions</h2><table><tr><th class=l>question</th><th>n</th>"
                   "<th>errors</th>",
                   t == VW_QT_UNKNOWN ? "Errors-only" : vw_qtype_name(t));
    size_t n_cols;
    const vw_eval_metric_col *cols = vw_eval_metric_cols(t, &n_cols);
    for (size_t c = 0; c < n_cols; c++)
        vw_sbuf_printf(sb, "<th>%s</th>", cols[c].label);
    vw_sbuf_puts(sb, "</tr>");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        if (q->type != t)
            continue;
        vw_sbuf_puts(sb, "<tr><td class=l><b>");
        esc(sb, q->qid);
        vw_sbuf_puts(sb, "</b></td>");
        cnt(sb, q->n);
        cnt(sb, q->errors);
        cells(sb, q);
        vw_sbuf_puts(sb, "</tr>");
    }
    vw_sbuf_puts(sb, "</table>");
    figures(sb, r, t);
}

/* ---- A/B, problems ------------------------------------------------------------- */

/* The probability-change histograms of the choice and Noul questions. */
static void changes(vw_sbuf *sb, const vw_eval_report *r) {
    bool any = false;
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        if ((q->type != VW_QT_CHOICE && q->type != VW_QT_NOUL) || !q->cmp_n_delta)
            continue;
        if (!any)
            vw_sbuf_puts(sb, "<div class=figs>");
        any = true;
        vw_sbuf_puts(sb, "<div class=qfig data-q=\"");
        esc(sb, q->qid);
        vw_sbuf_puts(sb, "\">");
        vw_eval_svg_changes(sb, q);
        vw_sbuf_puts(sb, "</div>");
    }
    if (any)
        vw_sbuf_puts(sb, "</div>");
}

/* The decisions that flipped, the first VW_EVAL_KEEP_FLIPS in the results'
 * order. */
static void flips(vw_sbuf *sb, const vw_eval_report *r) {
    const vw_eval_flips *f = &r->flips;
    if (!f->total)
        return;
    char first[64] = "";
    if (f->total > f->n)
        snprintf(first, sizeof first, "; the first %zu, in the results' order", f->n);
    vw_sbuf_printf(sb,
                   "<h3 class=sect>Flipped decisions: %llu%s</h3><table><tr><th "
                   "class=l>request_id</th><th class=l>question</th><th class=l>baseline</th>"
                   "<th></th><th class=l>results</th></tr>",
                   (unsigned long long)f->total, first);
    for (size_t i = 0; i < f->n; i++) {
        vw_sbuf_puts(sb, "<tr><td class=l><code>");
        esc(sb, f->v[i].id);
        vw_sbuf_puts(sb, "</code></td><td class=l>");
        esc(sb, f->v[i].qid);
        vw_sbuf_puts(sb, "</td><td class=l>");
        esc(sb, f->v[i].from);
        vw_sbuf_puts(sb, "</td><td>&rarr;</td><td class=l>");
        esc(sb, f->v[i].to);
        vw_sbuf_puts(sb, "</td></tr>");
    }
    vw_sbuf_puts(sb, "</table>");
}

static void compare(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, "<h2>A/B: results vs baseline <code>");
    esc(sb, r->baseline.path);
    vw_sbuf_puts(sb, "</code></h2><table><tr><th class=l>question</th><th class=l>type</th>"
                     "<th>n</th><th>agreement</th><th>mean |&Delta;|</th></tr>");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        const char *type = vw_qtype_name(q->type);
        vw_sbuf_puts(sb, "<tr><td class=l>");
        esc(sb, q->qid);
        vw_sbuf_printf(sb, "</td><td class=l>%s</td>", type ? type : "&ndash;");
        cnt(sb, q->cmp_n);
        num(sb, vw_eval_ratio((double)q->cmp_agree, (double)q->cmp_n));
        num(sb, vw_eval_ratio(q->cmp_delta_sum, (double)q->cmp_n_delta));
        vw_sbuf_puts(sb, "</tr>");
    }
    vw_sbuf_printf(sb, "</table><p>vela_status changed in <b>%llu</b> of %llu records in both.</p>",
                   (unsigned long long)r->status_changed, (unsigned long long)r->in_both);
    changes(sb, r);
    flips(sb, r);
    if (!r->top.n)
        return;
    vw_sbuf_printf(sb,
                   "<h3 class=sect>The %zu records that changed most</h3><table><tr><th class=l>"
                   "request_id</th><th class=l>status (baseline &rarr; results)</th>"
                   "<th>max |&Delta;|</th><th class=l>questions that disagree</th></tr>",
                   r->top.n);
    for (size_t i = 0; i < r->top.n; i++) {
        const vw_eval_change *c = &r->top.v[i];
        vw_sbuf_puts(sb, "<tr><td class=l><code>");
        esc(sb, c->id);
        vw_sbuf_printf(sb, "</code></td><td class=l%s>",
                       c->status_changed ? " style='color:#a11'" : "");
        esc(sb, c->status_b);
        vw_sbuf_puts(sb, " &rarr; ");
        esc(sb, c->status_a);
        vw_sbuf_puts(sb, "</td>");
        num(sb, c->max_delta);
        vw_sbuf_puts(sb, "<td class=l>");
        esc(sb, c->changed[0] ? c->changed : "-");
        vw_sbuf_puts(sb, "</td></tr>");
    }
    vw_sbuf_puts(sb, "</table>");
}

static void problems(vw_sbuf *sb, const vw_eval_report *r) {
    if (!r->problems_total)
        return;
    vw_sbuf_printf(sb, "<h2>Problems (%llu)</h2><table>", (unsigned long long)r->problems_total);
    for (size_t i = 0; i < r->n_problems; i++) {
        vw_sbuf_puts(sb, "<tr><td class=l><code>");
        esc(sb, r->problems[i].file);
        vw_sbuf_printf(sb, ":%llu</code></td><td class='l bad'>",
                       (unsigned long long)r->problems[i].line);
        esc(sb, r->problems[i].msg);
        vw_sbuf_puts(sb, "</td></tr>");
    }
    vw_sbuf_puts(sb, "</table>");
    if (r->problems_total > r->n_problems)
        vw_sbuf_printf(sb, "<p class=muted>The first %zu are shown.</p>", r->n_problems);
}

vw_status vw_eval_write_html(const vw_eval_report *r, vw_sbuf *sb) {
    vw_sbuf_printf(sb,
                   "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
                   "<title>vela-worker eval</title><style>%s</style></head><body>",
                   style);
    vw_sbuf_puts(sb, "<h1>vela-worker eval</h1><p class=muted>results <code>");
    esc(sb, r->results.path);
    vw_sbuf_puts(sb, "</code>");
    if (r->has_labels) {
        vw_sbuf_puts(sb, ", labels <code>");
        esc(sb, r->labels.path);
        vw_sbuf_puts(sb, "</code>");
    }
    if (r->has_baseline) {
        vw_sbuf_puts(sb, ", baseline <code>");
        esc(sb, r->baseline.path);
        vw_sbuf_puts(sb, "</code>");
    }
    vw_sbuf_printf(sb, "; %.2f s.</p>", r->seconds);
    records(sb, r);
    for (int t = VW_QT_CHOICE; t < VW_QT_COUNT; t++)
        type_table(sb, r, (vw_qtype)t);
    type_table(sb, r, VW_QT_UNKNOWN);
    if (r->has_baseline)
        compare(sb, r);
    problems(sb, r);
    vw_sbuf_puts(sb, "<p class=muted>Metrics: docs/eval.md. An empty cell (&ndash;) is undefined "
                     "(no labelled answer, one class only).</p></body></html>\n");
    return vw_sbuf_status(sb);
}
