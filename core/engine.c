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
#include "model/bundle_sense.h"
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
    vw_readout_heads heads;  /* the heads (FP32 copies in tensors) and calibration */
    atomic_bool cancel;      /* vw_engine_cancel: the executor stops between trees */
    vw_head_tensors tensors; /* FP32 head weights the heads point into */
    char model[256];
};

/* ---- loading -------------------------------------------------------------- */

static bool engine_cancelled(void *ctx) {
    return atomic_load_explicit(&((vw_engine *)ctx)->cancel, memory_order_relaxed);
}

void vw_engine_cancel(vw_engine *e) {
    atomic_store(&e->cancel, true);
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

/* Every id the tokenizer can give must be a row of the embedding: an id past
 * vocab_size passed verify and failed requests later ("bad_tree"). */
static vw_status check_vocab(const vw_engine *e, vw_err *err) {
    int32_t ids = vw_tok_vocab_size(e->tok), rows = vw_bundle_backbone_config(e->bundle)->vocab;
    if (ids <= rows)
        return VW_OK;
    return VW_FAIL(err, VW_EINVAL, "bad_tokenizer",
                   "tokenizer.json holds id %d, past backbone_config.vocab_size %d (the "
                   "embedding's rows)",
                   (int)ids - 1, (int)rows);
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
        st = vw_tok_check_patterns(e->tok, err); /* a bundle's: vetted splits only */
    if (st == VW_OK)
        st = check_vocab(e, err);
    if (st == VW_OK)
        st = vw_bundle_sense_config(e->bundle, err);
    if (st == VW_OK)
        st = admit_cfg_of(e->bundle, &e->acfg, err);
    if (st == VW_OK && opts)
        vw_admit_cfg_set_max_tokens(e->acfg, opts->max_request_tokens);
    if (st == VW_OK)
        st = vw_renderer_new(e->acfg, vw_encoder_tok(e->tok), &e->rend, err);
    if (st == VW_OK)
        st = vw_cal_from_json(vw_bundle_calibration(e->bundle), &e->cal, err);
    vw_head_tensors_init(&e->tensors, e->bundle);
    if (st == VW_OK)
        st = vw_cand_head_init(&e->heads.cand, vw_head_tensors_lookup, &e->tensors,
                               VW_HEAD_CAND_PREFIX, err);
    if (st == VW_OK)
        st = vw_span_head_init(&e->heads.router, vw_head_tensors_lookup, &e->tensors,
                               VW_HEAD_ROUTER_PREFIX, err);
    /* Decision 3: a broad head needs the file and a non-empty calibration block. */
    e->heads.has_broad = st == VW_OK && e->acfg->broad && vw_bundle_has_broad_head(e->bundle);
    if (e->heads.has_broad)
        st = vw_span_head_init(&e->heads.broad, vw_head_tensors_lookup, &e->tensors,
                               VW_HEAD_BROAD_PREFIX, err);
    if (st == VW_OK) {
        int nc = opts ? opts->noul_calibration : -1;
        e->heads.noul_calibration = nc < 0 ? vw_cal_noul_default(e->cal) : nc != 0;
        set_model_name(e, dir);
        st = vw_bundle_sense_weights(
            e->bundle, opts && opts->scan_weights_full ? VW_SCAN_FULL : VW_SCAN_SAMPLE, err);
    }
    if (st == VW_OK) {
        if (opts && opts->make_executor)
            st = opts->make_executor(e->bundle, opts->make_ctx, &e->ex, err);
        else
            st = vw_backbone_cpu_new(e->bundle, &e->ex, err);
    }
    if (st == VW_OK) {
        vw_executor_set_cancel(e->ex, engine_cancelled, e);
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
    vw_head_tensors_free(&e->tensors);
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
    /* Heads on the executor (vw_executor_has_heads): no rows come back; the
     * heads' problems over the batch's rows, made once by the first forward's
     * caller, and each plan's outputs, which finish answers from. */
    bool device_heads, jobs_built;
    vw_head_jobs jobs;
    vw_readout_z **z; /* [n] */
};

void vw_engine_batch_free(vw_engine_batch *b) {
    if (!b)
        return;
    vw_head_jobs_free(&b->jobs);
    for (size_t i = 0; b->z && i < b->n; i++) /* outputs finish did not take */
        if (b->z[i])
            vw_readout_z_free(b->z[i], b->plans[i]->req->n);
    free(b->z);
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
        b->device_heads = vw_executor_has_heads(e->ex);
        b->z = b->device_heads ? calloc(m, sizeof *b->z) : NULL;
    }
    if (!b || !b->plans || !b->x || !b->base || !b->tree0 || !b->st || !b->errs ||
        (b->device_heads && !b->z)) {
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
        if (!b->device_heads) /* rows come back only for the host heads */
            b->rows = rows_get(e->rows, (b->n_rows ? b->n_rows : 1) * e->ex->hidden, &b->rows_cap);
        if (!b->trees || (!b->device_heads && !b->rows)) {
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

/* The device heads' problems of every plan still OK (vw_readout_heads_jobs). */
static void build_jobs(const vw_engine *e, vw_engine_batch *b) {
    vw_readout_heads_jobs(&e->heads, b->n, b->plans, b->x, b->base, b->st, b->errs, b->z, &b->jobs);
    b->jobs_built = true;
}

/* The heads over the batch rows [r0, r1) a forward just left on the
 * executor: the batch's problems in that range (all of them when the forward
 * covered the batch). The problems are made after the first forward returns:
 * a device forward returns while it runs, so that host work overlaps it. */
static vw_status device_heads(vw_engine *e, vw_engine_batch *b, size_t r0, size_t r1, vw_err *err) {
    if (!b->jobs_built)
        build_jobs(e, b);
    vw_head_jobs part = {0};
    vw_status st = VW_OK;
    bool all = r0 == 0 && r1 == b->n_rows;
    if (!all)
        st = vw_head_jobs_slice(&b->jobs, (int32_t)r0, (int32_t)r1, &part, err);
    vw_head_job job = vw_head_jobs_view(all ? &b->jobs : &part);
    if (st == VW_OK)
        st = vw_executor_heads(e->ex, &job, err);
    vw_head_jobs_free(&part);
    return st;
}

/* One executor call over trees[t0, t0 + n), whose rows start at batch row r0
 * (then the device heads over them, when the executor runs the heads); when
 * the executor answers VW_ETRANSIENT (the batch does not fit, e.g. a device
 * arena) the trees run in two halves, recursively, each writing its own
 * contiguous rows. A single tree that still does not fit returns
 * VW_ETRANSIENT to the caller. */
static vw_status forward_split(vw_engine *e, vw_engine_batch *b, size_t t0, size_t n, size_t r0,
                               vw_err *err) {
    const vw_tree *trees = b->trees + t0;
    float *rows = b->device_heads ? NULL : b->rows + r0 * e->ex->hidden;
    vw_status st = vw_executor_forward(e->ex, trees, n, rows, err);
    if (st == VW_OK && b->device_heads)
        st = device_heads(e, b, r0, r0 + vw_trees_readout_count(trees, n), err);
    /* Transient: the batch may be too large for the device, so halves are
     * tried; a cancelled call is not retried in parts. */
    if (st != VW_ETRANSIENT || n < 2 || engine_cancelled(e))
        return st;
    size_t half = n / 2;
    st = forward_split(e, b, t0, half, r0, err);
    if (st == VW_OK)
        st =
            forward_split(e, b, t0 + half, n - half, r0 + vw_trees_readout_count(trees, half), err);
    return st;
}

vw_status vw_engine_execute(vw_engine *e, vw_engine_batch *b, vw_err *err) {
    if (!b->n_trees)
        return VW_OK;
    vw_status st = forward_split(e, b, 0, b->n_trees, 0, err);
    if (st == VW_OK || st == VW_ETRANSIENT)
        return st;
    /* A failure of the whole call: each plan alone, so one poison plan cannot
     * sink the rest. */
    for (size_t i = 0; i < b->n; i++)
        if (b->st[i] == VW_OK && b->x[i].n_trees)
            b->st[i] = forward_split(e, b, b->tree0[i], b->x[i].n_trees, b->base[i], &b->errs[i]);
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
    if (b->device_heads && !b->jobs_built) /* nothing executed: the plans' checks */
        build_jobs(e, b);
    if (b->device_heads) /* the executor ran them (vw_engine_execute) */
        for (size_t i = 0; i < b->n; i++)
            z[i] = b->z[i], b->z[i] = NULL;
    else
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
