/* test_backbone.c — the CPU reference backbone (backbone_cpu.c) on the tiny
 * bundle:
 *  - goldens: final-normed hidden states equal transformers' FP32 eager
 *    Qwen3_5TextModel (fixtures/backbone, tools/make_backbone_goldens.py) for
 *    lengths 1..700 within 1e-4 (max |diff| printed per length);
 *  - tree: each block's rows equal running prefix + block as one sequence
 *    (<= 1e-5), and changing one block leaves the other blocks' rows
 *    bit-identical;
 *  - delta rule: the chunked form equals the token recurrence (<= 1e-5)
 *    across chunk boundaries, with and without an initial state.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backbone_cpu.h"
#include "bundle.h"
#include "delta_rule.h"
#include "vw_test.h"

#define GOLD_HINT "HINT: regenerate with .venv/bin/python tools/make_backbone_goldens.py"

static vw_bundle *bundle;
static vw_executor *ex;

static void setup(void) {
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &bundle, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_backbone_cpu_new(bundle, &ex, &err), VW_OK, "%s", err.msg);
    free(dir);
}

static void teardown(void) {
    vw_executor_free(ex);
    vw_bundle_free(bundle);
}

/* Runs ids as one sequence; returns all T rows (malloc'd). */
static float *run_sequence(const int32_t *ids, size_t T) {
    int32_t *ro = malloc(T * sizeof *ro);
    for (size_t i = 0; i < T; i++)
        ro[i] = (int32_t)i;
    vw_tree tr = {.prefix = ids, .n_prefix = T, .prefix_readouts = ro, .n_prefix_readouts = T};
    float *rows = malloc(T * ex->hidden * sizeof *rows);
    vw_err err = {0};
    cr_assert_eq(vw_executor_forward(ex, &tr, 1, rows, &err), VW_OK, "%s", err.msg);
    free(ro);
    return rows;
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

Test(backbone, matches_transformers_goldens, .init = setup, .fini = teardown) {
    char *path = vw_test_path("fixtures/backbone/goldens.bin");
    size_t len = 0;
    unsigned char *g = (unsigned char *)vw_test_read_file(path, &len);
    cr_assert(g, "%s missing. " GOLD_HINT, path);
    cr_assert(len > 20 && !memcmp(g, "VWBBGLD1", 8) && rd32(g + 8) == 1,
              "bad magic/version. " GOLD_HINT);
    uint32_t n = rd32(g + 12), H = rd32(g + 16);
    cr_assert_eq(H, ex->hidden, "golden hidden %u vs bundle %zu. " GOLD_HINT, H, ex->hidden);
    size_t off = 20;
    for (uint32_t c = 0; c < n; c++) {
        uint32_t T = rd32(g + off);
        off += 4;
        cr_assert(off + (size_t)T * 4 * (1 + H) <= len, "truncated goldens. " GOLD_HINT);
        int32_t *ids = malloc(T * sizeof *ids);
        float *want = malloc((size_t)T * H * sizeof *want);
        memcpy(ids, g + off, T * 4u); /* little-endian host (x86-64, aarch64) */
        memcpy(want, g + off + T * 4u, (size_t)T * H * 4);
        off += (size_t)T * 4 * (1 + H);
        float *got = run_sequence(ids, T);
        double maxd = 0, maxref = 0;
        size_t at = 0;
        for (size_t i = 0; i < (size_t)T * H; i++) {
            double d = fabs((double)got[i] - want[i]);
            if (d > maxd || isnan(d))
                maxd = d, at = i;
            maxref = fmax(maxref, fabs(want[i]));
        }
        printf("backbone golden T=%4u: max|diff| = %.3g (max|ref| %.3f)\n", T, maxd, maxref);
        fflush(stdout);
        cr_expect(maxd <= 1e-4,
                  "T=%u: max|diff| %.3g at row %zu col %zu (got %.7g want %.7g). " GOLD_HINT, T,
                  maxd, at / H, at % H, got[at], want[at]);
        free(got);
        free(want);
        free(ids);
    }
    free(g);
    free(path);
}
