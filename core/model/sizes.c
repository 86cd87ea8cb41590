/* sizes.c — the Vela 2.0 size of a backbone config and its parameter count
 * (see sizes.h). Reads the config only. */
#include "sizes.h"

#include <stdio.h>
#include <string.h>

/* docs/spec/backbone.md §1.1 and §1.2; intermediate 0: not known (2B). */
static const struct {
    const char *name;
    int32_t hidden, layers, intermediate, heads, kv_heads, head_dim, lin_k, lin_v, lin_dim;
} family[] = {
    {"0.8B", 1024, 24, 3584, 8, 2, 256, 16, 16, 128},
    {"2B", 2048, 24, 0, 8, 2, 256, 16, 16, 128},
    {"4B", 2560, 32, 9216, 16, 4, 256, 16, 32, 128},
    {"9B", 4096, 32, 12288, 16, 4, 256, 16, 32, 128},
    {"27B", 5120, 64, 17408, 24, 4, 256, 16, 48, 128},
};

void vw_model_size_of(const vw_qwen35_config *c, vw_model_size *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "custom");
    for (size_t i = 0; i < sizeof family / sizeof *family; i++) {
        if (c->hidden != family[i].hidden || c->n_heads != family[i].heads ||
            c->n_kv_heads != family[i].kv_heads || c->head_dim != family[i].head_dim ||
            c->lin_k_heads != family[i].lin_k || c->lin_v_heads != family[i].lin_v ||
            c->lin_k_dim != family[i].lin_dim || c->lin_v_dim != family[i].lin_dim ||
            (family[i].intermediate && c->intermediate != family[i].intermediate) ||
            c->n_layers > family[i].layers)
            continue;
        if (c->n_layers == family[i].layers)
            snprintf(out->name, sizeof out->name, "%s", family[i].name);
        else
            snprintf(out->name, sizeof out->name, "%s width, %d of %d layers", family[i].name,
                     (int)c->n_layers, (int)family[i].layers);
        break;
    }
    vw_qwen35_tensor ts[VW_QWEN35_LAYER_TENSORS_MAX];
    vw_qwen35_model_tensors(c, ts);
    for (int32_t layer = -1; layer < c->n_layers; layer++) {
        size_t n = layer < 0 ? (size_t)VW_QWEN35_MODEL_TENSORS
                             : vw_qwen35_layer_tensors(c, c->full_attention[layer], ts);
        for (size_t i = 0; i < n; i++) {
            uint64_t numel = 1;
            for (int d = 0; d < ts[i].ndim; d++)
                numel *= (uint64_t)ts[i].shape[d];
            out->params += numel;
            out->matrix_params += ts[i].matrix ? numel : 0;
        }
    }
}
