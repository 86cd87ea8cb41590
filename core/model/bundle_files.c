/* bundle_files.c — a bundle's files read safely (see bundle_files.h): inside
 * the directory, bounded in size, parsed as JSON objects. Owns nothing past a
 * call; never hashes or indexes (bundle.c). */
#include "bundle_files.h"
#include "tokenizer/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t vw_bundle_files_max(const char *name) {
    return strcmp(name, "tokenizer.json") ? (size_t)VW_BUNDLE_MAX_JSON_BYTES
                                          : (size_t)VW_TOK_MAX_JSON_BYTES;
}

vw_status vw_bundle_files_resolve(const char *dir, const char *name, char **out, vw_err *err) {
    *out = NULL;
    size_t nl = strlen(name);
    int dotdot = !strcmp(name, "..") || !strncmp(name, "../", 3) || strstr(name, "/../") ||
                 (nl >= 3 && !strcmp(name + nl - 3, "/.."));
    if (!nl || name[0] == '/' || dotdot)
        return VW_FAIL(err, VW_EINVAL, "path_escape", "file name '%s' leaves the bundle directory",
                       name);
    char joined[PATH_MAX], real[PATH_MAX];
    if (snprintf(joined, sizeof joined, "%s/%s", dir, name) >= (int)sizeof joined)
        return VW_FAIL(err, VW_EINVAL, "path_escape", "path of '%s' is too long", name);
    if (!realpath(joined, real))
        return VW_FAIL(err, VW_EIO, "missing_file", "bundle file %s: %s", name, strerror(errno));
    size_t dl = strlen(dir);
    if (strncmp(real, dir, dl) || real[dl] != '/')
        return VW_FAIL(err, VW_EINVAL, "path_escape",
                       "bundle file %s resolves to %s, outside the bundle directory %s", name, real,
                       dir);
    if (!(*out = strdup(real)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%s", name);
    return VW_OK;
}

vw_status vw_bundle_files_read(const char *path, const char *name, char **buf, size_t *len,
                               vw_err *err) {
    *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return VW_FAIL(err, VW_EIO, "missing_file", "bundle file %s: %s", name, strerror(errno));
    vw_status st = VW_OK;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = VW_FAIL(err, VW_EIO, "bad_file", "bundle file %s cannot be read", name);
        goto done;
    }
    size_t max = vw_bundle_files_max(name);
    if ((unsigned long)n > max) {
        st = VW_FAIL(err, VW_EINVAL, "file_too_large",
                     "bundle file %s has %ld bytes, more than the %zu it may have", name, n, max);
        goto done;
    }
    if (!(*buf = malloc((size_t)n + 1))) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "reading %s", name);
        goto done;
    }
    if (fread(*buf, 1, (size_t)n, f) != (size_t)n) {
        st = VW_FAIL(err, VW_EIO, "bad_file", "bundle file %s: short read", name);
        goto done;
    }
    (*buf)[n] = '\0';
    *len = (size_t)n;
done:
    if (st != VW_OK) {
        free(*buf);
        *buf = NULL;
    }
    fclose(f);
    return st;
}

vw_status vw_bundle_files_load(const char *dir, const char *name, char **buf, size_t *len,
                               vw_err *err) {
    char *path = NULL;
    *buf = NULL;
    vw_status st = vw_bundle_files_resolve(dir, name, &path, err);
    if (st == VW_OK)
        st = vw_bundle_files_read(path, name, buf, len, err);
    free(path);
    return st;
}

vw_status vw_bundle_files_object(const char *name, const char *buf, size_t len, json_t **out,
                                 vw_err *err) {
    json_error_t je;
    *out = json_loadb(buf, len, 0, &je);
    if (json_is_object(*out))
        return VW_OK;
    vw_status st = VW_FAIL(err, VW_EINVAL, "bad_json", "bundle file %s: %s", name,
                           *out ? "not a JSON object" : je.text);
    json_decref(*out);
    *out = NULL;
    return st;
}

vw_status vw_bundle_files_json(const char *dir, const char *name, json_t **out, vw_err *err) {
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    vw_status st = vw_bundle_files_load(dir, name, &buf, &len, err);
    if (st == VW_OK)
        st = vw_bundle_files_object(name, buf, len, out, err);
    free(buf);
    return st;
}

/* SHA256SUMS lines "<hex>  <name>" (or " *<name>") into a name -> hex object. */
vw_status vw_bundle_files_sums(const char *dir, json_t **out, vw_err *err) {
    *out = json_object();
    char *path = NULL, *buf = NULL;
    size_t len = 0;
    if (!*out)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", SUMS);
    if (vw_bundle_files_resolve(dir, SUMS, &path, NULL) != VW_OK)
        return VW_OK; /* optional */
    vw_status st = vw_bundle_files_read(path, SUMS, &buf, &len, err);
    for (char *line = buf, *next; st == VW_OK && line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char hex[65], name[PATH_MAX];
        if (sscanf(line, "%64s %4095[^\r\n]", hex, name) != 2)
            continue;
        const char *nm = name[0] == '*' ? name + 1 : name;
        if (strlen(hex) != 64 || json_object_set_new(*out, nm, json_string(hex)))
            st = VW_FAIL(err, VW_EINVAL, "bad_manifest", SUMS ": bad line for %s", nm);
    }
    free(buf);
    free(path);
    return st;
}
