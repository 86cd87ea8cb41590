/* stop_signals.h — how the long-running subcommands (run, replay, broker)
 * learn that they should stop.
 * Thread-safety: call once, from the main thread, before starting threads
 * that must not be killed by the signals; the handler runs on whichever
 * thread the kernel gives a signal to (librdkafka's and OpenBLAS's threads do
 * not block them), so it may only do async-signal-safe work. Cannot fail. */
#ifndef VW_STOP_SIGNALS_H
#define VW_STOP_SIGNALS_H

/* SIGTERM and SIGINT call handler. */
void vw_cli_on_stop(void (*handler)(int));

#endif
