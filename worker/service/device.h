/* device.h — `--device auto|cpu|cuda` and `--precision auto|fp32|bf16|bf16x2`: which
 * executor backs the engine. auto picks CUDA when this build has the CUDA
 * backend and a GPU is present, else the CPU reference; the choice is written
 * into dc->chosen for logging.
 * Precision: the CPU reference is FP32 only (auto = fp32); CUDA runs BF16
 * weights and GEMM inputs with FP32 accumulation (auto = bf16), the same with
 * each GEMM input split into two BF16 halves (bf16x2: FP32-grade answers at
 * twice the GEMM work), or FP32 (fp32, TF32 off, for parity runs); see
 * cuda/backbone_cuda.h.
 * Errors: VW_EUNSUPPORTED for cuda without a CUDA build or without a device, or
 * a precision the chosen device cannot run; VW_EINVAL for an unknown name.
 * Ownership: dc is the factory's context: it must outlive vw_engine_open.
 * Thread-safety: no shared state. */
#ifndef VW_DEVICE_H
#define VW_DEVICE_H

#include <stddef.h>

#include "engine.h"

typedef struct vw_device_choice {
    char chosen[320];  /* "cpu", "cuda: <GPU name> bf16", ... */
    int cuda;          /* 1: the CUDA executor */
    char precision[8]; /* CUDA: "bf16", "bf16x2" or "fp32" */
    size_t max_tokens; /* CUDA: rows of one forward call (arena size); 0: default */
} vw_device_choice;

/* Fills opts->make_executor/make_ctx (= dc) for device and precision (NULL =
 * auto). max_tokens sizes the CUDA arena (the batcher's token budget). */
vw_status vw_device_select(const char *device, const char *precision, size_t max_tokens,
                           vw_device_choice *dc, vw_engine_opts *opts, vw_err *err);

#endif
