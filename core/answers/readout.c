/* readout.c — readout rows to answers (see readout.h): the head problems of
 * a plan, the heads over a batch, calibrated answers per entry. Owns nothing
 * beyond one call; never runs the backbone or writes the envelope. */
#include "readout.h"

#include <stdlib.h>
#include <string.h>

#include "span_decode.h"
#include "util/reserve.h"

/* Where one executed plan block's rows are. */
typedef struct block_ref {
    const vw_ptree *tree;
    const vw_pblock *block;
    const float *rows; /* its first output row (NULL: the rows stay on the device) */
    size_t row;        /* its index among the plan's output rows */
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
            size_t row = (size_t)x->first_row[k];
            if (n < cap)
                refs[n] = (block_ref){&p->trees[t], bl, rows ? rows + row * hidden : NULL, row};
            n++;
        }
    return n;
}

/* ---- head problems of a batch ------------------------------------------------ */

/* Every entry's head outputs: a candidate entry's logits, or one z per
 * executed block (or window) of a span entry. */
struct vw_readout_z {
    float *cand;  /* [m] */
    float **span; /* [n_span][words x labels] */
    size_t n_span;
};

/* The problems of a batch for the three heads, in the order they are made. */
typedef struct problems {
    vw_cand_problem *cand;
    size_t n_cand, cap_cand;
    vw_span_problem *span[2]; /* router, broad */
    size_t n_span[2], cap_span[2];
} problems;

/* The label row ranges of one executed span block, from `first` on (the label
 * rows come first, range after range, the words after them: plan.h), into new
 * starts/ends arrays [n_labels]; *at: where the words start. */
static vw_status label_rows(const vw_pblock *bl, size_t n_labels, int32_t first, int32_t **starts,
                            int32_t **ends, int32_t *at, vw_err *err) {
    *starts = *ends = NULL;
    if (bl->label_ranges.n != 2 * n_labels || !n_labels)
        return VW_FAIL(err, VW_EINVAL, "length_mismatch",
                       "span block has %zu label ranges, plan %zu", bl->label_ranges.n / 2,
                       n_labels);
    *starts = malloc(n_labels * sizeof **starts), *ends = malloc(n_labels * sizeof **ends);
    if (!*starts || !*ends)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "labels");
    *at = first;
    for (size_t l = 0; l < n_labels; l++) {
        int32_t len = bl->label_ranges.v[2 * l + 1] - bl->label_ranges.v[2 * l] + 1;
        if (len < 1)
            return VW_FAIL(err, VW_EINVAL, "length_mismatch", "label %zu: an empty row range", l);
        (*starts)[l] = *at;
        (*ends)[l] = *at + len - 1;
        *at += len;
    }
    return VW_OK;
}

/* Label vectors of one executed span block into a new [n_labels, H] array;
 * *at: where its words start among its rows. */
static vw_status block_labels(const vw_readout_heads *h, const block_ref *ref, size_t n_labels,
                              float **out, int32_t *at, vw_err *err) {
    int32_t *starts, *ends;
    *out = NULL;
    vw_status st = label_rows(ref->block, n_labels, 0, &starts, &ends, at, err);
    float *labels = st == VW_OK ? malloc(n_labels * h->hidden * sizeof *labels) : NULL;
    if (st == VW_OK && !labels)
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "labels");
    if (st == VW_OK)
        st = vw_span_label_means(ref->rows, (size_t)*at, h->hidden, starts, ends, n_labels, labels,
                                 err);
    free(starts);
    free(ends);
    if (st == VW_OK)
        *out = labels;
    else
        free(labels);
    return st;
}

/* One executed span block as a device job (rows of the batch from base). */
static vw_status span_job(const block_ref *ref, size_t n_labels, int which, size_t base, float *z,
                          vw_head_jobs *jobs, vw_err *err) {
    int32_t *starts, *ends, at;
    vw_status st =
        label_rows(ref->block, n_labels, (int32_t)(base + ref->row), &starts, &ends, &at, err);
    vw_head_span_job s = {
        which, at, (int32_t)ref->block->word_positions.n, starts, ends, (int32_t)n_labels, z};
    if (st == VW_OK)
        st = vw_head_jobs_add_span(jobs, &s, err);
    free(starts);
    free(ends);
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

/* One executed span block as a host problem over its rows; the label vectors
 * go on the *labels list (the caller frees it). */
static vw_status span_problem(const vw_readout_heads *h, const block_ref *ref, size_t n_labels,
                              problems *pr, int which, float *z, float ***labels, size_t *n_bufs,
                              size_t *cap_bufs, vw_err *err) {
    float *lab = NULL;
    int32_t at = 0;
    vw_status st = block_labels(h, ref, n_labels, &lab, &at, err);
    if (st == VW_OK && (vw_reserve((void **)labels, cap_bufs, *n_bufs + 1, sizeof **labels) ||
                        vw_reserve((void **)&pr->span[which], &pr->cap_span[which],
                                   pr->n_span[which] + 1, sizeof *pr->span[which]))) {
        free(lab);
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span problems");
    }
    if (st != VW_OK)
        return st;
    (*labels)[(*n_bufs)++] = lab;
    pr->span[which][pr->n_span[which]++] = (vw_span_problem){
        ref->rows + (size_t)at * h->hidden, ref->block->word_positions.n, lab, n_labels, z};
    return VW_OK;
}

/* Where gather_plan puts a plan's problems: host problems over the rows (pr,
 * labels: the label vectors, a list the caller frees), or, with jobs, device
 * problems over the batch's rows from base (the plan's first row). */
typedef struct gather_to {
    problems *pr;
    float ***labels;
    size_t *n_labels, *cap_labels;
    vw_head_jobs *jobs;
    size_t base;
} gather_to;

/* The head problems of one plan: buffers for every answered entry's outputs
 * (z[], freed by vw_readout_z_free) and the problems, appended to `to`. */
static vw_status gather_plan(const vw_readout_heads *h, const vw_plan *p, const vw_plan_exec_out *x,
                             const float *rows, vw_readout_z *z, const gather_to *to, vw_err *err) {
    size_t cap = p->n_trees ? p->n_trees : 1, H = h->hidden;
    block_ref *refs = malloc(cap * sizeof *refs);
    if (!refs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "block refs");
    vw_status st = VW_OK;
    problems *pr = to->pr;
    for (size_t i = 0; st == VW_OK && i < p->req->n; i++) {
        if (!answered_entry(p, i))
            continue;
        const vw_question *q = &p->req->entries[i].q;
        size_t n = entry_blocks(p, x, rows, H, i, refs, cap);
        if (q->kind != VW_Q_SPAN) {
            size_t m = n == 1 ? refs[0].block->option_ends.n : 0;
            if (n != 1)
                st = VW_FAIL(err, VW_EINVAL, "bad_plan", "entry %zu has %zu executed blocks", i, n);
            else if (!m && to->jobs) /* as the host head refuses it */
                st = VW_FAIL(err, VW_EINVAL, "length_mismatch", "candidate head: 0 option rows");
            else if (!(z[i].cand = malloc((m ? m : 1) * sizeof *z[i].cand)))
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "candidate logits");
            else if (to->jobs) {
                int32_t r0 = (int32_t)(to->base + refs[0].row);
                vw_head_cand_job c = {r0, (int32_t)m, r0 + (int32_t)m, q->kind == VW_Q_SET,
                                      z[i].cand};
                st = vw_head_jobs_add_cand(to->jobs, &c, err);
            } else if (vw_reserve((void **)&pr->cand, &pr->cap_cand, pr->n_cand + 1,
                                  sizeof *pr->cand))
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "candidate problems");
            else
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
        int which = sp->head == VW_HEAD_BROAD;
        size_t L = sp->n_labels;
        z[i].span = calloc(n, sizeof *z[i].span);
        z[i].n_span = z[i].span ? n : 0;
        if (!z[i].span)
            st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span logits");
        for (size_t r = 0; st == VW_OK && r < n; r++) {
            size_t nw = refs[r].block->word_positions.n;
            if (!(z[i].span[r] = malloc((nw ? nw : 1) * (L ? L : 1) * sizeof *z[i].span[r])))
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span logits");
            else if (to->jobs)
                st = span_job(&refs[r], L, which, to->base, z[i].span[r], to->jobs, err);
            else
                st = span_problem(h, &refs[r], L, pr, which, z[i].span[r], to->labels, to->n_labels,
                                  to->cap_labels, err);
        }
    }
    free(refs);
    return st;
}

void vw_readout_z_free(vw_readout_z *z, size_t n) {
    for (size_t i = 0; z && i < n; i++) {
        free(z[i].cand);
        for (size_t r = 0; r < z[i].n_span; r++)
            free(z[i].span[r]);
        free(z[i].span);
    }
    free(z);
}

/* ---- answers -------------------------------------------------------------------- */

static vw_status answer_candidates(const vw_readout_heads *h, const vw_question *q, size_t m,
                                   const float *z, vw_answer *out, vw_err *err) {
    double *zd = malloc((m ? m : 1) * sizeof *zd);
    if (!zd)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "logits");
    vw_status st = VW_OK;
    vw_logits_widen(z, m, zd);
    switch (q->kind) {
    case VW_Q_CHOICE:
        st = vw_answer_choice(h->cal, zd, m, q->n_options, q->abstain, out, err);
        break;
    case VW_Q_NOUL:
        st = vw_answer_noul(h->cal, zd, m, q->abstain, h->noul_calibration, out, err);
        break;
    case VW_Q_SCORE:
        st = vw_answer_score(h->cal, zd, m, q->n_options, out, err);
        break;
    case VW_Q_SET:
        st = vw_answer_set(h->cal, zd, m, q->n_options, q->key.p,
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

static vw_status answer_span(const vw_readout_heads *h, const vw_plan *p, const vw_pspan *sp,
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
        st = vw_answer_span(h->cal, &in, out, err);
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

vw_status vw_readout_answer(const vw_readout_heads *h, const vw_plan *p, const vw_plan_exec_out *x,
                            const float *rows, const vw_readout_z *z, vw_answer *answers,
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
            size_t n = entry_blocks(p, x, rows, h->hidden, i, refs, cap);
            st = answer_span(h, p, plan_span(p, i), refs, n, z[i].span, &answers[i], err);
        } else {
            size_t n = entry_blocks(p, x, rows, h->hidden, i, refs, cap);
            st = answer_candidates(h, q, refs[0].block->option_ends.n, z[i].cand, &answers[i], err);
            (void)n;
        }
        answered[i] = st == VW_OK;
    }
    free(refs);
    return st;
}

/* The three heads over problems pr. */
static vw_status run_heads(const vw_readout_heads *h, const problems *pr, vw_err *err) {
    vw_status st = vw_cand_head_logits_batch(&h->cand, pr->cand, pr->n_cand, err);
    if (st == VW_OK)
        st = vw_span_head_logits_batch(&h->router, pr->span[0], pr->n_span[0], err);
    if (st == VW_OK && pr->n_span[1])
        st = vw_span_head_logits_batch(&h->broad, pr->span[1], pr->n_span[1], err);
    return st;
}

void vw_readout_heads_run(const vw_readout_heads *h, size_t n, vw_plan *const *plans,
                          const vw_plan_exec_out *x, const float *rows, const size_t *base,
                          vw_status *st, vw_err *errs, vw_readout_z **z) {
    problems *per = calloc(n ? n : 1, sizeof *per);
    float **labels = NULL;
    size_t n_labels = 0, cap_labels = 0;
    for (size_t i = 0; i < n; i++) {
        z[i] = NULL;
        if (st[i] != VW_OK)
            continue;
        const vw_plan *p = plans[i];
        z[i] = calloc(p->req->n ? p->req->n : 1, sizeof *z[i]);
        if (!z[i] || !per) {
            st[i] = VW_FAIL(&errs[i], VW_ENOMEM, "out_of_memory", "head outputs");
            continue;
        }
        gather_to to = {&per[i], &labels, &n_labels, &cap_labels, NULL, 0};
        st[i] =
            gather_plan(h, p, &x[i], rows ? rows + base[i] * h->hidden : NULL, z[i], &to, &errs[i]);
    }
    /* Plan by plan: every problem has its own GEMMs (heads.h), so joining the
     * plans' lists would change no bit, and a failure stays its plan's. */
    for (size_t i = 0; per && i < n; i++) {
        if (st[i] == VW_OK)
            st[i] = run_heads(h, &per[i], &errs[i]);
        free(per[i].cand);
        free(per[i].span[0]);
        free(per[i].span[1]);
    }
    free(per);
    for (size_t k = 0; k < n_labels; k++)
        free(labels[k]);
    free(labels);
}

void vw_readout_heads_jobs(const vw_readout_heads *h, size_t n, vw_plan *const *plans,
                           const vw_plan_exec_out *x, const size_t *base, vw_status *st,
                           vw_err *errs, vw_readout_z **z, vw_head_jobs *jobs) {
    for (size_t i = 0; i < n; i++) {
        z[i] = NULL;
        if (st[i] != VW_OK)
            continue;
        size_t nq = plans[i]->req->n;
        if (!(z[i] = calloc(nq ? nq : 1, sizeof *z[i]))) {
            st[i] = VW_FAIL(&errs[i], VW_ENOMEM, "out_of_memory", "head outputs");
            continue;
        }
        gather_to to = {NULL, NULL, NULL, NULL, jobs, base[i]};
        st[i] = gather_plan(h, plans[i], &x[i], NULL, z[i], &to, &errs[i]);
    }
}
