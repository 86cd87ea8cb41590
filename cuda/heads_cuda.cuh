/* heads_cuda.cuh — the device heads' entry for the CUDA executor (internal to
 * cuda/; the contract is heads_cuda.h's). The executor lends the heads buffers
 * its forward no longer needs once the readout rows are gathered (docs/cuda.md
 * "Heads on the device"); a job that does not fit them is VW_ETRANSIENT.
 */
#ifndef VW_HEADS_CUDA_CUH
#define VW_HEADS_CUDA_CUH

#include "cuda_common.cuh"
#include "heads_cuda.h"

/* Device scratch one job may use, all of it overwritten, by kernels on the
 * job's stream only (the tables have their own device copy: their upload may
 * run beside work still queued on that stream). */
typedef struct vw_cu_heads_scratch {
    float *xn; /* normed rows: passes need (rows + labels) x H */
    size_t xn_floats;
    float *proj; /* projections: (rows + labels) x 2d */
    size_t proj_floats;
    float *out; /* every logit of the job */
    size_t out_floats;
} vw_cu_heads_scratch;

/* Where a job runs. */
typedef struct vw_cu_heads_streams {
    cudaStream_t s;       /* the kernels and the copies back */
    cudaStream_t copy;    /* the table upload; NULL: on s. A separate stream lets the upload
                             overlap work s still has queued (the forward before the heads) */
    cudaEvent_t uploaded; /* with copy: recorded after the upload; s waits for it */
    cudaEvent_t done;     /* the caller's wait (blocking-sync or not) */
} vw_cu_heads_streams;

/* Runs job over rows [n_rows, H] (device): the tables go up in one
 * asynchronous copy from pinned memory, the kernels run on ss->s after the
 * work already queued there, the logits come back through the pinned staging
 * (asynchronous copies, then a wait on ss->done), and are scattered to the
 * job's host pointers. The job must have passed vw_head_job_validate. */
vw_status vw_cu_heads_run(vw_cuda_heads *h, const float *rows, size_t n_rows,
                          const vw_head_job *job, const vw_cu_heads_scratch *sc,
                          const vw_cu_heads_streams *ss, vw_err *err);

/* Whether h holds the span head `head` (VW_SPAN_HEAD_BROAD may be absent). */
int vw_cu_heads_has(const vw_cuda_heads *h, int head);

#endif
