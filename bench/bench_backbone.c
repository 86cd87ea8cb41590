/* bench_backbone.c — prefill throughput of the CPU backbone.
 *
 *   bench_backbone --bundle DIR --tokens N[,N2,...] [--reps R] [--seed S] [--threads T]
 *
 * Opens and verifies the bundle, upcasts the weights (timed), then runs each
 * N-token sequence (seeded random ids) as one prefix with a single readout,
 * R times, and prints one JSON line per length:
 *   {"impl":"c","tokens":N,"threads":T,"seconds":best,"tokens_per_s":...,
 *    "load_s":...,"weights_fp32_bytes":...,"peak_rss_bytes":...,
 *    "linear_gflop":...,"gemm_gflops":...}
 * linear_gflop is the arithmetic of the forward's projections (2 N x their
 * weights: the work no FP32 implementation can skip); gemm_gflops is the rate
 * of the largest of them alone (N x F x H, the MLP's gate) through the same
 * path (vw_par_linear on a pool of as many threads), the best of R calls and
 * 3 s of calls, right after the forward: the machine's ceiling for this side at this moment
 * (docs/performance.md "The GEMM ceiling").
 * Threads: the executor's pool, --threads T (default 0: the CPUs this process
 * may use, util/pool.h vw_cpu_count). Peak RSS is getrusage's ru_maxrss for
 * the whole process so far. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "model/backbone_cpu.h"
#include "model/bundle.h"
#include "model/ops_par.h"
#include "util/pool.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long peak_rss_bytes(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss * 1024L;
}

/* Floats of the backbone's weights: all of them, or (proj_only) the 2-D
 * "*_proj" tensors of the decoder layers, the GEMMs of every token. */
static size_t weight_floats(const vw_qwen35_config *c, int proj_only) {
    size_t n = vw_qwen35_tensor_specs(c, NULL, 0), total = 0;
    vw_qwen35_tensor_spec *s = malloc(n * sizeof *s);
    if (!s)
        return 0;
    vw_qwen35_tensor_specs(c, s, n);
    for (size_t i = 0; i < n; i++) {
        if (proj_only && (s[i].ndim != 2 || !strstr(s[i].name, "_proj")))
            continue;
        size_t e = 1;
        for (int d = 0; d < s[i].ndim; d++)
            e *= (size_t)s[i].shape[d];
        total += e;
    }
    free(s);
    return total;
}

/* GFLOP/s of Y[n,F] = X[n,H] W[F,H]^T through vw_par_linear on `pool`: the
 * best of at least reps calls and 3 s of calls (after one untimed call; the
 * best, since the shared machine only ever slows a call down); 0 when out of
 * memory. */
static double gemm_rate(vw_pool *pool, size_t n, size_t F, size_t H, int reps) {
    float *X = malloc(n * H * sizeof *X), *W = malloc(F * H * sizeof *W),
          *Y = malloc(n * F * sizeof *Y);
    double best = 1e30;
    if (X && W && Y) {
        for (size_t i = 0; i < n * H; i++)
            X[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        for (size_t i = 0; i < F * H; i++)
            W[i] = ((float)rand() / (float)RAND_MAX - 0.5f) * 0.05f;
        double start = now();
        for (int r = -1; r < reps || now() - start < 3.0; r++) {
            double t0 = now();
            vw_par_linear(pool, X, H, W, Y, F, n, F, H, 0);
            double dt = now() - t0;
            best = r >= 0 && dt < best ? dt : best;
        }
    }
    free(X);
    free(W);
    free(Y);
    return best < 1e30 ? 2.0 * (double)n * (double)F * (double)H / best / 1e9 : 0.0;
}

static int run_one(vw_executor *ex, int32_t vocab, size_t n, int reps, unsigned seed,
                   double *best) {
    int32_t *ids = malloc(n * sizeof *ids), ro = (int32_t)n - 1;
    float *row = malloc(ex->hidden * sizeof *row);
    if (!ids || !row)
        return 1;
    srand(seed);
    for (size_t i = 0; i < n; i++)
        ids[i] = rand() % vocab;
    vw_tree tr = {.prefix = ids, .n_prefix = n, .prefix_readouts = &ro, .n_prefix_readouts = 1};
    *best = 1e30;
    for (int r = 0; r < reps; r++) {
        vw_err err = {0};
        double t0 = now();
        if (vw_executor_forward(ex, &tr, 1, row, &err) != VW_OK) {
            fprintf(stderr, "bench_backbone: %s\n", err.msg);
            return 1;
        }
        double dt = now() - t0;
        *best = dt < *best ? dt : *best;
    }
    free(ids);
    free(row);
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *lengths = "1024";
    int reps = 1;
    unsigned seed = 7, threads = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bundle"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens"))
            lengths = argv[i + 1];
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = (unsigned)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = (unsigned)atoi(argv[i + 1]);
    }
    if (!dir || reps < 1) {
        fprintf(stderr, "usage: bench_backbone --bundle DIR --tokens N[,N...] [--reps R] "
                        "[--seed S] [--threads T]\n");
        return 2;
    }
    vw_bundle *b = NULL;
    vw_executor *ex = NULL;
    vw_err err = {0};
    double t0 = now();
    if (vw_bundle_open(dir, &b, &err) != VW_OK ||
        vw_backbone_cpu_new_threads(b, threads, &ex, &err) != VW_OK) {
        fprintf(stderr, "bench_backbone: %s\n", err.msg);
        return 1;
    }
    double load_s = now() - t0;
    const vw_qwen35_config *c = vw_bundle_backbone_config(b);
    size_t wbytes = weight_floats(c, 0) * sizeof(float), proj = weight_floats(c, 1);
    vw_pool *pool = NULL;
    if (vw_pool_new(vw_backbone_cpu_threads(ex), &pool, &err) != VW_OK) {
        fprintf(stderr, "bench_backbone: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (const char *p = lengths; *p && !rc;) {
        size_t n = strtoul(p, (char **)&p, 10);
        if (*p == ',')
            p++;
        double best = 0;
        if (!n || (rc = run_one(ex, c->vocab, n, reps, seed, &best)))
            break;
        double gemm = gemm_rate(pool, n, (size_t)c->intermediate, (size_t)c->hidden, reps);
        printf("{\"impl\":\"c\",\"tokens\":%zu,\"threads\":%d,\"seconds\":%.4f,"
               "\"tokens_per_s\":%.2f,\"load_s\":%.3f,\"weights_fp32_bytes\":%zu,"
               "\"peak_rss_bytes\":%ld,\"linear_gflop\":%.2f,\"gemm_gflops\":%.2f}\n",
               n, vw_backbone_cpu_threads(ex), best, n / best, load_s, wbytes, peak_rss_bytes(),
               2.0 * (double)n * (double)proj / 1e9, gemm);
        fflush(stdout);
    }
    vw_pool_free(pool);
    vw_executor_free(ex);
    vw_bundle_free(b);
    return rc;
}
