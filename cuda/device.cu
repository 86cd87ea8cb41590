// device.cu — device discovery for `--device auto` (see vw_cuda.h).
#include "vw_cuda.h"

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
