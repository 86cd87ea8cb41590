/* vw_cuda.h — what the host side may ask of the CUDA build: which devices
 * CUDA sees, what one of them is and how much memory it has free, and how
 * many bytes a backbone's weights take on a device (worker/service/device.c
 * checks a bundle fits before it loads it; docs/operations.md "GPU deployment").
 * Included from C (worker/, tests/, bench/) and CUDA (cuda/).
 * Thread-safety: reads only, except that vw_cuda_device_query makes the device
 * it measures free memory on current for the call (and restores the
 * previous one). Errors: VW_EUNSUPPORTED "no_cuda_device" for an ordinal CUDA
 * does not see, VW_ECUDA for a runtime failure. */
#ifndef VW_CUDA_H
#define VW_CUDA_H

#include <stddef.h>

#include "model/qwen35_config.h"
#include "precision.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when no driver or no device (never fails).
 * When name != NULL and a device exists, device 0's name is written there. */
int vw_cuda_device_count(char *name, size_t name_len);

/* One device as CUDA reports it. */
typedef struct vw_cuda_device_info {
    int ordinal;        /* the N of cuda:N (as this process sees it) */
    char name[128];     /* "NVIDIA H200" */
    int sm;             /* compute capability major * 10 + minor: 90 */
    size_t total_bytes; /* global memory */
    size_t free_bytes;  /* free now (cudaMemGetInfo); 0 unless measured */
} vw_cuda_device_info;

/* Writes one line naming every device CUDA sees into buf (never more than
 * cap bytes, NUL-terminated), for start-up errors and logs:
 *   "2: cuda:0 NVIDIA H200 sm_90 139.8 GiB, cuda:1 NVIDIA H200 sm_90 139.8 GiB"
 *   "none (cudaGetDeviceCount: no CUDA-capable device is detected)"
 * Reads properties only: creates no context on any device. Never fails. */
void vw_cuda_devices_describe(char *buf, size_t cap);

/* Fills *info for device `ordinal` from its properties; with measure_free,
 * also its free memory: cudaMemGetInfo needs the device current, so that
 * creates its primary context (the executor would create it anyway) and then
 * restores the caller's current device. Errors: VW_EUNSUPPORTED
 * "no_cuda_device" when 0 <= ordinal < count does not hold (the message
 * names the devices seen), VW_ECUDA otherwise; *info is zeroed first. */
vw_status vw_cuda_device_query(int ordinal, int measure_free, vw_cuda_device_info *info,
                               vw_err *err);

/* Device bytes of a backbone's weights in this precision: every tensor of the
 * model description (core/model/qwen35_config.h), matrices (projections, the
 * embedding) in BF16 when the precision keeps BF16 weights, everything else
 * FP32 — what vw_backbone_cuda_new uploads, less its alignment padding (under
 * 256 bytes per tensor). With vw_backbone_cuda_arena_bytes, the executor's
 * device memory. Pure. */
size_t vw_cuda_weight_bytes(const vw_qwen35_config *cfg, vw_cuda_precision precision);

/* A kernel of the forward that launches with dynamic shared memory, named as
 * its SASS shows it ("attention_tc_k<256>", "gdn_state_tc_k<16>"). */
typedef struct vw_cuda_kernel_smem {
    const char *name; /* static */
    size_t bytes;
} vw_cuda_kernel_smem;

/* The mixers' kernels that launch with dynamic shared memory at this
 * backbone's widths (attention head_dim and heads per KV head, DeltaNet dk
 * and dv) and how many bytes: for scripts/sass-report (bench_gpu
 * --kernel-smem). Writes at most cap rows; returns how many there are. Pure. */
size_t vw_cuda_kernel_smem_table(const vw_qwen35_config *cfg, vw_cuda_kernel_smem *rows,
                                 size_t cap);

#ifdef __cplusplus
}
#endif
#endif
