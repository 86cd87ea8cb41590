/* vw_test.c — see vw_test.h. */
#include "vw_test.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/random_bundle.h"
#include "util/file.h"
#include "util/sha256.h"

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

char *vw_test_slice_bundle(const char *shape) {
    const char *root = getenv("VW_SLICE_DIR"), *tmp = getenv("TMPDIR");
    char base[2048], dir[2300];
    if (root && *root)
        snprintf(base, sizeof base, "%s", root);
    else
        snprintf(base, sizeof base, "%s/vw-slices", tmp && *tmp ? tmp : "/tmp");
    if (mkdir(base, 0755) && errno != EEXIST) {
        fprintf(stderr, "vw_test_slice_bundle: %s: %s\n", base, strerror(errno));
        return NULL;
    }
    snprintf(dir, sizeof dir, "%s/%s-%llu", base, shape, (unsigned long long)VW_TEST_SLICE_SEED);
    char *tmpl = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    vw_status st = vw_random_bundle_write(dir, shape, tmpl, VW_TEST_SLICE_SEED, NULL, &err);
    free(tmpl);
    if (st != VW_OK) {
        fprintf(stderr, "vw_test_slice_bundle: %s: %s\n", dir, err.msg);
        return NULL;
    }
    return strdup(dir);
}

void vw_test_relist(const char *dir, const char *name) {
    char mp[4200], p[4200], hex[VW_SHA256_HEX];
    snprintf(mp, sizeof mp, "%s/MODEL_MANIFEST.json", dir);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    json_t *m = json_load_file(mp, 0, NULL);
    if (vw_sha256_file(p, hex, NULL) != VW_OK || !m ||
        json_object_set_new(json_object_get(m, "files_sha256"), name, json_string(hex)) ||
        json_dump_file(m, mp, JSON_INDENT(2))) {
        fprintf(stderr, "vw_test_relist: cannot relist %s in %s\n", name, mp);
        abort();
    }
    json_decref(m);
    snprintf(p, sizeof p, "%s/SHA256SUMS", dir);
    unlink(p);
}
