/* stop_signals.c — see stop_signals.h. */
#include "stop_signals.h"

#include <string.h>

/* The mutable globals docs/style.md allows a signal handler. */
static volatile sig_atomic_t stop_count, stop_signal;

static void count_stop(int sig) {
    stop_signal = sig;
    if (stop_count < 2)
        stop_count++;
}

void vw_cli_on_stop(void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

volatile sig_atomic_t *vw_cli_stop_flag(void) {
    vw_cli_on_stop(count_stop);
    return &stop_count;
}

int vw_cli_stop_signal(void) {
    return stop_signal;
}
