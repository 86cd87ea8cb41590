/* metrics.c — atomic counters/histograms, lag gauges from librdkafka
 * statistics, Prometheus rendering and the libmicrohttpd endpoint (see
 * metrics.h). Owns the HTTP daemon; never touches Kafka handles. */
#include "metrics.h"
#include "httpd.h"

#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admission/canonical_json.h"
#include "admission/errlist.h"

static const char *const counter_names[VW_M_COUNTERS][2] = {
    {"records_consumed_total", "Request records consumed."},
    {"dead_letters_total", "Records sent to the dead-letter topic."},
    {"retries_total", "Transient processor failures (the record is run again)."},
    {"produce_errors_total", "Failed result deliveries (produced again or dead-lettered)."},
    {"commits_total", "Partition offsets committed."},
    {"commit_failures_total", "Partition offset commits that failed (retried)."},
    {"rebalances_total", "Partition assignments and revocations."},
    {"backpressure_total",
     "Times intake stopped at limits.max_in_flight (records wait in librdkafka's fetch queue)."},
    {"batches_total", "Micro-batches run by the processor."},
    {"partition_restarts_total",
     "Partitions assigned again because librdkafka never started fetching them."},
    {"slow_records_total",
     "Records whose admission and plan took longer than limits.slow_record_ms."},
    {"unreadable_records_total",
     "Records librdkafka could not hand over (decompression, CRC, size): dead-lettered, skipped."},
    {"dead_letters_truncated_total", "Dead letters whose payload was cut to fit the producer."},
    {"dead_letter_failures_total",
     "Dead letters refused even without a payload: the worker stopped before the offset."},
    {"produce_waits_total",
     "Results kept for another try after a transient produce error (unknown or unauthorised "
     "topic, leader change)."},
    {"transactions_committed_total", "exactly_once: transactions committed."},
    {"transactions_aborted_total",
     "exactly_once: transactions aborted (their records are produced again)."},
};

enum { MAX_BUCKETS = 16 };

typedef struct hist_def {
    const char *name, *help;
    double scale; /* sum is kept as an integer of v * scale */
    size_t n;
    double le[MAX_BUCKETS];
} hist_def;

static const hist_def hist_defs[VW_H_COUNT] = {
    {"batch_size",
     "Records per micro-batch.",
     1,
     11,
     {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}},
    {"batch_tokens",
     "Tokens per micro-batch.",
     1,
     8,
     {64, 256, 1024, 4096, 16384, 65536, 262144, 1048576}},
    {"queue_delay_seconds",
     "Time from admission to the start of the record's batch.",
     1e6,
     14,
     {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
    {"exec_seconds",
     "Execute (device call) time per micro-batch.",
     1e6,
     14,
     {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
    {"e2e_latency_seconds",
     "Time from the request record's timestamp to the result's acknowledgement "
     "(exactly_once: to its transaction's commit).",
     1e6,
     14,
     {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}},
    {"txn_commit_seconds",
     "exactly_once: time to commit one transaction (flush, offsets, commit).",
     1e6,
     14,
     {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
};

typedef struct hist {
    _Atomic uint64_t buckets[MAX_BUCKETS + 1]; /* last: +Inf */
    _Atomic uint64_t count, sum;
} hist;

static const int statuses[] = {200, 400, 413, 422};
enum { N_STATUS = 5 }; /* + "other" */

static const char *const reject_types[] = {
    VW_ET_JSON_INVALID,    VW_ET_MODEL_ATTRIBUTES, VW_ET_STRING_TYPE, VW_ET_MISSING,
    VW_ET_VALUE_ERROR,     VW_ET_DICT_TYPE,        VW_ET_TOO_SHORT,   VW_ET_TOO_LONG,
    VW_ET_EXTRA_FORBIDDEN, VW_ET_LITERAL_ERROR,    VW_ET_MODEL_TYPE,  "other",
};
enum { N_TYPES = sizeof reject_types / sizeof reject_types[0] };

typedef struct lag {
    char topic[256];
    int32_t partition;
    int64_t lag;
} lag;

struct vw_metrics {
    _Atomic uint64_t counters[VW_M_COUNTERS];
    _Atomic uint64_t results[N_STATUS];
    _Atomic uint64_t rejections[N_TYPES];
    _Atomic uint64_t stage_ns[VW_S_COUNT];
    hist hists[VW_H_COUNT];
    _Atomic int64_t in_flight;
    atomic_bool paused, assigned, ready, fatal, blocked;
    pthread_mutex_t lag_mu;
    lag *lags;
    size_t n_lags;
    vw_httpd *httpd;
};

vw_metrics *vw_metrics_new(void) {
    vw_metrics *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lag_mu, NULL);
    return m;
}

void vw_metrics_free(vw_metrics *m) {
    if (!m)
        return;
    vw_httpd_stop(m->httpd);
    pthread_mutex_destroy(&m->lag_mu);
    free(m->lags);
    free(m);
}

void vw_metrics_inc(vw_metrics *m, vw_counter c, uint64_t n) {
    if (m)
        atomic_fetch_add(&m->counters[c], n);
}

static const char *const stage_names[VW_S_COUNT] = {"intake",  "admission", "plan",    "batching",
                                                    "execute", "heads",     "answers", "envelope",
                                                    "produce", "commit"};

void vw_metrics_stage(vw_metrics *m, vw_stage s, double seconds) {
    if (m && seconds > 0)
        atomic_fetch_add(&m->stage_ns[s], (uint64_t)(seconds * 1e9));
}

double vw_thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void vw_metrics_result(vw_metrics *m, int vela_status) {
    if (!m)
        return;
    size_t i = 0;
    while (i < N_STATUS - 1 && statuses[i] != vela_status)
        i++;
    atomic_fetch_add(&m->results[i], 1);
}

void vw_metrics_rejection(vw_metrics *m, const char *type) {
    if (!m)
        return;
    size_t i = 0;
    while (i < N_TYPES - 1 && (!type || strcmp(reject_types[i], type)))
        i++;
    atomic_fetch_add(&m->rejections[i], 1);
}

void vw_metrics_observe(vw_metrics *m, vw_histogram h, double v) {
    if (!m)
        return;
    const hist_def *d = &hist_defs[h];
    hist *x = &m->hists[h];
    size_t b = 0;
    while (b < d->n && v > d->le[b])
        b++;
    atomic_fetch_add(&x->buckets[b], 1);
    atomic_fetch_add(&x->count, 1);
    atomic_fetch_add(&x->sum, (uint64_t)(v > 0 ? v * d->scale + 0.5 : 0));
}

void vw_metrics_set_in_flight(vw_metrics *m, int64_t n) {
    if (m)
        atomic_store(&m->in_flight, n);
}
void vw_metrics_set_paused(vw_metrics *m, bool paused) {
    if (m)
        atomic_store(&m->paused, paused);
}
void vw_metrics_set_assigned(vw_metrics *m, bool assigned) {
    if (m)
        atomic_store(&m->assigned, assigned);
}
void vw_metrics_set_ready(vw_metrics *m, bool ready) {
    if (m)
        atomic_store(&m->ready, ready);
}
void vw_metrics_set_fatal(vw_metrics *m) {
    if (m)
        atomic_store(&m->fatal, true);
}
void vw_metrics_set_produce_blocked(vw_metrics *m, bool blocked) {
    if (m)
        atomic_store(&m->blocked, blocked);
}

static int64_t field_i64(const json_t *p, const char *name) {
    const json_t *v = json_object_get(p, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The lag of one partition's statistics: librdkafka's consumer_lag (the end
 * offset less the group's committed offset), or -1 when the end is unknown.
 * librdkafka reports -1 too while the group has committed nothing there (an
 * empty partition, one never answered yet): the lag then counts from the log
 * start offset, where the group begins (auto.offset.reset=earliest), so an
 * empty assigned partition reads 0. The end is the last stable offset (the
 * worker reads committed records only), else the high watermark. */
static int64_t partition_lag(const json_t *p) {
    int64_t lag = field_i64(p, "consumer_lag");
    if (lag >= 0)
        return lag;
    int64_t end = field_i64(p, "ls_offset");
    if (end < 0)
        end = field_i64(p, "hi_offset");
    if (end < 0)
        return -1;
    int64_t from = field_i64(p, "committed_offset");
    if (from < 0)
        from = field_i64(p, "lo_offset");
    if (from < 0)
        from = 0;
    return end > from ? end - from : 0;
}

/* Collects the lag of the active partitions (STATISTICS.md). */
void vw_metrics_stats_json(vw_metrics *m, const char *json, size_t len) {
    json_t *root = m ? json_loadb(json, len, 0, NULL) : NULL;
    if (!root)
        return;
    lag *found = NULL;
    size_t n = 0;
    const char *tname, *pname;
    json_t *t, *p;
    json_object_foreach(json_object_get(root, "topics"), tname, t) {
        json_object_foreach(json_object_get(t, "partitions"), pname, p) {
            const char *state = json_string_value(json_object_get(p, "fetch_state"));
            int32_t part = (int32_t)json_integer_value(json_object_get(p, "partition"));
            int64_t l = partition_lag(p);
            if (part < 0 || l < 0 || !state || strcmp(state, "active"))
                continue;
            lag *grown = realloc(found, (n + 1) * sizeof *grown);
            if (!grown)
                break;
            found = grown;
            snprintf(found[n].topic, sizeof found[n].topic, "%s", tname);
            found[n].partition = part;
            found[n++].lag = l;
        }
    }
    json_decref(root);
    pthread_mutex_lock(&m->lag_mu);
    free(m->lags);
    m->lags = found;
    m->n_lags = n;
    pthread_mutex_unlock(&m->lag_mu);
}

/* A bucket bound as Prometheus clients write it (Go's shortest form): a whole
 * number in full, else the shortest decimal that reads back as the same
 * double (1048576, 0.005; "%g" wrote 1.04858e+06, which is another number). */
static const char *bound_text(double v, char buf[32]) {
    if (v == (double)(int64_t)v) {
        snprintf(buf, 32, "%lld", (long long)v);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static void render_hist(vw_sbuf *sb, const hist_def *d, hist *x) {
    char le[32];
    vw_sbuf_printf(sb, "# HELP vela_worker_%s %s\n# TYPE vela_worker_%s histogram\n", d->name,
                   d->help, d->name);
    uint64_t cum = 0;
    for (size_t b = 0; b <= d->n; b++) {
        cum += atomic_load(&x->buckets[b]);
        if (b < d->n)
            vw_sbuf_printf(sb, "vela_worker_%s_bucket{le=\"%s\"} %llu\n", d->name,
                           bound_text(d->le[b], le), (unsigned long long)cum);
        else
            vw_sbuf_printf(sb, "vela_worker_%s_bucket{le=\"+Inf\"} %llu\n", d->name,
                           (unsigned long long)cum);
    }
    vw_sbuf_printf(sb, "vela_worker_%s_sum %.6f\nvela_worker_%s_count %llu\n", d->name,
                   (double)atomic_load(&x->sum) / d->scale, d->name,
                   (unsigned long long)atomic_load(&x->count));
}

static void render_gauges(vw_metrics *m, vw_sbuf *sb) {
    vw_sbuf_printf(sb,
                   "# HELP vela_worker_in_flight Admitted records not yet acknowledged.\n"
                   "# TYPE vela_worker_in_flight gauge\nvela_worker_in_flight %lld\n"
                   "# HELP vela_worker_paused 1 while intake is held for a rebalance.\n"
                   "# TYPE vela_worker_paused gauge\nvela_worker_paused %d\n"
                   "# HELP vela_worker_ready 1 when /readyz answers 200.\n"
                   "# TYPE vela_worker_ready gauge\nvela_worker_ready %d\n"
                   "# HELP vela_worker_produce_blocked 1 while results wait out a transient "
                   "produce error.\n"
                   "# TYPE vela_worker_produce_blocked gauge\nvela_worker_produce_blocked %d\n",
                   (long long)atomic_load(&m->in_flight), (int)atomic_load(&m->paused),
                   atomic_load(&m->ready) && atomic_load(&m->assigned) && !atomic_load(&m->blocked),
                   (int)atomic_load(&m->blocked));
    vw_sbuf_puts(sb, "# HELP vela_worker_consumer_lag Messages behind the high watermark "
                     "(librdkafka statistics).\n# TYPE vela_worker_consumer_lag gauge\n");
    pthread_mutex_lock(&m->lag_mu);
    for (size_t i = 0; i < m->n_lags; i++) {
        vw_sbuf_puts(sb, "vela_worker_consumer_lag{topic=");
        vw_canon_string(sb, m->lags[i].topic, strlen(m->lags[i].topic));
        vw_sbuf_printf(sb, ",partition=\"%d\"} %lld\n", (int)m->lags[i].partition,
                       (long long)m->lags[i].lag);
    }
    pthread_mutex_unlock(&m->lag_mu);
}

char *vw_metrics_render(vw_metrics *m, size_t *len) {
    vw_sbuf sb = {0};
    for (int c = 0; c < VW_M_COUNTERS; c++)
        vw_sbuf_printf(&sb,
                       "# HELP vela_worker_%s %s\n# TYPE vela_worker_%s counter\n"
                       "vela_worker_%s %llu\n",
                       counter_names[c][0], counter_names[c][1], counter_names[c][0],
                       counter_names[c][0], (unsigned long long)atomic_load(&m->counters[c]));
    vw_sbuf_puts(&sb, "# HELP vela_worker_results_total Result records acknowledged, by "
                      "vela-status.\n# TYPE vela_worker_results_total counter\n");
    for (int i = 0; i < N_STATUS; i++) {
        char label[16] = "other";
        if (i < N_STATUS - 1)
            snprintf(label, sizeof label, "%d", statuses[i]);
        vw_sbuf_printf(&sb, "vela_worker_results_total{status=\"%s\"} %llu\n", label,
                       (unsigned long long)atomic_load(&m->results[i]));
    }
    vw_sbuf_puts(&sb, "# HELP vela_worker_rejections_total Rejection triples produced, by "
                      "type.\n# TYPE vela_worker_rejections_total counter\n");
    for (int i = 0; i < N_TYPES; i++)
        vw_sbuf_printf(&sb, "vela_worker_rejections_total{type=\"%s\"} %llu\n", reject_types[i],
                       (unsigned long long)atomic_load(&m->rejections[i]));
    vw_sbuf_puts(&sb, "# HELP vela_worker_stage_cpu_seconds_total Host CPU time by pipeline "
                      "stage (thread CPU).\n# TYPE vela_worker_stage_cpu_seconds_total counter\n");
    for (int i = 0; i < VW_S_COUNT; i++)
        vw_sbuf_printf(&sb, "vela_worker_stage_cpu_seconds_total{stage=\"%s\"} %.6f\n",
                       stage_names[i], (double)atomic_load(&m->stage_ns[i]) / 1e9);
    for (int h = 0; h < VW_H_COUNT; h++)
        render_hist(&sb, &hist_defs[h], &m->hists[h]);
    render_gauges(m, &sb);
    if (vw_sbuf_status(&sb)) {
        vw_sbuf_free(&sb);
        return NULL;
    }
    return vw_sbuf_take(&sb, len);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, char *body, size_t len,
                             const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state) {
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)state;
    vw_metrics *m = cls;
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return reply(c, 405, strdup("method not allowed\n"), 19, "text/plain");
    if (!strcmp(url, "/metrics")) {
        size_t len = 0;
        char *body = vw_metrics_render(m, &len);
        return body ? reply(c, 200, body, len, "text/plain; version=0.0.4; charset=utf-8") : MHD_NO;
    }
    if (!strcmp(url, "/healthz")) {
        bool ok = !atomic_load(&m->fatal);
        return reply(c, ok ? 200 : 503, strdup(ok ? "ok\n" : "fatal\n"), ok ? 3 : 6, "text/plain");
    }
    if (!strcmp(url, "/readyz")) {
        bool ok = atomic_load(&m->ready) && atomic_load(&m->assigned) &&
                  !atomic_load(&m->blocked) && !atomic_load(&m->fatal);
        return reply(c, ok ? 200 : 503, strdup(ok ? "ready\n" : "not ready\n"), ok ? 6 : 10,
                     "text/plain");
    }
    return reply(c, 404, strdup("not found\n"), 10, "text/plain");
}

/* "host:port" -> the address to bind; err->msg is the reason alone. The port
 * is checked here: getaddrinfo takes "99999" and wraps it (to 34463). */
static vw_status resolve_listen(const char *listen, struct addrinfo **out, vw_err *err) {
    char host[256];
    const char *colon = strrchr(listen, ':');
    *out = NULL;
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host || !colon[1])
        return VW_FAIL(err, VW_EINVAL, "config_invalid", "'%.300s': want host:port", listen);
    const char *port = colon + 1;
    if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 || atoi(port) > 65535)
        return VW_FAIL(err, VW_EINVAL, "config_invalid",
                       "'%.300s': port '%.32s' is not a number in [0, 65535]", listen, port);
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:9464 */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
    int gai = getaddrinfo(host, port, &hints, out);
    if (gai)
        return VW_FAIL(err, VW_EINVAL, "config_invalid", "'%.300s': %s", listen, gai_strerror(gai));
    return VW_OK;
}

vw_status vw_metrics_check_listen(const char *listen, vw_err *err) {
    struct addrinfo *ai = NULL;
    vw_status st = resolve_listen(listen, &ai, err);
    if (ai)
        freeaddrinfo(ai);
    return st;
}

/* Why the address cannot be bound (the server does not say): a bind of our
 * own, as the server makes it (SO_REUSEADDR); 0 when it can. */
static int bind_errno(const struct addrinfo *ai) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, e = 0;
    if (fd < 0)
        return errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen))
        e = errno;
    close(fd);
    return e;
}

vw_status vw_metrics_serve(vw_metrics *m, const char *listen, int *port_out, vw_err *err) {
    struct addrinfo *ai = NULL;
    vw_err why = {0};
    if (resolve_listen(listen, &ai, &why))
        return VW_FAIL(err, VW_EINVAL, "config_invalid", "%s", why.msg);
    /* The server's guard keeps /healthz answerable under a flood of
     * connections that never finish a request (httpd.h). */
    vw_status st = vw_httpd_start(ai->ai_addr, handle, m, &m->httpd, port_out, &why);
    int why_not = st == VW_EIO ? bind_errno(ai) : 0;
    freeaddrinfo(ai);
    if (st == VW_EIO)
        return VW_FAIL(err, VW_EIO, "metrics_listen", "'%s': cannot bind: %s", listen,
                       why_not ? strerror(why_not) : "the HTTP server did not start");
    if (st)
        return VW_FAIL(err, st, "out_of_memory", "'%s': %s", listen, why.msg);
    return VW_OK;
}
