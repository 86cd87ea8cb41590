/* cli_io.h — small helpers the one-shot subcommands share (stdin, lines).
 * Ownership: returned buffers are malloc'd and owned by the caller. */
#ifndef VW_CLI_IO_H
#define VW_CLI_IO_H

#include <stddef.h>

/* Reads all of stdin; NULL on a read error or out of memory. The buffer is
 * NUL-terminated (not counted in *len). */
char *vw_read_stdin(size_t *len);

#endif
