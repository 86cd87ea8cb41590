/* sink.c — the worker's sink: result records, dead letters, delivery reports
 * and the redo list, or replay lines to a file (see sink.h). Runs on the
 * Kafka thread (delivery reports are served by this unit's polls and produce
 * calls), but for the log callback, which librdkafka's threads call. Never
 * consumes or commits: an acknowledgement only tells the ledger (offsets.h). */
#include "sink.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "result_out.h"
#include "service/clock.h"

struct vw_sink {
    vw_sink_opts o;
    rd_kafka_t *rk;           /* NULL: a file sink, or closed */
    rd_kafka_queue_t *q;      /* the producer's main queue (I/O event -> wake_fd) */
    rd_kafka_topic_t **known; /* handles of the topics it produces to (known_topics) */
    size_t n_known;
    vw_item **redo; /* failed deliveries to produce again (outside the DR callback) */
    size_t n_redo, cap_redo;
    bool dead;      /* the producer can deliver nothing more (raised into the fault record) */
    vw_txn *txn;    /* exactly_once: the open transaction keeps every record (txn.h); else NULL */
    size_t done;    /* replay: results delivered or written */
    size_t max_msg; /* the producer's message.max.bytes: what one record may weigh */
    int64_t blocked_since_ms; /* results wait out a transient produce error since; 0: none */
    vw_kafka_health health;
};

/* Errors that no retry can fix: the record itself is too large or invalid, so
 * the topic will never take it and it must take another way (a result: the
 * dead-letter topic; a dead letter: without its payload). Everything else is
 * transient — an unknown topic or partition (a topic being created or
 * recreated), a refused authorisation (an ACL not granted yet), a leader
 * change, a timeout — and the record is produced again after a backoff
 * (wait_and_redo), never dead-lettered. */
static bool permanent(rd_kafka_resp_err_t e) {
    return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           e == RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE || e == RD_KAFKA_RESP_ERR_INVALID_RECORD ||
           e == RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE || e == RD_KAFKA_RESP_ERR_INVALID_MSG ||
           e == RD_KAFKA_RESP_ERR__INVALID_ARG;
}

/* Adds a header; returns the bytes it adds to the record (name, value and
 * their length fields, at most 10 bytes each as varints). */
static size_t add_header(rd_kafka_headers_t *h, const char *name, const void *v, size_t len) {
    rd_kafka_header_add(h, name, -1, v, (ssize_t)len);
    return strlen(name) + len + 20;
}

/* The contract's first headers; *size (may be NULL) receives their bytes. */
static rd_kafka_headers_t *base_headers(vw_sink *s, const vw_item *it, size_t *size) {
    char source[VW_SOURCE_MAX];
    const char *model = s->o.proc->ops->model(s->o.proc);
    vw_result_out_source(source, sizeof source, s->o.topic, it->partition, it->offset);
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    size_t n = add_header(h, VW_HDR_REQUEST_ID, it->request_id, strlen(it->request_id));
    n += add_header(h, VW_HDR_MODEL, model, strlen(model));
    n += add_header(h, VW_HDR_SOURCE, source, strlen(source));
    if (size)
        *size = n;
    return h;
}

/* True when the producer can deliver nothing more: it raised a fatal error
 * (the error callback may not have been served yet when producev answers
 * __FATAL, hence the direct check). Marks the worker fatal: exit 1. */
static bool producer_dead(vw_sink *s, rd_kafka_resp_err_t e) {
    if (!s->dead && vw_kafka_fatal(s->rk, "producer", e, s->o.log, s->o.fault))
        s->dead = true;
    return s->dead;
}

/* Hands one message to librdkafka; retries while its queue is full.
 * Takes ownership of h on success. */
static rd_kafka_resp_err_t send_msg(vw_sink *s, const char *topic, const vw_item *it,
                                    const void *value, size_t len, rd_kafka_headers_t *h) {
    if (s->txn && !vw_txn_begin(s->txn, vw_now_ms()))
        return RD_KAFKA_RESP_ERR__STATE; /* no transaction can take it now */
    for (;;) {
        rd_kafka_resp_err_t e =
            rd_kafka_producev(s->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(it->key, it->key_len),
                              RD_KAFKA_V_VALUE((void *)value, len), RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_OPAQUE((void *)it), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || producer_dead(s, e))
            return e;
        rd_kafka_poll(s->rk, 10); /* serve delivery reports, then retry */
    }
}

/* Exactly once: a record refused because no transaction can take records now
 * goes back to the transaction, to be produced again after its abort. True
 * when it did (the item is the transaction's). */
static bool txn_refused(vw_sink *s, vw_item *it, rd_kafka_resp_err_t e) {
    if (!s->txn || e != RD_KAFKA_RESP_ERR__STATE || producer_dead(s, e))
        return false;
    vw_txn_refused(s->txn, it);
    return true;
}

/* Leaves a record unanswered and unacknowledged: its offset is never committed,
 * so the next owner of the partition answers it. For a producer that can send
 * nothing any more — not a fault of this record, so neither a dead letter nor
 * a drop (which would commit it unanswered). */
static void abandon(vw_sink *s, vw_item *it, const char *why) {
    VW_LOG(s->o.log, VW_LOG_WARN, "producer",
           "record left unanswered and uncommitted request_id=\"%s\" tp=%s:%d:%lld reason=\"%s\"",
           it->request_id, s->o.topic, (int)it->partition, (long long)it->offset, why);
    vw_item_free(it);
}

/* A record no way out is left for: not even its dead letter without a
 * payload was taken. Acknowledging it would commit it unanswered (until
 * 2026-12-05 it was, "record dropped"), so the worker stops before its offset
 * (dead_letter_failed, exit 1): the partition is not committed past it and
 * the next owner meets it again (docs/contract.md "Delivery guarantees"). */
static void dlq_failed(vw_sink *s, vw_item *it, rd_kafka_resp_err_t e) {
    vw_metrics_inc(s->o.metrics, VW_M_DLQ_FAILURES, 1);
    VW_LOG(s->o.log, VW_LOG_ERROR, "producer",
           "dead letter refused even without its payload, stopping request_id=\"%s\" "
           "tp=%s:%d:%lld err=%s",
           it->request_id, s->o.topic, (int)it->partition, (long long)it->offset,
           rd_kafka_err2name(e));
    VW_RAISE(s->o.fault, VW_EKAFKA, "dead_letter_failed",
             "the dead letter of tp=%s:%d:%lld was refused even without its payload: %s: %s",
             s->o.topic, (int)it->partition, (long long)it->offset, rd_kafka_err2name(e),
             rd_kafka_err2str(e));
    abandon(s, it, rd_kafka_err2str(e));
}

/* Keeps an item for vw_sink_redo (due at it->redo_due_ms); out of memory
 * stops the worker rather than acknowledge it unanswered. */
static void keep(vw_sink *s, vw_item *it) {
    if (vw_items_push(&s->redo, &s->n_redo, &s->cap_redo, it))
        return;
    VW_RAISE(s->o.fault, VW_ENOMEM, "out_of_memory", "the redo list, request_id=\"%s\"",
             it->request_id);
    abandon(s, it, "out of memory for the retry list: stopping");
}

/* Results wait out a transient produce error (blocked) or flow again: logged
 * once each way, and /readyz answers 503 meanwhile (metrics.h). */
static void set_blocked(vw_sink *s, bool blocked, const char *topic, rd_kafka_resp_err_t e) {
    if (blocked == (s->blocked_since_ms != 0))
        return;
    if (blocked) {
        s->blocked_since_ms = vw_now_ms();
        VW_LOG(s->o.log, VW_LOG_WARN, "producer",
               "results wait: transient produce error, produced again with backoff topic=%s "
               "err=%s reason=\"%s\"",
               topic, rd_kafka_err2name(e), rd_kafka_err2str(e));
    } else {
        VW_LOG(s->o.log, VW_LOG_INFO, "producer", "results flow again waited_ms=%lld",
               (long long)(vw_now_ms() - s->blocked_since_ms));
        s->blocked_since_ms = 0;
    }
    vw_metrics_set_produce_blocked(s->o.metrics, blocked);
}

/* A transient produce error (see permanent): the record is produced again
 * after delivery.retry_backoff_ms, doubling to retry_backoff_max_ms. */
static void wait_and_redo(vw_sink *s, vw_item *it, const char *topic, rd_kafka_resp_err_t e) {
    int64_t b = s->o.cfg->delivery.retry_backoff_ms, max = s->o.cfg->delivery.retry_backoff_max_ms;
    for (int i = 0; i < it->produce_waits && b < max; i++)
        b *= 2;
    vw_item_set_produce_wait(it, vw_now_ms() + (b < max ? b : max));
    vw_metrics_inc(s->o.metrics, VW_M_PRODUCE_WAITS, 1);
    VW_LOG(s->o.log, VW_LOG_DEBUG, "producer",
           "produce waits request_id=\"%s\" tp=%s:%d:%lld topic=%s err=%s attempt=%d",
           it->request_id, s->o.topic, (int)it->partition, (long long)it->offset, topic,
           rd_kafka_err2name(e), it->produce_waits);
    set_blocked(s, true, topic, e);
    keep(s, it);
}

/* Bytes of a dead letter besides its payload and headers (the record's own
 * fields, the batch around it) and room for the truncation header: what
 * librdkafka counts against message.max.bytes is less. */
enum { DLQ_MARGIN = 1024 };

/* Sends the request to the DLQ; the item's type and message say why (kept in
 * the item: a failed dead-letter delivery is produced again with them). The
 * payload is the request's value, cut to what fits the producer's
 * message.max.bytes beside the key and headers (a value over
 * limits.max_request_bytes was never kept: cut to nothing), and nothing at all
 * once the DLQ refused it whole (dlq_empty); a cut payload says so in
 * vela-payload-truncated (the value's size in bytes). */
static void dead_letter(vw_sink *s, vw_item *it) {
    const char *type = it->type[0] ? it->type : "no_result", *msg = vw_item_msg(it);
    size_t used;
    rd_kafka_headers_t *h = base_headers(s, it, &used);
    used += add_header(h, VW_HDR_ERROR, msg, strnlen(msg, VW_ECHO_MAX));
    used += add_header(h, VW_HDR_ERROR_TYPE, type, strlen(type));
    used += DLQ_MARGIN + it->key_len;
    size_t room = s->max_msg > used ? s->max_msg - used : 0;
    size_t payload = it->value_dropped || it->dlq_empty ? 0 : it->value_len;
    if (payload > room)
        payload = room;
    vw_item_set_dead_letter(it, payload < it->value_len);
    if (it->dlq_cut) {
        char n[24];
        add_header(h, VW_HDR_TRUNCATED, n, vw_fmt_i64(n, (int64_t)it->value_len));
    }
    VW_LOG(s->o.log, VW_LOG_WARN, "producer",
           "dead letter request_id=\"%s\" tp=%s:%d:%lld type=%s reason=\"%s\" "
           "payload_bytes=%zu value_bytes=%zu",
           it->request_id, s->o.topic, (int)it->partition, (long long)it->offset, type, msg,
           payload, it->value_len);
    rd_kafka_resp_err_t e =
        send_msg(s, s->o.cfg->topics.dlq, it, payload ? it->value : NULL, payload, h);
    if (!e) {
        if (s->txn)
            vw_txn_sent(s->txn, it);
        return;
    }
    rd_kafka_headers_destroy(h);
    if (txn_refused(s, it, e))
        return;
    vw_metrics_inc(s->o.metrics, VW_M_PRODUCE_ERRORS, 1);
    if (producer_dead(s, e)) {
        abandon(s, it, rd_kafka_err2str(e));
    } else if (!permanent(e)) {
        vw_item_set_redo(it, true, it->redo_due_ms);
        wait_and_redo(s, it, s->o.cfg->topics.dlq, e);
    } else if (!it->dlq_empty) {
        vw_item_set_dlq_empty(it); /* once more, without the payload */
        dead_letter(s, it);
    } else {
        dlq_failed(s, it, e);
    }
}

/* Replay to a file: one JSON line per result, acknowledged at once. */
static void write_line(vw_sink *s, vw_item *it) {
    vw_sbuf sb = {0};
    char source[320];
    vw_result_out_source(source, sizeof source, s->o.topic, it->partition, it->offset);
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
        fwrite(sb.p, 1, sb.len, s->o.file);
    vw_sbuf_free(&sb);
    vw_offsets_ack(s->o.ledger, s->o.topic, it->partition, it->epoch, it->offset, NULL);
    s->done++;
    vw_item_free(it);
}

/* VW_CRASH_AT=<point>:<n>:fatal (crashpoint.h): the producer fails as an
 * idempotent producer's broken sequence would make it. */
static void fail_producer(vw_sink *s) {
    rd_kafka_test_fatal_error(s->rk, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, "VW_CRASH_AT");
}

static void produce_one(vw_sink *s, vw_item *it) {
    vw_err err = {0};
    if (it->kind == VW_RESULT_RECORD && !it->out_value) {
        vw_result r = {.kind = VW_RESULT_RECORD, .value = it->res_value, .value_len = it->res_len};
        vw_record rec = {.topic = s->o.topic,
                         .partition = it->partition,
                         .offset = it->offset,
                         .timestamp = it->timestamp,
                         .request_id = it->request_id};
        char *value = NULL;
        size_t len = 0;
        if (vw_result_out_value(&r, &rec, &value, &len, &err))
            /* a processor bug: the record still moves on */
            vw_item_fail(it, VW_RESULT_FATAL, err.type, err.msg);
        else
            vw_item_set_output(it, value, len);
    }
    if (s->o.file) {
        write_line(s, it);
        return;
    }
    if (it->kind != VW_RESULT_RECORD) {
        dead_letter(s, it);
        return;
    }
    if (vw_crashpoint_hit(s->o.crash, VW_CRASH_BEFORE_PRODUCE))
        fail_producer(s);
    char status[24];
    size_t status_len = vw_fmt_i64(status, it->vela_status);
    rd_kafka_headers_t *h = base_headers(s, it, NULL);
    add_header(h, VW_HDR_STATUS, status, status_len);
    for (size_t i = 0; i < it->n_headers; i++)
        add_header(h, it->headers[i].name, it->headers[i].value, it->headers[i].value_len);
    const char *topic = it->reply_topic ? it->reply_topic : s->o.results_topic;
    rd_kafka_resp_err_t e = send_msg(s, topic, it, it->out_value, it->out_len, h);
    if (!e && s->txn)
        vw_txn_sent(s->txn, it);
    if (e) {
        rd_kafka_headers_destroy(h);
        if (txn_refused(s, it, e))
            return;
        vw_metrics_inc(s->o.metrics, VW_M_PRODUCE_ERRORS, 1);
        if (producer_dead(s, e)) {
            abandon(s, it, rd_kafka_err2str(e));
        } else if (permanent(e)) { /* e.g. larger than message.max.bytes */
            vw_item_fail(it, VW_RESULT_FATAL, "produce_failed", rd_kafka_err2str(e));
            dead_letter(s, it);
        } else {
            wait_and_redo(s, it, topic, e);
        }
        return;
    }
    if (!e && vw_crashpoint_hit(s->o.crash, VW_CRASH_AFTER_PRODUCE))
        fail_producer(s);
}

void vw_sink_produce(vw_sink *s, vw_item *it) {
    produce_one(s, it);
}

/* Exactly once: an aborted transaction's records, produced again in their
 * order into the next transaction (each still of its partition's current
 * assignment; others are freed: their offsets were not committed). */
static void txn_redo(vw_sink *s) {
    size_t n = 0;
    vw_item **redo = vw_txn_take_redo(s->txn, &n);
    for (size_t i = 0; i < n; i++) {
        vw_item *it = redo[i];
        uint32_t epoch = 0;
        if (producer_dead(s, RD_KAFKA_RESP_ERR_NO_ERROR))
            abandon(s, it, "the producer failed fatally");
        else if (!vw_offsets_is_assigned(s->o.ledger, s->o.topic, it->partition, &epoch) ||
                 epoch != it->epoch)
            vw_item_free(it); /* revoked or re-assigned since: the next owner answers it */
        else
            produce_one(s, it); /* a result, or its dead letter (its kind says which) */
    }
    free(redo);
}

void vw_sink_redo(vw_sink *s) {
    if (s->txn)
        txn_redo(s);
    /* Delivery reports served while producing may add to the redo list: work
     * on a detached copy. */
    vw_item **redo = s->redo;
    size_t n_redo = s->n_redo;
    s->redo = NULL;
    s->n_redo = s->cap_redo = 0;
    int64_t now = vw_now_ms();
    for (size_t i = 0; i < n_redo; i++) {
        vw_item *it = redo[i];
        uint32_t epoch = 0;
        if (it->redo_due_ms > now && !producer_dead(s, RD_KAFKA_RESP_ERR_NO_ERROR))
            keep(s, it); /* its backoff is not over */
        else if (producer_dead(s, RD_KAFKA_RESP_ERR_NO_ERROR))
            abandon(s, it, "the producer failed fatally");
        else if (!s->o.replay &&
                 (!vw_offsets_is_assigned(s->o.ledger, s->o.topic, it->partition, &epoch) ||
                  epoch != it->epoch))
            vw_item_free(it); /* revoked or re-assigned since: the next owner answers it */
        else if (it->redo_dlq)
            dead_letter(s, it);
        else
            produce_one(s, it);
    }
    free(redo);
    /* What waited was revoked meanwhile and nothing is on its way: no
     * delivery will come to say results flow again. */
    if (s->blocked_since_ms && !s->n_redo && s->rk && !rd_kafka_outq_len(s->rk))
        set_blocked(s, false, NULL, RD_KAFKA_RESP_ERR_NO_ERROR);
}

/* Counts what an acknowledged result was. */
static void count_result(vw_sink *s, const vw_item *it) {
    if (it->dead_letter) {
        vw_metrics_inc(s->o.metrics, VW_M_DLQ, 1);
        if (it->dlq_cut)
            vw_metrics_inc(s->o.metrics, VW_M_DLQ_TRUNCATED, 1);
        return;
    }
    vw_metrics_result(s->o.metrics, it->vela_status);
    if (it->timestamp >= 0)
        vw_metrics_observe(s->o.metrics, VW_H_E2E, (double)(vw_wall_ms() - it->timestamp) / 1e3);
    if (it->vela_status == 200)
        return;
    if (it->type[0]) { /* the rejection named its type */
        vw_metrics_rejection(s->o.metrics, it->type);
        return;
    }
    /* Else one count per triple of the rejection's detail. */
    json_t *v = json_loadb(it->out_value, it->out_len, 0, NULL);
    size_t i;
    json_t *d;
    json_array_foreach(json_object_get(v, "detail"), i, d)
        vw_metrics_rejection(s->o.metrics, json_string_value(json_object_get(d, "type")));
    json_decref(v);
}

/* The transaction's committed hook: a result counts once it is visible. */
static void txn_committed(void *ctx, vw_item *it) {
    count_result(ctx, it);
}

/* Exactly once: the transaction keeps every record until it ends, so a
 * delivery report only tells it: delivered (the ledger's acknowledgement), or
 * failed (the transaction must abort; after a permanent error the record is
 * dead-lettered when produced again, a refused dead letter is sent once more
 * without its payload, and one refused even so stops the worker, as at least
 * once does: docs/worker.md "Dead letters that fit"). A purge is the abort's:
 * no news. */
static void txn_delivery(vw_sink *s, vw_item *it, rd_kafka_resp_err_t e) {
    if (e == RD_KAFKA_RESP_ERR__PURGE_QUEUE || e == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)
        return;
    if (!e) {
        s->health.up = true;
        vw_txn_delivered(s->txn, it);
        if (vw_crashpoint_hit(s->o.crash, VW_CRASH_AFTER_DELIVERY))
            fail_producer(s);
        return;
    }
    vw_metrics_inc(s->o.metrics, VW_M_PRODUCE_ERRORS, 1);
    VW_LOG(s->o.log, VW_LOG_WARN, "producer",
           "delivery failed in a transaction request_id=\"%s\" tp=%s:%d:%lld err=%s",
           it->request_id, s->o.topic, (int)it->partition, (long long)it->offset,
           rd_kafka_err2name(e));
    if (producer_dead(s, e))
        return; /* kept, never committed */
    vw_txn_failed(s->txn);
    if (!permanent(e))
        return;
    if (it->dead_letter && !it->dlq_empty) {
        vw_item_set_dlq_empty(it); /* the redo sends it once more, without its payload */
    } else if (it->dead_letter) {
        vw_txn_forget(s->txn, it);
        dlq_failed(s, it, e); /* refused even empty: the worker stops before it */
    } else {
        vw_item_fail(it, VW_RESULT_FATAL, rd_kafka_err2name(e), rd_kafka_err2str(e));
    }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    vw_sink *s = opaque;
    vw_item *it = m->_private;
    if (s->txn) {
        txn_delivery(s, it, m->err);
        return;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) {
        vw_item_free(it); /* shutdown past the grace period: left uncommitted */
        return;
    }
    if (!m->err) {
        s->health.up = true;
        if (!s->n_redo)
            set_blocked(s, false, NULL, RD_KAFKA_RESP_ERR_NO_ERROR);
        if (s->o.replay)
            s->done++;
        count_result(s, it);
        /* A stale epoch (the partition was revoked meanwhile) is not an error:
         * the new owner replays from the committed offset. */
        vw_offsets_ack(s->o.ledger, s->o.topic, it->partition, it->epoch, it->offset, NULL);
        vw_item_free(it);
        if (vw_crashpoint_hit(s->o.crash, VW_CRASH_AFTER_DELIVERY))
            fail_producer(s);
        return;
    }
    vw_metrics_inc(s->o.metrics, VW_M_PRODUCE_ERRORS, 1);
    VW_LOG(s->o.log, VW_LOG_WARN, "producer",
           "delivery failed request_id=\"%s\" tp=%s:%d:%lld err=%s", it->request_id, s->o.topic,
           (int)it->partition, (long long)it->offset, rd_kafka_err2name(m->err));
    uint32_t epoch = 0;
    if (!s->o.replay && (!vw_offsets_is_assigned(s->o.ledger, s->o.topic, it->partition, &epoch) ||
                         epoch != it->epoch)) {
        vw_item_free(it); /* revoked (or re-assigned since): no longer ours */
        return;
    }
    if (producer_dead(s, m->err)) {
        abandon(s, it, rd_kafka_err2str(m->err));
        return;
    }
    /* Outside this callback (vw_sink_redo): a permanent error dead-letters a
     * result at once, and sends a refused dead letter once more without its
     * payload (refused again: the worker stops); a transient one (librdkafka
     * may have retried it already) produces the record again after a backoff. */
    if (!permanent(m->err)) {
        vw_item_set_redo(it, it->dead_letter, 0);
        wait_and_redo(s, it, rd_kafka_topic_name(m->rkt), m->err);
    } else if (!it->dead_letter) {
        vw_item_set_redo(it, true, 0);
        vw_item_fail(it, VW_RESULT_FATAL, rd_kafka_err2name(m->err), rd_kafka_err2str(m->err));
        keep(s, it);
    } else if (!it->dlq_empty) {
        vw_item_set_redo(it, true, 0);
        vw_item_set_dlq_empty(it);
        keep(s, it);
    } else {
        dlq_failed(s, it, m->err);
    }
}

/* [thread: librdkafka] (no log queue is set: librdkafka's own threads call it) */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    vw_sink *s = rd_kafka_opaque(rk);
    if (vw_kafka_log_twin(fac) && level < 7)
        return; /* a broker's failure: the error callback logs it (kafka_conf.h) */
    vw_log_level lvl = level <= 3 ? VW_LOG_ERROR : level == 4 ? VW_LOG_WARN : VW_LOG_DEBUG;
    VW_LOG(s->o.log, lvl, "librdkafka", "%s client=%s facility=%s", buf, rd_kafka_name(rk), fac);
}

/* The producer's error callback (fault.h for a fatal one). */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    vw_sink *s = opaque;
    if (s->dead && err == RD_KAFKA_RESP_ERR__FATAL)
        return; /* producer_dead told it already */
    if (vw_kafka_error(rk, "producer", err, reason, s->o.log, s->o.fault, &s->health))
        s->dead = true;
}

vw_status vw_sink_conf(const vw_config *cfg, rd_kafka_conf_t *conf, vw_err *err) {
    vw_status st = vw_kafka_conf_set(conf, "client.id", "vela-worker", err);
    if (!st)
        /* group.id sits in the common section by the documented shape; it is the
         * consumer's (a producer would warn CONFWARN and ignore it). */
        st = vw_kafka_conf_apply(conf, &cfg->kafka.common, "group.id", err);
    if (!st)
        st = vw_kafka_conf_apply(conf, &cfg->kafka.producer, NULL, err);
    /* Idempotence keeps per-partition order across retries; acks=all is what
     * "acknowledged" means in the commit rule. */
    if (!st)
        st = vw_kafka_conf_set(conf, "enable.idempotence", "true", err);
    if (!st)
        st = vw_kafka_conf_set(conf, "acks", "all", err);
    return st;
}

/* Handles of the topics the sink produces to (results, DLQ, the reply
 * allow-list), made at open: rd_kafka_topic_new asks for a new topic's
 * metadata at once, while a produce call naming a topic the client has not
 * seen does not, and its records wait in the topic's unassigned queue until
 * librdkafka's once-a-second scan of unknown topics (the first results of a
 * run then went out up to a second late). A handle that cannot be made is
 * only a missed head start. */
static void known_topics(vw_sink *s) {
    const vw_config *c = s->o.cfg;
    s->known = calloc(2 + c->topics.n_reply_allow, sizeof *s->known);
    if (!s->known)
        return;
    const char *first[2] = {s->o.results_topic, c->topics.dlq};
    for (size_t i = 0; i < 2 + c->topics.n_reply_allow; i++) {
        const char *t = i < 2 ? first[i] : c->topics.reply_allow[i - 2];
        if (t && *t && (s->known[s->n_known] = rd_kafka_topic_new(s->rk, t, NULL)))
            s->n_known++;
    }
}

vw_status vw_sink_open(const vw_sink_opts *o, vw_sink **out, vw_err *err) {
    char errstr[512];
    *out = NULL;
    vw_sink *s = calloc(1, sizeof *s);
    if (!s)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "sink");
    s->o = *o;
    if (o->file) { /* replay to a file: no client */
        *out = s;
        return VW_OK;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    vw_status st = conf ? vw_sink_conf(o->cfg, conf, err)
                        : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rd_kafka_conf_new");
    if (!st && o->transactions)
        st = vw_txn_conf(o->cfg, conf, err);
    if (st)
        goto done;
    char max[32];
    size_t max_len = sizeof max;
    s->max_msg = rd_kafka_conf_get(conf, "message.max.bytes", max, &max_len) == RD_KAFKA_CONF_OK
                     ? (size_t)atoll(max)
                     : 1000000;
    rd_kafka_conf_set_opaque(conf, s);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_log_cb(conf, on_log);
    s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!s->rk) {
        st = VW_FAIL(err, VW_EKAFKA, "kafka_client", "producer: %s", errstr);
        goto done;
    }
    conf = NULL;
    known_topics(s);
    s->q = rd_kafka_queue_get_main(s->rk);
    if (o->wake_fd >= 0)
        rd_kafka_queue_io_event_enable(s->q, o->wake_fd, "p", 1);
    if (o->transactions) {
        vw_txn_opts to = {.cfg = o->cfg,
                          .log = o->log,
                          .metrics = o->metrics,
                          .ledger = o->ledger,
                          .fault = o->fault,
                          .crash = o->crash,
                          .topic = o->topic,
                          .committed = txn_committed,
                          .ctx = s};
        st = vw_txn_new(&to, s->rk, &s->txn, err);
    }
done:
    if (conf)
        rd_kafka_conf_destroy(conf);
    if (st) {
        vw_sink_free(s);
        return st;
    }
    *out = s;
    return VW_OK;
}

void vw_sink_poll(vw_sink *s, int timeout_ms) {
    if (s->rk)
        rd_kafka_poll(s->rk, timeout_ms);
}

bool vw_sink_dead(const vw_sink *s) {
    return s->dead;
}

size_t vw_sink_pending(const vw_sink *s) {
    return s->n_redo + (s->txn ? vw_txn_redo_count(s->txn) : 0);
}

vw_txn *vw_sink_txn(vw_sink *s) {
    return s->txn;
}

size_t vw_sink_done(const vw_sink *s) {
    return s->done;
}

const vw_kafka_health *vw_sink_health(const vw_sink *s) {
    return &s->health;
}

void vw_sink_close(vw_sink *s, int64_t deadline_ms) {
    if (!s->rk)
        return;
    if (s->txn && !s->dead) /* never committed: its records are answered again */
        vw_txn_abort(s->txn, deadline_ms > vw_now_ms() ? deadline_ms : vw_now_ms() + 1000);
    int64_t left = deadline_ms - vw_now_ms();
    rd_kafka_flush(s->rk, left > 1000 ? (int)left : 1000);
    rd_kafka_purge(s->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(s->rk, 0); /* purged delivery reports free their items */
    if (s->o.wake_fd >= 0)
        rd_kafka_queue_io_event_enable(s->q, -1, NULL, 0);
    rd_kafka_queue_destroy(s->q);
    s->q = NULL;
    for (size_t i = 0; i < s->n_known; i++)
        rd_kafka_topic_destroy(s->known[i]);
    free(s->known);
    s->known = NULL;
    s->n_known = 0;
    rd_kafka_destroy(s->rk);
    s->rk = NULL;
}

void vw_sink_free(vw_sink *s) {
    if (!s)
        return;
    vw_sink_close(s, vw_now_ms());
    for (size_t i = 0; i < s->n_redo; i++)
        vw_item_free(s->redo[i]);
    free(s->redo);
    vw_txn_free(s->txn);
    free(s);
}
