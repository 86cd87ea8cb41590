/* report_json.h — the report as one JSON object (`vela-worker eval --json`,
 * docs/eval.md "Output"):
 *   {"records": {...counts...},
 *    "questions": {"<qid>": {"type", "n", "errors", "answered", <metrics>}},
 *    "compare": {"<qid>": {"n", "agreement", "mean_abs_delta"}, "status_changed": N},
 *    "top": [...], "problems": [...], "problems_total": N}
 * ("compare" and "top" with a baseline). Floats as Python's repr (core/admission/canonical_json.h:
 * the shortest text that round-trips); an undefined metric is null.
 *
 * Ownership: appends to the caller's buffer. Thread-safety: none. Errors:
 * VW_ENOMEM (the buffer's state, sbuf.h).
 */
#ifndef VW_EVAL_REPORT_JSON_H
#define VW_EVAL_REPORT_JSON_H

#include "eval.h"
#include "util/sbuf.h"

vw_status vw_eval_write_json(const vw_eval_report *r, vw_sbuf *sb);

/* Appends s (NUL-terminated) as a JSON string; bytes that are not UTF-8
 * become '?'. */
void vw_eval_json_str(vw_sbuf *sb, const char *s);

/* Appends a JSON number (Python's repr of the float), or null for NaN/inf. */
void vw_eval_json_num(vw_sbuf *sb, double v);

#endif
