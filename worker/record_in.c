/* record_in.c — the worker-level record checks, the request id, the key echo
 * and the reply topic (see record_in.h). The checks themselves are core's
 * front door (core/admission/pyjson.h): this file only turns its rows into
 * result records, written by result_out.c. Never calls Kafka. */
#include "record_in.h"

#include <stdlib.h>
#include <string.h>

#include "result_out.h"
#include "util/sha256.h"
#include "util/utf8.h"

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

vw_status vw_record_in_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                             vw_result *out, vw_err *err) {
    vw_body_reject rej;
    *rejected = find_reject(rec, max_request_bytes, &rej, NULL);
    if (!*rejected)
        return VW_OK;
    vw_sbuf sb = vw_sbuf_with(128 + 2 * strlen(rej.msg));
    vw_result_out_rejection(&sb, NULL, &rej);
    if (vw_sbuf_status(&sb) || !sb.p) {
        vw_sbuf_free(&sb);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rejection record");
    }
    memset(out, 0, sizeof *out);
    out->kind = VW_RESULT_RECORD;
    out->vela_status = rej.status;
    out->value = vw_sbuf_take(&sb, &out->value_len);
    vw_fmt_str(out->err.type, sizeof out->err.type, rej.type);
    return VW_OK;
}

bool vw_record_in_reject(const vw_record *rec, int64_t max_request_bytes, vw_sbuf *sb, int *status,
                         const char **type, vw_json_doc **doc) {
    vw_body_reject rej;
    *doc = NULL;
    if (!find_reject(rec, max_request_bytes, &rej, doc))
        return false;
    vw_sbuf_reset(sb);
    vw_result_out_rejection(sb, rec, &rej);
    *status = rej.status;
    *type = rej.type;
    return true;
}

/* [thread: any] */
const char *vw_record_in_echo(const void *p, size_t len, char buf[VW_SOURCE_MAX], size_t *out_len) {
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
const char *vw_record_in_id_pick(const char *topic, int32_t partition, int64_t offset,
                                 const void *hdr, size_t hdr_len, const void *key, size_t key_len,
                                 char buf[VW_SOURCE_MAX], size_t *len) {
    const char *id = NULL;
    if (hdr && hdr_len && vw_utf8_clean(hdr, hdr_len))
        id = vw_record_in_echo(hdr, hdr_len, buf, len);
    if (!id && key && key_len && vw_utf8_clean(key, key_len))
        id = vw_record_in_echo(key, key_len, buf, len);
    if (id)
        return id;
    vw_result_out_source(buf, VW_SOURCE_MAX, topic, partition, offset);
    *len = strlen(buf);
    return buf;
}

char *vw_record_in_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                      size_t hdr_len, const void *key, size_t key_len) {
    char buf[VW_SOURCE_MAX];
    size_t len;
    const char *id =
        vw_record_in_id_pick(topic, partition, offset, hdr, hdr_len, key, key_len, buf, &len);
    return strndup(id, len);
}

const char *vw_record_in_reply_topic(const vw_config *cfg, const void *hdr, size_t hdr_len) {
    if (!hdr)
        return NULL;
    for (size_t i = 0; i < cfg->topics.n_reply_allow; i++) {
        const char *t = cfg->topics.reply_allow[i];
        if (strlen(t) == hdr_len && !memcmp(t, hdr, hdr_len))
            return t;
    }
    return NULL;
}
