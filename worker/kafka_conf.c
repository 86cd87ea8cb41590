/* kafka_conf.c — librdkafka configuration helpers and the shared error
 * callback (see kafka_conf.h). */
#include "kafka_conf.h"

#include <string.h>

#include "worker_impl.h"

vw_status vw_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value, vw_err *err) {
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
        return VW_FAIL(err, VW_EINVAL, "kafka_config", "%s=%s: %s", key, value, errstr);
    return VW_OK;
}

vw_status vw_conf_apply(rd_kafka_conf_t *conf, const vw_kvlist *l, const char *skip, vw_err *err) {
    for (size_t i = 0; i < l->n; i++) {
        if (skip && !strcmp(l->items[i].key, skip))
            continue;
        vw_status st = vw_conf_set(conf, l->items[i].key, l->items[i].value, err);
        if (st)
            return st;
    }
    return VW_OK;
}

void vw_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    struct vw_worker *w = opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char cause[512];
        rd_kafka_resp_err_t real = rd_kafka_fatal_error(rk, cause, sizeof cause);
        VW_LOG(w->log, VW_LOG_ERROR, "kafka",
               "fatal client error, stopping client=%s err=%s "
               "reason=\"%s\"",
               rd_kafka_name(rk), rd_kafka_err2name(real), cause);
        if (rk == w->producer)
            w->producer_dead = true;
        vw_worker_set_fatal(w);
        return;
    }
    /* Everything else is informational: librdkafka recovers by itself. */
    VW_LOG(w->log, VW_LOG_WARN, "kafka", "client error client=%s err=%s reason=\"%s\"",
           rd_kafka_name(rk), rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}
