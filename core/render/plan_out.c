/* plan_out.c — a plan as JSON (the `plan` CLI and the golden test) and as
 * executor trees (see plan.h). Owns the output formats; never plans. */
#include "plan.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void w_str(vw_sbuf *sb, const char *s, size_t n) {
    vw_canon_string(sb, s, n);
}

static void w_cstr(vw_sbuf *sb, const char *s) {
    vw_canon_string(sb, s, strlen(s));
}

static void w_ints(vw_sbuf *sb, const int32_t *v, size_t n) {
    vw_sbuf_put(sb, "[", 1);
    for (size_t i = 0; i < n; i++)
        vw_sbuf_printf(sb, i ? ",%" PRId32 : "%" PRId32, v[i]);
    vw_sbuf_put(sb, "]", 1);
}

/* [[a,b],...] from a flat [2n] array */
static void w_pairs(vw_sbuf *sb, const int32_t *v, size_t n) {
    vw_sbuf_put(sb, "[", 1);
    for (size_t i = 0; i < n; i++)
        vw_sbuf_printf(sb, "%s[%" PRId32 ",%" PRId32 "]", i ? "," : "", v[2 * i], v[2 * i + 1]);
    vw_sbuf_put(sb, "]", 1);
}

static void w_options(vw_sbuf *sb, const vw_option *o, size_t n) {
    vw_sbuf_put(sb, "[", 1);
    for (size_t i = 0; i < n; i++) {
        vw_sbuf_puts(sb, i ? ",[" : "[");
        w_str(sb, o[i].name.p, o[i].name.n);
        vw_sbuf_put(sb, ",", 1);
        w_str(sb, o[i].desc.p, o[i].desc.n);
        vw_sbuf_put(sb, "]", 1);
    }
    vw_sbuf_put(sb, "]", 1);
}

static void w_question_form(vw_sbuf *sb, const vw_question *q) {
    vw_sbuf_puts(sb, ",\"kind\":");
    w_cstr(sb, vw_qkind_name(q->kind));
    vw_sbuf_puts(sb, ",\"engine\":");
    w_cstr(sb, vw_qkind_engine(q->kind));
    vw_sbuf_puts(sb, ",\"key\":");
    w_str(sb, q->key.p, q->key.n);
    vw_sbuf_puts(sb, ",\"over\":[");
    bool first = true;
    for (int r = 0; r < VW_N_ROLES; r++)
        if (q->roles & (1u << r)) {
            vw_sbuf_puts(sb, first ? "" : ",");
            w_cstr(sb, vw_role_name((vw_role)r));
            first = false;
        }
    vw_sbuf_puts(sb, "],\"options\":");
    w_options(sb, q->options, q->n_options);
    vw_sbuf_printf(sb, ",\"abstain\":%s,\"threshold\":", q->abstain ? "true" : "false");
    if (q->has_threshold) {
        char f[32];
        vw_sbuf_put(sb, f, vw_float_repr(q->threshold, f));
    } else {
        vw_sbuf_puts(sb, "null");
    }
    vw_sbuf_puts(sb, ",\"head\":");
    if (q->head == VW_HEAD_NONE)
        vw_sbuf_puts(sb, "null");
    else
        w_cstr(sb, vw_head_name(q->head));
    if (q->has_range)
        vw_sbuf_printf(sb, ",\"span_range\":[%" PRId64 ",%" PRId64 "]}", q->range_lo, q->range_hi);
    else
        vw_sbuf_puts(sb, ",\"span_range\":null}");
}

static void w_question(vw_sbuf *sb, const vw_plan *p, size_t i) {
    const vw_qentry *e = &p->req->entries[i];
    vw_sbuf_puts(sb, "{\"id\":");
    w_str(sb, e->id.p, e->id.n);
    vw_sbuf_printf(sb, ",\"type\":%s,\"row\":", e->given_type);
    if (!e->valid) {
        vw_sbuf_puts(sb, "null,\"error\":\"invalid_question\",\"message\":");
        w_cstr(sb, e->error.msg);
        vw_sbuf_puts(sb, ",\"loc\":");
        vw_loc_write(sb, &e->error.loc);
        vw_sbuf_puts(sb, "}");
        return;
    }
    const vw_prow *row = &p->rows[p->row_of[i]];
    vw_sbuf_printf(sb, "%d,\"error\":", p->row_of[i]);
    if (row->fits)
        vw_sbuf_puts(sb, "null");
    else
        vw_sbuf_printf(sb,
                       "\"max_length_exceeded\",\"message\":\"the questions alone exceed the "
                       "input of %" PRId64 " tokens by %" PRId64 " tokens\"",
                       p->max_length, row->over);
    w_question_form(sb, &e->q);
}

static void w_row(vw_sbuf *sb, const vw_plan *p, const vw_prow *row) {
    vw_sbuf_puts(sb, "{\"questions\":[");
    for (size_t i = 0; i < row->n_entries; i++) {
        const vw_str *id = &p->req->entries[row->entries[i]].id;
        vw_sbuf_puts(sb, i ? "," : "");
        w_str(sb, id->p, id->n);
    }
    vw_sbuf_puts(sb, "],\"span\":");
    if (row->span >= 0)
        w_str(sb, p->req->entries[row->span].id.p, p->req->entries[row->span].id.n);
    else
        vw_sbuf_puts(sb, "null");
    vw_sbuf_printf(sb, ",\"fits\":%s,\"over\":%" PRId64 ",\"tokens\":%" PRId64 ",\"trees\":[",
                   row->fits ? "true" : "false", row->fits ? 0 : row->over, row->tokens);
    for (size_t t = 0; t < row->n_trees; t++)
        vw_sbuf_printf(sb, t ? ",%zu" : "%zu", row->tree0 + t);
    vw_sbuf_puts(sb, "]}");
}

static const vw_ppart *part_of(const vw_plan *p, vw_role role) {
    for (size_t i = 0; i < p->n_parts; i++)
        if (p->parts[i].role == role)
            return &p->parts[i];
    return NULL;
}

static void w_span(vw_sbuf *sb, const vw_plan *p, const vw_pspan *s) {
    const vw_question *q = &p->req->entries[s->entry].q;
    vw_sbuf_puts(sb, "{\"question\":");
    w_str(sb, q->id.p, q->id.n);
    vw_sbuf_printf(sb, ",\"row\":%zu,\"role\":", s->row);
    w_cstr(sb, vw_role_name(s->role));
    vw_sbuf_puts(sb, ",\"head\":");
    w_cstr(sb, vw_head_name(s->head));
    vw_sbuf_puts(sb, ",\"alias\":");
    if (s->alias)
        w_str(sb, q->options[0].name.p, q->options[0].name.n);
    else
        vw_sbuf_puts(sb, "null");
    vw_sbuf_puts(sb, ",\"labels\":");
    w_options(sb, s->labels, s->n_labels);
    const vw_ppart *part = part_of(p, s->role);
    vw_sbuf_printf(sb, ",\"part_tokens\":%" PRId64 ",\"words\":", s->part_tokens);
    w_pairs(sb, part->words.v, part->words.n / 2);
    vw_sbuf_printf(sb, ",\"windows\":%zu}", s->n_windows);
}

static void w_block(vw_sbuf *sb, const vw_plan *p, const vw_pblock *b) {
    vw_sbuf_puts(sb, "{\"question\":");
    w_str(sb, p->req->entries[b->entry].id.p, p->req->entries[b->entry].id.n);
    vw_sbuf_puts(sb, ",\"kind\":");
    w_cstr(sb, b->kind);
    vw_sbuf_puts(sb, ",\"ids\":");
    w_ints(sb, b->ids.v, b->ids.n);
    vw_sbuf_puts(sb, ",\"option_ends\":");
    w_ints(sb, b->option_ends.v, b->option_ends.n);
    vw_sbuf_printf(sb, ",\"query\":%" PRId32 ",\"label_ranges\":", b->query);
    w_pairs(sb, b->label_ranges.v, b->label_ranges.n / 2);
    vw_sbuf_puts(sb, ",\"word_positions\":");
    w_ints(sb, b->word_positions.v, b->word_positions.n);
    vw_sbuf_puts(sb, ",\"word_index\":");
    w_ints(sb, b->word_index.v, b->word_index.n);
    vw_sbuf_printf(sb, ",\"read\":%s}", b->read ? "true" : "false");
}

static void w_tree(vw_sbuf *sb, const vw_plan *p, const vw_ptree *t) {
    vw_sbuf_printf(sb, "{\"row\":%zu,\"window\":", t->row);
    if (t->window)
        vw_sbuf_printf(sb, "[%" PRId64 ",%" PRId64 "]", t->win_start, t->win_end);
    else
        vw_sbuf_puts(sb, "null");
    vw_sbuf_puts(sb, ",\"prefix\":");
    w_ints(sb, t->prefix.v, t->prefix.n);
    vw_sbuf_puts(sb, ",\"blocks\":[");
    for (size_t i = 0; i < t->n_blocks; i++) {
        vw_sbuf_puts(sb, i ? "," : "");
        w_block(sb, p, &t->blocks[i]);
    }
    vw_sbuf_puts(sb, "]}");
}

void vw_plan_write_json(vw_sbuf *sb, const vw_plan *p) {
    vw_sbuf_printf(sb, "{\"status\":200,\"max_length\":%" PRId64 ",\"questions\":[", p->max_length);
    for (size_t i = 0; i < p->req->n; i++) {
        vw_sbuf_puts(sb, i ? "," : "");
        w_question(sb, p, i);
    }
    vw_sbuf_puts(sb, "],\"rows\":[");
    for (size_t i = 0; i < p->n_rows; i++) {
        vw_sbuf_puts(sb, i ? "," : "");
        w_row(sb, p, &p->rows[i]);
    }
    vw_sbuf_puts(sb, "],\"spans\":[");
    for (size_t i = 0; i < p->n_spans; i++) {
        vw_sbuf_puts(sb, i ? "," : "");
        w_span(sb, p, &p->spans[i]);
    }
    vw_sbuf_puts(sb, "],\"trees\":[");
    for (size_t i = 0; i < p->n_trees; i++) {
        vw_sbuf_puts(sb, i ? "," : "");
        w_tree(sb, p, &p->trees[i]);
    }
    vw_sbuf_printf(sb, "],\"usage\":{\"input_tokens\":%" PRId64 "}}", p->input_tokens);
}

void vw_plan_write_rejection(vw_sbuf *sb, int status, const vw_errlist *detail) {
    vw_sbuf_printf(sb, "{\"status\":%d,\"detail\":", status);
    vw_errlist_write(sb, detail);
    vw_sbuf_puts(sb, "}");
}

static size_t block_readouts(const vw_pblock *b) {
    if (!b->read)
        return 0;
    if (strcmp(b->kind, "span"))
        return b->option_ends.n + 1;
    size_t n = b->word_positions.n;
    for (size_t l = 0; l + 1 < b->label_ranges.n; l += 2)
        n += (size_t)(b->label_ranges.v[l + 1] - b->label_ranges.v[l] + 1);
    return n;
}

static void fill_readouts(const vw_pblock *b, int32_t *r) {
    size_t k = 0;
    if (strcmp(b->kind, "span")) {
        for (size_t i = 0; i < b->option_ends.n; i++)
            r[k++] = b->option_ends.v[i];
        r[k] = b->query;
        return;
    }
    for (size_t l = 0; l + 1 < b->label_ranges.n; l += 2)
        for (int32_t x = b->label_ranges.v[l]; x <= b->label_ranges.v[l + 1]; x++)
            r[k++] = x;
    for (size_t i = 0; i < b->word_positions.n; i++)
        r[k++] = b->word_positions.v[i];
}

vw_status vw_plan_exec(const vw_plan *p, vw_plan_exec_out *out, vw_err *err) {
    memset(out, 0, sizeof *out);
    size_t n_blocks = 0, n_read = 0;
    for (size_t t = 0; t < p->n_trees; t++)
        for (size_t i = 0; i < p->trees[t].n_blocks; i++) {
            n_blocks++;
            n_read += block_readouts(&p->trees[t].blocks[i]);
        }
    out->trees = calloc(p->n_trees ? p->n_trees : 1, sizeof *out->trees);
    out->tree_of = calloc(p->n_trees ? p->n_trees : 1, sizeof *out->tree_of);
    out->blocks = calloc(n_blocks ? n_blocks : 1, sizeof *out->blocks);
    out->readouts = malloc((n_read ? n_read : 1) * sizeof *out->readouts);
    out->first_row = malloc((n_blocks ? n_blocks : 1) * sizeof *out->first_row);
    if (!out->trees || !out->tree_of || !out->blocks || !out->readouts || !out->first_row) {
        vw_plan_exec_free(out);
        return VW_FAIL(err, VW_ENOMEM, "oom", "executor trees");
    }
    size_t bi = 0, eb = 0, ro = 0, flat = 0;
    for (size_t t = 0; t < p->n_trees; t++) {
        const vw_ptree *pt = &p->trees[t];
        size_t first_block = eb;
        for (size_t i = 0; i < pt->n_blocks; i++, flat++) {
            const vw_pblock *b = &pt->blocks[i];
            size_t n = block_readouts(b);
            if (!n) {
                out->first_row[flat] = -1;
                continue;
            }
            fill_readouts(b, out->readouts + ro);
            out->blocks[eb++] = (vw_block){b->ids.v, b->ids.n, out->readouts + ro, n};
            out->first_row[flat] = (int64_t)out->n_rows;
            out->n_rows += n;
            ro += n;
        }
        if (eb == first_block)
            continue; /* nothing read: the tree need not run */
        out->tree_of[bi] = t;
        out->trees[bi++] = (vw_tree){
            pt->prefix.v, pt->prefix.n, NULL, 0, out->blocks + first_block, eb - first_block};
    }
    out->n_trees = bi;
    return VW_OK;
}

void vw_plan_exec_free(vw_plan_exec_out *out) {
    free(out->trees);
    free(out->tree_of);
    free(out->blocks);
    free(out->readouts);
    free(out->first_row);
    memset(out, 0, sizeof *out);
}
