/* fit.h — the truncation order shared by the Vela 2.0 layouts
 * (docs/spec/request.md §7.2, decoder costs §7.3).
 *
 * fixed = 3 + number of parts; over = fixed + question costs + label costs +
 * kept lengths - budget. The first part no question reads (the shrink part)
 * shrinks first, to min(len, 64) then to 1; then the read parts, in state
 * order, down to 1 token each. A row still over budget does not fit.
 *
 * Ownership: caller-owned arrays. Thread-safety: pure. Errors: none; the
 * result says whether the row fits.
 */
#ifndef VW_FIT_H
#define VW_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VW_FIT_FLOOR 64 /* PROMPT_FLOOR / MIN_PART_BUDGET of the reference */

typedef struct vw_fit_result {
    bool fits;
    int64_t over;          /* tokens over budget after every cut (> 0 when !fits) */
    int64_t shrink_cut;    /* tokens cut from the shrink part */
    int64_t protected_cut; /* tokens cut from read parts */
} vw_fit_result;

/* kept[i] holds part i's length on entry and its kept length on return (the
 * values are only meaningful when the row fits). read[i]: a question of the
 * row reads part i. shrink: index of the shrink part, or -1. */
vw_fit_result vw_fit(int64_t schema, int64_t *kept, const bool *read, size_t n_parts,
                     int64_t budget, int shrink);

#ifdef __cplusplus
}
#endif
#endif
