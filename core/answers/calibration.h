/* calibration.h — a Vela 2.0 package's calibration.json and the calibrated
 * probabilities it gives (docs/spec/answers.md §4).
 *
 * Owns: parsing calibration.json (every key the answer side reads: temperature,
 * thresholds, pii_types, pii_length_rule, pii_buckets, pii_sparse_gate,
 * broad_head, noul_calibration; unknown keys, e.g. the *_schema blocks the
 * request side reads, are ignored), temperatures, per-type probabilities and
 * confidences in float64, Set and Span threshold resolution (§4.4–4.6) and the
 * optional Noul calibration (§4.8). Never: head math (heads.h), span decoding
 * (span_decode.h), JSON output.
 *
 * Numerics follow the reference (NumPy float64): x / T elementwise, then the
 * softmax, sigmoid and exactly rounded sums of util/f64.h.
 *
 * Ownership: vw_cal_load / vw_cal_parse return a vw_cal the caller releases with
 * vw_cal_free. Strings returned by accessors are borrowed from the vw_cal.
 * Thread-safety: a loaded vw_cal is immutable; every function here may be called
 * from several threads at once.
 * Errors: a malformed file -> VW_EINVAL, type "bad_calibration", the message
 * names the key path (e.g. "thresholds.set:*"). A value a question needs but the
 * file lacks (e.g. "set:*") -> VW_EINVAL, type "calibration_missing_key"; the
 * reference answers such a question with invalid_model_output (answers.h does).
 */
#ifndef VW_CALIBRATION_H
#define VW_CALIBRATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_cal vw_cal;

/* Temperature slots of calibration.json "temperature"; Noul uses CHOICE. */
typedef enum vw_cal_type {
    VW_CAL_CHOICE = 0,
    VW_CAL_SCORE,
    VW_CAL_SET,
    VW_CAL_SPAN,
} vw_cal_type;

/* The two span heads of a decoder package (§4.9). */
typedef enum vw_span_head_kind {
    VW_SPAN_ROUTER = 0,
    VW_SPAN_BROAD,
} vw_span_head_kind;

/* Which rule chose a span threshold (§4.4), for logs and tests. */
typedef enum vw_thr_rule {
    VW_THR_GIVEN = 0,  /* the request's own threshold */
    VW_THR_BROAD,      /* broad_head.threshold */
    VW_THR_PII_LENGTH, /* pii_length_rule ("pii:length") */
    VW_THR_PII_BUCKET, /* legacy pii_buckets entry ("pii:<name>") */
    VW_THR_NAMED,      /* key halu / toxic -> thresholds["span:<key>"] ("<key>") */
    VW_THR_KEY,        /* thresholds["span:<key>"] */
    VW_THR_DEFAULT,    /* thresholds["span:*"] */
} vw_thr_rule;

typedef struct vw_span_threshold {
    double value; /* the threshold to decode at */
    vw_thr_rule rule;
    bool sparse;        /* raised by the PII sparse gate (rule "...+sparse") */
    const char *bucket; /* VW_THR_PII_BUCKET: the bucket name (borrowed) */
} vw_span_threshold;

/* What the span threshold depends on. */
typedef struct vw_span_query {
    const char *key;           /* preset name for presets, else the question ID */
    const char *const *labels; /* [n_labels] labels as rendered (after the alias rewrite) */
    size_t n_labels;
    int64_t part_tokens; /* tokens of the WHOLE target part, before any cut */
    vw_span_head_kind head;
    const double *given; /* the request's threshold, or NULL */
} vw_span_query;

/* Parses len bytes of calibration.json. */
vw_status vw_cal_parse(const char *json, size_t len, vw_cal **out, vw_err *err);
/* Builds a vw_cal from an already parsed document (e.g. vw_bundle_calibration);
 * takes a reference to root (json_incref), so root may be released afterwards
 * and must not be modified while the vw_cal lives. */
vw_status vw_cal_from_json(const json_t *root, vw_cal **out, vw_err *err);
/* Reads and parses a file (VW_EIO when it cannot be read). */
vw_status vw_cal_load(const char *path, vw_cal **out, vw_err *err);
/* Releases cal; NULL is a no-op. */
void vw_cal_free(vw_cal *cal);

/* temperature[type], 1.0 when the key is absent (§4.2). */
double vw_cal_temperature(const vw_cal *cal, vw_cal_type type);
/* Span temperature of a head: temperature.span (router) or broad_head.temperature.
 * VW_EINVAL "calibration_missing_key" for BROAD without a broad_head block. */
vw_status vw_cal_span_temperature(const vw_cal *cal, vw_span_head_kind head, double *out,
                                  vw_err *err);
/* True when calibration.json has a non-empty broad_head block (docs/contract.md
 * Decision 3 also needs broad_head.safetensors; the bundle checks that). */
bool vw_cal_has_broad(const vw_cal *cal);
/* The default of the optional Noul calibration (noul_calibration.default, false
 * when absent). */
bool vw_cal_noul_default(const vw_cal *cal);

/* pii_types membership. */
bool vw_cal_is_pii_type(const vw_cal *cal, const char *label);
/* PII question: key == "pii", or labels non-empty and all in pii_types (§4.4.3). */
bool vw_cal_is_pii(const vw_cal *cal, const char *key, const char *const *labels, size_t n);

/* Set threshold: *given when non-NULL, else thresholds["set:<key>"], else
 * thresholds["set:*"] (missing -> "calibration_missing_key"). */
vw_status vw_cal_set_threshold(const vw_cal *cal, const char *key, const double *given, double *out,
                               vw_err *err);

/* The PII length rule t(n) = exp(interp(ln max(n,1), ln n_k, ln t_k)), clamped to
 * the end anchors (§4.5). VW_EINVAL when the file has no pii_length_rule. */
vw_status vw_cal_pii_length_threshold(const vw_cal *cal, int64_t tokens, double *out, vw_err *err);

/* Span threshold before the sparse gate, first match wins (§4.4): given > broad >
 * PII (length rule, else first bucket with tokens <= max_tokens) > halu/toxic >
 * span:<key> > span:*. out->sparse is false. */
vw_status vw_cal_span_threshold(const vw_cal *cal, const vw_span_query *q, vw_span_threshold *out,
                                vw_err *err);

/* The sparse gate's parameters (§4.6); false when the block is absent, empty or K < 0. */
bool vw_cal_sparse_gate(const vw_cal *cal, int64_t *k, double *t_sparse, double *probe);

/* Writes the rule's name ("given", "broad", "pii:length", "pii:<bucket>", "halu",
 * "span:<key>", "span:*", with "+sparse" appended when raised) into buf[cap],
 * truncating; returns buf. */
const char *vw_span_threshold_name(const vw_span_threshold *t, const char *key, char *buf,
                                   size_t cap);

/* The optional Noul calibration sigmoid(logit(clip(p)) / T + b) when enabled and
 * the block exists; p unchanged otherwise. */
double vw_cal_noul(const vw_cal *cal, double p, bool enabled);

typedef struct vw_choice_stats {
    size_t pick;       /* argmax of the raw z[0..n) (first on ties) */
    double confidence; /* clip(p1 - p2, 0, 1); 1.0 when n == 1 */
    double abstain;    /* softmax(z[0..n] / T)[n] when with_abstain, else 0 */
} vw_choice_stats;

/* Choice: probs[0..n) = softmax(z[0..n) / T_choice). z has n + with_abstain
 * values ([ABS] last). probs must hold n + 1 doubles (scratch for the abstain). */
void vw_cal_choice(const vw_cal *cal, const double *z, size_t n, bool with_abstain, double *probs,
                   vw_choice_stats *st);
/* Noul: softmax([z_no, z_yes] / T_choice)[1] (the [ABS] logit is ignored). */
double vw_cal_noul_yes(const vw_cal *cal, double z_no, double z_yes);
/* Score: probs[0..n) = softmax(z / T_score); *score = fsum(i * p_i) (expected level
 * index); *confidence = clip(1 - fsum(p_i (i - score)^2) / ((n^2 - 1) / 12), 0, 1). n >= 2. */
void vw_cal_score(const vw_cal *cal, const double *z, size_t n, double *probs, double *score,
                  double *confidence);
/* Set: probs[j] = sigmoid(z[j] / T_set) (z already holds set_bias). */
void vw_cal_set_probs(const vw_cal *cal, const double *z, size_t n, double *probs);

#ifdef __cplusplus
}
#endif
#endif
