/* bundle_edit.c — copies of a bundle edited for tests (see bundle_edit.h). */
#include "bundle_edit.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/sha256.h"
#include "vw_test.h"

void vw_be_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Copies the tiny bundle into a fresh temp dir; returns it (malloc'd). */
char *vw_be_copy(const char *src) {
    char tmpl[] = "/tmp/vw_bundle_XXXXXX";
    cr_assert(mkdtemp(tmpl));
    DIR *d = opendir(src);
    cr_assert(d, "%s missing", src);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char from[1024], to[1024];
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        snprintf(to, sizeof to, "%s/%s", tmpl, de->d_name);
        size_t n = 0;
        char *buf = vw_test_read_file(from, &n);
        cr_assert(buf, "cannot read %s", from);
        vw_be_write(to, buf, n);
        free(buf);
    }
    closedir(d);
    return strdup(tmpl);
}

void vw_be_remove(char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
}

char *vw_be_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* Replaces the first occurrence of `from` (after `after`, when given) by `to`
 * (same length) inside the file. */
void vw_be_patch(const char *dir, const char *name, const char *after, const char *from,
                 const char *to) {
    cr_assert_eq(strlen(from), strlen(to));
    char *p = vw_be_path(dir, name);
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    cr_assert(buf);
    char *start = after ? memmem(buf, n, after, strlen(after)) : buf;
    cr_assert(start, "'%s' not in %s", after, name);
    char *hit = memmem(start, n - (size_t)(start - buf), from, strlen(from));
    cr_assert(hit, "'%s' not in %s", from, name);
    memcpy(hit, to, strlen(to));
    vw_be_write(p, buf, n);
    free(buf);
    free(p);
}

/* Rewrites MODEL_MANIFEST.json and SHA256SUMS so digests match the damaged
 * files: the refusal must then come from the check under test. A file named
 * sums_only (may be NULL) leaves the manifest and stays in SHA256SUMS. */
void vw_be_rehash_except(const char *dir, const char *sums_only) {
    char *mp = vw_be_path(dir, "MODEL_MANIFEST.json");
    json_t *man = json_load_file(mp, 0, NULL);
    cr_assert(man);
    json_t *files = json_object_get(man, "files_sha256"), *all = json_object();
    const char *key;
    json_t *v;
    char hex[VW_SHA256_HEX];
    json_object_foreach(files, key, v) {
        char *p = vw_be_path(dir, key);
        cr_assert_eq(vw_sha256_file(p, hex, NULL), VW_OK);
        json_object_set_new(all, key, json_string(hex));
        free(p);
    }
    json_object_update(files, all);
    if (sums_only)
        cr_assert_eq(json_object_del(files, sums_only), 0);
    cr_assert_eq(json_dump_file(man, mp, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
    char *sp = vw_be_path(dir, "SHA256SUMS");
    FILE *f = fopen(sp, "w");
    json_object_foreach(all, key, v) fprintf(f, "%s  %s\n", json_string_value(v), key);
    cr_assert_eq(vw_sha256_file(mp, hex, NULL), VW_OK);
    fprintf(f, "%s  MODEL_MANIFEST.json\n", hex);
    fclose(f);
    json_decref(all);
    json_decref(man);
    free(mp);
    free(sp);
}

void vw_be_rehash(const char *dir) {
    vw_be_rehash_except(dir, NULL);
}

/* The object holding the last segment of a dotted path (created on the way). */
static json_t *parent_of(json_t *root, const char *path, char *last, size_t cap) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *o = root;
    char *seg = buf, *dot;
    while ((dot = strchr(seg, '.'))) {
        *dot = 0;
        json_t *next = json_object_get(o, seg);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(o, seg, next);
        }
        o = next;
        seg = dot + 1;
    }
    snprintf(last, cap, "%s", seg);
    return o;
}

void vw_be_set_json(const char *dir, const char *file, const char *path, json_t *value) {
    char *p = vw_be_path(dir, file), last[256];
    json_error_t je;
    json_t *root = json_load_file(p, 0, &je);
    cr_assert(root, "%s: %s", p, je.text);
    json_t *o = parent_of(root, path, last, sizeof last);
    if (value)
        json_object_set_new(o, last, value);
    else
        json_object_del(o, last);
    cr_assert_eq(json_dump_file(root, p, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
    json_decref(root);
    free(p);
}

void vw_be_set_number(const char *dir, const char *file, const char *path, const char *lexeme) {
    char *p = vw_be_path(dir, file), last[256];
    json_t *root = json_load_file(p, 0, NULL);
    cr_assert(root, "%s", p);
    json_t *o = parent_of(root, path, last, sizeof last);
    json_object_set_new(o, last, json_string("@@NUMBER@@"));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    cr_assert(text);
    char *at = strstr(text, "\"@@NUMBER@@\"");
    cr_assert(at);
    size_t head = (size_t)(at - text), tail = strlen(at + 12);
    char *out = malloc(head + strlen(lexeme) + tail + 1);
    memcpy(out, text, head);
    strcpy(out + head, lexeme);
    strcat(out, at + 12);
    vw_be_write(p, out, strlen(out));
    free(out);
    free(text);
    json_decref(root);
    free(p);
}

void vw_be_fill_tensor(const char *dir, const char *file, const char *name, const void *value,
                       size_t size, size_t count) {
    char *p = vw_be_path(dir, file);
    vw_st_file *f = NULL;
    cr_assert_eq(vw_st_open(p, &f, NULL), VW_OK, "%s", p);
    const vw_st_tensor *t = vw_st_find(f, name);
    cr_assert(t, "no tensor %s in %s", name, file);
    cr_assert_eq(vw_dtype_size(t->dtype), size, "%s is %s", name, vw_dtype_name(t->dtype));
    size_t len = 0;
    const unsigned char *base = vw_st_bytes(f, &len);
    size_t off = (size_t)((const unsigned char *)t->data - base);
    size_t n = count && count < t->numel ? count : t->numel;
    vw_st_close(f);
    size_t flen = 0;
    unsigned char *buf = (unsigned char *)vw_test_read_file(p, &flen);
    cr_assert(buf);
    for (size_t i = 0; i < n; i++)
        memcpy(buf + off + i * size, value, size);
    vw_be_write(p, buf, flen);
    free(buf);
    free(p);
}
