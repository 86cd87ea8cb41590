/* result_out.c — result values and the source string (see result_out.h).
 * Writes bytes only: never parses a record, never calls Kafka. */
#include "result_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* No snprintf: this runs once per rejected record (see vw_fmt_i64). */
void vw_result_out_rejection(vw_sbuf *sb, const vw_record *rec, const vw_body_reject *rej) {
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

void vw_result_out_source(char *buf, size_t cap, const char *topic, int32_t partition,
                          int64_t offset) {
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

vw_status vw_result_out_value(const vw_result *r, const vw_record *rec, char **out, size_t *out_len,
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
    /* room up front: built once per record, doubling from 64 bytes costs two
     * or three reallocs */
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
