/* qmetrics.h — one question's accumulator over a replay: labelled answers in,
 * the metrics of docs/eval.md out (choice: accuracy, macro F1, confusion,
 * ECE; noul: AUROC, accuracy, Brier, ECE; score: MAE, RMSE; set: micro and
 * macro F1, per label; span: exact and overlap precision/recall/F1), and the
 * A/B counters compare.c fills.
 *
 * Memory per question: the labels seen (a confusion matrix of k², per-label
 * counts), fixed bins for the plots (a score's 5 KiB, the A/B histogram)
 * and, for a noul, one (p, label) pair per labelled answer (AUROC needs them
 * all); nothing else grows with the number of records.
 *
 * Ownership: a vw_eval_q owns its accumulators (vw_eval_q_free); qid is
 * borrowed from the caller's table. Thread-safety: none. Errors: observe
 * fails with VW_EINVAL, type "bad_label", when the label does not fit the
 * question (wrong JSON type, not one of its options), or VW_ENOMEM; the
 * accumulator is then unchanged.
 */
#ifndef VW_EVAL_QMETRICS_H
#define VW_EVAL_QMETRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "record.h"
#include "stats.h"
#include "strmap.h"

/* Names seen with a count triple each (set labels, span labels). */
typedef struct vw_eval_labelled {
    vw_strmap names;
    vw_eval_prf *c; /* c[i] for names index i */
    size_t cap;
} vw_eval_labelled;

typedef struct vw_eval_choice_acc {
    vw_strmap labels;    /* labels seen, as expected or as picked */
    uint64_t *confusion; /* [expected * k_cap + picked] */
    size_t k_cap;
    uint64_t correct;
    vw_eval_ece ece;
} vw_eval_choice_acc;

typedef struct vw_eval_noul_acc {
    vw_eval_pairs pairs;
    uint64_t correct;
    double brier_sum;
    vw_eval_ece ece;
} vw_eval_noul_acc;

typedef struct vw_eval_span_acc {
    vw_eval_labelled per;                   /* exact triples per label */
    vw_eval_prf exact;                      /* micro */
    uint64_t inter, pred_chars, gold_chars; /* overlap: characters per label, summed */
    struct vw_eval_triple *scratch;         /* per record, reused */
    size_t scratch_cap;
} vw_eval_span_acc;

/* Finished metrics; NaN where undefined (written as null). */
typedef struct vw_eval_metrics {
    double accuracy, macro_f1, ece;                       /* choice; noul: accuracy, ece */
    double auroc, brier;                                  /* noul */
    double mae, rmse;                                     /* score */
    double micro_f1;                                      /* set (and macro_f1) */
    double precision, recall, f1;                         /* span, exact */
    double overlap_precision, overlap_recall, overlap_f1; /* span, characters */
} vw_eval_metrics;

/* One metric of a question type as the reports show it: its JSON key
 * (report_json.c), its column head in the text report (at most 9 characters),
 * its label in the HTML report, and where vw_eval_metrics keeps it. */
typedef struct vw_eval_metric_col {
    const char *key, *column, *label;
    size_t at; /* offsetof(vw_eval_metrics, ...) */
} vw_eval_metric_col;

/* The metrics of a question type in report order, *n of them (none for
 * VW_QT_UNKNOWN): the one table the three reports read. */
const vw_eval_metric_col *vw_eval_metric_cols(vw_qtype t, size_t *n);

/* The value of metric c in m. */
static inline double vw_eval_metric_value(const vw_eval_metrics *m, const vw_eval_metric_col *c) {
    double v;
    memcpy(&v, (const char *)m + c->at, sizeof v);
    return v;
}

typedef struct vw_eval_q {
    const char *qid;
    vw_qtype type;
    uint64_t answered;       /* answers without an error, labelled or not */
    uint64_t errors;         /* per-question errors */
    uint64_t n;              /* labelled answers the metrics use */
    uint64_t type_conflicts; /* answers of another type than the first one seen (skipped) */
    vw_eval_choice_acc choice;
    vw_eval_noul_acc noul;
    double score_abs, score_sq;
    vw_eval_score_bins score; /* the plots' bins (stats.h) */
    vw_eval_labelled set;
    vw_eval_span_acc span;
    /* A/B (compare.c) */
    uint64_t cmp_n, cmp_agree, cmp_n_delta;
    double cmp_delta_sum;
    uint64_t cmp_hist[VW_EVAL_DELTA_BINS]; /* choice, noul: probability changes (stats.h) */
    double cmp_change_sum;                 /* Σ signed change, for its mean */
    vw_eval_metrics m;                     /* valid after vw_eval_q_finish */
} vw_eval_q;

/* A zeroed question of this type. */
vw_status vw_eval_q_new(const char *qid, vw_qtype type, vw_eval_q **out, vw_err *err);
void vw_eval_q_free(vw_eval_q *q);
/* Points qid at another copy of the same id (the table's key, borrowed). */
void vw_eval_q_set_qid(vw_eval_q *q, const char *qid);

/* Counts one answer of a result file: an error, another type than q's (a
 * conflict, skipped) or an answer (answered). */
void vw_eval_q_count(vw_eval_q *q, bool error, vw_qtype type);

/* Counts one answer compared with its baseline (A/B): whether they agree, the
 * delta vw_eval_compare_answers gave and the signed probability change (NaN:
 * none). */
void vw_eval_q_compared(vw_eval_q *q, bool agree, double delta, double change);

/* Adds one answered, labelled question: a (no error, a->type == q->type) and
 * its expected value (docs/eval.md "Labels"). */
vw_status vw_eval_q_observe(vw_eval_q *q, const vw_eval_answer *a, const json_t *label,
                            vw_err *err);

/* Computes q->m (once, at the end: sorts the AUROC pairs). */
void vw_eval_q_finish(vw_eval_q *q);

/* The choice confusion count (expected label i, picked label j). */
static inline uint64_t vw_eval_confusion(const vw_eval_q *q, size_t i, size_t j) {
    return q->choice.confusion[i * q->choice.k_cap + j];
}

/* The count triple of a name, added when new (NULL when out of memory). */
vw_eval_prf *vw_eval_labelled_at(vw_eval_labelled *l, const char *name, size_t len);

#endif
