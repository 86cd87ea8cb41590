/* report_text.h — the report as aligned tables for a terminal, one per
 * question type, at most 100 columns wide (the default output of
 * `vela-worker eval`, docs/eval.md "Output"). Every string from a file (ids,
 * labels, statuses, paths) is escaped for the terminal (vw_sbuf_put_visible).
 *
 * Ownership: appends to the caller's buffer. Thread-safety: none. Errors:
 * VW_ENOMEM (the buffer's state, sbuf.h).
 */
#ifndef VW_EVAL_REPORT_TEXT_H
#define VW_EVAL_REPORT_TEXT_H

#include "eval.h"
#include "util/sbuf.h"

vw_status vw_eval_write_text(const vw_eval_report *r, vw_sbuf *sb);

#endif
