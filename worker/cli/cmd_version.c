/* cmd_version.c — `vela-worker version`: build facts and the devices this host offers. */
#include "cli_args.h"
#include "commands.h"

#include <stdio.h>

#include "kafka_conf.h"

#ifdef VW_HAVE_CUDA
#include "vw_cuda.h"
#endif

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker version (or vela-worker --version)\n"
               "  prints the version, the librdkafka loaded and built against, the librdkafka\n"
               "  workarounds in force and the CUDA devices this build sees\n");
}

int vw_cmd_version(int argc, char **argv) {
    if (argc > 1 && vw_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (argc > 1)
        return vw_cli_bad_arg("version", argv[1], usage);
    char kv[128];
    vw_kafka_versions(kv, sizeof kv);
    printf("vela-worker 0.1.0\n");
    printf("librdkafka: %s\n", kv);
    size_t n_wa;
    const vw_kafka_workaround *wa = vw_kafka_workarounds(&n_wa);
    printf("librdkafka workarounds (docs/operations.md \"librdkafka versions\"):\n");
    for (size_t i = 0; i < n_wa; i++) {
        char when[32] = "open";
        if (wa[i].fixed)
            snprintf(when, sizeof when, "fixed in %s", wa[i].fixed);
        printf("  #%d %-16s %s\n", wa[i].issue, when,
               vw_kafka_workaround_on(&wa[i]) ? "on" : "off");
    }
#ifdef VW_HAVE_CUDA
    char name[256] = "";
    int n = vw_cuda_device_count(name, sizeof name);
    printf("cuda: built; %d device(s)%s%s\n", n, n ? ": " : "", n ? name : "");
#else
    printf("cuda: not built\n");
#endif
    return 0;
}
