/* answers.h — one question's answer values from its head logits: picks,
 * probabilities, confidences, thresholds and span lists as C structs
 * (docs/spec/answers.md §4, §6.6, §8.2). The JSON envelope is built from these
 * elsewhere (labels and legends by index; the alias map and canonical JSON are
 * the envelope's).
 *
 * Per-question failures are values, not call failures: non-finite logits
 * anywhere in the question's input, or a calibration value the question needs
 * but calibration.json lacks (the reference's KeyError), give
 * out->error = VW_ANSWER_INVALID_MODEL_OUTPUT with out->detail saying why, and
 * the call returns VW_OK; other questions are unaffected.
 * Call failures: VW_EINVAL "length_mismatch" when the inputs disagree in size
 * (both lengths named; nothing is ever silently zipped), other VW_EINVAL for
 * malformed words/text, VW_ENOMEM.
 *
 * Ownership: a vw_answer owns its arrays and spans; vw_answer_free releases
 * them (the struct itself is the caller's). Every vw_answer_* call overwrites
 * *out whole without freeing it: free a previous answer before reusing the struct. Inputs are
 * borrowed for the call. Thread-safety: pure functions of their inputs (the vw_cal is read-only).
 */
#ifndef VW_ANSWERS_H
#define VW_ANSWERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calibration.h"
#include "span_decode.h"
#include "render/units.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VW_ANSWER_INVALID_MODEL_OUTPUT "invalid_model_output"

typedef enum vw_answer_kind {
    VW_ANS_CHOICE = 0,
    VW_ANS_NOUL,
    VW_ANS_SCORE,
    VW_ANS_SET,
    VW_ANS_SPAN,
} vw_answer_kind;

typedef struct vw_answer {
    vw_answer_kind kind;
    const char *error; /* NULL, or VW_ANSWER_INVALID_MODEL_OUTPUT (static) */
    char detail[192];  /* why it failed, for logs */

    /* CHOICE: pick, confidence, probabilities[n] (real options), abstain.
     * SCORE: score (expected level index), confidence, probabilities[n].
     * SET: probabilities[n] (also the `<qid>.<label>` Noul views), selected[n],
     *      threshold.
     * NOUL: noul.  SPAN: spans, threshold, span_threshold, noul (the Noul view),
     *      head. */
    size_t pick;
    double confidence;
    double *probabilities; /* [n], owned */
    size_t n;
    bool has_abstain;
    double abstain; /* abstain_probability (Choice with [ABS] only) */
    double noul;
    double score;
    bool *selected; /* [n], owned (SET) */
    double threshold;
    vw_span_threshold span_threshold; /* SPAN: value + rule (sparse gate applied) */
    vw_span_list spans;               /* SPAN: owned */
    vw_span_head_kind head;
} vw_answer;

/* Releases the arrays of a; the struct is zeroed (NULL is a no-op). */
void vw_answer_free(vw_answer *a);

/* FP32 head logits -> the float64 the calibration reads (exact). */
static inline void vw_logits_widen(const float *src, size_t n, double *dst) {
    for (size_t i = 0; i < n; i++)
        dst[i] = (double)src[i];
}

/* Logits below are float64 (vw_logits_widen of the head's FP32 output, as the
 * reference converts them before calibrating). */

/* Choice: logits [n_logits] = n_options real options (+ [ABS] last when abstain). */
vw_status vw_answer_choice(const vw_cal *cal, const double *logits, size_t n_logits,
                           size_t n_options, bool abstain, vw_answer *out, vw_err *err);

/* Noul: logits [no, yes] (+ [ABS] when abstain; ignored). calibrate applies the
 * optional Noul calibration (default: vw_cal_noul_default). */
vw_status vw_answer_noul(const vw_cal *cal, const double *logits, size_t n_logits, bool abstain,
                         bool calibrate, vw_answer *out, vw_err *err);

/* Score: logits [n_levels], no abstain option; n_levels >= 2. */
vw_status vw_answer_score(const vw_cal *cal, const double *logits, size_t n_logits, size_t n_levels,
                          vw_answer *out, vw_err *err);

/* Set: logits [n_labels] with set_bias already added (vw_cand_head_logits is_set);
 * threshold = *given, else set:<key>, else set:*; selected iff p > threshold. */
vw_status vw_answer_set(const vw_cal *cal, const double *logits, size_t n_logits, size_t n_labels,
                        const char *key, const double *given, vw_answer *out, vw_err *err);

/* A span question's inputs. */
typedef struct vw_span_answer_in {
    const vw_text *text;  /* the read part's text */
    const int32_t *words; /* [n_words][2] code-point offsets (the plan's words) */
    size_t n_words;
    const double *logits; /* [n_logits] = [n_words][n_labels]: the widened span block, or
                             the window average (§7.1) */
    size_t n_logits;
    const char *key;           /* preset name or question ID (threshold keys) */
    const char *const *labels; /* [n_labels] rendered labels (PII rule) */
    size_t n_labels;
    int64_t part_tokens; /* whole part, before any cut (PII length rule) */
    vw_span_head_kind head;
    const double *given; /* request threshold or NULL */
    bool has_range;      /* `over` names one key of a shared part: */
    int64_t lo, hi;      /*   its code-point range [lo, hi) in the part */
} vw_span_answer_in;

/* Span: P = sigmoid(Z / T_head); threshold (§4.4) then the sparse gate (§4.6);
 * decode (§6.5); clip to [lo, hi) (§6.6); noul = max over words (inside the
 * range when clipped) of max over labels of P, 0.0 with no words. */
vw_status vw_answer_span(const vw_cal *cal, const vw_span_answer_in *in, vw_answer *out,
                         vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
