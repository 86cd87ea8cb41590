/* synthetic.h — two executors behind the seam (executor.h) for benchmarks and
 * tests of the host side: they never read the backbone's weights.
 *
 *   instant  returns the readout rows at once: row values are a deterministic
 *            function of the readout's token id, position and index within
 *            its tree (one of 64 fixed random vectors with unit RMS, as a final
 *            RMSNorm output before its weight), at the bundle's hidden size, so
 *            a tree's rows do not depend on the batch it is in;
 *   sim      the same rows, returned when the modelled device would have
 *            finished the call: start + calls' fixed cost + model FLOPs /
 *            sustained TFLOP/s + tokens x per-token memory time, for the
 *            Vela-2.0-0.8B backbone (docs/spec/backbone.md §1.1) unless told to
 *            model the bundle's own (model=bundle). The calling
 *            thread is held (a blocking wait) as a real device call holds it,
 *            so a caller that overlaps host work with execution shows it.
 *
 * Both offer the heads op (executor.h "Heads") with synthetic logits: each a
 * deterministic function of the keys (token, position, index) of the readouts
 * the problem names, uniform in [-4, 4), so bench/ceiling.sh measures the host
 * work that is left when a device runs the heads (docs/performance.md "Host
 * ceiling"), and a question's logits do not depend on its batch. A forward
 * given rows = NULL writes no rows.
 *
 * Model FLOPs of a tree (vw_qwen35_tree_flops): every projection GEMM,
 * 2·N·K per token, plus 4·head_dim per query-key pair and query head in each
 * attention layer (bench/bench_gpu.c reports TFLOP/s with the same count);
 * DeltaNet recurrences and elementwise work are not counted.
 *
 * Defaults (VW_SIM_H200): an H200 at 40 % of its 790 TFLOP/s BF16 dense peak
 * (316 TFLOP/s: the share a 1,024-wide, 0.8B model's GEMMs of K = 1,024-3,584
 * keep busy once attention, DeltaNet and norms are added), 2 ms per call
 * (24 layers x ~16 kernels at ~5 us launch and tail each, no CUDA graphs) and
 * 0.1 us per token (the ~0.5 MB of activations each token moves through HBM
 * at 4.8 TB/s). docs/performance.md "Host ceiling" says why and what they
 * give.
 *
 * Not offered to users as a device: selected by VW_BENCH_EXECUTOR (pipeline
 * processor, worker/pipeline.c) in benches and tests only.
 * Ownership/threads/errors: as executor.h; VW_EINVAL for a bad spec.
 */
#ifndef VW_SYNTHETIC_H
#define VW_SYNTHETIC_H

#include <stdbool.h>
#include <stddef.h>

#include "bundle.h"
#include "executor.h"
#include "qwen35_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_synthetic_opts {
    bool sim;        /* false: instant */
    double tflops;   /* sim: sustained model TFLOP/s */
    double call_us;  /* sim: fixed cost of one forward call */
    double token_ns; /* sim: time per token (memory traffic) */
    bool bundle;     /* sim: model the bundle's own backbone (default: Vela-2.0-0.8B's,
                        whatever the bundle: its heads may sit on a token backbone) */
} vw_synthetic_opts;

#define VW_SIM_H200                                                                                \
    { true, 316.0, 2000.0, 100.0, false }

/* "instant", "sim" (the H200 defaults, the 0.8B model) or
 * "sim:tflops=T,call_us=C,token_ns=N,model=0.8b|bundle" (any subset). */
vw_status vw_synthetic_parse(const char *spec, vw_synthetic_opts *o, vw_err *err);

/* A synthetic executor for the bundle's backbone shape (hidden, vocabulary). */
vw_status vw_synthetic_new(const vw_bundle *b, const vw_synthetic_opts *o, vw_executor **out,
                           vw_err *err);

/* Model FLOPs of one tree (see above). */
double vw_qwen35_tree_flops(const vw_qwen35_config *c, const vw_tree *t);

/* The modelled seconds of one call over trees[0..n) (sim's wait). */
double vw_synthetic_seconds(const vw_synthetic_opts *o, const vw_qwen35_config *c,
                            const vw_tree *trees, size_t n);

#ifdef __cplusplus
}
#endif
#endif
