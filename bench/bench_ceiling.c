/* bench_ceiling.c — the load side of bench/ceiling.sh: produces request records
 * to a running `vela-worker run` and reads its results back, through Kafka.
 *
 *   bench_ceiling --bootstrap B --requests FILE.jsonl --count N [--rate R]
 *                 [--topic requests] [--results results] [--timeout-s S] [--label L]
 *                 [--warmup K]
 *
 * Request i is line i % lines of FILE (one JSON request per line), keyed
 * "q<i>" and spread over the topic's partitions by key. --rate R sends R
 * records/s (evenly spaced); 0 (the default) sends as fast as librdkafka
 * takes them. Results are read from the end of the results topic as they come;
 * a record's latency is the time from its hand-off to the producer to the
 * arrival of its result here (one host clock, so no clock skew). K warm-up
 * records (default 20, keyed "w<i>") go first and are not counted: a fresh
 * client takes about a second to fetch, which is not the worker's. Prints one
 * JSON object: sent, received, the span from the first send to the last
 * result, the rate over that span (with --rate 0: the saturation rate), and
 * latency p50/p90/p99 in ms. Exit 0 when every result came, 1 otherwise.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/file.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *bootstrap, const char *group) {
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(c, "linger.ms", "1", err, sizeof err);
        rd_kafka_conf_set(c, "queue.buffering.max.messages", "1000000", err, sizeof err);
    } else {
        rd_kafka_conf_set(c, "group.id", group, err, sizeof err);
        /* the mock answers a fetch only after this wait (docs/kafka-notes.md §1.6) */
        rd_kafka_conf_set(c, "fetch.wait.max.ms", "1", err, sizeof err);
        rd_kafka_conf_set(c, "enable.auto.commit", "false", err, sizeof err);
    }
    rd_kafka_t *rk = rd_kafka_new(type, c, err, sizeof err);
    if (!rk)
        fprintf(stderr, "bench_ceiling: %s\n", err);
    return rk;
}

/* Assigns every partition of topic at its current end. */
static int assign_at_end(rd_kafka_t *rk, const char *topic) {
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, t, &md, 10000) || md->topic_cnt != 1) {
        fprintf(stderr, "bench_ceiling: no metadata for %s\n", topic);
        return -1;
    }
    int n = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++) {
        int64_t lo = 0, hi = 0;
        rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000);
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = hi;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    int rc = rd_kafka_assign(rk, l) ? -1 : 0;
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

int main(int argc, char **argv) {
    const char *bootstrap = NULL, *path = NULL, *topic = "requests", *results = "results";
    const char *label = "run";
    long count = 0, warmup = 20;
    double rate = 0, timeout_s = 300;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bootstrap"))
            bootstrap = argv[i + 1];
        else if (!strcmp(argv[i], "--requests"))
            path = argv[i + 1];
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--rate"))
            rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--topic"))
            topic = argv[i + 1];
        else if (!strcmp(argv[i], "--results"))
            results = argv[i + 1];
        else if (!strcmp(argv[i], "--timeout-s"))
            timeout_s = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--label"))
            label = argv[i + 1];
        else if (!strcmp(argv[i], "--warmup"))
            warmup = atol(argv[i + 1]);
    }
    size_t len = 0;
    char *text = path ? vw_read_file(path, &len) : NULL;
    if (!bootstrap || !text || count < 1) {
        fprintf(stderr, "usage: bench_ceiling --bootstrap B --requests FILE.jsonl --count N "
                        "[--rate R] [--topic T] [--results T] [--timeout-s S] [--label L]\n");
        return 2;
    }
    char *lines[4096];
    size_t lens[4096], n_lines = 0;
    for (char *s = text, *e; *s && n_lines < 4096; s = e + (*e != 0)) {
        e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        if (e > s)
            lines[n_lines] = s, lens[n_lines++] = (size_t)(e - s);
    }
    rd_kafka_t *prod = client(RD_KAFKA_PRODUCER, bootstrap, NULL);
    rd_kafka_t *cons = client(RD_KAFKA_CONSUMER, bootstrap, "bench-ceiling-reader");
    if (!prod || !cons || !n_lines || assign_at_end(cons, results))
        return 1;
    /* Warm-up: both clients connected and fetching, the worker's path primed
     * (a fresh client takes about a second to fetch: not the worker's latency). */
    for (long i = 0; i < warmup; i++) {
        char key[32];
        int kl = snprintf(key, sizeof key, "w%ld", i);
        rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)kl),
                          RD_KAFKA_V_VALUE(lines[0], lens[0]),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    }
    rd_kafka_flush(prod, 10000);
    long warm = 0;
    for (double wend = now() + 30; warm < warmup && now() < wend;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
        if (m && !m->err && m->key && ((char *)m->key)[0] == 'w')
            warm++;
        if (m)
            rd_kafka_message_destroy(m);
    }
    double *sent = calloc((size_t)count, sizeof *sent), *lat = calloc((size_t)count, sizeof *lat);
    char *got = calloc((size_t)count, 1);
    long n_sent = 0, n_got = 0, dup = 0;
    double t0 = now(), first = 0, last = 0, end = t0 + timeout_s;
    while (n_got < count && now() < end) {
        /* send what is due */
        double t = now();
        while (n_sent < count && (rate <= 0 || n_sent < (long)((t - t0) * rate) + 1)) {
            char key[32];
            int kl = snprintf(key, sizeof key, "q%ld", n_sent);
            size_t li = (size_t)n_sent % n_lines;
            rd_kafka_resp_err_t e =
                rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, (size_t)kl),
                                  RD_KAFKA_V_VALUE(lines[li], lens[li]),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                break;
            if (e) {
                fprintf(stderr, "bench_ceiling: produce: %s\n", rd_kafka_err2str(e));
                return 1;
            }
            sent[n_sent++] = now();
            if (!first)
                first = sent[0];
            if (rate <= 0 && n_sent % 256 == 0)
                break; /* read results in between */
        }
        rd_kafka_poll(prod, 0);
        /* read what came */
        for (int k = 0; k < 1000; k++) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, k ? 0 : 1);
            if (!m)
                break;
            if (!m->err && m->key && m->key_len > 1 && ((char *)m->key)[0] == 'q') {
                char kb[32];
                size_t kl = m->key_len < sizeof kb - 1 ? m->key_len : sizeof kb - 1;
                memcpy(kb, m->key, kl);
                kb[kl] = 0;
                long i = atol(kb + 1);
                if (i >= 0 && i < n_sent) {
                    if (got[i]) {
                        dup++;
                    } else {
                        got[i] = 1;
                        last = now();
                        lat[n_got++] = last - sent[i];
                    }
                }
            }
            rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_flush(prod, 5000);
    double span = last > first ? last - first : 0;
    qsort(lat, (size_t)n_got, sizeof *lat, cmp_d);
#define PCT(p) (n_got ? 1e3 * lat[(size_t)((double)(n_got - 1) * (p))] : 0.0)
    printf("{\"label\":\"%s\",\"sent\":%ld,\"received\":%ld,\"duplicates\":%ld,\"rate_asked\":%.1f,"
           "\"seconds\":%.3f,\"req_per_s\":%.1f,\"p50_ms\":%.2f,\"p90_ms\":%.2f,\"p99_ms\":%.2f}\n",
           label, n_sent, n_got, dup, rate, span, span > 0 ? (double)n_got / span : 0.0, PCT(0.5),
           PCT(0.9), PCT(0.99));
    rd_kafka_consumer_close(cons);
    rd_kafka_destroy(cons);
    rd_kafka_destroy(prod);
    free(sent);
    free(lat);
    free(got);
    free(text);
    return n_got == count ? 0 : 1;
}
