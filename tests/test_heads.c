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
#include "head_goldens.h"
#include "vw_test.h"

Test(heads, candidate_head_matches_torch) {
    vw_head_goldens g;
    vw_head_goldens_load(&g);
    vw_cand_head h;
    vw_err e = {0};
    cr_assert_eq(vw_cand_head_init(&h, vw_head_goldens_lookup, &g, "head.", &e), VW_OK, "%s",
                 e.msg);
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
        const float *cands = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.query", name);
        const float *query = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        size_t n;
        const float *want = vw_head_goldens_tensor(&g, key, &n);
        cr_assert_eq(n, m);
        float got[8];
        cr_assert_eq(vw_cand_head_logits(&h, cands, m, query, is_set, got, &e), VW_OK, "%s", e.msg);
        vw_heads_assert_close(name, got, want, m, VW_HEAD_GOLDENS_HINT);
    }
    vw_head_goldens_free(&g);
}

Test(heads, span_head_matches_torch) {
    vw_head_goldens g;
    vw_head_goldens_load(&g);
    vw_span_head h;
    vw_err e = {0};
    cr_assert_eq(vw_span_head_init(&h, vw_head_goldens_lookup, &g, "span2.", &e), VW_OK, "%s",
                 e.msg);
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
        const float *rows = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        size_t n;
        const float *want = vw_head_goldens_tensor(&g, key, &n);
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
        vw_heads_assert_close(name, z, want, W * L, VW_HEAD_GOLDENS_HINT);
        free(starts);
        free(ends);
        free(labels);
        free(words);
        free(z);
    }
    vw_head_goldens_free(&g);
}

Test(heads, missing_or_misshapen_tensors_are_named) {
    vw_head_goldens g;
    vw_head_goldens_load(&g);
    vw_cand_head ch;
    vw_span_head sh;
    vw_err e = {0};
    g.hide = "head.query_mlp.weight";
    cr_assert_eq(vw_cand_head_init(&ch, vw_head_goldens_lookup, &g, "head.", &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "head.query_mlp.weight"), "%s", e.msg);
    g.hide = "set_bias";
    cr_assert_eq(vw_cand_head_init(&ch, vw_head_goldens_lookup, &g, "head.", &e), VW_EINVAL);
    g.hide = NULL;
    /* A [1] set_bias broadcasts like the 0-d one (spec §11.3). */
    g.scalar_as_vec = 1;
    cr_assert_eq(vw_cand_head_init(&ch, vw_head_goldens_lookup, &g, "head.", &e), VW_OK, "%s",
                 e.msg);
    cr_assert_eq(ch.set_bias, 0.3f);
    /* Wrong prefix: the broad head is absent from this fixture. */
    cr_assert_eq(vw_span_head_init(&sh, vw_head_goldens_lookup, &g, "span_broad.", &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "span_broad.wn.weight"), "%s", e.msg);
    /* The candidate head under the span prefix: its tensors are not there. */
    cr_assert_eq(vw_cand_head_init(&ch, vw_head_goldens_lookup, &g, "span2.", &e), VW_EINVAL);
    vw_head_goldens_free(&g);
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
