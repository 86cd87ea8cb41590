/* cli_args.h — how every subcommand words a command line it cannot use: the
 * option or argument named, the usage after it on stderr, exit 2. --help and
 * -h print the usage on stdout and exit 0 (each command's own usage()).
 * Thread-safety: the main thread, before anything starts. Cannot fail. */
#ifndef VW_CLI_ARGS_H
#define VW_CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

/* The usage printer every cmd_<name>.c has. */
typedef void (*vw_cli_usage_fn)(FILE *f);

/* arg is --help or -h. */
bool vw_cli_is_help(const char *arg);

/* "vela-worker CMD: unknown option '--x'" (an argument that starts with '-'),
 * or "unexpected argument 'x'", then the usage on stderr. Returns 2. */
int vw_cli_bad_arg(const char *cmd, const char *arg, vw_cli_usage_fn usage);

/* "vela-worker CMD: option '--x' needs a value", then the usage. Returns 2. */
int vw_cli_needs_value(const char *cmd, const char *opt, vw_cli_usage_fn usage);

/* For hand-parsed options: the value after option argv[*i] (*i moves on to
 * it), or NULL when there is none (said with vw_cli_needs_value: return 2). */
const char *vw_cli_value(const char *cmd, int argc, char **argv, int *i, vw_cli_usage_fn usage);

/* A line of its own ("vela-worker CMD: WHY"), then the usage. Returns 2. */
int vw_cli_usage_error(const char *cmd, const char *why, vw_cli_usage_fn usage);

/* For getopt_long run with opterr = 0 and an optstring that starts with ':'
 * (so a missing value returns ':'): c is what it returned ('?' or ':'); names
 * argv[optind - 1]. Returns 2. */
int vw_cli_getopt_error(const char *cmd, int c, char *const *argv, vw_cli_usage_fn usage);

#endif
