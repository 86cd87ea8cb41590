/* bench_score.c — scoring throughput and latency of the engine, CPU backend.
 *
 *   bench_score --bundle DIR --requests FILE.jsonl [--reps R] [--label NAME]
 *               [--executor instant|sim[:...]]   (a synthetic executor: host costs only)
 *
 * Opens the package, plans and scores each request of FILE (one JSON request
 * per line) one at a time, R times over the file after warming up on the first
 * request (as the Python reference's --bench does), and
 * prints a table plus one JSON line:
 *   {"impl":"c","label":..,"requests":N,"threads":T,"req_per_s":..,
 *    "p50_ms":..,"p99_ms":..,"share":{"plan","backbone","heads","answers","json"}}
 * Latency = vw_engine_plan + vw_engine_score of one request. Shares split that
 * time: plan (admission, render, tokenizer), backbone (the executor's forward,
 * timed by a wrapping executor), heads (vw_cand_head_logits,
 * vw_span_label_means, vw_span_head_logits) and json (vw_envelope_write) via
 * the linker's --wrap (CMakeLists.txt, bench_score only); answers = the rest of
 * vw_engine_score (tree building, calibration, span decoding).
 * Threads: OpenBLAS's (OPENBLAS_NUM_THREADS). Single-threaded driver.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/backbone_cpu.h"
#include "model/synthetic.h"
#include "engine.h"
#include "answers/envelope.h"
#include "answers/heads.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds spent in the wrapped stages. The wrappers below have the library's
 * fixed signatures, so they reach their accumulator through this one
 * file-scope struct (a benchmark's single driver thread only). */
static struct { double backbone, heads, json; } g_stage;

vw_status __real_vw_cand_head_logits(const vw_cand_head *h, const float *cands, size_t m,
                                     const float *query, bool is_set, float *logits, vw_err *err);
vw_status __real_vw_span_label_means(const float *rows, size_t n_rows, size_t hidden,
                                     const int32_t *starts, const int32_t *ends, size_t n_labels,
                                     float *out, vw_err *err);
vw_status __real_vw_span_head_logits(const vw_span_head *h, const float *words, size_t n_words,
                                     const float *labels, size_t n_labels, float *z, vw_err *err);
vw_status __real_vw_envelope_write(vw_sbuf *sb, const vw_plan *p, const vw_answer *answers,
                                   const bool *answered, bool report_heads, vw_err *err);

vw_status __wrap_vw_cand_head_logits(const vw_cand_head *h, const float *cands, size_t m,
                                     const float *query, bool is_set, float *logits, vw_err *err);
vw_status __wrap_vw_cand_head_logits(const vw_cand_head *h, const float *cands, size_t m,
                                     const float *query, bool is_set, float *logits, vw_err *err) {
    double t = now();
    vw_status st = __real_vw_cand_head_logits(h, cands, m, query, is_set, logits, err);
    g_stage.heads += now() - t;
    return st;
}

vw_status __wrap_vw_span_label_means(const float *rows, size_t n_rows, size_t hidden,
                                     const int32_t *starts, const int32_t *ends, size_t n_labels,
                                     float *out, vw_err *err);
vw_status __wrap_vw_span_label_means(const float *rows, size_t n_rows, size_t hidden,
                                     const int32_t *starts, const int32_t *ends, size_t n_labels,
                                     float *out, vw_err *err) {
    double t = now();
    vw_status st =
        __real_vw_span_label_means(rows, n_rows, hidden, starts, ends, n_labels, out, err);
    g_stage.heads += now() - t;
    return st;
}

vw_status __wrap_vw_span_head_logits(const vw_span_head *h, const float *words, size_t n_words,
                                     const float *labels, size_t n_labels, float *z, vw_err *err);
vw_status __wrap_vw_span_head_logits(const vw_span_head *h, const float *words, size_t n_words,
                                     const float *labels, size_t n_labels, float *z, vw_err *err) {
    double t = now();
    vw_status st = __real_vw_span_head_logits(h, words, n_words, labels, n_labels, z, err);
    g_stage.heads += now() - t;
    return st;
}

vw_status __wrap_vw_envelope_write(vw_sbuf *sb, const vw_plan *p, const vw_answer *answers,
                                   const bool *answered, bool report_heads, vw_err *err);
vw_status __wrap_vw_envelope_write(vw_sbuf *sb, const vw_plan *p, const vw_answer *answers,
                                   const bool *answered, bool report_heads, vw_err *err) {
    double t = now();
    vw_status st = __real_vw_envelope_write(sb, p, answers, answered, report_heads, err);
    g_stage.json += now() - t;
    return st;
}

/* ---- the timing executor: the CPU backbone, its forward timed ------------- */

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

static const vw_executor_ops TIMED_OPS = {"cpu", timed_forward, timed_destroy};

/* ctx: a synthetic executor's options (--executor), or NULL for the CPU backbone. */
static vw_status make_timed(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    vw_executor *inner = NULL;
    vw_status st =
        ctx ? vw_synthetic_new(b, ctx, &inner, err) : vw_backbone_cpu_new(b, &inner, err);
    vw_executor *ex = st == VW_OK ? calloc(1, sizeof *ex) : NULL;
    if (st == VW_OK && !ex) {
        vw_executor_free(inner);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "timed executor");
    }
    if (st == VW_OK) {
        *ex = (vw_executor){&TIMED_OPS, inner->hidden, inner->vocab, inner};
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

/* Plans and scores one request; adds the plan time to *plan_s. */
static vw_status score_one(vw_engine *e, const char *body, size_t len, double *plan_s,
                           vw_err *err) {
    vw_plan *plan = NULL;
    vw_errlist detail = {0};
    vw_sbuf out = {0};
    int status = 0;
    double t = now();
    vw_status st = vw_engine_plan(e, body, len, &plan, &status, &detail, err);
    *plan_s += now() - t;
    if (st == VW_OK && plan)
        st = vw_engine_score(e, &plan, 1, &out, err);
    vw_sbuf_free(&out);
    vw_plan_free(plan);
    vw_errlist_free(&detail);
    return st;
}

static int run(const char *bundle, const char *path, int reps, const char *label,
               vw_synthetic_opts *synth) {
    lines L = {0};
    if (load_lines(path, &L)) {
        fprintf(stderr, "bench_score: cannot read requests from %s\n", path);
        return 1;
    }
    vw_err err = {0};
    vw_engine_opts opts = {.make_executor = make_timed, .make_ctx = synth, .noul_calibration = -1};
    vw_engine *e = NULL;
    vw_status st = vw_engine_open(bundle, &opts, &e, &err);
    size_t n = L.n * (size_t)reps;
    double *lat = calloc(n, sizeof *lat), plan_s = 0, wall = 0;
    if (st == VW_OK) /* warm-up: first-call allocations, caches */
        st = score_one(e, L.v[0], L.len[0], &plan_s, &err);
    memset(&g_stage, 0, sizeof g_stage);
    plan_s = 0;
    for (size_t k = 0; st == VW_OK && k < n; k++) {
        double t = now();
        st = score_one(e, L.v[k % L.n], L.len[k % L.n], &plan_s, &err);
        lat[k] = now() - t;
        wall += lat[k];
    }
    if (st == VW_OK) {
        qsort(lat, n, sizeof *lat, cmp_double);
        /* The Python side's definitions: statistics.median, sorted[int(0.99 n)]. */
        double p50 = n % 2 ? lat[n / 2] : 0.5 * (lat[n / 2 - 1] + lat[n / 2]);
        size_t i99 = (size_t)(0.99 * (double)n);
        double p99 = lat[i99 < n ? i99 : n - 1];
        double answers = wall - plan_s - g_stage.backbone - g_stage.heads - g_stage.json;
        int threads = openblas_get_num_threads();
        printf("%-10s %zu requests x %d, %d threads: %.2f req/s, p50 %.2f ms, p99 %.2f ms\n", label,
               L.n, reps, threads, n / wall, 1e3 * p50, 1e3 * p99);
        printf("  share: plan %.1f%%, backbone %.1f%%, heads %.1f%%, answers %.1f%%, json %.1f%%\n",
               100 * plan_s / wall, 100 * g_stage.backbone / wall, 100 * g_stage.heads / wall,
               100 * answers / wall, 100 * g_stage.json / wall);
        printf("{\"impl\":\"c\",\"label\":\"%s\",\"requests\":%zu,\"threads\":%d,"
               "\"req_per_s\":%.6g,\"p50_ms\":%.6g,\"p99_ms\":%.6g,\"share\":{\"plan\":%.4f,"
               "\"backbone\":%.4f,\"heads\":%.4f,\"answers\":%.4f,\"json\":%.4f}}\n",
               label, n, threads, n / wall, 1e3 * p50, 1e3 * p99, plan_s / wall,
               g_stage.backbone / wall, g_stage.heads / wall, answers / wall, g_stage.json / wall);
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
    int reps = 3;
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
        else
            bundle = NULL, i = argc;
    }
    if (!bundle || !requests || reps < 1) {
        fprintf(stderr, "usage: bench_score --bundle DIR --requests FILE.jsonl [--reps R] "
                        "[--label NAME] [--executor instant|sim[:...]]\n");
        return 2;
    }
    vw_synthetic_opts synth;
    vw_err err = {0};
    if (executor && vw_synthetic_parse(executor, &synth, &err)) {
        fprintf(stderr, "bench_score: %s\n", err.msg);
        return 2;
    }
    return run(bundle, requests, reps, label, executor ? &synth : NULL);
}
