/* windows.h — decoder span windows over a long target part
 * (docs/spec/request.md §7.4, docs/spec/answers.md §7.1).
 *
 * Windows start at word starts (sorted distinct first-token indices): the
 * first at the first word; each ends at the part's end when the window
 * reaches it, else at the largest word start strictly inside, else at the
 * window limit; the next starts at the first word start in [start + stride,
 * end), else at end.
 *
 * Ownership: *out (pairs [start, end)) is malloc'd for the caller (free).
 * Thread-safety: pure. Errors: VW_ENOMEM; VW_EINVAL for window <= 0.
 */
#ifndef VW_WINDOWS_H
#define VW_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* first: [n_words] first-token index of each word (any order, duplicates
 * allowed); length: tokens in the part. */
vw_status vw_windows(const int32_t *first, size_t n_words, int64_t length, int64_t window,
                     int64_t stride, int64_t **out, size_t *n_out, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
