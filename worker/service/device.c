/* device.c — executor selection for the engine (see device.h). Owns the
 * device name syntax and the start-up checks; never runs the model. */
#include "device.h"

#include <stdio.h>
#include <string.h>

static int is(const char *s, const char *name) {
    return s && !strcmp(s, name);
}

int vw_device_parse(const char *name, vw_device_kind *kind, int *ordinal) {
    vw_device_kind k;
    int n = 0;
    if (!name)
        return -1;
    if (is(name, "auto")) {
        k = VW_DEVICE_AUTO;
    } else if (is(name, "cpu")) {
        k = VW_DEVICE_CPU;
    } else if (is(name, "cuda")) {
        k = VW_DEVICE_CUDA;
    } else if (!strncmp(name, "cuda:", 5)) {
        const char *d = name + 5;
        size_t len = strlen(d);
        if (len == 0 || len > 3 || (len > 1 && d[0] == '0'))
            return -1;
        for (size_t i = 0; i < len; i++) {
            if (d[i] < '0' || d[i] > '9')
                return -1;
            n = n * 10 + (d[i] - '0');
        }
        if (n > VW_DEVICE_MAX_ORDINAL)
            return -1;
        k = VW_DEVICE_CUDA;
    } else {
        return -1;
    }
    if (kind)
        *kind = k;
    if (ordinal)
        *ordinal = n;
    return 0;
}

#ifdef VW_HAVE_CUDA
#include "backbone_cuda.h"
#include "vw_cuda.h"

static double gib(size_t bytes) {
    return (double)bytes / (double)(1u << 30);
}

static vw_cuda_precision precision_of(const char *p) {
    return is(p, "fp32") ? VW_CUDA_FP32 : is(p, "bf16") ? VW_CUDA_BF16 : VW_CUDA_BF16X2;
}

static size_t arena_tokens(size_t max_tokens) {
    return max_tokens > VW_CUDA_MIN_ARENA_TOKENS ? max_tokens : VW_CUDA_MIN_ARENA_TOKENS;
}

int vw_device_need_of(const vw_qwen35_config *cfg, const char *precision, size_t max_tokens,
                      vw_device_need *need) {
    vw_cuda_opts o = {.max_tokens = arena_tokens(max_tokens), .precision = precision_of(precision)};
    need->weights = vw_cuda_weight_bytes(cfg, o.precision);
    need->arena = vw_backbone_cuda_arena_bytes(cfg, &o);
    need->arena_tokens = o.max_tokens;
    need->reserve = VW_DEVICE_RESERVE_BYTES;
    need->total = need->weights + need->arena + need->reserve;
    return need->arena ? 0 : -1; /* 0: options the executor refuses (max_tokens too large) */
}

/* The bundle must fit the device's free memory: weights + arena + reserve.
 * Checked before vw_backbone_cuda_new uploads anything, so a worker that
 * cannot serve says why in one line instead of failing in cudaMalloc. On
 * success appends the figures to dc->chosen (the start-up log line). */
static vw_status check_fits(const vw_bundle *b, const vw_cuda_opts *o, vw_device_choice *dc,
                            vw_err *err) {
    vw_cuda_device_info info;
    vw_status st = vw_cuda_device_query(o->device, 1, &info, err);
    if (st != VW_OK)
        return st;
    vw_device_need n;
    if (vw_device_need_of(vw_bundle_backbone_config(b), dc->precision, o->max_tokens, &n))
        return VW_FAIL(err, VW_EINVAL, "bad_option",
                       "device cuda:%d: batching.max_tokens %zu is more than the CUDA executor "
                       "sizes an arena for",
                       o->device, o->max_tokens);
    if (n.total > info.free_bytes) {
        char seen[200];
        vw_cuda_devices_describe(seen, sizeof seen);
        return VW_FAIL(err, VW_ENOMEM, "device_memory",
                       "device cuda:%d (%s): the model needs %.2f GiB (weights %.2f %s + arena "
                       "%.2f for %zu tokens + reserve %.2f) but %.2f of %.2f GiB are free; lower "
                       "batching.max_tokens or use a larger device; devices seen: %s",
                       o->device, info.name, gib(n.total), gib(n.weights), dc->precision,
                       gib(n.arena), n.arena_tokens, gib(n.reserve), gib(info.free_bytes),
                       gib(info.total_bytes), seen);
    }
    size_t len = strlen(dc->chosen);
    snprintf(dc->chosen + len, sizeof dc->chosen - len, ", needs %.2f of %.2f GiB free",
             gib(n.total), gib(info.free_bytes));
    return VW_OK;
}

static vw_status make_cuda(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    vw_device_choice *dc = ctx;
    vw_cuda_opts o = {
        .device = dc->ordinal,
        .max_tokens = arena_tokens(dc->max_tokens),
        .max_trees = 0,
        .precision = precision_of(dc->precision),
        .batch_invariant = 0,
    };
    vw_status st = check_fits(b, &o, dc, err);
    return st != VW_OK ? st : vw_backbone_cuda_new(b, &o, out, err);
}

/* cuda:N chosen (explicitly or by auto): the device's properties into dc. */
static vw_status choose_cuda(int ordinal, int is_auto, const char *precision, vw_device_choice *dc,
                             vw_engine_opts *opts, vw_err *err) {
    if (ordinal >= vw_cuda_device_count(NULL, 0)) {
        char seen[400];
        vw_cuda_devices_describe(seen, sizeof seen);
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_cuda",
                       "device cuda:%d is not there; devices seen: %s", ordinal, seen);
    }
    vw_cuda_device_info info;
    vw_status st = vw_cuda_device_query(ordinal, 0, &info, err);
    if (st != VW_OK)
        return st;
    dc->cuda = 1;
    dc->ordinal = ordinal;
    snprintf(dc->precision, sizeof dc->precision, "%s",
             precision && !is(precision, "auto") ? precision : "bf16x2");
    opts->make_executor = make_cuda;
    opts->make_ctx = dc;
    snprintf(dc->chosen, sizeof dc->chosen, "cuda:%d%s: %s (sm_%d, %.1f GiB) %s", ordinal,
             is_auto ? " (auto)" : "", info.name, info.sm, gib(info.total_bytes), dc->precision);
    return VW_OK;
}
#else
int vw_device_need_of(const vw_qwen35_config *cfg, const char *precision, size_t max_tokens,
                      vw_device_need *need) {
    (void)cfg, (void)precision, (void)max_tokens;
    memset(need, 0, sizeof *need);
    return -1;
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
    vw_device_kind kind;
    int ordinal;
    if (vw_device_parse(device, &kind, &ordinal))
        return VW_FAIL(err, VW_EINVAL, "bad_device",
                       "device '%s': expected auto, cpu, cuda or cuda:N (N = 0..%d)", device,
                       VW_DEVICE_MAX_ORDINAL);
    if (precision && !is(precision, "auto") && !is(precision, "fp32") && !is(precision, "bf16") &&
        !is(precision, "bf16x2"))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_precision",
                       "precision '%s': expected auto, fp32, bf16 or bf16x2", precision);
#ifdef VW_HAVE_CUDA
    if (kind == VW_DEVICE_CUDA)
        return choose_cuda(ordinal, 0, precision, dc, opts, err);
    if (kind == VW_DEVICE_AUTO && vw_cuda_device_count(NULL, 0) > 0)
        return choose_cuda(0, 1, precision, dc, opts, err);
#else
    if (kind == VW_DEVICE_CUDA)
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_cuda",
                       "device cuda:%d: this build has no CUDA executor (built without nvcc or "
                       "with -DVW_CUDA=OFF; the CUDA image is Dockerfile.cuda)",
                       ordinal);
#endif
    if (is(precision, "bf16") || is(precision, "bf16x2"))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_precision",
                       "precision %s needs the CUDA executor; the CPU reference is fp32",
                       precision);
    snprintf(dc->chosen, sizeof dc->chosen, "cpu%s fp32", kind == VW_DEVICE_AUTO ? " (auto)" : "");
    return VW_OK;
}
