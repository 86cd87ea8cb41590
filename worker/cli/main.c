/* main.c — vela-worker: dispatches to a subcommand (see commands.h). */
#include "commands.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"version", vw_cmd_version, "build facts and available devices"},
    {"broker", vw_cmd_broker, "a mock Kafka cluster on 127.0.0.1 (tests, demos)"},
    {"run", vw_cmd_run, "the Kafka worker: requests in, results out (--config FILE)"},
    {"replay", vw_cmd_replay, "a topic range through the processor, no commits (evaluation)"},
    {"eval", vw_cmd_eval, "metrics of replay results vs labels, A/B vs a baseline replay"},
    {"forward", vw_cmd_forward, "backbone hidden states of token ids (stdin JSON)"},
    {"tokenize", vw_cmd_tokenize, "token ids (and offsets) of JSON Lines text (stdin)"},
    {"plan", vw_cmd_plan, "token plan (or rejection) of one request JSON (stdin)"},
    {"score", vw_cmd_score, "System One envelopes of requests (stdin), end to end"},
    {"bundle", vw_cmd_bundle, "bundle verify DIR: every file checked, digest, shape, memory"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`vela-worker <command> --help` describes a command; `vela-worker --version`\n"
               "is `vela-worker version`.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return vw_cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "vela-worker: unknown %s '%s'\n", argv[1][0] == '-' ? "option" : "command",
            argv[1]);
    usage(stderr);
    return 2;
}
