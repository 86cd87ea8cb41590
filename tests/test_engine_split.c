/* test_engine_split.c — the engine splits a batch when the executor answers
 * VW_ETRANSIENT (a device arena too small for the batch), and the envelopes
 * are byte-identical to an unsplit run. The splitting executor wraps the real
 * CPU backbone (host heads), or the instant executor with its heads op (the
 * device-heads path: each part's head job is the slice of the batch's): it
 * refuses any call with more than max_trees trees. With device heads, a heads
 * op that fails for one plan's problems fails that plan alone. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/backbone_cpu.h"
#include "model/synthetic.h"
#include "engine.h"
#include "vw_test.h"

typedef struct narrow {
    vw_executor *inner;
    size_t max_trees;
    size_t calls, refused;
    size_t head_calls;
    bool poison_set; /* the heads op fails any job with a set question's problem */
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

static vw_status narrow_heads(vw_executor *ex, const vw_head_job *job, vw_err *err) {
    narrow *nw = ex->impl;
    nw->head_calls++;
    for (size_t k = 0; nw->poison_set && k < job->n_cand; k++)
        if (job->cand[k].is_set)
            return VW_FAIL(err, VW_EIO, "poison", "a set question's problem");
    return vw_executor_heads(nw->inner, job, err);
}

static const vw_executor_ops narrow_ops = {"narrow", narrow_forward, narrow_destroy, NULL};
static const vw_executor_ops narrow_heads_ops = {"narrow", narrow_forward, narrow_destroy,
                                                 narrow_heads};

static narrow g_narrow; /* the factory's context, inspected by the test */

static vw_status wrap(narrow *nw, vw_executor **out) {
    vw_executor *ex = calloc(1, sizeof *ex);
    cr_assert_not_null(ex);
    *ex = (vw_executor){.ops = vw_executor_has_heads(nw->inner) ? &narrow_heads_ops : &narrow_ops,
                        .hidden = nw->inner->hidden,
                        .vocab = nw->inner->vocab,
                        .impl = nw};
    *out = ex;
    return VW_OK;
}

static vw_status make_narrow(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    narrow *nw = ctx;
    vw_status st = vw_backbone_cpu_new(b, &nw->inner, err);
    return st == VW_OK ? wrap(nw, out) : st;
}

static vw_status make_narrow_instant(const vw_bundle *b, void *ctx, vw_executor **out,
                                     vw_err *err) {
    narrow *nw = ctx;
    vw_synthetic_opts inst = {0};
    vw_status st = vw_synthetic_new(b, &inst, &nw->inner, err);
    return st == VW_OK ? wrap(nw, out) : st;
}

static vw_status make_instant(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    (void)ctx;
    vw_synthetic_opts inst = {0};
    return vw_synthetic_new(b, &inst, out, err);
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

static void plan_all(vw_engine *e, vw_plan **plans) {
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
}

/* Scores every request in one batch; returns the concatenated envelopes. */
static char *score_all(vw_engine *e) {
    vw_plan *plans[N_REQ];
    vw_sbuf outs[N_REQ];
    memset(outs, 0, sizeof outs);
    plan_all(e, plans);
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

static vw_engine *open_with(vw_engine_opts *opts) {
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    vw_engine *e = NULL;
    cr_assert_eq(vw_engine_open(dir, opts, &e, &err), VW_OK, "%s", err.msg);
    free(dir);
    return e;
}

/* Device heads: each part of a split batch runs the heads over its own rows
 * (the slice of the batch's job), with the same envelopes as one call. */
Test(engine_split, device_heads_split_to_identical_envelopes) {
    vw_engine_opts po = {.make_executor = make_instant, .noul_calibration = -1};
    g_narrow = (narrow){.max_trees = 1};
    vw_engine_opts so = {
        .make_executor = make_narrow_instant, .make_ctx = &g_narrow, .noul_calibration = -1};
    vw_engine *plain = open_with(&po), *split = open_with(&so);
    char *a = score_all(plain);
    char *b = score_all(split);
    cr_assert_str_eq(a, b);
    cr_assert_gt(g_narrow.refused, 0);
    cr_assert_eq(g_narrow.head_calls, g_narrow.calls - g_narrow.refused,
                 "one heads call per forward that ran");
    free(a);
    free(b);
    vw_engine_free(plain);
    vw_engine_free(split);
}

/* Device heads: a heads op that fails the batch's job is retried plan by
 * plan; only the plan with the failing problem fails, the others answer as
 * in a clean run. */
Test(engine_split, device_heads_failure_fails_only_its_plan) {
    vw_engine_opts po = {.make_executor = make_instant, .noul_calibration = -1};
    g_narrow = (narrow){.max_trees = 64, .poison_set = true};
    vw_engine_opts so = {
        .make_executor = make_narrow_instant, .make_ctx = &g_narrow, .noul_calibration = -1};
    vw_engine *plain = open_with(&po), *poisoned = open_with(&so);
    vw_plan *pp[N_REQ], *qp[N_REQ];
    plan_all(plain, pp);
    plan_all(poisoned, qp);
    vw_engine_batch *pb = NULL, *qb = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_engine_pack(plain, pp, N_REQ, &pb, &err), VW_OK);
    cr_assert_eq(vw_engine_pack(poisoned, qp, N_REQ, &qb, &err), VW_OK);
    cr_assert_eq(vw_engine_execute(plain, pb, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_engine_execute(poisoned, qb, &err), VW_OK, "%s", err.msg);
    vw_sbuf po_out[N_REQ], qo_out[N_REQ];
    memset(po_out, 0, sizeof po_out);
    memset(qo_out, 0, sizeof qo_out);
    vw_engine_finish(plain, pb, po_out, NULL);
    vw_engine_finish(poisoned, qb, qo_out, NULL);
    for (size_t i = 0; i < N_REQ; i++) {
        vw_status st = vw_engine_batch_status(qb, i, &err);
        if (i == 1) { /* the request with the set question */
            cr_assert_eq(st, VW_EIO);
            cr_assert_str_eq(err.type, "poison");
        } else {
            cr_assert_eq(st, VW_OK, "plan %zu: %s", i, err.msg);
            cr_assert_eq(qo_out[i].len, po_out[i].len);
            cr_assert(!memcmp(qo_out[i].p, po_out[i].p, po_out[i].len), "plan %zu differs", i);
        }
        vw_sbuf_free(&po_out[i]);
        vw_sbuf_free(&qo_out[i]);
    }
    vw_engine_batch_free(pb); /* plans are borrowed until then */
    vw_engine_batch_free(qb);
    for (size_t i = 0; i < N_REQ; i++) {
        vw_plan_free(pp[i]);
        vw_plan_free(qp[i]);
    }
    vw_engine_free(plain);
    vw_engine_free(poisoned);
}
