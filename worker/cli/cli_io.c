/* cli_io.c — see cli_io.h. */
#include "cli_io.h"

#include <stdio.h>
#include <stdlib.h>

char *vw_read_stdin(size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, stdin);
        n += r;
        if (n < cap) {
            if (ferror(stdin)) {
                free(buf);
                return NULL;
            }
            break;
        }
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb)
            free(buf);
        buf = nb;
        cap *= 2;
    }
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}
