/* test_metrics.c — the metrics endpoint stays answerable under connections
 * that never finish a request. Issue 27 item 8: 1,500 idle connections starved
 * /healthz for 10 s; issue 35 finding 5: 300 connections from the probe's own
 * address, each sending one header byte a second, kept /healthz and /readyz
 * failing for the whole flood (each byte reset the idle timer, 32 per address
 * held). The server runs in a child process (as in the worker: its own fd
 * table); the tests flood it and ask /healthz (and /readyz): answered beside
 * the flood, from the flooding address itself, because a connection waits for
 * its request head at most VW_HTTPD_HEADER_DEADLINE_MS and at most
 * VW_HTTPD_MAX_WAITING wait at once (the oldest closed first; httpd.h). The
 * bounds are generous (2 s; 90 % of probes), not timings. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service/httpd.h"
#include "service/metrics.h"

#define FLOOD 1500

/* The consumer_lag line of partition p in a rendered text, or -2 when there
 * is none. */
static long long lag_line(vw_metrics *m, int p) {
    size_t len;
    char *text = vw_metrics_render(m, &len), want[96];
    snprintf(want, sizeof want, "vela_worker_consumer_lag{topic=\"requests\",partition=\"%d\"} ",
             p);
    const char *at = strstr(text, want);
    long long v = at ? atoll(at + strlen(want)) : -2;
    free(text);
    return v;
}

/* consumer_lag from a statistics document shaped as librdkafka writes one
 * (STATISTICS.md; the fields rd_kafka_stats_emit_toppar prints): librdkafka's
 * own consumer_lag when it has one; -1 there (nothing committed by the group:
 * an empty partition, or one not answered yet) is the end offset less the log
 * start (issue 33 item 6: the gauge read -1 on empty partitions); an unknown
 * end leaves the partition out; only active partitions count. */
Test(metrics, consumer_lag_is_never_minus_one_with_a_known_end) {
    static const char stats[] =
        "{\"topics\":{\"requests\":{\"partitions\":{"
        /* committed 7 of 10: librdkafka's lag */
        "\"0\":{\"partition\":0,\"fetch_state\":\"active\",\"committed_offset\":7,"
        "\"lo_offset\":0,\"hi_offset\":10,\"ls_offset\":10,\"consumer_lag\":3},"
        /* empty, never committed */
        "\"1\":{\"partition\":1,\"fetch_state\":\"active\",\"committed_offset\":-1001,"
        "\"lo_offset\":0,\"hi_offset\":0,\"ls_offset\":0,\"consumer_lag\":-1},"
        /* six records after a retention cut at 4, nothing committed */
        "\"2\":{\"partition\":2,\"fetch_state\":\"active\",\"committed_offset\":-1001,"
        "\"lo_offset\":4,\"hi_offset\":10,\"ls_offset\":10,\"consumer_lag\":-1},"
        /* no fetch answered yet: the end is unknown */
        "\"3\":{\"partition\":3,\"fetch_state\":\"active\",\"committed_offset\":-1001,"
        "\"lo_offset\":-1001,\"hi_offset\":-1001,\"ls_offset\":-1001,\"consumer_lag\":-1},"
        /* not fetched by this member */
        "\"4\":{\"partition\":4,\"fetch_state\":\"none\",\"committed_offset\":-1001,"
        "\"lo_offset\":0,\"hi_offset\":5,\"ls_offset\":5,\"consumer_lag\":-1},"
        "\"-1\":{\"partition\":-1,\"fetch_state\":\"none\",\"consumer_lag\":-1}}}}}";
    vw_metrics *m = vw_metrics_new();
    cr_assert_not_null(m);
    vw_metrics_stats_json(m, stats, sizeof stats - 1);
    cr_assert_eq(lag_line(m, 0), 3);
    cr_assert_eq(lag_line(m, 1), 0, "an empty partition lags by nothing");
    cr_assert_eq(lag_line(m, 2), 6, "from the log start when nothing is committed");
    cr_assert_eq(lag_line(m, 3), -2, "no line while the end is unknown");
    cr_assert_eq(lag_line(m, 4), -2, "no line for a partition not fetched");
    vw_metrics_free(m);
}

typedef struct server {
    pid_t pid;
    int port;
    int stop; /* write end: closing it stops the child */
} server;

/* Forks a child serving metrics on 127.0.0.1 (any port); returns at once. */
static void serve(server *s) {
    int port_pipe[2], stop_pipe[2];
    cr_assert_eq(pipe(port_pipe), 0);
    cr_assert_eq(pipe(stop_pipe), 0);
    s->pid = fork();
    cr_assert_geq(s->pid, 0);
    if (s->pid == 0) {
        close(port_pipe[0]);
        close(stop_pipe[1]);
        vw_metrics *m = vw_metrics_new();
        int port = -1;
        if (!m || vw_metrics_serve(m, "127.0.0.1:0", &port, NULL))
            port = -1;
        if (write(port_pipe[1], &port, sizeof port) != sizeof port)
            _exit(1);
        char c;
        while (read(stop_pipe[0], &c, 1) > 0)
            ;
        vw_metrics_free(m);
        _exit(0);
    }
    close(port_pipe[1]);
    close(stop_pipe[0]);
    cr_assert_eq(read(port_pipe[0], &s->port, sizeof s->port), (ssize_t)sizeof s->port);
    close(port_pipe[0]);
    cr_assert_gt(s->port, 0, "the child could not serve metrics");
    s->stop = stop_pipe[1];
}

static void stop(server *s) {
    close(s->stop);
    int st = 0;
    cr_assert_eq(waitpid(s->pid, &st, 0), s->pid);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A non-blocking TCP connection from address `from` to 127.0.0.1:port. */
static int open_from(const char *from, int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert_geq(fd, 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &a.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0, "bind %s: %s", from,
                 strerror(errno));
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    int rc = connect(fd, (struct sockaddr *)&to, sizeof to);
    cr_assert(rc == 0 || errno == EINPROGRESS, "connect: %s", strerror(errno));
    return fd;
}

/* GET path from address `from`, giving up at `deadline`: the HTTP status,
 * or -1 when the connection was closed or nothing came by then. */
static int get(const char *from, int port, const char *path, double deadline) {
    int fd = open_from(from, port), code = -1;
    char buf[512], req[128];
    size_t len = 0;
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    size_t sent = 0;
    while (now_s() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN | (sent < strlen(req) ? POLLOUT : 0)};
        if (poll(&p, 1, 50) <= 0)
            continue;
        if ((p.revents & POLLOUT) && sent < strlen(req)) {
            ssize_t w = send(fd, req + sent, strlen(req) - sent, MSG_NOSIGNAL);
            if (w < 0)
                break;
            sent += (size_t)w;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = recv(fd, buf + len, sizeof buf - 1 - len, 0);
            if (r <= 0)
                break;
            len += (size_t)r;
            buf[len] = 0;
            if (sscanf(buf, "HTTP/%*s %d", &code) == 1)
                break;
        }
    }
    close(fd);
    return code;
}

static int healthz(const char *from, int port, double deadline) {
    return get(from, port, "/healthz", deadline);
}

/* Room for the flood's descriptors (the soft limit is often 1,024). */
static void raise_fd_limit(void) {
    struct rlimit rl;
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < FLOOD + 64) {
        rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
        cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    if (rl.rlim_cur < FLOOD + 64)
        cr_skip_test("RLIMIT_NOFILE %llu: too few descriptors for %d connections",
                     (unsigned long long)rl.rlim_cur, FLOOD);
}

/* FLOOD idle connections from `from`, left open (fds[]). */
static void flood(const char *from, int port, int *fds) {
    for (int i = 0; i < FLOOD; i++)
        fds[i] = open_from(from, port);
    usleep(200 * 1000); /* let the server take what it takes */
}

static void unflood(int *fds) {
    for (int i = 0; i < FLOOD; i++)
        close(fds[i]);
}

Test(metrics, healthz_answers_beside_idle_connections_of_another_address) {
    raise_fd_limit();
    server s;
    serve(&s);
    cr_assert_eq(healthz("127.0.0.1", s.port, now_s() + 5), 200, "healthz before the flood");
    static int fds[FLOOD];
    flood("127.0.0.2", s.port, fds);
    double t0 = now_s();
    int code = healthz("127.0.0.1", s.port, t0 + 5);
    double took = now_s() - t0;
    cr_log_info("healthz beside %d idle connections: %d after %.3f s", FLOOD, code, took);
    cr_assert_eq(code, 200, "no answer within 5 s beside %d idle connections", FLOOD);
    cr_assert_lt(took, 2.0, "answered after %.3f s", took);
    unflood(fds);
    stop(&s);
}

Test(metrics, healthz_answers_beside_idle_connections_of_its_own_address) {
    raise_fd_limit();
    server s;
    serve(&s);
    static int fds[FLOOD];
    flood("127.0.0.1", s.port, fds);
    /* The flooding address itself: its idle connections beyond
     * VW_HTTPD_MAX_WAITING were closed as they came, the probe's arrival
     * closes the oldest of the rest, and the probe is answered at once. */
    double t0 = now_s(), bound = 2.0;
    int code = -1;
    while (code != 200 && now_s() < t0 + bound + 2)
        if ((code = healthz("127.0.0.1", s.port, t0 + bound + 2)) != 200)
            usleep(100 * 1000);
    double took = now_s() - t0;
    cr_log_info("healthz from the flooding address: %d after %.3f s", code, took);
    cr_assert_eq(code, 200);
    cr_assert_lt(took, bound, "answered after %.3f s", took);
    unflood(fds);
    stop(&s);
}

/* Histogram bounds are written as the numbers they are (issue 33 item 6):
 * "%g" wrote the top batch_tokens bound 1048576 as le="1.04858e+06", a
 * different number to a Prometheus client. Every bound must read back as
 * itself, with no exponent, and the top one is the exact 1048576. */
Test(metrics, bucket_bounds_are_exact) {
    vw_metrics *m = vw_metrics_new();
    cr_assert_not_null(m);
    vw_metrics_observe(m, VW_H_BATCH_TOKENS, 1000000);
    char *text = vw_metrics_render(m, NULL);
    cr_assert_not_null(text);
    cr_assert(strstr(text, "vela_worker_batch_tokens_bucket{le=\"1048576\"} 1\n"), "%s", text);
    int bounds = 0;
    for (const char *p = strstr(text, "le=\""); p; p = strstr(p + 1, "le=\"")) {
        const char *v = p + 4, *end = strchr(v, '"');
        cr_assert_not_null(end);
        if (!strncmp(v, "+Inf", 4))
            continue;
        char buf[64];
        snprintf(buf, sizeof buf, "%.*s", (int)(end - v), v);
        cr_assert_null(strpbrk(buf, "eE"), "bound %s has an exponent", buf);
        char *stop = NULL;
        strtod(buf, &stop);
        cr_assert_eq(*stop, 0, "bound %s is a number", buf);
        bounds++;
    }
    cr_assert_gt(bounds, 10);
    free(text);
    vw_metrics_free(m);
}

/* ---- issue 35 finding 5: a slow-header flood from the probe's own address ---- */

enum { SLOW = 300 };

typedef struct slow_flood {
    int port;
    atomic_bool stop;
    atomic_long opened; /* connections opened (re-opened when the server closes one) */
} slow_flood;

/* SLOW connections from 127.0.0.1, each sending one byte of a request head a
 * second and never finishing it; one the server closes is opened again (a
 * slowloris keeps its count). */
static void *slow_flood_run(void *arg) {
    slow_flood *f = arg;
    static const char head[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    int fds[SLOW];
    size_t at[SLOW];
    double next[SLOW];
    for (int i = 0; i < SLOW; i++) {
        fds[i] = open_from("127.0.0.1", f->port);
        at[i] = 0;
        next[i] = now_s();
        atomic_fetch_add(&f->opened, 1);
    }
    while (!atomic_load(&f->stop)) {
        double t = now_s();
        for (int i = 0; i < SLOW; i++) {
            char c;
            ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT);
            bool closed =
                r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN);
            if (!closed && t >= next[i]) {
                char b = at[i] < sizeof head - 1 ? head[at[i]] : 'x';
                ssize_t w = send(fds[i], &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w == 1) {
                    at[i]++;
                    next[i] = t + 1.0;
                } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    closed = true;
                }
            }
            if (closed) {
                close(fds[i]);
                fds[i] = open_from("127.0.0.1", f->port);
                at[i] = 0;
                next[i] = t;
                atomic_fetch_add(&f->opened, 1);
            }
        }
        usleep(50 * 1000);
    }
    for (int i = 0; i < SLOW; i++)
        close(fds[i]);
    return NULL;
}

/* The finding's flood: before the guard 0 of 40 probes were answered (the
 * flood held the address's 32 slots, each byte resetting the 2 s idle timer). */
Test(metrics, probes_answer_under_a_slow_header_flood_from_their_address) {
    raise_fd_limit();
    server s;
    serve(&s);
    slow_flood f = {.port = s.port};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, slow_flood_run, &f), 0);
    usleep(3000 * 1000); /* the flood settles, past the header deadline */
    enum { PROBES = 40 };
    int answered = 0;
    double worst = 0, t_all = now_s();
    for (int i = 0; i < PROBES; i++) {
        double t0 = now_s();
        int code = get("127.0.0.1", s.port, i % 2 ? "/readyz" : "/healthz", t0 + 1.0);
        double took = now_s() - t0;
        if (code == (i % 2 ? 503 : 200)) { /* /readyz: not ready, but answered */
            answered++;
            worst = took > worst ? took : worst;
        }
        usleep(100 * 1000);
    }
    double span = now_s() - t_all;
    atomic_store(&f.stop, true);
    pthread_join(th, NULL);
    stop(&s);
    cr_log_info("slow flood of %d connections from 127.0.0.1 (%ld opened in all): %d of %d "
                "probes answered over %.1f s, slowest answer %.3f s",
                SLOW, atomic_load(&f.opened), answered, PROBES, span, worst);
    cr_assert_geq(answered, PROBES * 9 / 10, "%d of %d probes answered under the flood", answered,
                  PROBES);
}
