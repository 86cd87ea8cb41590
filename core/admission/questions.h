/* questions.h — one System One / Vela question validated into the engine's form
 * (docs/spec/request.md §1.4, §1.5, §3.2–3.5; docs/contract.md Decisions 2, 3, 5).
 *
 * Types: choice, noul (a two-option choice no/yes with default texts), score
 * (levels as options), set, span; presets pii / halu / relevance when the
 * calibration has the schema. Choice and noul carry the abstain option.
 * `over` resolves to roles; a single state-key string also records that key's
 * code-point range (span answers are clipped to it).
 *
 * Ownership: vw_question_read fills a caller-owned vw_question whose strings it
 * owns (vw_question_free, also after a failed read). Thread-safety: pure.
 * Errors: an invalid question returns VW_EINVAL and appends exactly one
 * (loc, msg, type) triple to errs (loc rooted at ["body","questions",id]);
 * VW_ENOMEM on allocation failure.
 */
#ifndef VW_QUESTIONS_H
#define VW_QUESTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit_cfg.h"
#include "errlist.h"
#include "json_in.h"
#include "state.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Owned bytes with a length (text may contain U+0000). */
typedef struct vw_str {
    char *p;
    size_t n;
} vw_str;

typedef enum vw_qkind {
    VW_Q_CHOICE = 0,
    VW_Q_NOUL,
    VW_Q_SCORE,
    VW_Q_SET,
    VW_Q_SPAN,
} vw_qkind;

/* Request type name ("noul") and engine type name (noul -> "choice"). */
const char *vw_qkind_name(vw_qkind k);
const char *vw_qkind_engine(vw_qkind k);

typedef enum vw_head {
    VW_HEAD_NONE = -1, /* not given */
    VW_HEAD_ROUTER = 0,
    VW_HEAD_BROAD = 1,
} vw_head;

/* "router" / "broad". */
const char *vw_head_name(vw_head h);

typedef struct vw_option {
    vw_str name; /* option key / level text / label */
    vw_str desc; /* description as model text ("" for null) */
} vw_option;

typedef struct vw_question {
    vw_str id;
    vw_qkind kind;
    vw_str text;    /* instructions as model text */
    vw_str key;     /* calibration key: the preset name, else the question ID */
    unsigned roles; /* bit r: reads role r (state order = role order) */
    vw_option *options;
    size_t n_options;
    bool abstain;
    bool has_threshold;
    double threshold;
    vw_head head;   /* the request's `head`, VW_HEAD_NONE when absent */
    bool has_range; /* span over one state key: answers clip to [lo, hi) */
    int64_t range_lo, range_hi;
} vw_question;

vw_status vw_question_read(const vw_admit_cfg *cfg, const vw_state *st, const char *id, vw_jref q,
                           vw_question *out, vw_errlist *errs, vw_err *err);
void vw_question_free(vw_question *q);

/* The role a span question reads (its only role). */
vw_role vw_question_span_role(const vw_question *q);

/* Span head dispatch (§3.5 / docs/spec/answers.md §4.9). alias: render the single label
 * as `unsupported` (with the halu description) and answer under the caller's. */
typedef struct vw_route {
    vw_head head;
    bool alias;
} vw_route;
vw_route vw_question_route(const vw_admit_cfg *cfg, const vw_question *q);

#ifdef __cplusplus
}
#endif
#endif
