/* render.c — pieces, their tokens and one row's tree (see render.h). Owns the
 * layout strings of §5.1 and the cost model of §7.3; never decides rows or
 * windows (plan.c). */
#include "render.h"

#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "fit.h"
#include "piece_cache.h"

#define PARTS_HEAD "Context:\n"
#define SEGMENT_CLOSE "\n</segment>\n"
#define TEXT_HEAD "\n\nText:\n"
#define SUFFIX_SINGLE                                                                              \
    "\n\nSelect the single option best supported by the context and instructions.\nDecision:"
#define SUFFIX_SET "\n\nSelect every option supported by the context and instructions.\nDecision:"
#define SUFFIX_SPAN "\n\nMark every span of the target text that carries one of the labels.\nSpans:"
#define ABSTAIN_KEY "[ABS]"
#define ABSTAIN_DESC "None of the shown options applies."

struct vw_renderer {
    const vw_admit_cfg *cfg;
    vw_encoder enc;
    vw_word_re *words;
    vw_piece_cache *pieces; /* ids of heads and option/label blocks across requests */
    vw_ivec parts_head, segment_close, text_head, suffix_single, suffix_set, suffix_span, abstain;
    vw_ivec segment_open[VW_N_ROLES];
};

static vw_status tok_encode(void *ctx, const char *text, size_t len, vw_encoding *out,
                            vw_err *err) {
    return vw_tok_encode(ctx, text, len, 0, out, err);
}

static void tok_release(void *ctx, vw_encoding *enc) {
    (void)ctx;
    vw_encoding_free(enc);
}

vw_encoder vw_encoder_tok(vw_tokenizer *tok) {
    return (vw_encoder){tok_encode, tok_release, tok};
}

vw_status vw_render_encode(const vw_renderer *r, const char *text, size_t len, vw_ivec *out,
                           vw_encoding *scratch, vw_err *err) {
    vw_status st = r->enc.encode(r->enc.ctx, text, len, scratch, err);
    if (st != VW_OK)
        return st;
    if (vw_ivec_append(out, scratch->ids, scratch->n))
        return VW_FAIL(err, VW_ENOMEM, "oom", "token ids");
    return VW_OK;
}

void vw_render_scratch_free(const vw_renderer *r, vw_encoding *scratch) {
    if (r && r->enc.release)
        r->enc.release(r->enc.ctx, scratch);
}

/* A layout piece: from the cache, else tokenized and kept. */
static vw_status piece_ids(const vw_renderer *r, const char *text, size_t len, vw_ivec *out,
                           vw_encoding *scratch, vw_err *err) {
    if (vw_piece_cache_get(r->pieces, text, len, out))
        return VW_OK;
    vw_status st = r->enc.encode(r->enc.ctx, text, len, scratch, err);
    if (st != VW_OK)
        return st;
    if (vw_ivec_append(out, scratch->ids, scratch->n))
        return VW_FAIL(err, VW_ENOMEM, "oom", "token ids");
    vw_piece_cache_put(r->pieces, text, len, scratch->ids, scratch->n);
    return VW_OK;
}

static vw_status encode_str(const vw_renderer *r, const char *s, vw_ivec *out, vw_encoding *scratch,
                            vw_err *err) {
    return vw_render_encode(r, s, strlen(s), out, scratch, err);
}

/* "\n<TAG>\n" + canonical({"key": NAME, "description": DESC}) + "\n</TAG>" */
static void option_text(vw_sbuf *sb, const char *tag, const char *name, size_t nn, const char *desc,
                        size_t dn) {
    vw_sbuf_printf(sb, "\n<%s>\n{\"description\":", tag);
    vw_canon_string(sb, desc, dn);
    vw_sbuf_puts(sb, ",\"key\":");
    vw_canon_string(sb, name, nn);
    vw_sbuf_printf(sb, "}\n</%s>", tag);
}

vw_status vw_renderer_new(const vw_admit_cfg *cfg, vw_encoder enc, vw_renderer **out, vw_err *err) {
    *out = NULL;
    vw_renderer *r = calloc(1, sizeof *r);
    if (!r)
        return VW_FAIL(err, VW_ENOMEM, "oom", "renderer");
    r->cfg = cfg;
    r->enc = enc;
    vw_encoding scratch = {0};
    vw_sbuf sb = {0};
    vw_status st = vw_word_re_new(&r->words, err);
    if (!st && vw_piece_cache_new(4096, &r->pieces))
        st = VW_FAIL(err, VW_ENOMEM, "oom", "piece cache");
    if (!st)
        st = encode_str(r, PARTS_HEAD, &r->parts_head, &scratch, err);
    if (!st)
        st = encode_str(r, SEGMENT_CLOSE, &r->segment_close, &scratch, err);
    if (!st)
        st = encode_str(r, TEXT_HEAD, &r->text_head, &scratch, err);
    if (!st)
        st = encode_str(r, SUFFIX_SINGLE, &r->suffix_single, &scratch, err);
    if (!st)
        st = encode_str(r, SUFFIX_SET, &r->suffix_set, &scratch, err);
    if (!st)
        st = encode_str(r, SUFFIX_SPAN, &r->suffix_span, &scratch, err);
    for (int role = 0; role < VW_N_ROLES && !st; role++) {
        vw_sbuf_reset(&sb);
        vw_sbuf_printf(&sb, "<segment role=\"%s\">\n", vw_role_name((vw_role)role));
        st = sb.oom ? VW_ENOMEM : encode_str(r, sb.p, &r->segment_open[role], &scratch, err);
    }
    if (!st) {
        vw_sbuf_reset(&sb);
        option_text(&sb, "option", ABSTAIN_KEY, strlen(ABSTAIN_KEY), ABSTAIN_DESC,
                    strlen(ABSTAIN_DESC));
        st = sb.oom ? VW_ENOMEM : vw_render_encode(r, sb.p, sb.len, &r->abstain, &scratch, err);
    }
    vw_sbuf_free(&sb);
    if (enc.release)
        enc.release(enc.ctx, &scratch);
    if (st != VW_OK) {
        vw_renderer_free(r);
        return st;
    }
    *out = r;
    return VW_OK;
}

void vw_renderer_free(vw_renderer *r) {
    if (!r)
        return;
    vw_word_re_free(r->words);
    vw_piece_cache_free(r->pieces);
    vw_ivec *all[] = {&r->parts_head,      &r->segment_close,  &r->text_head, &r->suffix_single,
                      &r->suffix_set,      &r->suffix_span,    &r->abstain,   &r->segment_open[0],
                      &r->segment_open[1], &r->segment_open[2]};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        vw_ivec_free(all[i]);
    free(r);
}

const vw_admit_cfg *vw_renderer_cfg(const vw_renderer *r) {
    return r->cfg;
}

const vw_word_re *vw_renderer_words(const vw_renderer *r) {
    return r->words;
}

void vw_qtoks_free(vw_qtoks *t) {
    vw_ivec_free(&t->head);
    for (size_t i = 0; i < t->n_opts; i++)
        vw_ivec_free(&t->opts[i]);
    free(t->opts);
    memset(t, 0, sizeof *t);
}

/* B0 / S0: "\n\nTask type: T\nTarget: R1, R2\nQuestion:\nTEXT\nOptions:" */
static void head_text(vw_sbuf *sb, const vw_question *q) {
    vw_sbuf_printf(sb, "\n\nTask type: %s\nTarget: ", vw_qkind_engine(q->kind));
    bool first = true;
    for (int role = 0; role < VW_N_ROLES; role++) {
        if (!(q->roles & (1u << role)))
            continue;
        vw_sbuf_printf(sb, "%s%s", first ? "" : ", ", vw_role_name((vw_role)role));
        first = false;
    }
    vw_sbuf_puts(sb, "\nQuestion:\n");
    vw_sbuf_put(sb, q->text.p, q->text.n);
    vw_sbuf_puts(sb, q->kind == VW_Q_SPAN ? "\nLabels:" : "\nOptions:");
}

vw_status vw_render_question(const vw_renderer *r, const vw_question *q, const vw_option *labels,
                             size_t n_labels, vw_qtoks *out, vw_encoding *scratch, vw_err *err) {
    memset(out, 0, sizeof *out);
    out->span = q->kind == VW_Q_SPAN;
    out->kind = vw_qkind_engine(q->kind);
    vw_sbuf sb = {0};
    vw_status st = VW_OK;
    head_text(&sb, q);
    if (sb.oom || !(out->opts = calloc(n_labels ? n_labels : 1, sizeof *out->opts))) {
        st = VW_FAIL(err, VW_ENOMEM, "oom", "question pieces");
        goto done;
    }
    if ((st = piece_ids(r, sb.p, sb.len, &out->head, scratch, err)))
        goto done;
    int64_t opt_cost = 0;
    for (size_t i = 0; i < n_labels; i++) {
        vw_sbuf_reset(&sb);
        option_text(&sb, out->span ? "label" : "option", labels[i].name.p, labels[i].name.n,
                    labels[i].desc.p, labels[i].desc.n);
        if (sb.oom) {
            st = VW_FAIL(err, VW_ENOMEM, "oom", "option piece");
            goto done;
        }
        if ((st = piece_ids(r, sb.p, sb.len, &out->opts[i], scratch, err)))
            goto done;
        out->n_opts++;
        opt_cost += 1 + (int64_t)out->opts[i].n;
    }
    if (out->span) {
        out->suffix = &r->suffix_span;
        out->cost = opt_cost; /* label costs: 1 + len(S1_j) */
        goto done;
    }
    out->suffix = q->kind == VW_Q_SET ? &r->suffix_set : &r->suffix_single;
    out->abstain = q->abstain ? &r->abstain : NULL;
    /* One phantom token per option and for the abstain option (§7.3). */
    out->cost = 1 + (int64_t)out->head.n + (int64_t)out->suffix->n + opt_cost +
                (out->abstain ? (int64_t)out->abstain->n + 1 : 0);
done:
    vw_sbuf_free(&sb);
    if (st != VW_OK)
        vw_qtoks_free(out);
    return st;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

/* §7.3: tokens outside the parts and the questions, and whether the span
 * target is repeated. */
static int64_t overhead(const vw_renderer *r, const vw_row_in *in, bool *repeat) {
    int64_t o = (int64_t)r->parts_head.n;
    for (size_t i = 0; i < in->n_parts; i++)
        o += (int64_t)(r->segment_open[in->parts[i].role].n + r->segment_close.n);
    *repeat = false;
    if (!in->span)
        return o;
    o += (int64_t)(in->span->head.n + in->span->suffix->n);
    const vw_row_part *t = &in->parts[in->span_part];
    int64_t target = (int64_t)t->n;
    *repeat = target <= r->cfg->hybrid_rmax;
    if (*repeat) {
        o += (int64_t)(r->text_head.n + r->segment_open[t->role].n + r->segment_close.n);
        /* room for the repeated copy, from the uncut length */
        int64_t room = max64(0, r->cfg->max_length - o) / 2;
        o += target < room ? target : room;
    }
    return o;
}

static vw_status question_block(const vw_qtoks *q, size_t entry, const char *kind, vw_pblock *b) {
    memset(b, 0, sizeof *b);
    b->entry = entry;
    b->kind = kind;
    b->read = true;
    vw_status st = vw_ivec_append(&b->ids, q->head.v, q->head.n);
    for (size_t i = 0; i < q->n_opts && !st; i++) {
        st = vw_ivec_append(&b->ids, q->opts[i].v, q->opts[i].n);
        if (!st)
            st = vw_ivec_push(&b->option_ends, (int32_t)b->ids.n - 1);
    }
    if (!st && q->abstain) {
        st = vw_ivec_append(&b->ids, q->abstain->v, q->abstain->n);
        if (!st)
            st = vw_ivec_push(&b->option_ends, (int32_t)b->ids.n - 1);
    }
    if (!st)
        st = vw_ivec_append(&b->ids, q->suffix->v, q->suffix->n);
    b->query = (int32_t)b->ids.n - 1;
    return st;
}

static vw_status span_block(const vw_renderer *r, const vw_row_in *in, int64_t kept, bool repeat,
                            vw_pblock *b) {
    const vw_qtoks *q = in->span;
    const vw_row_part *t = &in->parts[in->span_part];
    memset(b, 0, sizeof *b);
    b->entry = in->span_entry;
    b->kind = "span";
    b->read = repeat;
    vw_status st = vw_ivec_append(&b->ids, q->head.v, q->head.n);
    for (size_t i = 0; i < q->n_opts && !st; i++) {
        st = vw_ivec_push(&b->label_ranges, (int32_t)b->ids.n);
        if (!st)
            st = vw_ivec_append(&b->ids, q->opts[i].v, q->opts[i].n);
        if (!st)
            st = vw_ivec_push(&b->label_ranges, (int32_t)b->ids.n - 1);
    }
    if (!st && repeat) {
        st = vw_ivec_append(&b->ids, r->text_head.v, r->text_head.n);
        if (!st)
            st = vw_ivec_append(&b->ids, r->segment_open[t->role].v, r->segment_open[t->role].n);
        int32_t at = (int32_t)b->ids.n;
        for (size_t w = 0; w < t->n_words && !st && t->first[w] < kept; w++) {
            st = vw_ivec_push(&b->word_positions, at + t->first[w]);
            if (!st)
                st = vw_ivec_push(&b->word_index, (int32_t)w);
        }
        if (!st)
            st = vw_ivec_append(&b->ids, t->ids, (size_t)kept);
        if (!st)
            st = vw_ivec_append(&b->ids, r->segment_close.v, r->segment_close.n);
    }
    if (!st)
        st = vw_ivec_append(&b->ids, q->suffix->v, q->suffix->n);
    b->query = (int32_t)b->ids.n - 1;
    return st;
}

static vw_status build_tree(const vw_renderer *r, const vw_row_in *in, const int64_t *kept,
                            bool repeat, vw_ptree *tree) {
    size_t nb = in->n_qs + (in->span ? 1 : 0);
    tree->blocks = calloc(nb ? nb : 1, sizeof *tree->blocks);
    if (!tree->blocks)
        return VW_ENOMEM;
    vw_status st = vw_ivec_append(&tree->prefix, r->parts_head.v, r->parts_head.n);
    for (size_t i = 0; i < in->n_parts && !st; i++) {
        const vw_ivec *open = &r->segment_open[in->parts[i].role];
        st = vw_ivec_append(&tree->prefix, open->v, open->n);
        if (!st)
            st = vw_ivec_append(&tree->prefix, in->parts[i].ids, (size_t)kept[i]);
        if (!st)
            st = vw_ivec_append(&tree->prefix, r->segment_close.v, r->segment_close.n);
    }
    for (size_t i = 0; i < in->n_qs && !st; i++) {
        st = question_block(in->qs[i], in->entries[i], in->qs[i]->kind,
                            &tree->blocks[tree->n_blocks]);
        tree->n_blocks++;
    }
    if (!st && in->span) {
        st = span_block(r, in, kept[in->span_part], repeat, &tree->blocks[tree->n_blocks]);
        tree->n_blocks++;
    }
    return st;
}

vw_status vw_render_row(const vw_renderer *r, const vw_row_in *in, vw_ptree *tree, vw_row_out *out,
                        vw_err *err) {
    memset(out, 0, sizeof *out);
    int64_t kept[VW_N_ROLES];
    bool read[VW_N_ROLES];
    int shrink = -1;
    for (size_t i = 0; i < in->n_parts; i++) {
        kept[i] = (int64_t)in->parts[i].n;
        read[i] = in->parts[i].read;
        if (!read[i] && shrink < 0)
            shrink = (int)i;
    }
    int64_t schema = in->span ? in->span->cost : 0;
    for (size_t i = 0; i < in->n_qs; i++)
        schema += in->qs[i]->cost;
    int64_t o = overhead(r, in, &out->repeat);
    int64_t budget = max64(VW_FIT_FLOOR, r->cfg->max_length - o);
    vw_fit_result fr = vw_fit(schema, kept, read, in->n_parts, budget, shrink);
    if (!fr.fits) {
        out->over = fr.over;
        return VW_OK;
    }
    out->fits = true;
    vw_status st = build_tree(r, in, kept, out->repeat, tree);
    if (st != VW_OK)
        return VW_FAIL(err, VW_ENOMEM, "oom", "rendering a row");
    out->tokens = (int64_t)tree->prefix.n;
    for (size_t i = 0; i < tree->n_blocks; i++)
        out->tokens += (int64_t)tree->blocks[i].ids.n;
    return VW_OK;
}
