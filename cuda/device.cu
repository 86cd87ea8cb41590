// device.cu — device discovery for `--device auto` (see vw_cuda.h).
#include "vw_cuda.h"

#include "cuda_common.cuh"

#include <cuda_runtime.h>
#include <stdio.h>

extern "C" int vw_cuda_device_count(char *name, size_t name_len) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); // clear the sticky "no driver" error
        return 0;
    }
    if (n > 0 && name && name_len) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            snprintf(name, name_len, "%s (sm_%d%d)", prop.name, prop.major, prop.minor);
        else
            snprintf(name, name_len, "unknown");
    }
    return n;
}

// Shared by the kernel files (declared in cuda_common.cuh): kernels that want
// more than the default 48 KiB of dynamic shared memory must opt in, and the
// device caps how much (227 KiB on sm_90).
vw_status vw_cuda_smem_optin(const void *kernel, size_t bytes, const char *name, vw_err *err) {
    int dev = 0, max_optin = 0;
    vw_status st = VW_CUDA_TRY(err, cudaGetDevice(&dev));
    if (st == VW_OK)
        st = VW_CUDA_TRY(
            err, cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (st != VW_OK)
        return st;
    if (bytes > (size_t)max_optin)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "%s needs %zu bytes of shared memory; device %d allows %d", name, bytes, dev,
                       max_optin);
    if (bytes <= 48 * 1024)
        return VW_OK;
    return VW_CUDA_TRY(
        err, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}
