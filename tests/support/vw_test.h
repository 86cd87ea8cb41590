/* vw_test.h — helpers shared by the Criterion suites (tests/test_*.c). */
#ifndef VW_TEST_H
#define VW_TEST_H

#include <stddef.h>

/* Absolute path of a file in the source tree (e.g. "fixtures/x.json"); the
 * returned string is owned by the caller (free()). */
char *vw_test_path(const char *rel);

/* Reads a whole file; returns a NUL-terminated malloc'd buffer (caller frees) and
 * its length in *len, or NULL when it cannot be read. */
char *vw_test_read_file(const char *path, size_t *len);

/* Writes lines to dir/name, one per line, each ' written as " (so JSON can be
 * written in C strings without escapes); "" makes an empty line. Returns the
 * path (caller frees); aborts when the file cannot be written. */
char *vw_test_write_lines(const char *dir, const char *name, const char *const *lines);

/* The seed of the real-width slice packages (tools/make_slice_goldens.py
 * writes its goldens from the same package). */
#define VW_TEST_SLICE_SEED 20261204ull

/* The random package of a shape ("4b-slice", "9b-slice"; core/model/
 * random_bundle.h) for VW_TEST_SLICE_SEED, written once and reused: in
 * $VW_SLICE_DIR, else $TMPDIR/vw-slices (/tmp/vw-slices), as <shape>-<seed>.
 * Shared by every build and suite of the machine (the writer renames a
 * finished package into place, so concurrent suites are safe). Returns the
 * directory (caller frees), or NULL with the reason on stderr. */
char *vw_test_slice_bundle(const char *shape);

/* A package rewritten together with its manifest: MODEL_MANIFEST.json in dir
 * lists `name` under the file's current SHA-256, and SHA256SUMS is removed.
 * Aborts when it cannot. */
void vw_test_relist(const char *dir, const char *name);

#endif
