/* heads_cuda.h — the readout heads on the device: CandidateHead and SpanHeadV2
 * (core/model/head_weights.h; the CPU functions of core/answers/heads.h are the
 * oracle) over readout rows already on the GPU, returning only their logits.
 * The CUDA executor runs them as its heads op (core/model/executor.h "Heads")
 * over the rows its forward gathered; vw_cuda_heads_run_host runs the same
 * code on host rows, for tests (tests/test_cuda_heads_dev.c).
 *
 * Math and order, per problem (cuda/heads_cuda.cu names the CPU function each step
 * twins): LayerNorm per row (eps 1e-5, statistics in float64); label vectors
 * as float64 means over their closed row ranges (bit-identical to
 * vw_span_label_means); the centring of a span problem's words (and of its
 * labels when there are two or more) as float64 column sums in row order
 * (bit-identical to the CPU's); the projections through the fixed-order FP32
 * GEMM (cuda/gemm.cu gemm_f32_fixed: one FMA chain per output, k in order);
 * the pair terms with the dot product and the v . GELU(...) sum in float64,
 * GELU in the exact erf form. No step's value for a row depends on the other
 * rows or problems of the job, so a question's logits are the same alone or
 * in any batch (the test checks it bit for bit).
 *
 * Ownership: vw_cuda_heads owns its device copy of the weights and its pinned
 * host buffers; the vw_cand_head / vw_span_head it was made from may be freed
 * afterwards. Job arrays are borrowed for the call; the logits go to the
 * job's host pointers. Thread-safety: one thread at a time per object. Errors:
 * VW_ECUDA (device failure), VW_ENOMEM, VW_EINVAL (a head of another width,
 * a job asking for a head not loaded), VW_ETRANSIENT "batch_too_large" (the job
 * needs more scratch than given: split it).
 */
#ifndef VW_HEADS_CUDA_H
#define VW_HEADS_CUDA_H

#include <stddef.h>

#include "model/executor.h"
#include "model/head_weights.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_cuda_heads vw_cuda_heads;

/* Uploads the heads' weights to the current device in FP32 (the two
 * projections each row goes through stacked into one [2d, H] matrix). broad
 * may be NULL (a package without the broad head). max_rows: the readout rows
 * of one job, which sizes the tables (16 ints a row, pinned and on the device)
 * and the pinned staging of the logits (16 floats a row, at least 4,096:
 * larger outputs come back in several copies). */
vw_status vw_cuda_heads_new(const vw_cand_head *cand, const vw_span_head *router,
                            const vw_span_head *broad, size_t max_rows, vw_cuda_heads **out,
                            vw_err *err);

/* NULL is a no-op. */
void vw_cuda_heads_free(vw_cuda_heads *h);

/* For tests: rows [n_rows, H] (host) are copied to fresh device memory and the
 * job runs as the executor's heads op would run it (own scratch, stream and
 * event, freed before returning). The job is checked (vw_head_job_validate). */
vw_status vw_cuda_heads_run_host(vw_cuda_heads *h, const float *rows, size_t n_rows,
                                 const vw_head_job *job, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
