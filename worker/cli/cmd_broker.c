/* cmd_broker.c — `vela-worker broker`: hosts librdkafka's mock cluster on
 * 127.0.0.1 for tests and demos (see broker.h), prints its bootstrap string as
 * the first line of stdout, and runs until SIGTERM/SIGINT (or, with --control,
 * until stdin closes). With --port N the bootstrap string is 127.0.0.1:N, a
 * relay to the first mock broker (relay.h). */
#include "service/broker.h"
#include "service/relay.h"
#include "cli_args.h"
#include "commands.h"
#include "stop_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker broker [--topics name:parts,...] [--brokers N] [--port N]\n"
               "                          [--bootstrap-file FILE] [--control]\n"
               "                          [--group-timeouts SESSION_MS,HEARTBEAT_MS]\n"
               "  --topics          topics to create (default requests:4,results:4,"
               "requests.dlq:1)\n"
               "  --brokers         number of mock brokers (default 1)\n"
               "  --port            bootstrap on 127.0.0.1:N (e.g. 9092, what\n"
               "                    config/worker.example.yaml names) instead of the\n"
               "                    mock's own random port\n"
               "  --bootstrap-file  also write the bootstrap string to FILE\n"
               "  --group-timeouts  session timeout and heartbeat interval of KIP-848 groups\n"
               "                    (group.protocol=consumer; librdkafka 2.12 or later)\n"
               "  --control         read control commands from stdin, one a line, and\n"
               "                    exit when stdin closes:\n"
               "                      topic NAME PARTITIONS     create a topic\n"
               "                      err APIKEY COUNT CODE     the next COUNT requests of\n"
               "                        APIKEY (Produce 0, Fetch 1, OffsetCommit 8, ...)\n"
               "                        fail with CODE (-195: a disconnect)\n"
               "                      down BROKER / up BROKER   take a broker down, back up\n"
               "                      leader TOPIC PART BROKER  move a partition's leader\n"
               "                      quit                      stop\n");
}

/* SIGTERM/SIGINT write a byte here (the signal-handler exception to "no
 * mutable globals", as stop_signals.c's flag). A handler, not a blocked signal read
 * through signalfd: OpenBLAS starts its threads when the library loads, before
 * main could block anything, and a signal the kernel gave one of them killed
 * the process (exit 143) instead of stopping the broker. */
static int stop_pipe = -1;

static void on_signal(int sig) {
    (void)sig;
    char c = 's';
    if (write(stop_pipe, &c, 1) < 0) {
        /* the pipe is full: a stop is already pending */
    }
}

/* Written to FILE.tmp then renamed, so a reader never sees half a line. */
static int write_bootstrap(const char *path, const char *boot) {
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp)
        return -1;
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (f) {
        int ok = fprintf(f, "%s\n", boot) > 0;
        if (fclose(f) == 0 && ok && rename(tmp, path) == 0)
            rc = 0;
    }
    free(tmp);
    return rc;
}

/* Serves signals and (optionally) control lines until told to stop. */
static int serve(vw_broker *b, int sfd, int control) {
    char line[1024];
    for (;;) {
        struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
        if (poll(fds, control ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("vela-worker broker: poll");
            return 1;
        }
        if (fds[0].revents)
            return 0; /* SIGTERM or SIGINT */
        if (control && fds[1].revents) {
            if (!fgets(line, sizeof line, stdin))
                return 0; /* stdin closed: done */
            line[strcspn(line, "\r\n")] = 0;
            if (!line[0] || !strcmp(line, "quit")) {
                if (line[0])
                    return 0;
                continue;
            }
            vw_err err = {0};
            if (vw_broker_control(b, line, &err))
                fprintf(stderr, "vela-worker broker: %s\n", err.msg);
            else
                printf("ok %s\n", line);
            fflush(stdout);
        }
    }
}

int vw_cmd_broker(int argc, char **argv) {
    static const struct option opts[] = {{"topics", required_argument, 0, 't'},
                                         {"brokers", required_argument, 0, 'b'},
                                         {"bootstrap-file", required_argument, 0, 'f'},
                                         {"control", no_argument, 0, 'c'},
                                         {"group-timeouts", required_argument, 0, 'g'},
                                         {"port", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *topics = "requests:4,results:4,requests.dlq:1", *file = NULL;
    int n_brokers = 1, control = 0, c, rc = 1, sfd = -1, g_session = 0, g_heartbeat = 0, port = 0;
    vw_broker *b = NULL;
    vw_relay *relay = NULL;
    char boot[512];
    vw_err err = {0};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            topics = optarg;
            break;
        case 'b':
            n_brokers = atoi(optarg);
            break;
        case 'f':
            file = optarg;
            break;
        case 'p': {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < 1 || v > 65535) {
                fprintf(stderr, "vela-worker broker: --port %s: expected 1..65535\n", optarg);
                return 2;
            }
            port = (int)v;
            break;
        }
        case 'c':
            control = 1;
            break;
        case 'g':
            if (sscanf(optarg, "%d,%d", &g_session, &g_heartbeat) != 2)
                return vw_cli_usage_error("broker",
                                          "--group-timeouts wants SESSION_MS,HEARTBEAT_MS", usage);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return vw_cli_getopt_error("broker", c, argv, usage);
        }
    }
    if (optind != argc)
        return vw_cli_bad_arg("broker", argv[optind], usage);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
        perror("vela-worker broker: pipe");
        goto done;
    }
    sfd = fds[0];
    stop_pipe = fds[1];
    vw_cli_on_stop(on_signal);
    if (vw_broker_new(n_brokers, &b, &err) ||
        (*topics && vw_broker_create_topics(b, topics, &err)) ||
        (g_session && vw_broker_group_timeouts(b, g_session, g_heartbeat, &err))) {
        fprintf(stderr, "vela-worker broker: %s\n", err.msg);
        goto done;
    }
    snprintf(boot, sizeof boot, "%s", vw_broker_bootstraps(b));
    if (port) {
        boot[strcspn(boot, ",")] = 0; /* the first broker: metadata names the others */
        if (vw_relay_new(port, boot, &relay, &err)) {
            fprintf(stderr, "vela-worker broker: %s\n", err.msg);
            goto done;
        }
        snprintf(boot, sizeof boot, "127.0.0.1:%d", port);
    }
    printf("%s\n", boot);
    fflush(stdout);
    if (file && write_bootstrap(file, boot)) {
        fprintf(stderr, "vela-worker broker: cannot write %s: %s\n", file, strerror(errno));
        goto done;
    }
    rc = serve(b, sfd, control);
done:
    vw_relay_free(relay);
    vw_broker_free(b);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (sfd >= 0)
        close(sfd);
    if (stop_pipe >= 0)
        close(stop_pipe);
    stop_pipe = -1;
    return rc;
}
