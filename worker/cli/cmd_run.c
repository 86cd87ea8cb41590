/* cmd_run.c — `vela-worker run --config FILE`: the Kafka worker (worker.h) with
 * its processor, metrics endpoint and signal handling. */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
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

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker run --config FILE\n"
               "  Consumes topics.input in the kafka group, answers every request record with\n"
               "  one result record, commits offsets after delivery. VELA_<SECTION>_<KEY>\n"
               "  overrides the file; relative paths in the file are from its directory.\n"
               "  SIGTERM/SIGINT: stop taking records, answer those in flight within\n"
               "  shutdown.grace_ms, commit, exit; a second signal stops at once (what is\n"
               "  left unanswered is not committed: the group answers it).\n"
               "  Exit 0: stopped, every record in flight answered; 3: stopped at the end of\n"
               "  shutdown.grace_ms with records left unanswered; 128+N: stopped at once by a\n"
               "  second signal N (130 SIGINT, 143 SIGTERM); 2: a configuration error (the\n"
               "  file, a VELA_* variable, a librdkafka property its clients refuse);\n"
               "  1: any other failure (docs/worker.md \"Exit status\").\n");
}

/* A start-up error, in the voice of the configuration's own errors
 * ("SOURCE: KEY: reason", plain, before any log line) and, but for those, its
 * type (manifest_mismatch, missing_file, ...); returns rc. */
static int start_error(const char *where, const vw_err *err, int rc) {
    bool config = !strcmp(err->type, "config_invalid");
    fprintf(stderr, "vela-worker run: %s%s%s%s%s%s\n", where ? where : "", where ? ": " : "",
            err->msg, config ? "" : " (", config ? "" : err->type, config ? "" : ")");
    return rc;
}

/* The exit status of a stop (docs/worker.md "Exit status"). */
static int stop_status(const vw_worker *w) {
    vw_worker_stop_report r;
    vw_worker_stop_report_get(w, &r);
    if (r.end == VW_STOP_AT_ONCE)
        return 128 + (vw_cli_stop_signal() ? vw_cli_stop_signal() : SIGTERM);
    return r.unanswered ? 3 : 0;
}

/* Config, log, metrics endpoint and processor; the worker itself runs in run(). */
static int run(const vw_config *cfg, const vw_log *log, volatile sig_atomic_t *stop) {
    vw_err err = {0};
    vw_metrics *metrics = vw_metrics_new();
    vw_processor *proc = NULL;
    vw_worker *w = NULL;
    int rc = 1, port = -1;
    char where[300];
    if (!metrics) {
        fprintf(stderr, "vela-worker run: out of memory\n");
        return 1;
    }
    /* librdkafka's checks that wait for a client (SSL files, SASL) come
     * before the model loads: a config error, exit 2 (worker.h). Its own
     * lines (the SSL reasons name the file) are plain text: the JSON log
     * starts after the start-up errors. */
    vw_log plain = {.level = log->level, .format = VW_LOG_TEXT, .out = log->out};
    if (vw_worker_check(cfg, &plain, false, &err)) {
        rc = start_error(NULL, &err, err.status == VW_EINVAL ? 2 : 1);
        goto done;
    }
    if (cfg->metrics.listen[0] && vw_metrics_serve(metrics, cfg->metrics.listen, &port, &err)) {
        vw_config_where(cfg, "metrics", "listen", where, sizeof where);
        rc = start_error(where, &err, err.status == VW_EINVAL ? 2 : 1);
        goto done;
    }
    if (vw_processor_open(cfg, log, &proc, &err)) {
        rc = start_error(NULL, &err,
                         err.status == VW_EINVAL && !strcmp(err.type, "config_invalid") ? 2 : 1);
        goto done;
    }
    if (vw_worker_new(cfg, log, proc, metrics, &w, &err)) {
        rc = start_error(NULL, &err, err.status == VW_EINVAL ? 2 : 1);
        goto done;
    }
    /* The log starts here: every start-up error above is a plain line. */
    if (port >= 0)
        VW_LOG(log, VW_LOG_INFO, "run", "metrics listening port=%d listen=%s", port,
               cfg->metrics.listen);
    if (vw_worker_run(w, stop, &err)) {
        VW_LOG(log, VW_LOG_ERROR, "run", "%s type=%s at=%s", err.msg, err.type, err.where);
        goto done;
    }
    rc = stop_status(w);
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
    int rc = run(cfg, &log, vw_cli_stop_flag());
    vw_config_free(cfg);
    return rc;
}
