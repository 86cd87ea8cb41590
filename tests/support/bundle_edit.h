/* bundle_edit.h — copies of a bundle edited for tests: a file patched, a JSON
 * value set, a tensor filled, the digests rewritten so that the refusal under
 * test comes from the check under test and not from a checksum. Criterion
 * asserts on any failure; returned strings are malloc'd (the caller frees). */
#ifndef VW_TEST_BUNDLE_EDIT_H
#define VW_TEST_BUNDLE_EDIT_H

#include <jansson.h>
#include <stddef.h>

#include "model/safetensors.h"

/* Writes n bytes to path. */
void vw_be_write(const char *path, const void *p, size_t n);
/* Copies the bundle directory src into a fresh temp dir; returns its path. */
char *vw_be_copy(const char *src);
/* Removes the copy and frees dir. */
void vw_be_remove(char *dir);
/* dir/name (malloc'd). */
char *vw_be_path(const char *dir, const char *name);
/* Replaces the first occurrence of `from` (after `after`, when given) by `to`
 * (same length) inside dir/name. */
void vw_be_patch(const char *dir, const char *name, const char *after, const char *from,
                 const char *to);
/* Rewrites MODEL_MANIFEST.json and SHA256SUMS to match the files; a file named
 * sums_only (may be NULL) leaves the manifest and stays in SHA256SUMS. */
void vw_be_rehash_except(const char *dir, const char *sums_only);
void vw_be_rehash(const char *dir);
/* Sets the member at a dotted path ("span_layout.window") of the JSON file
 * dir/file to value (a stolen reference; NULL deletes it). */
void vw_be_set_json(const char *dir, const char *file, const char *path, json_t *value);
/* The same with a number written as given ("1e-300", "1e9"), jansson's own
 * formatting bypassed. */
void vw_be_set_number(const char *dir, const char *file, const char *path, const char *lexeme);
/* Writes value (size bytes: one element of the tensor's dtype) over the first
 * count elements (0: all) of tensor name in the safetensors file dir/file. */
void vw_be_fill_tensor(const char *dir, const char *file, const char *name, const void *value,
                       size_t size, size_t count);

#endif
