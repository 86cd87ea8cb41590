/* compare.h — A/B over two replays of the same records (docs/eval.md "A/B"):
 * per question, agreement (choice: same pick; noul: same side of 0.5; score:
 * same rounded score; set: same selection; span: same (start, end, label)
 * set) and |Δ| (noul |Δp|; score |Δscore|; choice |Δ| of the probability of
 * A's pick), the signed probability change of a choice or Noul (A − B) in a
 * histogram; per record, whether vela_status changed; the N records that
 * changed most; the first flipped decisions.
 *
 * "Changed most" ranks a status change first, then the number of questions
 * that disagree, then the largest |Δ|; ties keep the earlier record of A.
 *
 * Ownership: the top list copies what it keeps (vw_eval_top_free).
 * Thread-safety: none. Errors: VW_ENOMEM; counters already added stay.
 */
#ifndef VW_EVAL_COMPARE_H
#define VW_EVAL_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "qtable.h"
#include "record.h"

typedef struct vw_eval_change {
    char *id;
    char status_a[64], status_b[64];
    bool status_changed;
    uint32_t disagreements;
    double max_delta;  /* NaN when no question had a |Δ| */
    char changed[160]; /* the disagreeing question ids, comma-separated, cut at 150 bytes */
    uint64_t seq;      /* A's record number, for ties */
} vw_eval_change;

typedef struct vw_eval_top {
    vw_eval_change *v; /* a min-heap by rank until vw_eval_top_sort */
    size_t n, cap;     /* cap = N */
} vw_eval_top;

/* A decision that flipped between the baseline and the results (the answers
 * disagree): the record, the question and each side's decision in words
 * ("refund", "yes 0.62", "2.71", "{a,b}", "3 spans"), cut to fit. */
typedef struct vw_eval_flip {
    char id[80], qid[64];
    char from[64], to[64];
} vw_eval_flip;

/* The first VW_EVAL_KEEP_FLIPS flips in the results' order, and their count. */
#define VW_EVAL_KEEP_FLIPS 20
typedef struct vw_eval_flips {
    vw_eval_flip v[VW_EVAL_KEEP_FLIPS];
    size_t n;
    uint64_t total;
} vw_eval_flips;

/* Compares one answer pair of type t (neither an error). *delta is NaN for
 * set and span. */
void vw_eval_compare_answers(vw_qtype t, const json_t *a, const json_t *b, bool *agree,
                             double *delta);

/* Compares record a with its baseline b: the status, then every question
 * both answered (of a's type in the table), into the table's counters (and a
 * choice's or Noul's probability change into its histogram). *status_changed
 * receives the record-level change. When top is non-NULL and has room for
 * it, the record is offered to it; a flipped decision is added to flips (may
 * be NULL). */
vw_status vw_eval_compare_records(vw_eval_qtable *t, const vw_eval_rec *a, const vw_eval_rec *b,
                                  uint64_t seq, vw_eval_top *top, vw_eval_flips *flips,
                                  bool *status_changed, vw_err *err);

/* Sorts the kept records, most changed first (after this, no more offers). */
void vw_eval_top_sort(vw_eval_top *top);
void vw_eval_top_free(vw_eval_top *top);

#endif
