/* qwen35_config.h — the Qwen3.5 hybrid text backbone shape and the tensor
 * inventory it implies (qwen35-backbone-spec §1, §2).
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

/* One expected backbone tensor: prefix-free HF name and PyTorch shape. */
typedef struct vw_qwen35_tensor_spec {
    char name[VW_QWEN35_NAME_MAX];
    int ndim;
    int64_t shape[3];
} vw_qwen35_tensor_spec;

/* Parses a backbone_config object (qwen3_5_text keys). */
vw_status vw_qwen35_config_parse(const json_t *bc, vw_qwen35_config *cfg, vw_err *err);

/* Writes the expected tensors into out[0..cap) and returns how many there are
 * (call with out = NULL, cap = 0 to size the array). Order: embed_tokens,
 * layers 0..n-1 (norms, token mixer, MLP), final norm. */
size_t vw_qwen35_tensor_specs(const vw_qwen35_config *cfg, vw_qwen35_tensor_spec *out, size_t cap);

/* Derived widths (qwen35-backbone-spec §1.1 "Derived dims"). */
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
