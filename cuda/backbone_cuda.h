/* backbone_cuda.h — the CUDA backend of the executor seam (executor.h): the
 * Qwen3.5 hybrid text backbone on one GPU, cuBLAS for the projections and
 * hand-written kernels for everything else (docs/spec/backbone.md §3, §4, §6).
 * The CPU backend (core/model/backbone_cpu.c) is the spec; every kernel names the
 * CPU function it mirrors, and tests/test_cuda_*.c compare the two.
 *
 * Precision (vw_cuda_opts.precision):
 *  - VW_CUDA_BF16 (serving): projection matrices and the embedding live on the
 *    device in BF16; GEMM inputs are rounded to BF16, products accumulate in
 *    FP32 and come out FP32 (cublasGemmEx, CUBLAS_COMPUTE_32F). Everything
 *    else (residual stream, norms, conv, gates, delta rule, attention) is
 *    FP32 — the R-AMP regime of docs/spec/backbone.md §3.0 with FP32 GEMM outputs.
 *  - VW_CUDA_BF16X2 (FP32-grade answers on tensor cores): BF16 weights as in
 *    BF16 mode, but each GEMM input x is split into hi = bf16(x) and
 *    lo = bf16(x - hi) and the product is W·hi + W·lo (two BF16 GEMMs, FP32
 *    accumulation). A bundle stores its matrices in BF16 (an F32 one is
 *    rounded once at load), so W is exact, x is carried to ~16 significant
 *    bits, and the GEMM error drops to about FP32 accumulation noise: twice
 *    the GEMM work of BF16, the weight memory of BF16.
 *  - VW_CUDA_FP32 (parity runs): all weights and activations FP32, GEMMs with
 *    CUBLAS_COMPUTE_32F_PEDANTIC (no TF32), so results track the CPU backend
 *    to FP32 rounding noise.
 *  Small tensors (norm weights stored as 1 + w, A = -exp(A_log), dt_bias, the
 *  conv taps) are FP32 in every mode, formed on the host exactly as the CPU
 *  backend forms them.
 *  batch_invariant (FP32 only) replaces cuBLAS by an in-house fixed-order
 *  FP32 GEMM, so a tree's rows are bit-identical whatever else is in the
 *  batch (cuBLAS picks algorithms, split-K included, by shape; docs/spec/backbone.md §6.2).
 *
 * Forward: trees are packed into one variable-length batch of rows (all
 * prefixes, then all blocks). Every layer runs the row-wise work (norms,
 * projections, MLP) over all rows at once; the token mixers read each
 * block's parent prefix in place: attention reads the prefix rows' K/V, the
 * conv reads the prefix's last K-1 pre-conv rows, and the delta rule runs
 * twice per layer (prefixes from a zero state, keeping their final state;
 * then blocks starting from their prefix's state). Readout rows are gathered
 * on the device and copied back once per call. The whole forward, metadata
 * uploads included, is captured into a CUDA graph and launched as one
 * (unless opts->no_graphs); the same shape again replays it: one host launch
 * call instead of ~600 (docs/cuda.md "Launches").
 *
 * Memory: one device arena sized at creation from opts->max_tokens and
 * opts->max_trees; the request path never allocates. A call with more rows,
 * trees or readouts than that returns VW_ETRANSIENT ("batch_too_large"): the
 * caller splits the batch and retries.
 *
 * Heads: unless opts->host_heads, the executor loads the package's readout
 * heads (FP32) and offers executor.h's heads op (cuda/heads_cuda.h): a forward
 * with rows = NULL copies nothing back and returns while the device works, and
 * the heads op that follows computes the logits from the gathered rows and
 * waits. A package without head tensors gives an executor without the op.
 *
 * Ownership: the executor owns its device memory, stream and cuBLAS handle;
 * the bundle may be freed once vw_backbone_cuda_new returns. Threads: one
 * thread drives an executor at a time (executor.h); forward makes the
 * executor's device current on the calling thread. Errors at creation:
 * VW_ECUDA (no device, driver/cuBLAS failure), VW_ENOMEM (the arena does not
 * fit), VW_EUNSUPPORTED (a shape the kernels do not handle, named), or the
 * bundle's own errors. In forward: VW_EINVAL (malformed trees),
 * VW_ETRANSIENT (too large), VW_ECUDA (fatal for the executor).
 */
#ifndef VW_BACKBONE_CUDA_H
#define VW_BACKBONE_CUDA_H

#include <stddef.h>

#include "model/bundle.h"
#include "model/executor.h"
#include "precision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_cuda_opts {
    int device;                  /* CUDA device ordinal */
    size_t max_tokens;           /* rows of one forward call (prefixes + blocks); 0: 32768 */
    size_t max_trees;            /* trees of one forward call; 0: 256 */
    vw_cuda_precision precision; /* see above */
    int batch_invariant;         /* FP32 only: fixed-order GEMM (see above) */
    int spin_wait;               /* 0 (default): the calling thread sleeps while the device works
                                    (an event with cudaEventBlockingSync); 1: it spins (lower
                                    latency, a core busy for the whole forward) */
    int host_heads;              /* 0 (default): the executor offers the heads op when the
                                    package has the heads (heads_cuda.h); 1: it does not, and
                                    the host runs them on the rows (the CPU heads' path) */
    int no_graphs;               /* 0 (default): a forward is captured into a CUDA graph and
                                    launched as one; a forward whose shape repeats one of the
                                    last VW_CUDA_GRAPHS replays its graph (see below); 1: every
                                    kernel, GEMM and copy is launched directly */
    int attn_split_tiles;        /* attention on tensor cores, split-KV: 0 (default) the
                                    executor's rule (vw_cu_attn_split_tiles: parts of <= 10
                                    64-key tiles in calls of <= 8,192 rows); > 0 parts of at most
                                    that many tiles in every call; < 0 never split (docs/cuda.md) */
} vw_cuda_opts;

/* Graphs kept per executor, one per forward shape: rows, trees, segments,
 * readouts, attention items (and the split ones) and delta-rule chunks (what every launch's grid
 * and every copy's size depend on); the least recently used is replaced. */
#define VW_CUDA_GRAPHS 4

/* How the last forward reached the device. */
typedef struct vw_cuda_launches {
    int graph;    /* 0: launched directly (no_graphs, profiling on, or a capture
                     failed once: the executor then stays direct); 1: captured into
                     a new graph, then launched; 2: a kept graph replayed */
    size_t nodes; /* that graph's nodes: kernels (cuBLAS's included) and copies, what
                     the forward enqueues; 0 when launched directly */
} vw_cuda_launches;

/* The last forward's vw_cuda_launches (zeros before the first). ex must be a
 * CUDA executor (VW_EINVAL). */
vw_status vw_backbone_cuda_launches(vw_executor *ex, vw_cuda_launches *out, vw_err *err);

/* Kernel classes of the forward, for vw_backbone_cuda_profile. */
typedef enum vw_cuda_kclass {
    VW_CUK_DELTA = 0, /* the chunked delta rule */
    VW_CUK_ATTENTION, /* tree attention (its Q/K preparation is "rest") */
    VW_CUK_GEMM,      /* projections and the MLP (cuBLAS or the fixed-order GEMM) */
    VW_CUK_REST,      /* conv, norms, gates, RoPE, SwiGLU, embedding, gather, copies */
    VW_CUK_COUNT
} vw_cuda_kclass;

/* "delta_rule", "attention", "gemm", "rest". */
const char *vw_cuda_kclass_name(vw_cuda_kclass k);

/* Per-class timing of the forward on (or off, the default): each forward then
 * records a CUDA event wherever the kernel class changes (a few hundred
 * per forward, on the executor's stream) and, after it returns,
 * vw_backbone_cuda_profile_read gives its milliseconds per class (CUDA event
 * time between consecutive marks, so every kernel and copy of the forward
 * counts once) and their sum. ex must be a CUDA executor. Errors: VW_ECUDA. */
vw_status vw_backbone_cuda_profile(vw_executor *ex, int on, vw_err *err);
vw_status vw_backbone_cuda_profile_read(vw_executor *ex, double ms[VW_CUK_COUNT], double *total_ms,
                                        vw_err *err);

/* Builds a CUDA executor from an open bundle; free it with vw_executor_free.
 * opts may be NULL (device 0, BF16, default sizes). */
vw_status vw_backbone_cuda_new(const vw_bundle *b, const vw_cuda_opts *opts, vw_executor **out,
                               vw_err *err);

/* Device bytes the executor's arena would take for these options and this
 * backbone (weights excluded), for sizing max_tokens. */
size_t vw_backbone_cuda_arena_bytes(const vw_qwen35_config *cfg, const vw_cuda_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
