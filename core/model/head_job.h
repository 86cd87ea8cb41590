/* head_job.h — building head jobs (executor.h vw_head_job) for a batch: a
 * growable list of problems that owns its label ranges, and the slice of it a
 * partial forward can answer (the problems whose rows all lie in a row range,
 * renumbered from the range's start), for a caller that splits a batch.
 *
 * Ownership: vw_head_jobs owns its arrays and copies of the label ranges; the
 * problems' output pointers stay the caller's. Zero-initialise, add, view,
 * then vw_head_jobs_free. Thread-safety: one thread per object. Errors:
 * VW_ENOMEM (the list is unchanged), VW_EINVAL for a range that is not one.
 */
#ifndef VW_HEAD_JOB_H
#define VW_HEAD_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "executor.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_head_jobs {
    vw_head_cand_job *cand;
    size_t n_cand, cap_cand;
    vw_head_span_job *span; /* starts/ends point into ranges[k] */
    size_t n_span, cap_span;
    int32_t **ranges; /* [n_span] owned: n_labels starts, then n_labels ends */
    size_t cap_ranges;
} vw_head_jobs;

/* Appends a candidate problem. */
vw_status vw_head_jobs_add_cand(vw_head_jobs *j, const vw_head_cand_job *c, vw_err *err);
/* Appends a span problem; its starts/ends are copied (the caller's may go). */
vw_status vw_head_jobs_add_span(vw_head_jobs *j, const vw_head_span_job *s, vw_err *err);

/* The job of every problem added (borrows j's arrays). */
vw_head_job vw_head_jobs_view(const vw_head_jobs *j);

/* Fills *out (freed first) with the problems of j whose rows all lie in
 * [r0, r1), in j's order, every row index minus r0: the job of a forward over
 * just those rows. A problem partly inside is left out (a batch is split at
 * tree boundaries, and a problem never spans two trees). */
vw_status vw_head_jobs_slice(const vw_head_jobs *j, int32_t r0, int32_t r1, vw_head_jobs *out,
                             vw_err *err);

/* Frees the arrays and zeroes *j; NULL is a no-op. */
void vw_head_jobs_free(vw_head_jobs *j);

#ifdef __cplusplus
}
#endif
#endif
