/* vw_test.c — see vw_test.h. */
#include "vw_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

char *vw_test_path(const char *rel) {
    size_t n = strlen(VW_SOURCE_DIR) + strlen(rel) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", VW_SOURCE_DIR, rel);
    return p;
}

char *vw_test_read_file(const char *path, size_t *len) {
    return vw_read_file(path, len);
}

char *vw_test_write_lines(const char *dir, const char *name, const char *const *lines) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    FILE *f = path ? (snprintf(path, n, "%s/%s", dir, name), fopen(path, "w")) : NULL;
    if (!f) {
        fprintf(stderr, "vw_test_write_lines: cannot write %s/%s\n", dir, name);
        abort();
    }
    for (; *lines; lines++) {
        for (const char *c = *lines; *c; c++)
            fputc(*c == '\'' ? '"' : *c, f);
        fputc('\n', f);
    }
    fclose(f);
    return path;
}
