/* admit_record.c — worker-level record checks and the result record value
 * (see admit_record.h). The checks themselves are core's front door
 * (core/admission/pyjson.h): this file only turns its rows into result records. Never
 * calls Kafka. */
#include "admit_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/canonical_json.h"
#include "admission/errlist.h" /* the VW_ET_* type names */
#include "util/sha256.h"
#include "util/utf8.h"

/* ---- rejections and result values ------------------------------------- */

static void put_i64(vw_sbuf *sb, int64_t v) {
    char num[24];
    vw_sbuf_put(sb, num, vw_fmt_i64(num, v));
}

/* A JSON string as vw_canon_string writes it. Plain ASCII without '"', '\\' or
 * control bytes (ids, topics, most messages) is its own escape: copied whole
 * instead of byte by byte. Anything else goes through vw_canon_string. */
static void put_str(vw_sbuf *sb, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
            vw_canon_string(sb, s, n);
            return;
        }
    }
    vw_sbuf_put(sb, "\"", 1);
    vw_sbuf_put(sb, s, n);
    vw_sbuf_put(sb, "\"", 1);
}

/* Room for put_prefix's output (its strings escaped at worst). */
static size_t prefix_cap(const vw_record *rec) {
    return 128 + 6 * (strlen(rec->request_id) + strlen(rec->topic));
}

/* {"request_id":..,"source":{"topic","partition","offset","timestamp"} — the
 * start of every result value, without the closing brace. */
static void put_prefix(vw_sbuf *sb, const vw_record *rec) {
    vw_sbuf_puts(sb, "{\"request_id\":");
    put_str(sb, rec->request_id, strlen(rec->request_id));
    vw_sbuf_puts(sb, ",\"source\":{\"topic\":");
    put_str(sb, rec->topic, strlen(rec->topic));
    vw_sbuf_puts(sb, ",\"partition\":");
    put_i64(sb, rec->partition);
    vw_sbuf_puts(sb, ",\"offset\":");
    put_i64(sb, rec->offset);
    vw_sbuf_puts(sb, ",\"timestamp\":");
    if (rec->timestamp >= 0)
        put_i64(sb, rec->timestamp);
    else
        vw_sbuf_puts(sb, "null");
    vw_sbuf_put(sb, "}", 1);
}

/* [prefix,]"status":N,"detail":[{"loc":["body"(,offset)],"msg":..,"type":..}]}:
 * the shape errlist.h writes, with the record prefix first when rec is given
 * (no snprintf: this runs once per rejected record, see vw_fmt_i64). */
static void write_triple(vw_sbuf *sb, const vw_record *rec, const vw_body_reject *rej) {
    if (rec) {
        put_prefix(sb, rec);
        vw_sbuf_puts(sb, ",\"status\":");
    } else {
        vw_sbuf_puts(sb, "{\"status\":");
    }
    put_i64(sb, rej->status);
    vw_sbuf_puts(sb, ",\"detail\":[{\"loc\":[\"body\"");
    if (rej->offset >= 0) {
        vw_sbuf_put(sb, ",", 1);
        put_i64(sb, rej->offset);
    }
    vw_sbuf_puts(sb, "],\"msg\":");
    put_str(sb, rej->msg, strlen(rej->msg));
    vw_sbuf_puts(sb, ",\"type\":\"");
    vw_sbuf_puts(sb, rej->type);
    vw_sbuf_puts(sb, "\"}]}");
}

/* The front-door row that rejects rec, if any. With doc, a record that passes
 * leaves its parsed document there (one scan for the check and the parse);
 * *doc stays NULL when the parse ran out of memory (the check then runs
 * without building: the processor parses again). */
static bool find_reject(const vw_record *rec, int64_t max_request_bytes, vw_body_reject *rej,
                        vw_json_doc **doc) {
    vw_pyjson_check chk;
    size_t max = max_request_bytes > 0 ? (size_t)max_request_bytes : 0;
    if (vw_body_too_long(rec->value_len, max, rej))
        return true;
    vw_status st = doc ? vw_json_parse(rec->value, rec->value_len, doc, &chk) : VW_ENOMEM;
    if (st == VW_ENOMEM)
        vw_pyjson_validate(rec->value, rec->value_len, &chk);
    if (!vw_body_reject_of(&chk, rej))
        return false;
    if (doc) {
        vw_json_free(*doc); /* parsed, but not an object */
        *doc = NULL;
    }
    return true;
}

/* [thread: any] */
void vw_copy_type(char *dst, size_t cap, const char *type) {
    size_t n = strlen(type);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, type, n);
    dst[n] = 0;
}

vw_status vw_admit_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                         vw_result *out, vw_err *err) {
    vw_body_reject rej;
    *rejected = find_reject(rec, max_request_bytes, &rej, NULL);
    if (!*rejected)
        return VW_OK;
    /* room up front: built once per record, doubling from 64 bytes costs
     * two or three reallocs */
    vw_sbuf sb = vw_sbuf_with(128 + 2 * strlen(rej.msg));
    write_triple(&sb, NULL, &rej);
    if (vw_sbuf_status(&sb) || !sb.p) {
        vw_sbuf_free(&sb);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rejection record");
    }
    memset(out, 0, sizeof *out);
    out->kind = VW_RESULT_RECORD;
    out->vela_status = rej.status;
    out->value = vw_sbuf_take(&sb, &out->value_len);
    vw_copy_type(out->err.type, sizeof out->err.type, rej.type);
    return VW_OK;
}

bool vw_admit_reject_into(const vw_record *rec, int64_t max_request_bytes, vw_sbuf *sb, int *status,
                          char type[VW_REJECT_TYPE_MAX], vw_json_doc **doc) {
    vw_body_reject rej;
    *doc = NULL;
    if (!find_reject(rec, max_request_bytes, &rej, doc))
        return false;
    vw_sbuf_reset(sb);
    write_triple(sb, rec, &rej);
    *status = rej.status;
    vw_copy_type(type, VW_REJECT_TYPE_MAX, rej.type);
    return true;
}

/* [thread: any] */
const char *vw_echo_bounded(const void *p, size_t len, char buf[VW_SOURCE_MAX], size_t *out_len) {
    if (len <= VW_ECHO_MAX) {
        *out_len = len;
        return p;
    }
    char hex[VW_SHA256_HEX];
    if (vw_sha256_hex(p, len, hex, NULL))
        return NULL;
    memcpy(buf, "sha256:", 7);
    memcpy(buf + 7, hex, VW_SHA256_HEX); /* with its NUL */
    *out_len = VW_ECHO_DIGEST_LEN;
    return buf;
}

/* A long header or key whose digest cannot be made (libcrypto out of memory)
 * is skipped like an invalid one: the id falls back to the source. */
const char *vw_request_id_pick(const char *topic, int32_t partition, int64_t offset,
                               const void *hdr, size_t hdr_len, const void *key, size_t key_len,
                               char buf[VW_SOURCE_MAX], size_t *len) {
    const char *id = NULL;
    if (hdr && hdr_len && vw_utf8_clean(hdr, hdr_len))
        id = vw_echo_bounded(hdr, hdr_len, buf, len);
    if (!id && key && key_len && vw_utf8_clean(key, key_len))
        id = vw_echo_bounded(key, key_len, buf, len);
    if (id)
        return id;
    vw_record_source(buf, VW_SOURCE_MAX, topic, partition, offset);
    *len = strlen(buf);
    return buf;
}

char *vw_request_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                    size_t hdr_len, const void *key, size_t key_len) {
    char buf[VW_SOURCE_MAX];
    size_t len;
    const char *id =
        vw_request_id_pick(topic, partition, offset, hdr, hdr_len, key, key_len, buf, &len);
    return strndup(id, len);
}

void vw_record_source(char *buf, size_t cap, const char *topic, int32_t partition, int64_t offset) {
    size_t t = strlen(topic);
    if (cap < t + 48) { /* rare: a topic name near the buffer size */
        snprintf(buf, cap, "%s:%d:%lld", topic, (int)partition, (long long)offset);
        return;
    }
    memcpy(buf, topic, t);
    buf[t++] = ':';
    t += vw_fmt_i64(buf + t, partition);
    buf[t++] = ':';
    vw_fmt_i64(buf + t, offset);
}

vw_status vw_result_value(const vw_result *r, const vw_record *rec, char **out, size_t *out_len,
                          vw_err *err) {
    size_t i = 0, n = r->value ? r->value_len : 0;
    const char *v = r->value;
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r'))
        i++;
    if (i >= n || v[i] != '{')
        return VW_FAIL(err, VW_EINVAL, "bad_result", "result value of %s is not a JSON object",
                       rec->request_id);
    size_t rest = i + 1, j = rest;
    while (j < n && (v[j] == ' ' || v[j] == '\t' || v[j] == '\n' || v[j] == '\r'))
        j++;
    vw_sbuf sb = vw_sbuf_with(prefix_cap(rec) + n);
    put_prefix(&sb, rec);
    if (j < n && v[j] != '}')
        vw_sbuf_puts(&sb, ",");
    vw_sbuf_put(&sb, v + rest, n - rest);
    if (vw_sbuf_status(&sb) || !sb.p) {
        vw_sbuf_free(&sb);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "result value");
    }
    *out = vw_sbuf_take(&sb, out_len);
    return VW_OK;
}

const char *vw_reply_topic(const vw_config *cfg, const void *hdr, size_t hdr_len) {
    if (!hdr)
        return NULL;
    for (size_t i = 0; i < cfg->topics.n_reply_allow; i++) {
        const char *t = cfg->topics.reply_allow[i];
        if (strlen(t) == hdr_len && !memcmp(t, hdr, hdr_len))
            return t;
    }
    return NULL;
}
