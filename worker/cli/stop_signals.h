/* stop_signals.h — how the long-running subcommands (run, replay, broker)
 * learn that they should stop.
 * Owns the one mutable global docs/style.md allows a signal handler: the stop
 * flag (how many stop signals came, and the last one's number).
 * Thread-safety: install once, from the main thread, before starting threads
 * that must not be killed by the signals; the handler runs on whichever
 * thread the kernel gives a signal to (librdkafka's and OpenBLAS's threads do
 * not block them), so it may only do async-signal-safe work. Cannot fail. */
#ifndef VW_STOP_SIGNALS_H
#define VW_STOP_SIGNALS_H

#include <signal.h>

/* SIGTERM and SIGINT call handler (a subcommand with its own way to stop:
 * broker's pipe). */
void vw_cli_on_stop(void (*handler)(int));

/* SIGTERM and SIGINT count into the returned flag (worker.h's stop): 0 until
 * the first, 1 after it, 2 after a second one (stop at once); it stays at 2. */
volatile sig_atomic_t *vw_cli_stop_flag(void);

/* The number of the last stop signal (SIGTERM, SIGINT); 0 before one. */
int vw_cli_stop_signal(void);

#endif
