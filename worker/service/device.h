/* device.h — `--device auto|cpu|cuda|cuda:N` and `--precision
 * auto|fp32|bf16|bf16x2`: which executor backs the engine, on which GPU.
 *
 * Device: cpu is the FP32 reference backbone; cuda:N the CUDA executor on
 * device ordinal N as this process sees it (cuda = cuda:0; a container given
 * one GPU sees it as cuda:0); auto is cuda:0 when this build has the CUDA
 * executor and CUDA sees a device, else cpu. One worker process drives one
 * GPU: scale over GPUs with more workers in the same consumer group
 * (docs/operations.md "GPU deployment"). The choice is written into dc->chosen
 * for the start-up log line ("cuda:0 (auto): NVIDIA H200 (sm_90, 139.8 GiB)
 * bf16x2", "cpu (auto) fp32").
 *
 * Precision: the CPU reference is FP32 only (auto = fp32). On CUDA, auto =
 * bf16x2: BF16 weights, each GEMM input split into two BF16 halves, FP32
 * accumulation — the serving default because it passes the head-probability
 * bar of docs/spec/answers.md §6.4 (plain bf16 missed it on the tiny goldens,
 * docs/cuda.md), at twice the GEMM work of bf16 and the same weight memory;
 * bf16 (half the GEMM work) and fp32 (parity runs, 2x the weight memory) stay
 * selectable. See cuda/backbone_cuda.h.
 *
 * Start-up checks, so a worker that cannot serve fails at once with one line
 * naming the device: a cuda:N CUDA does not see (VW_EUNSUPPORTED "no_cuda":
 * the devices seen, or the runtime's reason for none; a build without CUDA
 * says so), and a bundle whose weights plus the executor's arena plus
 * VW_DEVICE_RESERVE_BYTES exceed the device's free memory (VW_ENOMEM
 * "device_memory": needed vs free, with the split), checked in the executor
 * factory before anything is uploaded.
 * Errors: VW_EINVAL "bad_device" for an unknown name, VW_EUNSUPPORTED
 * "bad_precision" for a precision the chosen device cannot run, the two above.
 * Ownership: dc is the factory's context: it must outlive vw_engine_open.
 * Thread-safety: no shared state. */
#ifndef VW_DEVICE_H
#define VW_DEVICE_H

#include <stddef.h>

#include "engine.h"

/* Device memory the check keeps free beyond weights and arena: cuBLAS and
 * cuBLASLt handles, the kernels' module code, allocator granularity. */
#define VW_DEVICE_RESERVE_BYTES ((size_t)256 << 20)

/* A single request can exceed the batcher's budget (it then runs alone), so
 * the CUDA arena holds at least this many rows; bigger batches are split by
 * the engine when the executor answers VW_ETRANSIENT. */
#define VW_CUDA_MIN_ARENA_TOKENS 32768

/* The highest N of cuda:N the parser accepts (CUDA's own limit is far lower
 * in practice; this only bounds the text). */
#define VW_DEVICE_MAX_ORDINAL 255

typedef enum vw_device_kind { VW_DEVICE_AUTO = 0, VW_DEVICE_CPU, VW_DEVICE_CUDA } vw_device_kind;

typedef struct vw_device_choice {
    char chosen[320];  /* "cpu", "cuda:0: <GPU name> bf16x2", ... */
    int cuda;          /* 1: the CUDA executor */
    int ordinal;       /* CUDA: the device ordinal (N of cuda:N) */
    char precision[8]; /* CUDA: "bf16", "bf16x2" or "fp32" */
    size_t max_tokens; /* CUDA: rows of one forward call (arena size); 0: default */
} vw_device_choice;

/* Parses a device name: "auto", "cpu", "cuda" (= cuda:0) or "cuda:N" with N
 * decimal digits in [0, VW_DEVICE_MAX_ORDINAL] (no sign, spaces or leading
 * zeros beyond "0"). Returns 0 and fills *kind and *ordinal (0 unless cuda),
 * or -1 for anything else (outputs untouched). kind/ordinal may be NULL.
 * Used by the config loader too. Pure. */
int vw_device_parse(const char *name, vw_device_kind *kind, int *ordinal);

/* The device memory the CUDA executor needs for a backbone: what the start-up
 * check compares with the device's free memory (docs/backbone.md "Memory per
 * size"). */
typedef struct vw_device_need {
    size_t weights;      /* every tensor, matrices BF16 in bf16/bf16x2, FP32 in fp32 */
    size_t arena;        /* activations for arena_tokens rows */
    size_t arena_tokens; /* max(max_tokens, VW_CUDA_MIN_ARENA_TOKENS) */
    size_t reserve;      /* VW_DEVICE_RESERVE_BYTES */
    size_t total;
} vw_device_need;

/* Fills *need for cfg at precision ("fp32", "bf16", "bf16x2"; NULL or "auto":
 * bf16x2) with the arena sized for max_tokens (the batcher's budget). Returns
 * 0, or -1 in a build without the CUDA executor (*need zeroed) or for a
 * max_tokens the executor refuses (over INT32_MAX / 2). Pure. */
int vw_device_need_of(const vw_qwen35_config *cfg, const char *precision, size_t max_tokens,
                      vw_device_need *need);

/* Fills opts->make_executor/make_ctx (= dc) for device and precision (NULL =
 * auto). max_tokens sizes the CUDA arena (the batcher's token budget). Fails
 * for a cuda device that is not there (see above); the memory check runs
 * later, in the factory vw_engine_open calls with the bundle. */
vw_status vw_device_select(const char *device, const char *precision, size_t max_tokens,
                           vw_device_choice *dc, vw_engine_opts *opts, vw_err *err);

#endif
