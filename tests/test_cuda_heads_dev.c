/* test_cuda_heads_dev.c — the readout heads on the device (cuda/heads_cuda.h,
 * the CUDA executor's heads op) against the CPU heads (core/answers/heads.h,
 * the oracle), at the heads' own bar: |gpu - cpu| <= 1e-5 + 1e-5 |cpu|
 * (test_heads' bar against PyTorch; tests/support/head_goldens.h).
 *  - torch_goldens: the fixture's candidate and span cases in one job, against
 *    the CPU heads and against the PyTorch goldens;
 *  - random_jobs: both span heads (the broad one a changed copy of the
 *    router, so a mix-up shows), problems without words, single labels
 *    (not centred), 70 labels over 64 slots, outputs larger than the pinned
 *    staging (several copies back), then every problem alone: bit-identical
 *    to its value in the batch;
 *  - small_tables: a job that does not fit the tables is VW_ETRANSIENT;
 *  - bad_jobs: rows or ranges outside the readouts, an absent head;
 *  - executor: the CUDA executor on the tiny bundle: forward(rows = NULL) +
 *    the heads op against the CPU heads over the rows a forward returned.
 * Skipped (cr_skip_test) without a CUDA device; one skipped test in builds
 * without CUDA. Runs on the CPU emulator (cmake -S cuda) in a few seconds.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answers/heads.h"
#include "backbone_cuda.h"
#include "head_goldens.h"
#include "heads_cuda.h"
#include "model/bundle.h"
#include "vw_cuda.h"
#include "num_check.h"
#include "vw_test.h"

#define DEV_HINT "(device heads vs the CPU heads: cuda/heads_cuda.cu)"

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

enum { MAXP = 64 };

/* A job under construction: host rows (the "readouts"), its problems, their
 * outputs and the CPU heads' answers for them. */
typedef struct jobset {
    size_t H;
    float *rows;
    size_t n_rows, cap;
    vw_head_cand_job cand[MAXP];
    size_t n_cand;
    vw_head_span_job span[MAXP];
    size_t n_span;
    int32_t *starts[MAXP], *ends[MAXP];
    float *want_c[MAXP], *want_s[MAXP];
} jobset;

static int32_t add_rows(jobset *j, const float *src, size_t n) {
    if (j->n_rows + n > j->cap) {
        j->cap = 2 * (j->n_rows + n);
        j->rows = realloc(j->rows, j->cap * j->H * sizeof *j->rows);
        cr_assert(j->rows);
    }
    memcpy(j->rows + j->n_rows * j->H, src, n * j->H * sizeof *src);
    j->n_rows += n;
    return (int32_t)(j->n_rows - n);
}

static void add_cand(jobset *j, const float *cands, size_t m, const float *query, bool is_set) {
    cr_assert(j->n_cand < MAXP);
    int32_t row = add_rows(j, cands, m), q = add_rows(j, query, 1);
    float *out = calloc(m, sizeof *out);
    cr_assert(out);
    j->cand[j->n_cand++] = (vw_head_cand_job){row, (int32_t)m, q, is_set, out};
}

/* A span block: its rows, label ranges inside them, and the words (indices
 * of its rows), which the job wants contiguous: copied after the block. */
static void add_span(jobset *j, int head, const float *block, size_t n_block, const int32_t *st,
                     const int32_t *en, size_t L, const int32_t *words, size_t W) {
    cr_assert(j->n_span < MAXP);
    int32_t at = add_rows(j, block, n_block), w0 = (int32_t)j->n_rows;
    for (size_t w = 0; w < W; w++)
        add_rows(j, block + (size_t)words[w] * j->H, 1);
    size_t k = j->n_span++;
    j->starts[k] = malloc(L * sizeof(int32_t));
    j->ends[k] = malloc(L * sizeof(int32_t));
    cr_assert(j->starts[k] && j->ends[k]);
    for (size_t l = 0; l < L; l++)
        j->starts[k][l] = at + st[l], j->ends[k][l] = at + en[l];
    float *z = calloc(W * L + 1, sizeof *z);
    cr_assert(z);
    j->span[k] =
        (vw_head_span_job){head, W ? w0 : 0, (int32_t)W, j->starts[k], j->ends[k], (int32_t)L, z};
}

static vw_head_job job_of(const jobset *j) {
    return (vw_head_job){j->cand, j->n_cand, j->span, j->n_span};
}

/* The CPU heads over the same rows: the oracle of every problem. */
static void cpu_answers(jobset *j, const vw_cand_head *ch, const vw_span_head *sh[2]) {
    vw_err e = {0};
    for (size_t k = 0; k < j->n_cand; k++) {
        const vw_head_cand_job *c = &j->cand[k];
        j->want_c[k] = calloc((size_t)c->m, sizeof(float));
        cr_assert_eq(vw_cand_head_logits(ch, j->rows + (size_t)c->row * j->H, (size_t)c->m,
                                         j->rows + (size_t)c->query * j->H, c->is_set, j->want_c[k],
                                         &e),
                     VW_OK, "%s", e.msg);
    }
    for (size_t k = 0; k < j->n_span; k++) {
        const vw_head_span_job *s = &j->span[k];
        size_t L = (size_t)s->n_labels, W = (size_t)s->n_words;
        float *lab = malloc(L * j->H * sizeof *lab);
        j->want_s[k] = calloc(W * L + 1, sizeof(float));
        cr_assert(lab && j->want_s[k]);
        cr_assert_eq(vw_span_label_means(j->rows, j->n_rows, j->H, s->starts, s->ends, L, lab, &e),
                     VW_OK, "%s", e.msg);
        cr_assert_eq(vw_span_head_logits(sh[s->head], j->rows + (size_t)s->words * j->H, W, lab, L,
                                         j->want_s[k], &e),
                     VW_OK, "%s", e.msg);
        free(lab);
    }
}

static void check_against_cpu(const jobset *j) {
    char what[64];
    for (size_t k = 0; k < j->n_cand; k++) {
        snprintf(what, sizeof what, "candidate problem %zu", k);
        vw_heads_assert_close(what, j->cand[k].logits, j->want_c[k], (size_t)j->cand[k].m,
                              DEV_HINT);
    }
    for (size_t k = 0; k < j->n_span; k++) {
        snprintf(what, sizeof what, "span problem %zu (head %d)", k, (int)j->span[k].head);
        vw_heads_assert_close(what, j->span[k].z, j->want_s[k],
                              (size_t)j->span[k].n_words * (size_t)j->span[k].n_labels, DEV_HINT);
    }
}

static void jobset_free(jobset *j) {
    for (size_t k = 0; k < j->n_cand; k++)
        free(j->cand[k].logits), free(j->want_c[k]);
    for (size_t k = 0; k < j->n_span; k++) {
        free(j->span[k].z), free(j->want_s[k]);
        free(j->starts[k]), free(j->ends[k]);
    }
    free(j->rows);
}

static vw_cuda_heads *dev_heads(const vw_cand_head *ch, const vw_span_head *r,
                                const vw_span_head *b, size_t max_rows) {
    vw_cuda_heads *h = NULL;
    vw_err e = {0};
    vw_status st = vw_cuda_heads_new(ch, r, b, max_rows, &h, &e);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), e.msg, e.where);
    return h;
}

static void run_dev(vw_cuda_heads *h, const jobset *j) {
    vw_head_job job = job_of(j);
    vw_err e = {0};
    vw_status st = vw_cuda_heads_run_host(h, j->rows, j->n_rows, &job, &e);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), e.msg, e.where);
}

static void load_golden_heads(vw_head_goldens *g, vw_cand_head *ch, vw_span_head *sh) {
    vw_head_goldens_load(g);
    vw_err e = {0};
    cr_assert_eq(vw_cand_head_init(ch, vw_head_goldens_lookup, g, VW_HEAD_CAND_PREFIX, &e), VW_OK,
                 "%s", e.msg);
    cr_assert_eq(vw_span_head_init(sh, vw_head_goldens_lookup, g, VW_HEAD_ROUTER_PREFIX, &e), VW_OK,
                 "%s", e.msg);
}

Test(cuda_heads_dev, torch_goldens, .init = need_gpu) {
    vw_head_goldens g;
    vw_cand_head ch;
    vw_span_head sh;
    load_golden_heads(&g, &ch, &sh);
    jobset j = {.H = ch.hidden};
    const float *want_torch[16];
    size_t n_torch = 0;
    json_t *cc = json_object_get(g.meta, "candidate_cases");
    char key[96];
    for (size_t c = 0; c < json_array_size(cc); c++) {
        json_t *cs = json_array_get(cc, c);
        const char *name = json_string_value(json_object_get(cs, "name"));
        size_t m = (size_t)json_integer_value(json_object_get(cs, "m"));
        snprintf(key, sizeof key, "case.%s.cands", name);
        const float *cands = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.query", name);
        const float *query = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        want_torch[n_torch++] = vw_head_goldens_tensor(&g, key, NULL);
        add_cand(&j, cands, m, query, json_is_true(json_object_get(cs, "is_set")));
    }
    json_t *sc = json_object_get(g.meta, "span_cases");
    for (size_t c = 0; c < json_array_size(sc); c++) {
        json_t *cs = json_array_get(sc, c);
        const char *name = json_string_value(json_object_get(cs, "name"));
        json_t *js = json_object_get(cs, "starts"), *je = json_object_get(cs, "ends"),
               *jw = json_object_get(cs, "words");
        size_t L = json_array_size(js), W = json_array_size(jw);
        int32_t st[80], en[80], words[16];
        cr_assert(L <= 80 && W <= 16);
        for (size_t l = 0; l < L; l++) {
            st[l] = (int32_t)json_integer_value(json_array_get(js, l));
            en[l] = (int32_t)json_integer_value(json_array_get(je, l));
        }
        for (size_t w = 0; w < W; w++)
            words[w] = (int32_t)json_integer_value(json_array_get(jw, w));
        snprintf(key, sizeof key, "case.%s.rows", name);
        const float *rows = vw_head_goldens_tensor(&g, key, NULL);
        snprintf(key, sizeof key, "case.%s.expected", name);
        want_torch[n_torch++] = vw_head_goldens_tensor(&g, key, NULL);
        add_span(&j, VW_SPAN_HEAD_ROUTER, rows,
                 (size_t)json_integer_value(json_object_get(cs, "n_rows")), st, en, L, words, W);
    }
    const vw_span_head *heads[2] = {&sh, NULL};
    cpu_answers(&j, &ch, heads);
    vw_cuda_heads *h = dev_heads(&ch, &sh, NULL, j.n_rows);
    run_dev(h, &j);
    check_against_cpu(&j);
    for (size_t k = 0; k < j.n_cand; k++)
        vw_heads_assert_close("candidate vs torch", j.cand[k].logits, want_torch[k],
                              (size_t)j.cand[k].m, VW_HEAD_GOLDENS_HINT);
    for (size_t k = 0; k < j.n_span; k++)
        vw_heads_assert_close("span vs torch", j.span[k].z, want_torch[j.n_cand + k],
                              (size_t)j.span[k].n_words * (size_t)j.span[k].n_labels,
                              VW_HEAD_GOLDENS_HINT);
    vw_cuda_heads_free(h);
    jobset_free(&j);
    vw_head_goldens_free(&g);
}

/* A broad head that differs from the router: v negated, slots halved. */
typedef struct other_head {
    vw_span_head h;
    float *v, *slot;
} other_head;

static void other_of(const vw_span_head *r, other_head *o) {
    o->h = *r;
    o->v = malloc(r->d * sizeof *o->v);
    o->slot = malloc(r->slots * r->hidden * sizeof *o->slot);
    cr_assert(o->v && o->slot);
    for (size_t i = 0; i < r->d; i++)
        o->v[i] = -r->v[i];
    for (size_t i = 0; i < r->slots * r->hidden; i++)
        o->slot[i] = 0.5f * r->slot[i];
    o->h.v = o->v, o->h.slot = o->slot;
}

/* Span problems of random_job: head, words, labels. */
static const int span_shape[][3] = {{0, 40, 70}, {1, 40, 70}, {0, 0, 3}, {1, 1, 1},
                                    {0, 17, 2},  {1, 2, 3},   {0, 5, 1}};

static void random_job(jobset *j, size_t H, uint64_t seed) {
    vw_rng rng = {seed};
    *j = (jobset){.H = H};
    float *buf = malloc(400 * H * sizeof *buf);
    cr_assert(buf);
    for (size_t k = 0; k < 12; k++) {
        size_t m = 1 + k % 9;
        for (size_t i = 0; i < (m + 1) * H; i++)
            buf[i] = vw_rng_uni(&rng, -2.0f, 2.0f) + (i % H == 3 ? 4.0f : 0.0f);
        add_cand(j, buf, m, buf + m * H, k % 3 == 1);
    }
    for (size_t p = 0; p < sizeof span_shape / sizeof span_shape[0]; p++) {
        size_t W = (size_t)span_shape[p][1], L = (size_t)span_shape[p][2];
        int32_t st[80], en[80], words[64];
        int32_t at = 0;
        for (size_t l = 0; l < L; l++) { /* label ranges of 1 to 4 rows */
            st[l] = at;
            en[l] = at + (int32_t)(l % 4);
            at = en[l] + 1;
        }
        for (size_t w = 0; w < W; w++)
            words[w] = at + (int32_t)w;
        size_t n = (size_t)at + W;
        cr_assert(n <= 400);
        for (size_t i = 0; i < n * H; i++)
            buf[i] = vw_rng_uni(&rng, -3.0f, 3.0f);
        add_span(j, span_shape[p][0], buf, n, st, en, L, words, W);
    }
    free(buf);
}

Test(cuda_heads_dev, random_jobs, .init = need_gpu) {
    vw_head_goldens g;
    vw_cand_head ch;
    vw_span_head sh;
    other_head broad;
    load_golden_heads(&g, &ch, &sh);
    other_of(&sh, &broad);
    const vw_span_head *heads[2] = {&sh, &broad.h};
    jobset j;
    random_job(&j, ch.hidden, 0x5eed);
    cpu_answers(&j, &ch, heads);
    size_t n_out = 0;
    for (size_t k = 0; k < j.n_cand; k++)
        n_out += (size_t)j.cand[k].m;
    for (size_t k = 0; k < j.n_span; k++)
        n_out += (size_t)j.span[k].n_words * (size_t)j.span[k].n_labels;
    /* 300 rows: 4,800 floats of pinned staging, fewer than the outputs: they
     * come back in two copies. */
    cr_assert_gt(n_out, 16 * 300, "the job must exceed the staging (%zu outputs)", n_out);
    vw_cuda_heads *h = dev_heads(&ch, &sh, &broad.h, 300);
    run_dev(h, &j);
    check_against_cpu(&j);
    /* Every problem alone: the same bits as in the batch. */
    for (size_t k = 0; k < j.n_cand; k++) {
        float alone[16];
        vw_head_cand_job one = j.cand[k];
        one.logits = alone;
        vw_head_job job = {&one, 1, NULL, 0};
        vw_err e = {0};
        cr_assert_eq(vw_cuda_heads_run_host(h, j.rows, j.n_rows, &job, &e), VW_OK, "%s", e.msg);
        cr_assert(!memcmp(alone, j.cand[k].logits, (size_t)one.m * sizeof(float)),
                  "candidate problem %zu alone differs from its batch value", k);
    }
    for (size_t k = 0; k < j.n_span; k++) {
        size_t n = (size_t)j.span[k].n_words * (size_t)j.span[k].n_labels;
        float *alone = calloc(n + 1, sizeof *alone);
        cr_assert(alone);
        vw_head_span_job one = j.span[k];
        one.z = alone;
        vw_head_job job = {NULL, 0, &one, 1};
        vw_err e = {0};
        cr_assert_eq(vw_cuda_heads_run_host(h, j.rows, j.n_rows, &job, &e), VW_OK, "%s", e.msg);
        cr_assert(!memcmp(alone, j.span[k].z, n * sizeof(float)),
                  "span problem %zu alone differs from its batch value", k);
        free(alone);
    }
    vw_cuda_heads_free(h);
    jobset_free(&j);
    free(broad.v), free(broad.slot);
    vw_head_goldens_free(&g);
}

Test(cuda_heads_dev, small_tables, .init = need_gpu) {
    vw_head_goldens g;
    vw_cand_head ch;
    vw_span_head sh;
    load_golden_heads(&g, &ch, &sh);
    jobset j;
    random_job(&j, ch.hidden, 7);
    vw_cuda_heads *h = dev_heads(&ch, &sh, &sh, 8); /* tables for 8 rows: 384 ints */
    vw_head_job job = job_of(&j);
    vw_err e = {0};
    cr_assert_eq(vw_cuda_heads_run_host(h, j.rows, j.n_rows, &job, &e), VW_ETRANSIENT);
    cr_assert_str_eq(e.type, "batch_too_large", "%s", e.msg);
    vw_cuda_heads_free(h);
    jobset_free(&j);
    vw_head_goldens_free(&g);
}

Test(cuda_heads_dev, bad_jobs, .init = need_gpu) {
    vw_head_goldens g;
    vw_cand_head ch;
    vw_span_head sh;
    load_golden_heads(&g, &ch, &sh);
    vw_cuda_heads *h = dev_heads(&ch, &sh, NULL, 16);
    float rows[8 * 64] = {0}, out[64];
    int32_t st[2] = {0, 3}, en[2] = {2, 3};
    vw_head_cand_job c = {6, 2, 1, false, out}; /* rows 6, 7: the query 1 */
    vw_head_span_job s = {VW_SPAN_HEAD_ROUTER, 4, 3, st, en, 2, out};
    vw_head_job job = {&c, 1, &s, 1};
    vw_err e = {0};
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_OK, "%s", e.msg);
    c.m = 3; /* row 8 of 8 */
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "candidate problem 0"), "%s", e.msg);
    c.m = 2, en[1] = 8; /* a label past the rows */
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "label 1"), "%s", e.msg);
    en[1] = 2; /* start 3 > end 2 */
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_EINVAL);
    en[1] = 3, s.head = VW_SPAN_HEAD_BROAD; /* not loaded */
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "broad"), "%s", e.msg);
    s.head = 2;
    cr_assert_eq(vw_cuda_heads_run_host(h, rows, 8, &job, &e), VW_EINVAL);
    vw_cuda_heads_free(h);
    vw_head_goldens_free(&g);
}

/* ---- the executor's heads op ------------------------------------------------ */

static vw_executor *tiny_exec(vw_bundle *b, int host_heads) {
    vw_cuda_opts o = {
        .max_tokens = 256, .max_trees = 4, .precision = VW_CUDA_FP32, .host_heads = host_heads};
    vw_executor *ex = NULL;
    vw_err e = {0};
    vw_status st = vw_backbone_cuda_new(b, &o, &ex, &e);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), e.msg, e.where);
    return ex;
}

Test(cuda_heads_dev, executor, .init = need_gpu, .timeout = 600) {
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_bundle *b = NULL;
    vw_err e = {0};
    cr_assert_eq(vw_bundle_open(dir, &b, &e), VW_OK, "%s", e.msg);
    free(dir);
    int32_t ids[64];
    for (int i = 0; i < 64; i++)
        ids[i] = (int32_t)((i * 37 + 11) % 1600);
    static const int32_t ro_pre[2] = {3, 29}, ro_b0[6] = {0, 2, 4, 6, 8, 11},
                         ro_b1[8] = {0, 1, 2, 3, 4, 5, 6, 8};
    vw_block blocks[2] = {{ids + 30, 12, ro_b0, 6}, {ids + 42, 9, ro_b1, 8}};
    vw_tree tree = {ids, 30, ro_pre, 2, blocks, 2};
    /* 16 readouts: prefix 0-1, block 0 at 2-7, block 1 at 8-15. */
    jobset j = {.H = 64};
    vw_executor *ex = tiny_exec(b, 0);
    cr_assert(vw_executor_has_heads(ex));
    size_t n = vw_trees_readout_count(&tree, 1);
    float *rows = malloc(n * ex->hidden * sizeof *rows);
    cr_assert(rows);
    vw_status st = vw_executor_forward(ex, &tree, 1, rows, &e);
    cr_assert_eq(st, VW_OK, "%s: %s", vw_status_name(st), e.msg);
    add_rows(&j, rows, n);
    float *lc0 = calloc(5, sizeof(float)), *lc1 = calloc(2, sizeof(float));
    j.cand[j.n_cand++] = (vw_head_cand_job){2, 5, 7, false, lc0};
    j.cand[j.n_cand++] = (vw_head_cand_job){0, 2, 1, true, lc1};
    static int32_t s0[3] = {8, 9, 11}, e0[3] = {8, 10, 11}, s1[1] = {2}, e1[1] = {4};
    float *z0 = calloc(4 * 3, sizeof(float)), *z1 = calloc(3, sizeof(float));
    j.span[j.n_span++] = (vw_head_span_job){VW_SPAN_HEAD_ROUTER, 12, 4, s0, e0, 3, z0};
    j.span[j.n_span++] = (vw_head_span_job){VW_SPAN_HEAD_BROAD, 13, 3, s1, e1, 1, z1};
    vw_head_tensors ht = {.bundle = b};
    vw_cand_head ch;
    vw_span_head router, broad;
    cr_assert_eq(vw_cand_head_init(&ch, vw_head_tensors_lookup, &ht, VW_HEAD_CAND_PREFIX, &e),
                 VW_OK, "%s", e.msg);
    cr_assert_eq(vw_span_head_init(&router, vw_head_tensors_lookup, &ht, VW_HEAD_ROUTER_PREFIX, &e),
                 VW_OK, "%s", e.msg);
    cr_assert_eq(vw_span_head_init(&broad, vw_head_tensors_lookup, &ht, VW_HEAD_BROAD_PREFIX, &e),
                 VW_OK, "%s", e.msg);
    const vw_span_head *heads[2] = {&router, &broad};
    cpu_answers(&j, &ch, heads);
    /* The rows stay on the device: forward without rows, then the heads op. */
    st = vw_executor_forward(ex, &tree, 1, NULL, &e);
    cr_assert_eq(st, VW_OK, "%s: %s", vw_status_name(st), e.msg);
    vw_head_job job = job_of(&j);
    st = vw_executor_heads(ex, &job, &e);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), e.msg, e.where);
    check_against_cpu(&j);
    /* Rows past the last forward's readouts are refused. */
    j.cand[0].m = 16;
    cr_assert_eq(vw_executor_heads(ex, &job, &e), VW_EINVAL);
    vw_executor_free(ex);
    /* host_heads: no heads op, and a forward then needs its rows buffer. */
    ex = tiny_exec(b, 1);
    cr_assert(!vw_executor_has_heads(ex));
    cr_assert_eq(vw_executor_forward(ex, &tree, 1, NULL, &e), VW_EINVAL);
    cr_assert_eq(vw_executor_heads(ex, &job, &e), VW_EUNSUPPORTED);
    vw_executor_free(ex);
    vw_head_tensors_free(&ht);
    free(rows);
    j.cand[0].m = 5;
    jobset_free(&j);
    vw_bundle_free(b);
}

#else
Test(cuda_heads_dev, not_built) {
    cr_skip_test("built without CUDA (VW_HAVE_CUDA unset)");
}
#endif
