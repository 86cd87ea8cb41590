/* test_synthetic.c — the bench/test executors (core/model/synthetic.h) and the
 * random-bundle writer (core/model/random_bundle.h): specs parse or are refused
 * by name, instant rows are deterministic with unit RMS, sim holds the caller
 * for its modelled time (the FLOP count checked by hand), their heads op gives
 * synthetic logits that depend only on a problem's own readouts, and a
 * `ceiling` bundle written here opens in the engine and answers the golden
 * request; the writer replaces only packages it wrote. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "model/head_weights.h"
#include "model/random_bundle.h"
#include "model/synthetic.h"
#include "vw_test.h"

Test(synthetic, specs) {
    vw_synthetic_opts o;
    vw_err err = {0};
    cr_assert_eq(vw_synthetic_parse("instant", &o, &err), VW_OK);
    cr_assert(!o.sim);
    cr_assert_eq(vw_synthetic_parse("sim", &o, &err), VW_OK);
    cr_assert(o.sim && o.tflops == 316.0 && o.call_us == 2000.0 && o.token_ns == 100.0 &&
              !o.bundle);
    cr_assert_eq(vw_synthetic_parse("sim:tflops=100,call_us=0,model=bundle,token_ns=5", &o, &err),
                 VW_OK);
    cr_assert(o.tflops == 100.0 && o.call_us == 0.0 && o.token_ns == 5.0 && o.bundle);
    const char *bad[] = {"fast",         "sim:tflops=0", "sim:speed=3",
                         "sim:model=4b", "simx",         "sim:tflops=-1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(vw_synthetic_parse(bad[i], &o, &err), VW_EINVAL, "%s", bad[i]);
        cr_assert_str_eq(err.type, "bad_executor");
    }
}

/* The count by hand for a 2-layer config (one GDN, one attention layer). */
Test(synthetic, flops_by_hand) {
    vw_qwen35_config c = {.hidden = 8,
                          .n_layers = 2,
                          .intermediate = 16,
                          .n_heads = 2,
                          .n_kv_heads = 1,
                          .head_dim = 4,
                          .lin_k_heads = 1,
                          .lin_v_heads = 2,
                          .lin_k_dim = 4,
                          .lin_v_dim = 4,
                          .full_attention = {0, 1}};
    int32_t prefix[3] = {1, 2, 3}, ids[2] = {4, 5}, ro[1] = {1};
    vw_block blk = {ids, 2, ro, 1};
    vw_tree t = {prefix, 3, NULL, 0, &blk, 1};
    /* kd 4, vd 8, cd 16: GDN in 8 x (16 + 8 + 2*2) + out 8 x 8 = 288; attention in
     * 8 x (2*2*4 + 2*1*4) + out 2*4*8 = 256; MLP 3 x 16 x 8 = 384 per layer.
     * Per token 2 x ((384 + 288) + (384 + 256)) = 2624; 5 tokens. Attention pairs:
     * prefix 3*4/2 = 6, block 2*3 + 2*3/2 = 9: 15 x 4 x 4 x 2 = 480. */
    cr_assert_float_eq(vw_qwen35_tree_flops(&c, &t), 2624.0 * 5 + 480.0, 1e-9);
    vw_synthetic_opts o = {true, 1e-9, 100.0, 10.0, true}; /* 1 kFLOP/s */
    double want = 100e-6 + (2624.0 * 5 + 480.0) / 1e3 + 5 * 10e-9;
    cr_assert_float_eq(vw_synthetic_seconds(&o, &c, &t, 1), want, 1e-12);
}

static char *ceiling_bundle(void) {
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/vw-test-ceiling-%d", (int)getpid());
    vw_err err = {0};
    char *tmpl = vw_test_path("fixtures/tiny-vela");
    bool reused = true;
    cr_assert_eq(vw_random_bundle_write(dir, "ceiling", tmpl, 7, &reused, &err), VW_OK, "%s",
                 err.msg);
    cr_assert(!reused);
    cr_assert_eq(vw_random_bundle_write(dir, "ceiling", tmpl, 7, &reused, &err), VW_OK);
    cr_assert(reused, "the same shape and seed are reused");
    free(tmpl);
    return dir;
}

static void remove_dir(const char *dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The instant executor on a fresh ceiling bundle (*dir, *b: the caller's). */
static vw_executor *instant_on_ceiling(char **dir, vw_bundle **b) {
    *dir = ceiling_bundle();
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(*dir, b, &err), VW_OK, "%s", err.msg);
    vw_synthetic_opts inst = {0};
    vw_executor *ex = NULL;
    cr_assert_eq(vw_synthetic_new(*b, &inst, &ex, &err), VW_OK);
    return ex;
}

static vw_status make(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    return vw_synthetic_new(b, ctx, out, err);
}

/* Scores the golden request; returns the envelope (malloc'd). */
static char *score_golden(vw_engine *e) {
    size_t len = 0;
    char *path = vw_test_path("fixtures/requests/golden_8_1.json");
    char *body = vw_test_read_file(path, &len);
    cr_assert_not_null(body);
    vw_plan *plan = NULL;
    vw_errlist detail = {0};
    vw_sbuf out = {0};
    vw_err err = {0};
    int status = 0;
    cr_assert_eq(vw_engine_plan(e, body, len, &plan, &status, &detail, &err), VW_OK);
    cr_assert_not_null(plan, "golden request planned (status %d)", status);
    cr_assert_eq(vw_engine_score(e, &plan, 1, &out, &err), VW_OK, "%s", err.msg);
    vw_plan_free(plan);
    vw_errlist_free(&detail);
    free(body);
    free(path);
    return vw_sbuf_take(&out, NULL);
}

Test(synthetic, ceiling_bundle_answers_with_instant_and_sim) {
    char *dir = ceiling_bundle();
    vw_synthetic_opts inst = {0}, sim = {true, 316.0, 0.0, 0.0, false};
    vw_engine_opts oi = {.make_executor = make, .make_ctx = &inst, .noul_calibration = -1};
    vw_engine_opts os = {.make_executor = make, .make_ctx = &sim, .noul_calibration = -1};
    vw_engine *ei = NULL, *es = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_engine_open(dir, &oi, &ei, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_engine_open(dir, &os, &es, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(vw_engine_device(ei), "instant");
    cr_assert_str_eq(vw_engine_device(es), "sim");
    char *a = score_golden(ei), *b = score_golden(ei);
    cr_assert(strstr(a, "\"answers\":{") && strstr(a, "\"domain\""), "%.200s", a);
    cr_assert_str_eq(a, b, "instant rows are deterministic");
    /* sim: the same rows (an envelope like instant's) after the modelled wait
     * of the 0.8B backbone for the golden request's trees (> 1 ms at 316 TFLOP/s) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *c = score_golden(es);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_str_eq(c, a, "sim returns instant's rows");
    cr_assert_geq(took, 1e-3, "the call waited for the modelled device: %.6f s", took);
    free(a);
    free(b);
    free(c);
    vw_engine_free(ei);
    vw_engine_free(es);
    remove_dir(dir);
}

Test(synthetic, instant_rows_have_unit_rms) {
    char *dir = NULL;
    vw_bundle *b = NULL;
    vw_err err = {0};
    vw_executor *ex = instant_on_ceiling(&dir, &b);
    cr_assert_eq(ex->hidden, 1024);
    int32_t prefix[4] = {5, 6, 7, 8}, pro[2] = {0, 3};
    vw_tree t = {prefix, 4, pro, 2, NULL, 0};
    float *rows = malloc(2 * 1024 * sizeof *rows);
    cr_assert_eq(vw_executor_forward(ex, &t, 1, rows, &err), VW_OK);
    for (int r = 0; r < 2; r++) {
        double ss = 0;
        for (int i = 0; i < 1024; i++)
            ss += (double)rows[r * 1024 + i] * rows[r * 1024 + i];
        cr_assert_float_eq(sqrt(ss / 1024), 1.0, 1e-5);
    }
    /* A tree's rows are the same alone and behind another tree in one call. */
    int32_t other[3] = {9, 10, 11}, other_ro[1] = {2};
    vw_tree two[2] = {{other, 3, other_ro, 1, NULL, 0}, t};
    float *rows2 = malloc(3 * 1024 * sizeof *rows2);
    cr_assert_eq(vw_executor_forward(ex, two, 2, rows2, &err), VW_OK);
    cr_assert_eq(memcmp(rows2 + 1024, rows, 2 * 1024 * sizeof *rows), 0, "batch-independent rows");
    free(rows2);
    int32_t bad[1] = {99999};
    vw_tree tb = {bad, 1, NULL, 0, NULL, 0};
    cr_assert_eq(vw_executor_forward(ex, &tb, 1, rows, &err), VW_EINVAL, "ids are checked");
    free(rows);
    vw_executor_free(ex);
    vw_bundle_free(b);
    remove_dir(dir);
}

static json_int_t manifest_seed(const char *dir) {
    char p[256];
    snprintf(p, sizeof p, "%s/MODEL_MANIFEST.json", dir);
    json_t *m = json_load_file(p, 0, NULL);
    json_int_t s = json_integer_value(json_object_get(json_object_get(m, "generator"), "seed"));
    json_decref(m);
    return s;
}

/* The writer replaces a package it wrote for another seed (also when the path
 * ends in '/'), refuses to replace a directory holding anything else (leaving
 * it as it was), and leaves no half-written sibling behind either way. */
Test(synthetic, random_bundle_replaces_only_its_own_packages) {
    char dir[64], cmd[200];
    snprintf(dir, sizeof dir, "/tmp/vw-test-replace-%d", (int)getpid());
    char *tmpl = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    bool reused = true;
    cr_assert_eq(vw_random_bundle_write(dir, "ceiling", tmpl, 7, &reused, &err), VW_OK, "%s",
                 err.msg);
    cr_assert(!reused);
    cr_assert_eq(vw_random_bundle_write(dir, "ceiling", tmpl, 8, &reused, &err), VW_OK, "%s",
                 err.msg);
    cr_assert(!reused, "another seed is another package");
    cr_assert_eq(manifest_seed(dir), 8);
    char slash[80];
    snprintf(slash, sizeof slash, "%s/", dir);
    cr_assert_eq(vw_random_bundle_write(slash, "ceiling", tmpl, 3, &reused, &err), VW_OK, "%s",
                 err.msg);
    cr_assert_eq(manifest_seed(dir), 3, "\"%s\" names the directory itself", slash);
    char *notes = vw_test_write_lines(dir, "notes.txt", (const char *const[]){"mine", NULL});
    cr_assert_eq(vw_random_bundle_write(dir, "ceiling", tmpl, 9, &reused, &err), VW_EIO);
    cr_assert(strstr(err.msg, "holds another package or other files"), "%s", err.msg);
    cr_assert_eq(manifest_seed(dir), 3, "the refused directory is left as it was");
    cr_assert_eq(access(notes, F_OK), 0);
    snprintf(cmd, sizeof cmd, "ls -d %s.tmp-* 2>/dev/null | grep -q .", dir);
    cr_assert_neq(system(cmd), 0, "no half-written sibling is left");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    free(notes);
    free(tmpl);
}

/* The heads op: logits in [-4, 4), the same for a problem alone or behind
 * another tree, from a forward that returned no rows. */
Test(synthetic, instant_heads_are_batch_independent) {
    char *dir = NULL;
    vw_bundle *b = NULL;
    vw_err err = {0};
    vw_executor *ex = instant_on_ceiling(&dir, &b);
    cr_assert(vw_executor_has_heads(ex));
    int32_t prefix[6] = {5, 6, 7, 8, 9, 10}, pro[5] = {0, 1, 2, 3, 5};
    vw_tree t = {prefix, 6, pro, 5, NULL, 0};
    cr_assert_eq(vw_executor_forward(ex, &t, 1, NULL, &err), VW_OK, "%s", err.msg);
    float c1[2], z1[6], c2[2], z2[6];
    int32_t st[2] = {2, 3}, en[2] = {2, 4};
    vw_head_cand_job c = {0, 2, 4, false, c1};
    vw_head_span_job s = {VW_SPAN_HEAD_ROUTER, 1, 3, st, en, 2, z1};
    vw_head_job job = {&c, 1, &s, 1};
    cr_assert_eq(vw_executor_heads(ex, &job, &err), VW_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        cr_assert(z1[i] >= -4.0f && z1[i] < 4.0f && (i >= 2 || (c1[i] >= -4 && c1[i] < 4)));
    cr_assert(c1[0] != c1[1] && z1[0] != z1[1], "logits vary with the rows");
    /* Behind another tree: the same problem, its rows one further. */
    int32_t other[3] = {9, 10, 11}, other_ro[1] = {2};
    vw_tree two[2] = {{other, 3, other_ro, 1, NULL, 0}, t};
    cr_assert_eq(vw_executor_forward(ex, two, 2, NULL, &err), VW_OK);
    int32_t st2[2] = {3, 4}, en2[2] = {3, 5};
    vw_head_cand_job c_b = {1, 2, 5, false, c2};
    vw_head_span_job s_b = {VW_SPAN_HEAD_ROUTER, 2, 3, st2, en2, 2, z2};
    vw_head_job job2 = {&c_b, 1, &s_b, 1};
    cr_assert_eq(vw_executor_heads(ex, &job2, &err), VW_OK, "%s", err.msg);
    cr_assert(!memcmp(c1, c2, sizeof c1) && !memcmp(z1, z2, sizeof z1), "batch-independent");
    /* Rows past the last forward's 6 readouts are refused. */
    c_b.query = 6;
    cr_assert_eq(vw_executor_heads(ex, &job2, &err), VW_EINVAL);
    vw_executor_free(ex);
    vw_bundle_free(b);
    remove_dir(dir);
}
