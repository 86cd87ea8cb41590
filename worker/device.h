/* device.h — `--device auto|cpu|cuda`: which executor backs the engine.
 * auto picks CUDA when this build has the CUDA backend and a GPU is present,
 * else the CPU reference; the choice is returned for logging.
 * Errors: VW_EUNSUPPORTED for cuda without a CUDA build or without a device;
 * VW_EINVAL for an unknown name. Thread-safety: no shared state. */
#ifndef VW_DEVICE_H
#define VW_DEVICE_H

#include <stddef.h>

#include "engine.h"

/* Fills opts->make_executor/make_ctx for `device`; writes the resolved device
 * ("cpu" or "cuda", plus the GPU's name) into chosen. */
vw_status vw_device_select(const char *device, vw_engine_opts *opts, char *chosen,
                           size_t chosen_len, vw_err *err);

#endif
