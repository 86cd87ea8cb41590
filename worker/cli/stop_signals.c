/* stop_signals.c — see stop_signals.h. */
#include "stop_signals.h"

#include <signal.h>
#include <string.h>

void vw_cli_on_stop(void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}
