/* test_sizes.c — the Vela 2.0 sizes (core/model/sizes.h) and the random
 * writer's shapes (core/model/random_bundle.h): each shape is the size the spec
 * gives (docs/spec/backbone.md §1.1, §1.2), its parameter count is the count
 * by hand from the §2 tensor shapes (0.8B: the spec's 752,393,024), and the
 * weight bytes per precision follow. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/bundle.h"
#include "model/random_bundle.h"
#include "model/sizes.h"
#include "vw_test.h"

/* Parameters by hand (docs/spec/backbone.md §2): embedding V x H, final norm
 * H; a DeltaNet layer: 2 norms H, in_proj_qkv cd x H (cd = 2 Hk dk + Hv dv),
 * z vd x H, b and a Hv x H, conv cd x 4, dt_bias and A_log Hv, norm dv,
 * out_proj H x vd, MLP 3 H F; an attention layer: 2 norms H, q (with gate)
 * 2 Hq hd x H, k and v Hkv hd x H, o H x Hq hd, q/k norms hd, MLP 3 H F.
 * *matrix: the projections and the embedding. */
static uint64_t by_hand(uint64_t H, uint64_t F, uint64_t V, uint64_t Hq, uint64_t Hkv, uint64_t hd,
                        uint64_t Hk, uint64_t Hv, uint64_t dk, uint64_t dv, uint64_t n_gdn,
                        uint64_t n_attn, uint64_t *matrix) {
    uint64_t cd = 2 * Hk * dk + Hv * dv, vd = Hv * dv;
    uint64_t gdn_m = cd * H + vd * H + 2 * Hv * H + H * vd + 3 * H * F;
    uint64_t attn_m = 2 * Hq * hd * H + 2 * Hkv * hd * H + H * Hq * hd + 3 * H * F;
    *matrix = V * H + n_gdn * gdn_m + n_attn * attn_m;
    return *matrix + H + n_gdn * (2 * H + cd * 4 + 2 * Hv + dv) + n_attn * (2 * H + 2 * hd);
}

static void expect_shape(const char *shape, const char *name, uint64_t params, uint64_t matrix) {
    vw_qwen35_config c;
    vw_err err = {0};
    cr_assert_eq(vw_random_shape_config(shape, &c, &err), VW_OK, "%s", err.msg);
    vw_model_size s;
    vw_model_size_of(&c, &s);
    cr_expect_str_eq(s.name, name, "%s", shape);
    cr_expect_eq(s.params, params, "%s: %llu parameters, by hand %llu", shape,
                 (unsigned long long)s.params, (unsigned long long)params);
    cr_expect_eq(s.matrix_params, matrix, "%s: %llu matrix parameters, by hand %llu", shape,
                 (unsigned long long)s.matrix_params, (unsigned long long)matrix);
    cr_expect_eq(vw_model_weight_bytes(&s, 4), 4 * params);
    cr_expect_eq(vw_model_weight_bytes(&s, 2), 2 * matrix + 4 * (params - matrix));
}

Test(sizes, shapes_are_the_spec_sizes) {
    uint64_t m;
    expect_shape("0.8b", "0.8B", 752393024, 751894528);
    uint64_t p = by_hand(1024, 3584, 248320, 8, 2, 256, 16, 16, 128, 128, 18, 6, &m);
    cr_expect_eq(p, 752393024, "the spec's count (§1.1)");
    p = by_hand(2560, 9216, 248320, 16, 4, 256, 16, 32, 128, 128, 24, 8, &m);
    expect_shape("4b", "4B", p, m);
    p = by_hand(4096, 12288, 248320, 16, 4, 256, 16, 32, 128, 128, 24, 8, &m);
    expect_shape("9b", "9B", p, m);
    /* The slices: the random shape config keeps 248,320 rows (the bundle has
     * the template's vocabulary instead); one DeltaNet and one attention layer. */
    p = by_hand(2560, 9216, 248320, 16, 4, 256, 16, 32, 128, 128, 1, 1, &m);
    expect_shape("4b-slice", "4B width, 2 of 32 layers", p, m);
    p = by_hand(4096, 12288, 248320, 16, 4, 256, 16, 32, 128, 128, 1, 1, &m);
    expect_shape("9b-slice", "9B width, 2 of 32 layers", p, m);
}

Test(sizes, other_configs_are_custom_and_unknown_shapes_refused) {
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s", err.msg);
    vw_model_size s;
    vw_model_size_of(vw_bundle_backbone_config(b), &s);
    cr_expect_str_eq(s.name, "custom");
    uint64_t m;
    uint64_t p = by_hand(64, 224, 1664, 4, 1, 32, 2, 4, 32, 32, 6, 2, &m);
    cr_expect_eq(s.params, p, "tiny: %llu, by hand %llu", (unsigned long long)s.params,
                 (unsigned long long)p);
    vw_bundle_free(b);
    free(dir);
    vw_qwen35_config c;
    cr_expect_eq(vw_random_shape_config("2b", &c, &err), VW_EINVAL);
    cr_expect_str_eq(err.type, "bad_shape");
    cr_expect(strstr(err.msg, "'2b'") && strstr(err.msg, VW_RANDOM_SHAPES), "%s", err.msg);
}
