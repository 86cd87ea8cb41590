/* safetensors.c — mmap + header validation for .safetensors (see safetensors.h).
 * Owns the mapping and the parsed index; never copies tensor data except in
 * vw_st_to_f32. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct vw_st_file {
    char *path;
    unsigned char *map; /* whole file */
    size_t len;
    size_t data_off; /* 8 + header length */
    vw_st_tensor *tensors;
    size_t n;
    char *names; /* all tensor names, NUL-separated */
};

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [VW_DT_F32] = {"F32", 4},   [VW_DT_F16] = {"F16", 2}, [VW_DT_BF16] = {"BF16", 2},
    [VW_DT_F64] = {"F64", 8},   [VW_DT_I64] = {"I64", 8}, [VW_DT_I32] = {"I32", 4},
    [VW_DT_I16] = {"I16", 2},   [VW_DT_I8] = {"I8", 1},   [VW_DT_U8] = {"U8", 1},
    [VW_DT_BOOL] = {"BOOL", 1},
};

const char *vw_dtype_name(vw_dtype dt) {
    return (unsigned)dt < sizeof dtypes / sizeof dtypes[0] ? dtypes[dt].name : "?";
}

size_t vw_dtype_size(vw_dtype dt) {
    return (unsigned)dt < sizeof dtypes / sizeof dtypes[0] ? dtypes[dt].size : 0;
}

static int dtype_from(const char *s, vw_dtype *out) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(s, dtypes[i].name)) {
            *out = (vw_dtype)i;
            return 1;
        }
    return 0;
}

static int by_offset(const void *a, const void *b) {
    const vw_st_tensor *x = a, *y = b;
    uintptr_t px = (uintptr_t)x->data, py = (uintptr_t)y->data;
    if (px != py)
        return px < py ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* Fills t from one header entry; data offsets are checked against the data
 * section of `len` bytes starting at base. */
static vw_status parse_entry(const char *path, const char *name, json_t *v,
                             const unsigned char *base, size_t len, vw_st_tensor *t, vw_err *err) {
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape");
    json_t *off = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
        json_array_size(off) != 2)
        return VW_FAIL(err, VW_EINVAL, "bad_safetensors",
                       "%s: tensor '%s' lacks dtype/shape/data_offsets", path, name);
    if (!dtype_from(json_string_value(dt), &t->dtype))
        return VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: tensor '%s' has unknown dtype %s",
                       path, name, json_string_value(dt));
    size_t nd = json_array_size(sh);
    if (nd > VW_ST_MAX_DIMS)
        return VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: tensor '%s' has %zu dims", path,
                       name, nd);
    t->ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(sh, i);
        json_int_t x = json_is_integer(d) ? json_integer_value(d) : -1;
        if (x < 0 || (x > 0 && numel > UINT64_MAX / 16 / (uint64_t)x))
            return VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: tensor '%s' has a bad shape",
                           path, name);
        t->shape[i] = x;
        numel *= (uint64_t)x;
    }
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    json_int_t ob = json_is_integer(b) ? json_integer_value(b) : -1;
    json_int_t oe = json_is_integer(e) ? json_integer_value(e) : -1;
    if (ob < 0 || oe < ob || (uint64_t)oe > len)
        return VW_FAIL(err, VW_EINVAL, "bad_safetensors",
                       "%s: tensor '%s' data_offsets [%lld, %lld] outside the %zu-byte data "
                       "section",
                       path, name, (long long)ob, (long long)oe, len);
    if ((uint64_t)(oe - ob) != numel * vw_dtype_size(t->dtype))
        return VW_FAIL(err, VW_EINVAL, "bad_safetensors",
                       "%s: tensor '%s' holds %lld bytes, its %s shape needs %llu", path, name,
                       (long long)(oe - ob), vw_dtype_name(t->dtype),
                       (unsigned long long)(numel * vw_dtype_size(t->dtype)));
    t->numel = (size_t)numel;
    t->data = base + ob;
    t->nbytes = (size_t)(oe - ob);
    return VW_OK;
}

static vw_status parse_header(vw_st_file *f, const char *json, size_t jlen, vw_err *err) {
    json_error_t jerr;
    json_t *root = json_loadb(json, jlen, JSON_REJECT_DUPLICATES, &jerr);
    vw_status st = VW_OK;
    if (!json_is_object(root)) {
        st = VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: header is not a JSON object (%s)",
                     f->path, root ? "wrong type" : jerr.text);
        goto done;
    }
    size_t cap = json_object_size(root), names_len = 0;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) names_len += strlen(key) + 1;
    f->tensors = calloc(cap ? cap : 1, sizeof *f->tensors);
    f->names = malloc(names_len ? names_len : 1);
    if (!f->tensors || !f->names) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%s: header index", f->path);
        goto done;
    }
    char *np = f->names;
    const unsigned char *base = f->map + f->data_off;
    size_t dlen = f->len - f->data_off;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__"))
            continue;
        vw_st_tensor *t = &f->tensors[f->n];
        st = parse_entry(f->path, key, v, base, dlen, t, err);
        if (st != VW_OK)
            goto done;
        size_t kl = strlen(key) + 1;
        memcpy(np, key, kl);
        t->name = np;
        np += kl;
        f->n++;
    }
    qsort(f->tensors, f->n, sizeof *f->tensors, by_offset);
    for (size_t i = 1; i < f->n; i++) {
        const vw_st_tensor *a = &f->tensors[i - 1], *b = &f->tensors[i];
        if ((const unsigned char *)a->data + a->nbytes > (const unsigned char *)b->data) {
            st = VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: tensors '%s' and '%s' overlap",
                         f->path, a->name, b->name);
            goto done;
        }
    }
done:
    json_decref(root);
    return st;
}

static vw_status map_file(vw_st_file *f, const char *path, vw_err *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: %s", path, strerror(errno));
    struct stat sb;
    vw_status st = VW_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = VW_FAIL(err, VW_EIO, "bad_file", "%s: not a regular file", path);
        goto done;
    }
    if (sb.st_size < 8) {
        st = VW_FAIL(err, VW_EINVAL, "bad_safetensors", "%s: %lld bytes, shorter than a header",
                     path, (long long)sb.st_size);
        goto done;
    }
    f->len = (size_t)sb.st_size;
    f->map = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        st = VW_FAIL(err, VW_EIO, "bad_file", "%s: mmap: %s", path, strerror(errno));
    }
done:
    close(fd);
    return st;
}

vw_status vw_st_open(const char *path, vw_st_file **out, vw_err *err) {
    *out = NULL;
    vw_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%s", path);
    }
    vw_status st = map_file(f, path, err);
    if (st != VW_OK)
        goto done;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f->map[i];
    if (hlen > VW_ST_MAX_HEADER && hlen <= f->len - 8) {
        st = VW_FAIL(err, VW_EINVAL, "bad_safetensors",
                     "%s: header of %llu bytes is larger than the %llu a header may have", path,
                     (unsigned long long)hlen, (unsigned long long)VW_ST_MAX_HEADER);
        goto done;
    }
    if (hlen > f->len - 8) {
        st = VW_FAIL(err, VW_EINVAL, "bad_safetensors",
                     "%s: header claims %llu bytes but the file has %zu after the length field "
                     "(truncated or not safetensors)",
                     path, (unsigned long long)hlen, f->len - 8);
        goto done;
    }
    f->data_off = 8 + (size_t)hlen;
    st = parse_header(f, (const char *)f->map + 8, (size_t)hlen, err);
done:
    if (st != VW_OK) {
        vw_st_close(f);
        f = NULL;
    }
    *out = f;
    return st;
}

void vw_st_close(vw_st_file *f) {
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->len);
    free(f->tensors);
    free(f->names);
    free(f->path);
    free(f);
}

size_t vw_st_count(const vw_st_file *f) {
    return f->n;
}

const vw_st_tensor *vw_st_at(const vw_st_file *f, size_t i) {
    return i < f->n ? &f->tensors[i] : NULL;
}

const vw_st_tensor *vw_st_find(const vw_st_file *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}

const void *vw_st_bytes(const vw_st_file *f, size_t *len) {
    *len = f->len;
    return f->map;
}

const char *vw_st_path(const vw_st_file *f) {
    return f->path;
}

float vw_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

float vw_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) { /* inf / nan */
        u = sign | 0x7f800000u | man << 13;
    } else if (exp) {
        u = sign | (exp + 112) << 23 | man << 13;
    } else if (man) { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        u = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
    } else {
        u = sign;
    }
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

vw_status vw_st_to_f32(const vw_st_tensor *t, float *dst, vw_err *err) {
    const unsigned char *p = t->data;
    switch (t->dtype) {
    case VW_DT_F32:
        memcpy(dst, p, t->numel * 4);
        return VW_OK;
    case VW_DT_BF16:
    case VW_DT_F16:
        for (size_t i = 0; i < t->numel; i++) {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            dst[i] = t->dtype == VW_DT_BF16 ? vw_bf16_to_f32(h) : vw_f16_to_f32(h);
        }
        return VW_OK;
    default:
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_dtype",
                       "tensor '%s' is %s; only F32, F16 and BF16 convert to F32", t->name,
                       vw_dtype_name(t->dtype));
    }
}

void vw_st_drop_pages(const vw_st_file *f, const vw_st_tensor *t) {
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t b = (uintptr_t)(t ? t->data : f->map), e = b + (t ? t->nbytes : f->len);
    /* Only whole pages inside [b, e): a neighbour's page may still be wanted. */
    uintptr_t lo = (b + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1), hi = e & ~((uintptr_t)pg - 1);
    if (!t)
        lo = (uintptr_t)f->map, hi = lo + ((f->len + (size_t)pg - 1) & ~((size_t)pg - 1));
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
