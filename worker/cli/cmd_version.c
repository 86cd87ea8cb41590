/* cmd_version.c — `vela-worker version`: build facts and the devices this host offers. */
#include "commands.h"

#include <stdio.h>

#ifdef VW_HAVE_CUDA
#include "vw_cuda.h"
#endif

int vw_cmd_version(int argc, char **argv) {
    (void)argc;
    (void)argv;
    printf("vela-worker 0.1.0\n");
#ifdef VW_HAVE_CUDA
    char name[256] = "";
    int n = vw_cuda_device_count(name, sizeof name);
    printf("cuda: built; %d device(s)%s%s\n", n, n ? ": " : "", n ? name : "");
#else
    printf("cuda: not built\n");
#endif
    return 0;
}
