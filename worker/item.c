/* item.c — a record's item and its outcome (see item.h). */
#include "item.h"

#include <stdlib.h>
#include <string.h>

#include "util/sbuf.h" /* vw_fmt_str */
#include "util/reserve.h"

/* The last value of header name in h (NULL h: the record has none). */
static void header(const rd_kafka_headers_t *h, const char *name, const void **v, size_t *len) {
    *v = NULL;
    *len = 0;
    if (!h || rd_kafka_header_get_last(h, name, v, len))
        *v = NULL;
}

vw_item *vw_item_new(const vw_record_in *r, const vw_config *cfg, vw_processor *proc,
                     uint32_t epoch, int64_t admitted_ms) {
    const void *hid, *reply;
    size_t hid_len, reply_len, id_len, key_len = 0;
    char id_buf[VW_SOURCE_MAX], key_buf[VW_SOURCE_MAX];
    header(r->headers, VW_HDR_REQUEST_ID, &hid, &hid_len);
    header(r->headers, VW_HDR_REPLY_TOPIC, &reply, &reply_len);
    const char *id = vw_record_in_id_pick(r->topic, r->partition, r->offset, hid, hid_len, r->key,
                                          r->key_len, id_buf, &id_len);
    const char *key = r->key ? vw_record_in_echo(r->key, r->key_len, key_buf, &key_len) : NULL;
    if (r->key && !key)
        return NULL; /* the digest of a long key: libcrypto out of memory */
    size_t value_len = r->value ? r->value_len : 0;
    bool keep = value_len <= (size_t)cfg->limits.max_request_bytes;
    size_t kept = keep ? value_len : 0;
    vw_item *it = malloc(sizeof *it + id_len + 1 + key_len + kept);
    if (!it)
        return NULL;
    memset(it, 0, sizeof *it);
    it->proc = proc;
    it->partition = r->partition;
    it->offset = r->offset;
    it->epoch = epoch;
    it->timestamp = r->timestamp;
    it->admitted_ms = admitted_ms;
    it->request_id = it->data;
    memcpy(it->request_id, id, id_len); /* id may point into the record: copied */
    it->request_id[id_len] = 0;
    it->key = key ? it->data + id_len + 1 : NULL;
    it->key_len = key_len;
    if (key_len)
        memcpy(it->key, key, key_len);
    it->value = keep ? it->data + id_len + 1 + key_len : NULL;
    it->value_len = value_len;
    it->value_dropped = !keep;
    if (kept)
        memcpy(it->value, r->value, kept);
    it->reply_topic = vw_record_in_reply_topic(cfg, reply, reply_len);
    return it;
}

bool vw_items_push(vw_item ***list, size_t *n, size_t *cap, vw_item *it) {
    if (vw_reserve((void **)list, cap, *n + 1, sizeof **list))
        return false;
    (*list)[(*n)++] = it;
    return true;
}

/* Frees the result value and headers of an item. [thread: any (the item's holder)] */
static void clear_result(vw_item *it) {
    free(it->res_value);
    for (size_t i = 0; i < it->n_headers; i++) {
        free(it->headers[i].name);
        free(it->headers[i].value);
    }
    free(it->headers);
    it->res_value = NULL;
    it->res_len = 0;
    it->headers = NULL;
    it->n_headers = 0;
}

/* [thread: any (the item's holder)] */
void vw_item_free(vw_item *it) {
    if (!it)
        return;
    if (it->proc_item)
        it->proc->ops->item_free(it->proc, it->proc_item);
    clear_result(it);
    free(it->msg);
    free(it->out_value);
    free(it);
}

/* [thread: any (the item's holder)] */
void vw_item_set_type(vw_item *it, const char *type) {
    vw_fmt_str(it->type, sizeof it->type, type);
}

/* [thread: admission, processing] */
void vw_item_take(vw_item *it, vw_result *r) {
    clear_result(it);
    if (r->kind != VW_RESULT_RECORD) {
        vw_item_fail(it, r->kind, r->err.type[0] ? r->err.type : "no_result", r->err.msg);
        vw_result_clear(r);
        return;
    }
    it->kind = VW_RESULT_RECORD;
    it->vela_status = r->vela_status;
    it->res_value = r->value;
    it->res_len = r->value_len;
    it->headers = r->headers;
    it->n_headers = r->n_headers;
    vw_item_set_type(it, r->err.type);
    r->value = NULL;
    r->value_len = 0;
    r->headers = NULL;
    r->n_headers = 0;
}

/* [thread: any (the item's holder)] */
void vw_item_fail(vw_item *it, vw_result_kind kind, const char *type, const char *msg) {
    char *m = strdup(msg); /* msg may be it->msg itself */
    clear_result(it);
    free(it->msg);
    it->msg = m;
    it->kind = kind;
    vw_item_set_type(it, type);
}

const char *vw_item_msg(const vw_item *it) {
    return it->msg ? it->msg : it->type;
}

void vw_item_free_cb(void *it) {
    vw_item_free(it);
}

void vw_item_set_pending(vw_item *it, void *proc_item, int64_t tokens) {
    it->proc_item = proc_item;
    it->tokens = tokens < 0 ? 0 : tokens;
}

void vw_item_set_record(vw_item *it, int vela_status, const char *type, char *value, size_t len) {
    if (!value) {
        vw_item_fail(it, VW_RESULT_FATAL, "out_of_memory", "rejection record");
        return;
    }
    it->kind = VW_RESULT_RECORD;
    it->vela_status = vela_status;
    vw_item_set_type(it, type);
    vw_item_set_output(it, value, len);
}

/* [thread: any (the item's holder)] */
void vw_item_drop_proc(vw_item *it) {
    if (it->proc_item)
        it->proc->ops->item_free(it->proc, it->proc_item);
    it->proc_item = NULL;
}

void vw_item_retry(vw_item *it, int64_t due_ms) {
    it->attempts++;
    it->due_ms = due_ms;
    free(it->msg);
    it->msg = NULL;
    it->kind = VW_RESULT_RECORD;
    it->type[0] = 0;
}

void vw_item_set_output(vw_item *it, char *value, size_t len) {
    free(it->out_value);
    it->out_value = value;
    it->out_len = len;
}

void vw_item_set_dead_letter(vw_item *it, bool cut) {
    it->dead_letter = true;
    it->dlq_cut = cut;
}

void vw_item_set_dlq_empty(vw_item *it) {
    it->dlq_empty = true;
}

void vw_item_set_redo(vw_item *it, bool dlq, int64_t due_ms) {
    it->redo_dlq = dlq;
    it->redo_due_ms = due_ms;
}

void vw_item_set_produce_wait(vw_item *it, int64_t due_ms) {
    it->produce_waits++;
    it->redo_due_ms = due_ms;
}
