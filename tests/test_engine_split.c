/* test_engine_split.c — the engine splits a batch when the executor answers
 * VW_ETRANSIENT (a device arena too small for the batch), and the envelopes
 * are byte-identical to an unsplit run. The splitting executor wraps the real
 * CPU backbone: it refuses any call with more than max_trees trees. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/backbone_cpu.h"
#include "engine.h"
#include "vw_test.h"

typedef struct narrow {
    vw_executor *inner;
    size_t max_trees;
    size_t calls, refused;
} narrow;

static vw_status narrow_forward(vw_executor *ex, const vw_tree *trees, size_t n, float *rows,
                                vw_err *err) {
    narrow *nw = ex->impl;
    nw->calls++;
    if (n > nw->max_trees) {
        nw->refused++;
        return VW_FAIL(err, VW_ETRANSIENT, "batch_too_large", "%zu trees > %zu", n, nw->max_trees);
    }
    return vw_executor_forward(nw->inner, trees, n, rows, err);
}

static void narrow_destroy(vw_executor *ex) {
    narrow *nw = ex->impl;
    vw_executor_free(nw->inner);
    free(ex);
}

static const vw_executor_ops narrow_ops = {"narrow", narrow_forward, narrow_destroy, NULL};

static narrow g_narrow; /* the factory's context, inspected by the test */

static vw_status make_narrow(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    narrow *nw = ctx;
    vw_status st = vw_backbone_cpu_new(b, &nw->inner, err);
    if (st != VW_OK)
        return st;
    vw_executor *ex = calloc(1, sizeof *ex);
    cr_assert_not_null(ex);
    *ex = (vw_executor){
        .ops = &narrow_ops, .hidden = nw->inner->hidden, .vocab = nw->inner->vocab, .impl = nw};
    *out = ex;
    return VW_OK;
}

static const char *requests[] = {
    ("{\"state\":\"Hi, I am Tom (tom@example.com).\",\"questions\":{"
     "\"a\":{\"type\":\"noul\",\"instructions\":\"Is it a greeting?\"},"
     "\"p\":{\"preset\":\"pii\"},\"h\":{\"preset\":\"halu\"}}}"),
    ("{\"state\":{\"request\":\"Pay my invoice\",\"answer\":\"Done.\"},\"questions\":{"
     "\"s\":{\"type\":\"set\",\"instructions\":\"Topics?\",\"criteria\":{\"billing\":null,"
     "\"travel\":\"trips\"}},\"u\":{\"type\":\"score\",\"instructions\":\"Urgent?\","
     "\"criteria\":[\"low\",\"high\"]}}}"),
    ("{\"state\":\"short\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"Which?\","
     "\"criteria\":{\"x\":\"one\",\"y\":\"two\"}}}}"),
};
#define N_REQ (sizeof requests / sizeof requests[0])

/* Scores every request in one batch; returns the concatenated envelopes. */
static char *score_all(vw_engine *e) {
    vw_plan *plans[N_REQ];
    vw_sbuf outs[N_REQ];
    memset(outs, 0, sizeof outs);
    for (size_t i = 0; i < N_REQ; i++) {
        int status = 0;
        vw_errlist detail = {0};
        vw_err err = {0};
        cr_assert_eq(
            vw_engine_plan(e, requests[i], strlen(requests[i]), &plans[i], &status, &detail, &err),
            VW_OK, "%s", err.msg);
        cr_assert_not_null(plans[i], "request %zu rejected with %d", i, status);
        vw_errlist_free(&detail);
    }
    vw_err err = {0};
    cr_assert_eq(vw_engine_score(e, plans, N_REQ, outs, &err), VW_OK, "%s", err.msg);
    vw_sbuf all = {0};
    for (size_t i = 0; i < N_REQ; i++) {
        vw_sbuf_put(&all, outs[i].p, outs[i].len);
        vw_sbuf_puts(&all, "\n");
        vw_sbuf_free(&outs[i]);
        vw_plan_free(plans[i]);
    }
    return vw_sbuf_take(&all, NULL);
}

Test(engine_split, transient_batches_split_to_identical_envelopes) {
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    vw_engine *plain = NULL, *split = NULL;
    cr_assert_eq(vw_engine_open(dir, NULL, &plain, &err), VW_OK, "%s", err.msg);
    g_narrow = (narrow){.max_trees = 1};
    vw_engine_opts opts = {
        .make_executor = make_narrow, .make_ctx = &g_narrow, .noul_calibration = -1};
    cr_assert_eq(vw_engine_open(dir, &opts, &split, &err), VW_OK, "%s", err.msg);
    char *a = score_all(plain);
    char *b = score_all(split);
    cr_assert_str_eq(a, b);
    /* 3 requests plan into >= 4 executed trees: every multi-tree call was refused
     * once and split down to single trees. */
    cr_assert_gt(g_narrow.refused, 0);
    cr_assert_gt(g_narrow.calls, g_narrow.refused);
    free(a);
    free(b);
    vw_engine_free(plain);
    vw_engine_free(split);
    free(dir);
}
