/* report_json.c — the report as JSON. Owns the key names of --json (the
 * metric names of docs/eval.md); computes nothing (qmetrics.c did). */
#include "report_json.h"

#include <math.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "util/utf8.h"

void vw_eval_json_num(vw_sbuf *sb, double v) {
    char buf[32];
    if (isnan(v) || isinf(v))
        vw_sbuf_puts(sb, "null");
    else
        vw_sbuf_put(sb, buf, vw_float_repr(v, buf));
}

void vw_eval_json_str(vw_sbuf *sb, const char *s) {
    size_t n = strlen(s);
    if (vw_utf8_clean(s, n)) {
        vw_canon_string(sb, s, n);
        return;
    }
    /* A path, or a message cut inside a character: invalid bytes become '?'. */
    vw_sbuf clean = {0};
    for (size_t i = 0; i < n;) {
        vw_utf8_step st = vw_utf8_step_at((const unsigned char *)s, n, i);
        if (st.len && !st.surrogate) {
            vw_sbuf_put(&clean, s + i, st.len);
            i += st.len;
        } else {
            vw_sbuf_put(&clean, "?", 1);
            i = st.len ? i + st.len : st.err_end > i ? st.err_end : i + 1;
        }
    }
    if (vw_sbuf_status(&clean))
        vw_sbuf_fail(sb); /* the report fails as out of memory, not with "" here */
    else
        vw_canon_string(sb, clean.p ? clean.p : "", clean.len);
    vw_sbuf_free(&clean);
}

static void str(vw_sbuf *sb, const char *s) {
    vw_eval_json_str(sb, s);
}

static void key(vw_sbuf *sb, const char *k) {
    str(sb, k);
    vw_sbuf_puts(sb, ":");
}

static void num_field(vw_sbuf *sb, const char *k, double v) {
    vw_sbuf_printf(sb, ",\"%s\":", k);
    vw_eval_json_num(sb, v);
}

static void file_counts(vw_sbuf *sb, const char *name, const vw_eval_file *f, bool status) {
    vw_sbuf_printf(sb, ",\"%s\":{\"file\":", name);
    str(sb, f->path);
    vw_sbuf_printf(sb, ",\"lines\":%llu,\"records\":%llu,\"duplicates\":%llu,\"bad_lines\":%llu",
                   (unsigned long long)f->lines, (unsigned long long)f->records,
                   (unsigned long long)f->duplicates, (unsigned long long)f->bad_lines);
    if (status) {
        vw_sbuf_puts(sb, ",\"status\":{");
        for (size_t i = 0; i < f->status.n; i++) {
            vw_sbuf_puts(sb, i ? "," : "");
            key(sb, vw_strmap_key(&f->status, i));
            vw_sbuf_printf(sb, "%llu", (unsigned long long)vw_eval_status_count(f, i));
        }
        vw_sbuf_puts(sb, "}");
    }
}

static void records(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, "\"records\":{\"seconds\":");
    vw_eval_json_num(sb, r->seconds);
    file_counts(sb, "results", &r->results, true);
    vw_sbuf_puts(sb, "}");
    if (r->has_baseline) {
        file_counts(sb, "baseline", &r->baseline, true);
        vw_sbuf_puts(sb, "}");
    }
    if (r->has_labels) {
        file_counts(sb, "labels", &r->labels, false);
        vw_sbuf_printf(sb, ",\"bad_labels\":%llu,\"unknown_qids\":%llu}",
                       (unsigned long long)r->bad_labels, (unsigned long long)r->unknown_qids);
    }
    vw_sbuf_puts(sb, ",\"joined\":{");
    if (r->has_labels)
        vw_sbuf_printf(sb, "\"labelled\":%llu,\"unlabelled\":%llu,\"labels_without_result\":%llu%s",
                       (unsigned long long)r->labelled, (unsigned long long)r->unlabelled,
                       (unsigned long long)r->labels_without_result, r->has_baseline ? "," : "");
    if (r->has_baseline)
        vw_sbuf_printf(sb, "\"in_both\":%llu,\"only_in_results\":%llu,\"only_in_baseline\":%llu",
                       (unsigned long long)r->in_both, (unsigned long long)r->only_in_results,
                       (unsigned long long)r->only_in_baseline);
    vw_sbuf_puts(sb, "}}");
}

/* {"<name>": {"precision","recall","f1","support"}, ...} */
static void per_label(vw_sbuf *sb, const vw_eval_labelled *l) {
    vw_sbuf_puts(sb, ",\"per_label\":{");
    for (size_t i = 0; i < l->names.n; i++) {
        vw_eval_prf c = l->c[i];
        vw_sbuf_puts(sb, i ? "," : "");
        key(sb, vw_strmap_key(&l->names, i));
        vw_sbuf_puts(sb, "{\"precision\":");
        vw_eval_json_num(sb, vw_eval_precision(c));
        num_field(sb, "recall", vw_eval_recall(c));
        num_field(sb, "f1", vw_eval_f1(c));
        vw_sbuf_printf(sb, ",\"support\":%llu}", (unsigned long long)(c.tp + c.fn));
    }
    vw_sbuf_puts(sb, "}");
}

static void reliability(vw_sbuf *sb, const vw_eval_ece *e) {
    vw_sbuf_puts(sb, ",\"reliability\":[");
    for (int b = 0; b < VW_EVAL_BINS; b++) {
        double n = (double)e->n[b];
        vw_sbuf_printf(sb, "%s{\"n\":%llu,\"confidence\":", b ? "," : "",
                       (unsigned long long)e->n[b]);
        vw_eval_json_num(sb, vw_eval_ratio(e->conf[b], n));
        num_field(sb, "accuracy", vw_eval_ratio((double)e->correct[b], n));
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_puts(sb, "]");
}

static void confusion(vw_sbuf *sb, const vw_eval_q *q) {
    const vw_strmap *l = &q->choice.labels;
    vw_sbuf_puts(sb, ",\"confusion\":{");
    for (size_t i = 0; i < l->n; i++) {
        bool first = true;
        vw_sbuf_puts(sb, i ? "," : "");
        key(sb, vw_strmap_key(l, i));
        vw_sbuf_puts(sb, "{");
        for (size_t j = 0; j < l->n; j++) {
            uint64_t c = vw_eval_confusion(q, i, j);
            if (!c)
                continue;
            vw_sbuf_puts(sb, first ? "" : ",");
            key(sb, vw_strmap_key(l, j));
            vw_sbuf_printf(sb, "%llu", (unsigned long long)c);
            first = false;
        }
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_puts(sb, "}");
}

static void metrics(vw_sbuf *sb, const vw_eval_q *q) {
    size_t n;
    const vw_eval_metric_col *cols = vw_eval_metric_cols(q->type, &n);
    for (size_t c = 0; c < n; c++)
        num_field(sb, cols[c].key, vw_eval_metric_value(&q->m, &cols[c]));
    switch (q->type) {
    case VW_QT_CHOICE:
        confusion(sb, q);
        reliability(sb, &q->choice.ece);
        break;
    case VW_QT_NOUL:
        reliability(sb, &q->noul.ece);
        break;
    case VW_QT_SET:
        per_label(sb, &q->set);
        break;
    case VW_QT_SPAN:
        per_label(sb, &q->span.per);
        break;
    case VW_QT_SCORE:
    case VW_QT_UNKNOWN:
        break;
    }
}

static void questions(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, ",\"questions\":{");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        const char *type = vw_qtype_name(q->type);
        vw_sbuf_puts(sb, i ? "," : "");
        key(sb, q->qid);
        vw_sbuf_puts(sb, "{\"type\":");
        if (type)
            str(sb, type);
        else
            vw_sbuf_puts(sb, "null");
        vw_sbuf_printf(sb, ",\"n\":%llu,\"errors\":%llu,\"answered\":%llu",
                       (unsigned long long)q->n, (unsigned long long)q->errors,
                       (unsigned long long)q->answered);
        if (q->type_conflicts)
            vw_sbuf_printf(sb, ",\"type_conflicts\":%llu", (unsigned long long)q->type_conflicts);
        metrics(sb, q);
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_puts(sb, "}");
}

static void compare(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, ",\"compare\":{");
    for (size_t i = 0; i < r->questions.ids.n; i++) {
        const vw_eval_q *q = r->questions.q[i];
        key(sb, q->qid);
        vw_sbuf_printf(sb, "{\"n\":%llu,\"agreement\":", (unsigned long long)q->cmp_n);
        vw_eval_json_num(sb, vw_eval_ratio((double)q->cmp_agree, (double)q->cmp_n));
        num_field(sb, "mean_abs_delta", vw_eval_ratio(q->cmp_delta_sum, (double)q->cmp_n_delta));
        vw_sbuf_puts(sb, "},");
    }
    vw_sbuf_printf(sb, "\"status_changed\":%llu}", (unsigned long long)r->status_changed);
    if (!r->top.cap)
        return;
    vw_sbuf_puts(sb, ",\"top\":[");
    for (size_t i = 0; i < r->top.n; i++) {
        const vw_eval_change *c = &r->top.v[i];
        vw_sbuf_puts(sb, i ? ",{\"request_id\":" : "{\"request_id\":");
        str(sb, c->id);
        vw_sbuf_puts(sb, ",\"status\":{\"results\":");
        str(sb, c->status_a);
        vw_sbuf_puts(sb, ",\"baseline\":");
        str(sb, c->status_b);
        vw_sbuf_printf(sb, "},\"disagreements\":%u,\"changed\":", c->disagreements);
        str(sb, c->changed);
        num_field(sb, "max_abs_delta", c->max_delta);
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_puts(sb, "]");
}

static void problems(vw_sbuf *sb, const vw_eval_report *r) {
    vw_sbuf_puts(sb, ",\"problems\":[");
    for (size_t i = 0; i < r->n_problems; i++) {
        vw_sbuf_puts(sb, i ? ",{\"file\":" : "{\"file\":");
        str(sb, r->problems[i].file);
        vw_sbuf_printf(sb, ",\"line\":%llu,\"message\":", (unsigned long long)r->problems[i].line);
        str(sb, r->problems[i].msg);
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_printf(sb, "],\"problems_total\":%llu", (unsigned long long)r->problems_total);
}

vw_status vw_eval_write_json(const vw_eval_report *r, vw_sbuf *sb) {
    vw_sbuf_puts(sb, "{");
    records(sb, r);
    questions(sb, r);
    if (r->has_baseline)
        compare(sb, r);
    problems(sb, r);
    vw_sbuf_puts(sb, "}\n");
    return vw_sbuf_status(sb);
}
