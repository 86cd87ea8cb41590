/* file.c — see file.h. */
#include "file.h"

#include <stdlib.h>

char *vw_read_stream(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) { /* end of file or an error */
            if (ferror(f)) {
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
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

char *vw_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = vw_read_stream(f, len);
    fclose(f);
    return buf;
}
