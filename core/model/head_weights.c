/* head_weights.c — the heads' tensors by name and shape, and the bundle adapter
 * (see head_weights.h). Reads weights through a lookup; never computes a head. */
#include "head_weights.h"
#include "util/reserve.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tensor lookup ---------------------------------------------------------- */

/* Fetches prefix+name and checks its shape against want[0..ndim) (-1 = any, then
 * reported back through want). */
static vw_status fetch(vw_tensor_lookup lookup, void *ctx, const char *prefix, const char *name,
                       size_t ndim, int64_t *want, const float **data, vw_err *err) {
    char full[160];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    vw_tensor_view v;
    memset(&v, 0, sizeof v);
    vw_status st = lookup(ctx, full, &v, err);
    if (st != VW_OK)
        return st;
    bool ok = v.ndim == ndim && v.data != NULL;
    for (size_t i = 0; ok && i < ndim; i++) {
        if (want[i] < 0)
            want[i] = v.shape[i];
        ok = v.shape[i] == want[i] && v.shape[i] > 0;
    }
    if (!ok)
        return VW_FAIL(err, VW_EINVAL, "bad_head_tensor",
                       "%s: rank %zu shape [%lld, %lld] does not match the expected rank %zu "
                       "[%lld, %lld]",
                       full, v.ndim, (long long)(v.ndim > 0 ? v.shape[0] : 0),
                       (long long)(v.ndim > 1 ? v.shape[1] : 0), ndim,
                       (long long)(ndim > 0 ? want[0] : 0), (long long)(ndim > 1 ? want[1] : 0));
    *data = v.data;
    return VW_OK;
}

/* `set_bias` is 0-d in the reference fixture; a [1] tensor broadcasts the same (§1.1). */
static vw_status fetch_scalar(vw_tensor_lookup lookup, void *ctx, const char *name, float *out,
                              vw_err *err) {
    vw_tensor_view v;
    memset(&v, 0, sizeof v);
    vw_status st = lookup(ctx, name, &v, err);
    if (st != VW_OK)
        return st;
    if (!v.data || !(v.ndim == 0 || (v.ndim == 1 && v.shape[0] == 1)))
        return VW_FAIL(err, VW_EINVAL, "bad_head_tensor",
                       "%s: expected a scalar or [1], got rank %zu", name, v.ndim);
    *out = v.data[0];
    return VW_OK;
}

vw_status vw_cand_head_init(vw_cand_head *h, vw_tensor_lookup lookup, void *ctx, const char *prefix,
                            vw_err *err) {
    memset(h, 0, sizeof *h);
    int64_t H[1] = {-1}, dh[2] = {-1, -1};
    vw_status st;
    if ((st = fetch(lookup, ctx, prefix, "candidate_norm.weight", 1, H, &h->cand_ln_w, err)))
        return st;
    dh[1] = H[0];
    int64_t vec_h[1] = {H[0]};
    if ((st = fetch(lookup, ctx, prefix, "key.weight", 2, dh, &h->key, err)))
        return st;
    int64_t vec_d[1] = {dh[0]}, row_d[2] = {1, dh[0]};
    if ((st = fetch(lookup, ctx, prefix, "candidate_norm.bias", 1, vec_h, &h->cand_ln_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "query_norm.weight", 1, vec_h, &h->query_ln_w, err)) ||
        (st = fetch(lookup, ctx, prefix, "query_norm.bias", 1, vec_h, &h->query_ln_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "query.weight", 2, dh, &h->query, err)) ||
        (st = fetch(lookup, ctx, prefix, "candidate_mlp.weight", 2, dh, &h->cmlp_w, err)) ||
        (st = fetch(lookup, ctx, prefix, "candidate_mlp.bias", 1, vec_d, &h->cmlp_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "query_mlp.weight", 2, dh, &h->qmlp_w, err)) ||
        (st = fetch(lookup, ctx, prefix, "scalar.weight", 2, row_d, &h->scalar, err)) ||
        (st = fetch_scalar(lookup, ctx, "set_bias", &h->set_bias, err)))
        return st;
    h->hidden = (size_t)H[0];
    h->d = (size_t)dh[0];
    return VW_OK;
}

vw_status vw_span_head_init(vw_span_head *h, vw_tensor_lookup lookup, void *ctx, const char *prefix,
                            vw_err *err) {
    memset(h, 0, sizeof *h);
    int64_t H[1] = {-1}, dh[2] = {-1, -1}, sh[2] = {-1, -1};
    vw_status st;
    if ((st = fetch(lookup, ctx, prefix, "wn.weight", 1, H, &h->wn_w, err)))
        return st;
    dh[1] = sh[1] = H[0];
    if ((st = fetch(lookup, ctx, prefix, "K.weight", 2, dh, &h->k, err)) ||
        (st = fetch(lookup, ctx, prefix, "slot.weight", 2, sh, &h->slot, err)))
        return st;
    int64_t vec_h[1] = {H[0]}, vec_d[1] = {dh[0]}, row_d[2] = {1, dh[0]};
    if ((st = fetch(lookup, ctx, prefix, "wn.bias", 1, vec_h, &h->wn_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "ln.weight", 1, vec_h, &h->ln_w, err)) ||
        (st = fetch(lookup, ctx, prefix, "ln.bias", 1, vec_h, &h->ln_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "Q.weight", 2, dh, &h->q, err)) ||
        (st = fetch(lookup, ctx, prefix, "N.weight", 2, dh, &h->n, err)) ||
        (st = fetch(lookup, ctx, prefix, "M.weight", 2, dh, &h->m_w, err)) ||
        (st = fetch(lookup, ctx, prefix, "M.bias", 1, vec_d, &h->m_b, err)) ||
        (st = fetch(lookup, ctx, prefix, "v.weight", 2, row_d, &h->v, err)))
        return st;
    h->hidden = (size_t)H[0];
    h->d = (size_t)dh[0];
    h->slots = (size_t)sh[0];
    return VW_OK;
}

float vw_head_scale(size_t d) {
    return (float)(1.0 / sqrt((double)d));
}

/* ---- the bundle adapter ------------------------------------------------------ */

vw_status vw_head_tensors_lookup(void *ctx, const char *name, vw_tensor_view *out, vw_err *err) {
    vw_head_tensors *ht = ctx;
    if (vw_reserve((void **)&ht->t, &ht->cap, ht->n + 1, sizeof *ht->t))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "head tensor table");
    vw_tensor_f32 *t = &ht->t[ht->n];
    vw_status st = vw_bundle_tensor_f32(ht->bundle, name, t, err);
    if (st != VW_OK)
        return st;
    ht->n++;
    memset(out, 0, sizeof *out);
    out->data = t->data;
    out->ndim = (size_t)t->ndim;
    for (int i = 0; i < t->ndim && i < 4; i++)
        out->shape[i] = t->shape[i];
    return VW_OK;
}

void vw_head_tensors_init(vw_head_tensors *ht, const vw_bundle *b) {
    *ht = (vw_head_tensors){.bundle = b};
}

void vw_head_tensors_free(vw_head_tensors *ht) {
    if (!ht)
        return;
    for (size_t i = 0; i < ht->n; i++)
        vw_tensor_f32_free(&ht->t[i]);
    free(ht->t);
    ht->t = NULL;
    ht->n = ht->cap = 0;
}
