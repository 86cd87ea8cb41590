/* httpd.h — the HTTP server under the metrics endpoint: libmicrohttpd in its
 * external epoll mode, run by a thread of its own, with a guard on the
 * connections that have not sent a request yet (docs/operations.md "Metrics and
 * health").
 *
 * The guard (issue 35 finding 5: 300 connections from one address sending one
 * header byte a second kept /healthz failing, each byte resetting the idle
 * timer and 32 per address held): a connection is "waiting" from its accept,
 * and again from the end of each response, until the access handler sees a
 * complete request head. A waiting connection is closed
 *  - VW_HTTPD_HEADER_DEADLINE_MS after it started waiting, whatever it sent
 *    (a deadline per request, not an idle timer a byte resets);
 *  - at once when more than VW_HTTPD_MAX_WAITING connections wait: the oldest
 *    goes, so a new connection is always taken and a client that sends its
 *    request at once (a probe, a scrape) is answered; the rest of the
 *    VW_HTTPD_MAX_CONNECTIONS slots are a reserve for requests being answered.
 * There is no per-address limit: a probe from the flooding address is
 * answered beside the flood.
 *
 * Closing is shutdown(2) on the connection's socket from the server's own
 * thread (callbacks and the sweep run there and nowhere else), so the socket
 * is still libmicrohttpd's: it sees the end of the stream and closes it.
 *
 * Ownership: vw_httpd_start returns a server the caller stops with
 * vw_httpd_stop (NULL: no-op), which joins the thread. Thread-safety: the
 * handler runs on the server's thread; start/stop from one thread. Errors:
 * VW_EIO when the address cannot be bound, VW_ENOMEM.
 */
#ifndef VW_HTTPD_H
#define VW_HTTPD_H

#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

#include "vw_status.h"

/* A request's head must arrive within this long of the connection's start or
 * of the previous response's end. */
#define VW_HTTPD_HEADER_DEADLINE_MS 2000
/* The most connections waiting for a request head at once (the oldest beyond
 * it is closed). */
#define VW_HTTPD_MAX_WAITING 64
/* The most connections at once (libmicrohttpd's limit). */
#define VW_HTTPD_MAX_CONNECTIONS 256
/* A connection silent this long while answered (a client that does not read)
 * is closed by libmicrohttpd. */
#define VW_HTTPD_IDLE_TIMEOUT_S 2

typedef struct vw_httpd vw_httpd;

/* Serves addr (IPv4 or IPv6), each complete request to handler(cls, ...) on
 * the server's thread. *port: the bound port (addr may name port 0). */
vw_status vw_httpd_start(const struct sockaddr *addr, MHD_AccessHandlerCallback handler, void *cls,
                         vw_httpd **out, int *port, vw_err *err);
/* Stops serving, closes every connection, joins the thread, frees. */
void vw_httpd_stop(vw_httpd *h);

#endif
