/* fuzz_record.c — libFuzzer target: a consumed record (key, headers, value)
 * through the worker's record -> item path (worker/item.h vw_item_new, with
 * the headers in librdkafka's own list), the record checks
 * (vw_record_in_reject) and the result value (vw_result_out_value).
 *
 * Input: byte 0 is flags (bit 0: a key, bit 1: a request-id header, bit 2: a
 * reply-topic header, bit 3: a second request-id header, bits 4-5: how many
 * times the present fields are repeated, to reach the echo bound with short
 * inputs), then each present field as a 2-byte little-endian length and its
 * bytes, the value last (the rest). limits.max_request_bytes is 512.
 *
 * Checks: the item's request id is what the rule picks (the last request-id
 * header, else the key, else the source; one over VW_ECHO_MAX bytes as its
 * "sha256:" digest), clean UTF-8 and at most VW_ECHO_MAX bytes; the key echo
 * is the key or its digest, at most VW_ECHO_MAX bytes; the value is copied
 * exactly when it fits the limit, and its size is kept either way; the reply
 * topic is one of the allow-list or none; a rejection is a JSON object whose
 * request_id is the item's; a passing record leaves a parsed document; the
 * result value is a JSON object with the same request_id. No crash, no leak. */
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record_in.h"
#include "result_out.h"
#include "item.h"
#include "service/config.h"
#include "util/utf8.h"

enum { MAX_REQUEST = 512 };

static vw_config *cfg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static const char yaml[] = "kafka: {bootstrap.servers: \"h:1\"}\n"
                               "topics: {input: in, reply_allow: [replies, other]}\n"
                               "limits: {max_request_bytes: 512}\n";
    vw_err err = {0};
    if (vw_config_parse(yaml, sizeof yaml - 1, "fuzz.yaml", NULL, &cfg, &err)) {
        fprintf(stderr, "fuzz_record: %s\n", err.msg);
        abort();
    }
    return 0;
}

/* The next length-prefixed field of the input, repeated `times`, into a
 * malloc'd buffer (*out NULL when absent). */
static void field(const uint8_t **p, size_t *left, int times, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (*left < 2)
        return;
    size_t n = (size_t)(*p)[0] | (size_t)(*p)[1] << 8;
    *p += 2;
    *left -= 2;
    if (n > *left)
        n = *left;
    *out = malloc(n * (size_t)times + 1);
    if (!*out)
        abort();
    for (int i = 0; i < times; i++)
        memcpy(*out + n * (size_t)i, *p, n);
    *len = n * (size_t)times;
    *p += n;
    *left -= n;
}

/* The id the rule picks, written as the worker would echo it. */
static void expected_id(const uint8_t *hdr, size_t hdr_len, const uint8_t *key, size_t key_len,
                        char *want, size_t cap) {
    const uint8_t *src = NULL;
    size_t n = 0;
    if (hdr && hdr_len && vw_utf8_clean(hdr, hdr_len)) {
        src = hdr;
        n = hdr_len;
    } else if (key && key_len && vw_utf8_clean(key, key_len)) {
        src = key;
        n = key_len;
    }
    if (!src) {
        snprintf(want, cap, "in:3:99");
        return;
    }
    char buf[VW_SOURCE_MAX];
    size_t len;
    const char *e = vw_record_in_echo(src, n, buf, &len);
    if (!e || len >= cap)
        abort();
    memcpy(want, e, len);
    want[len] = 0;
}

static void check_item(const vw_item *it, const uint8_t *key, size_t key_len, const uint8_t *value,
                       size_t value_len, const char *want_id) {
    size_t id_len = strlen(it->request_id);
    if (strcmp(it->request_id, want_id) || id_len > VW_ECHO_MAX ||
        !vw_utf8_clean(it->request_id, id_len))
        abort();
    if (!key != !it->key || it->key_len > VW_ECHO_MAX)
        abort();
    if (key && key_len <= VW_ECHO_MAX && (it->key_len != key_len || memcmp(it->key, key, key_len)))
        abort();
    if (key && key_len > VW_ECHO_MAX &&
        (it->key_len != VW_ECHO_DIGEST_LEN || memcmp(it->key, "sha256:", 7)))
        abort();
    if (it->value_len != (value ? value_len : 0))
        abort();
    bool keep = it->value_len <= MAX_REQUEST;
    if (it->value_dropped == keep || !it->value != !keep)
        abort();
    if (keep && it->value_len && memcmp(it->value, value, value_len))
        abort();
    if (it->reply_topic && strcmp(it->reply_topic, "replies") && strcmp(it->reply_topic, "other"))
        abort();
}

/* A result or rejection value: a JSON object whose request_id is id. */
static void check_value(const char *v, size_t len, const char *id) {
    json_t *j = json_loadb(v, len, 0, NULL);
    if (!json_is_object(j) || !json_string_value(json_object_get(j, "request_id")) ||
        strcmp(json_string_value(json_object_get(j, "request_id")), id))
        abort();
    json_decref(j);
}

static void check_admission(const vw_item *it) {
    vw_record rec = {.topic = "in",
                     .partition = it->partition,
                     .offset = it->offset,
                     .timestamp = it->timestamp,
                     .key = it->key,
                     .key_len = it->key_len,
                     .value = it->value,
                     .value_len = it->value_len,
                     .request_id = it->request_id};
    vw_sbuf sb = {0};
    int status = 0;
    const char *type = NULL;
    vw_json_doc *doc = NULL;
    if (vw_record_in_reject(&rec, MAX_REQUEST, &sb, &status, &type, &doc)) {
        if (sb.oom || doc || (status != 400 && status != 413))
            abort();
        check_value(sb.p, sb.len, it->request_id);
    } else if (!doc) {
        abort(); /* a passing record leaves its parsed document */
    }
    vw_json_free(doc);
    vw_sbuf_free(&sb);
    static const char answer[] = " {\"answers\":{}}";
    vw_result r = {
        .kind = VW_RESULT_RECORD, .value = (char *)answer, .value_len = sizeof answer - 1};
    char *out = NULL;
    size_t out_len = 0;
    if (vw_result_out_value(&r, &rec, &out, &out_len, NULL))
        abort();
    check_value(out, out_len, it->request_id);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size)
        return 0;
    uint8_t flags = data[0];
    int times = 1 + ((flags >> 4) & 3) * 200; /* 1, 201, 401, 601 */
    const uint8_t *p = data + 1;
    size_t left = size - 1;
    uint8_t *key = NULL, *hid = NULL, *hid2 = NULL, *reply = NULL;
    size_t key_len = 0, hid_len = 0, hid2_len = 0, reply_len = 0;
    if (flags & 1)
        field(&p, &left, times, &key, &key_len);
    if (flags & 2)
        field(&p, &left, times, &hid, &hid_len);
    if (flags & 8)
        field(&p, &left, times, &hid2, &hid2_len);
    if (flags & 4)
        field(&p, &left, 1, &reply, &reply_len);
    rd_kafka_headers_t *h = rd_kafka_headers_new(4);
    if (hid)
        rd_kafka_header_add(h, VW_HDR_REQUEST_ID, -1, hid, (ssize_t)hid_len);
    if (reply)
        rd_kafka_header_add(h, VW_HDR_REPLY_TOPIC, -1, reply, (ssize_t)reply_len);
    if (hid2)
        rd_kafka_header_add(h, VW_HDR_REQUEST_ID, -1, hid2, (ssize_t)hid2_len);
    const uint8_t *last_hid = hid2 ? hid2 : hid;
    size_t last_len = hid2 ? hid2_len : hid_len;
    vw_record_in r = {.topic = "in",
                      .partition = 3,
                      .offset = 99,
                      .timestamp = (flags & 0x40) ? -1 : 1700000000000,
                      .key = key,
                      .key_len = key_len,
                      .headers = (flags & 0x80) ? NULL : h,
                      .value = left ? p : NULL,
                      .value_len = left};
    if (flags & 0x80) { /* no headers at all */
        last_hid = NULL;
        last_len = 0;
    }
    char want[VW_ECHO_MAX + 1];
    expected_id(last_hid, last_len, key, key_len, want, sizeof want);
    vw_item *it = vw_item_new(&r, cfg, NULL, 1, 0);
    if (!it)
        abort();
    check_item(it, key, key_len, left ? p : NULL, left, want);
    check_admission(it);
    vw_item_free(it);
    rd_kafka_headers_destroy(h);
    free(key);
    free(hid);
    free(hid2);
    free(reply);
    return 0;
}
