/* report_html.h — the report as one self-contained HTML page (`vela-worker
 * eval --html FILE`, docs/eval.md "Output"): inline CSS and SVG, no script,
 * no font or file fetched. The tables of the terminal report, a reliability
 * diagram per choice and noul question, a confusion matrix per choice
 * question, the A/B summary and the records that changed most.
 *
 * Ownership: appends to the caller's buffer. Thread-safety: none. Errors:
 * VW_ENOMEM (the buffer's state, sbuf.h).
 */
#ifndef VW_EVAL_REPORT_HTML_H
#define VW_EVAL_REPORT_HTML_H

#include "eval.h"
#include "util/sbuf.h"

vw_status vw_eval_write_html(const vw_eval_report *r, vw_sbuf *sb);

#endif
