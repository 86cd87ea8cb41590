/* seg.h — the request path's one record of a packed batch, below both the
 * launchers (kernels.cuh), the executor and the test API (ops_cuda.h).
 *
 * Several sequences share one buffer of rows; vw_cuda_seg describes one of
 * them. A block continues a prefix: it reads the parent's rows for its conv
 * history and attention keys, and its DeltaNet state slot (executor.h tree
 * semantics). The executor fills these from the planned trees; the kernels
 * read them from device memory. Plain data: no ownership, no threads.
 * Included from C and CUDA.
 */
#ifndef VW_CUDA_SEG_H
#define VW_CUDA_SEG_H

#include <stdint.h>

/* One sequence of a packed batch. */
typedef struct vw_cuda_seg {
    int32_t start, len;   /* rows [start, start + len) */
    int32_t pos0;         /* RoPE position of the first row */
    int32_t parent_start; /* first row of the prefix a block continues */
    int32_t parent_len;   /* its length; 0 for a prefix (empty history) */
    int32_t state;        /* DeltaNet state slot: a prefix writes its final state there, a
                             block reads its initial state from it; -1: none (zero start) */
} vw_cuda_seg;

#endif
