/* list.h — one line per record of a replay file (`vela-worker eval --list`,
 * scripts/demo): request id, status, and the main decisions — choice picks,
 * Noul probabilities, scores, set selections, span counts by label, a
 * per-question error's type — or a rejection's first (loc, msg, type), or the
 * dead letter's type. Lines are cut at `width` characters; every string from
 * the record is escaped for the terminal (vw_sbuf_put_visible).
 *
 * Ownership: nothing kept. Thread-safety: none. Errors: VW_EIO when the file
 * cannot be read, VW_ENOMEM; a bad line is written to log as
 * "path:line: message" and skipped.
 */
#ifndef VW_EVAL_LIST_H
#define VW_EVAL_LIST_H

#include <stdio.h>

#include "record.h"
#include "util/sbuf.h"

vw_status vw_eval_list(const char *path, size_t width, FILE *out, FILE *log, vw_err *err);

/* The line of one parsed record (no newline), cut at width characters. */
void vw_eval_list_line(const vw_eval_rec *r, size_t width, vw_sbuf *sb);

#endif
