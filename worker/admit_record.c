/* admit_record.c — worker-level record checks and the result record value
 * (see admit_record.h). The checks themselves are core's front door
 * (core/pyjson.h): this file only turns its rows into result records. Never
 * calls Kafka. */
#include "admit_record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_json.h"
#include "errlist.h" /* the VW_ET_* type names */

/* ---- rejections and result values ------------------------------------- */

/* {"status":N,"detail":[{"loc":["body"(,offset)],"msg":..,"type":..}]}, the
 * shape errlist.h writes, built in one buffer (this runs once per rejected
 * record). r->err.type names the rejection type for the metrics. */
static vw_status one_triple(vw_result *out, int status, int64_t offset, const char *msg,
                            const char *type, vw_err *err) {
    char head[96];
    int n = offset >= 0
                ? snprintf(head, sizeof head,
                           "{\"status\":%d,\"detail\":[{\"loc\":[\"body\",%lld],\"msg\":", status,
                           (long long)offset)
                : snprintf(head, sizeof head,
                           "{\"status\":%d,\"detail\":[{\"loc\":[\"body\"],\"msg\":", status);
    vw_sbuf sb = {0};
    vw_sbuf_put(&sb, head, (size_t)n);
    vw_canon_string(&sb, msg, strlen(msg));
    vw_sbuf_puts(&sb, ",\"type\":\"");
    vw_sbuf_puts(&sb, type);
    vw_sbuf_puts(&sb, "\"}]}");
    if (vw_sbuf_status(&sb)) {
        vw_sbuf_free(&sb);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "rejection record");
    }
    memset(out, 0, sizeof *out);
    out->kind = VW_RESULT_RECORD;
    out->vela_status = status;
    out->value = vw_sbuf_take(&sb, &out->value_len);
    snprintf(out->err.type, sizeof out->err.type, "%s", type);
    return VW_OK;
}

vw_status vw_admit_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                         vw_result *out, vw_err *err) {
    vw_body_reject rej;
    vw_pyjson_check chk;
    *rejected = true;
    size_t max = max_request_bytes > 0 ? (size_t)max_request_bytes : 0;
    if (vw_body_too_long(rec->value_len, max, &rej))
        return one_triple(out, rej.status, rej.offset, rej.msg, rej.type, err);
    vw_pyjson_validate(rec->value, rec->value_len, &chk);
    if (vw_body_reject_of(&chk, &rej))
        return one_triple(out, rej.status, rej.offset, rej.msg, rej.type, err);
    *rejected = false;
    return VW_OK;
}

char *vw_request_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                    size_t hdr_len, const void *key, size_t key_len) {
    if (hdr && hdr_len && vw_utf8_clean(hdr, hdr_len))
        return strndup(hdr, hdr_len);
    if (key && key_len && vw_utf8_clean(key, key_len))
        return strndup(key, key_len);
    char buf[512];
    vw_source_string(buf, sizeof buf, topic, partition, offset);
    return strdup(buf);
}

void vw_source_string(char *buf, size_t cap, const char *topic, int32_t partition, int64_t offset) {
    snprintf(buf, cap, "%s:%d:%lld", topic, (int)partition, (long long)offset);
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
    char nums[96];
    int nn =
        rec->timestamp >= 0
            ? snprintf(nums, sizeof nums, ",\"partition\":%d,\"offset\":%lld,\"timestamp\":%lld}",
                       (int)rec->partition, (long long)rec->offset, (long long)rec->timestamp)
            : snprintf(nums, sizeof nums, ",\"partition\":%d,\"offset\":%lld,\"timestamp\":null}",
                       (int)rec->partition, (long long)rec->offset);
    vw_sbuf sb = {0};
    vw_sbuf_puts(&sb, "{\"request_id\":");
    vw_canon_string(&sb, rec->request_id, strlen(rec->request_id));
    vw_sbuf_puts(&sb, ",\"source\":{\"topic\":");
    vw_canon_string(&sb, rec->topic, strlen(rec->topic));
    vw_sbuf_put(&sb, nums, (size_t)nn);
    if (j < n && v[j] != '}')
        vw_sbuf_puts(&sb, ",");
    vw_sbuf_put(&sb, v + rest, n - rest);
    if (vw_sbuf_status(&sb)) {
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
