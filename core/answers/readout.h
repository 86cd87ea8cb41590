/* readout.h — a batch's readout rows to each plan's answers (engine.c's
 * finish): the head problems of every plan, the three heads (candidate,
 * router span, broad span) over the whole batch, then each plan's calibrated
 * answers from its outputs. When the executor runs the heads (executor.h
 * "Heads"), the same problems become its job (vw_readout_heads_jobs) and the
 * answers come from the logits it returned.
 *
 * Ownership: vw_readout_heads holds the heads by value and borrows the
 * calibration (both the engine's); vw_readout_z arrays (one per plan, one
 * element per entry) belong to the caller: vw_readout_z_free. Plans, exec
 * outputs and rows are borrowed.
 * Thread-safety: read-only on the heads and calibration, so any number of
 * threads at once (the worker's processing threads).
 * Errors: VW_ENOMEM, VW_EINVAL "bad_plan"/"length_mismatch" for a plan whose
 * blocks do not match its entries; per plan, in st[]/errs[] (run) or the
 * return value (answer).
 */
#ifndef VW_READOUT_H
#define VW_READOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "answers.h"
#include "calibration.h"
#include "heads.h"
#include "model/head_job.h"
#include "render/plan.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The heads one engine answers with. */
typedef struct vw_readout_heads {
    vw_cand_head cand;
    vw_span_head router, broad;
    bool has_broad;        /* broad is loaded (Decision 3) */
    const vw_cal *cal;     /* borrowed */
    bool noul_calibration; /* noul answers calibrated */
    size_t hidden;         /* floats per readout row (the backbone's width) */
} vw_readout_heads;

/* One entry's head outputs (candidate logits, or one z per executed span
 * block or window). */
typedef struct vw_readout_z vw_readout_z;

/* The heads for the n plans whose st[i] is VW_OK, all at once: every problem
 * goes through its own GEMM per head weight (heads.h), so a row's result does
 * not depend on the rows beside it and batch == single holds byte for byte
 * (docs/envelope.md); when that fails, plan by plan, so the failing plan is
 * the only one marked (st[i], errs[i]). Plan i's rows start at
 * rows + base[i] * hidden (rows may be NULL: no executed tree); z[i] receives
 * its outputs (NULL for a plan not OK). */
void vw_readout_heads_run(const vw_readout_heads *h, size_t n, vw_plan *const *plans,
                          const vw_plan_exec_out *x, const float *rows, const size_t *base,
                          vw_status *st, vw_err *errs, vw_readout_z **z);

/* The same problems as a job for the executor's heads op, for the n plans
 * whose st[i] is VW_OK: plan i's over the batch's readout rows from base[i]
 * on, appended to jobs; z[i] receives the buffers its logits go to (NULL for
 * a plan not OK). A plan whose problems cannot be made fails alone (st[i],
 * errs[i]); problems it added before remain in jobs, harmlessly. */
void vw_readout_heads_jobs(const vw_readout_heads *h, size_t n, vw_plan *const *plans,
                           const vw_plan_exec_out *x, const size_t *base, vw_status *st,
                           vw_err *errs, vw_readout_z **z, vw_head_jobs *jobs);

/* Answers every entry of p the heads gave outputs to (z: p's array from
 * vw_readout_heads_run or vw_readout_heads_jobs; rows may be NULL then);
 * answered[i] says which. Others keep answers[i] unset
 * and are described by the envelope from the plan. */
vw_status vw_readout_answer(const vw_readout_heads *h, const vw_plan *p, const vw_plan_exec_out *x,
                            const float *rows, const vw_readout_z *z, vw_answer *answers,
                            bool *answered, vw_err *err);

/* Frees a plan's outputs (n: its entries); NULL is a no-op. */
void vw_readout_z_free(vw_readout_z *z, size_t n);

#ifdef __cplusplus
}
#endif
#endif
