/* stats.h — the number kernels of the metrics (docs/eval.md "Metrics"):
 * reliability bins and ECE, ROC AUC with tied scores averaged, and
 * precision/recall/F1 from counts. An undefined value is NaN; the writers
 * print it as null.
 *
 * Ownership: vw_eval_pairs owns its array (vw_eval_pairs_free). Thread-safety:
 * none. Errors: vw_eval_pairs_add fails with VW_ENOMEM (pairs unchanged); the
 * rest cannot fail.
 */
#ifndef VW_EVAL_STATS_H
#define VW_EVAL_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

/* 15 equal-width bins over [0, 1]: bin = min(floor(15·c), 14), so the last
 * bin is closed (c = 1 falls in it). */
#define VW_EVAL_BINS 15

typedef struct vw_eval_ece {
    uint64_t n[VW_EVAL_BINS];
    double conf[VW_EVAL_BINS]; /* sum of confidences */
    uint64_t correct[VW_EVAL_BINS];
} vw_eval_ece;

/* Adds one prediction of confidence c (clamped to [0, 1]). */
void vw_eval_ece_add(vw_eval_ece *e, double c, bool correct);
/* Σ_b n_b/N · |accuracy_b − mean confidence_b|; NaN when empty. */
double vw_eval_ece_value(const vw_eval_ece *e);

/* A score question's predictions and residuals in bins of VW_EVAL_SCORE_STEP
 * (a quarter level), for the report's calibration and residual plots: the
 * prediction bin b holds scores in [b·step, (b+1)·step) (scores from 0 up to
 * VW_EVAL_SCORE_BINS·step, the last bin taking any higher), the residual bin
 * r = prediction − label from −VW_EVAL_RES_BINS/2·step up (clamped at both
 * ends). Fixed size: nothing grows with the records. */
#define VW_EVAL_SCORE_STEP 0.25
#define VW_EVAL_SCORE_BINS 128
#define VW_EVAL_RES_BINS 256

typedef struct vw_eval_score_bins {
    uint64_t n[VW_EVAL_SCORE_BINS];
    double pred[VW_EVAL_SCORE_BINS], label[VW_EVAL_SCORE_BINS]; /* sums */
    uint64_t res[VW_EVAL_RES_BINS];
    double res_sum; /* Σ prediction − label (the bias) */
    double top;     /* the largest prediction or label seen */
} vw_eval_score_bins;

void vw_eval_score_bins_add(vw_eval_score_bins *s, double pred, double label);

/* A/B: the change of a probability (results − baseline: a Noul's p, a
 * choice's probability of the results' pick) in VW_EVAL_DELTA_BINS bins over
 * [−1, 1], the last closed. */
#define VW_EVAL_DELTA_BINS 20

size_t vw_eval_delta_bin(double delta);

/* (score, label) pairs for ROC AUC: one per labelled answer. */
typedef struct vw_eval_pair {
    double p;
    bool y;
} vw_eval_pair;

typedef struct vw_eval_pairs {
    vw_eval_pair *v;
    size_t n, cap;
} vw_eval_pairs;

vw_status vw_eval_pairs_add(vw_eval_pairs *ps, double p, bool y, vw_err *err);
void vw_eval_pairs_free(vw_eval_pairs *ps);
/* ROC AUC as the Mann–Whitney statistic with tied scores given their average
 * rank (equal to sklearn's roc_auc_score, trapezoids over tied groups). Sorts
 * the pairs in place. NaN when only one class is present. */
double vw_eval_auroc(vw_eval_pairs *ps);

/* Counts of one label (or of all, micro). */
typedef struct vw_eval_prf {
    uint64_t tp, fp, fn;
} vw_eval_prf;

/* tp/(tp+fp), NaN when nothing was predicted. */
double vw_eval_precision(vw_eval_prf c);
/* tp/(tp+fn), NaN when nothing was expected. */
double vw_eval_recall(vw_eval_prf c);
/* 2tp/(2tp+fp+fn), NaN when all three are 0. */
double vw_eval_f1(vw_eval_prf c);
/* a/b, NaN when b == 0. */
double vw_eval_ratio(double a, double b);

#endif
