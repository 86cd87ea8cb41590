/* cli_args.c — see cli_args.h. */
#include "cli_args.h"

#include <getopt.h>
#include <string.h>

bool vw_cli_is_help(const char *arg) {
    return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int vw_cli_usage_error(const char *cmd, const char *why, vw_cli_usage_fn usage) {
    fprintf(stderr, "vela-worker %s: %s\n", cmd, why);
    if (usage)
        usage(stderr);
    return 2;
}

int vw_cli_bad_arg(const char *cmd, const char *arg, vw_cli_usage_fn usage) {
    char why[300];
    snprintf(why, sizeof why, "%s '%.200s'",
             arg[0] == '-' ? "unknown option" : "unexpected argument", arg);
    return vw_cli_usage_error(cmd, why, usage);
}

int vw_cli_needs_value(const char *cmd, const char *opt, vw_cli_usage_fn usage) {
    char why[300];
    snprintf(why, sizeof why, "option '%.200s' needs a value", opt);
    return vw_cli_usage_error(cmd, why, usage);
}

const char *vw_cli_value(const char *cmd, int argc, char **argv, int *i, vw_cli_usage_fn usage) {
    if (*i + 1 >= argc) {
        vw_cli_needs_value(cmd, argv[*i], usage);
        return NULL;
    }
    return argv[++*i];
}

int vw_cli_getopt_error(const char *cmd, int c, char *const *argv, vw_cli_usage_fn usage) {
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    char opt[300];
    if (c == ':') {
        /* "--x" (or "-x") whose value is missing: the name without "=..." */
        snprintf(opt, sizeof opt, "%.*s", (int)strcspn(arg, "="), arg);
        return vw_cli_needs_value(cmd, opt, usage);
    }
    if (optopt && arg[0] == '-' && arg[1] != '-') /* a short option, maybe in a cluster */
        snprintf(opt, sizeof opt, "-%c", optopt);
    else
        snprintf(opt, sizeof opt, "%.*s", (int)strcspn(arg, "="), arg);
    return vw_cli_bad_arg(cmd, opt, usage);
}
