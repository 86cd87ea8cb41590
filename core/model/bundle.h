/* bundle.h — a Vela 2.0 decoder package directory, verified and indexed.
 *
 * Layout read (docs/spec/answers.md §1): config.json (backbone_config, max_length,
 * span_head, span_layout, ...), model.safetensors.index.json + its shards or
 * a single model.safetensors, broad_head.safetensors (optional),
 * calibration.json, tokenizer.json, MODEL_MANIFEST.json (files_sha256,
 * required) and SHA256SUMS (optional).
 *
 * vw_bundle_open refuses the package unless all of this holds:
 *  - every file it reads, and every file either digest list names, lies inside
 *    the directory after resolving symlinks (type "path_escape"), exists
 *    ("missing_file") and matches every SHA-256 listed for it in
 *    MODEL_MANIFEST.json and SHA256SUMS (VW_EINTEGRITY, "checksum_mismatch");
 *    a file the bundle reads must be listed in at least one of them
 *    ("unlisted_file");
 *  - every safetensors header is sound (see safetensors.h);
 *  - the backbone config is a supported Qwen3.5 text config (qwen35-backbone-
 *    spec §1; sizes follow from it, no size table): rope_type "default",
 *    silu, no attention bias, output gate on ("bad_config"/VW_EUNSUPPORTED);
 *  - the weights hold exactly the backbone tensors the config implies, under
 *    one prefix among "backbone.", "model.language_model.", "model." and ""
 *    (first match of <prefix>embed_tokens.weight), each F32, F16 or BF16
 *    ("bad_dtype") with the shape the config implies ("bad_shape"); a missing
 *    one is "missing_tensor", an unexpected one "unknown_tensor" (both name
 *    the tensor). Besides backbone tensors the shards may hold the heads of
 *    docs/spec/answers.md §1.1 (`head.*`, `set_bias`, `span2.*`), and `mtp.*`,
 *    `model.visual.*`, `lm_head.weight` which are ignored;
 *    broad_head.safetensors holds only `span_broad.*`;
 *  - no file read whole is larger than its bound (bundle_files.h:
 *    "file_too_large").
 *
 * Head tensors: vw_bundle_tensor_f32("span2.K.weight") etc. returns an FP32
 * copy with its shape, whatever the stored dtype (the heads run in FP32);
 * broad-head tensors are looked up in broad_head.safetensors by their full
 * `span_broad.` names. Head shapes are checked by the head module, not here.
 *
 * Ownership: the bundle owns its mappings and parsed JSON; every pointer it
 * returns (config, tensor views, tokenizer bytes) borrows from it and dies
 * with vw_bundle_free. vw_tensor_f32 buffers belong to the caller
 * (vw_tensor_f32_free). Thread-safety: an open bundle is immutable; any
 * number of threads may read it. Errors: VW_EIO / VW_EINVAL /
 * VW_EINTEGRITY / VW_EUNSUPPORTED with a message naming the file, tensor or
 * key; nothing is returned on failure.
 */
#ifndef VW_BUNDLE_H
#define VW_BUNDLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "qwen35_config.h"
#include "safetensors.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An FP32 copy of a tensor, owned by the caller. */
typedef struct vw_tensor_f32 {
    float *data; /* [numel] */
    size_t numel;
    int ndim; /* 0 for a scalar */
    int64_t shape[VW_ST_MAX_DIMS];
} vw_tensor_f32;

typedef struct vw_bundle vw_bundle;

/* Verifies and indexes the package in dir (see above). */
vw_status vw_bundle_open(const char *dir, vw_bundle **out, vw_err *err);

/* The same with an external anchor (docs/backbone.md "Manifest anchor"): the
 * SHA-256 (hex, either case) the deployment expects of MODEL_MANIFEST.json's
 * bytes. When set, the manifest is read and hashed first and a different
 * digest refuses the package before any other file is read (VW_EINTEGRITY,
 * "manifest_mismatch", naming both digests); and every file the bundle reads
 * must then be listed in the manifest itself ("unlisted_file": SHA256SUMS is
 * not covered by the anchor). NULL or "" is vw_bundle_open; anything but 64
 * hex digits is VW_EINVAL "bad_anchor". */
vw_status vw_bundle_open_anchored(const char *dir, const char *manifest_sha256, vw_bundle **out,
                                  vw_err *err);
/* 1 when hex is 64 hex digits (a manifest anchor), else 0. Pure. */
int vw_bundle_anchor_valid(const char *hex);
/* NULL is a no-op. */
void vw_bundle_free(vw_bundle *b);

const char *vw_bundle_dir(const vw_bundle *b); /* the resolved directory */
/* The verified SHA-256 (hex) of config.json, as the manifest or SHA256SUMS lists it. */
const char *vw_bundle_config_sha256(const vw_bundle *b);
/* The package's identity (hex SHA-256, docs/backbone.md "Revision"): a digest
 * of the sorted "<sha256>  <name>" lines of every file MODEL_MANIFEST.json or
 * SHA256SUMS lists (the two lists excepted), all of them verified, so it
 * changes with any file the worker uses. Its first 12 digits are the
 * revision of the vela-model header (engine.h vw_engine_model). */
const char *vw_bundle_content_sha256(const vw_bundle *b);
/* SHA-256 (hex, lower-case) of MODEL_MANIFEST.json's bytes as read and parsed:
 * the value a deployment pins as its anchor. */
const char *vw_bundle_manifest_sha256(const vw_bundle *b);
const vw_qwen35_config *vw_bundle_backbone_config(const vw_bundle *b);
const char *vw_bundle_backbone_prefix(const vw_bundle *b); /* e.g. "backbone." */
int64_t vw_bundle_max_length(const vw_bundle *b);          /* config.json max_length */
int vw_bundle_has_broad_head(const vw_bundle *b);

/* The verified bytes of config.json / calibration.json (NUL-terminated,
 * borrowed): read once, hashed, then parsed from these bytes, so a file
 * changed on disk after opening is never used. */
const char *vw_bundle_config_json(const vw_bundle *b, size_t *len);
const char *vw_bundle_calibration_json(const vw_bundle *b, size_t *len);

/* Parsed config.json / calibration.json (borrowed jansson objects). */
const json_t *vw_bundle_config(const vw_bundle *b);
const json_t *vw_bundle_calibration(const vw_bundle *b);
/* The verified bytes of tokenizer.json (for vw_tok_load_json). */
const char *vw_bundle_tokenizer_json(const vw_bundle *b, size_t *len);

/* A backbone tensor by its prefix-free HF name ("layers.3.self_attn.q_proj.
 * weight"), or NULL. Its shape and dtype were checked at open. */
const vw_st_tensor *vw_bundle_backbone_tensor(const vw_bundle *b, const char *name);
/* The same for a described tensor (qwen35_config.h): "layers.<layer>.<name>",
 * or name itself for layer -1; NULL with VW_EINVAL "missing_tensor" naming it. */
const vw_st_tensor *vw_bundle_layer_tensor(const vw_bundle *b, int layer, const char *name,
                                           vw_err *err);
/* The tensors of the package, i < vw_bundle_tensor_count (by name): the i-th
 * if the worker reads it (backbone and heads), else NULL (mtp.*,
 * model.visual.*, lm_head.weight); *file (may be NULL): its file's path. */
size_t vw_bundle_tensor_count(const vw_bundle *b);
const vw_st_tensor *vw_bundle_tensor_at(const vw_bundle *b, size_t i, const char **file);
/* Any tensor of the package by full name (shards, then broad head), or NULL. */
const vw_st_tensor *vw_bundle_find(const vw_bundle *b, const char *name);
/* Drops the pages behind a tensor from the resident set (after upcasting). */
void vw_bundle_drop_pages(const vw_bundle *b, const vw_st_tensor *t);

/* FP32 copy of the tensor `name` (full name, e.g. "head.key.weight",
 * "set_bias", "span_broad.slot.weight"). Absent -> VW_EINVAL, type
 * "missing_tensor"; on failure out is zeroed. */
vw_status vw_bundle_tensor_f32(const vw_bundle *b, const char *name, vw_tensor_f32 *out,
                               vw_err *err);
/* Frees out->data and zeroes *out; NULL is a no-op. */
void vw_tensor_f32_free(vw_tensor_f32 *t);

#ifdef __cplusplus
}
#endif
#endif
