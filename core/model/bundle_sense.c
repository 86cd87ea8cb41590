/* bundle_sense.c — the sense checks of a verified bundle (see bundle_sense.h).
 * Reads config.json and the mapped weights; owns nothing past a call. */
#include "bundle_sense.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { DIM_HI = 1 << 16, BLOCK = 2048, EVERY = 64 };

/* An optional integer key in [lo, hi]; *out keeps -1 when absent. */
static vw_status opt_int(const json_t *obj, const char *path, const char *key, int64_t lo,
                         int64_t hi, const char *hi_name, int64_t *out, vw_err *err) {
    const json_t *v = json_object_get(obj, key);
    *out = -1;
    if (!v)
        return VW_OK;
    if (!json_is_integer(v))
        return VW_FAIL(err, VW_EINVAL, "bad_config", "config.json %s must be an integer", path);
    json_int_t x = json_integer_value(v);
    if (x < lo)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "config.json %s is %" PRId64 ", below %" PRId64, path, (int64_t)x, lo);
    if (x > hi)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "config.json %s is %" PRId64 ", exceeds %s (%" PRId64 ")", path, (int64_t)x,
                       hi_name, hi);
    *out = (int64_t)x;
    return VW_OK;
}

/* A config key that describes a tensor's rows must agree with it. */
static vw_status agrees(const vw_bundle *b, const char *path, int64_t v, const char *tensor,
                        vw_err *err) {
    const vw_st_tensor *t = vw_bundle_find(b, tensor);
    if (v < 0 || !t || t->ndim < 1 || t->shape[0] == v)
        return VW_OK;
    return VW_FAIL(err, VW_EINVAL, "bad_config",
                   "config.json %s is %" PRId64 " but %s has %" PRId64 " rows", path, v, tensor,
                   t->shape[0]);
}

vw_status vw_bundle_sense_config(const vw_bundle *b, vw_err *err) {
    const json_t *cfg = vw_bundle_config(b);
    const json_t *sh = json_object_get(cfg, "span_head");
    int64_t fv, hd, d, slots, pad;
    vw_status st = opt_int(cfg, "format_version", "format_version", 1, 1, "1", &fv, err);
    if (!st)
        st = opt_int(cfg, "head_dim", "head_dim", 1, DIM_HI, "2^16", &hd, err);
    if (!st)
        st = agrees(b, "head_dim", hd, "head.key.weight", err);
    if (!st && sh && !json_is_object(sh))
        st = VW_FAIL(err, VW_EINVAL, "bad_config", "config.json span_head must be an object");
    if (!st)
        st = opt_int(sh, "span_head.d", "d", 1, DIM_HI, "2^16", &d, err);
    if (!st)
        st = agrees(b, "span_head.d", d, "span2.K.weight", err);
    if (!st)
        st = opt_int(sh, "span_head.slots", "slots", 1, DIM_HI, "2^16", &slots, err);
    if (!st)
        st = agrees(b, "span_head.slots", slots, "span2.slot.weight", err);
    int64_t vocab = vw_bundle_backbone_config(b)->vocab;
    if (!st)
        st = opt_int(cfg, "pad_token_id", "pad_token_id", 0, vocab - 1,
                     "the backbone's vocab_size - 1", &pad, err);
    return st;
}

/* ---- weights ----------------------------------------------------------------- */

/* Per dtype: element width, the exponent mask (all ones: Inf or NaN) and the
 * bit pattern of VW_WEIGHT_MAX_ABS (magnitudes order like their bits). */
typedef struct layout {
    size_t size;
    uint32_t exp_mask, abs_mask, max_bits;
} layout;

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static int layout_of(vw_dtype dt, layout *l) {
    uint32_t f = f32_bits((float)VW_WEIGHT_MAX_ABS);
    switch (dt) {
    case VW_DT_F32:
        *l = (layout){4, 0x7F800000u, 0x7FFFFFFFu, f};
        return 1;
    case VW_DT_BF16:
        *l = (layout){2, 0x7F80u, 0x7FFFu, f >> 16}; /* 1e4 is exact in BF16's top bits */
        return 1;
    case VW_DT_F16:
        *l = (layout){2, 0x7C00u, 0x7FFFu, 0x70E2u}; /* 10000 in F16 */
        return 1;
    default:
        return 0;
    }
}

static uint32_t bits_at(const unsigned char *p, size_t size) {
    if (size == 2)
        return (uint32_t)p[0] | (uint32_t)p[1] << 8;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float value_of(uint32_t bits, vw_dtype dt) {
    if (dt == VW_DT_BF16)
        return vw_bf16_to_f32((uint16_t)bits);
    if (dt == VW_DT_F16)
        return vw_f16_to_f32((uint16_t)bits);
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

/* The first element in [from, to) that is not finite or too large, or to. */
static size_t first_bad(const unsigned char *data, const layout *l, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) {
        uint32_t u = bits_at(data + i * l->size, l->size);
        if ((u & l->exp_mask) == l->exp_mask || (u & l->abs_mask) > l->max_bits)
            return i;
    }
    return to;
}

vw_status vw_bundle_sense_weights(const vw_bundle *b, vw_scan how, vw_err *err) {
    for (size_t i = 0; i < vw_bundle_tensor_count(b); i++) {
        const char *file = NULL;
        const vw_st_tensor *t = vw_bundle_tensor_at(b, i, &file);
        layout l;
        if (!t || !layout_of(t->dtype, &l))
            continue;
        const unsigned char *data = t->data;
        for (size_t at = 0; at < t->numel; at += how == VW_SCAN_FULL ? BLOCK : BLOCK * EVERY) {
            size_t end = at + BLOCK < t->numel ? at + BLOCK : t->numel;
            size_t bad = first_bad(data, &l, at, end);
            if (bad == end)
                continue;
            float x = value_of(bits_at(data + bad * l.size, l.size), t->dtype);
            const char *slash = strrchr(file, '/');
            return VW_FAIL(err, VW_EINVAL, "bad_weights",
                           "tensor '%s' (%s) holds %g at element %zu: %s", t->name,
                           slash ? slash + 1 : file, (double)x, bad,
                           isfinite(x) ? "no trained model has |w| > 10000 (VW_WEIGHT_MAX_ABS)"
                                       : "weights must be finite");
        }
    }
    return VW_OK;
}
