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

/* Label vectors of one executed span block (their rows come first, range after
 * range: plan.h) into a new [n_labels, H] array. */
static vw_status block_labels(const vw_readout_heads *h, const block_ref *ref, size_t n_labels,
                              float **out, vw_err *err) {
    const vw_pblock *bl = ref->block;
    size_t H = h->hidden;
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
 * (z[], freed by vw_readout_z_free) and the problems appended to pr; label vectors
 * are kept in *labels (a list the caller frees). */
static vw_status gather_plan(const vw_readout_heads *h, const vw_plan *p, const vw_plan_exec_out *x,
                             const float *rows, vw_readout_z *z, problems *pr, float ***labels,
                             size_t *n_labels_bufs, size_t *cap_labels, vw_err *err) {
    size_t cap = p->n_trees ? p->n_trees : 1, H = h->hidden;
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
        int which = sp->head == VW_HEAD_BROAD;
        size_t L = sp->n_labels;
        z[i].span = calloc(n, sizeof *z[i].span);
        z[i].n_span = z[i].span ? n : 0;
        if (!z[i].span)
            st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span logits");
        for (size_t r = 0; st == VW_OK && r < n; r++) {
            size_t nw = refs[r].block->word_positions.n;
            float *lab = NULL;
            st = block_labels(h, &refs[r], L, &lab, err);
            if (st == VW_OK &&
                vw_reserve((void **)labels, cap_labels, *n_labels_bufs + 1, sizeof **labels)) {
                free(lab);
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "label vectors");
            }
            if (st != VW_OK)
                break;
            (*labels)[(*n_labels_bufs)++] = lab;
            z[i].span[r] = malloc((nw ? nw : 1) * L * sizeof *z[i].span[r]);
            if (!z[i].span[r] || vw_reserve((void **)&pr->span[which], &pr->cap_span[which],
                                            pr->n_span[which] + 1, sizeof *pr->span[which])) {
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "span problems");
                break;
            }
            /* word rows follow the label rows (plan.h) */
            size_t at = 0;
            for (size_t l = 0; l < L; l++)
                at += (size_t)(refs[r].block->label_ranges.v[2 * l + 1] -
                               refs[r].block->label_ranges.v[2 * l] + 1);
            pr->span[which][pr->n_span[which]++] =
                (vw_span_problem){refs[r].rows + at * H, nw, lab, L, z[i].span[r]};
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
    problems all = {0}, *per = calloc(n ? n : 1, sizeof *per);
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
        st[i] = gather_plan(h, p, &x[i], rows ? rows + base[i] * h->hidden : NULL, z[i], &per[i],
                            &labels, &n_labels, &cap_labels, &errs[i]);
    }
    bool joined = per != NULL; /* one list of every plan's problems, in plan order */
    for (size_t i = 0; joined && i < n; i++) {
        if (st[i] != VW_OK)
            continue;
        for (size_t k = 0; joined && k < per[i].n_cand; k++)
            if ((joined = !vw_reserve((void **)&all.cand, &all.cap_cand, all.n_cand + 1,
                                      sizeof *all.cand)))
                all.cand[all.n_cand++] = per[i].cand[k];
        for (int which = 0; which < 2; which++)
            for (size_t k = 0; joined && k < per[i].n_span[which]; k++)
                if ((joined = !vw_reserve((void **)&all.span[which], &all.cap_span[which],
                                          all.n_span[which] + 1, sizeof *all.span[which])))
                    all.span[which][all.n_span[which]++] = per[i].span[which][k];
    }
    vw_err one = {0};
    if (!joined || run_heads(h, &all, &one) != VW_OK)
        for (size_t i = 0; per && i < n; i++)
            if (st[i] == VW_OK)
                st[i] = run_heads(h, &per[i], &errs[i]);
    for (size_t i = 0; per && i < n; i++) {
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
