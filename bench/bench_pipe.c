/* bench_pipe.c — the reference for bench/pipeline.sh: a raw librdkafka
 * consume -> produce pipe (no admission, no batching, no tracker), plus the
 * load generator and the latency/throughput measurement the script uses for
 * both the pipe and vela-worker, so they are measured the same way.
 *
 *   bench_pipe load    BOOTSTRAP TOPIC COUNT RATE VALUE [PREFIX]
 *                                                          produce records keyed
 *                                                          PREFIX<i> (default b;
 *                                                          only b<i> are measured)
 *                                                          at RATE/s (0 = as fast
 *                                                          as possible)
 *   bench_pipe pipe    BOOTSTRAP IN OUT GROUP COUNT       consume IN in a group,
 *                                                          produce one record per
 *                                                          input to OUT, exit
 *                                                          after COUNT deliveries
 *   bench_pipe measure BOOTSTRAP IN OUT COUNT TIMEOUT_S   match IN and OUT by key:
 *                                                          rate = records over the
 *                                                          makespan (first request
 *                                                          to last result), drain
 *                                                          = records over the
 *                                                          result span, p50/p99
 *                                                          latency (result
 *                                                          CreateTime - request
 *                                                          CreateTime)
 * The pipe uses the worker's client settings (cooperative-sticky group,
 * idempotent acks=all producer, fetch.wait.max.ms and linger from the env
 * BENCH_FETCH_WAIT_MS / BENCH_LINGER_MS) and commits consumed offsets
 * asynchronously every 100 ms. */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts failed settings in *bad (reported once the conf is complete). */
static void set(rd_kafka_conf_t *c, const char *k, const char *v, int *bad) {
    char err[256];
    if (rd_kafka_conf_set(c, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "bench_pipe: %s=%s: %s\n", k, v, err);
        (*bad)++;
    }
}

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Explicit incremental (un)assign: with cooperative-sticky and no rebalance
 * callback, rd_kafka_destroy of the closed consumer hung here (2.0.2). */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    (void)opaque;
    rd_kafka_error_t *e = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS
                              ? rd_kafka_incremental_assign(rk, parts)
                              : rd_kafka_incremental_unassign(rk, parts);
    if (e)
        rd_kafka_error_destroy(e);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *boot, const char *group,
                          void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *),
                          void *opaque) {
    char err[256];
    int bad = 0;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    set(c, "bootstrap.servers", boot, &bad);
    set(c, "log_level", "3", &bad);
    if (type == RD_KAFKA_PRODUCER) {
        set(c, "enable.idempotence", "true", &bad);
        set(c, "acks", "all", &bad);
        set(c, "linger.ms", env_or("BENCH_LINGER_MS", "5"), &bad);
        set(c, "queue.buffering.max.messages", "1000000", &bad);
        if (dr)
            rd_kafka_conf_set_dr_msg_cb(c, dr);
    } else {
        set(c, "group.id", group ? group : "bench-measure", &bad);
        set(c, "enable.auto.commit", "false", &bad);
        set(c, "enable.auto.offset.store", "false", &bad);
        set(c, "auto.offset.reset", "earliest", &bad);
        set(c, "fetch.wait.max.ms", env_or("BENCH_FETCH_WAIT_MS", "10"), &bad);
        set(c, "partition.assignment.strategy", "cooperative-sticky", &bad);
        set(c, "session.timeout.ms", "6000", &bad);
        set(c, "heartbeat.interval.ms", "1000", &bad);
        if (group)
            rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
    }
    rd_kafka_conf_set_opaque(c, opaque);
    rd_kafka_t *rk = bad ? NULL : rd_kafka_new(type, c, err, sizeof err);
    if (!rk) {
        if (!bad)
            fprintf(stderr, "bench_pipe: %s\n", err);
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    if (type == RD_KAFKA_CONSUMER)
        rd_kafka_poll_set_consumer(rk);
    return rk;
}

static int load(char **a) {
    /* a[5] (may be NULL): the key prefix; warm-up loads use "w". */
    const char *boot = a[0], *topic = a[1], *value = a[4], *prefix = a[5] ? a[5] : "b";
    long count = atol(a[2]);
    double rate = atof(a[3]);
    rd_kafka_t *p = client(RD_KAFKA_PRODUCER, boot, NULL, NULL, NULL);
    if (!p)
        return 2;
    int64_t t0 = now_ms();
    char key[32];
    for (long i = 0; i < count; i++) {
        if (rate > 0) { /* open loop: record i is due at t0 + i/rate */
            int64_t due = t0 + (int64_t)((double)i * 1000.0 / rate);
            while (now_ms() < due)
                rd_kafka_poll(p, (int)(due - now_ms()));
        }
        int n = snprintf(key, sizeof key, "%s%ld", prefix, i);
        rd_kafka_resp_err_t e;
        while ((e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)n),
                                      RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
               RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 10);
        if (e) {
            fprintf(stderr, "bench_pipe load: %s\n", rd_kafka_err2str(e));
            return 1;
        }
        rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 30000);
    printf("load: %ld records to %s in %.2f s\n", count, topic, (double)(now_ms() - t0) / 1e3);
    rd_kafka_destroy(p);
    return 0;
}

/* Decimal digits of v (>= 0) into buf; returns how many. */
static size_t put_dec(char *buf, int64_t v) {
    char tmp[24];
    size_t n = 0, len = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        buf[len++] = tmp[--n];
    return len;
}

/* As long as the worker's rejection value for a record keyed b<5 digits> on a
 * two-letter topic (210 bytes). */
static const char shaped_value[] =
    "{\"request_id\":\"b12345\",\"source\":{\"topic\":\"bw\",\"partition\":0,\"offset\":"
    "12345,\"timestamp\":1764688000000},\"status\":400,\"detail\":[{\"loc\":[\"body\",0],"
    "\"msg\":\"JSON decode error: Expecting value\",\"type\":\"json_invalid\"}]}";

static volatile long delivered, failed;
static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    if (!m->err)
        delivered++;
    else if (failed++ < 5)
        fprintf(stderr, "bench_pipe: delivery failed: %s\n", rd_kafka_err2str(m->err));
}

static int pipe_run(char **a) {
    const char *boot = a[0], *in = a[1], *out = a[2], *group = a[3];
    long count = atol(a[4]);
    rd_kafka_t *c = client(RD_KAFKA_CONSUMER, boot, group, NULL, NULL);
    rd_kafka_t *p = client(RD_KAFKA_PRODUCER, boot, NULL, on_dr, NULL);
    if (!c || !p)
        return 2;
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, in, RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(c, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    int64_t next_commit = now_ms() + 100;
    static const char value[] = "{\"status\":400}";
    int shaped = atoi(env_or("BENCH_PIPE_SHAPED", "0"));
    while (delivered < count) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 5);
        if (m && !m->err) {
            rd_kafka_resp_err_t e;
            if (shaped) {
                /* The worker's record shape at the least CPU: its four headers
                 * (request-id = key, source = topic:partition:offset, model,
                 * status) and a constant value as long as its rejection value.
                 * BENCH_PIPE_SHAPED=2: the headers with the bare value; 3: the
                 * long value without headers (what each half costs). */
                char src[160];
                size_t tl = strlen(in);
                memcpy(src, in, tl);
                src[tl] = ':';
                size_t sl = tl + 1 + put_dec(src + tl + 1, m->partition);
                src[sl++] = ':';
                sl += put_dec(src + sl, m->offset);
                const char *val = shaped == 2 ? value : shaped_value;
                int vl = shaped == 2 ? (int)sizeof value - 1 : (int)sizeof shaped_value - 1;
                rd_kafka_headers_t *h = shaped == 3 ? NULL : rd_kafka_headers_new(8);
                if (h) {
                    rd_kafka_header_add(h, "request-id", -1, m->key, (ssize_t)m->key_len);
                    rd_kafka_header_add(h, "vela-model", -1, "test-echo@0", -1);
                    rd_kafka_header_add(h, "source", -1, src, (ssize_t)sl);
                    rd_kafka_header_add(h, "vela-status", -1, "400", -1);
                }
                while ((e = rd_kafka_producev(
                            p, RD_KAFKA_V_TOPIC(out), RD_KAFKA_V_KEY(m->key, m->key_len),
                            RD_KAFKA_V_VALUE((void *)val, (size_t)vl), RD_KAFKA_V_HEADERS(h),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
                       RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    rd_kafka_poll(p, 10);
                if (e && h)
                    rd_kafka_headers_destroy(h);
            } else {
                while ((e = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(out),
                                              RD_KAFKA_V_KEY(m->key, m->key_len),
                                              RD_KAFKA_V_VALUE((void *)value, sizeof value - 1),
                                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                              RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    rd_kafka_poll(p, 10);
            }
            if (e && failed++ < 5)
                fprintf(stderr, "bench_pipe: produce: %s\n", rd_kafka_err2str(e));
            /* A real list: librdkafka keeps a partition reference in it that
             * only topic_partition_list_destroy releases. */
            rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
            rd_kafka_topic_partition_list_add(l, in, m->partition)->offset = m->offset + 1;
            rd_kafka_offsets_store(c, l);
            rd_kafka_topic_partition_list_destroy(l);
        }
        if (m)
            rd_kafka_message_destroy(m);
        rd_kafka_poll(p, 0);
        if (now_ms() >= next_commit) {
            rd_kafka_commit(c, NULL, 1);
            next_commit = now_ms() + 100;
        }
    }
    rd_kafka_flush(p, 10000);
    rd_kafka_destroy(p);
    rd_kafka_commit(c, NULL, 0);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return 0;
}

typedef struct rec {
    long key;
    int64_t ts;
} rec;

/* Reads a whole topic from the beginning: key "b<n>" -> timestamp. */
static long read_topic(const char *boot, const char *topic, long want, int timeout_s, rec *out) {
    rd_kafka_t *c = client(RD_KAFKA_CONSUMER, boot, NULL, NULL, NULL);
    const rd_kafka_metadata_t *md;
    if (!c)
        return -1;
    rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
    if (rd_kafka_metadata(c, 0, t, &md, 10000)) {
        fprintf(stderr, "bench_pipe: no metadata for %s\n", topic);
        rd_kafka_topic_destroy(t);
        rd_kafka_destroy(c);
        return -1;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    for (int i = 0; i < md->topics[0].partition_cnt; i++)
        rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_assign(c, l);
    rd_kafka_topic_partition_list_destroy(l);
    long n = 0;
    int64_t end = now_ms() + (int64_t)timeout_s * 1000;
    while (n < want && now_ms() < end) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m)
            continue;
        if (!m->err && m->key_len > 1 && m->key_len < 30 && ((const char *)m->key)[0] == 'b') {
            char k[32];
            rd_kafka_timestamp_type_t tt;
            memcpy(k, m->key, m->key_len);
            k[m->key_len] = 0;
            out[n].key = atol(k + 1);
            out[n++].ts = rd_kafka_message_timestamp(m, &tt);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(c, NULL);
    rd_kafka_destroy(c);
    return n;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int measure(char **a) {
    const char *boot = a[0], *in = a[1], *out = a[2];
    long count = atol(a[3]);
    int timeout_s = atoi(a[4]);
    rec *req = calloc((size_t)count, sizeof *req), *res = calloc((size_t)count, sizeof *res);
    int64_t *sent = calloc((size_t)count, sizeof *sent), *lat = calloc((size_t)count, sizeof *lat);
    long nreq = read_topic(boot, in, count, timeout_s, req);
    long nres = nreq < 0 ? -1 : read_topic(boot, out, count, timeout_s, res);
    if (nres < 0)
        return 2;
    for (long i = 0; i < nreq; i++)
        if (req[i].key >= 0 && req[i].key < count)
            sent[req[i].key] = req[i].ts;
    int64_t first = INT64_MAX, last = 0, first_req = INT64_MAX;
    long n = 0;
    for (long i = 0; i < nres; i++) {
        if (res[i].key < 0 || res[i].key >= count || !sent[res[i].key])
            continue;
        lat[n++] = res[i].ts - sent[res[i].key];
        first = res[i].ts < first ? res[i].ts : first;
        last = res[i].ts > last ? res[i].ts : last;
        first_req = sent[res[i].key] < first_req ? sent[res[i].key] : first_req;
    }
    if (n < count) {
        printf("measure: only %ld of %ld results\n", n, count);
        return 1;
    }
    /* mid: records over the span between the 10th and the 90th percentile
     * of the result timestamps: the steady state, without start-up (group
     * join, first produce) and tail effects. */
    int64_t *rts = calloc((size_t)n, sizeof *rts);
    long k = 0;
    for (long i = 0; i < nres; i++)
        if (res[i].key >= 0 && res[i].key < count && sent[res[i].key])
            rts[k++] = res[i].ts;
    qsort(rts, (size_t)k, sizeof *rts, cmp_i64);
    long lo = k / 10, hi = (k * 9) / 10;
    double mid_span = k > 10 ? (double)(rts[hi] - rts[lo]) / 1e3 : 0.0;
    free(rts);
    qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
    /* rate: records over the makespan, first request to last result; drain:
     * records over the span of the results alone (CPU-bound when the input
     * was already waiting). */
    double make = (double)(last - first_req) / 1e3, span = (double)(last - first) / 1e3;
    double mid = mid_span > 0 ? (double)(hi - lo) / mid_span : 0.0;
    printf("records=%ld rate=%.0f drain=%.0f mid=%.0f p50_ms=%lld p99_ms=%lld makespan_s=%.3f "
           "mid_exact=%.3f\n",
           n, make > 0 ? (double)n / make : 0.0, span > 0 ? (double)(n - 1) / span : 0.0, mid,
           (long long)lat[n / 2], (long long)lat[(n * 99) / 100], make, mid);
    free(req);
    free(res);
    free(sent);
    free(lat);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 7 && !strcmp(argv[1], "load"))
        return load(argv + 2);
    if (argc >= 7 && !strcmp(argv[1], "pipe"))
        return pipe_run(argv + 2);
    if (argc >= 7 && !strcmp(argv[1], "measure"))
        return measure(argv + 2);
    fprintf(stderr, "usage: bench_pipe load BOOT TOPIC COUNT RATE VALUE\n"
                    "       bench_pipe pipe BOOT IN OUT GROUP COUNT\n"
                    "       bench_pipe measure BOOT IN OUT COUNT TIMEOUT_S\n");
    return 2;
}
