/* relay.h — a fixed TCP port on 127.0.0.1 that forwards every connection to
 * another address: `vela-worker broker --port N` (librdkafka's mock cluster
 * binds kernel-chosen ports, and a config such as config/worker.example.yaml
 * names 127.0.0.1:9092). A Kafka client bootstraps through the relay; the
 * metadata it gets back names the mock brokers' own addresses, which it then
 * connects to directly, so only bootstrap connections pass here.
 *
 * Ownership: vw_relay_new returns a relay the caller frees with
 * vw_relay_free, which closes every connection. Threads: one of its own
 * serves every connection (poll, non-blocking sockets, 64 KiB per
 * direction); the functions are called from one thread. Errors: VW_EINVAL for
 * a bad port or target, VW_EIO when the port cannot be bound (in use), VW_ENOMEM.
 */
#ifndef VW_RELAY_H
#define VW_RELAY_H

#include "vw_status.h"

typedef struct vw_relay vw_relay;

/* Listens on 127.0.0.1:port (1..65535) and forwards to target, an IPv4
 * "a.b.c.d:port" (the mock's first bootstrap address). */
vw_status vw_relay_new(int port, const char *target, vw_relay **out, vw_err *err);

/* Stops the thread, closes the port and every connection; NULL is a no-op. */
void vw_relay_free(vw_relay *r);

#endif
