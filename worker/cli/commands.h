/* commands.h — the vela-worker subcommands. Each takes argc/argv after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit code.
 * Each lives in its own worker/cli/cmd_<name>.c and is listed in main.c's table. */
#ifndef VW_COMMANDS_H
#define VW_COMMANDS_H

int vw_cmd_version(int argc, char **argv);
int vw_cmd_broker(int argc, char **argv);
int vw_cmd_run(int argc, char **argv);
int vw_cmd_replay(int argc, char **argv);
int vw_cmd_eval(int argc, char **argv);
int vw_cmd_forward(int argc, char **argv);
int vw_cmd_tokenize(int argc, char **argv);
int vw_cmd_plan(int argc, char **argv);
int vw_cmd_score(int argc, char **argv);
int vw_cmd_bundle(int argc, char **argv);

#endif
