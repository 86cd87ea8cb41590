/* cmd_replay.c — `vela-worker replay`: runs a range of a topic through the
 * same admission and processor path as `run` (vw_worker_replay), without a
 * consumer group and without commits, into a JSONL file or a results topic.
 * Owns the range resolution: offsets, timestamps (ListOffsets by time, with a
 * fallback that searches record timestamps: librdkafka 2.0.2's mock answers
 * -1) and "end" (the high watermark when the replay starts). */
#include <ctype.h>
#include <getopt.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_args.h"
#include "commands.h"
#include "kafka_conf.h"
#include "stop_signals.h"
#include "service/config.h"
#include "offsets.h"
#include "processors.h"
#include "worker.h"

extern char **environ;

static void usage(FILE *f) {
    fprintf(f,
            "usage: vela-worker replay --config FILE --topic T [--partition P]\n"
            "         --from <offset|@ms|ISO-8601> --to <offset|@ms|ISO-8601|end>\n"
            "         [--out results.jsonl | --results-topic T]\n"
            "  Replays [from, to) of each partition (an offset; @ms or YYYY-MM-DDTHH:MM:SSZ: the\n"
            "  first record at or after that time; end: the high watermark now) through the\n"
            "  processor of the config, without group commits. Progress on stderr.\n");
}

/* A --from/--to bound. */
typedef struct bound {
    enum { B_OFFSET, B_TIME, B_END } kind;
    int64_t v;
} bound;

static int parse_bound(const char *s, bool allow_end, bound *b) {
    char *end = NULL;
    if (allow_end && !strcmp(s, "end")) {
        b->kind = B_END;
        return 0;
    }
    if (s[0] == '@') {
        b->kind = B_TIME;
        b->v = strtoll(s + 1, &end, 10);
        return *end || end == s + 1 ? -1 : 0;
    }
    if (strchr(s, 'T')) {
        struct tm tm = {0};
        const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!rest || (*rest && strcmp(rest, "Z")))
            return -1;
        b->kind = B_TIME;
        b->v = (int64_t)timegm(&tm) * 1000;
        return 0;
    }
    b->kind = B_OFFSET;
    b->v = strtoll(s, &end, 10);
    return *end || end == s || b->v < 0 ? -1 : 0;
}

/* ---- range resolution ----------------------------------------------------- */

typedef struct probe {
    rd_kafka_t *rk;
    const char *topic;
    int32_t partition;
} probe;

/* vw_first_record_fn: assigns the partition at `from` and reads one record. */
static int first_record(void *ctx, int64_t from, int64_t hi, int64_t *offset, int64_t *ts) {
    probe *p = ctx;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = from;
    rd_kafka_resp_err_t e = rd_kafka_assign(p->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e)
        return -1;
    int rc = 0;
    for (int tries = 0; tries < 50 && rc == 0; tries++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(p->rk, 100);
        if (!m)
            continue;
        if (!m->err && m->partition == p->partition && m->offset >= from) {
            rd_kafka_timestamp_type_t tt;
            *offset = m->offset;
            *ts = rd_kafka_message_timestamp(m, &tt);
            rc = m->offset < hi ? 1 : -2;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(p->rk, NULL);
    return rc == -2 ? 0 : rc; /* nothing within 5 s: no record in [from, hi) */
}

static int64_t resolve_time(rd_kafka_t *rk, const char *topic, int32_t part, int64_t ts, int64_t lo,
                            int64_t hi) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, part)->offset = ts;
    rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(rk, l, 10000);
    int64_t off = e || l->elems[0].err ? -1 : l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    if (off >= 0)
        return off < lo ? lo : off > hi ? hi : off;
    /* -1 means "no such record" on a broker, and "not implemented" on the mock
     * (librdkafka #4755): search the record timestamps; it also finds "none". */
    probe p = {rk, topic, part};
    vw_err err = {0};
    if (vw_offsets_find_time(lo, hi, ts, first_record, &p, &off, &err)) {
        fprintf(stderr, "vela-worker replay: %s [%d]: %s\n", topic, (int)part, err.msg);
        return -1;
    }
    return off;
}

static int64_t resolve(rd_kafka_t *rk, const char *topic, int32_t part, const bound *b, int64_t lo,
                       int64_t hi) {
    switch (b->kind) {
    case B_END:
        return hi;
    case B_OFFSET:
        return b->v < lo ? lo : b->v > hi ? hi : b->v;
    case B_TIME:
        return resolve_time(rk, topic, part, b->v, lo, hi);
    }
    return -1;
}

static rd_kafka_t *resolver_client(const vw_config *cfg) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const vw_kvlist *lists[] = {&cfg->kafka.common, &cfg->kafka.consumer};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < lists[k]->n; i++)
            if (strcmp(lists[k]->items[i].key, "group.id"))
                rd_kafka_conf_set(conf, lists[k]->items[i].key, lists[k]->items[i].value, errstr,
                                  sizeof errstr);
    /* assign() needs a group id; this one never joins and never commits. */
    rd_kafka_conf_set(conf, "group.id", "vela-worker-replay", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "enable.partition.eof", "false", errstr, sizeof errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "vela-worker replay: %s\n", errstr);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}

/* Partitions of the topic (or just `only`), their [from, to) ranges. */
static int resolve_ranges(const vw_config *cfg, const char *topic, int32_t only, const bound *from,
                          const bound *to, vw_replay_range **out, size_t *n) {
    rd_kafka_t *rk = resolver_client(cfg);
    const rd_kafka_metadata_t *md = NULL;
    int rc = -1;
    *out = NULL;
    *n = 0;
    if (!rk)
        return -1;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, t, &md, 10000) || md->topic_cnt != 1 || md->topics[0].err) {
        fprintf(stderr, "vela-worker replay: topic %s: no metadata\n", topic);
        goto done;
    }
    int parts = md->topics[0].partition_cnt;
    *out = calloc((size_t)parts + 1, sizeof **out);
    for (int32_t p = 0; *out && p < parts; p++) {
        int64_t lo, hi;
        if (only >= 0 && p != only)
            continue;
        if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 10000))
            goto done;
        int64_t a = resolve(rk, topic, p, from, lo, hi), b = resolve(rk, topic, p, to, lo, hi);
        if (a < 0 || b < 0)
            goto done;
        (*out)[(*n)++] = (vw_replay_range){p, a, b < a ? a : b};
        fprintf(stderr, "replay: %s [%d] offsets %lld..%lld (%lld records; partition %lld..%lld)\n",
                topic, (int)p, (long long)a, (long long)(b < a ? a : b),
                (long long)(b < a ? 0 : b - a), (long long)lo, (long long)hi);
    }
    rc = *out && (only < 0 || *n == 1) ? 0 : -1;
    if (only >= 0 && *n == 0)
        fprintf(stderr, "vela-worker replay: %s has no partition %d\n", topic, (int)only);
done:
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_destroy(rk);
    return rc;
}

/* ---- the command ------------------------------------------------------------ */

typedef struct args {
    const char *config, *topic, *out, *results_topic;
    int32_t partition;
    bound from, to;
} args;

static int bad_bound(const char *opt, const char *v) {
    char why[300];
    snprintf(why, sizeof why, "%s '%.200s': expected an offset, @ms, YYYY-MM-DDTHH:MM:SSZ%s", opt,
             v, strcmp(opt, "--to") ? "" : " or end");
    vw_cli_usage_error("replay", why, usage);
    return -2;
}

/* 0: run; 1: --help printed; -1: usage error (usage to print); -2: usage
 * error already said. */
static int parse_args(int argc, char **argv, args *a) {
    static const struct option opts[] = {{"config", required_argument, 0, 'c'},
                                         {"topic", required_argument, 0, 't'},
                                         {"partition", required_argument, 0, 'p'},
                                         {"from", required_argument, 0, 'f'},
                                         {"to", required_argument, 0, 'e'},
                                         {"out", required_argument, 0, 'o'},
                                         {"results-topic", required_argument, 0, 'r'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool have_from = false, have_to = false;
    int c;
    memset(a, 0, sizeof *a);
    a->partition = -1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config = optarg;
            break;
        case 't':
            a->topic = optarg;
            break;
        case 'p':
            a->partition = (int32_t)atoi(optarg);
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'r':
            a->results_topic = optarg;
            break;
        case 'f':
            if (parse_bound(optarg, false, &a->from))
                return bad_bound("--from", optarg);
            have_from = true;
            break;
        case 'e':
            if (parse_bound(optarg, true, &a->to))
                return bad_bound("--to", optarg);
            have_to = true;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            vw_cli_getopt_error("replay", c, argv, usage);
            return -2;
        }
    }
    if (optind != argc) {
        vw_cli_bad_arg("replay", argv[optind], usage);
        return -2;
    }
    if (!a->config || !a->topic || !have_from || !have_to) {
        vw_cli_usage_error("replay", "--config, --topic, --from and --to are required", usage);
        return -2;
    }
    if (a->out && a->results_topic) {
        vw_cli_usage_error("replay", "--out and --results-topic exclude each other", usage);
        return -2;
    }
    /* Two offsets or two times compare as given: a range that ends before it
     * starts is a mistake, not an empty replay (a time and an offset compare
     * only once resolved, per partition: such a range is cut to empty). */
    if (a->from.kind == a->to.kind && a->from.v > a->to.v) {
        fprintf(stderr, "vela-worker replay: --from %s%lld is after --to %s%lld\n",
                a->from.kind == B_TIME ? "@" : "", (long long)a->from.v,
                a->to.kind == B_TIME ? "@" : "", (long long)a->to.v);
        return -1;
    }
    return 0;
}

static int replay(const vw_config *cfg, const args *a, const vw_replay_range *ranges, size_t n,
                  volatile sig_atomic_t *stop) {
    vw_log log = {.level = cfg->log.level, .format = cfg->log.format, .out = stderr};
    vw_processor *proc = NULL;
    vw_worker *w = NULL;
    vw_err err = {0};
    FILE *out = NULL;
    int rc = 1;
    if (a->out && !(out = fopen(a->out, "w"))) {
        perror(a->out);
        return 1;
    }
    if (!vw_processor_open(cfg, &log, &proc, &err) &&
        !vw_worker_new(cfg, &log, proc, NULL, &w, &err) &&
        !vw_worker_replay(w, ranges, n, out, a->results_topic, stop, &err))
        rc = 0;
    vw_worker_free(w);
    vw_processor_free(proc);
    if (out && fclose(out))
        rc = 1;
    if (rc)
        fprintf(stderr, "vela-worker replay: %s\n", err.msg);
    return rc;
}

int vw_cmd_replay(int argc, char **argv) {
    args a;
    int p = parse_args(argc, argv, &a);
    if (p) {
        if (p == -1)
            usage(stderr);
        return p < 0 ? 2 : 0;
    }
    vw_config *cfg = NULL;
    vw_err err = {0};
    if (vw_config_load(a.config, environ, &cfg, &err)) {
        fprintf(stderr, "vela-worker replay: %s\n", err.msg);
        return 2;
    }
    /* librdkafka's checks that wait for a client, before anything connects
     * or loads (worker.h). */
    vw_log log = {.level = cfg->log.level, .format = cfg->log.format, .out = stderr};
    vw_status chk = vw_worker_check(cfg, &log, true, &err);
    if (chk) {
        fprintf(stderr, "vela-worker replay: %s\n", err.msg);
        vw_config_free(cfg);
        return chk == VW_EINVAL ? 2 : 1;
    }
    /* Which records it reads: with transactional producers upstream (an
     * exactly_once worker's results among them) only read_committed skips
     * the aborted ones. */
    const char *isolation = vw_kafka_consumer_prop(cfg, "isolation.level");
    fprintf(stderr, "replay: reading %s with isolation.level=%s%s\n", a.topic,
            isolation ? isolation : "read_committed", isolation ? "" : " (the default)");
    char *topic = strdup(a.topic);
    free(cfg->topics.input);
    cfg->topics.input = topic; /* the replayed topic is this run's input */
    volatile sig_atomic_t *stop = vw_cli_stop_flag();
    vw_replay_range *ranges = NULL;
    size_t n = 0;
    int rc = 1;
    if (topic && !resolve_ranges(cfg, a.topic, a.partition, &a.from, &a.to, &ranges, &n))
        rc = replay(cfg, &a, ranges, n, stop);
    free(ranges);
    vw_config_free(cfg);
    return rc;
}
