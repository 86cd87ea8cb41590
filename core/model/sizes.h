/* sizes.h — which Vela 2.0 size a backbone config is (docs/spec/backbone.md
 * §1.1, §1.2) and what its weights take: parameters, and bytes per precision.
 *
 * The size is named from the widths alone (hidden, SwiGLU, attention and
 * DeltaNet heads and their dims): "0.8B", "4B", "9B", "27B", and "2B" whose
 * SwiGLU width has no primary source (matched without it); a config of a
 * size's widths with fewer layers is "<size> width, N of M layers" (the test
 * slices); anything else "custom". Sizes come from the config, never from
 * this table: it only names them.
 *
 * Parameters count every tensor of the backbone description
 * (qwen35_config.h): the embedding, every layer, the final norm; never an
 * lm_head (tied or not, the worker does not read it), MTP or vision tensors.
 * Pure functions; nothing allocated; thread-safe.
 */
#ifndef VW_SIZES_H
#define VW_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "qwen35_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_model_size {
    char name[64];          /* "4B", "9B width, 2 of 32 layers", "custom" */
    uint64_t params;        /* every backbone tensor */
    uint64_t matrix_params; /* of which projections and the embedding (BF16 on a BF16 device) */
} vw_model_size;

void vw_model_size_of(const vw_qwen35_config *c, vw_model_size *out);

/* Bytes of the weights with every matrix at matrix_bytes per value (4: FP32,
 * the CPU backbone and the CUDA fp32 mode; 2: BF16, the CUDA bf16 and bf16x2
 * modes) and every other tensor FP32, as both backends hold them. */
static inline uint64_t vw_model_weight_bytes(const vw_model_size *s, unsigned matrix_bytes) {
    return s->matrix_params * matrix_bytes + (s->params - s->matrix_params) * 4u;
}

#ifdef __cplusplus
}
#endif
#endif
