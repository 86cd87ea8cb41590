/* bench_bundle.c — writes a random-weight Vela 2.0 package of a named shape
 * for the benchmarks (core/model/random_bundle.h): no Python needed.
 *   bench_bundle --shape ceiling|0.8b|4b|9b|4b-slice|9b-slice --out DIR [--seed N]
 *                [--template DIR]
 * Prints one JSON line: the directory, the shape, whether it was reused and the
 * seconds taken. Exit 0, or 1 with the error on stderr. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/random_bundle.h"

int main(int argc, char **argv) {
    static const struct option opts[] = {{"shape", required_argument, 0, 's'},
                                         {"out", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 'n'},
                                         {"template", required_argument, 0, 't'},
                                         {0, 0, 0, 0}};
    const char *shape = "ceiling", *out = NULL, *tmpl = VW_SOURCE_DIR "/fixtures/tiny-vela";
    unsigned long long seed = 20261204;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        if (c == 's')
            shape = optarg;
        else if (c == 'o')
            out = optarg;
        else if (c == 'n')
            seed = strtoull(optarg, NULL, 10);
        else if (c == 't')
            tmpl = optarg;
        else
            return 2;
    }
    if (!out) {
        fprintf(stderr, "usage: bench_bundle --shape SHAPE --out DIR [--seed N] [--template DIR]\n"
                        "  SHAPE: " VW_RANDOM_SHAPES "\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool reused = false;
    vw_err err = {0};
    if (vw_random_bundle_write(out, shape, tmpl, seed, &reused, &err)) {
        fprintf(stderr, "bench_bundle: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf(
        "{\"event\":\"bundle\",\"dir\":\"%s\",\"shape\":\"%s\",\"reused\":%s,\"seconds\":%.2f}\n",
        out, shape, reused ? "true" : "false",
        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
