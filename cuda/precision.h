/* precision.h — the arithmetic precisions of the CUDA backbone (what each
 * means: backbone_cuda.h "Precision"). Its own header because both the
 * executor (backbone_cuda.h) and the kernel calls (ops_cuda.h) name them.
 * Included from C and CUDA. */
#ifndef VW_CUDA_PRECISION_H
#define VW_CUDA_PRECISION_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vw_cuda_precision {
    VW_CUDA_BF16 = 0,
    VW_CUDA_FP32 = 1,
    VW_CUDA_BF16X2 = 2,
} vw_cuda_precision;

/* Whether the matrices of this precision live on the device in BF16. */
static inline int vw_cuda_bf16_weights(vw_cuda_precision p) {
    return p == VW_CUDA_BF16 || p == VW_CUDA_BF16X2;
}

/* "bf16", "bf16x2", "fp32"; NULL for an unknown value. */
static inline const char *vw_cuda_precision_name(vw_cuda_precision p) {
    return p == VW_CUDA_BF16     ? "bf16"
           : p == VW_CUDA_BF16X2 ? "bf16x2"
           : p == VW_CUDA_FP32   ? "fp32"
                                 : 0;
}

#ifdef __cplusplus
}
#endif
#endif
