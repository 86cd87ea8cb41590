/* qwen35_config.c — backbone_config parsing and the tensor inventory
 * (see qwen35_config.h). Reads JSON only; never touches weights. */
#include "qwen35_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Dimension sanity bound: keeps every product of two dims far from overflow. */
#define DIM_MAX (1 << 20)

/* "2^20" for the bounds below (messages say what was exceeded). */
static const char *pow2_name(int64_t hi, char buf[24]) {
    int k = 0;
    while (k < 62 && ((int64_t)1 << k) < hi)
        k++;
    if (((int64_t)1 << k) == hi)
        snprintf(buf, 24, "2^%d", k);
    else
        snprintf(buf, 24, "%lld", (long long)hi);
    return buf;
}

static vw_status get_int(const json_t *o, const char *key, int has_default, int32_t dflt,
                         int32_t lo, int64_t hi, int32_t *out, vw_err *err) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (!has_default)
            return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s is missing", key);
        *out = dflt;
        return VW_OK;
    }
    if (!json_is_integer(v))
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s must be an integer", key);
    json_int_t x = json_integer_value(v);
    char name[24];
    if (x < lo)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s is %lld, below %d", key,
                       (long long)x, (int)lo);
    if (x > hi)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "backbone_config.%s is %lld, exceeds %s (%lld)", key, (long long)x,
                       pow2_name(hi, name), (long long)hi);
    *out = (int32_t)x;
    return VW_OK;
}

static vw_status get_num(const json_t *o, const char *key, double dflt, double hi, double *out,
                         vw_err *err) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (isnan(dflt))
            return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s is missing", key);
        *out = dflt;
        return VW_OK;
    }
    if (!json_is_number(v) || !(json_number_value(v) > 0))
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s must be a positive number",
                       key);
    *out = json_number_value(v);
    if (*out > hi)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s is %g, exceeds %g", key,
                       *out, hi);
    return VW_OK;
}

/* Rejects keys whose value would change the math this build implements. */
static vw_status check_flags(const json_t *bc, vw_err *err) {
    const json_t *act = json_object_get(bc, "hidden_act");
    if (act && !(json_is_string(act) && !strcmp(json_string_value(act), "silu")))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_config",
                       "backbone_config.hidden_act must be \"silu\"");
    if (json_is_true(json_object_get(bc, "attention_bias")))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_config",
                       "backbone_config.attention_bias = true is not supported");
    if (json_is_false(json_object_get(bc, "attn_output_gate")))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_config",
                       "backbone_config.attn_output_gate = false is not supported");
    return VW_OK;
}

/* rope_parameters (transformers 5) or the legacy top-level keys. */
static vw_status parse_rope(const json_t *bc, vw_qwen35_config *c, vw_err *err) {
    const json_t *rp = json_object_get(bc, "rope_parameters");
    const json_t *src = json_is_object(rp) ? rp : bc;
    const json_t *scaling = json_object_get(bc, "rope_scaling");
    const json_t *type = json_object_get(src, "rope_type");
    if (!type && json_is_object(scaling))
        type = json_object_get(scaling, "rope_type") ? json_object_get(scaling, "rope_type")
                                                     : json_object_get(scaling, "type");
    if (type && !(json_is_string(type) && !strcmp(json_string_value(type), "default")))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_config",
                       "rope_type %s is not supported (only \"default\", docs/spec/backbone.md "
                       "§1.3)",
                       json_is_string(type) ? json_string_value(type) : "(not a string)");
    double factor = 0.25;
    vw_status st = get_num(src, "rope_theta", NAN, 1e12, &c->rope_theta, err);
    if (st == VW_OK)
        st = get_num(src, "partial_rotary_factor", 0.25, 1.0, &factor, err);
    if (st != VW_OK)
        return st;
    c->rotary_dim = (int32_t)(c->head_dim * factor);
    if (c->rotary_dim < 2 || c->rotary_dim % 2 || c->rotary_dim > c->head_dim ||
        c->rotary_dim > VW_QWEN35_MAX_ROTARY)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "rotary dims %d (head_dim %d x partial_rotary_factor %g) must be even and "
                       "in [2, min(head_dim, 1024)]",
                       (int)c->rotary_dim, (int)c->head_dim, factor);
    return VW_OK;
}

static vw_status parse_layers(const json_t *bc, vw_qwen35_config *c, vw_err *err) {
    const json_t *lt = json_object_get(bc, "layer_types");
    if (json_is_array(lt)) {
        if ((int32_t)json_array_size(lt) != c->n_layers)
            return VW_FAIL(err, VW_EINVAL, "bad_config",
                           "backbone_config.layer_types has %zu entries for %d layers",
                           json_array_size(lt), (int)c->n_layers);
        for (int32_t i = 0; i < c->n_layers; i++) {
            const char *s = json_string_value(json_array_get(lt, (size_t)i));
            if (s && !strcmp(s, "full_attention"))
                c->full_attention[i] = 1;
            else if (s && !strcmp(s, "linear_attention"))
                c->full_attention[i] = 0;
            else
                return VW_FAIL(err, VW_EINVAL, "bad_config",
                               "backbone_config.layer_types[%d] is not full_attention or "
                               "linear_attention",
                               (int)i);
        }
        return VW_OK;
    }
    int32_t every = 4;
    vw_status st =
        get_int(bc, "full_attention_interval", 1, 4, 1, VW_QWEN35_MAX_LAYERS, &every, err);
    for (int32_t i = 0; st == VW_OK && i < c->n_layers; i++)
        c->full_attention[i] = (i + 1) % every == 0;
    return st;
}

vw_status vw_qwen35_config_parse(const json_t *bc, vw_qwen35_config *c, vw_err *err) {
    memset(c, 0, sizeof *c);
    if (!json_is_object(bc))
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "config.json backbone_config is not an object");
    vw_status st = check_flags(bc, err);
    struct {
        const char *key;
        int has_default;
        int32_t dflt;
        int32_t *dst;
        int64_t hi;
    } ints[] = {
        {"hidden_size", 0, 0, &c->hidden, DIM_MAX},
        {"num_hidden_layers", 0, 0, &c->n_layers, VW_QWEN35_MAX_LAYERS},
        {"intermediate_size", 0, 0, &c->intermediate, DIM_MAX},
        {"vocab_size", 0, 0, &c->vocab, 64 * DIM_MAX},
        {"num_attention_heads", 0, 0, &c->n_heads, DIM_MAX},
        {"num_key_value_heads", 0, 0, &c->n_kv_heads, DIM_MAX},
        {"linear_num_key_heads", 1, 16, &c->lin_k_heads, DIM_MAX},
        {"linear_num_value_heads", 1, 32, &c->lin_v_heads, DIM_MAX},
        {"linear_key_head_dim", 1, 128, &c->lin_k_dim, DIM_MAX},
        {"linear_value_head_dim", 1, 128, &c->lin_v_dim, DIM_MAX},
        {"linear_conv_kernel_dim", 1, 4, &c->conv_kernel, 1024},
    };
    for (size_t i = 0; st == VW_OK && i < sizeof ints / sizeof ints[0]; i++)
        st = get_int(bc, ints[i].key, ints[i].has_default, ints[i].dflt, 1, ints[i].hi, ints[i].dst,
                     err);
    if (st != VW_OK)
        return st;
    st = get_int(bc, "head_dim", 1, c->hidden / c->n_heads, 1, DIM_MAX, &c->head_dim, err);
    double eps = 1e-6;
    if (st == VW_OK)
        st = get_num(bc, "rms_norm_eps", 1e-6, 0.1, &eps, err);
    if (st == VW_OK)
        st = parse_rope(bc, c, err);
    if (st == VW_OK)
        st = parse_layers(bc, c, err);
    if (st != VW_OK)
        return st;
    c->rms_eps = (float)eps;
    if (c->n_heads % c->n_kv_heads || c->lin_v_heads % c->lin_k_heads)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "head counts must group evenly (attention %d/%d, GDN v/k %d/%d)",
                       (int)c->n_heads, (int)c->n_kv_heads, (int)c->lin_v_heads,
                       (int)c->lin_k_heads);
    if ((int64_t)c->n_heads * c->head_dim * 2 > DIM_MAX)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "backbone_config: num_attention_heads %d x head_dim %d x 2 exceeds 2^20",
                       (int)c->n_heads, (int)c->head_dim);
    int64_t conv =
        2 * (int64_t)c->lin_k_heads * c->lin_k_dim + (int64_t)c->lin_v_heads * c->lin_v_dim;
    if (conv > DIM_MAX)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "backbone_config: the DeltaNet conv width %lld (2 x linear_num_key_heads x "
                       "linear_key_head_dim + linear_num_value_heads x linear_value_head_dim) "
                       "exceeds 2^20",
                       (long long)conv);
    return VW_OK;
}

void vw_qwen35_dims_of(const vw_qwen35_config *c, vw_qwen35_dims *d) {
    *d = (vw_qwen35_dims){0};
    d->H = (size_t)c->hidden, d->F = (size_t)c->intermediate;
    d->hd = (size_t)c->head_dim, d->Hq = (size_t)c->n_heads, d->Hk = (size_t)c->n_kv_heads;
    d->rot = (size_t)c->rotary_dim;
    d->Hv = (size_t)c->lin_v_heads, d->Hkl = (size_t)c->lin_k_heads;
    d->dk = (size_t)c->lin_k_dim, d->dv = (size_t)c->lin_v_dim, d->K = (size_t)c->conv_kernel;
    d->kd = d->Hkl * d->dk, d->vd = d->Hv * d->dv, d->cd = 2 * d->kd + d->vd;
    d->gdn_in = d->cd + d->vd + 2 * d->Hv;
    d->attn_q2 = d->Hq * 2 * d->hd, d->attn_kv = d->Hk * d->hd;
    d->attn_in = d->attn_q2 + 2 * d->attn_kv;
    for (int32_t l = 0; l < c->n_layers; l++)
        c->full_attention[l] ? d->n_attn++ : d->n_gdn++;
}

size_t vw_qwen35_layer_tensors(const vw_qwen35_config *c, int full,
                               vw_qwen35_tensor out[VW_QWEN35_LAYER_TENSORS_MAX]) {
    vw_qwen35_dims d;
    vw_qwen35_dims_of(c, &d);
    const int64_t H = (int64_t)d.H, F = (int64_t)d.F, hd = (int64_t)d.hd;
    const int64_t Hv = (int64_t)d.Hv, cd = (int64_t)d.cd, vd = (int64_t)d.vd;
    size_t n = 0;
#define T(nm, nd, a, b, c3, tg, r, mat, x)                                                         \
    out[n++] = (vw_qwen35_tensor){nm, nd, {a, b, c3}, VW_QWEN35_##tg, r, mat, VW_QWEN35_##x}
    T("input_layernorm.weight", 1, H, 0, 0, IN_NORM, 0, false, ONE_PLUS);
    T("post_attention_layernorm.weight", 1, H, 0, 0, POST_NORM, 0, false, ONE_PLUS);
    if (full) {
        T("self_attn.q_proj.weight", 2, (int64_t)d.attn_q2, H, 0, ATTN_IN, 0, true, AS_IS);
        T("self_attn.k_proj.weight", 2, (int64_t)d.attn_kv, H, 0, ATTN_IN, d.attn_q2, true, AS_IS);
        T("self_attn.v_proj.weight", 2, (int64_t)d.attn_kv, H, 0, ATTN_IN, d.attn_q2 + d.attn_kv,
          true, AS_IS);
        T("self_attn.o_proj.weight", 2, H, (int64_t)(d.Hq * d.hd), 0, ATTN_O, 0, true, AS_IS);
        T("self_attn.q_norm.weight", 1, hd, 0, 0, Q_NORM, 0, false, ONE_PLUS);
        T("self_attn.k_norm.weight", 1, hd, 0, 0, K_NORM, 0, false, ONE_PLUS);
    } else {
        T("linear_attn.in_proj_qkv.weight", 2, cd, H, 0, GDN_IN, 0, true, AS_IS);
        T("linear_attn.in_proj_z.weight", 2, vd, H, 0, GDN_IN, d.cd, true, AS_IS);
        T("linear_attn.in_proj_b.weight", 2, Hv, H, 0, GDN_IN, d.cd + d.vd, true, AS_IS);
        T("linear_attn.in_proj_a.weight", 2, Hv, H, 0, GDN_IN, d.cd + d.vd + d.Hv, true, AS_IS);
        T("linear_attn.conv1d.weight", 3, cd, 1, (int64_t)d.K, CONV, 0, false, AS_IS);
        T("linear_attn.dt_bias", 1, Hv, 0, 0, DT_BIAS, 0, false, AS_IS);
        T("linear_attn.A_log", 1, Hv, 0, 0, A, 0, false, NEG_EXP);
        T("linear_attn.norm.weight", 1, (int64_t)d.dv, 0, 0, GDN_NORM, 0, false, AS_IS);
        T("linear_attn.out_proj.weight", 2, H, vd, 0, GDN_OUT, 0, true, AS_IS);
    }
    T("mlp.gate_proj.weight", 2, F, H, 0, MLP_IN, 0, true, AS_IS);
    T("mlp.up_proj.weight", 2, F, H, 0, MLP_IN, d.F, true, AS_IS);
    T("mlp.down_proj.weight", 2, H, F, 0, DOWN, 0, true, AS_IS);
#undef T
    return n;
}

void vw_qwen35_model_tensors(const vw_qwen35_config *c,
                             vw_qwen35_tensor out[VW_QWEN35_MODEL_TENSORS]) {
    out[0] = (vw_qwen35_tensor){"embed_tokens.weight", 2, {c->vocab, c->hidden, 0},
                                VW_QWEN35_EMBED,       0, true,
                                VW_QWEN35_AS_IS};
    out[1] = (vw_qwen35_tensor){
        "norm.weight", 1, {c->hidden, 0, 0}, VW_QWEN35_FINAL_NORM, 0, false, VW_QWEN35_ONE_PLUS};
}

static void put(vw_qwen35_tensor_spec *out, size_t cap, size_t *n, int32_t layer,
                const vw_qwen35_tensor *t) {
    if (out && *n < cap) {
        vw_qwen35_tensor_spec *s = &out[*n];
        if (layer >= 0)
            snprintf(s->name, sizeof s->name, "layers.%d.%s", (int)layer, t->name);
        else
            snprintf(s->name, sizeof s->name, "%s", t->name);
        s->ndim = t->ndim;
        for (int k = 0; k < 3; k++)
            s->shape[k] = t->shape[k];
    }
    (*n)++;
}

size_t vw_qwen35_tensor_specs(const vw_qwen35_config *c, vw_qwen35_tensor_spec *out, size_t cap) {
    vw_qwen35_tensor model[VW_QWEN35_MODEL_TENSORS], kinds[2][VW_QWEN35_LAYER_TENSORS_MAX];
    size_t n_kind[2], n = 0;
    vw_qwen35_model_tensors(c, model);
    for (int full = 0; full < 2; full++)
        n_kind[full] = vw_qwen35_layer_tensors(c, full, kinds[full]);
    put(out, cap, &n, -1, &model[0]);
    for (int32_t i = 0; i < c->n_layers; i++) {
        int full = c->full_attention[i] != 0;
        for (size_t k = 0; k < n_kind[full]; k++)
            put(out, cap, &n, i, &kinds[full][k]);
    }
    put(out, cap, &n, -1, &model[1]);
    return n;
}
