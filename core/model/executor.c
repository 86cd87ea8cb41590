/* executor.c — backend-independent helpers of the executor seam (see executor.h). */
#include "executor.h"

#include "head_weights.h"

size_t vw_trees_readout_count(const vw_tree *trees, size_t n_trees) {
    size_t n = 0;
    for (size_t t = 0; t < n_trees; t++) {
        n += trees[t].n_prefix_readouts;
        for (size_t b = 0; b < trees[t].n_blocks; b++)
            n += trees[t].blocks[b].n_readouts;
    }
    return n;
}

size_t vw_tree_tokens(const vw_tree *t) {
    size_t n = t->n_prefix;
    for (size_t b = 0; b < t->n_blocks; b++)
        n += t->blocks[b].n_ids;
    return n;
}

static vw_status check_ids(const int32_t *ids, size_t n, int32_t vocab, size_t t, long b,
                           vw_err *err) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return VW_FAIL(err, VW_EINVAL, "bad_tree",
                           "tree %zu %s%ld: token %zu has id %d outside the vocabulary [0, %d)", t,
                           b < 0 ? "prefix" : "block ", b < 0 ? 0L : b, i, (int)ids[i], (int)vocab);
    return VW_OK;
}

static vw_status check_readouts(const int32_t *r, size_t n, size_t len, size_t t, long b,
                                vw_err *err) {
    for (size_t i = 0; i < n; i++)
        if (r[i] < 0 || (size_t)r[i] >= len)
            return VW_FAIL(err, VW_EINVAL, "bad_tree",
                           "tree %zu %s%ld: readout %zu = %d outside [0, %zu)", t,
                           b < 0 ? "prefix" : "block ", b < 0 ? 0L : b, i, (int)r[i], len);
    return VW_OK;
}

vw_status vw_trees_validate(const vw_tree *trees, size_t n_trees, int32_t vocab, vw_err *err) {
    vw_status st = VW_OK;
    for (size_t t = 0; t < n_trees && st == VW_OK; t++) {
        const vw_tree *tr = &trees[t];
        if (tr->n_prefix == 0)
            return VW_FAIL(err, VW_EINVAL, "bad_tree", "tree %zu has an empty prefix", t);
        st = check_ids(tr->prefix, tr->n_prefix, vocab, t, -1, err);
        if (st == VW_OK)
            st = check_readouts(tr->prefix_readouts, tr->n_prefix_readouts, tr->n_prefix, t, -1,
                                err);
        for (size_t b = 0; b < tr->n_blocks && st == VW_OK; b++) {
            const vw_block *bl = &tr->blocks[b];
            if (bl->n_ids == 0)
                return VW_FAIL(err, VW_EINVAL, "bad_tree", "tree %zu block %zu is empty", t, b);
            st = check_ids(bl->ids, bl->n_ids, vocab, t, (long)b, err);
            if (st == VW_OK)
                st = check_readouts(bl->readouts, bl->n_readouts, bl->n_ids, t, (long)b, err);
        }
    }
    return st;
}

vw_status vw_executor_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                              vw_err *err) {
    if (!ex || !ex->ops || !ex->ops->forward)
        return VW_FAIL(err, VW_EINVAL, "no_executor", "executor is not initialised");
    vw_status st = vw_trees_validate(trees, n_trees, ex->vocab, err);
    if (st != VW_OK)
        return st;
    if (!n_trees)
        return VW_FAIL(err, VW_EINVAL, "bad_tree", "empty batch of trees");
    if (!rows && !ex->ops->heads)
        return VW_FAIL(err, VW_EINVAL, "bad_argument",
                       "executor %s returns rows: a forward needs a buffer", ex->ops->name);
    ex->rows_left = 0;
    if (vw_executor_cancelled(ex, err)) /* every backend: nothing starts once cancelled */
        return VW_ETRANSIENT;
    st = ex->ops->forward(ex, trees, n_trees, rows, err);
    if (st == VW_OK)
        ex->rows_left = vw_trees_readout_count(trees, n_trees);
    return st;
}

void vw_executor_free(vw_executor *ex) {
    if (ex && ex->ops && ex->ops->destroy)
        ex->ops->destroy(ex);
}

void vw_executor_set_cancel(vw_executor *ex, bool (*cancelled)(void *ctx), void *ctx) {
    ex->cancelled = cancelled;
    ex->cancel_ctx = ctx;
}

bool vw_executor_cancelled(const vw_executor *ex, vw_err *err) {
    if (!ex->cancelled || !ex->cancelled(ex->cancel_ctx))
        return false;
    VW_FAIL(err, VW_ETRANSIENT, "cancelled", "the forward was cancelled (shutting down)");
    return true;
}

bool vw_executor_has_heads(const vw_executor *ex) {
    return ex && ex->ops && ex->ops->heads;
}

/* Whether [a, a + n) lies inside [0, rows). */
static bool rows_in(int64_t a, int64_t n, size_t rows) {
    return a >= 0 && n >= 0 && a + n <= (int64_t)rows;
}

vw_status vw_head_job_validate(const vw_head_job *job, size_t n_rows, vw_err *err) {
    for (size_t k = 0; k < job->n_cand; k++) {
        const vw_head_cand_job *c = &job->cand[k];
        if (c->m < 1 || !rows_in(c->row, c->m, n_rows) || !rows_in(c->query, 1, n_rows) ||
            !c->logits)
            return VW_FAIL(err, VW_EINVAL, "bad_head_job",
                           "candidate problem %zu: rows [%d, +%d), query %d outside the %zu "
                           "readouts (or no output)",
                           k, (int)c->row, (int)c->m, (int)c->query, n_rows);
    }
    for (size_t k = 0; k < job->n_span; k++) {
        const vw_head_span_job *s = &job->span[k];
        if (s->head != VW_SPAN_HEAD_ROUTER && s->head != VW_SPAN_HEAD_BROAD)
            return VW_FAIL(err, VW_EINVAL, "bad_head_job", "span problem %zu: head %d", k,
                           (int)s->head);
        if (s->n_labels < 1 || !rows_in(s->words, s->n_words, n_rows) || (s->n_words && !s->z) ||
            !s->starts || !s->ends)
            return VW_FAIL(err, VW_EINVAL, "bad_head_job",
                           "span problem %zu: words [%d, +%d) of %zu readouts, %d labels", k,
                           (int)s->words, (int)s->n_words, n_rows, (int)s->n_labels);
        for (int32_t l = 0; l < s->n_labels; l++)
            if (s->starts[l] > s->ends[l] ||
                !rows_in(s->starts[l], (int64_t)s->ends[l] - s->starts[l] + 1, n_rows))
                return VW_FAIL(err, VW_EINVAL, "bad_head_job",
                               "span problem %zu: label %d rows [%d, %d] outside the %zu readouts",
                               k, (int)l, (int)s->starts[l], (int)s->ends[l], n_rows);
    }
    return VW_OK;
}

vw_status vw_executor_heads(vw_executor *ex, const vw_head_job *job, vw_err *err) {
    if (!vw_executor_has_heads(ex))
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_heads", "executor %s does not run the heads",
                       ex && ex->ops ? ex->ops->name : "(none)");
    vw_status st = vw_head_job_validate(job, ex->rows_left, err);
    if (st != VW_OK || (!job->n_cand && !job->n_span))
        return st;
    if (vw_executor_cancelled(ex, err))
        return VW_ETRANSIENT;
    return ex->ops->heads(ex, job, err);
}
