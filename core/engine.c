/* engine.c — a loaded package: plan -> executor -> heads -> answers -> envelope
 * (see engine.h). This file owns loading and the batch steps (pack, execute,
 * finish); the heads and answers of a batch's rows are readout.c's, the JSON
 * of the envelope is envelope.c's. */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answers/answers.h"
#include "answers/readout.h"
#include "model/backbone_cpu.h"
#include "answers/calibration.h"
#include "answers/envelope.h"
#include "answers/heads.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"

/* Row buffers of finished batches, kept for the next ones: a batch's rows are
 * tens of MB (readouts x hidden floats), and a fresh allocation of that size
 * is mapped and page-faulted anew every time. */
enum { ROW_POOL = 4 };
typedef struct row_pool {
    pthread_mutex_t mu;
    float *buf[ROW_POOL];
    size_t cap[ROW_POOL]; /* floats */
    size_t n;
} row_pool;

struct vw_engine {
    row_pool *rows; /* shared by the threads that pack and free batches */
    vw_bundle *bundle;
    vw_tokenizer *tok;
    vw_admit_cfg *acfg;
    vw_renderer *rend;
    vw_cal *cal;
    vw_executor *ex;
    vw_readout_heads heads; /* the heads (FP32 copies in tensors) and calibration */
    atomic_bool cancel;     /* vw_engine_cancel: the executor stops between trees */
    vw_tensor_f32 *tensors; /* FP32 head weights the heads point into */
    size_t n_tensors, cap_tensors;
    char model[256];
};

/* ---- loading -------------------------------------------------------------- */

static bool engine_cancelled(void *ctx) {
    return atomic_load_explicit(&((vw_engine *)ctx)->cancel, memory_order_relaxed);
}

void vw_engine_cancel(vw_engine *e) {
    atomic_store(&e->cancel, true);
}

/* vw_tensor_lookup over the bundle: keeps every FP32 copy alive in the engine. */
static vw_status lookup_tensor(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    vw_engine *e = ctx;
    if (e->n_tensors == e->cap_tensors) {
        size_t cap = e->cap_tensors ? 2 * e->cap_tensors : 32;
        vw_tensor_f32 *t = realloc(e->tensors, cap * sizeof *t);
        if (!t)
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "head tensor table");
        e->tensors = t;
        e->cap_tensors = cap;
    }
    vw_tensor_f32 *t = &e->tensors[e->n_tensors];
    vw_status st = vw_bundle_tensor_f32(e->bundle, name, t, err);
    if (st != VW_OK)
        return st;
    e->n_tensors++;
    memset(out, 0, sizeof *out);
    out->data = t->data;
    out->ndim = (size_t)t->ndim;
    for (int i = 0; i < t->ndim && i < 4; i++)
        out->shape[i] = t->shape[i];
    return VW_OK;
}

/* Admission's configuration from the bundle's verified config.json and
 * calibration.json bytes (not re-read from disk). */
static vw_status admit_cfg_of(const vw_bundle *b, vw_admit_cfg **out, vw_err *err) {
    size_t config_len, cal_len;
    const char *config = vw_bundle_config_json(b, &config_len);
    const char *cal = vw_bundle_calibration_json(b, &cal_len);
    return vw_admit_cfg_parse(config, config_len, cal, cal_len, vw_bundle_has_broad_head(b) != 0,
                              out, err);
}

static void set_model_name(vw_engine *e, const char *dir) {
    const json_t *cfg = vw_bundle_config(e->bundle);
    const char *name = json_string_value(json_object_get(cfg, "model_name"));
    if (!name) {
        const char *slash = strrchr(dir, '/');
        name = slash && slash[1] ? slash + 1 : dir;
    }
    /* The revision is the first 12 hex digits of the digest over every
     * verified file's digest (bundle.h vw_bundle_content_sha256): a changed
     * weight, head, calibration or tokenizer file is another revision. */
    snprintf(e->model, sizeof e->model, "%s@%.12s", name, vw_bundle_content_sha256(e->bundle));
}

vw_status vw_engine_open(const char *dir, const vw_engine_opts *opts, vw_engine **out,
                         vw_err *err) {
    *out = NULL;
    vw_engine *e = calloc(1, sizeof *e);
    if (e && !(e->rows = calloc(1, sizeof *e->rows))) {
        free(e);
        e = NULL;
    }
    if (!e)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "engine");
    pthread_mutex_init(&e->rows->mu, NULL);
    vw_status st =
        vw_bundle_open_anchored(dir, opts ? opts->manifest_sha256 : NULL, &e->bundle, err);
    size_t tok_len = 0;
    const char *tok_json = st ? NULL : vw_bundle_tokenizer_json(e->bundle, &tok_len);
    if (st == VW_OK)
        st = vw_tok_load_json(tok_json, tok_len, &e->tok, err);
    if (st == VW_OK)
        st = admit_cfg_of(e->bundle, &e->acfg, err);
    if (st == VW_OK && opts)
        e->acfg->max_request_tokens = opts->max_request_tokens;
    if (st == VW_OK)
        st = vw_renderer_new(e->acfg, vw_encoder_tok(e->tok), &e->rend, err);
    if (st == VW_OK)
        st = vw_cal_from_json(vw_bundle_calibration(e->bundle), &e->cal, err);
    if (st == VW_OK)
        st = vw_cand_head_init(&e->heads.cand, lookup_tensor, e, "head.", err);
    if (st == VW_OK)
        st = vw_span_head_init(&e->heads.router, lookup_tensor, e, "span2.", err);
    /* Decision 3: a broad head needs the file and a non-empty calibration block. */
    e->heads.has_broad = st == VW_OK && e->acfg->broad && vw_bundle_has_broad_head(e->bundle);
    if (e->heads.has_broad)
        st = vw_span_head_init(&e->heads.broad, lookup_tensor, e, "span_broad.", err);
    if (st == VW_OK) {
        int nc = opts ? opts->noul_calibration : -1;
        e->heads.noul_calibration = nc < 0 ? vw_cal_noul_default(e->cal) : nc != 0;
        set_model_name(e, dir);
        if (opts && opts->make_executor)
            st = opts->make_executor(e->bundle, opts->make_ctx, &e->ex, err);
        else
            st = vw_backbone_cpu_new(e->bundle, &e->ex, err);
    }
    if (st == VW_OK) {
        e->ex->cancelled = engine_cancelled;
        e->ex->cancel_ctx = e;
        e->heads.cal = e->cal;
        e->heads.hidden = e->ex->hidden;
    }
    if (st == VW_OK && e->ex->hidden != e->heads.cand.hidden)
        st = VW_FAIL(err, VW_EINVAL, "bad_shape",
                     "%s: head width %zu differs from the backbone's %zu", dir,
                     e->heads.cand.hidden, e->ex->hidden);
    if (st != VW_OK) {
        vw_engine_free(e);
        return st;
    }
    *out = e;
    return VW_OK;
}

static void row_pool_free(row_pool *rp) {
    if (!rp)
        return;
    for (size_t i = 0; i < rp->n; i++)
        free(rp->buf[i]);
    pthread_mutex_destroy(&rp->mu);
    free(rp);
}

/* A buffer of at least n floats (*cap: its size): a pooled one if one is large
 * enough, else a new one. */
static float *rows_get(row_pool *rp, size_t n, size_t *cap) {
    pthread_mutex_lock(&rp->mu);
    for (size_t i = 0; i < rp->n; i++)
        if (rp->cap[i] >= n) {
            float *p = rp->buf[i];
            *cap = rp->cap[i];
            rp->buf[i] = rp->buf[--rp->n];
            rp->cap[i] = rp->cap[rp->n];
            pthread_mutex_unlock(&rp->mu);
            return p;
        }
    pthread_mutex_unlock(&rp->mu);
    *cap = n;
    return malloc(n * sizeof(float));
}

/* Keeps p for a later batch (dropping the smallest kept one when full). */
static void rows_put(row_pool *rp, float *p, size_t cap) {
    if (!p)
        return;
    pthread_mutex_lock(&rp->mu);
    if (rp->n < ROW_POOL) {
        rp->buf[rp->n] = p;
        rp->cap[rp->n++] = cap;
        p = NULL;
    } else {
        size_t k = 0;
        for (size_t i = 1; i < rp->n; i++)
            k = rp->cap[i] < rp->cap[k] ? i : k;
        if (rp->cap[k] < cap) {
            float *old = rp->buf[k];
            rp->buf[k] = p;
            rp->cap[k] = cap;
            p = old;
        }
    }
    pthread_mutex_unlock(&rp->mu);
    free(p);
}

void vw_engine_free(vw_engine *e) {
    if (!e)
        return;
    row_pool_free(e->rows);
    vw_executor_free(e->ex);
    for (size_t i = 0; i < e->n_tensors; i++)
        vw_tensor_f32_free(&e->tensors[i]);
    free(e->tensors);
    vw_cal_free(e->cal);
    vw_renderer_free(e->rend);
    vw_admit_cfg_free(e->acfg);
    vw_tok_free(e->tok);
    vw_bundle_free(e->bundle);
    free(e);
}

const char *vw_engine_model(const vw_engine *e) {
    return e->model;
}

const char *vw_engine_device(const vw_engine *e) {
    return e->ex && e->ex->ops ? e->ex->ops->name : "none";
}

const vw_renderer *vw_engine_renderer(const vw_engine *e) {
    return e->rend;
}

vw_status vw_engine_plan(const vw_engine *e, const char *body, size_t len, vw_plan **plan,
                         int *status, vw_errlist *detail, vw_err *err) {
    return vw_plan_request(e->rend, body, len, plan, status, detail, err);
}

vw_status vw_engine_plan_doc(const vw_engine *e, size_t len, const vw_json_doc *doc, vw_plan **plan,
                             int *status, vw_errlist *detail, vw_err *err) {
    return vw_plan_request_doc(e->rend, len, doc, plan, status, detail, err);
}

/* ---- batches: pack, execute, finish ------------------------------------------- */

struct vw_engine_batch {
    row_pool *pool;  /* where rows go back */
    vw_plan **plans; /* [n] borrowed */
    size_t n;
    vw_plan_exec_out *x; /* [n] */
    size_t *base;        /* [n] first output row of each plan */
    size_t *tree0;       /* [n] first tree of each plan in trees */
    vw_tree *trees;
    size_t n_trees, n_rows;
    float *rows;
    size_t rows_cap; /* floats */
    vw_status *st;   /* [n] each plan's outcome so far */
    vw_err *errs;    /* [n] */
};

void vw_engine_batch_free(vw_engine_batch *b) {
    if (!b)
        return;
    for (size_t i = 0; b->x && i < b->n; i++)
        vw_plan_exec_free(&b->x[i]);
    free(b->plans);
    free(b->x);
    free(b->base);
    free(b->tree0);
    free(b->trees);
    rows_put(b->pool, b->rows, b->rows_cap);
    free(b->st);
    free(b->errs);
    free(b);
}

vw_status vw_engine_pack(const vw_engine *e, vw_plan *const *plans, size_t n, vw_engine_batch **out,
                         vw_err *err) {
    *out = NULL;
    vw_engine_batch *b = calloc(1, sizeof *b);
    size_t m = n ? n : 1;
    if (b) {
        b->pool = e->rows;
        b->n = n;
        b->plans = malloc(m * sizeof *b->plans);
        b->x = calloc(m, sizeof *b->x);
        b->base = calloc(m, sizeof *b->base);
        b->tree0 = calloc(m, sizeof *b->tree0);
        b->st = calloc(m, sizeof *b->st);
        b->errs = calloc(m, sizeof *b->errs);
    }
    if (!b || !b->plans || !b->x || !b->base || !b->tree0 || !b->st || !b->errs) {
        vw_engine_batch_free(b);
        return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch");
    }
    for (size_t i = 0; i < n; i++) {
        b->plans[i] = plans[i];
        b->st[i] = vw_plan_exec(plans[i], &b->x[i], &b->errs[i]);
        b->base[i] = b->n_rows;
        b->tree0[i] = b->n_trees;
        if (b->st[i] == VW_OK) {
            b->n_rows += b->x[i].n_rows;
            b->n_trees += b->x[i].n_trees;
        }
    }
    if (b->n_trees) {
        b->trees = malloc(b->n_trees * sizeof *b->trees);
        b->rows = rows_get(e->rows, (b->n_rows ? b->n_rows : 1) * e->ex->hidden, &b->rows_cap);
        if (!b->trees || !b->rows) {
            vw_engine_batch_free(b);
            return VW_FAIL(err, VW_ETRANSIENT, "out_of_memory", "batch rows");
        }
        for (size_t i = 0, k = 0; i < n; i++)
            for (size_t t = 0; b->st[i] == VW_OK && t < b->x[i].n_trees; t++)
                b->trees[k++] = b->x[i].trees[t];
    }
    *out = b;
    return VW_OK;
}

/* One executor call over trees[0..n); when the executor answers VW_ETRANSIENT
 * (the batch does not fit, e.g. a device arena) the trees run in two halves,
 * recursively, each writing its own contiguous rows. A single tree that still
 * does not fit returns VW_ETRANSIENT to the caller. */
static vw_status forward_split(vw_engine *e, const vw_tree *trees, size_t n, float *rows,
                               vw_err *err) {
    vw_status st = vw_executor_forward(e->ex, trees, n, rows, err);
    if (st != VW_ETRANSIENT || n < 2)
        return st;
    size_t half = n / 2;
    st = forward_split(e, trees, half, rows, err);
    if (st == VW_OK)
        st = forward_split(e, trees + half, n - half,
                           rows + vw_trees_readout_count(trees, half) * e->ex->hidden, err);
    return st;
}

vw_status vw_engine_execute(vw_engine *e, vw_engine_batch *b, vw_err *err) {
    if (!b->n_trees)
        return VW_OK;
    vw_status st = forward_split(e, b->trees, b->n_trees, b->rows, err);
    if (st == VW_OK || st == VW_ETRANSIENT)
        return st;
    /* A failure of the whole call: each plan alone, so one poison plan cannot
     * sink the rest. */
    for (size_t i = 0; i < b->n; i++)
        if (b->st[i] == VW_OK && b->x[i].n_trees)
            b->st[i] = forward_split(e, b->trees + b->tree0[i], b->x[i].n_trees,
                                     b->rows + b->base[i] * e->ex->hidden, &b->errs[i]);
    return VW_OK;
}

vw_status vw_engine_batch_status(const vw_engine_batch *b, size_t i, vw_err *err) {
    if (b->st[i] != VW_OK && err)
        *err = b->errs[i];
    return b->st[i];
}

/* This thread's CPU seconds when t wants them (a system call: skipped
 * otherwise, e.g. for vw_engine_score). */
static double thread_s(const vw_engine_times *t) {
    struct timespec ts;
    if (!t)
        return 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vw_engine_finish(const vw_engine *e, vw_engine_batch *b, vw_sbuf *out, vw_engine_times *t) {
    double t0 = thread_s(t);
    vw_readout_z **z = calloc(b->n ? b->n : 1, sizeof *z);
    if (!z) {
        for (size_t i = 0; i < b->n; i++)
            if (b->st[i] == VW_OK)
                b->st[i] = VW_FAIL(&b->errs[i], VW_ENOMEM, "out_of_memory", "head outputs");
        return;
    }
    vw_readout_heads_run(&e->heads, b->n, b->plans, b->x, b->rows, b->base, b->st, b->errs, z);
    double t1 = thread_s(t), t_env = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->st[i] != VW_OK)
            continue;
        const vw_plan *p = b->plans[i];
        size_t nq = p->req->n;
        vw_answer *answers = calloc(nq ? nq : 1, sizeof *answers);
        bool *answered = calloc(nq ? nq : 1, sizeof *answered);
        vw_status st =
            answers && answered
                ? vw_readout_answer(&e->heads, p, &b->x[i],
                                    b->rows ? b->rows + b->base[i] * e->ex->hidden : NULL, z[i],
                                    answers, answered, &b->errs[i])
                : VW_FAIL(&b->errs[i], VW_ENOMEM, "out_of_memory", "answers");
        double te = thread_s(t);
        if (st == VW_OK)
            st = vw_envelope_write(&out[i], p, answers, answered, e->heads.has_broad, &b->errs[i]);
        t_env += thread_s(t) - te;
        b->st[i] = st;
        for (size_t q = 0; answers && q < nq; q++)
            if (answered && answered[q])
                vw_answer_free(&answers[q]);
        free(answers);
        free(answered);
        vw_readout_z_free(z[i], nq);
        z[i] = NULL;
    }
    for (size_t i = 0; i < b->n; i++) /* plans that failed before their answers */
        vw_readout_z_free(z[i], b->plans[i]->req->n);
    free(z);
    if (t) {
        double t2 = thread_s(t);
        t->heads += t1 - t0;
        t->envelope += t_env;
        t->answers += t2 - t1 - t_env;
    }
}

vw_status vw_engine_score(vw_engine *e, vw_plan *const *plans, size_t n, vw_sbuf *out,
                          vw_err *err) {
    vw_engine_batch *b = NULL;
    vw_status st = vw_engine_pack(e, plans, n, &b, err);
    if (st == VW_OK)
        st = vw_engine_execute(e, b, err);
    if (st == VW_OK)
        vw_engine_finish(e, b, out, NULL);
    for (size_t i = 0; st == VW_OK && i < n; i++)
        st = vw_engine_batch_status(b, i, err);
    vw_engine_batch_free(b);
    return st;
}
