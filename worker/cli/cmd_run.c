/* cmd_run.c — `vela-worker run --config FILE`: the Kafka worker (worker.h) with
 * its processor, metrics endpoint and signal handling. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli_args.h"
#include "commands.h"
#include "stop_signals.h"
#include "service/config.h"
#include "service/log.h"
#include "service/metrics.h"
#include "processors.h"
#include "worker.h"

extern char **environ;

/* The one mutable global docs/style.md allows: set by SIGTERM/SIGINT. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker run --config FILE\n"
               "  Consumes topics.input in the kafka group, answers every request record with\n"
               "  one result record, commits offsets after delivery. SIGTERM/SIGINT drain and\n"
               "  exit 0 within shutdown.grace_ms. VELA_<SECTION>_<KEY> overrides the file.\n"
               "  Exit 2: a configuration error (the file, or a librdkafka property its\n"
               "  clients refuse, checked before the model loads); 1: any other failure.\n");
}

/* Config, log, metrics endpoint and processor; the worker itself runs in run(). */
static int run(const vw_config *cfg, const vw_log *log) {
    vw_err err = {0};
    vw_metrics *metrics = vw_metrics_new();
    vw_processor *proc = NULL;
    vw_worker *w = NULL;
    int rc = 1, port = -1;
    if (!metrics) {
        VW_LOG(log, VW_LOG_ERROR, "run", "out of memory");
        return 1;
    }
    /* librdkafka's checks that wait for a client (SSL files, SASL) come
     * before the model loads: a config error, exit 2 (worker.h). */
    if (vw_worker_check(cfg, log, false, &err)) {
        rc = err.status == VW_EINVAL ? 2 : 1;
        goto fail;
    }
    if (cfg->metrics.listen[0]) {
        if (vw_metrics_serve(metrics, cfg->metrics.listen, &port, &err))
            goto fail;
        VW_LOG(log, VW_LOG_INFO, "run", "metrics listening port=%d listen=%s", port,
               cfg->metrics.listen);
    }
    if (vw_processor_open(cfg, log, &proc, &err)) {
        rc = err.status == VW_EINVAL && !strcmp(err.type, "config_invalid") ? 2 : 1;
        goto fail;
    }
    if (vw_worker_new(cfg, log, proc, metrics, &w, &err))
        goto fail;
    if (vw_worker_run(w, &stop_requested, &err))
        goto fail;
    VW_LOG(log, VW_LOG_INFO, "run", "stopped cleanly");
    rc = 0;
    goto done;
fail:
    VW_LOG(log, VW_LOG_ERROR, "run", "%s type=%s at=%s", err.msg, err.type, err.where);
done:
    vw_worker_free(w);
    vw_processor_free(proc);
    vw_metrics_free(metrics);
    return rc;
}

int vw_cmd_run(int argc, char **argv) {
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *path = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:h", opts, NULL)) != -1) {
        if (c == 'c') {
            path = optarg;
        } else if (c == 'h') {
            usage(stdout);
            return 0;
        } else {
            return vw_cli_getopt_error("run", c, argv, usage);
        }
    }
    if (optind != argc)
        return vw_cli_bad_arg("run", argv[optind], usage);
    if (!path)
        return vw_cli_usage_error("run", "--config FILE is required", usage);
    vw_config *cfg = NULL;
    vw_err err = {0};
    if (vw_config_load(path, environ, &cfg, &err)) {
        fprintf(stderr, "vela-worker run: %s\n", err.msg);
        return 2;
    }
    vw_log log = {.level = cfg->log.level, .format = cfg->log.format, .out = stderr};
    vw_cli_on_stop(on_signal);
    int rc = run(cfg, &log);
    vw_config_free(cfg);
    return rc;
}
