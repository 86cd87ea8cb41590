/* producer.c — the worker's producer side: result records in per-partition
 * input order, dead letters, delivery reports (see worker.h). Runs on the Kafka
 * thread only (delivery reports are served by rd_kafka_poll here). Never
 * consumes or commits: an acknowledgement only tells the tracker (see
 * producer.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "producer.h"

#include "admit_record.h"
#include "admission/canonical_json.h"
#include "kafka_conf.h"
#include "service/clock.h"
#include "worker_impl.h"

/* Errors that no retry can fix: the record must take another way. */
static bool permanent(rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           e == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE || e == RD_KAFKA_RESP_ERR_INVALID_RECORD ||
           e == RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE || e == RD_KAFKA_RESP_ERR_INVALID_MSG ||
           e == RD_KAFKA_RESP_ERR__INVALID_ARG || e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
}

static void add_header(rd_kafka_headers_t *h, const char *name, const void *v, size_t len) {
    rd_kafka_header_add(h, name, -1, v, (ssize_t)len);
}

static rd_kafka_headers_t *base_headers(struct vw_worker *w, const vw_item *it) {
    char source[320];
    const char *model = w->proc->ops->model(w->proc);
    vw_source_string(source, sizeof source, w->topic, it->partition, it->offset);
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    add_header(h, VW_HDR_REQUEST_ID, it->request_id, strlen(it->request_id));
    add_header(h, VW_HDR_MODEL, model, strlen(model));
    add_header(h, VW_HDR_SOURCE, source, strlen(source));
    return h;
}

/* True when the producer can deliver nothing more: it raised a fatal error
 * (the error callback may not have been served yet when producev answers
 * __FATAL, hence the direct check). Marks the worker fatal: exit 1. */
static bool producer_dead(struct vw_worker *w, rd_kafka_resp_err_t e) {
    char cause[256] = "";
    rd_kafka_resp_err_t real;
    if (!w->producer_dead && ((real = rd_kafka_fatal_error(w->producer, cause, sizeof cause)) ||
                              e == RD_KAFKA_RESP_ERR__FATAL)) {
        w->producer_dead = true;
        VW_RAISE(&w->fault, VW_EKAFKA, "kafka_fatal", "fatal producer error %s: %s",
                 rd_kafka_err2name(real ? real : e), real ? cause : rd_kafka_err2str(e));
    }
    return w->producer_dead;
}

/* Hands one message to librdkafka; retries while its queue is full.
 * Takes ownership of h on success. */
static rd_kafka_resp_err_t send_msg(struct vw_worker *w, const char *topic, const vw_item *it,
                                    const void *value, size_t len, rd_kafka_headers_t *h) {
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            w->producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(it->key, it->key_len),
            RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_HEADERS(h),
            RD_KAFKA_V_OPAQUE((void *)it), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || producer_dead(w, e))
            return e;
        rd_kafka_poll(w->producer, 10); /* serve delivery reports, then retry */
    }
}

/* Leaves a record unanswered and unacknowledged: its offset is never committed,
 * so the next owner of the partition answers it. For a producer that can send
 * nothing any more — not a fault of this record, so neither a dead letter nor
 * a drop (which would commit it unanswered). */
static void abandon(struct vw_worker *w, vw_item *it, const char *why) {
    VW_LOG(w->log, VW_LOG_WARN, "producer",
           "record left unanswered and uncommitted request_id=\"%s\" tp=%s:%d:%lld reason=\"%s\"",
           it->request_id, w->topic, (int)it->partition, (long long)it->offset, why);
    vw_item_free(it);
}

/* Gives up on a record that has no way out: logs, counts and acknowledges it so
 * the partition keeps moving (docs/contract.md "Delivery guarantees"). */
static void drop(struct vw_worker *w, vw_item *it, const char *why) {
    VW_LOG(w->log, VW_LOG_ERROR, "producer",
           "record dropped: neither a result nor a dead letter could be produced "
           "request_id=\"%s\" tp=%s:%d:%lld reason=\"%s\"",
           it->request_id, w->topic, (int)it->partition, (long long)it->offset, why);
    vw_offsets_ack(w->tracker, w->topic, it->partition, it->epoch, it->offset, NULL);
    vw_item_free(it);
}

/* Sends the request to the DLQ; the item's type and message say why (kept in
 * the item: a failed dead-letter delivery is produced again with them). */
static void dead_letter(struct vw_worker *w, vw_item *it) {
    const char *type = it->type[0] ? it->type : "no_result", *msg = vw_item_msg(it);
    rd_kafka_headers_t *h = base_headers(w, it);
    add_header(h, VW_HDR_ERROR, msg, strlen(msg));
    add_header(h, VW_HDR_ERROR_TYPE, type, strlen(type));
    it->dead_letter = true;
    VW_LOG(w->log, VW_LOG_WARN, "producer", "dead letter request_id=\"%s\" tp=%s:%d:%lld type=%s",
           it->request_id, w->topic, (int)it->partition, (long long)it->offset, type);
    rd_kafka_resp_err_t e = send_msg(w, w->cfg->topics.dlq, it, it->value, it->value_len, h);
    if (e) {
        rd_kafka_headers_destroy(h);
        if (producer_dead(w, e))
            abandon(w, it, rd_kafka_err2str(e));
        else
            drop(w, it, rd_kafka_err2str(e));
    }
}

/* Replay to a file: one JSON line per result, acknowledged at once. */
static void write_line(struct vw_worker *w, vw_item *it) {
    vw_sbuf sb = {0};
    char source[320];
    vw_source_string(source, sizeof source, w->topic, it->partition, it->offset);
    vw_sbuf_puts(&sb, "{\"source\":");
    vw_canon_string(&sb, source, strlen(source));
    vw_sbuf_puts(&sb, ",\"request_id\":");
    vw_canon_string(&sb, it->request_id, strlen(it->request_id));
    if (it->kind == VW_RESULT_RECORD && it->out_value) {
        vw_sbuf_printf(&sb, ",\"vela_status\":%d,\"value\":", it->vela_status);
        vw_sbuf_put(&sb, it->out_value, it->out_len);
    } else {
        const char *type = it->type[0] ? it->type : "no_result";
        vw_sbuf_puts(&sb, ",\"dead_letter\":");
        vw_canon_string(&sb, type, strlen(type));
    }
    vw_sbuf_puts(&sb, "}\n");
    if (!vw_sbuf_status(&sb))
        fwrite(sb.p, 1, sb.len, w->sink);
    vw_sbuf_free(&sb);
    vw_offsets_ack(w->tracker, w->topic, it->partition, it->epoch, it->offset, NULL);
    w->replay_done++;
    vw_item_free(it);
}

/* VW_CRASH_AT=<point>:<n>:fatal (crashpoint.h): the producer fails as an
 * idempotent producer's broken sequence would make it. */
static void fail_producer(struct vw_worker *w) {
    rd_kafka_test_fatal_error(w->producer, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                              "VW_CRASH_AT");
}

static void produce_one(struct vw_worker *w, vw_item *it) {
    vw_err err = {0};
    if (it->kind == VW_RESULT_RECORD && !it->out_value) {
        vw_result r = {.kind = VW_RESULT_RECORD, .value = it->res_value, .value_len = it->res_len};
        vw_record rec = {.topic = w->topic,
                         .partition = it->partition,
                         .offset = it->offset,
                         .timestamp = it->timestamp,
                         .request_id = it->request_id};
        if (vw_result_value(&r, &rec, &it->out_value, &it->out_len, &err))
            /* a processor bug: the record still moves on */
            vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
    }
    if (w->sink) {
        write_line(w, it);
        return;
    }
    if (it->kind != VW_RESULT_RECORD) {
        dead_letter(w, it);
        return;
    }
    if (vw_crashpoint_hit(&w->crash, VW_CRASH_BEFORE_PRODUCE))
        fail_producer(w);
    char status[24];
    size_t status_len = vw_fmt_i64(status, it->vela_status);
    rd_kafka_headers_t *h = base_headers(w, it);
    add_header(h, VW_HDR_STATUS, status, status_len);
    for (size_t i = 0; i < it->n_headers; i++)
        add_header(h, it->headers[i].name, it->headers[i].value, it->headers[i].value_len);
    const char *topic = it->reply_topic ? it->reply_topic : w->results_topic;
    rd_kafka_resp_err_t e = send_msg(w, topic, it, it->out_value, it->out_len, h);
    if (e) {
        rd_kafka_headers_destroy(h);
        vw_metrics_inc(w->metrics, VW_M_PRODUCE_ERRORS, 1);
        if (producer_dead(w, e)) {
            abandon(w, it, rd_kafka_err2str(e));
            return;
        }
        vw_item_fail(it, VW_RESULT_FATAL, "produce_failed", rd_kafka_err2str(e));
        dead_letter(w, it);
    }
    if (!e && vw_crashpoint_hit(&w->crash, VW_CRASH_AFTER_PRODUCE))
        fail_producer(w);
}

void vw_produce_ready(struct vw_worker *w) {
    vw_offset_pos pos;
    /* Delivery reports served while producing may add to the redo list: work
     * on a detached copy. */
    vw_item **redo = w->redo;
    size_t n_redo = w->n_redo;
    w->redo = NULL;
    w->n_redo = w->cap_redo = 0;
    for (size_t i = 0; i < n_redo; i++) {
        vw_item *it = redo[i];
        uint32_t epoch = 0;
        if (producer_dead(w, RD_KAFKA_RESP_ERR_NO_ERROR))
            abandon(w, it, "the producer failed fatally");
        else if (!w->replay &&
                 (!vw_offsets_is_assigned(w->tracker, w->topic, it->partition, &epoch) ||
                  epoch != it->epoch))
            vw_item_free(it); /* revoked or re-assigned since: the next owner answers it */
        else if (it->redo_dlq)
            dead_letter(w, it);
        else
            produce_one(w, it);
    }
    free(redo);
    while (!w->producer_dead && vw_offsets_next_ready(w->tracker, &pos))
        produce_one(w, pos.result);
}

/* Counts what an acknowledged result was. */
static void count_result(struct vw_worker *w, const vw_item *it) {
    if (it->dead_letter) {
        vw_metrics_inc(w->metrics, VW_M_DLQ, 1);
        return;
    }
    vw_metrics_result(w->metrics, it->vela_status);
    if (it->timestamp >= 0)
        vw_metrics_observe(w->metrics, VW_H_E2E, (double)(vw_wall_ms() - it->timestamp) / 1e3);
    if (it->vela_status == 200)
        return;
    if (it->type[0]) { /* the rejection named its type */
        vw_metrics_rejection(w->metrics, it->type);
        return;
    }
    /* Else one count per triple of the rejection's detail. */
    json_t *v = json_loadb(it->out_value, it->out_len, 0, NULL);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(v, "detail"), i, d)
        vw_metrics_rejection(w->metrics, json_string_value(json_object_get(d, "type")));
    json_decref(v);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    struct vw_worker *w = opaque;
    vw_item *it = m->_private;
    if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        vw_item_free(it); /* shutdown past the grace period: left uncommitted */
        return;
    }
    if (!m->err) {
        w->broker_up = true;
        if (w->replay)
            w->replay_done++;
        count_result(w, it);
        /* A stale epoch (the partition was revoked meanwhile) is not an error:
         * the new owner replays from the committed offset. */
        vw_offsets_ack(w->tracker, w->topic, it->partition, it->epoch, it->offset, NULL);
        vw_item_free(it);
        if (vw_crashpoint_hit(&w->crash, VW_CRASH_AFTER_DELIVERY))
            fail_producer(w);
        return;
    }
    vw_metrics_inc(w->metrics, VW_M_PRODUCE_ERRORS, 1);
    VW_LOG(w->log, VW_LOG_WARN, "producer",
           "delivery failed request_id=\"%s\" tp=%s:%d:%lld err=%s", it->request_id, w->topic,
           (int)it->partition, (long long)it->offset, rd_kafka_err2name(m->err));
    uint32_t epoch = 0;
    if (!w->replay && (!vw_offsets_is_assigned(w->tracker, w->topic, it->partition, &epoch) ||
                       epoch != it->epoch)) {
        vw_item_free(it); /* revoked (or re-assigned since): no longer ours */
        return;
    }
    if (producer_dead(w, m->err)) {
        abandon(w, it, rd_kafka_err2str(m->err));
        return;
    }
    if (permanent(m->err) && it->dead_letter) {
        drop(w, it, rd_kafka_err2str(m->err));
        return;
    }
    /* Transient (librdkafka already retried for message.timeout.ms): produce it
     * again; permanent: dead-letter it. Either way outside this callback. */
    if (permanent(m->err)) {
        it->redo_dlq = true;
        vw_item_fail(it, VW_RESULT_FATAL, rd_kafka_err2name(m->err), rd_kafka_err2str(m->err));
    } else {
        it->redo_dlq = it->dead_letter;
    }
    if (!vw_items_push(&w->redo, &w->n_redo, &w->cap_redo, it)) {
        /* Acknowledging it would commit it unanswered: stop instead (exit 1). */
        VW_RAISE(&w->fault, VW_ENOMEM, "out_of_memory", "the redo list, request_id=\"%s\"",
                 it->request_id);
        abandon(w, it, "out of memory for the retry list: stopping");
    }
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    struct vw_worker *w = rd_kafka_opaque(rk);
    vw_log_level lvl = level <= 3 ? VW_LOG_ERROR : level == 4 ? VW_LOG_WARN : VW_LOG_DEBUG;
    VW_LOG(w->log, lvl, "librdkafka", "%s client=%s facility=%s", buf, rd_kafka_name(rk), fac);
}

vw_status vw_producer_conf(struct vw_worker *w, rd_kafka_conf_t *conf, vw_err *err) {
    vw_status st = vw_kafka_conf_set(conf, "client.id", "vela-worker", err);
    if (!st)
        /* group.id sits in the common section by the documented shape; it is the
         * consumer's (a producer would warn CONFWARN and ignore it). */
        st = vw_kafka_conf_apply(conf, &w->cfg->kafka.common, "group.id", err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &w->cfg->kafka.producer, NULL, err);
    /* Idempotence keeps per-partition order across retries; acks=all is what
     * "acknowledged" means in the commit rule. */
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.idempotence", "true", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "acks", "all", err);
    if (st)
        return st;
    rd_kafka_conf_set_opaque(conf, w);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, vw_kafka_on_error);
    rd_kafka_conf_set_log_cb(conf, on_log);
    return VW_OK;
}

vw_status vw_producer_open(struct vw_worker *w, vw_err *err) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    vw_status st = conf ? vw_producer_conf(w, conf, err)
                        : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rd_kafka_conf_new");
    if (st)
        goto done;
    w->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!w->producer) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "producer: %s", errstr);
        goto done;
    }
    conf = NULL;
    w->pq = rd_kafka_queue_get_main(w->producer);
    rd_kafka_queue_io_event_enable(w->pq, w->wake[1], "p", 1);
done:
    if (conf)
        rd_kafka_conf_destroy(conf);
    return st;
}

void vw_producer_poll(struct vw_worker *w, int timeout_ms) {
    if (w->producer)
        rd_kafka_poll(w->producer, timeout_ms);
}

void vw_producer_close(struct vw_worker *w) {
    if (!w->producer)
        return;
    int64_t left = w->stop_deadline_ms - vw_now_ms();
    rd_kafka_flush(w->producer, left > 1000 ? (int)left : 1000);
    rd_kafka_purge(w->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(w->producer, 0); /* purged delivery reports free their items */
    rd_kafka_queue_io_event_enable(w->pq, -1, NULL, 0);
    rd_kafka_queue_destroy(w->pq);
    w->pq = NULL;
    rd_kafka_destroy(w->producer);
    w->producer = NULL;
}
