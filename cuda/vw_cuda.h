/* vw_cuda.h — what the host side may ask of the CUDA build.
 * Included from C (worker/) and CUDA (cuda/). Thread-safe: reads only. */
#ifndef VW_CUDA_H
#define VW_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when no driver or no device (never fails).
 * When name != NULL and a device exists, device 0's name is written there. */
int vw_cuda_device_count(char *name, size_t name_len);

#ifdef __cplusplus
}
#endif
#endif
