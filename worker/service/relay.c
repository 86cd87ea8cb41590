/* relay.c — the TCP relay of `vela-worker broker --port` (see relay.h): one
 * thread polls the stop pipe, the listening socket and both sockets of every
 * connection, and moves bytes through a buffer per direction. */
#include "relay.h"
#include "util/reserve.h"
#include "util/thread_name.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { HALF_BYTES = 65536 };

/* One direction: bytes read from one side, not yet written to the other. */
typedef struct half {
    char buf[HALF_BYTES];
    size_t off, len;
} half;

typedef struct pair {
    int fd[2]; /* 0: the client, 1: the target */
    half h[2]; /* h[d]: read from fd[d], to be written to fd[1 - d] */
} pair;

struct vw_relay {
    int lfd, stop[2];
    struct sockaddr_in target;
    pthread_t thread;
    bool started;
    pair **pairs;
    size_t n, cap;
};

static void pair_free(pair *p) {
    close(p->fd[0]);
    close(p->fd[1]);
    free(p);
}

/* A new client: connects it to the target (on loopback at once) and keeps the
 * pair; on any failure the client is dropped (it sees a closed connection). */
static void accept_one(vw_relay *r) {
    int c = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0)
        return;
    int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    pair *p = NULL;
    (void)vw_reserve((void **)&r->pairs, &r->cap, r->n + 1, sizeof *r->pairs); /* else n == cap */
    if (t < 0 || r->n == r->cap ||
        connect(t, (const struct sockaddr *)&r->target, sizeof r->target) ||
        fcntl(t, F_SETFL, fcntl(t, F_GETFL) | O_NONBLOCK) || !(p = calloc(1, sizeof *p))) {
        close(c);
        if (t >= 0)
            close(t);
        return;
    }
    p->fd[0] = c;
    p->fd[1] = t;
    r->pairs[r->n++] = p;
}

/* Moves what the poll events of a pair's two sockets allow; false once a side
 * closed or failed (the pair is then dropped, both sockets closed). */
static bool pump(pair *p, const struct pollfd ev[2]) {
    for (int d = 0; d < 2; d++) {
        half *h = &p->h[d];
        if (!h->len && (ev[d].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = recv(p->fd[d], h->buf, sizeof h->buf, 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return false;
            h->off = 0;
            h->len = n > 0 ? (size_t)n : 0;
        }
        if (h->len) {
            ssize_t n = send(p->fd[1 - d], h->buf + h->off, h->len, MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return false;
            if (n > 0) {
                h->off += (size_t)n;
                h->len -= (size_t)n;
            }
        }
    }
    return true;
}

static void *relay_main(void *arg) {
    vw_relay *r = arg;
    struct pollfd *fds = NULL;
    size_t cap = 0;
    for (;;) {
        size_t nf = 2 + 2 * r->n;
        if (vw_reserve((void **)&fds, &cap, nf, sizeof *fds))
            break;
        fds[0] = (struct pollfd){.fd = r->stop[0], .events = POLLIN};
        fds[1] = (struct pollfd){.fd = r->lfd, .events = POLLIN};
        for (size_t i = 0; i < r->n; i++)
            for (int d = 0; d < 2; d++) {
                const pair *p = r->pairs[i];
                fds[2 + 2 * i + (size_t)d] =
                    (struct pollfd){.fd = p->fd[d],
                                    .events = (short)((p->h[d].len ? 0 : POLLIN) |
                                                      (p->h[1 - d].len ? POLLOUT : 0))};
            }
        if (poll(fds, (nfds_t)nf, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[0].revents)
            break; /* vw_relay_free */
        /* From the last pair down: a dropped pair takes the last one's place,
         * which was served already. */
        for (size_t i = r->n; i-- > 0;)
            if (!pump(r->pairs[i], &fds[2 + 2 * i])) {
                pair_free(r->pairs[i]);
                r->pairs[i] = r->pairs[--r->n];
            }
        if (fds[1].revents & POLLIN)
            accept_one(r);
    }
    free(fds);
    return NULL;
}

vw_status vw_relay_new(int port, const char *target, vw_relay **out, vw_err *err) {
    *out = NULL;
    char host[64];
    int tport = 0;
    const char *colon = strrchr(target, ':');
    if (port < 1 || port > 65535)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "--port %d: expected 1..65535", port);
    if (!colon || (size_t)(colon - target) >= sizeof host || sscanf(colon + 1, "%d", &tport) != 1)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "relay target '%s': want a.b.c.d:port",
                       target);
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = 0;
    vw_relay *r = calloc(1, sizeof *r);
    if (!r)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "relay");
    r->lfd = r->stop[0] = r->stop[1] = -1;
    r->target.sin_family = AF_INET;
    r->target.sin_port = htons((uint16_t)tport);
    vw_status st = VW_OK;
    if (inet_pton(AF_INET, host, &r->target.sin_addr) != 1) {
        st =
            VW_FAIL(err, VW_EINVAL, "bad_argument", "relay target '%s': want a.b.c.d:port", target);
        goto done;
    }
    struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->lfd < 0 || setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(r->lfd, (const struct sockaddr *)&me, sizeof me) || listen(r->lfd, 64)) {
        st = VW_FAIL(err, VW_EIO, "listen", "127.0.0.1:%d: %s", port, strerror(errno));
        goto done;
    }
    if (pipe2(r->stop, O_CLOEXEC)) {
        st = VW_FAIL(err, VW_EIO, "pipe", "relay stop pipe: %s", strerror(errno));
        goto done;
    }
    if (pthread_create(&r->thread, NULL, relay_main, r)) {
        st = VW_FAIL(err, VW_EIO, "thread", "cannot start the relay thread");
        goto done;
    }
    vw_thread_name(r->thread, "vw-relay", -1);
    r->started = true;
    *out = r;
    r = NULL;
done:
    vw_relay_free(r);
    return st;
}

void vw_relay_free(vw_relay *r) {
    if (!r)
        return;
    if (r->started) {
        char b = 0;
        ssize_t w = write(r->stop[1], &b, 1);
        (void)w; /* a full pipe is readable too */
        pthread_join(r->thread, NULL);
    }
    for (size_t i = 0; i < r->n; i++)
        pair_free(r->pairs[i]);
    free(r->pairs);
    for (int i = 0; i < 2; i++)
        if (r->stop[i] >= 0)
            close(r->stop[i]);
    if (r->lfd >= 0)
        close(r->lfd);
    free(r);
}
