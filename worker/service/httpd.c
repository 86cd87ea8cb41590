/* httpd.c — libmicrohttpd run by its own thread, with the waiting-connection
 * guard (see httpd.h). Owns the daemon, the thread and one record per open
 * connection; never renders a response (the handler does). */
#include "httpd.h"
#include "clock.h"
#include "util/thread_name.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

/* One open connection (its socket context). Touched only on the server's
 * thread: by the callbacks and the sweep between two MHD_run_wait calls. */
typedef struct conn {
    struct conn *prev, *next;
    int fd;
    int64_t since_ms; /* when it started waiting */
    bool waiting;     /* no complete request head since since_ms */
    bool closing;     /* shut down by the guard; libmicrohttpd closes it next */
} conn;

struct vw_httpd {
    struct MHD_Daemon *d;
    MHD_AccessHandlerCallback handler;
    void *cls;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    conn *head; /* open connections, oldest first */
};

/* The longest the loop sleeps: the deadline is kept to within this. */
enum { TICK_MS = 100 };

static void close_waiting(conn *c) {
    shutdown(c->fd, SHUT_RDWR); /* libmicrohttpd sees the end and closes it */
    c->closing = true;
}

/* Closes waiting connections past the deadline, then the oldest waiting ones
 * beyond VW_HTTPD_MAX_WAITING. */
static void sweep(vw_httpd *h) {
    int64_t now = vw_now_ms();
    size_t waiting = 0;
    for (conn *c = h->head; c; c = c->next) {
        if (!c->waiting || c->closing)
            continue;
        if (now - c->since_ms >= VW_HTTPD_HEADER_DEADLINE_MS)
            close_waiting(c);
        else
            waiting++;
    }
    while (waiting > VW_HTTPD_MAX_WAITING) {
        conn *oldest = NULL;
        for (conn *c = h->head; c; c = c->next)
            if (c->waiting && !c->closing && (!oldest || c->since_ms < oldest->since_ms))
                oldest = c;
        close_waiting(oldest);
        waiting--;
    }
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **ctx,
                          enum MHD_ConnectionNotificationCode toe) {
    vw_httpd *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn *c = *ctx;
        if (!c)
            return;
        if (c->prev)
            c->prev->next = c->next;
        else
            h->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        free(c);
        *ctx = NULL;
        return;
    }
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    conn *c = info ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        /* Untracked: libmicrohttpd's idle timeout still closes it. */
        *ctx = NULL;
        return;
    }
    c->fd = info->connect_fd;
    c->since_ms = vw_now_ms();
    c->waiting = true;
    conn **tail = &h->head;
    while (*tail) {
        c->prev = *tail;
        tail = &(*tail)->next;
    }
    *tail = c;
    *ctx = c;
    sweep(h); /* room for this one: the oldest waiting goes */
}

static conn *conn_of(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* A complete request head: the connection no longer waits. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **state) {
    vw_httpd *h = cls;
    conn *c = conn_of(mc);
    if (c)
        c->waiting = false;
    return h->handler(h->cls, mc, url, method, version, upload, upload_len, state);
}

/* A request answered (or given up): a kept-alive connection waits again. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **state,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)state;
    (void)toe;
    conn *c = conn_of(mc);
    if (c && !c->waiting) {
        c->waiting = true;
        c->since_ms = vw_now_ms();
    }
}

static void *serve(void *arg) {
    vw_httpd *h = arg;
    while (!atomic_load(&h->stop)) {
        MHD_run_wait(h->d, TICK_MS);
        sweep(h);
    }
    return NULL;
}

vw_status vw_httpd_start(const struct sockaddr *addr, MHD_AccessHandlerCallback handler, void *cls,
                         vw_httpd **out, int *port, vw_err *err) {
    *out = NULL;
    vw_httpd *h = calloc(1, sizeof *h);
    if (!h)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "http server");
    h->handler = handler;
    h->cls = cls;
    /* External epoll mode: no FD_SETSIZE ceiling, and the loop below is the
     * only thread that touches connections. */
    unsigned flags = MHD_USE_EPOLL;
    if (addr->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)VW_HTTPD_IDLE_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)VW_HTTPD_MAX_CONNECTIONS,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    if (!h->d) {
        free(h);
        return VW_FAIL(err, VW_EIO, "metrics_listen", "cannot bind");
    }
    if (port) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
        *port = info ? info->port : -1;
    }
    if (pthread_create(&h->thread, NULL, serve, h)) {
        vw_httpd_stop(h);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "http server thread");
    }
    vw_thread_name(h->thread, "vw-httpd", -1);
    h->started = true;
    *out = h;
    return VW_OK;
}

void vw_httpd_stop(vw_httpd *h) {
    if (!h)
        return;
    atomic_store(&h->stop, true);
    if (h->started)
        pthread_join(h->thread, NULL);
    MHD_stop_daemon(h->d); /* closes every connection: their records go */
    while (h->head) {
        conn *c = h->head;
        h->head = c->next;
        free(c);
    }
    free(h);
}
