/* plan.c — rows, part tokens and words, span routes, windows, the 413 rule
 * and usage (see plan.h). Owns the request -> trees orchestration; the
 * layout itself is render.c, the JSON and executor views are plan_out.c. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "windows.h"
#include "util/reserve.h"

#define HALU_LABEL "unsupported"

static void block_free(vw_pblock *b) {
    vw_ivec_free(&b->ids);
    vw_ivec_free(&b->option_ends);
    vw_ivec_free(&b->label_ranges);
    vw_ivec_free(&b->word_positions);
    vw_ivec_free(&b->word_index);
}

static void tree_free(vw_ptree *t) {
    vw_ivec_free(&t->prefix);
    for (size_t i = 0; i < t->n_blocks; i++)
        block_free(&t->blocks[i]);
    free(t->blocks);
    memset(t, 0, sizeof *t);
}

void vw_plan_free(vw_plan *p) {
    if (!p)
        return;
    for (size_t i = 0; i < p->n_parts; i++) {
        vw_ivec_free(&p->parts[i].ids);
        vw_ivec_free(&p->parts[i].words);
        vw_ivec_free(&p->parts[i].first);
    }
    for (size_t i = 0; i < p->n_rows; i++)
        free(p->rows[i].entries);
    free(p->rows);
    for (size_t i = 0; i < p->n_trees; i++)
        tree_free(&p->trees[i]);
    free(p->trees);
    free(p->spans);
    free(p->row_of);
    vw_request_free(p->req);
    free(p);
}

/* Scratch of one build: per-entry pieces and the tokenizer buffer. */
typedef struct build {
    const vw_renderer *r;
    const vw_admit_cfg *cfg;
    vw_plan *p;
    vw_qtoks *qt;    /* [req->n] pieces of valid questions */
    vw_route *route; /* [req->n] span routes */
    size_t cap_trees;
    vw_encoding scratch;
    vw_err *err;
} build;

static vw_status oom(build *b, const char *what) {
    return VW_FAIL(b->err, VW_ENOMEM, "oom", "plan: %s", what);
}

/* Tokenizes every part; words for the parts some span question reads. */
static vw_status encode_parts(build *b) {
    const vw_request *req = b->p->req;
    unsigned span_roles = 0;
    for (size_t i = 0; i < req->n; i++)
        if (req->entries[i].valid && req->entries[i].q.kind == VW_Q_SPAN)
            span_roles |= req->entries[i].q.roles;
    b->p->n_parts = req->state.n_parts;
    for (size_t i = 0; i < req->state.n_parts; i++) {
        const vw_part *part = &req->state.parts[i];
        vw_ppart *pp = &b->p->parts[i];
        pp->role = part->role;
        vw_status st = vw_render_encode(b->r, part->text, part->len, &pp->ids, &b->scratch, b->err);
        if (st)
            return st;
        if (!(span_roles & (1u << part->role)))
            continue;
        pp->has_words = true;
        int32_t *ranges = NULL;
        size_t n = 0;
        vw_words words;
        st = vw_words_split(vw_renderer_words(b->r), part->text, part->len, &ranges, &n, b->err);
        if (!st)
            st = vw_words_of(ranges, n, b->scratch.offsets, b->scratch.n, &words, b->err);
        free(ranges);
        if (st)
            return st;
        pp->words = (vw_ivec){words.offsets, 2 * words.n, 2 * words.n};
        pp->first = (vw_ivec){words.first, words.n, words.n};
    }
    return VW_OK;
}

static vw_status add_row(build *b, const size_t *entries, size_t n, int span) {
    vw_plan *p = b->p;
    vw_prow *rows = realloc(p->rows, (p->n_rows + 1) * sizeof *rows);
    if (!rows)
        return oom(b, "rows");
    p->rows = rows;
    vw_prow *row = &p->rows[p->n_rows];
    memset(row, 0, sizeof *row);
    row->entries = malloc((n ? n : 1) * sizeof *row->entries);
    if (!row->entries)
        return oom(b, "rows");
    memcpy(row->entries, entries, n * sizeof *entries);
    row->n_entries = n;
    row->span = span;
    p->n_rows++;
    return VW_OK;
}

/* Row 1: every non-span question, then the first span; each further span
 * its own row (§4). */
static vw_status make_rows(build *b) {
    const vw_request *req = b->p->req;
    size_t *first = malloc((req->n + 1) * sizeof *first), n = 0;
    if (!first)
        return oom(b, "rows");
    int span = -1;
    vw_status st = VW_OK;
    for (size_t i = 0; i < req->n; i++)
        if (req->entries[i].valid && req->entries[i].q.kind != VW_Q_SPAN)
            first[n++] = i;
    for (size_t i = 0; i < req->n && span < 0; i++)
        if (req->entries[i].valid && req->entries[i].q.kind == VW_Q_SPAN)
            span = (int)i;
    if (span >= 0)
        first[n++] = (size_t)span;
    if (n)
        st = add_row(b, first, n, span);
    for (size_t i = (size_t)(span + 1); span >= 0 && i < req->n && !st; i++) {
        if (req->entries[i].valid && req->entries[i].q.kind == VW_Q_SPAN)
            st = add_row(b, &i, 1, (int)i);
    }
    free(first);
    return st;
}

/* Pieces of every valid question; span questions are routed first (the alias
 * rendering replaces their labels). */
static vw_status question_pieces(build *b) {
    const vw_request *req = b->p->req;
    b->p->halu_label.name = (vw_str){(char *)HALU_LABEL, strlen(HALU_LABEL)};
    b->p->halu_label.desc = (vw_str){(char *)b->cfg->halu_desc, b->cfg->halu_desc_len};
    for (size_t i = 0; i < req->n; i++) {
        const vw_qentry *e = &req->entries[i];
        if (!e->valid)
            continue;
        const vw_option *labels = e->q.options;
        size_t n = e->q.n_options;
        if (e->q.kind == VW_Q_SPAN) {
            b->route[i] = vw_question_route(b->cfg, &e->q);
            if (b->route[i].alias) {
                labels = &b->p->halu_label;
                n = 1;
            }
        }
        vw_status st = vw_render_question(b->r, &e->q, labels, n, &b->qt[i], &b->scratch, b->err);
        if (st)
            return st;
    }
    return VW_OK;
}

static vw_status push_tree(build *b, vw_ptree *t) {
    vw_plan *p = b->p;
    if (vw_reserve((void **)&p->trees, &b->cap_trees, p->n_trees + 1, sizeof *p->trees))
        return oom(b, "trees");
    p->trees[p->n_trees++] = *t;
    memset(t, 0, sizeof *t);
    return VW_OK;
}

static void drop_trees_from(vw_plan *p, size_t from) {
    while (p->n_trees > from)
        tree_free(&p->trees[--p->n_trees]);
}

/* The parts of a row, each marked read when a question of the row reads it. */
static void row_parts(const build *b, const vw_prow *row, vw_row_part *parts, size_t *span_part) {
    const vw_request *req = b->p->req;
    unsigned read = 0;
    for (size_t i = 0; i < row->n_entries; i++)
        read |= req->entries[row->entries[i]].q.roles;
    vw_role span_role =
        row->span >= 0 ? vw_question_span_role(&req->entries[row->span].q) : VW_ROLE_USER;
    for (size_t i = 0; i < b->p->n_parts; i++) {
        const vw_ppart *pp = &b->p->parts[i];
        parts[i] = (vw_row_part){pp->role,    pp->ids.v,  pp->ids.n, (read >> pp->role) & 1u,
                                 pp->first.v, pp->first.n};
        if (row->span >= 0 && pp->role == span_role)
            *span_part = i;
    }
}

/* One window tree: the span question alone over parts whose target is the
 * token range [s, e) with the words whose first token lies in it (§7.4). */
static vw_status window_tree(build *b, size_t row_index, const vw_row_part *parts, size_t sp,
                             int64_t s, int64_t e, vw_row_out *out) {
    const vw_prow *row = &b->p->rows[row_index];
    const vw_row_part *t = &parts[sp];
    size_t w0 = 0, w1;
    while (w0 < t->n_words && t->first[w0] < s)
        w0++;
    for (w1 = w0; w1 < t->n_words && t->first[w1] < e;)
        w1++;
    int32_t *first = malloc((w1 - w0 + 1) * sizeof *first);
    if (!first)
        return oom(b, "window words");
    for (size_t w = w0; w < w1; w++)
        first[w - w0] = t->first[w] - (int32_t)s;
    vw_row_part wp[VW_N_ROLES];
    for (size_t i = 0; i < b->p->n_parts; i++) {
        wp[i] = parts[i];
        wp[i].read = i == sp;
    }
    wp[sp].ids = t->ids + s;
    wp[sp].n = (size_t)(e - s);
    wp[sp].first = first;
    wp[sp].n_words = w1 - w0;
    vw_row_in in = {wp, b->p->n_parts, NULL, NULL, 0, &b->qt[row->span], (size_t)row->span, sp};
    vw_ptree tree = {0};
    vw_status st = vw_render_row(b->r, &in, &tree, out, b->err);
    free(first);
    if (st || !out->fits) {
        tree_free(&tree);
        return st;
    }
    vw_pblock *blk = &tree.blocks[tree.n_blocks - 1];
    for (size_t i = 0; i < blk->word_index.n; i++)
        blk->word_index.v[i] += (int32_t)w0; /* global word index */
    tree.row = row_index;
    tree.window = true;
    tree.win_start = s;
    tree.win_end = e;
    st = push_tree(b, &tree);
    tree_free(&tree);
    return st;
}

static vw_status windows(build *b, size_t row_index, const vw_row_part *parts, size_t sp) {
    vw_prow *row = &b->p->rows[row_index];
    int64_t *win = NULL;
    size_t n = 0;
    vw_status st = vw_windows(parts[sp].first, parts[sp].n_words, (int64_t)parts[sp].n,
                              b->cfg->window, b->cfg->stride, &win, &n, b->err);
    for (size_t k = 0; k < n && !st && row->fits; k++) {
        vw_row_out out;
        st = window_tree(b, row_index, parts, sp, win[2 * k], win[2 * k + 1], &out);
        if (!st && !out.fits) {
            row->fits = false; /* a window that cannot fit fails its row */
            row->over = out.over;
        }
        row->tokens += out.tokens;
    }
    free(win);
    return st;
}

static vw_status render_rows(build *b) {
    vw_plan *p = b->p;
    for (size_t ri = 0; ri < p->n_rows; ri++) {
        vw_prow *row = &p->rows[ri];
        vw_row_part parts[VW_N_ROLES];
        size_t sp = 0, nq = 0;
        row_parts(b, row, parts, &sp);
        const vw_qtoks *qs[512];
        size_t ents[512];
        const vw_qtoks **qp = row->n_entries <= 512 ? qs : malloc(row->n_entries * sizeof *qp);
        size_t *ep = row->n_entries <= 512 ? ents : malloc(row->n_entries * sizeof *ep);
        if (!qp || !ep) {
            if (qp != qs)
                free(qp);
            if (ep != ents)
                free(ep);
            return oom(b, "row questions");
        }
        for (size_t i = 0; i < row->n_entries; i++)
            if ((int)row->entries[i] != row->span) {
                qp[nq] = &b->qt[row->entries[i]];
                ep[nq++] = row->entries[i];
            }
        vw_row_in in = {parts,
                        p->n_parts,
                        qp,
                        ep,
                        nq,
                        row->span >= 0 ? &b->qt[row->span] : NULL,
                        row->span >= 0 ? (size_t)row->span : 0,
                        sp};
        vw_ptree tree = {0};
        vw_row_out out;
        size_t tree0 = p->n_trees;
        vw_status st = vw_render_row(b->r, &in, &tree, &out, b->err);
        if (qp != qs)
            free(qp);
        if (ep != ents)
            free(ep);
        row->fits = out.fits;
        row->over = out.over;
        row->tokens = out.tokens;
        tree.row = ri;
        if (!st && out.fits)
            st = push_tree(b, &tree);
        tree_free(&tree);
        if (!st && out.fits && row->span >= 0 && !out.repeat)
            st = windows(b, ri, parts, sp);
        if (st)
            return st;
        if (!row->fits) {
            drop_trees_from(p, tree0);
            row->tokens = 0;
        }
        row->tree0 = tree0;
        row->n_trees = p->n_trees - tree0;
    }
    return VW_OK;
}

static vw_status record_spans(build *b) {
    vw_plan *p = b->p;
    const vw_request *req = p->req;
    p->spans = calloc(p->n_rows ? p->n_rows : 1, sizeof *p->spans);
    p->row_of = malloc((req->n ? req->n : 1) * sizeof *p->row_of);
    if (!p->spans || !p->row_of)
        return oom(b, "spans");
    for (size_t i = 0; i < req->n; i++)
        p->row_of[i] = -1;
    for (size_t ri = 0; ri < p->n_rows; ri++) {
        const vw_prow *row = &p->rows[ri];
        for (size_t i = 0; i < row->n_entries; i++)
            p->row_of[row->entries[i]] = (int)ri;
        if (row->span < 0)
            continue;
        const vw_question *q = &req->entries[row->span].q;
        vw_pspan *s = &p->spans[p->n_spans++];
        s->entry = (size_t)row->span;
        s->row = ri;
        s->role = vw_question_span_role(q);
        s->head = b->route[row->span].head;
        s->alias = b->route[row->span].alias;
        s->labels = s->alias ? &p->halu_label : q->options;
        s->n_labels = s->alias ? 1 : q->n_options;
        for (size_t k = 0; k < p->n_parts; k++)
            if (p->parts[k].role == s->role)
                s->part_tokens = (int64_t)p->parts[k].ids.n;
        s->n_windows = row->fits && row->n_trees ? row->n_trees - 1 : 0;
    }
    return VW_OK;
}

/* Decision 1: 413 only when no row fits, one triple per row. */
static vw_status too_long(const vw_plan *p, int *status, vw_errlist *detail) {
    for (size_t i = 0; i < p->n_rows; i++)
        if (p->rows[i].fits)
            return VW_OK;
    *status = 413;
    for (size_t i = 0; i < p->n_rows; i++) {
        const vw_qentry *e = &p->req->entries[p->rows[i].entries[0]];
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the questions alone exceed the input of %lld tokens by %lld tokens",
                 (long long)p->max_length, (long long)p->rows[i].over);
        vw_loc loc = {0};
        vw_status st = vw_loc_add_str(&loc, "body", 4);
        if (!st)
            st = vw_loc_add_str(&loc, "questions", 9);
        if (!st)
            st = vw_loc_add_str(&loc, e->id.p, e->id.n);
        if (!st)
            st = vw_errlist_add(detail, &loc, msg, VW_ET_TOO_LONG);
        vw_loc_free(&loc);
        if (st)
            return st;
    }
    return VW_OK;
}

int64_t vw_plan_cost(const vw_plan *p) {
    int64_t n = 0;
    for (size_t t = 0; t < p->n_trees; t++) {
        const vw_ptree *tr = &p->trees[t];
        int64_t blocks = 0;
        for (size_t b = 0; b < tr->n_blocks; b++)
            if (tr->blocks[b].read)
                blocks += (int64_t)tr->blocks[b].ids.n;
        if (blocks)
            n += (int64_t)tr->prefix.n + blocks;
    }
    return n;
}

/* Decision 9: a plan that would run more model tokens than the limit is
 * refused whole (a long document's windows are one answer). */
static vw_status too_costly(const vw_plan *p, int64_t limit, int *status, vw_errlist *detail) {
    int64_t cost = vw_plan_cost(p);
    if (limit <= 0 || cost <= limit)
        return VW_OK;
    *status = 413;
    char msg[160];
    snprintf(msg, sizeof msg,
             "the request would run %lld tokens through the model, more than the limit of %lld",
             (long long)cost, (long long)limit);
    vw_loc loc = {0};
    vw_status st = vw_loc_add_str(&loc, "body", 4);
    if (!st)
        st = vw_errlist_add(detail, &loc, msg, VW_ET_TOO_LONG);
    vw_loc_free(&loc);
    return st;
}

vw_status vw_plan_build(const vw_renderer *r, vw_request *req, vw_plan **out, int *status,
                        vw_errlist *detail, vw_err *err) {
    *out = NULL;
    *status = 200;
    build b = {.r = r, .cfg = vw_renderer_cfg(r), .err = err};
    vw_status st = VW_OK;
    b.p = calloc(1, sizeof *b.p);
    if (!b.p) {
        vw_request_free(req);
        return oom(&b, "plan");
    }
    b.p->req = req;
    b.p->max_length = b.cfg->max_length;
    b.qt = calloc(req->n ? req->n : 1, sizeof *b.qt);
    b.route = calloc(req->n ? req->n : 1, sizeof *b.route);
    if (!b.qt || !b.route) {
        st = oom(&b, "pieces");
        goto done;
    }
    if ((st = encode_parts(&b)) || (st = question_pieces(&b)) || (st = make_rows(&b)) ||
        (st = render_rows(&b)) || (st = record_spans(&b)))
        goto done;
    for (size_t i = 0; i < b.p->n_rows; i++)
        if (b.p->rows[i].fits)
            b.p->input_tokens += b.p->rows[i].tokens;
    if ((st = too_long(b.p, status, detail)) || *status != 200)
        goto done;
    st = too_costly(b.p, b.cfg->max_request_tokens, status, detail);
done:
    for (size_t i = 0; b.qt && i < req->n; i++)
        vw_qtoks_free(&b.qt[i]);
    free(b.qt);
    free(b.route);
    vw_render_scratch_free(r, &b.scratch);
    if (st == VW_OK && *status == 200)
        *out = b.p;
    else
        vw_plan_free(b.p);
    return st;
}

vw_status vw_plan_request(const vw_renderer *r, const char *body, size_t len, vw_plan **out,
                          int *status, vw_errlist *detail, vw_err *err) {
    *out = NULL;
    vw_request *req = NULL;
    vw_status st = vw_request_admit(vw_renderer_cfg(r), body, len, &req, status, detail, err);
    if (st != VW_OK || !req)
        return st;
    return vw_plan_build(r, req, out, status, detail, err);
}

vw_status vw_plan_request_doc(const vw_renderer *r, size_t len, const vw_json_doc *doc,
                              vw_plan **out, int *status, vw_errlist *detail, vw_err *err) {
    *out = NULL;
    vw_request *req = NULL;
    vw_status st = vw_request_admit_doc(vw_renderer_cfg(r), len, doc, &req, status, detail, err);
    if (st != VW_OK || !req)
        return st;
    return vw_plan_build(r, req, out, status, detail, err);
}
