/* bundle_files.h — reading a bundle directory's files safely: a name must stay
 * inside the directory after resolving symlinks, a file may not be larger than
 * its bound (read into memory and parsed whole, so the bound is what memory
 * follows: docs/backbone.md "bundle verify"), and JSON files must be objects.
 * For bundle.c, which hashes, verifies and indexes what these read.
 *
 * Bounds: tokenizer.json VW_TOK_MAX_JSON_BYTES (tokenizer.h); every other file
 * read whole (config.json, calibration.json, MODEL_MANIFEST.json,
 * model.safetensors.index.json, SHA256SUMS) VW_BUNDLE_MAX_JSON_BYTES
 * (below); a safetensors header VW_ST_MAX_HEADER (safetensors.h).
 *
 * Errors: "path_escape" (VW_EINVAL), "missing_file" (VW_EIO), "bad_file"
 * (VW_EIO), "file_too_large" (VW_EINVAL, naming the file, its size and the
 * bound), "bad_json" / "bad_manifest" (VW_EINVAL), VW_ENOMEM. Buffers and
 * objects returned belong to the caller; nothing is returned on failure.
 * Pure: any thread.
 */
#ifndef VW_BUNDLE_FILES_H
#define VW_BUNDLE_FILES_H

#include <jansson.h>
#include <stddef.h>

#include "vw_status.h"

#define MANIFEST "MODEL_MANIFEST.json"
#define SUMS "SHA256SUMS"
#define INDEX "model.safetensors.index.json"
#define BROAD "broad_head.safetensors"

/* The most bytes config.json, calibration.json, MODEL_MANIFEST.json,
 * model.safetensors.index.json and SHA256SUMS may each have (read whole and
 * parsed; real ones are a few KiB, a 9B model's index about 100 KiB): a larger
 * one is refused before it is read ("file_too_large"). tokenizer.json has
 * VW_TOK_MAX_JSON_BYTES, a safetensors header VW_ST_MAX_HEADER. */
#define VW_BUNDLE_MAX_JSON_BYTES (4u << 20)

/* The most bytes the file called name may have. */
size_t vw_bundle_files_max(const char *name);
/* dir/name resolved (*out malloc'd); refuses names that leave the directory,
 * before or after resolving symlinks. */
vw_status vw_bundle_files_resolve(const char *dir, const char *name, char **out, vw_err *err);
/* The file at path (called name in messages) into *buf (malloc'd,
 * NUL-terminated), refused past vw_bundle_files_max(name) before reading. */
vw_status vw_bundle_files_read(const char *path, const char *name, char **buf, size_t *len,
                               vw_err *err);
/* Both: dir/name resolved and read (absent -> missing_file). */
vw_status vw_bundle_files_load(const char *dir, const char *name, char **buf, size_t *len,
                               vw_err *err);
/* A file's bytes parsed as a JSON object (*out: a new reference). */
vw_status vw_bundle_files_object(const char *name, const char *buf, size_t len, json_t **out,
                                 vw_err *err);
/* dir/name loaded and parsed as a JSON object. */
vw_status vw_bundle_files_json(const char *dir, const char *name, json_t **out, vw_err *err);
/* SHA256SUMS (optional: absent is an empty object) as a name -> hex object. */
vw_status vw_bundle_files_sums(const char *dir, json_t **out, vw_err *err);

#endif
