/* envelope.c — the System One envelope as JSON (see envelope.h). */
#include "envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_float(vw_sbuf *sb, double x) {
    char buf[32];
    size_t n = vw_float_repr(x, buf);
    vw_sbuf_put(sb, buf, n);
}

static void put_str(vw_sbuf *sb, const vw_str *s) {
    vw_canon_string(sb, s->p, s->n);
}

/* `"<key>":` for a borrowed string key. */
static void put_key(vw_sbuf *sb, const vw_str *key) {
    put_str(sb, key);
    vw_sbuf_put(sb, ":", 1);
}

/* Byte offset of code point cp in UTF-8 text (valid UTF-8, cp <= length). */
static size_t cp_byte(const char *s, size_t len, int64_t cp) {
    size_t b = 0;
    for (int64_t i = 0; i < cp && b < len; i++) {
        b++;
        while (b < len && ((unsigned char)s[b] & 0xC0) == 0x80)
            b++;
    }
    return b;
}

static bool is_failed(const vw_plan *p, const vw_answer *a, const bool *answered, size_t i) {
    const vw_qentry *en = &p->req->entries[i];
    return !en->valid || !answered[i] || a[i].error;
}

static void write_error(vw_sbuf *sb, const vw_plan *p, const vw_answer *a, const bool *answered,
                        size_t i) {
    const vw_qentry *en = &p->req->entries[i];
    vw_sbuf_puts(sb, "{\"type\":");
    if (!en->valid) {
        vw_sbuf_puts(sb, en->given_type);
        vw_sbuf_puts(sb, ",\"error\":\"invalid_question\",\"message\":");
        vw_canon_string(sb, en->error.msg, strlen(en->error.msg));
        vw_sbuf_puts(sb, ",\"loc\":");
        vw_loc_write(sb, &en->error.loc);
    } else {
        vw_sbuf_printf(sb, "\"%s\",\"error\":\"%s\"", vw_qkind_name(en->q.kind),
                       answered[i] && a[i].error ? a[i].error : "max_length_exceeded");
    }
    vw_sbuf_puts(sb, "}");
}

static void write_options_probs(vw_sbuf *sb, const vw_question *q, const vw_answer *a) {
    vw_sbuf_puts(sb, "{");
    for (size_t k = 0; k < a->n; k++) {
        if (k)
            vw_sbuf_puts(sb, ",");
        put_key(sb, &q->options[k].name);
        put_float(sb, a->probabilities[k]);
    }
    vw_sbuf_puts(sb, "}");
}

static void write_indexed(vw_sbuf *sb, const vw_question *q, const vw_answer *a, bool legend) {
    vw_sbuf_puts(sb, "{");
    for (size_t k = 0; k < a->n; k++) {
        vw_sbuf_printf(sb, "%s\"%zu\":", k ? "," : "", k);
        if (legend) /* level texts: a plain level's name (its description is ""), a
                     * relevance preset level's description (runtime answers.py: the
                     * legend lists question.criteria, the schema's level texts) */
            put_str(sb, q->options[k].desc.n ? &q->options[k].desc : &q->options[k].name);
        else
            put_float(sb, a->probabilities[k]);
    }
    vw_sbuf_puts(sb, "}");
}

/* One answers entry (or the Set fan-out); returns false on a plan/answer mismatch. */
static bool write_answer(vw_sbuf *sb, const vw_question *q, const vw_answer *a, bool *first) {
    if (q->kind == VW_Q_SET) {
        if (a->n != q->n_options)
            return false;
        for (size_t k = 0; k < a->n; k++) {
            vw_sbuf_puts(sb, *first ? "" : ",");
            *first = false;
            /* "<qid>.<label>" as one JSON string. */
            size_t n = q->id.n + 1 + q->options[k].name.n;
            char *key = malloc(n + 1);
            if (!key) {
                vw_sbuf_fail(sb);
                return true;
            }
            memcpy(key, q->id.p, q->id.n);
            key[q->id.n] = '.';
            memcpy(key + q->id.n + 1, q->options[k].name.p, q->options[k].name.n);
            vw_canon_string(sb, key, n);
            free(key);
            vw_sbuf_puts(sb, ":{\"type\":\"noul\",\"noul\":");
            put_float(sb, a->probabilities[k]);
            vw_sbuf_puts(sb, "}");
        }
        return true;
    }
    vw_sbuf_puts(sb, *first ? "" : ",");
    *first = false;
    put_key(sb, &q->id);
    switch (q->kind) {
    case VW_Q_CHOICE:
        if (a->n != q->n_options || a->pick >= a->n)
            return false;
        vw_sbuf_puts(sb, "{\"type\":\"choice\",\"choice\":");
        put_str(sb, &q->options[a->pick].name);
        vw_sbuf_puts(sb, ",\"confidence\":");
        put_float(sb, a->confidence);
        vw_sbuf_puts(sb, ",\"probabilities\":");
        write_options_probs(sb, q, a);
        if (a->has_abstain) {
            vw_sbuf_puts(sb, ",\"abstain_probability\":");
            put_float(sb, a->abstain);
        }
        vw_sbuf_puts(sb, "}");
        return true;
    case VW_Q_NOUL:
    case VW_Q_SPAN:
        vw_sbuf_puts(sb, "{\"type\":\"noul\",\"noul\":");
        put_float(sb, a->noul);
        vw_sbuf_puts(sb, "}");
        return true;
    case VW_Q_SCORE:
        if (a->n != q->n_options)
            return false;
        vw_sbuf_puts(sb, "{\"type\":\"score\",\"score\":");
        put_float(sb, a->score);
        vw_sbuf_puts(sb, ",\"confidence\":");
        put_float(sb, a->confidence);
        vw_sbuf_puts(sb, ",\"legend\":");
        write_indexed(sb, q, a, true);
        vw_sbuf_puts(sb, ",\"probabilities\":");
        write_indexed(sb, q, a, false);
        vw_sbuf_puts(sb, "}");
        return true;
    case VW_Q_SET:
        break;
    }
    return false;
}

static void write_spans(vw_sbuf *sb, const vw_plan *p, const vw_question *q, const vw_answer *a) {
    const vw_part *part = vw_state_part(&p->req->state, vw_question_span_role(q));
    vw_sbuf_puts(sb, "[");
    for (size_t k = 0; k < a->spans.n; k++) {
        const vw_span *s = &a->spans.items[k];
        /* Labels go back through the alias map (§4.9): q->options are the
         * caller's labels; an aliased question was only rendered as `unsupported`. */
        if (s->label < 0 || (size_t)s->label >= q->n_options)
            continue;
        const vw_str *label = &q->options[s->label].name;
        size_t b0 = cp_byte(part->text, part->len, s->text_start);
        size_t b1 = cp_byte(part->text, part->len, s->text_end);
        vw_sbuf_puts(sb, k ? ",{\"label\":" : "{\"label\":");
        put_str(sb, label);
        vw_sbuf_printf(sb, ",\"start\":%lld,\"end\":%lld,\"text\":", (long long)s->start,
                       (long long)s->end);
        vw_canon_string(sb, part->text + b0, b1 - b0);
        vw_sbuf_puts(sb, ",\"probability\":");
        put_float(sb, s->probability);
        vw_sbuf_puts(sb, "}");
    }
    vw_sbuf_puts(sb, "]");
}

/* One of the optional sections (spans, span_heads, sets, thresholds). */
typedef enum section { SEC_SPANS, SEC_HEADS, SEC_SETS, SEC_THRESHOLDS } section;

static bool in_section(section s, const vw_question *q) {
    switch (s) {
    case SEC_SPANS:
    case SEC_HEADS:
        return q->kind == VW_Q_SPAN;
    case SEC_SETS:
        return q->kind == VW_Q_SET;
    case SEC_THRESHOLDS:
        return q->kind == VW_Q_SPAN || q->kind == VW_Q_SET;
    }
    return false;
}

static void write_section(vw_sbuf *sb, const vw_plan *p, const vw_answer *a, const bool *answered,
                          section s) {
    static const char *names[] = {"spans", "span_heads", "sets", "thresholds"};
    bool open = false;
    for (size_t i = 0; i < p->req->n; i++) {
        if (is_failed(p, a, answered, i) || !in_section(s, &p->req->entries[i].q))
            continue;
        const vw_question *q = &p->req->entries[i].q;
        vw_sbuf_printf(sb, open ? "," : ",\"%s\":{", names[s]);
        open = true;
        put_key(sb, &q->id);
        switch (s) {
        case SEC_SPANS:
            write_spans(sb, p, q, &a[i]);
            break;
        case SEC_HEADS:
            vw_sbuf_printf(sb, "\"%s\"", a[i].head == VW_SPAN_BROAD ? "broad" : "router");
            break;
        case SEC_SETS:
            vw_sbuf_puts(sb, "{\"selected\":[");
            for (size_t k = 0, w = 0; k < a[i].n; k++)
                if (a[i].selected[k]) {
                    vw_sbuf_puts(sb, w++ ? "," : "");
                    put_str(sb, &q->options[k].name);
                }
            vw_sbuf_puts(sb, "],\"probabilities\":");
            write_options_probs(sb, q, &a[i]);
            vw_sbuf_puts(sb, "}");
            break;
        case SEC_THRESHOLDS:
            put_float(sb, q->kind == VW_Q_SPAN ? a[i].span_threshold.value : a[i].threshold);
            break;
        }
    }
    if (open)
        vw_sbuf_puts(sb, "}");
}

vw_status vw_envelope_write(vw_sbuf *sb, const vw_plan *p, const vw_answer *answers,
                            const bool *answered, bool report_heads, vw_err *err) {
    vw_sbuf_puts(sb, "{\"answers\":{");
    bool first = true;
    for (size_t i = 0; i < p->req->n; i++) {
        const vw_qentry *en = &p->req->entries[i];
        if (is_failed(p, answers, answered, i)) {
            vw_sbuf_puts(sb, first ? "" : ",");
            first = false;
            put_key(sb, &en->id);
            write_error(sb, p, answers, answered, i);
        } else if (!write_answer(sb, &en->q, &answers[i], &first)) {
            return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                           "question %.*s: %zu answer values for %zu options", (int)en->id.n,
                           en->id.p, answers[i].n, en->q.n_options);
        }
    }
    vw_sbuf_printf(sb, "},\"usage\":{\"input_tokens\":%lld,\"output_tokens\":0}",
                   (long long)p->input_tokens);
    write_section(sb, p, answers, answered, SEC_SPANS);
    if (report_heads)
        write_section(sb, p, answers, answered, SEC_HEADS);
    write_section(sb, p, answers, answered, SEC_SETS);
    write_section(sb, p, answers, answered, SEC_THRESHOLDS);
    vw_sbuf_puts(sb, "}");
    return vw_sbuf_status(sb) == VW_OK ? VW_OK
                                       : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "envelope");
}
