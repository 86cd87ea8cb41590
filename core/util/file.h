/* file.h — a whole file or stream read into memory.
 *
 * Ownership: the returned buffer is malloc'd, NUL-terminated (so text can be
 * used as a C string) and freed by the caller; *len (may be NULL) receives the
 * byte count, without the NUL. Errors: NULL when the file cannot be opened or
 * read, or on out of memory (errno says which). Thread-safe.
 */
#ifndef VW_FILE_H
#define VW_FILE_H

#include <stddef.h>
#include <stdio.h>

char *vw_read_stream(FILE *f, size_t *len);
char *vw_read_file(const char *path, size_t *len);

#endif
