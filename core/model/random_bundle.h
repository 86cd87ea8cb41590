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
 * MODEL_MANIFEST.json with every file's SHA-256 and the generator, shape and
 * seed. A directory whose manifest names the same generator, shape and seed is
 * reused as it is (vw_bundle_open verifies it).
 *
 * Shapes:
 *   "0.8b"     the Qwen3.5-0.8B backbone (docs/spec/backbone.md §1.1): hidden
 *              1,024, 24 layers, 248,320 embedding rows (~1.5 GB);
 *   "ceiling"  hidden 1,024 with the smallest backbone the loader accepts
 *              (4 layers of width 64/32, the template's vocabulary; ~10 MB): the
 *              real heads' shapes for executors that never read the backbone
 *              (core/model/synthetic.h; bench/ceiling.sh).
 * Errors: VW_EINVAL (unknown shape, unreadable template), VW_EIO (writing).
 * Thread-safety: reentrant; writes only under dir.
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

/* Writes (or reuses) the package in dir from the template package tmpl
 * (e.g. fixtures/tiny-vela). *reused tells which (may be NULL). */
vw_status vw_random_bundle_write(const char *dir, const char *shape, const char *tmpl,
                                 uint64_t seed, bool *reused, vw_err *err);

/* The backbone config of a shape on its own (the 0.8B vocabulary for both):
 * what core/model/synthetic.h's sim models by default. */
vw_status vw_random_shape_config(const char *shape, vw_qwen35_config *c, vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
