/* engine.c — a loaded package: plan -> executor -> heads -> answers -> envelope
 * (see engine.h). This file owns loading and the batch loop; the JSON of the
 * envelope is envelope.c's. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers/answers.h"
#include "model/backbone_cpu.h"
#include "answers/calibration.h"
#include "answers/envelope.h"
#include "answers/heads.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"

struct vw_engine {
    vw_bundle *bundle;
    vw_tokenizer *tok;
    vw_admit_cfg *acfg;
    vw_renderer *rend;
    vw_cal *cal;
    vw_executor *ex;
    vw_cand_head cand;
    vw_span_head router, broad;
    bool has_broad;
    bool noul_calibration;
    vw_tensor_f32 *tensors; /* FP32 head weights the heads point into */
    size_t n_tensors, cap_tensors;
    char model[256];
};

/* ---- loading -------------------------------------------------------------- */

/* vw_tensor_lookup over the bundle: keeps every FP32 copy alive in the engine. */
static vw_status lookup_tensor(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    vw_engine *e = ctx;
    if (e->n_tensors == e->cap_tensors) {
        size_t cap = e->cap_tensors ? 2 * e->cap_tensors : 32;
        vw_tensor_f32 *t = realloc(e->tensors, cap * sizeof *t);
        if (!t)
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "head tensor table");
        e->tensors = t;
        e->cap_tensors = cap;
    }
    vw_tensor_f32 *t = &e->tensors[e->n_tensors];
    vw_status st = vw_bundle_tensor_f32(e->bundle, name, t, err);
    if (st != VW_OK)
        return st;
    e->n_tensors++;
    memset(out, 0, sizeof *out);
    out->data = t->data;
    out->ndim = (size_t)t->ndim;
    for (int i = 0; i < t->ndim && i < 4; i++)
        out->shape[i] = t->shape[i];
    return VW_OK;
}

/* Admission's configuration from the bundle's verified config.json and
 * calibration.json bytes (not re-read from disk). */
static vw_status admit_cfg_of(const vw_bundle *b, vw_admit_cfg **out, vw_err *err) {
    size_t config_len, cal_len;
    const char *config = vw_bundle_config_json(b, &config_len);
    const char *cal = vw_bundle_calibration_json(b, &cal_len);
    return vw_admit_cfg_parse(config, config_len, cal, cal_len, vw_bundle_has_broad_head(b) != 0,
                              out, err);
}

static void set_model_name(vw_engine *e, const char *dir) {
    const json_t *cfg = vw_bundle_config(e->bundle);
    const char *name = json_string_value(json_object_get(cfg, "model_name"));
    const char *rev = json_string_value(json_object_get(cfg, "revision"));
    if (!name) {
        const char *slash = strrchr(dir, '/');
        name = slash && slash[1] ? slash + 1 : dir;
    }
    /* Without a recorded revision, the first 12 hex digits of the verified
     * digest of config.json identify what was loaded. */
    char digest[16];
    if (!rev) {
        snprintf(digest, sizeof digest, "%.12s", vw_bundle_config_sha256(e->bundle));
        rev = digest;
    }
    snprintf(e->model, sizeof e->model, "%s@%s", name, rev);
}

vw_status vw_engine_open(const char *dir, const vw_engine_opts *opts, vw_engine **out,
                         vw_err *err) {
    *out = NULL;
    vw_engine *e = calloc(1, sizeof *e);
    if (!e)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "engine");
    vw_status st = vw_bundle_open(dir, &e->bundle, err);
    size_t tok_len = 0;
    const char *tok_json = st ? NULL : vw_bundle_tokenizer_json(e->bundle, &tok_len);
    if (st == VW_OK)
        st = vw_tok_load_json(tok_json, tok_len, &e->tok, err);
    if (st == VW_OK)
        st = admit_cfg_of(e->bundle, &e->acfg, err);
    if (st == VW_OK)
        st = vw_renderer_new(e->acfg, vw_encoder_tok(e->tok), &e->rend, err);
    if (st == VW_OK)
        st = vw_cal_from_json(vw_bundle_calibration(e->bundle), &e->cal, err);
    if (st == VW_OK)
        st = vw_cand_head_init(&e->cand, lookup_tensor, e, "head.", err);
    if (st == VW_OK)
        st = vw_span_head_init(&e->router, lookup_tensor, e, "span2.", err);
    /* Decision 3: a broad head needs the file and a non-empty calibration block. */
    e->has_broad = st == VW_OK && e->acfg->broad && vw_bundle_has_broad_head(e->bundle);
    if (e->has_broad)
        st = vw_span_head_init(&e->broad, lookup_tensor, e, "span_broad.", err);
    if (st == VW_OK) {
        int nc = opts ? opts->noul_calibration : -1;
        e->noul_calibration = nc < 0 ? vw_cal_noul_default(e->cal) : nc != 0;
        set_model_name(e, dir);
        if (opts && opts->make_executor)
            st = opts->make_executor(e->bundle, opts->make_ctx, &e->ex, err);
        else
            st = vw_backbone_cpu_new(e->bundle, &e->ex, err);
    }
    if (st == VW_OK && e->ex->hidden != e->cand.hidden)
        st = VW_FAIL(err, VW_EINVAL, "bad_shape",
                     "%s: head width %zu differs from the backbone's %zu", dir, e->cand.hidden,
                     e->ex->hidden);
    if (st != VW_OK) {
        vw_engine_free(e);
        return st;
    }
    *out = e;
    return VW_OK;
}

void vw_engine_free(vw_engine *e) {
    if (!e)
        return;
    vw_executor_free(e->ex);
    for (size_t i = 0; i < e->n_tensors; i++)
        vw_tensor_f32_free(&e->tensors[i]);
    free(e->tensors);
    vw_cal_free(e->cal);
    vw_renderer_free(e->rend);
    vw_admit_cfg_free(e->acfg);
    vw_tok_free(e->tok);
    vw_bundle_free(e->bundle);
    free(e);
}

const char *vw_engine_model(const vw_engine *e) {
    return e->model;
}

const char *vw_engine_device(const vw_engine *e) {
    return e->ex && e->ex->ops ? e->ex->ops->name : "none";
}

const vw_renderer *vw_engine_renderer(const vw_engine *e) {
    return e->rend;
}

vw_status vw_engine_plan(const vw_engine *e, const char *body, size_t len, vw_plan **plan,
                         int *status, vw_errlist *detail, vw_err *err) {
    return vw_plan_request(e->rend, body, len, plan, status, detail, err);
}

vw_status vw_engine_plan_doc(const vw_engine *e, size_t len, const vw_json_doc *doc, vw_plan **plan,
                             int *status, vw_errlist *detail, vw_err *err) {
    return vw_plan_request_doc(e->rend, len, doc, plan, status, detail, err);
}

int64_t vw_engine_plan_cost(const vw_plan *p) {
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

/* ---- answering ------------------------------------------------------------ */

/* Where one executed plan block's rows are. */
typedef struct block_ref {
    const vw_ptree *tree;
    const vw_pblock *block;
    const float *rows; /* its first output row */
} block_ref;

/* The executed blocks of one entry, in plan order (one for non-span questions
 * and unwindowed spans; one per window otherwise). */
static size_t entry_blocks(const vw_plan *p, const vw_plan_exec_out *x, const float *rows,
                           size_t hidden, size_t entry, block_ref *refs, size_t cap) {
    size_t k = 0, n = 0;
    for (size_t t = 0; t < p->n_trees; t++)
        for (size_t b = 0; b < p->trees[t].n_blocks; b++, k++) {
            const vw_pblock *bl = &p->trees[t].blocks[b];
            if (bl->entry != entry || x->first_row[k] < 0)
                continue;
            if (n < cap)
                refs[n] = (block_ref){&p->trees[t], bl, rows + (size_t)x->first_row[k] * hidden};
            n++;
        }
    return n;
}

static vw_status answer_candidates(vw_engine *e, const vw_question *q, const block_ref *ref,
                                   vw_answer *out, vw_err *err) {
    size_t m = ref->block->option_ends.n, H = e->ex->hidden;
    float *z = malloc((m ? m : 1) * sizeof *z);
    double *zd = malloc((m ? m : 1) * sizeof *zd);
    vw_status st = z && zd ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "logits");
    if (st == VW_OK)
        st = vw_cand_head_logits(&e->cand, ref->rows, m, ref->rows + m * H, q->kind == VW_Q_SET, z,
                                 err);
    if (st == VW_OK) {
        vw_logits_widen(z, m, zd);
        switch (q->kind) {
        case VW_Q_CHOICE:
            st = vw_answer_choice(e->cal, zd, m, q->n_options, q->abstain, out, err);
            break;
        case VW_Q_NOUL:
            st = vw_answer_noul(e->cal, zd, m, q->abstain, e->noul_calibration, out, err);
            break;
        case VW_Q_SCORE:
            st = vw_answer_score(e->cal, zd, m, q->n_options, out, err);
            break;
        case VW_Q_SET:
            st = vw_answer_set(e->cal, zd, m, q->n_options, q->key.p,
                               q->has_threshold ? &q->threshold : NULL, out, err);
            break;
        case VW_Q_SPAN:
            st = VW_FAIL(err, VW_EINVAL, "bad_plan", "span question in a candidate block");
            break;
        }
    }
    free(z);
    free(zd);
    return st;
}

/* Span-head logits of one executed span block: z [n_words x n_labels]. */
static vw_status span_block_logits(vw_engine *e, const vw_span_head *head, const block_ref *ref,
                                   size_t n_labels, float *z, vw_err *err) {
    const vw_pblock *bl = ref->block;
    size_t H = e->ex->hidden;
    if (bl->label_ranges.n != 2 * n_labels)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span block has %zu label ranges, plan %zu", bl->label_ranges.n / 2,
                       n_labels);
    int32_t *starts = malloc(n_labels * sizeof *starts), *ends = malloc(n_labels * sizeof *ends);
    float *labels = malloc(n_labels * H * sizeof *labels);
    vw_status st =
        starts && ends && labels ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "labels");
    int32_t at = 0; /* label rows are laid out range after range (plan.h) */
    for (size_t l = 0; st == VW_OK && l < n_labels; l++) {
        int32_t len = bl->label_ranges.v[2 * l + 1] - bl->label_ranges.v[2 * l] + 1;
        starts[l] = at;
        ends[l] = at + len - 1;
        at += len;
    }
    if (st == VW_OK)
        st = vw_span_label_means(ref->rows, (size_t)at, H, starts, ends, n_labels, labels, err);
    if (st == VW_OK)
        st = vw_span_head_logits(head, ref->rows + (size_t)at * H, bl->word_positions.n, labels,
                                 n_labels, z, err);
    free(starts);
    free(ends);
    free(labels);
    return st;
}

static const vw_ppart *plan_part(const vw_plan *p, vw_role role) {
    for (size_t i = 0; i < p->n_parts; i++)
        if (p->parts[i].role == role)
            return &p->parts[i];
    return NULL;
}

/* Word offsets [n][2] of the part's words listed by index. */
static int32_t *pick_words(const vw_ppart *part, const vw_ivec *index) {
    int32_t *w = malloc((index->n ? index->n : 1) * 2 * sizeof *w);
    for (size_t i = 0; w && i < index->n; i++) {
        w[2 * i] = part->words.v[2 * index->v[i]];
        w[2 * i + 1] = part->words.v[2 * index->v[i] + 1];
    }
    return w;
}

static vw_status answer_span(vw_engine *e, const vw_plan *p, const vw_pspan *sp,
                             const block_ref *refs, size_t n_refs, vw_answer *out, vw_err *err) {
    const vw_question *q = &p->req->entries[sp->entry].q;
    const vw_ppart *part = plan_part(p, sp->role);
    const vw_part *text_part = vw_state_part(&p->req->state, sp->role);
    if (!part || !text_part || n_refs == 0)
        return VW_FAIL(err, VW_EINVAL, "bad_plan", "span %.*s has no executed block or part",
                       (int)q->id.n, q->id.p);
    const vw_span_head *head = sp->head == VW_HEAD_BROAD ? &e->broad : &e->router;
    size_t L = sp->n_labels, n_all = part->words.n / 2;
    bool windowed = sp->n_windows > 0;
    size_t n_words = windowed ? n_all : refs[0].block->word_positions.n;
    float **zs = calloc(n_refs, sizeof *zs);
    vw_span_window *wins = calloc(n_refs, sizeof *wins);
    double *logits = malloc((n_words ? n_words : 1) * L * sizeof *logits);
    int32_t *words = windowed ? NULL : pick_words(part, &refs[0].block->word_index);
    const char **labels = calloc(L ? L : 1, sizeof *labels);
    char **owned = calloc(L ? L : 1, sizeof *owned);
    vw_text text = {0};
    vw_status st = zs && wins && logits && labels && owned && (windowed || words)
                       ? VW_OK
                       : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span answer");
    for (size_t r = 0; st == VW_OK && r < n_refs; r++) {
        size_t nw = refs[r].block->word_positions.n;
        zs[r] = malloc((nw ? nw : 1) * L * sizeof *zs[r]);
        st = zs[r] ? span_block_logits(e, head, &refs[r], L, zs[r], err)
                   : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span logits");
        wins[r] = (vw_span_window){refs[r].block->word_index.v, nw, zs[r]};
    }
    if (st == VW_OK && windowed)
        st = vw_span_window_average(wins, n_refs, n_words, L, logits, err);
    else if (st == VW_OK)
        vw_logits_widen(zs[0], n_words * L, logits);
    for (size_t l = 0; st == VW_OK && l < L; l++) {
        owned[l] = strndup(sp->labels[l].name.p, sp->labels[l].name.n);
        labels[l] = owned[l];
        if (!owned[l])
            st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "labels");
    }
    if (st == VW_OK)
        st = vw_text_init(&text, text_part->text, text_part->len, err);
    if (st == VW_OK) {
        vw_span_answer_in in = {
            .text = &text,
            .words = windowed ? part->words.v : words,
            .n_words = n_words,
            .logits = logits,
            .n_logits = n_words * L,
            .key = q->key.p,
            .labels = labels,
            .n_labels = L,
            .part_tokens = sp->part_tokens,
            .head = sp->head == VW_HEAD_BROAD ? VW_SPAN_BROAD : VW_SPAN_ROUTER,
            .given = q->has_threshold ? &q->threshold : NULL,
            .has_range = q->has_range,
            .lo = q->range_lo,
            .hi = q->range_hi,
        };
        st = vw_answer_span(e->cal, &in, out, err);
    }
    vw_text_free(&text);
    for (size_t r = 0; zs && r < n_refs; r++)
        free(zs[r]);
    for (size_t l = 0; owned && l < L; l++)
        free(owned[l]);
    free(owned);
    free(labels);
    free(zs);
    free(wins);
    free(logits);
    free(words);
    return st;
}

static const vw_pspan *plan_span(const vw_plan *p, size_t entry) {
    for (size_t i = 0; i < p->n_spans; i++)
        if (p->spans[i].entry == entry)
            return &p->spans[i];
    return NULL;
}

/* Answers every valid entry whose row fits; others keep answers[i].kind unset
 * and are described by the envelope from the plan. */
static vw_status answer_plan(vw_engine *e, const vw_plan *p, const vw_plan_exec_out *x,
                             const float *rows, vw_answer *answers, bool *answered, vw_err *err) {
    size_t cap = p->n_trees ? p->n_trees : 1;
    block_ref *refs = malloc(cap * sizeof *refs);
    if (!refs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "block refs");
    vw_status st = VW_OK;
    for (size_t i = 0; st == VW_OK && i < p->req->n; i++) {
        const vw_qentry *en = &p->req->entries[i];
        if (!en->valid || p->row_of[i] < 0 || !p->rows[p->row_of[i]].fits)
            continue;
        size_t n = entry_blocks(p, x, rows, e->ex->hidden, i, refs, cap);
        if (en->q.kind == VW_Q_SPAN) {
            const vw_pspan *sp = plan_span(p, i);
            st = sp ? answer_span(e, p, sp, refs, n, &answers[i], err)
                    : VW_FAIL(err, VW_EINVAL, "bad_plan", "no span plan for entry %zu", i);
        } else if (n != 1) {
            st = VW_FAIL(err, VW_EINVAL, "bad_plan", "entry %zu has %zu executed blocks", i, n);
        } else {
            st = answer_candidates(e, &en->q, &refs[0], &answers[i], err);
        }
        answered[i] = st == VW_OK;
    }
    free(refs);
    return st;
}

/* One executor call over trees[0..n); when the executor answers VW_ETRANSIENT
 * (the batch does not fit, e.g. a device arena) the trees run in two halves,
 * recursively, each writing its own contiguous rows. A single tree that still
 * does not fit returns VW_ETRANSIENT to the caller. */
static vw_status forward_split(vw_engine *e, const vw_tree *trees, size_t n, float *rows,
                               vw_err *err) {
    vw_status st = vw_executor_forward(e->ex, trees, n, rows, err);
    if (st != VW_ETRANSIENT || n < 2)
        return st;
    size_t half = n / 2;
    st = forward_split(e, trees, half, rows, err);
    if (st == VW_OK)
        st = forward_split(e, trees + half, n - half,
                           rows + vw_trees_readout_count(trees, half) * e->ex->hidden, err);
    return st;
}

vw_status vw_engine_score(vw_engine *e, vw_plan *const *plans, size_t n, vw_sbuf *out,
                          vw_err *err) {
    vw_plan_exec_out *x = calloc(n ? n : 1, sizeof *x);
    size_t *base = calloc(n ? n : 1, sizeof *base);
    vw_tree *trees = NULL;
    float *rows = NULL;
    size_t n_trees = 0, n_rows = 0, H = e->ex->hidden;
    vw_status st = x && base ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batch");
    for (size_t i = 0; st == VW_OK && i < n; i++) {
        st = vw_plan_exec(plans[i], &x[i], err);
        base[i] = n_rows;
        n_rows += x[i].n_rows;
        n_trees += x[i].n_trees;
    }
    if (st == VW_OK && n_trees) {
        trees = malloc(n_trees * sizeof *trees);
        rows = malloc((n_rows ? n_rows : 1) * H * sizeof *rows);
        st = trees && rows ? VW_OK : VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch rows");
        for (size_t i = 0, k = 0; st == VW_OK && i < n; i++)
            for (size_t t = 0; t < x[i].n_trees; t++)
                trees[k++] = x[i].trees[t];
        if (st == VW_OK)
            st = forward_split(e, trees, n_trees, rows, err);
    }
    for (size_t i = 0; st == VW_OK && i < n; i++) {
        size_t nq = plans[i]->req->n;
        vw_answer *answers = calloc(nq ? nq : 1, sizeof *answers);
        bool *answered = calloc(nq ? nq : 1, sizeof *answered);
        st = answers && answered ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "answers");
        if (st == VW_OK)
            st = answer_plan(e, plans[i], &x[i], rows ? rows + base[i] * H : NULL, answers,
                             answered, err);
        if (st == VW_OK)
            st = vw_envelope_write(&out[i], plans[i], answers, answered, e->has_broad, err);
        for (size_t q = 0; answers && q < nq; q++)
            if (answered && answered[q])
                vw_answer_free(&answers[q]);
        free(answers);
        free(answered);
    }
    for (size_t i = 0; x && i < n; i++)
        vw_plan_exec_free(&x[i]);
    free(x);
    free(base);
    free(trees);
    free(rows);
    return st;
}
