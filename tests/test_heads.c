/* test_heads.c — CandidateHead and SpanHeadV2 against PyTorch FP32 goldens
 * (fixtures/heads/, made by tools/make_head_goldens.py; docs/spec/answers.md §3, §5). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers/heads.h"
#include "vw_test.h"

#define HINT "(regenerate with: .venv/bin/python tools/make_head_goldens.py)"

typedef struct golden {
    json_t *meta;
    char *bin;
    size_t bin_len;
    const float *data;
    size_t n_floats;
    char asked[64][64]; /* names the heads asked for */
    size_t n_asked;
    const char *hide;  /* a name the lookup pretends is absent */
    int scalar_as_vec; /* serve set_bias as shape [1] */
} golden;

static void golden_load(golden *g) {
    memset(g, 0, sizeof *g);
    char *path = vw_test_path("fixtures/heads/heads_h64.json");
    json_error_t je;
    g->meta = json_load_file(path, 0, &je);
    cr_assert_not_null(g->meta, "%s: %s " HINT, path, je.text);
    free(path);
    cr_assert_str_eq(json_string_value(json_object_get(g->meta, "format")), "vw-head-goldens");
    cr_assert_eq(json_integer_value(json_object_get(g->meta, "version")), 1, HINT);
    path = vw_test_path("fixtures/heads/heads_h64.bin");
    g->bin = vw_test_read_file(path, &g->bin_len);
    cr_assert_not_null(g->bin, "%s " HINT, path);
    free(path);
    cr_assert(g->bin_len >= 8 && memcmp(g->bin, "VWHG", 4) == 0, "bad magic " HINT);
    uint32_t version;
    memcpy(&version, g->bin + 4, 4);
    cr_assert_eq(version, 1, "binary version %u " HINT, version);
    g->n_floats = (size_t)json_integer_value(json_object_get(g->meta, "n_floats"));
    cr_assert_eq(g->bin_len, 8 + 4 * g->n_floats, "size mismatch " HINT);
    /* vw_test_read_file returns malloc'd memory: 8-byte offset keeps floats aligned. */
    g->data = (const float *)(const void *)(g->bin + 8);
}

static void golden_free(golden *g) {
    json_decref(g->meta);
    free(g->bin);
}

static const float *tensor(const golden *g, const char *name, size_t *numel) {
    json_t *t = json_object_get(json_object_get(g->meta, "tensors"), name);
    cr_assert_not_null(t, "tensor %s missing " HINT, name);
    size_t n = 1;
    json_t *shape = json_object_get(t, "shape");
    for (size_t i = 0; i < json_array_size(shape); i++)
        n *= (size_t)json_integer_value(json_array_get(shape, i));
    size_t off = (size_t)json_integer_value(json_object_get(t, "offset"));
    cr_assert(off + n <= g->n_floats, HINT);
    if (numel)
        *numel = n;
    return g->data + off;
}

/* The bundle-style adapter: name -> {data, shape}. */
static vw_status lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    golden *g = ctx;
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
    out->data = tensor(g, name, NULL);
    return VW_OK;
}

/* atol 1e-5 + rtol 1e-5 |ref|; reports the max difference and the first mismatches. */
static void compare(const char *what, const float *got, const float *want, size_t n) {
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
    cr_assert_eq(bad, 0, "%s: %d of %zu values off (max %.3g) " HINT, what, bad, n, max_diff);
}

Test(heads, candidate_head_matches_torch) {
    golden g;
    golden_load(&g);
    vw_cand_head h;
    vw_err e = {0};
    cr_assert_eq(vw_cand_head_init(&h, lookup, &g, "head.", &e), VW_OK, "%s", e.msg);
    cr_assert(h.hidden == 64 && h.d == 256);
    cr_assert_eq(h.set_bias, 0.3f);
    json_t *cases = json_object_get(g.meta, "candidate_cases");
    cr_assert_eq(json_array_size(cases), 3);
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *cs = json_array_get(cases, c);
        const char *name = json_string_value(json_object_get(cs, "name"));
        size_t m = (size_t)json_integer_value(json_object_get(cs, "m"));
        bool is_set = json_is_true(json_object_get(cs, "is_set"));
        char key[96];
        snprintf(key, sizeof key, "case.%s.cands", name);
        const float *cands = tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.query", name);
        const float *query = tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        size_t n;
        const float *want = tensor(&g, key, &n);
        cr_assert_eq(n, m);
        float got[8];
        cr_assert_eq(vw_cand_head_logits(&h, cands, m, query, is_set, got, &e), VW_OK, "%s", e.msg);
        compare(name, got, want, m);
    }
    golden_free(&g);
}

Test(heads, span_head_matches_torch) {
    golden g;
    golden_load(&g);
    vw_span_head h;
    vw_err e = {0};
    cr_assert_eq(vw_span_head_init(&h, lookup, &g, "span2.", &e), VW_OK, "%s", e.msg);
    cr_assert(h.hidden == 64 && h.d == 256 && h.slots == 64);
    for (size_t i = 0; i < g.n_asked; i++)
        cr_assert(strncmp(g.asked[i], "span2.o.", 8) != 0, "the `o` readout is never read");
    json_t *cases = json_object_get(g.meta, "span_cases");
    cr_assert_eq(json_array_size(cases), 4);
    for (size_t c = 0; c < json_array_size(cases); c++) {
        json_t *cs = json_array_get(cases, c);
        const char *name = json_string_value(json_object_get(cs, "name"));
        json_t *js = json_object_get(cs, "starts"), *je = json_object_get(cs, "ends"),
               *jw = json_object_get(cs, "words");
        size_t L = json_array_size(js), W = json_array_size(jw);
        size_t n_rows = (size_t)json_integer_value(json_object_get(cs, "n_rows"));
        char key[96];
        snprintf(key, sizeof key, "case.%s.rows", name);
        const float *rows = tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        size_t n;
        const float *want = tensor(&g, key, &n);
        cr_assert_eq(n, W * L);
        int32_t *starts = malloc(L * sizeof *starts), *ends = malloc(L * sizeof *ends);
        float *labels = malloc(L * 64 * sizeof *labels), *words = malloc(W * 64 * sizeof *words);
        float *z = malloc(W * L * sizeof *z);
        for (size_t l = 0; l < L; l++) {
            starts[l] = (int32_t)json_integer_value(json_array_get(js, l));
            ends[l] = (int32_t)json_integer_value(json_array_get(je, l));
        }
        for (size_t w = 0; w < W; w++)
            memcpy(words + w * 64, rows + json_integer_value(json_array_get(jw, w)) * 64,
                   64 * sizeof(float));
        cr_assert_eq(vw_span_label_means(rows, n_rows, 64, starts, ends, L, labels, &e), VW_OK,
                     "%s", e.msg);
        cr_assert_eq(vw_span_head_logits(&h, words, W, labels, L, z, &e), VW_OK, "%s", e.msg);
        compare(name, z, want, W * L);
        free(starts);
        free(ends);
        free(labels);
        free(words);
        free(z);
    }
    golden_free(&g);
}

Test(heads, missing_or_misshapen_tensors_are_named) {
    golden g;
    golden_load(&g);
    vw_cand_head ch;
    vw_span_head sh;
    vw_err e = {0};
    g.hide = "head.query_mlp.weight";
    cr_assert_eq(vw_cand_head_init(&ch, lookup, &g, "head.", &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "head.query_mlp.weight"), "%s", e.msg);
    g.hide = "set_bias";
    cr_assert_eq(vw_cand_head_init(&ch, lookup, &g, "head.", &e), VW_EINVAL);
    g.hide = NULL;
    /* A [1] set_bias broadcasts like the 0-d one (spec §11.3). */
    g.scalar_as_vec = 1;
    cr_assert_eq(vw_cand_head_init(&ch, lookup, &g, "head.", &e), VW_OK, "%s", e.msg);
    cr_assert_eq(ch.set_bias, 0.3f);
    /* Wrong prefix: the broad head is absent from this fixture. */
    cr_assert_eq(vw_span_head_init(&sh, lookup, &g, "span_broad.", &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "span_broad.wn.weight"), "%s", e.msg);
    /* The candidate head under the span prefix: its tensors are not there. */
    cr_assert_eq(vw_cand_head_init(&ch, lookup, &g, "span2.", &e), VW_EINVAL);
    golden_free(&g);
}

static vw_status fake_lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    (void)err;
    static const float one[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t *dims = ctx; /* {H, d, bad_dim_for_M_bias} */
    out->data = one;
    if (strstr(name, "K.weight") || strstr(name, "Q.weight") || strstr(name, "N.weight") ||
        strstr(name, "M.weight")) {
        out->ndim = 2;
        out->shape[0] = dims[1];
        out->shape[1] = dims[0];
    } else if (strstr(name, "slot.weight")) {
        out->ndim = 2;
        out->shape[0] = 1;
        out->shape[1] = dims[0];
    } else if (strstr(name, "v.weight")) {
        out->ndim = 2;
        out->shape[0] = 1;
        out->shape[1] = dims[1];
    } else if (strstr(name, "M.bias")) {
        out->ndim = 1;
        out->shape[0] = dims[2];
    } else {
        out->ndim = 1;
        out->shape[0] = dims[0];
    }
    return VW_OK;
}

Test(heads, span_head_shapes_and_degenerate_inputs) {
    int64_t dims[3] = {2, 2, 3};
    vw_span_head h;
    vw_err e = {0};
    cr_assert_eq(vw_span_head_init(&h, fake_lookup, dims, "x.", &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "x.M.bias"), "%s", e.msg);
    dims[2] = 2;
    cr_assert_eq(vw_span_head_init(&h, fake_lookup, dims, "x.", &e), VW_OK, "%s", e.msg);
    cr_assert(h.hidden == 2 && h.d == 2 && h.slots == 1);
    float z[4] = {7, 7, 7, 7};
    const float words[4] = {1, 2, 3, 5}, labels[6] = {0, 1, 2, 3, 4, 5};
    cr_assert_eq(vw_span_head_logits(&h, words, 0, labels, 2, z, &e), VW_OK, "0 words: no-op");
    cr_assert_eq(z[0], 7.0f);
    cr_assert_eq(vw_span_head_logits(&h, words, 2, labels, 0, z, &e), VW_EINVAL);
    /* Three labels share the single slot (index clamped at S - 1). */
    float z3[6];
    cr_assert_eq(vw_span_head_logits(&h, words, 2, labels, 3, z3, &e), VW_OK, "%s", e.msg);
    for (int i = 0; i < 6; i++)
        cr_assert(isfinite(z3[i]));
    /* Label ranges outside the block are errors naming both sizes. */
    const float rows[8] = {0};
    int32_t s[1] = {1}, en[1] = {4};
    float out[2];
    cr_assert_eq(vw_span_label_means(rows, 4, 2, s, en, 1, out, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "[1, 4]") && strstr(e.msg, "4 rows"), "%s", e.msg);
    s[0] = 2;
    en[0] = 1;
    cr_assert_eq(vw_span_label_means(rows, 4, 2, s, en, 1, out, &e), VW_EINVAL);
    /* The label vector is the mean over the closed range. */
    const float r2[6] = {1, 10, 2, 20, 6, 60};
    s[0] = 0;
    en[0] = 2;
    cr_assert_eq(vw_span_label_means(r2, 3, 2, s, en, 1, out, &e), VW_OK);
    cr_assert(out[0] == 3.0f && out[1] == 30.0f);
    vw_cand_head ch;
    memset(&ch, 0, sizeof ch);
    cr_assert_eq(vw_cand_head_logits(&ch, NULL, 0, NULL, false, NULL, &e), VW_EINVAL);
}
