/* pipeline.c — the model processor (see pipeline.h). */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/device.h"
#include "engine.h"
#include "model/synthetic.h"

typedef struct pipeline {
    vw_engine *engine;
    vw_device_choice device; /* the executor factory's context */
    vw_synthetic_opts synth; /* VW_BENCH_EXECUTOR: the synthetic executor's */
    const vw_log *log;
} pipeline;

static vw_status make_synthetic(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    return vw_synthetic_new(b, ctx, out, err);
}

/* VW_BENCH_EXECUTOR=instant|sim[:...] (core/model/synthetic.h): benches and
 * tests of the host side put a synthetic executor in the backbone's place. */
static vw_status bench_executor(pipeline *pl, const char *spec, vw_engine_opts *opts, vw_err *err) {
    vw_status st = vw_synthetic_parse(spec, &pl->synth, err);
    if (st)
        return st;
    opts->make_executor = make_synthetic;
    opts->make_ctx = &pl->synth;
    snprintf(pl->device.chosen, sizeof pl->device.chosen, "%s (VW_BENCH_EXECUTOR: not a model)",
             spec);
    return VW_OK;
}

static vw_status set_record(vw_result *r, int status, vw_sbuf *sb, vw_err *err) {
    if (vw_sbuf_status(sb) != VW_OK)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "result value");
    r->kind = VW_RESULT_RECORD;
    r->vela_status = status;
    r->value = vw_sbuf_take(sb, &r->value_len);
    return r->value ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "result value");
}

static vw_status pipe_admit(vw_processor *p, const vw_record *rec, vw_admission *out, vw_err *err) {
    pipeline *pl = p->impl;
    vw_plan *plan = NULL;
    vw_errlist detail = {0};
    int status = 0;
    memset(out, 0, sizeof *out);
    vw_status st =
        rec->doc
            ? vw_engine_plan_doc(pl->engine, rec->value_len, rec->doc, &plan, &status, &detail, err)
            : vw_engine_plan(pl->engine, rec->value, rec->value_len, &plan, &status, &detail, err);
    if (st == VW_OK && plan) {
        out->item = plan;
        out->tokens = vw_engine_plan_cost(plan);
    } else if (st == VW_OK) {
        vw_sbuf sb = {0};
        vw_plan_write_rejection(&sb, status, &detail);
        out->finished = true;
        st = set_record(&out->result, status, &sb, err);
        vw_sbuf_free(&sb);
    }
    vw_errlist_free(&detail);
    return st;
}

/* Scores items[0..n) in one call; on success fills results with envelopes. */
static vw_status score(pipeline *pl, void *const *items, size_t n, vw_result *results,
                       vw_err *err) {
    vw_sbuf *outs = calloc(n, sizeof *outs);
    if (!outs)
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch outputs");
    vw_status st = vw_engine_score(pl->engine, (vw_plan *const *)items, n, outs, err);
    for (size_t i = 0; st == VW_OK && i < n; i++)
        st = set_record(&results[i], 200, &outs[i], err);
    for (size_t i = 0; i < n; i++)
        vw_sbuf_free(&outs[i]);
    free(outs);
    return st;
}

static void fail(vw_result *r, vw_result_kind kind, const vw_err *err) {
    vw_result_clear(r);
    r->kind = kind;
    r->err = *err;
}

static void pipe_run_batch(vw_processor *p, void *const *items, size_t n, vw_result *results) {
    pipeline *pl = p->impl;
    vw_err err = {0};
    vw_status st = score(pl, items, n, results, &err);
    if (st == VW_OK)
        return;
    for (size_t i = 0; i < n; i++)
        vw_result_clear(&results[i]);
    if (st == VW_ETRANSIENT || n == 1) {
        VW_LOG(pl->log, VW_LOG_WARN, "pipeline", "batch of %zu failed: %s (%s, %s)", n, err.msg,
               err.type, err.where);
        for (size_t i = 0; i < n; i++)
            fail(&results[i], st == VW_ETRANSIENT ? VW_RESULT_RETRY : VW_RESULT_FATAL, &err);
        return;
    }
    /* A non-transient batch failure: isolate the item(s) that cause it. */
    for (size_t i = 0; i < n; i++) {
        vw_err one = {0};
        vw_status s1 = score(pl, &items[i], 1, &results[i], &one);
        if (s1 != VW_OK)
            fail(&results[i], s1 == VW_ETRANSIENT ? VW_RESULT_RETRY : VW_RESULT_FATAL, &one);
    }
}

static void pipe_item_free(vw_processor *p, void *item) {
    (void)p;
    vw_plan_free(item);
}

static const char *pipe_model(vw_processor *p) {
    return vw_engine_model(((pipeline *)p->impl)->engine);
}

static void pipe_destroy(vw_processor *p) {
    pipeline *pl = p->impl;
    vw_engine_free(pl->engine);
    free(pl);
    free(p);
}

static const vw_processor_ops pipeline_ops = {
    .name = "pipeline",
    .admit = pipe_admit,
    .run_batch = pipe_run_batch,
    .item_free = pipe_item_free,
    .ready = NULL,
    .model = pipe_model,
    .destroy = pipe_destroy,
};

vw_status vw_pipeline_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                           vw_err *err) {
    *out = NULL;
    vw_engine_opts opts = {.noul_calibration = -1};
    pipeline *pl = calloc(1, sizeof *pl);
    vw_processor *p = calloc(1, sizeof *p);
    if (!pl || !p) {
        free(pl);
        free(p);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "pipeline");
    }
    pl->log = log;
    const char *bench = getenv("VW_BENCH_EXECUTOR");
    vw_status st = bench && *bench ? bench_executor(pl, bench, &opts, err)
                                   : vw_device_select(cfg->model.device, cfg->model.precision,
                                                      (size_t)cfg->batching.max_tokens, &pl->device,
                                                      &opts, err);
    if (st == VW_OK)
        st = vw_engine_open(cfg->model.bundle, &opts, &pl->engine, err);
    if (st != VW_OK) {
        free(pl);
        free(p);
        return st;
    }
    VW_LOG(log, VW_LOG_INFO, "pipeline", "model loaded model=%s device=%s bundle=%s",
           vw_engine_model(pl->engine), pl->device.chosen, cfg->model.bundle);
    p->ops = &pipeline_ops;
    p->impl = pl;
    *out = p;
    return VW_OK;
}
