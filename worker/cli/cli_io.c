/* cli_io.c — see cli_io.h. */
#include "cli_io.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/file.h"

char *vw_read_stdin(size_t *len) {
    return vw_read_stream(stdin, len);
}
