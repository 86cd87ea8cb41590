/* test_device.c — `--device` / `model.device` and `--precision` /
 * `model.precision` (worker/service/device.c): the device names, what each
 * combination selects or why it is refused, and the start-up errors of a
 * worker whose GPU is missing or too small. Runs with or without a GPU: where
 * a case depends on one, the test asks CUDA how many devices it sees and
 * checks the branch taken. Built three ways: CPU-only (the no-CUDA message),
 * with nvcc (here: CUDA sees no device), and in the emulator build
 * (cuda/CMakeLists.txt), where VW_CUDA_EMU_DEVICES / VW_CUDA_EMU_MEM_MB fake
 * devices, so cuda:N selection and the memory check run without a GPU. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model/random_bundle.h"
#include "model/sizes.h"
#include "service/device.h"
#include "util/pool.h"
#include "vw_test.h"
#ifdef VW_HAVE_CUDA
#include "vw_cuda.h"
#endif

static int gpus(void) {
#ifdef VW_HAVE_CUDA
    return vw_cuda_device_count(NULL, 0);
#else
    return 0;
#endif
}

static vw_status pick(const char *device, const char *precision, vw_device_choice *dc,
                      vw_engine_opts *opts, vw_err *err) {
    memset(opts, 0, sizeof *opts);
    memset(err, 0, sizeof *err);
    return vw_device_select(device, precision, 0, dc, opts, err);
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

Test(device, names_parse) {
    static const struct {
        const char *name;
        int ok;
        vw_device_kind kind;
        int ordinal;
    } cases[] = {
        {"auto", 1, VW_DEVICE_AUTO, 0},
        {"cpu", 1, VW_DEVICE_CPU, 0},
        {"cuda", 1, VW_DEVICE_CUDA, 0},
        {"cuda:0", 1, VW_DEVICE_CUDA, 0},
        {"cuda:3", 1, VW_DEVICE_CUDA, 3},
        {"cuda:10", 1, VW_DEVICE_CUDA, 10},
        {"cuda:255", 1, VW_DEVICE_CUDA, 255},
        {"cuda:256", 0, 0, 0},
        {"cuda:", 0, 0, 0},
        {"cuda:01", 0, 0, 0},
        {"cuda:-1", 0, 0, 0},
        {"cuda:+1", 0, 0, 0},
        {"cuda: 1", 0, 0, 0},
        {"cuda:1 ", 0, 0, 0},
        {"cuda:1x", 0, 0, 0},
        {"cuda:0000", 0, 0, 0},
        {"CUDA", 0, 0, 0},
        {"gpu", 0, 0, 0},
        {"", 0, 0, 0},
        {"test-echo", 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vw_device_kind kind = (vw_device_kind)99;
        int ord = -7;
        int rc = vw_device_parse(cases[i].name, &kind, &ord);
        cr_assert_eq(rc == 0, cases[i].ok, "'%s'", cases[i].name);
        if (cases[i].ok) {
            cr_assert_eq(kind, cases[i].kind, "'%s'", cases[i].name);
            cr_assert_eq(ord, cases[i].ordinal, "'%s'", cases[i].name);
        } else {
            cr_assert(kind == (vw_device_kind)99 && ord == -7, "'%s': outputs touched",
                      cases[i].name);
        }
    }
    cr_assert_eq(vw_device_parse(NULL, NULL, NULL), -1);
    cr_assert_eq(vw_device_parse("cuda:2", NULL, NULL), 0);
}

Test(device, cpu_is_fp32_only) {
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    cr_assert_eq(pick("cpu", NULL, &dc, &o, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(dc.chosen, "cpu fp32");
    cr_assert_null(o.make_executor, "the CPU reference backbone");
    cr_assert_eq(pick("cpu", "fp32", &dc, &o, &err), VW_OK, "%s", err.msg);
    const char *gpu_only[] = {"bf16", "bf16x2"};
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(pick("cpu", gpu_only[i], &dc, &o, &err), VW_EUNSUPPORTED, "%s", gpu_only[i]);
        cr_assert_str_eq(err.type, "bad_precision");
        cr_assert(strstr(err.msg, gpu_only[i]) && strstr(err.msg, "CUDA"), "%s", err.msg);
    }
}

Test(device, unknown_names_are_refused) {
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    const char *bad[] = {"tpu", "cuda:01", "cuda:x", "cuda:-1", "cuda:999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(pick(bad[i], NULL, &dc, &o, &err), VW_EINVAL, "%s", bad[i]);
        cr_assert_str_eq(err.type, "bad_device");
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
        cr_assert(strstr(err.msg, quoted) && strstr(err.msg, "cuda:N"), "%s", err.msg);
        cr_assert_null(o.make_executor);
    }
    cr_assert_eq(pick("auto", "fp16", &dc, &o, &err), VW_EUNSUPPORTED);
    cr_assert_str_eq(err.type, "bad_precision");
    cr_assert(strstr(err.msg, "'fp16'") && strstr(err.msg, "bf16x2"), "%s", err.msg);
}

/* auto: cuda:0 in BF16X2 (the serving default that passes spec §6.4) when a
 * device is there, else the CPU in FP32; the choice names itself for the log. */
Test(device, auto_follows_the_hardware) {
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    const char *precs[] = {"auto", "bf16", "bf16x2", "fp32"};
    for (size_t i = 0; i < 4; i++) {
        vw_status st = pick("auto", precs[i], &dc, &o, &err);
        if (gpus() > 0) {
            cr_assert_eq(st, VW_OK, "%s: %s", precs[i], err.msg);
            cr_assert(dc.cuda && dc.ordinal == 0 && o.make_executor && o.make_ctx == &dc);
            const char *want = i == 0 ? "bf16x2" : precs[i];
            cr_assert_str_eq(dc.precision, want);
            char tail[16];
            snprintf(tail, sizeof tail, " %s", want);
            cr_assert(!strncmp(dc.chosen, "cuda:0 (auto): ", 15) && ends_with(dc.chosen, tail),
                      "%s", dc.chosen);
        } else if (i == 0 || i == 3) {
            cr_assert_eq(st, VW_OK, "%s: %s", precs[i], err.msg);
            cr_assert_str_eq(dc.chosen, "cpu (auto) fp32");
            cr_assert_null(o.make_executor);
        } else {
            cr_assert_eq(st, VW_EUNSUPPORTED, "%s without a GPU", precs[i]);
            cr_assert_str_eq(err.type, "bad_precision");
        }
    }
}

Test(device, cuda_needs_a_device) {
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    const char *names[] = {"cuda", "cuda:0"};
    for (size_t i = 0; i < 2; i++) {
        vw_status st = pick(names[i], "bf16x2", &dc, &o, &err);
        if (gpus() > 0) {
            cr_assert_eq(st, VW_OK, "%s", err.msg);
            cr_assert_str_eq(dc.precision, "bf16x2");
            cr_assert(!strncmp(dc.chosen, "cuda:0: ", 8), "%s", dc.chosen);
        } else {
            cr_assert_eq(st, VW_EUNSUPPORTED);
            cr_assert_str_eq(err.type, "no_cuda");
            cr_assert(strstr(err.msg, "cuda:0"), "%s", err.msg);
            cr_assert_null(o.make_executor);
        }
    }
}

/* The case: cuda:3 on a host with fewer GPUs (here: none, or a build
 * without CUDA) fails with one message naming the device and what was seen. */
Test(device, missing_device_names_the_devices_seen) {
    if (gpus() > 3)
        cr_skip_test("this host has a cuda:3");
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    cr_assert_eq(pick("cuda:3", NULL, &dc, &o, &err), VW_EUNSUPPORTED);
    cr_assert_str_eq(err.type, "no_cuda");
    cr_assert_null(o.make_executor);
#ifdef VW_HAVE_CUDA
    cr_assert(strstr(err.msg, "device cuda:3 is not there; devices seen: "), "%s", err.msg);
    if (gpus() == 0)
        cr_assert(strstr(err.msg, "devices seen: none ("), "%s", err.msg);
    else
        cr_assert(strstr(err.msg, "cuda:0 "), "%s", err.msg);
#else
    cr_assert(strstr(err.msg, "device cuda:3: this build has no CUDA executor"), "%s", err.msg);
#endif
}

/* The same through `vela-worker run`: the worker stops at start (exit 1,
 * before any Kafka connection) with that one line; /readyz never turned true
 * because the model was never loaded. */
Test(device, worker_fails_at_start_on_a_missing_device) {
    const char *bin = getenv("VW_WORKER_BIN");
    if (!bin)
        cr_skip_test("VW_WORKER_BIN not set (CTest sets it)");
    if (gpus() > 3)
        cr_skip_test("this host has a cuda:3");
    char *src = vw_test_path("");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && VELA_MODEL_DEVICE=cuda:3 VELA_METRICS_LISTEN= VELA_LOG_FORMAT=text "
             "timeout 60 '%s' run --config config/worker.example.yaml 2>&1",
             src, bin);
    free(src);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[16384];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    int rc = pclose(p);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "cuda:3"), "%s", out);
#ifdef VW_HAVE_CUDA
    cr_assert(strstr(out, "devices seen: "), "%s", out);
#else
    cr_assert(strstr(out, "no CUDA executor"), "%s", out);
#endif
    cr_assert_null(strstr(out, "model loaded"), "%s", out);
}

/* model.cpu_threads reaches the CPU executor's pool: `vela-worker run` on the
 * cpu device says how many threads it loaded the backbone with, the
 * configured number, or by default the CPUs less one in eight. */
static void expect_threads_logged(const char *env, const char *want) {
    const char *bin = getenv("VW_WORKER_BIN");
    if (!bin)
        cr_skip_test("VW_WORKER_BIN not set (CTest sets it)");
    char *src = vw_test_path("");
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && VELA_MODEL_DEVICE=cpu %s VELA_METRICS_LISTEN= VELA_LOG_FORMAT=text "
             "timeout -s TERM 10 '%s' run --config config/worker.example.yaml 2>&1 "
             "| grep -m1 'model loaded'",
             src, env, bin);
    free(src);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    pclose(p);
    cr_assert(strstr(out, want), "'%s' not in: %s", want, out);
}

Test(device, worker_sizes_the_cpu_pool) {
    expect_threads_logged("VELA_MODEL_CPU_THREADS=3", "device=cpu fp32, 3 threads");
    unsigned c = vw_cpu_count();
    char want[64];
    snprintf(want, sizeof want, "device=cpu fp32, %u threads", c - c / 8);
    expect_threads_logged("", want);
}

#ifdef VW_CUDA_EMU
/* ---- the emulator's fake devices (VW_CUDA_EMU_DEVICES, VW_CUDA_EMU_MEM_MB) ---- */

Test(device, emu_picks_the_ordinal) {
    setenv("VW_CUDA_EMU_DEVICES", "2", 1);
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    cr_assert_eq(pick("cuda:1", NULL, &dc, &o, &err), VW_OK, "%s", err.msg);
    cr_assert(dc.cuda && dc.ordinal == 1 && o.make_executor);
    cr_assert_str_eq(dc.chosen, "cuda:1: vela CPU emulator (sm_90, 80.0 GiB) bf16x2");
    cr_assert_eq(pick("cuda:2", NULL, &dc, &o, &err), VW_EUNSUPPORTED);
    cr_assert_str_eq(err.type, "no_cuda");
    cr_assert_str_eq(err.msg, "device cuda:2 is not there; devices seen: 2: cuda:0 vela CPU "
                              "emulator sm_90 80.0 GiB, cuda:1 vela CPU emulator sm_90 80.0 GiB");
    setenv("VW_CUDA_EMU_DEVICES", "0", 1);
    cr_assert_eq(pick("auto", NULL, &dc, &o, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(dc.chosen, "cpu (auto) fp32");
}

/* The tiny bundle on a fake 256 MiB device: its arena at the minimum of
 * 32,768 rows (0.18 GiB) plus the 0.25 GiB reserve does not fit, and the
 * factory says so before uploading anything. */
Test(device, emu_bundle_must_fit_the_device) {
    setenv("VW_CUDA_EMU_DEVICES", "1", 1);
    setenv("VW_CUDA_EMU_MEM_MB", "256", 1);
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    cr_assert_eq(pick("cuda:0", "fp32", &dc, &o, &err), VW_OK, "%s", err.msg);
    vw_engine *e = NULL;
    vw_status st = vw_engine_open(dir, &o, &e, &err);
    cr_assert_eq(st, VW_ENOMEM, "%s", err.msg);
    cr_assert_null(e);
    cr_assert_str_eq(err.type, "device_memory");
    cr_assert(strstr(err.msg, "device cuda:0 (vela CPU emulator): the model needs ") &&
                  strstr(err.msg, "fp32 + arena ") && strstr(err.msg, "for 32768 tokens") &&
                  strstr(err.msg, "but 0.25 of 0.25 GiB are free") &&
                  strstr(err.msg, "devices seen: 1: cuda:0 vela CPU emulator"),
              "%s", err.msg);
    /* Enough memory: the executor loads and the log line carries the figures. */
    setenv("VW_CUDA_EMU_MEM_MB", "65536", 1);
    cr_assert_eq(pick("cuda:0", NULL, &dc, &o, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_engine_open(dir, &o, &e, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(vw_engine_device(e), "cuda");
    cr_assert(strstr(dc.chosen, "bf16x2, needs ") && ends_with(dc.chosen, " of 64.00 GiB free"),
              "%s", dc.chosen);
    vw_engine_free(e);
    free(dir);
}
#endif

#ifdef VW_CUDA_EMU
/* A real-width bundle (the 9B slice: 9B's hidden 4,096, its arena at 32,768
 * rows is 8.3 GiB, its 2 layers and small vocabulary 0.81 GiB) on a fake 8 GiB device: refused
 * naming needed vs free before anything is uploaded, as the 0.8B is on a small one. */
Test(device, emu_real_width_bundle_must_fit_the_device) {
    setenv("VW_CUDA_EMU_DEVICES", "1", 1);
    setenv("VW_CUDA_EMU_MEM_MB", "8192", 1);
    char *dir = vw_test_slice_bundle("9b-slice");
    cr_assert_not_null(dir);
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    cr_assert_eq(pick("cuda:0", NULL, &dc, &o, &err), VW_OK, "%s", err.msg);
    vw_engine *e = NULL;
    cr_assert_eq(vw_engine_open(dir, &o, &e, &err), VW_ENOMEM, "%s", err.msg);
    cr_assert_str_eq(err.type, "device_memory");
    cr_assert(strstr(err.msg, "the model needs 11.37 GiB (weights 0.81 bf16x2 + arena 10.31 for "
                              "32768 tokens + reserve 0.25) but 8.00 of 8.00 GiB are free"),
              "%s", err.msg);
    free(dir);
}
#endif

#ifdef VW_HAVE_CUDA
/* Memory per size (docs/backbone.md "Memory per size"): for the 0.8B, 4B and
 * 9B shapes (the weights: one walk of the model description, core/model/sizes.h,
 * which vw_cuda_weight_bytes and `bundle verify` share; hand-counted in
 * weight_bytes_follow_the_precision), the arena is sized for at least 32,768 rows; and each
 * card's verdict at the default batching.max_tokens is the table's, with the
 * largest max_tokens that fits printed. A card's free memory at start: what
 * CUDA reports less 0.5 GiB of context (L4 22.5, L40S 45.0, H100 79.6, H200
 * 139.8 GiB). */
Test(device, memory_per_size) {
    static const char *const shapes[] = {"0.8b", "4b", "9b"};
    static const char *const precs[] = {"bf16x2", "fp32"};
    static const double free_gib[] = {22.0, 44.5, 79.1, 139.3};
    /* fits[shape][precision]: bit i set when card i holds it at the default */
    static const unsigned fits[3][2] = {{0xf, 0xf}, {0xf, 0xe}, {0xe, 0xe}};
    for (size_t s = 0; s < 3; s++) {
        vw_qwen35_config c;
        vw_err err = {0};
        cr_assert_eq(vw_random_shape_config(shapes[s], &c, &err), VW_OK, "%s", err.msg);
        vw_model_size size;
        vw_model_size_of(&c, &size);
        for (size_t p = 0; p < 2; p++) {
            vw_device_need n;
            cr_assert_eq(vw_device_need_of(&c, precs[p], 16384, &n), 0);
            cr_expect_eq(n.arena_tokens, VW_CUDA_MIN_ARENA_TOKENS);
            cr_expect_eq(n.total, n.weights + n.arena + VW_DEVICE_RESERVE_BYTES);
            char line[256];
            int k = snprintf(
                line, sizeof line, "%-4s %-6s weights %5.2f arena %5.2f need %5.2f GiB;", shapes[s],
                precs[p], n.weights / 1073741824.0, n.arena / 1073741824.0, n.total / 1073741824.0);
            for (size_t card = 0; card < 4; card++) {
                size_t room = (size_t)(free_gib[card] * 1073741824.0);
                cr_expect_eq(n.total <= room, (fits[s][p] >> card) & 1, "%s %s on %.1f GiB",
                             shapes[s], precs[p], free_gib[card]);
                size_t lo = 0, hi = 1u << 16; /* the largest max_tokens (x1024) that fits */
                while (lo < hi) {
                    size_t mid = (lo + hi + 1) / 2;
                    vw_device_need m;
                    cr_assert_eq(vw_device_need_of(&c, precs[p], mid * 1024, &m), 0);
                    if (m.total <= room && mid * 1024 >= VW_CUDA_MIN_ARENA_TOKENS)
                        lo = mid;
                    else
                        hi = mid - 1;
                }
                k += snprintf(line + k, sizeof line - (size_t)k, " %.1f GiB: %s", free_gib[card],
                              lo ? "" : "no");
                if (lo)
                    k += snprintf(line + k, sizeof line - (size_t)k, "%zuk", lo);
            }
            fprintf(stderr, "%s\n", line);
        }
    }
}

/* The weight bytes the check counts: BF16 matrices in bf16 and bf16x2 (same
 * memory), FP32 in fp32; the non-matrix tensors are FP32 in every mode. */
Test(device, weight_bytes_follow_the_precision) {
    vw_qwen35_config c = {.hidden = 64,
                          .n_layers = 4,
                          .intermediate = 128,
                          .vocab = 1000,
                          .n_heads = 4,
                          .n_kv_heads = 2,
                          .head_dim = 32,
                          .rotary_dim = 8,
                          .rope_theta = 1e6,
                          .lin_k_heads = 2,
                          .lin_v_heads = 4,
                          .lin_k_dim = 32,
                          .lin_v_dim = 32,
                          .conv_kernel = 4,
                          .rms_eps = 1e-6f,
                          .full_attention = {0, 0, 0, 1}};
    size_t bf = vw_cuda_weight_bytes(&c, VW_CUDA_BF16),
           x2 = vw_cuda_weight_bytes(&c, VW_CUDA_BF16X2),
           f32 = vw_cuda_weight_bytes(&c, VW_CUDA_FP32);
    cr_assert_eq(bf, x2);
    /* Matrix elements, by hand: embedding 1000x64; per GDN layer in_proj qkv
     * 256x64 (cd = 2*64 + 128), z 128x64, b and a 4x64, out 64x128; per
     * attention layer q (with gate) 256x64, k and v 64x64, o 64x128; per layer
     * MLP gate and up 128x64, down 64x128. */
    const size_t mat = 1000 * 64 + 3 * (16384 + 8192 + 256 + 256 + 8192) +
                       (16384 + 4096 + 4096 + 8192) + 4 * (2 * 8192 + 8192);
    cr_assert_eq(f32 - bf, 2 * mat, "bf16 %zu fp32 %zu", bf, f32);
    /* Vectors, FP32 in both: norms (final, 2 per layer: 64 each), q/k norm 32
     * each, per GDN layer conv 256x4, dt_bias and A_log 4 each, norm 32. */
    const size_t vec = 64 + 4 * 2 * 64 + 2 * 32 + 3 * (256 * 4 + 4 + 4 + 32);
    cr_assert_eq(bf, 2 * mat + 4 * vec, "bf16 %zu", bf);
}
#endif
