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
