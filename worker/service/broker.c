/* broker.c — the mock-cluster broker (see broker.h). Owns one dummy producer
 * handle that carries the mock cluster; never produces or consumes itself. */
#include "broker.h"

#include <dlfcn.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vw_broker {
    rd_kafka_t *rk; /* dummy handle: the mock cluster's owner */
    rd_kafka_mock_cluster_t *mc;
    int n_brokers;
};

vw_status vw_broker_new(int n_brokers, vw_broker **out, vw_err *err) {
    char errstr[512];
    vw_status st = VW_OK;
    vw_broker *b = NULL;
    rd_kafka_conf_t *conf = NULL;
    *out = NULL;
    if (n_brokers < 1 || n_brokers > 64)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "--brokers %d: expected 1..64", n_brokers);
    b = calloc(1, sizeof *b);
    conf = rd_kafka_conf_new();
    if (!b || !conf) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "broker allocation failed");
        goto done;
    }
    /* The handle only hosts the cluster; keep its own logging quiet. */
    if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_config", "log_level: %s", errstr);
        goto done;
    }
    b->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!b->rk) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "rd_kafka_new: %s", errstr);
        goto done;
    }
    conf = NULL; /* owned by b->rk now */
    b->mc = rd_kafka_mock_cluster_new(b->rk, n_brokers);
    if (!b->mc) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_mock", "rd_kafka_mock_cluster_new(%d) failed",
                     n_brokers);
        goto done;
    }
    b->n_brokers = n_brokers;
    *out = b;
    b = NULL;
done:
    if (conf)
        rd_kafka_conf_destroy(conf);
    vw_broker_free(b);
    return st;
}

static vw_status create_topic(vw_broker *b, const char *name, long parts, vw_err *err) {
    if (!*name || parts < 1 || parts > 10000)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "topic '%s:%ld': expected name:partitions",
                       name, parts);
    int rf = b->n_brokers < 3 ? b->n_brokers : 3;
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(b->mc, name, (int)parts, rf);
    if (e)
        return VW_FAIL(err, VW_EKAFKA, "kafka_mock", "create topic %s: %s", name,
                       rd_kafka_err2str(e));
    return VW_OK;
}

vw_status vw_broker_create_topics(vw_broker *b, const char *spec, vw_err *err) {
    char *copy = strdup(spec);
    if (!copy)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "topic spec copy failed");
    vw_status st = VW_OK;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        char *end = NULL;
        long parts = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || end == colon + 1 || *end) {
            st = VW_FAIL(err, VW_EINVAL, "bad_argument", "topic '%s': expected name:partitions",
                         tok);
            break;
        }
        *colon = 0;
        st = create_topic(b, tok, parts, err);
    }
    free(copy);
    return st;
}

const char *vw_broker_bootstraps(const vw_broker *b) {
    return rd_kafka_mock_cluster_bootstraps(b->mc);
}

vw_status vw_broker_control(vw_broker *b, const char *line, vw_err *err) {
    char a[256], c[256];
    long x = 0, y = 0, z = 0;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    /* Before "topic": its pattern would read "topic_error T N" as a topic "_error". */
    if (sscanf(line, "topic_error %255s %ld", a, &x) == 2) {
        rd_kafka_mock_topic_set_error(b->mc, a, (rd_kafka_resp_err_t)x);
        return VW_OK;
    }
    if (sscanf(line, "topic %255s %ld", a, &x) == 2)
        return create_topic(b, a, x, err);
    if (sscanf(line, "err %ld %ld %ld", &x, &y, &z) == 3 && y > 0 && y <= 1000) {
        rd_kafka_resp_err_t errs[1000];
        for (long i = 0; i < y; i++)
            errs[i] = (rd_kafka_resp_err_t)z;
        rd_kafka_mock_push_request_errors_array(b->mc, (int16_t)x, (size_t)y, errs);
        return VW_OK;
    }
    if (sscanf(line, "down %ld", &x) == 1)
        e = rd_kafka_mock_broker_set_down(b->mc, (int32_t)x);
    else if (sscanf(line, "up %ld", &x) == 1)
        e = rd_kafka_mock_broker_set_up(b->mc, (int32_t)x);
    else if (sscanf(line, "leader %255s %ld %ld", c, &x, &y) == 3)
        e = rd_kafka_mock_partition_set_leader(b->mc, c, (int32_t)x, (int32_t)y);
    else
        return VW_FAIL(err, VW_EINVAL, "bad_command", "unknown control command: %s", line);
    if (e)
        return VW_FAIL(err, VW_EKAFKA, "kafka_mock", "%s: %s", line, rd_kafka_err2str(e));
    return VW_OK;
}

/* The KIP-848 setters exist in librdkafka 2.12 and later only; the worker is
 * built against older headers and runs on either, so they are looked up in
 * the loaded library. */
typedef void (*mock_set_ms)(rd_kafka_mock_cluster_t *mc, int ms);

vw_status vw_broker_group_timeouts(vw_broker *b, int session_ms, int heartbeat_ms, vw_err *err) {
    mock_set_ms session, heartbeat;
    *(void **)&session = dlsym(RTLD_DEFAULT, "rd_kafka_mock_set_group_consumer_session_timeout_ms");
    *(void **)&heartbeat =
        dlsym(RTLD_DEFAULT, "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms");
    if (!session || !heartbeat)
        return VW_FAIL(err, VW_EUNSUPPORTED, "kafka_mock",
                       "this librdkafka (%s) has no KIP-848 groups in its mock: 2.12 or later "
                       "needed",
                       rd_kafka_version_str());
    if (session_ms <= 0 || heartbeat_ms <= 0)
        return VW_FAIL(err, VW_EINVAL, "bad_option", "group timeouts must be positive (%d, %d)",
                       session_ms, heartbeat_ms);
    session(b->mc, session_ms);
    heartbeat(b->mc, heartbeat_ms);
    return VW_OK;
}

void vw_broker_free(vw_broker *b) {
    if (!b)
        return;
    if (b->mc)
        rd_kafka_mock_cluster_destroy(b->mc);
    if (b->rk)
        rd_kafka_destroy(b->rk);
    free(b);
}
