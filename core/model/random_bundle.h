/* random_bundle.h — a Vela 2.0 decoder package with seeded random weights, for
 * benchmarks and tests that need a model of a given shape and no Python (the
 * GPU machine has none). Never a trained model: its answers are well-formed,
 * not wise.
 *
 * The package: config.json (the template's, with the shape's backbone_config
 * and a model_name naming the shape), model.safetensors (every backbone tensor
 * of qwen35_config.h's inventory, BF16 but A_log F32, HF-like init ranges; the
 * candidate head `head.*`, `set_bias` and the router span head `span2.*` in
 * F32 at the backbone's hidden size), broad_head.safetensors (`span_broad.*`)
 * when the template has one, tokenizer.json and calibration.json copied from
 * the template (so the label sets and presets are the template's), and
 * MODEL_MANIFEST.json with every file's SHA-256 and the generator, its
 * version, shape and seed. A directory whose manifest names the same
 * generator, version, shape and seed is reused as it is (vw_bundle_open
 * verifies it); any other package there is replaced (only a package this
 * writer wrote: a directory holding other files is refused).
 *
 * Values: each tensor is drawn in chunks of 2^20 elements, each chunk from its
 * own stream seeded by (seed, tensor name, chunk index), by up to 16 threads
 * (the online cores): the bytes depend only on shape and seed. The package is
 * written into a sibling directory and renamed into place, so a reader or a
 * concurrent writer of the same package never sees half of one.
 *
 * Shapes (VW_RANDOM_SHAPES):
 *   "0.8b"      the Qwen3.5-0.8B backbone (docs/spec/backbone.md §1.1): hidden
 *               1,024, 24 layers, 248,320 embedding rows (~1.5 GB);
 *   "4b", "9b"  the 4B and 9B backbones (§1.2): hidden 2,560 / 4,096, 32
 *               layers, SwiGLU 9,216 / 12,288, 16 query heads over 4 KV heads
 *               of 256, DeltaNet 16 key heads / 32 value heads of 128 (the
 *               grouped v->k mapping of §3.5), 248,320 rows (~8.4 / ~15.9 GB);
 *               the 2B is left out: its SwiGLU width has no primary source;
 *   "4b-slice", "9b-slice"
 *               the same widths with VW_RANDOM_SLICE_LAYERS layers (a Gated
 *               DeltaNet layer, then a full-attention one) and the template's
 *               vocabulary (~0.44 / ~0.86 GB): real-width parity on a CPU;
 *   "ceiling"   hidden 1,024 with the smallest backbone the loader accepts
 *               (4 layers of width 64/32, the template's vocabulary; ~10 MB):
 *               the real heads' shapes for executors that never read the
 *               backbone (core/model/synthetic.h; bench/ceiling.sh).
 * Errors: VW_EINVAL (unknown shape, unreadable template), VW_EIO (writing, or
 * dir holds something this writer did not write).
 * Thread-safety: reentrant; writes only under dir and its sibling dir.tmp-*.
 */
#ifndef VW_RANDOM_BUNDLE_H
#define VW_RANDOM_BUNDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "qwen35_config.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Layers of the "4b-slice" and "9b-slice" shapes. */
#define VW_RANDOM_SLICE_LAYERS 2
/* The shape names, for messages. */
#define VW_RANDOM_SHAPES "0.8b, 4b, 9b, 4b-slice, 9b-slice, ceiling"

/* Writes (or reuses) the package in dir from the template package tmpl
 * (e.g. fixtures/tiny-vela). *reused tells which (may be NULL). */
vw_status vw_random_bundle_write(const char *dir, const char *shape, const char *tmpl,
                                 uint64_t seed, bool *reused, vw_err *err);

/* The backbone config of a shape on its own (248,320 embedding rows whatever
 * the shape): what core/model/synthetic.h's sim models. */
vw_status vw_random_shape_config(const char *shape, vw_qwen35_config *c, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
