/* qwen35_config.c — backbone_config parsing and the tensor inventory
 * (see qwen35_config.h). Reads JSON only; never touches weights. */
#include "qwen35_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Dimension sanity bound: keeps every product of two dims far from overflow. */
#define DIM_MAX (1 << 20)

static vw_status get_int(const json_t *o, const char *key, int has_default, int32_t dflt,
                         int32_t lo, int32_t *out, vw_err *err) {
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (!has_default)
            return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s is missing", key);
        *out = dflt;
        return VW_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > DIM_MAX * 256LL)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config.%s must be an integer >= %d",
                       key, (int)lo);
    *out = (int32_t)json_integer_value(v);
    return VW_OK;
}

static vw_status get_num(const json_t *o, const char *key, double dflt, double *out, vw_err *err) {
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
                       "rope_type %s is not supported (only \"default\", qwen35-backbone-spec "
                       "§1.3)",
                       json_is_string(type) ? json_string_value(type) : "(not a string)");
    double factor = 0.25;
    vw_status st = get_num(src, "rope_theta", NAN, &c->rope_theta, err);
    if (st == VW_OK)
        st = get_num(src, "partial_rotary_factor", 0.25, &factor, err);
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
    vw_status st = get_int(bc, "full_attention_interval", 1, 4, 1, &every, err);
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
    } ints[] = {
        {"hidden_size", 0, 0, &c->hidden},
        {"num_hidden_layers", 0, 0, &c->n_layers},
        {"intermediate_size", 0, 0, &c->intermediate},
        {"vocab_size", 0, 0, &c->vocab},
        {"num_attention_heads", 0, 0, &c->n_heads},
        {"num_key_value_heads", 0, 0, &c->n_kv_heads},
        {"linear_num_key_heads", 1, 16, &c->lin_k_heads},
        {"linear_num_value_heads", 1, 32, &c->lin_v_heads},
        {"linear_key_head_dim", 1, 128, &c->lin_k_dim},
        {"linear_value_head_dim", 1, 128, &c->lin_v_dim},
        {"linear_conv_kernel_dim", 1, 4, &c->conv_kernel},
    };
    for (size_t i = 0; st == VW_OK && i < sizeof ints / sizeof ints[0]; i++)
        st = get_int(bc, ints[i].key, ints[i].has_default, ints[i].dflt, 1, ints[i].dst, err);
    if (st != VW_OK)
        return st;
    if (c->n_layers > VW_QWEN35_MAX_LAYERS || c->hidden > DIM_MAX || c->intermediate > DIM_MAX ||
        c->vocab > 64 * DIM_MAX)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config sizes are out of range");
    st = get_int(bc, "head_dim", 1, c->hidden / c->n_heads, 1, &c->head_dim, err);
    double eps = 1e-6;
    if (st == VW_OK)
        st = get_num(bc, "rms_norm_eps", 1e-6, &eps, err);
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
    if ((int64_t)c->n_heads * c->head_dim * 2 > DIM_MAX || (int64_t)vw_qwen35_conv_dim(c) > DIM_MAX)
        return VW_FAIL(err, VW_EINVAL, "bad_config", "backbone_config head sizes are out of range");
    return VW_OK;
}

static void put(vw_qwen35_tensor_spec *out, size_t cap, size_t *n, const char *name, int ndim,
                int64_t a, int64_t b, int64_t c) {
    if (out && *n < cap) {
        vw_qwen35_tensor_spec *s = &out[*n];
        snprintf(s->name, sizeof s->name, "%s", name);
        s->ndim = ndim;
        s->shape[0] = a;
        s->shape[1] = b;
        s->shape[2] = c;
    }
    (*n)++;
}

static void lput(vw_qwen35_tensor_spec *out, size_t cap, size_t *n, int32_t layer,
                 const char *suffix, int ndim, int64_t a, int64_t b, int64_t c) {
    char nm[VW_QWEN35_NAME_MAX];
    snprintf(nm, sizeof nm, "layers.%d.%s", (int)layer, suffix);
    put(out, cap, n, nm, ndim, a, b, c);
}

size_t vw_qwen35_tensor_specs(const vw_qwen35_config *c, vw_qwen35_tensor_spec *out, size_t cap) {
    size_t n = 0;
    const int64_t H = c->hidden, I = c->intermediate, hd = c->head_dim;
    const int64_t kd = vw_qwen35_key_dim(c), vd = vw_qwen35_value_dim(c);
    put(out, cap, &n, "embed_tokens.weight", 2, c->vocab, H, 0);
    for (int32_t i = 0; i < c->n_layers; i++) {
        lput(out, cap, &n, i, "input_layernorm.weight", 1, H, 0, 0);
        lput(out, cap, &n, i, "post_attention_layernorm.weight", 1, H, 0, 0);
        if (c->full_attention[i]) {
            lput(out, cap, &n, i, "self_attn.q_proj.weight", 2, c->n_heads * hd * 2, H, 0);
            lput(out, cap, &n, i, "self_attn.k_proj.weight", 2, c->n_kv_heads * hd, H, 0);
            lput(out, cap, &n, i, "self_attn.v_proj.weight", 2, c->n_kv_heads * hd, H, 0);
            lput(out, cap, &n, i, "self_attn.o_proj.weight", 2, H, c->n_heads * hd, 0);
            lput(out, cap, &n, i, "self_attn.q_norm.weight", 1, hd, 0, 0);
            lput(out, cap, &n, i, "self_attn.k_norm.weight", 1, hd, 0, 0);
        } else {
            lput(out, cap, &n, i, "linear_attn.in_proj_qkv.weight", 2, 2 * kd + vd, H, 0);
            lput(out, cap, &n, i, "linear_attn.in_proj_z.weight", 2, vd, H, 0);
            lput(out, cap, &n, i, "linear_attn.in_proj_b.weight", 2, c->lin_v_heads, H, 0);
            lput(out, cap, &n, i, "linear_attn.in_proj_a.weight", 2, c->lin_v_heads, H, 0);
            lput(out, cap, &n, i, "linear_attn.conv1d.weight", 3, 2 * kd + vd, 1, c->conv_kernel);
            lput(out, cap, &n, i, "linear_attn.dt_bias", 1, c->lin_v_heads, 0, 0);
            lput(out, cap, &n, i, "linear_attn.A_log", 1, c->lin_v_heads, 0, 0);
            lput(out, cap, &n, i, "linear_attn.norm.weight", 1, c->lin_v_dim, 0, 0);
            lput(out, cap, &n, i, "linear_attn.out_proj.weight", 2, H, vd, 0);
        }
        lput(out, cap, &n, i, "mlp.gate_proj.weight", 2, I, H, 0);
        lput(out, cap, &n, i, "mlp.up_proj.weight", 2, I, H, 0);
        lput(out, cap, &n, i, "mlp.down_proj.weight", 2, H, I, 0);
    }
    put(out, cap, &n, "norm.weight", 1, H, 0, 0);
    return n;
}
