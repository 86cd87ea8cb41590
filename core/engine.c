/* engine.c — a loaded package: plan -> executor -> heads -> answers -> envelope
 * (see engine.h). This file owns loading and the batch loop; the JSON of the
 * envelope is envelope.c's. */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answers/answers.h"
#include "model/backbone_cpu.h"
#include "answers/calibration.h"
#include "answers/envelope.h"
#include "answers/heads.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"
#include "util/reserve.h"

/* Row buffers of finished batches, kept for the next ones: a batch's rows are
 * tens of MB (readouts x hidden floats), and a fresh allocation of that size
 * is mapped and page-faulted anew every time. */
enum { ROW_POOL = 4 };
typedef struct row_pool {
    pthread_mutex_t mu;
    float *buf[ROW_POOL];
    size_t cap[ROW_POOL]; /* floats */
    size_t n;
} row_pool;

struct vw_engine {
    row_pool *rows; /* shared by the threads that pack and free batches */
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
    atomic_bool cancel;     /* vw_engine_cancel: the executor stops between trees */
    vw_tensor_f32 *tensors; /* FP32 head weights the heads point into */
    size_t n_tensors, cap_tensors;
    char model[256];
};

/* ---- loading -------------------------------------------------------------- */

static bool engine_cancelled(void *ctx) {
    return atomic_load_explicit(&((vw_engine *)ctx)->cancel, memory_order_relaxed);
}

void vw_engine_cancel(vw_engine *e) {
    atomic_store(&e->cancel, true);
}

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
    if (!name) {
        const char *slash = strrchr(dir, '/');
        name = slash && slash[1] ? slash + 1 : dir;
    }
    /* The revision is the first 12 hex digits of the digest over every
     * verified file's digest (bundle.h vw_bundle_content_sha256): a changed
     * weight, head, calibration or tokenizer file is another revision. */
    snprintf(e->model, sizeof e->model, "%s@%.12s", name, vw_bundle_content_sha256(e->bundle));
}

vw_status vw_engine_open(const char *dir, const vw_engine_opts *opts, vw_engine **out,
                         vw_err *err) {
    *out = NULL;
    vw_engine *e = calloc(1, sizeof *e);
    if (e && !(e->rows = calloc(1, sizeof *e->rows))) {
        free(e);
        e = NULL;
    }
    if (!e)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "engine");
    pthread_mutex_init(&e->rows->mu, NULL);
    vw_status st = vw_bundle_open(dir, &e->bundle, err);
    size_t tok_len = 0;
    const char *tok_json = st ? NULL : vw_bundle_tokenizer_json(e->bundle, &tok_len);
    if (st == VW_OK)
        st = vw_tok_load_json(tok_json, tok_len, &e->tok, err);
    if (st == VW_OK)
        st = admit_cfg_of(e->bundle, &e->acfg, err);
    if (st == VW_OK && opts)
        e->acfg->max_request_tokens = opts->max_request_tokens;
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
    if (st == VW_OK) {
        e->ex->cancelled = engine_cancelled;
        e->ex->cancel_ctx = e;
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

static void row_pool_free(row_pool *rp) {
    if (!rp)
        return;
    for (size_t i = 0; i < rp->n; i++)
        free(rp->buf[i]);
    pthread_mutex_destroy(&rp->mu);
    free(rp);
}

/* A buffer of at least n floats (*cap: its size): a pooled one if one is large
 * enough, else a new one. */
static float *rows_get(row_pool *rp, size_t n, size_t *cap) {
    pthread_mutex_lock(&rp->mu);
    for (size_t i = 0; i < rp->n; i++)
        if (rp->cap[i] >= n) {
            float *p = rp->buf[i];
            *cap = rp->cap[i];
            rp->buf[i] = rp->buf[--rp->n];
            rp->cap[i] = rp->cap[rp->n];
            pthread_mutex_unlock(&rp->mu);
            return p;
        }
    pthread_mutex_unlock(&rp->mu);
    *cap = n;
    return malloc(n * sizeof(float));
}

/* Keeps p for a later batch (dropping the smallest kept one when full). */
static void rows_put(row_pool *rp, float *p, size_t cap) {
    if (!p)
        return;
    pthread_mutex_lock(&rp->mu);
    if (rp->n < ROW_POOL) {
        rp->buf[rp->n] = p;
        rp->cap[rp->n++] = cap;
        p = NULL;
    } else {
        size_t k = 0;
        for (size_t i = 1; i < rp->n; i++)
            k = rp->cap[i] < rp->cap[k] ? i : k;
        if (rp->cap[k] < cap) {
            float *old = rp->buf[k];
            rp->buf[k] = p;
            rp->cap[k] = cap;
            p = old;
        }
    }
    pthread_mutex_unlock(&rp->mu);
    free(p);
}

void vw_engine_free(vw_engine *e) {
    if (!e)
        return;
    row_pool_free(e->rows);
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

/* ---- head problems of a batch ------------------------------------------------ */

/* Every entry's head outputs: a candidate entry's logits, or one z per
 * executed block (or window) of a span entry. */
typedef struct entry_z {
    float *cand;  /* [m] */
    float **span; /* [n_span][words x labels] */
    size_t n_span;
} entry_z;

/* The problems of a batch for the three heads, in the order they are made. */
typedef struct problems {
    vw_cand_problem *cand;
    size_t n_cand, cap_cand;
    vw_span_problem *span[2]; /* router, broad */
    size_t n_span[2], cap_span[2];
} problems;

/* Label vectors of one executed span block (their rows come first, range after
 * range: plan.h) into a new [n_labels, H] array. */
static vw_status block_labels(const vw_engine *e, const block_ref *ref, size_t n_labels,
                              float **out, vw_err *err) {
    const vw_pblock *bl = ref->block;
    size_t H = e->ex->hidden;
    *out = NULL;
    if (bl->label_ranges.n != 2 * n_labels)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span block has %zu label ranges, plan %zu", bl->label_ranges.n / 2,
                       n_labels);
    int32_t *starts = malloc(n_labels * sizeof *starts), *ends = malloc(n_labels * sizeof *ends);
    float *labels = malloc(n_labels * H * sizeof *labels);
    vw_status st =
        starts && ends && labels ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "labels");
    int32_t at = 0;
    for (size_t l = 0; st == VW_OK && l < n_labels; l++) {
        int32_t len = bl->label_ranges.v[2 * l + 1] - bl->label_ranges.v[2 * l] + 1;
        starts[l] = at;
        ends[l] = at + len - 1;
        at += len;
    }
    if (st == VW_OK)
        st = vw_span_label_means(ref->rows, (size_t)at, H, starts, ends, n_labels, labels, err);
    free(starts);
    free(ends);
    if (st == VW_OK)
        *out = labels;
    else
        free(labels);
    return st;
}

static const vw_pspan *plan_span(const vw_plan *p, size_t entry) {
    for (size_t i = 0; i < p->n_spans; i++)
        if (p->spans[i].entry == entry)
            return &p->spans[i];
    return NULL;
}

/* Whether entry i of p is answered (valid, in a row that fits). */
static bool answered_entry(const vw_plan *p, size_t i) {
    const vw_qentry *en = &p->req->entries[i];
    return en->valid && p->row_of[i] >= 0 && p->rows[p->row_of[i]].fits;
}

/* The head problems of one plan: buffers for every answered entry's outputs
 * (z[], freed by free_plan_z) and the problems appended to pr; label vectors
 * are kept in *labels (a list the caller frees). */
static vw_status gather_plan(const vw_engine *e, const vw_plan *p, const vw_plan_exec_out *x,
                             const float *rows, entry_z *z, problems *pr, float ***labels,
                             size_t *n_labels_bufs, size_t *cap_labels, vw_err *err) {
    size_t cap = p->n_trees ? p->n_trees : 1, H = e->ex->hidden;
    block_ref *refs = malloc(cap * sizeof *refs);
    if (!refs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "block refs");
    vw_status st = VW_OK;
    for (size_t i = 0; st == VW_OK && i < p->req->n; i++) {
        if (!answered_entry(p, i))
            continue;
        const vw_question *q = &p->req->entries[i].q;
        size_t n = entry_blocks(p, x, rows, H, i, refs, cap);
        if (q->kind != VW_Q_SPAN) {
            if (n != 1) {
                st = VW_FAIL(err, VW_EINVAL, "bad_plan", "entry %zu has %zu executed blocks", i, n);
                break;
            }
            size_t m = refs[0].block->option_ends.n;
            z[i].cand = malloc((m ? m : 1) * sizeof *z[i].cand);
            if (!z[i].cand ||
                vw_reserve((void **)&pr->cand, &pr->cap_cand, pr->n_cand + 1, sizeof *pr->cand)) {
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "candidate problems");
                break;
            }
            pr->cand[pr->n_cand++] = (vw_cand_problem){refs[0].rows, m, refs[0].rows + m * H,
                                                       q->kind == VW_Q_SET, z[i].cand};
            continue;
        }
        const vw_pspan *sp = plan_span(p, i);
        if (!sp || n == 0) {
            st = VW_FAIL(err, VW_EINVAL, "bad_plan", "span %.*s has no executed block",
                         (int)q->id.n, q->id.p);
            break;
        }
        int h = sp->head == VW_HEAD_BROAD;
        size_t L = sp->n_labels;
        z[i].span = calloc(n, sizeof *z[i].span);
        z[i].n_span = z[i].span ? n : 0;
        if (!z[i].span)
            st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span logits");
        for (size_t r = 0; st == VW_OK && r < n; r++) {
            size_t nw = refs[r].block->word_positions.n;
            float *lab = NULL;
            st = block_labels(e, &refs[r], L, &lab, err);
            if (st == VW_OK &&
                vw_reserve((void **)labels, cap_labels, *n_labels_bufs + 1, sizeof **labels)) {
                free(lab);
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "label vectors");
            }
            if (st != VW_OK)
                break;
            (*labels)[(*n_labels_bufs)++] = lab;
            z[i].span[r] = malloc((nw ? nw : 1) * L * sizeof *z[i].span[r]);
            if (!z[i].span[r] || vw_reserve((void **)&pr->span[h], &pr->cap_span[h],
                                            pr->n_span[h] + 1, sizeof *pr->span[h])) {
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span problems");
                break;
            }
            /* word rows follow the label rows (plan.h) */
            size_t at = 0;
            for (size_t l = 0; l < L; l++)
                at += (size_t)(refs[r].block->label_ranges.v[2 * l + 1] -
                               refs[r].block->label_ranges.v[2 * l] + 1);
            pr->span[h][pr->n_span[h]++] =
                (vw_span_problem){refs[r].rows + at * H, nw, lab, L, z[i].span[r]};
        }
    }
    free(refs);
    return st;
}

static void free_plan_z(entry_z *z, size_t n) {
    for (size_t i = 0; z && i < n; i++) {
        free(z[i].cand);
        for (size_t r = 0; r < z[i].n_span; r++)
            free(z[i].span[r]);
        free(z[i].span);
    }
    free(z);
}

/* ---- answers -------------------------------------------------------------------- */

static vw_status answer_candidates(const vw_engine *e, const vw_question *q, size_t m,
                                   const float *z, vw_answer *out, vw_err *err) {
    double *zd = malloc((m ? m : 1) * sizeof *zd);
    if (!zd)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "logits");
    vw_status st = VW_OK;
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
    free(zd);
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

static vw_status answer_span(const vw_engine *e, const vw_plan *p, const vw_pspan *sp,
                             const block_ref *refs, size_t n_refs, float *const *zs, vw_answer *out,
                             vw_err *err) {
    const vw_question *q = &p->req->entries[sp->entry].q;
    const vw_ppart *part = plan_part(p, sp->role);
    const vw_part *text_part = vw_state_part(&p->req->state, sp->role);
    if (!part || !text_part || n_refs == 0)
        return VW_FAIL(err, VW_EINVAL, "bad_plan", "span %.*s has no executed block or part",
                       (int)q->id.n, q->id.p);
    size_t L = sp->n_labels, n_all = part->words.n / 2;
    bool windowed = sp->n_windows > 0;
    size_t n_words = windowed ? n_all : refs[0].block->word_positions.n;
    vw_span_window *wins = calloc(n_refs, sizeof *wins);
    double *logits = malloc((n_words ? n_words : 1) * L * sizeof *logits);
    int32_t *words = windowed ? NULL : pick_words(part, &refs[0].block->word_index);
    const char **labels = calloc(L ? L : 1, sizeof *labels);
    char **owned = calloc(L ? L : 1, sizeof *owned);
    vw_text text = {0};
    vw_status st = wins && logits && labels && owned && (windowed || words)
                       ? VW_OK
                       : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span answer");
    for (size_t r = 0; st == VW_OK && r < n_refs; r++)
        wins[r] =
            (vw_span_window){refs[r].block->word_index.v, refs[r].block->word_positions.n, zs[r]};
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
    for (size_t l = 0; owned && l < L; l++)
        free(owned[l]);
    free(owned);
    free(labels);
    free(wins);
    free(logits);
    free(words);
    return st;
}

/* Answers every entry gather_plan gave outputs to; others keep answers[i]
 * unset and are described by the envelope from the plan. */
static vw_status answer_plan(const vw_engine *e, const vw_plan *p, const vw_plan_exec_out *x,
                             const float *rows, const entry_z *z, vw_answer *answers,
                             bool *answered, vw_err *err) {
    size_t cap = p->n_trees ? p->n_trees : 1;
    block_ref *refs = malloc(cap * sizeof *refs);
    if (!refs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "block refs");
    vw_status st = VW_OK;
    for (size_t i = 0; st == VW_OK && i < p->req->n; i++) {
        if (!answered_entry(p, i))
            continue;
        const vw_question *q = &p->req->entries[i].q;
        if (q->kind == VW_Q_SPAN) {
            size_t n = entry_blocks(p, x, rows, e->ex->hidden, i, refs, cap);
            st = answer_span(e, p, plan_span(p, i), refs, n, z[i].span, &answers[i], err);
        } else {
            size_t n = entry_blocks(p, x, rows, e->ex->hidden, i, refs, cap);
            st = answer_candidates(e, q, refs[0].block->option_ends.n, z[i].cand, &answers[i], err);
            (void)n;
        }
        answered[i] = st == VW_OK;
    }
    free(refs);
    return st;
}

/* ---- batches: pack, execute, finish ------------------------------------------- */

struct vw_engine_batch {
    row_pool *pool;  /* where rows go back */
    vw_plan **plans; /* [n] borrowed */
    size_t n;
    vw_plan_exec_out *x; /* [n] */
    size_t *base;        /* [n] first output row of each plan */
    size_t *tree0;       /* [n] first tree of each plan in trees */
    vw_tree *trees;
    size_t n_trees, n_rows;
    float *rows;
    size_t rows_cap; /* floats */
    vw_status *st;   /* [n] each plan's outcome so far */
    vw_err *errs;    /* [n] */
};

void vw_engine_batch_free(vw_engine_batch *b) {
    if (!b)
        return;
    for (size_t i = 0; b->x && i < b->n; i++)
        vw_plan_exec_free(&b->x[i]);
    free(b->plans);
    free(b->x);
    free(b->base);
    free(b->tree0);
    free(b->trees);
    rows_put(b->pool, b->rows, b->rows_cap);
    free(b->st);
    free(b->errs);
    free(b);
}

vw_status vw_engine_pack(const vw_engine *e, vw_plan *const *plans, size_t n, vw_engine_batch **out,
                         vw_err *err) {
    *out = NULL;
    vw_engine_batch *b = calloc(1, sizeof *b);
    size_t m = n ? n : 1;
    if (b) {
        b->pool = e->rows;
        b->n = n;
        b->plans = malloc(m * sizeof *b->plans);
        b->x = calloc(m, sizeof *b->x);
        b->base = calloc(m, sizeof *b->base);
        b->tree0 = calloc(m, sizeof *b->tree0);
        b->st = calloc(m, sizeof *b->st);
        b->errs = calloc(m, sizeof *b->errs);
    }
    if (!b || !b->plans || !b->x || !b->base || !b->tree0 || !b->st || !b->errs) {
        vw_engine_batch_free(b);
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch");
    }
    for (size_t i = 0; i < n; i++) {
        b->plans[i] = plans[i];
        b->st[i] = vw_plan_exec(plans[i], &b->x[i], &b->errs[i]);
        b->base[i] = b->n_rows;
        b->tree0[i] = b->n_trees;
        if (b->st[i] == VW_OK) {
            b->n_rows += b->x[i].n_rows;
            b->n_trees += b->x[i].n_trees;
        }
    }
    if (b->n_trees) {
        b->trees = malloc(b->n_trees * sizeof *b->trees);
        b->rows = rows_get(e->rows, (b->n_rows ? b->n_rows : 1) * e->ex->hidden, &b->rows_cap);
        if (!b->trees || !b->rows) {
            vw_engine_batch_free(b);
            return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch rows");
        }
        for (size_t i = 0, k = 0; i < n; i++)
            for (size_t t = 0; b->st[i] == VW_OK && t < b->x[i].n_trees; t++)
                b->trees[k++] = b->x[i].trees[t];
    }
    *out = b;
    return VW_OK;
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

vw_status vw_engine_execute(vw_engine *e, vw_engine_batch *b, vw_err *err) {
    if (!b->n_trees)
        return VW_OK;
    vw_status st = forward_split(e, b->trees, b->n_trees, b->rows, err);
    if (st == VW_OK || st == VW_ETRANSIENT)
        return st;
    /* A failure of the whole call: each plan alone, so one poison plan cannot
     * sink the rest. */
    for (size_t i = 0; i < b->n; i++)
        if (b->st[i] == VW_OK && b->x[i].n_trees)
            b->st[i] = forward_split(e, b->trees + b->tree0[i], b->x[i].n_trees,
                                     b->rows + b->base[i] * e->ex->hidden, &b->errs[i]);
    return VW_OK;
}

vw_status vw_engine_batch_status(const vw_engine_batch *b, size_t i, vw_err *err) {
    if (b->st[i] != VW_OK && err)
        *err = b->errs[i];
    return b->st[i];
}

/* This thread's CPU seconds when t wants them (a system call: skipped
 * otherwise, e.g. for vw_engine_score). */
static double thread_s(const vw_engine_times *t) {
    struct timespec ts;
    if (!t)
        return 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The three heads over problems pr. */
static vw_status run_heads(const vw_engine *e, const problems *pr, vw_err *err) {
    vw_status st = vw_cand_head_logits_batch(&e->cand, pr->cand, pr->n_cand, err);
    if (st == VW_OK)
        st = vw_span_head_logits_batch(&e->router, pr->span[0], pr->n_span[0], err);
    if (st == VW_OK && pr->n_span[1])
        st = vw_span_head_logits_batch(&e->broad, pr->span[1], pr->n_span[1], err);
    return st;
}

/* Heads for the plans with outcome OK, all at once: every problem goes through
 * its own GEMM per head weight (heads.h), so a row's result does not depend on
 * the rows beside it and batch == single holds byte for byte
 * (docs/envelope.md). When
 * that fails, plan by plan, so the failing plan is the only one marked. z[i]
 * receives plan i's outputs. */
static void heads(const vw_engine *e, vw_engine_batch *b, entry_z **z) {
    problems all = {0}, *per = calloc(b->n ? b->n : 1, sizeof *per);
    float **labels = NULL;
    size_t n_labels = 0, cap_labels = 0;
    for (size_t i = 0; i < b->n; i++) {
        z[i] = NULL;
        if (b->st[i] != VW_OK)
            continue;
        const vw_plan *p = b->plans[i];
        z[i] = calloc(p->req->n ? p->req->n : 1, sizeof *z[i]);
        if (!z[i] || !per) {
            b->st[i] = VW_FAIL(&b->errs[i], VW_ENOMEM, "out_of_memory", "head outputs");
            continue;
        }
        b->st[i] =
            gather_plan(e, p, &b->x[i], b->rows ? b->rows + b->base[i] * e->ex->hidden : NULL, z[i],
                        &per[i], &labels, &n_labels, &cap_labels, &b->errs[i]);
    }
    bool joined = per != NULL; /* one list of every plan's problems, in plan order */
    for (size_t i = 0; joined && i < b->n; i++) {
        if (b->st[i] != VW_OK)
            continue;
        for (size_t k = 0; joined && k < per[i].n_cand; k++)
            if ((joined = !vw_reserve((void **)&all.cand, &all.cap_cand, all.n_cand + 1,
                                      sizeof *all.cand)))
                all.cand[all.n_cand++] = per[i].cand[k];
        for (int h = 0; h < 2; h++)
            for (size_t k = 0; joined && k < per[i].n_span[h]; k++)
                if ((joined = !vw_reserve((void **)&all.span[h], &all.cap_span[h],
                                          all.n_span[h] + 1, sizeof *all.span[h])))
                    all.span[h][all.n_span[h]++] = per[i].span[h][k];
    }
    vw_err one = {0};
    if (!joined || run_heads(e, &all, &one) != VW_OK)
        for (size_t i = 0; per && i < b->n; i++)
            if (b->st[i] == VW_OK)
                b->st[i] = run_heads(e, &per[i], &b->errs[i]);
    for (size_t i = 0; per && i < b->n; i++) {
        free(per[i].cand);
        free(per[i].span[0]);
        free(per[i].span[1]);
    }
    free(per);
    free(all.cand);
    free(all.span[0]);
    free(all.span[1]);
    for (size_t k = 0; k < n_labels; k++)
        free(labels[k]);
    free(labels);
}

void vw_engine_finish(const vw_engine *e, vw_engine_batch *b, vw_sbuf *out, vw_engine_times *t) {
    double t0 = thread_s(t);
    entry_z **z = calloc(b->n ? b->n : 1, sizeof *z);
    if (!z) {
        for (size_t i = 0; i < b->n; i++)
            if (b->st[i] == VW_OK)
                b->st[i] = VW_FAIL(&b->errs[i], VW_ENOMEM, "out_of_memory", "head outputs");
        return;
    }
    heads(e, b, z);
    double t1 = thread_s(t), t_env = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->st[i] != VW_OK)
            continue;
        const vw_plan *p = b->plans[i];
        size_t nq = p->req->n;
        vw_answer *answers = calloc(nq ? nq : 1, sizeof *answers);
        bool *answered = calloc(nq ? nq : 1, sizeof *answered);
        vw_status st =
            answers && answered
                ? answer_plan(e, p, &b->x[i], b->rows ? b->rows + b->base[i] * e->ex->hidden : NULL,
                              z[i], answers, answered, &b->errs[i])
                : VW_FAIL(&b->errs[i], VW_ENOMEM, "out_of_memory", "answers");
        double te = thread_s(t);
        if (st == VW_OK)
            st = vw_envelope_write(&out[i], p, answers, answered, e->has_broad, &b->errs[i]);
        t_env += thread_s(t) - te;
        b->st[i] = st;
        for (size_t q = 0; answers && q < nq; q++)
            if (answered && answered[q])
                vw_answer_free(&answers[q]);
        free(answers);
        free(answered);
        free_plan_z(z[i], nq);
        z[i] = NULL;
    }
    for (size_t i = 0; i < b->n; i++) /* plans that failed before their answers */
        free_plan_z(z[i], b->plans[i]->req->n);
    free(z);
    if (t) {
        double t2 = thread_s(t);
        t->heads += t1 - t0;
        t->envelope += t_env;
        t->answers += t2 - t1 - t_env;
    }
}

vw_status vw_engine_score(vw_engine *e, vw_plan *const *plans, size_t n, vw_sbuf *out,
                          vw_err *err) {
    vw_engine_batch *b = NULL;
    vw_status st = vw_engine_pack(e, plans, n, &b, err);
    if (st == VW_OK)
        st = vw_engine_execute(e, b, err);
    if (st == VW_OK)
        vw_engine_finish(e, b, out, NULL);
    for (size_t i = 0; st == VW_OK && i < n; i++)
        st = vw_engine_batch_status(b, i, err);
    vw_engine_batch_free(b);
    return st;
}
