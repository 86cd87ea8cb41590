/* envelope.h — the System One response envelope of one planned and answered
 * request (docs/spec/answers.md §8, docs/contract.md "Result record").
 *
 * Key order: answers, usage, then spans, span_heads, sets, thresholds when
 * present (the runtime family's order). Inside answers, entries follow the
 * request's question order; a Set fans out into `<qid>.<label>` Noul views at
 * its position; a Span answers a Noul view. Per-question failures:
 *   invalid_question     {"type": <given type or null>, "error", "message", "loc"}
 *   max_length_exceeded  {"type": <type>, "error"}   (its row cannot fit)
 *   invalid_model_output {"type": <type>, "error"}   (non-finite logits)
 * Floats are Python repr (shortest round trip); offsets are integers.
 * span_heads is written only when the package has a broad head (Decision 3).
 *
 * Ownership: everything is borrowed; the JSON is appended to sb.
 * Errors: VW_EINVAL when an answered entry is inconsistent with its question
 * (never silently zipped); VW_ENOMEM when sb ran out of memory.
 */
#ifndef VW_ENVELOPE_H
#define VW_ENVELOPE_H

#include <stdbool.h>

#include "answers.h"
#include "admission/canonical_json.h"
#include "render/plan.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* answers[i] is meaningful when answered[i] (entries of the plan's request). */
vw_status vw_envelope_write(vw_sbuf *sb, const vw_plan *p, const vw_answer *answers,
                            const bool *answered, bool report_heads, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
