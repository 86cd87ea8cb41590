/* device.c — executor selection for the engine (see device.h). */
#include "device.h"

#include <stdio.h>
#include <string.h>

#ifdef VW_HAVE_CUDA
#include "vw_cuda.h"
#endif

vw_status vw_device_select(const char *device, vw_engine_opts *opts, char *chosen,
                           size_t chosen_len, vw_err *err) {
    opts->make_executor = NULL; /* the CPU reference backbone */
    opts->make_ctx = NULL;
    char gpu[256] = "";
    int n_gpu = 0;
#ifdef VW_HAVE_CUDA
    n_gpu = vw_cuda_device_count(gpu, sizeof gpu);
#endif
    if (!device || !strcmp(device, "auto") || !strcmp(device, "cpu")) {
        /* No CUDA executor is linked into this build yet: auto resolves to the
         * CPU reference and says which GPU it left idle. */
        if (device && !strcmp(device, "auto") && n_gpu > 0)
            snprintf(chosen, chosen_len, "cpu (auto; %s present, CUDA executor not built)", gpu);
        else
            snprintf(chosen, chosen_len, "cpu%s",
                     device && !strcmp(device, "auto") ? " (auto)" : "");
        return VW_OK;
    }
    if (!strcmp(device, "cuda"))
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_cuda",
                       "device cuda: this build has no CUDA executor (%d GPU(s) visible)", n_gpu);
    return VW_FAIL(err, VW_EINVAL, "bad_device", "device '%s': expected auto, cpu or cuda", device);
}
