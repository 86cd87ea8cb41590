/* head_goldens.c — see head_goldens.h. */
#include "head_goldens.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vw_test.h"

void vw_head_goldens_load(vw_head_goldens *g) {
    memset(g, 0, sizeof *g);
    char *path = vw_test_path("fixtures/heads/heads_h64.json");
    json_error_t je;
    g->meta = json_load_file(path, 0, &je);
    cr_assert_not_null(g->meta, "%s: %s " VW_HEAD_GOLDENS_HINT, path, je.text);
    free(path);
    cr_assert_str_eq(json_string_value(json_object_get(g->meta, "format")), "vw-head-goldens");
    cr_assert_eq(json_integer_value(json_object_get(g->meta, "version")), 1, VW_HEAD_GOLDENS_HINT);
    path = vw_test_path("fixtures/heads/heads_h64.bin");
    g->bin = vw_test_read_file(path, &g->bin_len);
    cr_assert_not_null(g->bin, "%s " VW_HEAD_GOLDENS_HINT, path);
    free(path);
    cr_assert(g->bin_len >= 8 && memcmp(g->bin, "VWHG", 4) == 0, "bad magic " VW_HEAD_GOLDENS_HINT);
    uint32_t version;
    memcpy(&version, g->bin + 4, 4);
    cr_assert_eq(version, 1, "binary version %u " VW_HEAD_GOLDENS_HINT, version);
    g->n_floats = (size_t)json_integer_value(json_object_get(g->meta, "n_floats"));
    cr_assert_eq(g->bin_len, 8 + 4 * g->n_floats, "size mismatch " VW_HEAD_GOLDENS_HINT);
    /* vw_test_read_file returns malloc'd memory: 8-byte offset keeps floats aligned. */
    g->data = (const float *)(const void *)(g->bin + 8);
}

void vw_head_goldens_free(vw_head_goldens *g) {
    json_decref(g->meta);
    free(g->bin);
}

const float *vw_head_goldens_tensor(const vw_head_goldens *g, const char *name, size_t *numel) {
    json_t *t = json_object_get(json_object_get(g->meta, "tensors"), name);
    cr_assert_not_null(t, "tensor %s missing " VW_HEAD_GOLDENS_HINT, name);
    size_t n = 1;
    json_t *shape = json_object_get(t, "shape");
    for (size_t i = 0; i < json_array_size(shape); i++)
        n *= (size_t)json_integer_value(json_array_get(shape, i));
    size_t off = (size_t)json_integer_value(json_object_get(t, "offset"));
    cr_assert(off + n <= g->n_floats, VW_HEAD_GOLDENS_HINT);
    if (numel)
        *numel = n;
    return g->data + off;
}

vw_status vw_head_goldens_lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    vw_head_goldens *g = ctx;
    if (g->n_asked < 64)
        snprintf(g->asked[g->n_asked++], 64, "%s", name);
    json_t *t = json_object_get(json_object_get(g->meta, "tensors"), name);
    if (!t || (g->hide && strcmp(name, g->hide) == 0))
        return VW_FAIL(err, VW_EINVAL, "missing_tensor", "no tensor %s", name);
    json_t *shape = json_object_get(t, "shape");
    out->ndim = json_array_size(shape);
    for (size_t i = 0; i < out->ndim; i++)
        out->shape[i] = json_integer_value(json_array_get(shape, i));
    if (g->scalar_as_vec && out->ndim == 0) {
        out->ndim = 1;
        out->shape[0] = 1;
    }
    out->data = vw_head_goldens_tensor(g, name, NULL);
    return VW_OK;
}

/* atol 1e-5 + rtol 1e-5 |ref|; reports the max difference and the first mismatches. */
void vw_heads_assert_close(const char *what, const float *got, const float *want, size_t n,
                           const char *hint) {
    double max_diff = 0.0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)got[i] - (double)want[i]);
        if (diff > max_diff)
            max_diff = diff;
        if (!(diff <= 1e-5 + 1e-5 * fabs((double)want[i])) && bad++ < 10)
            cr_log_error("%s[%zu]: got %.9g want %.9g", what, i, got[i], want[i]);
    }
    cr_log_info("%s: %zu values, max |diff| %.3g", what, n, max_diff);
    cr_assert_eq(bad, 0, "%s: %d of %zu values off (max %.3g) %s", what, bad, n, max_diff, hint);
}
