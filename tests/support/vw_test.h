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

#endif
