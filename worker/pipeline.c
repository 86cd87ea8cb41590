/* pipeline.c — the model processor (see pipeline.h). */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/device.h"
#include "engine.h"
#include "model/backbone_cpu.h"
#include "model/synthetic.h"
#include "util/pool.h"

typedef struct pipeline {
    vw_engine *engine;
    vw_device_choice device; /* the executor factory's context */
    vw_synthetic_opts synth; /* VW_BENCH_EXECUTOR: the synthetic executor's */
    unsigned cpu_threads;    /* the CPU executor's pool (model.cpu_threads resolved) */
    const vw_log *log;
} pipeline;

/* model.cpu_threads, or by default the CPUs this process may use less one in
 * eight: the worker's own threads (Kafka, admission, and the processing
 * threads' heads, answers and envelopes beside the next forward) keep about
 * that busy (docs/performance.md "CPU thread model"). */
static unsigned cpu_threads_of(const vw_config *cfg) {
    if (cfg->model.cpu_threads > 0)
        return (unsigned)cfg->model.cpu_threads;
    unsigned n = vw_cpu_count();
    return n - n / 8;
}

static vw_status make_cpu(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    const pipeline *pl = ctx;
    return vw_backbone_cpu_new_threads(b, pl->cpu_threads, out, err);
}

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

/* [thread: admission, several at once] */
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
        out->tokens = vw_plan_cost(plan);
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

/* [thread: processing] */
static void fail(vw_result *r, vw_result_kind kind, const vw_err *err) {
    vw_result_clear(r);
    r->kind = kind;
    r->err = *err;
}

/* A micro-batch in flight: the engine's packed batch and its size. */
typedef struct pipe_batch {
    vw_engine_batch *eb;
    size_t n;
} pipe_batch;

/* [thread: kafka] */
static vw_status pipe_prepare(vw_processor *p, void *const *items, size_t n, void **batch,
                              vw_err *err) {
    pipeline *pl = p->impl;
    pipe_batch *b = malloc(sizeof *b);
    if (!b)
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch");
    b->n = n;
    vw_status st = vw_engine_pack(pl->engine, (vw_plan *const *)items, n, &b->eb, err);
    if (st != VW_OK) {
        free(b);
        return st;
    }
    *batch = b;
    return VW_OK;
}

/* [thread: executor] */
static vw_status pipe_execute(vw_processor *p, void *batch, vw_err *err) {
    pipeline *pl = p->impl;
    pipe_batch *b = batch;
    vw_status st = vw_engine_execute(pl->engine, b->eb, err);
    if (st != VW_OK)
        VW_LOG(pl->log, VW_LOG_WARN, "pipeline", "batch of %zu failed: %s (%s, %s)", b->n, err->msg,
               err->type, err->where);
    return st;
}

/* Each plan's envelope, or its own failure: RETRY when transient (the device
 * was out of memory for it), else FATAL (dead-lettered); the other plans of
 * the batch are answered (vw_engine_execute runs a failing batch plan by plan).
 * [thread: processing, several at once] */
static void pipe_finish(vw_processor *p, void *batch, vw_result *results, vw_stage_times *t) {
    pipeline *pl = p->impl;
    pipe_batch *b = batch;
    vw_sbuf *outs = calloc(b->n ? b->n : 1, sizeof *outs);
    vw_engine_times et = {0};
    if (outs)
        vw_engine_finish(pl->engine, b->eb, outs, &et);
    for (size_t i = 0; i < b->n; i++) {
        vw_err err = {0};
        vw_status st = outs ? vw_engine_batch_status(b->eb, i, &err)
                            : VW_FAIL(&err, VW_ETRANSIENT, "out_of_memory", "batch outputs");
        if (st == VW_OK)
            st = set_record(&results[i], 200, &outs[i], &err);
        if (st != VW_OK) {
            VW_LOG(pl->log, VW_LOG_WARN, "pipeline", "request failed: %s (%s, %s)", err.msg,
                   err.type, err.where);
            fail(&results[i], st == VW_ETRANSIENT ? VW_RESULT_RETRY : VW_RESULT_FATAL, &err);
        }
        if (outs)
            vw_sbuf_free(&outs[i]);
    }
    free(outs);
    if (t) {
        t->heads += et.heads;
        t->answers += et.answers;
        t->envelope += et.envelope;
    }
}

/* [thread: processing; kafka at shutdown] */
static void pipe_release(vw_processor *p, void *batch) {
    (void)p;
    pipe_batch *b = batch;
    if (b)
        vw_engine_batch_free(b->eb);
    free(b);
}

/* [thread: kafka, processing] */
static void pipe_item_free(vw_processor *p, void *item) {
    (void)p;
    vw_plan_free(item);
}

/* [thread: any] */
static void pipe_cancel(vw_processor *p) {
    vw_engine_cancel(((pipeline *)p->impl)->engine);
}

/* [thread: any] */
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
    .prepare = pipe_prepare,
    .execute = pipe_execute,
    .finish = pipe_finish,
    .release = pipe_release,
    .item_free = pipe_item_free,
    .cancel = pipe_cancel,
    .ready = NULL,
    .model = pipe_model,
    .destroy = pipe_destroy,
};

vw_status vw_pipeline_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                           vw_err *err) {
    *out = NULL;
    vw_engine_opts opts = {.noul_calibration = -1,
                           .max_request_tokens = cfg->limits.max_request_tokens,
                           .manifest_sha256 = cfg->model.manifest_sha256};
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
    if (st == VW_OK && !opts.make_executor) { /* the CPU reference backbone */
        pl->cpu_threads = cpu_threads_of(cfg);
        opts.make_executor = make_cpu;
        opts.make_ctx = pl;
        size_t len = strlen(pl->device.chosen);
        snprintf(pl->device.chosen + len, sizeof pl->device.chosen - len, ", %u threads",
                 pl->cpu_threads);
    }
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
