/* span_decode.h — word x label probabilities to labelled spans (docs/spec/answers.md
 * §6.5 decoder, §6.6 clipping, §4.6 sparse gate, §7.1 window aggregation).
 *
 * Inputs are the plan's words (code-point [start, end) offsets into the part's
 * text, ascending and disjoint; the `_WORD` split is the plan's, never redone
 * here), a W x L float64 matrix and the part's text (for `_UNIT` vote units and
 * the trims, units.h). The decoder reproduces the reference's float32 steps:
 * probabilities and the threshold are rounded to float32 before comparing, and a
 * span's probability is the float32 mean (NumPy pairwise float32 sum, float32
 * divide) of its words' probabilities.
 *
 * Ownership: a vw_span_list owns its items (vw_span_list_free); everything else
 * is borrowed for the call. Thread-safety: pure functions over caller data.
 * Errors: VW_EINVAL for malformed input naming both lengths or the bad word
 * ("bad_words", "length_mismatch"), non-finite probabilities ("invalid_model_output"),
 * VW_ENOMEM. On failure *out is empty.
 */
#ifndef VW_SPAN_DECODE_H
#define VW_SPAN_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "calibration.h"
#include "render/units.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_span {
    int32_t label;      /* index into the question's (rendered) labels */
    int64_t start, end; /* reported code-point range (rebased to the `over` range when clipped) */
    int64_t text_start; /* the span's text = part text code points [text_start, text_end) */
    int64_t text_end;
    double probability; /* the float32 mean, widened exactly */
} vw_span;

typedef struct vw_span_list {
    vw_span *items; /* [n], owned */
    size_t n;
} vw_span_list;

void vw_span_list_free(vw_span_list *l);

/* Decodes spans at `threshold` (§6.5). words: [n_words][2]; probs: [n_words][n_labels]
 * row-major (n_labels >= 1). No words, or no word above the threshold -> no spans. */
vw_status vw_span_decode(const vw_text *text, const int32_t *words, size_t n_words,
                         const double *probs, size_t n_labels, double threshold, vw_span_list *out,
                         vw_err *err);

/* The PII sparse gate (§4.6), applied in place: when thr is a PII rule (length or
 * bucket), the calibration has a gate with K >= 0, thr->value < t_sparse and there
 * is at least one word, decodes the same probabilities at the probe threshold;
 * at most K spans -> thr->value = t_sparse, thr->sparse = true. */
vw_status vw_span_sparse_gate(const vw_cal *cal, const vw_text *text, const int32_t *words,
                              size_t n_words, const double *probs, size_t n_labels,
                              vw_span_threshold *thr, vw_err *err);

/* Clips every span to the `over` range [lo, hi) of the part (§6.6): [max(start, lo),
 * min(end, hi)) re-trimmed, dropped when empty, reported as start - lo, end - lo
 * (text_start/text_end keep the clipped part offsets). 0 <= lo <= hi <= text->n. */
vw_status vw_span_clip(const vw_text *text, vw_span_list *spans, int64_t lo, int64_t hi,
                       vw_err *err);

/* One window's span-head output over its words (§7.1). */
typedef struct vw_span_window {
    const int32_t *word_index; /* [n] ascending indices into the part's words */
    size_t n;
    const float *logits; /* [n][n_labels] */
} vw_span_window;

/* The logit a word no window covers gets (before temperature). */
#define VW_SPAN_UNCOVERED_LOGIT (-30.0)

/* logits[w][l] = float64 mean of the windows' logits over the windows holding word
 * w, VW_SPAN_UNCOVERED_LOGIT when none does (before temperature and sigmoid). */
vw_status vw_span_window_average(const vw_span_window *windows, size_t n_windows, size_t n_words,
                                 size_t n_labels, double *logits, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
