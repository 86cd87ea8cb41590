/* bench_gpu.c — throughput and latency of the CUDA executor on a
 * Qwen3.5-shaped backbone (0.8B, 4B or 9B), beside the CPU backend on a small
 * case.
 *
 *   bench_gpu --random-bundle DIR [--shape 0.8b|4b|9b] [options]
 *                                             write (or reuse) a random bundle in DIR
 *   bench_gpu --bundle DIR [options]          any verified bundle
 * options: --batches 1,8,64,256  --reps 3  --latency-reps 30  --max-tokens 131072
 *          --precision bf16|bf16x2|fp32 --cpu-ref 1|0  --budget-s 240  --seed 20260601
 *          --wait block|spin|both
 *   bench_gpu --kernel-smem 0.8b|4b|9b        the dynamic shared memory of the mixers'
 *                                             kernels at that shape (scripts/sass-report):
 *                                             {"event":"kernel_smem","kernel":..,"bytes":..}
 *                                             per kernel; needs no device
 *
 * --random-bundle writes a Vela 2.0 package without Python (the GPU machine has
 * none): core/model/random_bundle.h's shape (default "0.8b": the backbone of
 * docs/spec/backbone.md §1.1; "4b", "9b": §1.2, ~8.4 / ~15.9 GB; the slices
 * too), the heads at its hidden size, seeded uniform weights, with
 * fixtures/tiny-vela's tokenizer and calibration. A DIR whose manifest names
 * that generator, shape and seed is reused; vw_bundle_open verifies it.
 *
 * Workload: "golden-like" trees (docs/spec/request.md §5.1 shapes): a 900-1100
 * token prefix, five question blocks of 60-160 tokens (option-end and query
 * readouts), two span blocks (labels only: 420-520 tokens; labels plus a
 * 360-token text copy: 760-920 tokens, with word readouts), ~2,900 tokens and
 * ~200 readouts per tree. A batch of B trees is split into forward calls of at
 * most --max-tokens tokens (the batcher's budget), as a caller does on
 * VW_ETRANSIENT. Output: one JSON object per line on stdout:
 *   device / load, cpu_ref (small case: CPU vs GPU time, ratio, and the GPU's
 *   drift from the CPU rows in BF16 and FP32 on this shape), latency (batch 1:
 *   p50/p99 over --latency-reps, and the calling thread's CPU time per forward,
 *   per wait mode: "block" sleeps in a blocking-sync event, "spin" polls; both
 *   with --wait both), kernels (one batch-1 forward timed by CUDA events per
 *   kernel class: delta rule, attention, GEMMs, the rest; vw_backbone_cuda_profile),
 *   batch (per B: tokens/s, requests/s, model
 *   TFLOP/s = projection GEMMs 2·N·K per token + attention 4·hd per query-key
 *   pair and head; DeltaNet and elementwise work are not counted), saturation.
 * Exit: 0 measured, 77 no CUDA device or no CUDA build (nothing measured), 1 error.
 * --budget-s stops starting new measurements past that many seconds.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/backbone_cpu.h"
#include "model/bundle.h"
#include "model/random_bundle.h"
#include "model/sizes.h"
#include "model/synthetic.h"

#ifndef VW_HAVE_CUDA
int main(void) {
    printf("{\"event\":\"skipped\",\"reason\":\"built without CUDA\"}\n");
    return 77;
}
#else
#include "backbone_cuda.h"
#include "vw_cuda.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r) {
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}
static size_t pick(rng *r, size_t lo, size_t span) {
    return lo + (size_t)(next(r) % (span ? span : 1));
}

/* ---- the random bundle ----------------------------------------------------- */

/* core/model/random_bundle.h's package of that shape (heads included, so the
 * engine and bench/ceiling.sh can load it too), reused when DIR holds it. */
static int random_bundle(const char *dir, const char *shape, uint64_t seed) {
    double t0 = now();
    bool reused = false;
    vw_err err = {0};
    if (vw_random_bundle_write(dir, shape, VW_SOURCE_DIR "/fixtures/tiny-vela", seed, &reused,
                               &err))
        return fprintf(stderr, "bench_gpu: writing the random bundle in %s failed: %s\n", dir,
                       err.msg),
               1;
    printf("{\"event\":\"random_bundle\",\"dir\":\"%s\",\"shape\":\"%s\",\"seed\":%llu,"
           "\"reused\":%s,\"seconds\":%.2f}\n",
           dir, shape, (unsigned long long)seed, reused ? "true" : "false", now() - t0);
    fflush(stdout);
    return 0;
}

/* ---- golden-like trees ------------------------------------------------------ */

enum { N_BLOCKS = 7, N_QUESTIONS = 5 };

typedef struct gtree {
    vw_tree t;
    vw_block b[N_BLOCKS];
    int32_t *ids, *ro; /* owned */
} gtree;

/* Readouts spread over [lo, hi) of a block: n indices, then the block's last token. */
static size_t spread(int32_t *ro, size_t k, size_t lo, size_t hi, size_t n, size_t last) {
    for (size_t i = 0; i < n; i++)
        ro[k++] = (int32_t)(lo + (hi - lo) * (i + 1) / (n + 1));
    ro[k++] = (int32_t)last;
    return k;
}

static int gtree_make(gtree *g, size_t index, uint64_t seed, int32_t vocab) {
    rng r = {seed ^ (0x9e3779b97f4a7c15ull * (index + 1))};
    size_t len[N_BLOCKS], total = pick(&r, 900, 201);
    for (int b = 0; b < N_QUESTIONS; b++)
        len[b] = pick(&r, 60, 101);
    len[5] = pick(&r, 420, 101); /* span: 17 labels, no text copy */
    len[6] = pick(&r, 760, 161); /* span: labels + a 360-token text */
    const size_t n_ids = total + len[0] + len[1] + len[2] + len[3] + len[4] + len[5] + len[6];
    g->ids = malloc(n_ids * sizeof *g->ids);
    g->ro = malloc(512 * sizeof *g->ro);
    if (!g->ids || !g->ro)
        return 1;
    for (size_t i = 0; i < n_ids; i++)
        g->ids[i] = (int32_t)(next(&r) % (uint64_t)vocab);
    g->t = (vw_tree){.prefix = g->ids, .n_prefix = total, .blocks = g->b, .n_blocks = N_BLOCKS};
    int32_t *p = g->ids + total;
    size_t k = 0;
    for (int b = 0; b < N_BLOCKS; b++) {
        size_t k0 = k;
        if (b < N_QUESTIONS) /* option ends, then the query token */
            k = spread(g->ro, k, len[b] / 3, len[b] - 20, pick(&r, 2, 5), len[b] - 1);
        else if (b == 5) /* 17 label starts/ends */
            k = spread(g->ro, k, 40, len[b] - 30, 33, len[b] - 1);
        else /* labels, then one readout per word (~3 tokens) of the text copy */
            k = spread(g->ro, spread(g->ro, k, 40, 400, 33, 401), 420, len[b] - 20, 110,
                       len[b] - 1);
        g->b[b] =
            (vw_block){.ids = p, .n_ids = len[b], .readouts = g->ro + k0, .n_readouts = k - k0};
        p += len[b];
    }
    return 0;
}

/* ---- runs --------------------------------------------------------------------- */

/* Forward of trees[0..n) in calls of at most max_tokens tokens; returns calls
 * made, or -1 with the error printed. */
static int run_batch(vw_executor *ex, const vw_tree *trees, size_t n, size_t max_tokens,
                     size_t max_trees, float *rows) {
    int calls = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, tok = 0;
        while (j < n && j - i < max_trees && tok + vw_tree_tokens(&trees[j]) <= max_tokens)
            tok += vw_tree_tokens(&trees[j++]);
        if (j == i)
            return fprintf(stderr, "bench_gpu: a tree of %zu tokens exceeds max_tokens\n",
                           vw_tree_tokens(&trees[i])),
                   -1;
        vw_err err = {0};
        if (vw_executor_forward(ex, trees + i, j - i, rows, &err) != VW_OK)
            return fprintf(stderr, "bench_gpu: forward: %s (%s)\n", err.msg, err.where), -1;
        rows += vw_trees_readout_count(trees + i, j - i) * ex->hidden;
        calls++, i = j;
    }
    return calls;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
    qsort(v, n, sizeof *v, cmp_d);
    size_t i = (size_t)ceil(p * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

typedef struct bench {
    const vw_bundle *b;
    const vw_qwen35_config *c;
    vw_executor *gpu;
    size_t max_tokens, max_trees;
    int reps, lat_reps;
    int wait; /* bit 0: measure blocking waits, bit 1: spinning (latency) */
    double t_start, budget;
    uint64_t seed;
} bench;

static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int over_budget(const bench *B) {
    return now() - B->t_start > B->budget;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, isfinite(a[i]) ? fabs((double)a[i] - b[i]) : INFINITY);
    return m;
}

static vw_executor *gpu_new(const vw_bundle *b, vw_cuda_precision prec, size_t max_tokens,
                            size_t max_trees, int spin) {
    vw_cuda_opts o = {
        .max_tokens = max_tokens, .max_trees = max_trees, .precision = prec, .spin_wait = spin};
    vw_executor *ex = NULL;
    vw_err err = {0};
    if (vw_backbone_cuda_new(b, &o, &ex, &err) != VW_OK)
        fprintf(stderr, "bench_gpu: cuda executor: %s (%s)\n", err.msg, err.where);
    return ex;
}

/* Small case (prefix 256 + two 32-token blocks) on the CPU backend and the GPU:
 * best-of time each, the ratio, and the GPU rows' drift from the CPU rows in
 * the benchmark precision and in FP32 (a parity check on the real shapes). */
static int cpu_ref(const bench *B) {
    rng r = {B->seed};
    int32_t ids[320], ro[3] = {255, 31, 31};
    for (int i = 0; i < 320; i++)
        ids[i] = (int32_t)(next(&r) % (uint64_t)B->c->vocab);
    vw_block bl[2] = {{ids + 256, 32, ro + 1, 1}, {ids + 288, 32, ro + 2, 1}};
    vw_tree t = {ids, 256, ro, 1, bl, 2};
    const size_t H = B->gpu->hidden, n = 3 * H;
    float *cpu_rows = malloc(n * 4), *gpu_rows = malloc(n * 4), *f32_rows = malloc(n * 4),
          *x2_rows = malloc(n * 4);
    vw_executor *cpu = NULL, *f32 = gpu_new(B->b, VW_CUDA_FP32, 4096, 4, 0),
                *x2 = gpu_new(B->b, VW_CUDA_BF16X2, 4096, 4, 0);
    vw_err err = {0};
    double t0 = now();
    if (!cpu_rows || !gpu_rows || !f32_rows || !x2_rows || !f32 || !x2 ||
        vw_backbone_cpu_new(B->b, &cpu, &err))
        return fprintf(stderr, "bench_gpu: cpu_ref setup failed %s\n", err.msg), 1;
    double cpu_load = now() - t0, cpu_s = 1e30, gpu_s = 1e30;
    for (int k = 0; k < 2; k++) {
        t0 = now();
        if (run_batch(cpu, &t, 1, 1 << 20, 1, cpu_rows) < 0)
            return 1;
        cpu_s = fmin(cpu_s, now() - t0);
    }
    for (int k = 0; k < 5; k++) {
        t0 = now();
        if (run_batch(B->gpu, &t, 1, B->max_tokens, 1, gpu_rows) < 0)
            return 1;
        gpu_s = fmin(gpu_s, now() - t0);
    }
    if (run_batch(f32, &t, 1, 4096, 1, f32_rows) < 0 || run_batch(x2, &t, 1, 4096, 1, x2_rows) < 0)
        return 1;
    printf(
        "{\"event\":\"cpu_ref\",\"tokens\":320,\"cpu_load_s\":%.2f,\"cpu_s\":%.4f,\"gpu_s\":%.5f,"
        "\"gpu_speedup\":%.1f,\"gpu_vs_cpu_max_abs\":%.4g,\"gpu_fp32_vs_cpu_max_abs\":%.4g,"
        "\"gpu_bf16x2_vs_cpu_max_abs\":%.4g}\n",
        cpu_load, cpu_s, gpu_s, cpu_s / gpu_s, max_abs_diff(gpu_rows, cpu_rows, n),
        max_abs_diff(f32_rows, cpu_rows, n), max_abs_diff(x2_rows, cpu_rows, n));
    fflush(stdout);
    vw_executor_free(cpu);
    vw_executor_free(f32);
    vw_executor_free(x2);
    free(cpu_rows), free(gpu_rows), free(f32_rows), free(x2_rows);
    return 0;
}

/* Batch-1 latency of ex and the calling thread's CPU time per forward. */
static int latency_of(const bench *B, vw_executor *ex, const gtree *g, const char *wait) {
    size_t nr = vw_trees_readout_count(&g->t, 1);
    float *rows = malloc(nr * ex->hidden * 4);
    double *lat = malloc(2 * (size_t)B->lat_reps * sizeof *lat), *cpu = lat + B->lat_reps;
    int k = 0;
    if (!rows || !lat || run_batch(ex, &g->t, 1, B->max_tokens, 1, rows) < 0) /* warm-up */
        return free(rows), free(lat), 1;
    for (; k < B->lat_reps && !over_budget(B); k++) {
        double t0 = now(), c0 = thread_cpu();
        if (run_batch(ex, &g->t, 1, B->max_tokens, 1, rows) < 0)
            return free(rows), free(lat), 1;
        lat[k] = now() - t0, cpu[k] = thread_cpu() - c0;
    }
    if (k)
        printf("{\"event\":\"latency\",\"wait\":\"%s\",\"trees\":1,\"tokens\":%zu,\"reps\":%d,"
               "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"host_cpu_ms_p50\":%.3f}\n",
               wait, vw_tree_tokens(&g->t), k, 1e3 * pct(lat, k, 0.5), 1e3 * pct(lat, k, 0.99),
               1e3 * pct(cpu, k, 0.5));
    fflush(stdout);
    free(rows), free(lat);
    return 0;
}

/* One batch-1 forward split by kernel class (CUDA events). */
static int kernels(const bench *B, const gtree *g, vw_cuda_precision prec) {
    size_t nr = vw_trees_readout_count(&g->t, 1);
    float *rows = malloc(nr * B->gpu->hidden * 4);
    double ms[VW_CUK_COUNT], total = 0;
    vw_err err = {0};
    int rc = !rows || vw_backbone_cuda_profile(B->gpu, 1, &err) ||
             run_batch(B->gpu, &g->t, 1, B->max_tokens, 1, rows) < 0 ||
             vw_backbone_cuda_profile_read(B->gpu, ms, &total, &err) ||
             vw_backbone_cuda_profile(B->gpu, 0, &err);
    if (rc) {
        fprintf(stderr, "bench_gpu: kernel split: %s\n", err.msg);
    } else {
        printf("{\"event\":\"kernels\",\"precision\":\"%s\",\"tokens\":%zu,\"ms\":{",
               vw_cuda_precision_name(prec), vw_tree_tokens(&g->t));
        for (int k = 0; k < VW_CUK_COUNT; k++)
            printf("%s\"%s\":%.3f", k ? "," : "", vw_cuda_kclass_name((vw_cuda_kclass)k), ms[k]);
        printf("},\"total_ms\":%.3f}\n", total);
        fflush(stdout);
    }
    free(rows);
    return rc;
}

/* Latency per wait mode asked (the executor's own, block, first). */
static int latency(const bench *B, const gtree *g, vw_cuda_precision prec) {
    int rc = (B->wait & 1) ? latency_of(B, B->gpu, g, "block") : 0;
    if (!rc && (B->wait & 2)) {
        vw_executor *spin = (B->wait & 1) ? NULL : B->gpu;
        if (!spin && !(spin = gpu_new(B->b, prec, B->max_tokens, 1, 1)))
            return 1;
        rc = latency_of(B, spin, g, "spin");
        if (spin != B->gpu)
            vw_executor_free(spin);
    }
    return rc;
}

/* One batch size: tokens/s, requests/s and model TFLOP/s at the median of reps. */
static int batch(const bench *B, const gtree *g, size_t n, double *req_s) {
    vw_tree *t = malloc(n * sizeof *t);
    double tok = 0, flops = 0, secs[16];
    size_t nr = 0;
    for (size_t i = 0; t && i < n; i++) {
        t[i] = g[i].t;
        tok += (double)vw_tree_tokens(&t[i]), flops += vw_qwen35_tree_flops(B->c, &t[i]);
        nr += vw_trees_readout_count(&t[i], 1);
    }
    float *rows = t ? malloc(nr * B->gpu->hidden * 4) : NULL;
    if (!rows)
        return fprintf(stderr, "bench_gpu: out of host memory for batch %zu\n", n), 1;
    int calls = run_batch(B->gpu, t, n, B->max_tokens, B->max_trees, rows), k = 0; /* warm-up */
    for (; calls > 0 && k < B->reps && k < 16 && !over_budget(B); k++) {
        double t0 = now();
        calls = run_batch(B->gpu, t, n, B->max_tokens, B->max_trees, rows);
        secs[k] = now() - t0;
    }
    if (calls > 0 && k) {
        double s = pct(secs, k, 0.5);
        *req_s = (double)n / s;
        printf("{\"event\":\"batch\",\"trees\":%zu,\"tokens\":%.0f,\"readouts\":%zu,\"calls\":%d,"
               "\"reps\":%d,\"seconds_p50\":%.4f,\"tokens_per_s\":%.0f,\"requests_per_s\":%.2f,"
               "\"model_tflops\":%.2f}\n",
               n, tok, nr, calls, k, s, tok / s, *req_s, flops / s / 1e12);
        fflush(stdout);
    }
    free(t), free(rows);
    return calls < 0;
}

static int run_gpu(bench *B, const char *batches, vw_cuda_precision prec, int with_cpu) {
    char name[256] = "";
    if (vw_cuda_device_count(name, sizeof name) == 0) {
        printf("{\"event\":\"skipped\",\"reason\":\"no CUDA device\"}\n");
        return 77;
    }
    double t0 = now();
    if (!(B->gpu = gpu_new(B->b, prec, B->max_tokens, B->max_trees, B->wait == 2)))
        return 1;
    vw_cuda_opts o = {.max_tokens = B->max_tokens, .max_trees = B->max_trees, .precision = prec};
    printf("{\"event\":\"device\",\"name\":\"%s\",\"precision\":\"%s\",\"max_tokens\":%zu,"
           "\"max_trees\":%zu,\"arena_bytes\":%zu,\"load_s\":%.2f}\n",
           name, vw_cuda_precision_name(prec), B->max_tokens, B->max_trees,
           vw_backbone_cuda_arena_bytes(B->c, &o), now() - t0);
    fflush(stdout);
    size_t max_b = 1;
    for (const char *p = batches; *p;) {
        size_t v = strtoul(p, (char **)&p, 10);
        max_b = v > max_b ? v : max_b;
        p += *p == ',';
    }
    gtree *g = calloc(max_b, sizeof *g);
    int rc = !g;
    for (size_t i = 0; i < max_b && !rc; i++)
        rc = gtree_make(&g[i], i, B->seed, B->c->vocab);
    if (!rc && with_cpu)
        rc = cpu_ref(B);
    if (!rc)
        rc = latency(B, &g[0], prec);
    if (!rc)
        rc = kernels(B, &g[0], prec);
    double best = 0, rs = 0;
    for (const char *p = batches; *p && !rc && !over_budget(B);) {
        size_t v = strtoul(p, (char **)&p, 10);
        p += *p == ',';
        if (v && !(rc = batch(B, g, v, &rs)))
            best = rs > best ? rs : best;
    }
    if (!rc)
        printf("{\"event\":\"saturation\",\"requests_per_s\":%.2f,\"budget_exhausted\":%s}\n", best,
               over_budget(B) ? "true" : "false");
    for (size_t i = 0; g && i < max_b; i++)
        free(g[i].ids), free(g[i].ro);
    free(g);
    vw_executor_free(B->gpu);
    return rc;
}

/* bench_gpu --kernel-smem SHAPE: one line per kernel, no device needed. */
static int kernel_smem(const char *shape) {
    vw_qwen35_config c;
    vw_err err = {0};
    if (vw_random_shape_config(shape, &c, &err) != VW_OK)
        return fprintf(stderr, "bench_gpu: %s\n", err.msg), 2;
    vw_cuda_kernel_smem rows[32];
    const size_t n = vw_cuda_kernel_smem_table(&c, rows, 32);
    for (size_t i = 0; i < n && i < 32; i++)
        printf("{\"event\":\"kernel_smem\",\"shape\":\"%s\",\"kernel\":\"%s\",\"bytes\":%zu}\n",
               shape, rows[i].name, rows[i].bytes);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *rnd_dir = NULL, *batches = "1,8,64,256", *prec = "bf16";
    const char *shape = "0.8b";
    bench B = {.max_tokens = 131072,
               .max_trees = 256,
               .reps = 3,
               .lat_reps = 30,
               .wait = 1,
               .budget = 240,
               .seed = 20260601,
               .t_start = now()};
    int with_cpu = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--bundle"))
            dir = v;
        else if (!strcmp(k, "--random-bundle"))
            rnd_dir = v;
        else if (!strcmp(k, "--shape"))
            shape = v;
        else if (!strcmp(k, "--batches"))
            batches = v;
        else if (!strcmp(k, "--reps"))
            B.reps = atoi(v);
        else if (!strcmp(k, "--latency-reps"))
            B.lat_reps = atoi(v);
        else if (!strcmp(k, "--max-tokens"))
            B.max_tokens = strtoul(v, NULL, 10);
        else if (!strcmp(k, "--precision"))
            prec = v;
        else if (!strcmp(k, "--cpu-ref"))
            with_cpu = atoi(v);
        else if (!strcmp(k, "--budget-s"))
            B.budget = atof(v);
        else if (!strcmp(k, "--seed"))
            B.seed = strtoull(v, NULL, 10);
        else if (!strcmp(k, "--kernel-smem"))
            return kernel_smem(v);
        else if (!strcmp(k, "--wait"))
            B.wait = !strcmp(v, "block") ? 1 : !strcmp(v, "spin") ? 2 : !strcmp(v, "both") ? 3 : 0;
        else
            return fprintf(stderr, "bench_gpu: unknown option %s\n", k), 2;
    }
    if ((!dir == !rnd_dir) || B.reps < 1 || B.lat_reps < 1 || !B.wait ||
        (strcmp(prec, "bf16") && strcmp(prec, "bf16x2") && strcmp(prec, "fp32"))) {
        fprintf(stderr,
                "usage: bench_gpu --random-bundle DIR [--shape 0.8b|4b|9b] | --bundle DIR"
                " [--batches 1,8,64,256]"
                " [--reps N] [--latency-reps N] [--max-tokens N] [--precision bf16|bf16x2|fp32]"
                " [--cpu-ref 1|0] [--budget-s S] [--seed S] [--wait block|spin|both]\n");
        return 2;
    }
    if (vw_cuda_device_count(NULL, 0) == 0) { /* refuse before writing 1.5-16 GB */
        printf("{\"event\":\"skipped\",\"reason\":\"no CUDA device\"}\n");
        return 77;
    }
    if (rnd_dir && random_bundle(rnd_dir, shape, B.seed))
        return 1;
    vw_bundle *b = NULL;
    vw_err err = {0};
    double t0 = now();
    if (vw_bundle_open(dir ? dir : rnd_dir, &b, &err) != VW_OK)
        return fprintf(stderr, "bench_gpu: %s\n", err.msg), 1;
    B.b = b, B.c = vw_bundle_backbone_config(b);
    vw_model_size size;
    vw_model_size_of(B.c, &size);
    printf("{\"event\":\"bundle\",\"dir\":\"%s\",\"size\":\"%s\",\"params\":%llu,"
           "\"open_s\":%.2f}\n",
           dir ? dir : rnd_dir, size.name, (unsigned long long)size.params, now() - t0);
    const vw_cuda_precision pv = !strcmp(prec, "fp32")     ? VW_CUDA_FP32
                                 : !strcmp(prec, "bf16x2") ? VW_CUDA_BF16X2
                                                           : VW_CUDA_BF16;
    int rc = run_gpu(&B, batches, pv, with_cpu);
    vw_bundle_free(b);
    return rc;
}
#endif
