/* test_device.c — `--device` / `model.device` and `--precision` /
 * `model.precision` (worker/service/device.c): what each combination selects or why
 * it is refused. Runs with or without a GPU: where a case depends on one, the
 * test asks CUDA how many devices it sees and checks the branch taken. */
#include <criterion/criterion.h>
#include <string.h>

#include "service/device.h"
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
    cr_assert_eq(pick("tpu", NULL, &dc, &o, &err), VW_EINVAL);
    cr_assert_str_eq(err.type, "bad_device");
    cr_assert(strstr(err.msg, "'tpu'"), "%s", err.msg);
    cr_assert_eq(pick("auto", "fp16", &dc, &o, &err), VW_EUNSUPPORTED);
    cr_assert_str_eq(err.type, "bad_precision");
    cr_assert(strstr(err.msg, "'fp16'") && strstr(err.msg, "bf16x2"), "%s", err.msg);
}

Test(device, auto_follows_the_hardware) {
    vw_device_choice dc;
    vw_engine_opts o;
    vw_err err;
    const char *precs[] = {"auto", "bf16", "bf16x2", "fp32"};
    for (size_t i = 0; i < 4; i++) {
        vw_status st = pick("auto", precs[i], &dc, &o, &err);
        if (gpus() > 0) {
            cr_assert_eq(st, VW_OK, "%s: %s", precs[i], err.msg);
            cr_assert(dc.cuda && o.make_executor && o.make_ctx == &dc);
            const char *want = i == 0 ? "bf16" : precs[i];
            cr_assert_str_eq(dc.precision, want);
            size_t n = strlen(dc.chosen), w = strlen(want);
            cr_assert(n > w && !strcmp(dc.chosen + n - w, want) && dc.chosen[n - w - 1] == ' ',
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
    vw_status st = pick("cuda", "bf16x2", &dc, &o, &err);
    if (gpus() > 0) {
        cr_assert_eq(st, VW_OK, "%s", err.msg);
        cr_assert_str_eq(dc.precision, "bf16x2");
        cr_assert(strncmp(dc.chosen, "cuda: ", 6) == 0, "%s", dc.chosen);
    } else {
        cr_assert_eq(st, VW_EUNSUPPORTED);
        cr_assert_str_eq(err.type, "no_cuda");
    }
}
