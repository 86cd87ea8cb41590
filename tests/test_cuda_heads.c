/* test_cuda_heads.c — the serving acceptance bar of the CUDA executor: head
 * outputs, not hidden rows. Every answered golden request of the tiny bundle
 * (fixtures/answers/cases.jsonl) is scored end to end twice — the engine on the
 * CPU reference backbone (FP32) and the engine on the CUDA executor — and the
 * two envelopes are walked together:
 *  - bf16_probabilities: CUDA in BF16 (the serving mode). Every probability
 *    (keys "probability", "probabilities", "confidence", "abstain_probability")
 *    within 0.02 of the FP32 path (docs/spec/backbone.md §6.4, as S1-DV); the
 *    worst difference, where it was seen, and the decisions that differ
 *    (choice picks, set selections, spans found by one side only: span lists
 *    are matched by start, end and label) are printed per case, not asserted: a
 *    probability near a threshold may flip within the bar.
 *  - fp32_probabilities: CUDA in FP32 must stay within 1e-4 of the CPU (its
 *    hidden rows are within 1e-3 of the CPU's: test_cuda_forward), with the
 *    same decisions.
 *  - bf16x2_probabilities: BF16 weights with split GEMM inputs
 *    (cuda/backbone_cuda.h) within 1e-3, with the same decisions.
 * VW_CUDA_HEADS_MAX_TOKENS (default: all) skips cases whose plan runs more
 * tokens (the CPU emulator of the kernels, cmake -S cuda, runs ~50 tokens/s).
 * Skipped (cr_skip_test) without a CUDA device or a CUDA build.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer_cases.h"
#include "backbone_cuda.h"
#include "vw_cuda.h"

#define BF16_PROB_ATOL 0.02
#define FP32_PROB_ATOL 1e-4
#define BF16X2_PROB_ATOL 1e-3

static vw_acases cases;

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
    cr_assert(vw_acases_load(&cases), "cannot load the answer goldens (%s)", VW_ACASES_RECIPE);
}

static void done(void) {
    vw_acases_free(&cases);
}

static vw_status make_cuda(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    vw_cuda_opts o = {.precision = *(const vw_cuda_precision *)ctx};
    return vw_backbone_cuda_new(b, &o, out, err);
}

typedef struct walk {
    double worst;
    char where[512];
    size_t probs, flips;
    char first_flip[512];
} walk;

static bool is_prob_key(const char *k) {
    return !strcmp(k, "probability") || !strcmp(k, "probabilities") || !strcmp(k, "confidence") ||
           !strcmp(k, "abstain_probability");
}

static void flip(walk *w, const char *path, const char *what) {
    if (!w->flips++)
        snprintf(w->first_flip, sizeof w->first_flip, "%s: %s", path, what);
}

/* A list of decoded spans ({"label", "start", "end", ...} objects). */
static bool is_span_list(const json_t *a) {
    const json_t *s = json_array_get(a, 0);
    return json_is_object(s) && json_object_get(s, "start") && json_object_get(s, "end") &&
           json_object_get(s, "label");
}

static bool same_span(const json_t *x, const json_t *y) {
    static const char *const keys[] = {"start", "end", "label"};
    for (size_t k = 0; k < 3; k++)
        if (!json_equal(json_object_get(x, keys[k]), json_object_get(y, keys[k])))
            return false;
    return true;
}

static void compare(walk *w, const json_t *a, const json_t *b, char *path, size_t cap, bool prob);

/* Span lists are matched by (start, end, label), not by index: one word that
 * moves to a neighbouring span shifts every later index, and an index walk
 * would then compare unrelated spans. A span of both lists is compared whole
 * (its probability within the bar); a span of one list only is one differing
 * decision. */
static void compare_spans(walk *w, const json_t *a, const json_t *b, char *path, size_t cap) {
    size_t n = strlen(path), nb = json_array_size(b), from = 0;
    bool *used = calloc(nb ? nb : 1, sizeof *used);
    cr_assert(used);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *x = json_array_get(a, i);
        size_t j = from;
        while (j < nb && (used[j] || !same_span(x, json_array_get(b, j))))
            j++;
        snprintf(path + n, cap - n, "/%zu", i);
        if (j < nb) {
            used[j] = true;
            from = j + 1; /* both lists are in document order */
            compare(w, x, json_array_get(b, j), path, cap, false);
        } else {
            flip(w, path, "span only on the CPU");
        }
        path[n] = 0;
    }
    for (size_t j = 0; j < nb; j++)
        if (!used[j]) {
            snprintf(path + n, cap - n, "/gpu:%zu", j);
            flip(w, path, "span only on the GPU");
            path[n] = 0;
        }
    free(used);
}

/* Compares a (CPU) and b (CUDA) at path; `prob` when under a probability key. */
static void compare(walk *w, const json_t *a, const json_t *b, char *path, size_t cap, bool prob) {
    size_t n = strlen(path);
    if (json_is_number(a) && json_is_number(b)) {
        if (!prob)
            return;
        double d = fabs(json_number_value(a) - json_number_value(b));
        w->probs++;
        if (d > w->worst) {
            w->worst = d;
            snprintf(w->where, sizeof w->where, "%s", path);
        }
        return;
    }
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *va;
        json_object_foreach((json_t *)a, k, va) {
            json_t *vb = json_object_get(b, k);
            snprintf(path + n, cap - n, "/%s", k);
            if (!vb)
                flip(w, path, "missing on the GPU");
            else
                compare(w, va, vb, path, cap, prob || is_prob_key(k));
            path[n] = 0;
        }
        if (json_object_size(a) != json_object_size(b))
            flip(w, path, "different keys");
        return;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (is_span_list(a) || is_span_list(b)) {
            compare_spans(w, a, b, path, cap);
            return;
        }
        if (json_array_size(a) != json_array_size(b)) {
            flip(w, path, "different lengths");
            return;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + n, cap - n, "/%zu", i);
            compare(w, json_array_get(a, i), json_array_get(b, i), path, cap, prob);
            path[n] = 0;
        }
        return;
    }
    if (!json_equal(a, b))
        flip(w, path, "differs");
}

static void merge(walk *w, const walk *c) {
    if (c->worst > w->worst) {
        w->worst = c->worst;
        snprintf(w->where, sizeof w->where, "%s", c->where);
    }
    if (c->flips && !w->flips)
        snprintf(w->first_flip, sizeof w->first_flip, "%s", c->first_flip);
    w->probs += c->probs;
    w->flips += c->flips;
}

/* Scores every answered tiny case on the CPU and on CUDA at `precision`. */
static walk run_cases(vw_cuda_precision precision) {
    const char *lim = getenv("VW_CUDA_HEADS_MAX_TOKENS");
    int64_t max_tokens = lim ? atoll(lim) : INT64_MAX;
    vw_acase_engines cpu = {0}, gpu = {.make_executor = make_cuda, .make_ctx = &precision};
    walk w = {0};
    size_t ran = 0;
    for (size_t i = 0; i < cases.n; i++) {
        const vw_acase *c = &cases.v[i];
        if (c->status != 200 || strcmp(c->bundle, "tiny"))
            continue;
        vw_engine *ec = vw_acase_engine(&cpu, c->bundle), *eg = vw_acase_engine(&gpu, c->bundle);
        cr_assert(ec && eg, "engines for %s", c->bundle);
        vw_plan *p = NULL;
        vw_sbuf rej = {0};
        vw_err err = {0};
        int status = 0;
        cr_assert_eq(vw_acase_plan(ec, c, &p, &status, &rej, &err), VW_OK, "%s", err.msg);
        int64_t cost = p ? vw_plan_cost(p) : 0;
        vw_plan_free(p);
        vw_sbuf_free(&rej);
        if (cost > max_tokens)
            continue;
        vw_sbuf oc = {0}, og = {0};
        int sc = 0, sg = 0;
        cr_assert_eq(vw_acase_run(ec, c, &sc, &oc, &err), VW_OK, "%s cpu: %s", c->name, err.msg);
        cr_assert_eq(vw_acase_run(eg, c, &sg, &og, &err), VW_OK, "%s cuda: %s", c->name, err.msg);
        cr_assert_eq(sc, 200);
        cr_assert_eq(sg, 200);
        json_t *a = json_loadb(oc.p, oc.len, 0, NULL), *b = json_loadb(og.p, og.len, 0, NULL);
        cr_assert(a && b, "%s: envelopes parse", c->name);
        char path[512];
        snprintf(path, sizeof path, "%s", c->name);
        walk cw = {0};
        compare(&cw, a, b, path, sizeof path, false);
        fprintf(stderr, "  %-32s worst %.3g  differing %zu%s%s\n", c->name, cw.worst, cw.flips,
                cw.flips ? ", first: " : "", cw.first_flip);
        merge(&w, &cw);
        json_decref(a);
        json_decref(b);
        vw_sbuf_free(&oc);
        vw_sbuf_free(&og);
        ran++;
    }
    vw_acase_engines_free(&cpu);
    vw_acase_engines_free(&gpu);
    fprintf(stderr,
            "%s vs CPU fp32: %zu cases, %zu probabilities, worst |diff| %.3g at %s; %zu "
            "differing decisions%s%s\n",
            vw_cuda_precision_name(precision), ran, w.probs, w.worst, w.where[0] ? w.where : "-",
            w.flips, w.flips ? ", first: " : "", w.first_flip);
    cr_assert_gt(ran, 0, "no case ran (VW_CUDA_HEADS_MAX_TOKENS too small?)");
    return w;
}

Test(cuda_heads, bf16_probabilities, .init = need_gpu, .fini = done, .timeout = 3600) {
    walk w = run_cases(VW_CUDA_BF16);
    cr_expect_leq(w.worst, BF16_PROB_ATOL, "bf16: probability drift %.3g > %.2g at %s", w.worst,
                  BF16_PROB_ATOL, w.where);
}

Test(cuda_heads, fp32_probabilities, .init = need_gpu, .fini = done, .timeout = 3600) {
    walk w = run_cases(VW_CUDA_FP32);
    cr_expect_leq(w.worst, FP32_PROB_ATOL, "fp32: probability drift %.3g > %.2g at %s", w.worst,
                  FP32_PROB_ATOL, w.where);
    cr_expect_eq(w.flips, 0, "fp32: decisions differ (%s)", w.first_flip);
}

/* BF16X2: BF16 weights and tensor-core GEMMs, FP32-grade answers: held to the
 * FP32 mode's decisions and within 1e-3 (FP32 gets 1e-4; the split leaves
 * ~2^-17 of each GEMM input). */
Test(cuda_heads, bf16x2_probabilities, .init = need_gpu, .fini = done, .timeout = 3600) {
    walk w = run_cases(VW_CUDA_BF16X2);
    cr_expect_leq(w.worst, BF16X2_PROB_ATOL, "bf16x2: probability drift %.3g > %.2g at %s", w.worst,
                  BF16X2_PROB_ATOL, w.where);
    cr_expect_eq(w.flips, 0, "bf16x2: decisions differ (%s)", w.first_flip);
}

#else
Test(cuda_heads, not_built) {
    cr_skip_test("built without CUDA (VW_HAVE_CUDA unset)");
}
#endif
