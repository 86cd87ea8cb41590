// device.cu — device discovery and sizing for `--device` (see vw_cuda.h).
#include "model/sizes.h"
#include "vw_cuda.h"

#include "cuda_common.cuh"
#include "kernels.cuh"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

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

extern "C" void vw_cuda_devices_describe(char *buf, size_t cap) {
    if (!buf || !cap)
        return;
    buf[0] = 0;
    int n = 0;
    cudaError_t ce = cudaGetDeviceCount(&n);
    if (ce != cudaSuccess || n <= 0) {
        snprintf(buf, cap, "none (cudaGetDeviceCount: %s)",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        cudaGetLastError();
        return;
    }
    size_t used = (size_t)snprintf(buf, cap, "%d:", n);
    for (int i = 0; i < n && used < cap; i++) {
        cudaDeviceProp p;
        int w =
            cudaGetDeviceProperties(&p, i) == cudaSuccess
                ? snprintf(buf + used, cap - used, "%s cuda:%d %s sm_%d%d %.1f GiB", i ? "," : "",
                           i, p.name, p.major, p.minor, (double)p.totalGlobalMem / (1u << 30))
                : snprintf(buf + used, cap - used, "%s cuda:%d (properties: %s)", i ? "," : "", i,
                           cudaGetErrorString(cudaGetLastError()));
        used += w > 0 ? (size_t)w : 0;
    }
}

extern "C" vw_status vw_cuda_device_query(int ordinal, int measure_free, vw_cuda_device_info *info,
                                          vw_err *err) {
    memset(info, 0, sizeof *info);
    info->ordinal = ordinal;
    int n = vw_cuda_device_count(NULL, 0);
    if (ordinal < 0 || ordinal >= n) {
        char seen[384];
        vw_cuda_devices_describe(seen, sizeof seen);
        return VW_FAIL(err, VW_EUNSUPPORTED, "no_cuda_device",
                       "device cuda:%d is not there; devices seen: %s", ordinal, seen);
    }
    cudaDeviceProp p;
    vw_status st = VW_CUDA_TRY(err, cudaGetDeviceProperties(&p, ordinal));
    if (st != VW_OK)
        return st;
    snprintf(info->name, sizeof info->name, "%.127s", p.name);
    info->sm = p.major * 10 + p.minor;
    info->total_bytes = p.totalGlobalMem;
    if (!measure_free)
        return VW_OK;
    int prev = 0;
    if ((st = VW_CUDA_TRY(err, cudaGetDevice(&prev))) != VW_OK ||
        (st = VW_CUDA_TRY(err, cudaSetDevice(ordinal))) != VW_OK)
        return st;
    size_t free_b = 0, total_b = 0;
    st = VW_CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
    cudaSetDevice(prev); // best effort: the caller's device as it was
    if (st == VW_OK)
        info->free_bytes = free_b, info->total_bytes = total_b;
    return st;
}

extern "C" size_t vw_cuda_weight_bytes(const vw_qwen35_config *cfg, vw_cuda_precision precision) {
    vw_model_size size; /* one walk of the model description (core/model/sizes.h) */
    vw_model_size_of(cfg, &size);
    return (size_t)vw_model_weight_bytes(&size, vw_cuda_bf16_weights(precision) ? 2u : 4u);
}

extern "C" size_t vw_cuda_kernel_smem_table(const vw_qwen35_config *cfg, vw_cuda_kernel_smem *rows,
                                            size_t cap) {
    vw_qwen35_dims d;
    vw_qwen35_dims_of(cfg, &d);
    vw_cu_kernel_smem t[2 * VW_CU_SMEM_ROWS];
    size_t n = vw_cu_attn_smem_table(d.hd, d.Hk ? d.Hq / d.Hk : 1, t);
    n += vw_cu_gdn_smem_table(d.dk, d.dv, t + n);
    for (size_t i = 0; i < n && i < cap; i++)
        rows[i] = vw_cuda_kernel_smem{t[i].name, t[i].bytes};
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
