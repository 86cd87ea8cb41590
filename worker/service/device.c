/* device.c — executor selection for the engine (see device.h). */
#include "device.h"

#include <stdio.h>
#include <string.h>

static int is(const char *s, const char *name) {
    return s && !strcmp(s, name);
}

#ifdef VW_HAVE_CUDA
#include "backbone_cuda.h"
#include "vw_cuda.h"

/* A single request can exceed the batcher's budget (it then runs alone), so
 * the arena holds at least this many rows; bigger batches are split by the
 * engine when the executor answers VW_ETRANSIENT. */
#define VW_CUDA_MIN_ARENA_TOKENS 32768

static vw_status make_cuda(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    const vw_device_choice *dc = ctx;
    vw_cuda_opts o = {
        .device = 0,
        .max_tokens =
            dc->max_tokens > VW_CUDA_MIN_ARENA_TOKENS ? dc->max_tokens : VW_CUDA_MIN_ARENA_TOKENS,
        .max_trees = 0,
        .precision = is(dc->precision, "fp32")     ? VW_CUDA_FP32
                     : is(dc->precision, "bf16x2") ? VW_CUDA_BF16X2
                                                   : VW_CUDA_BF16,
        .batch_invariant = 0,
    };
    return vw_backbone_cuda_new(b, &o, out, err);
}
#endif

vw_status vw_device_select(const char *device, const char *precision, size_t max_tokens,
                           vw_device_choice *dc, vw_engine_opts *opts, vw_err *err) {
    memset(dc, 0, sizeof *dc);
    dc->max_tokens = max_tokens;
    opts->make_executor = NULL; /* the CPU reference backbone */
    opts->make_ctx = NULL;
    if (!device)
        device = "auto";
    if (!is(device, "auto") && !is(device, "cpu") && !is(device, "cuda"))
        return VW_FAIL(err, VW_EINVAL, "bad_device", "device '%s': expected auto, cpu or cuda",
                       device);
    if (precision && !is(precision, "auto") && !is(precision, "fp32") && !is(precision, "bf16") &&
        !is(precision, "bf16x2"))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_precision",
                       "precision '%s': expected auto, fp32, bf16 or bf16x2", precision);
    char gpu[256] = "";
    int n_gpu = 0;
#ifdef VW_HAVE_CUDA
    n_gpu = vw_cuda_device_count(gpu, sizeof gpu);
#else
    (void)gpu;
#endif
    if (is(device, "cuda") && n_gpu == 0)
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_cuda", "device cuda: %s",
#ifdef VW_HAVE_CUDA
                       "no CUDA device is visible"
#else
                       "this build has no CUDA executor"
#endif
        );
    if (is(device, "cuda") || (is(device, "auto") && n_gpu > 0)) {
#ifdef VW_HAVE_CUDA
        dc->cuda = 1;
        snprintf(dc->precision, sizeof dc->precision, "%s",
                 precision && !is(precision, "auto") ? precision : "bf16");
        opts->make_executor = make_cuda;
        opts->make_ctx = dc;
        snprintf(dc->chosen, sizeof dc->chosen, "cuda%s: %s %s",
                 is(device, "auto") ? " (auto)" : "", gpu, dc->precision);
        return VW_OK;
#endif
    }
    if (is(precision, "bf16") || is(precision, "bf16x2"))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_precision",
                       "precision %s needs the CUDA executor; the CPU reference is fp32",
                       precision);
    snprintf(dc->chosen, sizeof dc->chosen, "cpu%s fp32", is(device, "auto") ? " (auto)" : "");
    return VW_OK;
}
