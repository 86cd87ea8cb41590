/* backbone_cpu.h — the CPU reference backend of the executor seam (executor.h):
 * the Qwen3.5 hybrid text backbone in FP32 (docs/spec/backbone.md §3, regime
 * R-FP32), OpenBLAS sgemm for every projection.
 *
 * Load: every backbone tensor of the bundle (BF16/F16/F32) is upcast once to
 * FP32 into one arena owned by the executor; stacked projections (GDN
 * qkv|z|b|a, attention q/gate|k|v, MLP gate|up) become single matrices;
 * zero-centred norm weights are stored as 1 + w and A_log as -exp(A_log),
 * both formed in FP32 as transformers does. The bundle's pages are dropped
 * after upcasting, and the bundle may be freed once this returns.
 *
 * Forward (vw_executor_forward): per tree, the prefix runs once from an empty
 * state at positions 0 .. n_prefix-1 and keeps, per layer, the attention K/V
 * and the DeltaNet recurrent state + conv history (last K-1 pre-conv rows);
 * every block then runs from a copy of that state at positions n_prefix + j,
 * attending to the prefix K/V and causally to itself only. Rows are the
 * final-RMSNorm outputs at the readout indices, in executor.h's order.
 *
 * Threads: the executor owns one task pool (util/pool.h) of `threads`
 * workers, the calling thread included; every stage of the forward is a run
 * of it (ops_par.h; docs/backbone.md "Threads"). It is the only threading:
 * creating the executor sets OpenBLAS to one thread process-wide
 * (openblas_set_num_threads(1); OPENBLAS_NUM_THREADS no longer matters), so
 * every sgemm runs on the pool thread that calls it. The rows are the same
 * bits for any number of threads. One executor serves one thread at a time
 * (executor.h). Memory per call: activations for the longest segment, the
 * prefix state and per-worker scratch (attention scores, [128, prefix +
 * segment] floats each), allocated per call; failure to allocate them is
 * VW_ETRANSIENT ("out_of_memory": split the batch and retry).
 * Errors at load: VW_ENOMEM, VW_EINVAL "bad_threads", the pool's
 * "thread_create", or the bundle's own checks (already done).
 */
#ifndef VW_BACKBONE_CPU_H
#define VW_BACKBONE_CPU_H

#include "bundle.h"
#include "executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a CPU executor from an open bundle with a pool of `threads`
 * workers (0: vw_cpu_count(), the CPUs this process may use); the caller frees
 * it with vw_executor_free. threads <= VW_POOL_MAX_THREADS. */
vw_status vw_backbone_cpu_new_threads(const vw_bundle *b, unsigned threads, vw_executor **out,
                                      vw_err *err);

/* vw_backbone_cpu_new_threads with threads 0. */
vw_status vw_backbone_cpu_new(const vw_bundle *b, vw_executor **out, vw_err *err);

/* The pool's workers of a CPU executor; 0 for another backend. */
unsigned vw_backbone_cpu_threads(const vw_executor *ex);

#ifdef __cplusplus
}
#endif
#endif
