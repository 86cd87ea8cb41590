/* source_conf.c — the consumer's configuration (see source_conf.h). Owns
 * no state; never creates a client. */
#include "source_conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_conf.h"

/* A consumer property in ms as configured (librdkafka's default otherwise). */
static int64_t consumer_ms(const vw_config *cfg, const char *key, int64_t dflt) {
    const char *v = vw_kafka_consumer_prop(cfg, key);
    return v ? atoll(v) : dflt;
}

/* A member in a rebalance learns of it from its next heartbeat answer, so
 * two heartbeat intervals and a second for the round trip, at most the
 * session timeout (librdkafka's defaults: 3 s, 45 s). Once the rebalance
 * shows, the join state holds commits and intake (rejoin.h;
 * the window's history: docs/kafka-notes.md "The worker's rebalance
 * holds"). */
int64_t vw_source_conf_hold_ms(const vw_config *cfg) {
    int64_t session = consumer_ms(cfg, "session.timeout.ms", 45000);
    int64_t bridge = 2 * consumer_ms(cfg, "heartbeat.interval.ms", 3000) + 1000;
    return bridge < session ? bridge : session;
}

/* group.protocol: consumer (KIP-848, Kafka 4): the broker runs the group,
 * assigns partitions (group.remote.assignor) and keeps the session timeout and
 * heartbeat interval (group.consumer.* on the broker), so librdkafka refuses
 * the classic group's client settings. */
static const char *const classic_only[] = {"partition.assignment.strategy", "session.timeout.ms",
                                           "heartbeat.interval.ms", "group.protocol.type"};

static bool kip848(const vw_config *cfg) {
    const char *p = vw_kafka_consumer_prop(cfg, "group.protocol");
    return p && !strcmp(p, "consumer");
}

/* A classic-only setting of the user's under group.protocol consumer is named
 * here rather than in librdkafka's words at rd_kafka_new. */
static vw_status check_protocol(const vw_config *cfg, vw_err *err) {
    if (!kip848(cfg))
        return VW_OK;
    if (vw_kafka_before(2, 12, 0))
        return VW_FAIL(err, VW_EINVAL, "kafka_config",
                       "group.protocol consumer (KIP-848) needs librdkafka 2.12 or later; the one "
                       "loaded is %s",
                       rd_kafka_version_str());
    for (size_t i = 0; i < sizeof classic_only / sizeof *classic_only; i++) {
        const char *section = vw_kvlist_get(&cfg->kafka.consumer, classic_only[i]) ? "consumer"
                              : vw_kvlist_get(&cfg->kafka.common, classic_only[i]) ? "common"
                                                                                   : NULL;
        if (section)
            return VW_FAIL(err, VW_EINVAL, "kafka_config",
                           "kafka%s%s.%s is a setting of the classic group protocol, and "
                           "group.protocol is consumer: the broker keeps it "
                           "(group.consumer.* there); remove it",
                           strcmp(section, "common") ? "." : "",
                           strcmp(section, "common") ? section : "", classic_only[i]);
    }
    return VW_OK;
}

/* What librdkafka may hold of the input, bounded from limits.max_request_bytes
 * (M) unless the user set a property (docs/worker.md "Memory"):
 *   max.partition.fetch.bytes  P = M + 64 KiB: one request and its key and headers
 *   fetch.max.bytes            F = 2 P (at least the consumer's message.max.bytes)
 *   receive.message.max.bytes  R = 2 F + 1 MiB: one Fetch response on the wire, also the
 *                                  most a zstd batch may decompress to
 *   queued.max.messages.kbytes Q = 2 F, in kB: records prefetched for all partitions
 * A response may carry one batch larger than F (the broker returns the first
 * batch whole), so R leaves room for the broker's default max.message.bytes
 * (1 MiB) and more; a batch larger than R can never be fetched. */
static vw_status fetch_bounds(const vw_config *cfg, rd_kafka_conf_t *conf, vw_bounds *b,
                              vw_err *err) {
    enum { SLACK = 64 * 1024, MIB = 1024 * 1024 };
    const char *user_p = vw_kafka_consumer_prop(cfg, "max.partition.fetch.bytes");
    if (!user_p)
        user_p = vw_kafka_consumer_prop(cfg, "fetch.message.max.bytes");
    const char *user_f = vw_kafka_consumer_prop(cfg, "fetch.max.bytes");
    const char *user_r = vw_kafka_consumer_prop(cfg, "receive.message.max.bytes");
    const char *user_q = vw_kafka_consumer_prop(cfg, "queued.max.messages.kbytes");
    const char *user_m = vw_kafka_consumer_prop(cfg, "message.max.bytes");
    int64_t m = cfg->limits.max_request_bytes, max_msg = user_m ? atoll(user_m) : 1000000;
    b->partition = user_p ? atoll(user_p) : m + SLACK;
    b->fetch = user_f ? atoll(user_f) : 2 * b->partition;
    if (!user_f && b->fetch < max_msg)
        b->fetch = max_msg; /* librdkafka refuses fetch.max.bytes < message.max.bytes */
    b->receive = user_r ? atoll(user_r) : 2 * b->fetch + MIB;
    if (user_r && !user_f && b->fetch + 512 > b->receive) /* librdkafka's rule */
        b->fetch = b->receive > 1024 ? b->receive - 512 : 512;
    b->queued_kb = user_q ? atoll(user_q) : (2 * b->fetch + 999) / 1000;
    /* librdkafka's ranges: 1e9 for the fetch sizes, INT_MAX - 512 for fetch.max.bytes. */
    if (b->fetch > 2147483135)
        b->fetch = 2147483135;
    if (b->receive > 2147483647)
        b->receive = 2147483647;
    char v[24];
    vw_status st = VW_OK;
    if (!user_p) {
        snprintf(v, sizeof v, "%lld",
                 (long long)(b->partition < 1000000000 ? b->partition : 1000000000));
        st = vw_kafka_conf_set(conf, "max.partition.fetch.bytes", v, err);
    }
    if (!st && !user_f) {
        snprintf(v, sizeof v, "%lld", (long long)b->fetch);
        st = vw_kafka_conf_set(conf, "fetch.max.bytes", v, err);
    }
    if (!st && !user_r) {
        snprintf(v, sizeof v, "%lld", (long long)b->receive);
        st = vw_kafka_conf_set(conf, "receive.message.max.bytes", v, err);
    }
    if (!st && !user_q) {
        snprintf(v, sizeof v, "%lld", (long long)b->queued_kb);
        st = vw_kafka_conf_set(conf, "queued.max.messages.kbytes", v, err);
    }
    return st;
}

vw_status vw_source_conf(const vw_config *cfg, bool replay, rd_kafka_conf_t *conf,
                         vw_source_conf_info *info, vw_err *err) {
    vw_source_conf_info own;
    if (!info)
        info = &own;
    char stats[32];
    info->kip848 = kip848(cfg);
    snprintf(stats, sizeof stats, "%lld", (long long)cfg->metrics.stats_interval_ms);
    vw_status st = check_protocol(cfg, err);
    if (!st && !info->kip848)
        st = vw_kafka_conf_set(conf, "partition.assignment.strategy", "cooperative-sticky", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "auto.offset.reset", replay ? "error" : "earliest", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "statistics.interval.ms", stats, err);
    if (!st)
        st = vw_kafka_conf_set(conf, "client.id", "vela-worker", err);
    if (!st)
        st = fetch_bounds(cfg, conf, &info->bounds, err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &cfg->kafka.common, NULL, err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &cfg->kafka.consumer, NULL, err);
    /* Join-state lines (source.c on_log); the user's own `debug` is kept. */
    const char *dbg = vw_kafka_consumer_prop(cfg, "debug");
    info->kafka_debug = dbg != NULL;
    if (!st && !replay) {
        char all[512];
        snprintf(all, sizeof all, "%s%scgrp", dbg ? dbg : "", dbg ? "," : "");
        st = vw_kafka_conf_set(conf, "debug", all, err);
    }
    /* Replay assigns partitions itself: a group id nobody joins, no commits.
     * The worker joins kafka.group.id, "vela-worker" when the config has none
     * (config/worker.example.yaml, docs/worker.md "Configuration"). */
    if (!st && replay)
        st = vw_kafka_conf_set(conf, "group.id", "vela-worker-replay", err);
    else if (!st && !vw_kafka_consumer_prop(cfg, "group.id"))
        st = vw_kafka_conf_set(conf, "group.id", VW_DEFAULT_GROUP_ID, err);
    /* The delivery rule: offsets move only through the tracker. */
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.auto.commit", "false", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.auto.offset.store", "false", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.partition.eof", "false", err);
    /* Only committed requests are answered (the config refuses another value:
     * service/config.c "pinned"). librdkafka's default, stated. */
    if (!st)
        st = vw_kafka_conf_set(conf, "isolation.level", "read_committed", err);
    if (st)
        return st;
    /* Only the sticky assignor keeps state (source.c destroy_would_abort);
     * range and roundrobin, a user's override, do not. */
    char strategy[256];
    size_t len = sizeof strategy;
    info->sticky_assignor = rd_kafka_conf_get(conf, "partition.assignment.strategy", strategy,
                                              &len) == RD_KAFKA_CONF_OK &&
                            strstr(strategy, "sticky");
    return VW_OK;
}

/* The fault sweep's advice (docs/reliability.md "Heartbeat settings"): after
 * a coordinator error on a Heartbeat librdkafka 2.0.2 sends none until the
 * next interval, so with a heartbeat above a third of the session one missed
 * heartbeat can end the session: the assignment is lost and the acknowledged,
 * uncommitted tail is answered again. */
void vw_source_conf_advise(const vw_config *cfg, bool replay, const vw_log *log) {
    if (kip848(cfg))
        return; /* the broker chooses both */
    int64_t session = consumer_ms(cfg, "session.timeout.ms", 45000);
    int64_t hb = consumer_ms(cfg, "heartbeat.interval.ms", 3000);
    if (!replay && 3 * hb > session)
        VW_LOG(log, VW_LOG_WARN, "consumer",
               "heartbeat.interval.ms is more than a third of session.timeout.ms: one missed "
               "heartbeat can end the session heartbeat_ms=%lld session_ms=%lld",
               (long long)hb, (long long)session);
}
