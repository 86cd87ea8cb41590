/* bench_score.c — scoring throughput and latency of the engine, CPU backend.
 *
 *   bench_score --bundle DIR --requests FILE.jsonl [--reps R] [--label NAME]
 *               [--executor instant|sim[:...]]   (a synthetic executor: host costs only)
 *               [--batch N] [--threads T]
 *
 * Opens the package, plans and scores each request of FILE (one JSON request
 * per line) one at a time, R times over the file after warming up on the first
 * request (as the Python reference's --bench does), and
 * prints a table plus one JSON line:
 *   {"impl":"c","label":..,"requests":N,"threads":T,"req_per_s":..,
 *    "p50_ms":..,"p99_ms":..,"share":{"plan","backbone","heads","answers","json"}}
 * Latency = planning + scoring one call (one request, or --batch N requests
 * scored as one micro-batch: pack, execute, finish). Shares split the time:
 * plan (admission, render, tokenizer), backbone (the executor's forward, timed
 * by a wrapping executor), heads and json (vw_engine_finish's thread CPU
 * times: the heads, the envelope); answers = the rest (tree building,
 * calibration, span decoding).
 * Threads: the CPU executor's pool, --threads T (default 0: the CPUs this
 * process may use); OpenBLAS runs single-threaded (the heads too). Single-
 * threaded driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/backbone_cpu.h"
#include "model/synthetic.h"
#include "engine.h"
#include "util/pool.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds of the executor's calls (timed by a wrapping executor); the rest
 * of the stages come from vw_engine_finish's thread CPU times. One driver
 * thread: this file-scope struct is the wrapping executor's accumulator. */
static struct { double backbone; } g_stage;

static vw_status timed_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                               vw_err *err) {
    vw_executor *inner = ex->impl;
    double t = now();
    vw_status st = vw_executor_forward(inner, trees, n_trees, rows, err);
    g_stage.backbone += now() - t;
    return st;
}

static void timed_destroy(vw_executor *ex) {
    vw_executor_free(ex->impl);
    free(ex);
}

static const vw_executor_ops TIMED_OPS = {"cpu", timed_forward, timed_destroy, NULL};

typedef struct timed_ctx {
    vw_synthetic_opts *synth; /* --executor, or NULL for the CPU backbone */
    unsigned threads;         /* the CPU backbone's pool (0: default) */
} timed_ctx;

static vw_status make_timed(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    const timed_ctx *tc = ctx;
    vw_executor *inner = NULL;
    vw_status st = tc->synth ? vw_synthetic_new(b, tc->synth, &inner, err)
                             : vw_backbone_cpu_new_threads(b, tc->threads, &inner, err);
    vw_executor *ex = st == VW_OK ? calloc(1, sizeof *ex) : NULL;
    if (st == VW_OK && !ex) {
        vw_executor_free(inner);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "timed executor");
    }
    if (st == VW_OK) {
        *ex = (vw_executor){
            .ops = &TIMED_OPS, .hidden = inner->hidden, .vocab = inner->vocab, .impl = inner};
        *out = ex;
    }
    return st;
}

/* ---- driver ---------------------------------------------------------------- */

typedef struct lines {
    char *text;
    char **v;
    size_t *len, n;
} lines;

static int load_lines(const char *path, lines *out) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->text = malloc((size_t)size + 1);
    size_t got = out->text ? fread(out->text, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!out->text || got != (size_t)size)
        return -1;
    out->text[size] = 0;
    out->v = calloc((size_t)size + 1, sizeof *out->v);
    out->len = calloc((size_t)size + 1, sizeof *out->len);
    if (!out->v || !out->len)
        return -1;
    for (char *s = out->text, *e; *s; s = e + (*e != 0)) {
        e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        if (e > s) {
            out->v[out->n] = s;
            out->len[out->n++] = (size_t)(e - s);
        }
    }
    return out->n ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Plans and scores requests [k, k + n) of L as one micro-batch (pack,
 * execute, finish); adds the plan's wall time to *plan_s, finish's to
 * *finish_s and finish's thread CPU split by stage to *times. */
static vw_status score_batch(vw_engine *e, const lines *L, size_t k, size_t n, double *plan_s,
                             double *finish_s, vw_engine_times *times, vw_err *err) {
    vw_plan **plans = calloc(n, sizeof *plans);
    vw_sbuf *out = calloc(n, sizeof *out);
    size_t m = 0;
    vw_status st = plans && out ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batch");
    double t = now();
    for (size_t i = 0; st == VW_OK && i < n; i++) {
        vw_errlist detail = {0};
        int status = 0;
        size_t r = (k + i) % L->n;
        st = vw_engine_plan(e, L->v[r], L->len[r], &plans[m], &status, &detail, err);
        m += plans[m] != NULL;
        vw_errlist_free(&detail);
    }
    *plan_s += now() - t;
    vw_engine_batch *b = NULL;
    if (st == VW_OK)
        st = vw_engine_pack(e, plans, m, &b, err);
    if (st == VW_OK)
        st = vw_engine_execute(e, b, err);
    if (st == VW_OK) {
        t = now();
        vw_engine_finish(e, b, out, times);
        *finish_s += now() - t;
    }
    for (size_t i = 0; st == VW_OK && i < m; i++)
        st = vw_engine_batch_status(b, i, err);
    vw_engine_batch_free(b);
    for (size_t i = 0; i < m; i++) {
        vw_plan_free(plans[i]);
        vw_sbuf_free(&out[i]);
    }
    free(plans);
    free(out);
    return st;
}

static int run(const char *bundle, const char *path, int reps, int batch, const char *label,
               timed_ctx *tc) {
    lines L = {0};
    if (load_lines(path, &L)) {
        fprintf(stderr, "bench_score: cannot read requests from %s\n", path);
        return 1;
    }
    vw_err err = {0};
    vw_engine_opts opts = {.make_executor = make_timed, .make_ctx = tc, .noul_calibration = -1};
    vw_engine *e = NULL;
    vw_status st = vw_engine_open(bundle, &opts, &e, &err);
    size_t n = L.n * (size_t)reps, n_calls = (n + (size_t)batch - 1) / (size_t)batch;
    double *lat = calloc(n_calls, sizeof *lat), plan_s = 0, finish_s = 0, wall = 0;
    vw_engine_times times = {0};
    if (st == VW_OK) /* warm-up: first-call allocations, caches */
        st = score_batch(e, &L, 0, 1, &plan_s, &finish_s, &times, &err);
    memset(&g_stage, 0, sizeof g_stage);
    memset(&times, 0, sizeof times);
    plan_s = finish_s = 0;
    for (size_t c = 0; st == VW_OK && c < n_calls; c++) {
        size_t k = c * (size_t)batch, m = n - k < (size_t)batch ? n - k : (size_t)batch;
        double t = now();
        st = score_batch(e, &L, k, m, &plan_s, &finish_s, &times, &err);
        lat[c] = now() - t;
        wall += lat[c];
    }
    if (st == VW_OK) {
        /* Latency per call (a request at a time with --batch 1); the Python
         * side's definitions: statistics.median, sorted[int(0.99 n)]. */
        size_t nc = n_calls;
        qsort(lat, nc, sizeof *lat, cmp_double);
        double p50 = nc % 2 ? lat[nc / 2] : 0.5 * (lat[nc / 2 - 1] + lat[nc / 2]);
        size_t i99 = (size_t)(0.99 * (double)nc);
        double p99 = lat[i99 < nc ? i99 : nc - 1];
        /* Every share is wall time: finish's wall time split in the ratio of
         * its thread CPU by stage (OpenBLAS threads in the heads' GEMMs count
         * as the heads' wall time, not as CPU this thread did not spend). */
        double cpu = times.heads + times.answers + times.envelope;
        double heads = cpu > 0 ? finish_s * times.heads / cpu : 0;
        double json = cpu > 0 ? finish_s * times.envelope / cpu : 0;
        double answers = wall - plan_s - g_stage.backbone - heads - json;
        unsigned threads = tc->synth ? 1 : tc->threads ? tc->threads : vw_cpu_count();
        printf("%-10s %zu requests x %d, batch %d, %u threads: %.2f req/s, p50 %.2f ms, "
               "p99 %.2f ms\n",
               label, L.n, reps, batch, threads, n / wall, 1e3 * p50, 1e3 * p99);
        printf("  share: plan %.1f%%, backbone %.1f%%, heads %.1f%%, answers %.1f%%, json %.1f%%\n",
               100 * plan_s / wall, 100 * g_stage.backbone / wall, 100 * heads / wall,
               100 * answers / wall, 100 * json / wall);
        printf("{\"impl\":\"c\",\"label\":\"%s\",\"requests\":%zu,\"threads\":%u,"
               "\"req_per_s\":%.6g,\"p50_ms\":%.6g,\"p99_ms\":%.6g,\"share\":{\"plan\":%.4f,"
               "\"backbone\":%.4f,\"heads\":%.4f,\"answers\":%.4f,\"json\":%.4f}}\n",
               label, n, threads, n / wall, 1e3 * p50, 1e3 * p99, plan_s / wall,
               g_stage.backbone / wall, heads / wall, answers / wall, json / wall);
    } else {
        fprintf(stderr, "bench_score: %s (%s, %s)\n", err.msg, err.type, err.where);
    }
    vw_engine_free(e);
    free(lat);
    free(L.v);
    free(L.len);
    free(L.text);
    return st == VW_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *bundle = NULL, *requests = NULL, *label = "score", *executor = NULL;
    int reps = 3, batch = 1, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bundle") && i + 1 < argc)
            bundle = argv[++i];
        else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
            requests = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--label") && i + 1 < argc)
            label = argv[++i];
        else if (!strcmp(argv[i], "--executor") && i + 1 < argc)
            executor = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else
            bundle = NULL, i = argc;
    }
    if (!bundle || !requests || reps < 1 || batch < 1 || threads < 0) {
        fprintf(stderr, "usage: bench_score --bundle DIR --requests FILE.jsonl [--reps R] "
                        "[--label NAME] [--executor instant|sim[:...]] [--batch N] "
                        "[--threads T]\n");
        return 2;
    }
    vw_synthetic_opts synth;
    vw_err err = {0};
    if (executor && vw_synthetic_parse(executor, &synth, &err)) {
        fprintf(stderr, "bench_score: %s\n", err.msg);
        return 2;
    }
    timed_ctx tc = {.synth = executor ? &synth : NULL, .threads = (unsigned)threads};
    return run(bundle, requests, reps, batch, label, &tc);
}
