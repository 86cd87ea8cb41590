/* qwen35_config.h — the Qwen3.5 hybrid text backbone shape and the tensor
 * inventory it implies (docs/spec/backbone.md §1, §2).
 *
 * Every size follows from the config; there is no table of model sizes.
 * Defaults are transformers' Qwen3_5TextConfig defaults for keys a config may
 * omit (head_dim = hidden / heads, partial_rotary_factor 0.25, layer_types
 * from full_attention_interval 4, linear_* 16/32/128/128, conv 4, eps 1e-6).
 * Ownership: plain values, nothing allocated. Thread-safety: pure functions.
 * Errors: VW_EINVAL "bad_config" naming the key, VW_EUNSUPPORTED for a valid
 * config this build cannot run (rope_type other than default, an activation
 * other than silu, attention bias, no output gate).
 */
#ifndef VW_QWEN35_CONFIG_H
#define VW_QWEN35_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { VW_QWEN35_MAX_LAYERS = 256, VW_QWEN35_NAME_MAX = 96, VW_QWEN35_MAX_ROTARY = 1024 };

typedef struct vw_qwen35_config {
    int32_t hidden;                        /* hidden_size */
    int32_t n_layers;                      /* num_hidden_layers */
    int32_t intermediate;                  /* SwiGLU width */
    int32_t vocab;                         /* embedding rows (vocab_size) */
    int32_t n_heads, n_kv_heads, head_dim; /* full attention */
    int32_t rotary_dim;                    /* head_dim * partial_rotary_factor, even */
    double rope_theta;
    int32_t lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim; /* Gated DeltaNet */
    int32_t conv_kernel;
    float rms_eps;
    uint8_t full_attention[VW_QWEN35_MAX_LAYERS]; /* per layer: 1 full attention, 0 GDN */
} vw_qwen35_config;

/* The widths both backbones compute with (docs/spec/backbone.md §1.1 "Derived
 * dims"): H hidden, F ffn, Hq/Hk attention heads of hd, rot rotary width,
 * Hv/Hkl DeltaNet value/key heads of dv/dk, kd = Hkl*dk, vd = Hv*dv,
 * cd = 2*kd + vd conv channels, K conv taps; the stacked projection widths; the
 * number of layers of each kind. */
typedef struct vw_qwen35_dims {
    size_t H, F, hd, Hq, Hk, rot, Hv, Hkl, dk, dv, kd, vd, cd, K;
    size_t gdn_in;  /* rows of the stacked DeltaNet projection: qkv | z | b | a */
    size_t attn_q2; /* rows of q_proj (query and gate interleaved per head) */
    size_t attn_kv; /* rows of k_proj, and of v_proj */
    size_t attn_in; /* rows of the stacked attention projection: q/gate | k | v */
    size_t n_attn, n_gdn;
} vw_qwen35_dims;

void vw_qwen35_dims_of(const vw_qwen35_config *c, vw_qwen35_dims *d);

/* One expected backbone tensor: prefix-free HF name and PyTorch shape. */
typedef struct vw_qwen35_tensor_spec {
    char name[VW_QWEN35_NAME_MAX];
    int ndim;
    int64_t shape[3];
} vw_qwen35_tensor_spec;

/* How a loader forms a stored tensor before use (both backbones, in FP32). */
typedef enum vw_qwen35_xform {
    VW_QWEN35_AS_IS = 0,
    VW_QWEN35_ONE_PLUS, /* RMSNorm weights stored as w, used as 1 + w */
    VW_QWEN35_NEG_EXP,  /* A_log, used as A = -exp(A_log) */
} vw_qwen35_xform;

/* The buffer of a layer (or of the model) a tensor is loaded into. The
 * projections of one token mixer or MLP are stacked into one matrix, each
 * starting at its `row`. */
typedef enum vw_qwen35_target {
    VW_QWEN35_EMBED = 0, /* [vocab, H] */
    VW_QWEN35_FINAL_NORM,
    VW_QWEN35_IN_NORM,
    VW_QWEN35_POST_NORM,
    VW_QWEN35_MLP_IN,  /* [2F, H]: gate | up */
    VW_QWEN35_DOWN,    /* [H, F] */
    VW_QWEN35_ATTN_IN, /* [attn_in, H]: q/gate | k | v */
    VW_QWEN35_ATTN_O,  /* [H, Hq*hd] */
    VW_QWEN35_Q_NORM,
    VW_QWEN35_K_NORM,
    VW_QWEN35_GDN_IN, /* [gdn_in, H]: qkv | z | b | a */
    VW_QWEN35_CONV,   /* [cd, K] */
    VW_QWEN35_DT_BIAS,
    VW_QWEN35_A,
    VW_QWEN35_GDN_NORM,
    VW_QWEN35_GDN_OUT, /* [H, vd] */
} vw_qwen35_target;

/* One backbone tensor and where it goes: the model's one description, read by
 * the inventory check (vw_qwen35_tensor_specs) and by both loaders. */
typedef struct vw_qwen35_tensor {
    const char *name; /* for a layer tensor: the name after "layers.<l>." */
    int ndim;
    int64_t shape[3];
    vw_qwen35_target target;
    size_t row;  /* first row in the target (stacked projections), else 0 */
    bool matrix; /* a projection or the embedding (BF16 on a BF16 device) */
    vw_qwen35_xform xf;
} vw_qwen35_tensor;

enum { VW_QWEN35_LAYER_TENSORS_MAX = 16, VW_QWEN35_MODEL_TENSORS = 2 };

/* The cases of a switch on a vw_qwen35_target that return the buffer a
 * backend keeps for it: both backends name their buffers alike (the model's
 * embed and final_norm; a layer's in_norm, post_norm, mlp_in, down,
 * a.{in,o,q_norm,k_norm} and g.{in,conv,dt_bias,A,norm,out}). */
#define VW_QWEN35_TARGET_CASES(model, layer)                                                       \
    case VW_QWEN35_EMBED:                                                                          \
        return (model)->embed;                                                                     \
    case VW_QWEN35_FINAL_NORM:                                                                     \
        return (model)->final_norm;                                                                \
    case VW_QWEN35_IN_NORM:                                                                        \
        return (layer)->in_norm;                                                                   \
    case VW_QWEN35_POST_NORM:                                                                      \
        return (layer)->post_norm;                                                                 \
    case VW_QWEN35_MLP_IN:                                                                         \
        return (layer)->mlp_in;                                                                    \
    case VW_QWEN35_DOWN:                                                                           \
        return (layer)->down;                                                                      \
    case VW_QWEN35_ATTN_IN:                                                                        \
        return (layer)->a.in;                                                                      \
    case VW_QWEN35_ATTN_O:                                                                         \
        return (layer)->a.o;                                                                       \
    case VW_QWEN35_Q_NORM:                                                                         \
        return (layer)->a.q_norm;                                                                  \
    case VW_QWEN35_K_NORM:                                                                         \
        return (layer)->a.k_norm;                                                                  \
    case VW_QWEN35_GDN_IN:                                                                         \
        return (layer)->g.in;                                                                      \
    case VW_QWEN35_CONV:                                                                           \
        return (layer)->g.conv;                                                                    \
    case VW_QWEN35_DT_BIAS:                                                                        \
        return (layer)->g.dt_bias;                                                                 \
    case VW_QWEN35_A:                                                                              \
        return (layer)->g.A;                                                                       \
    case VW_QWEN35_GDN_NORM:                                                                       \
        return (layer)->g.norm;                                                                    \
    case VW_QWEN35_GDN_OUT:                                                                        \
        return (layer)->g.out

/* The tensors of a layer of the kind given (full attention or Gated DeltaNet),
 * in the inventory's order (norms, token mixer, MLP); returns how many
 * (<= VW_QWEN35_LAYER_TENSORS_MAX). */
size_t vw_qwen35_layer_tensors(const vw_qwen35_config *c, int full,
                               vw_qwen35_tensor out[VW_QWEN35_LAYER_TENSORS_MAX]);
/* The two tensors outside the layers: embed_tokens.weight, norm.weight. */
void vw_qwen35_model_tensors(const vw_qwen35_config *c,
                             vw_qwen35_tensor out[VW_QWEN35_MODEL_TENSORS]);

/* Parses a backbone_config object (qwen3_5_text keys). */
vw_status vw_qwen35_config_parse(const json_t *bc, vw_qwen35_config *cfg, vw_err *err);

/* Writes the expected tensors into out[0..cap) and returns how many there are
 * (call with out = NULL, cap = 0 to size the array). Order: embed_tokens,
 * layers 0..n-1 (norms, token mixer, MLP), final norm. */
size_t vw_qwen35_tensor_specs(const vw_qwen35_config *cfg, vw_qwen35_tensor_spec *out, size_t cap);

/* Derived widths (docs/spec/backbone.md §1.1 "Derived dims"). */
static inline int32_t vw_qwen35_key_dim(const vw_qwen35_config *c) {
    return c->lin_k_heads * c->lin_k_dim;
}
static inline int32_t vw_qwen35_value_dim(const vw_qwen35_config *c) {
    return c->lin_v_heads * c->lin_v_dim;
}
static inline int32_t vw_qwen35_conv_dim(const vw_qwen35_config *c) {
    return 2 * vw_qwen35_key_dim(c) + vw_qwen35_value_dim(c);
}

#ifdef __cplusplus
}
#endif
#endif
