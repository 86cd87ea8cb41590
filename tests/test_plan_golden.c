/* test_plan_golden.c — the C plan of every golden request, byte for byte
 * against the independent Python reference (tools/make_plan_goldens.py, HF
 * `tokenizers` on the Qwen3 tokenizer.json): token ids, readout indices,
 * answer plan, usage, and the rejections. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admit_cfg.h"
#include "render/plan.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"
#include "vw_test.h"

#define HINT "(regenerate with .venv/bin/python tools/make_plan_goldens.py)"
#define N_BUNDLES 3

static const char *const BUNDLES[N_BUNDLES] = {"bundle", "bundle-nobroad", "bundle-small"};

typedef struct env {
    vw_tokenizer *tok;
    vw_admit_cfg *cfg[N_BUNDLES];
    vw_renderer *r[N_BUNDLES];
} env;

static void env_open(env *e) {
    memset(e, 0, sizeof *e);
    vw_err err = {0};
    char *tp = vw_test_path("fixtures/tokenizers/qwen3/tokenizer.json");
    cr_assert_eq(vw_tok_load(tp, &e->tok, &err), VW_OK, "%s: %s", tp, err.msg);
    free(tp);
    for (int i = 0; i < N_BUNDLES; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "fixtures/plan/%s", BUNDLES[i]);
        char *dir = vw_test_path(rel);
        cr_assert_eq(vw_admit_cfg_load(dir, &e->cfg[i], &err), VW_OK, "%s: %s " HINT, dir, err.msg);
        cr_assert_eq(vw_renderer_new(e->cfg[i], vw_encoder_tok(e->tok), &e->r[i], &err), VW_OK,
                     "%s", err.msg);
        free(dir);
    }
}

static void env_close(env *e) {
    for (int i = 0; i < N_BUNDLES; i++) {
        vw_renderer_free(e->r[i]);
        vw_admit_cfg_free(e->cfg[i]);
    }
    vw_tok_free(e->tok);
}

/* The plan (or rejection) JSON of body, as `vela-worker plan` prints it. */
static char *plan_json(const vw_renderer *r, const char *body, size_t len) {
    vw_plan *p = NULL;
    vw_errlist d = {0};
    int status = 0;
    vw_err err = {0};
    vw_status st = vw_plan_request(r, body, len, &p, &status, &d, &err);
    cr_assert_eq(st, VW_OK, "%s", err.msg);
    vw_sbuf sb = {0};
    if (p)
        vw_plan_write_json(&sb, p);
    else
        vw_plan_write_rejection(&sb, status, &d);
    vw_plan_free(p);
    vw_errlist_free(&d);
    return vw_sbuf_take(&sb, NULL);
}

static void report_difference(const char *name, const char *got, const char *want) {
    size_t i = 0;
    while (got[i] && got[i] == want[i])
        i++;
    size_t from = i > 80 ? i - 80 : 0;
    cr_log_error("%s: first difference at byte %zu\n  got:  ...%.160s\n  want: ...%.160s", name, i,
                 got + from, want + from);
}

Test(plan_golden, every_case_matches_the_python_reference, .timeout = 600) {
    env e;
    env_open(&e);
    char *ip = vw_test_path("fixtures/plan/cases/index.json");
    json_error_t je;
    json_t *index = json_load_file(ip, 0, &je);
    cr_assert_not_null(index, "%s: %s " HINT, ip, je.text);
    size_t n = json_array_size(index), bad = 0, statuses[6] = {0};
    for (size_t k = 0; k < n; k++) {
        const json_t *c = json_array_get(index, k);
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *bundle = json_string_value(json_object_get(c, "bundle"));
        int b = 0;
        while (b < N_BUNDLES && strcmp(BUNDLES[b], bundle))
            b++;
        cr_assert_lt(b, N_BUNDLES, "%s: unknown bundle %s", name, bundle);
        char rel[256];
        snprintf(rel, sizeof rel, "fixtures/plan/cases/%s.req", name);
        char *rp = vw_test_path(rel);
        snprintf(rel, sizeof rel, "fixtures/plan/cases/%s.plan.json", name);
        char *pp = vw_test_path(rel);
        size_t len = 0, wlen = 0;
        char *body = vw_test_read_file(rp, &len);
        char *want = vw_test_read_file(pp, &wlen);
        cr_assert(body && want, "%s: missing fixture " HINT, name);
        while (wlen && want[wlen - 1] == '\n')
            want[--wlen] = 0;
        char *got = plan_json(e.r[b], body, len);
        if (strcmp(got, want)) {
            bad++;
            report_difference(name, got, want);
        }
        int status = atoi(want + 10); /* {"status":NNN */
        statuses[status == 200 ? 0 : status == 400 ? 1 : status == 413 ? 2 : 3]++;
        free(got);
        free(body);
        free(want);
        free(rp);
        free(pp);
    }
    cr_log_info("%zu golden plans: %zu x 200, %zu x 400, %zu x 413, %zu x 422", n, statuses[0],
                statuses[1], statuses[2], statuses[3]);
    cr_expect_eq(bad, 0, "%zu of %zu golden plans differ " HINT, bad, n);
    cr_expect_geq(n, 30);
    json_decref(index);
    free(ip);
    env_close(&e);
}

Test(plan_golden, executor_trees_validate_against_the_vocabulary) {
    env e;
    env_open(&e);
    char *rp = vw_test_path("fixtures/plan/cases/long_document_windows.req");
    size_t len;
    char *body = vw_test_read_file(rp, &len);
    cr_assert_not_null(body, HINT);
    vw_plan *p = NULL;
    vw_errlist d = {0};
    int status;
    cr_assert_eq(vw_plan_request(e.r[0], body, len, &p, &status, &d, NULL), VW_OK);
    cr_assert_eq(status, 200);
    cr_expect_gt(p->n_trees, 2, "a windowed span");
    vw_plan_exec_out ex;
    cr_assert_eq(vw_plan_exec(p, &ex, NULL), VW_OK);
    vw_err err = {0};
    cr_expect_eq(vw_trees_validate(ex.trees, ex.n_trees, vw_tok_vocab_size(e.tok), &err), VW_OK,
                 "%s", err.msg);
    cr_expect_eq(ex.n_rows, vw_trees_readout_count(ex.trees, ex.n_trees));
    /* the row tree runs for `topic`; its span block (windows replace it) is not run */
    cr_expect_eq(ex.n_trees, p->n_trees);
    cr_expect_eq(ex.trees[0].n_blocks, 1);
    cr_expect(!p->trees[0].blocks[1].read);
    cr_expect_eq(ex.first_row[1], -1);
    vw_plan_exec_free(&ex);
    vw_plan_free(p);
    free(body);
    free(rp);
    env_close(&e);
}

/* `vela-worker plan` prints the same bytes (run only under CTest, which sets
 * VW_WORKER_BIN). */
Test(plan_golden, cli_prints_the_golden_plan) {
    const char *bin = getenv("VW_WORKER_BIN");
    if (!bin)
        cr_skip_test("VW_WORKER_BIN not set (run through ctest)");
    const char *names[] = {"golden_8_1", "reject_all_questions_invalid"};
    for (size_t i = 0; i < 2; i++) {
        char rel[128], cmd[2048];
        snprintf(rel, sizeof rel, "fixtures/plan/cases/%s.plan.json", names[i]);
        char *want_path = vw_test_path(rel);
        snprintf(rel, sizeof rel, "fixtures/plan/cases/%s.req", names[i]);
        char *req = vw_test_path(rel);
        char *bundle = vw_test_path("fixtures/plan/bundle");
        char *tok = vw_test_path("fixtures/tokenizers/qwen3/tokenizer.json");
        snprintf(cmd, sizeof cmd, "%s plan --bundle %s --tokenizer %s < %s", bin, bundle, tok, req);
        FILE *f = popen(cmd, "r");
        cr_assert_not_null(f);
        size_t cap = 1 << 20, n = 0;
        char *got = malloc(cap);
        size_t r;
        while ((r = fread(got + n, 1, cap - n - 1, f)) > 0)
            n += r;
        got[n] = 0;
        cr_expect_eq(pclose(f), 0, "%s", cmd);
        char *want = vw_test_read_file(want_path, NULL);
        cr_expect_str_eq(got, want, "%s", names[i]);
        free(got);
        free(want);
        free(want_path);
        free(req);
        free(bundle);
        free(tok);
    }
}
