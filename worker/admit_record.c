/* admit_record.c — worker-level record checks and the result record value
 * (see admit_record.h). Owns the json.loads-compatible validator (syntax only:
 * it builds no tree; processors parse with core/json_in). Never calls Kafka. */
#include "admit_record.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canonical_json.h"
#include "errlist.h" /* the VW_ET_* type names */

enum { MAX_DEPTH = 1000, MAX_INT_DIGITS = 4300 };

/* ---- UTF-8, as CPython's 'utf-8' codec with errors='surrogatepass' ------- */

static int cont(unsigned char c) {
    return c >= 0x80 && c < 0xC0;
}

/* Result of decoding one sequence at s[i]: its length, or an error with the
 * byte range CPython reports (unicodeobject.c decode_utf8: invalid start byte
 * = 1 byte, invalid continuation = the bytes before the bad one, unexpected end
 * = to the end of the input). */
typedef struct u8step {
    size_t len;         /* > 0: a valid sequence (or an encoded surrogate) */
    int surrogate;      /* an ED A0..BF xx sequence accepted by surrogatepass */
    size_t err_end;     /* when len == 0: end of the error range */
    const char *reason; /* when len == 0 */
} u8step;

static u8step u8_error(size_t end, const char *reason) {
    return (u8step){0, 0, end, reason};
}

static u8step u8_three(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (n - i < 3) {
        if (n - i < 2)
            return u8_error(n, "unexpected end of data");
        unsigned char c2 = s[i + 1];
        if (!cont(c2) || (c2 < 0xA0 ? c == 0xE0 : c == 0xED))
            return u8_error(i + 1, "invalid continuation byte");
        return u8_error(n, "unexpected end of data");
    }
    unsigned char c2 = s[i + 1], c3 = s[i + 2];
    if (!cont(c2) || (c == 0xE0 && c2 < 0xA0))
        return u8_error(i + 1, "invalid continuation byte");
    if (c == 0xED && c2 >= 0xA0) {
        /* A surrogate: strict UTF-8 refuses it, surrogatepass takes it when the
         * three bytes are a complete sequence. */
        if (cont(c3))
            return (u8step){3, 1, 0, NULL};
        return u8_error(i + 1, "invalid continuation byte");
    }
    if (!cont(c3))
        return u8_error(i + 2, "invalid continuation byte");
    return (u8step){3, 0, 0, NULL};
}

static u8step u8_four(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (n - i < 4) {
        if (n - i < 2)
            return u8_error(n, "unexpected end of data");
        unsigned char c2 = s[i + 1];
        if (!cont(c2) || (c2 < 0x90 ? c == 0xF0 : c == 0xF4))
            return u8_error(i + 1, "invalid continuation byte");
        if (n - i < 3)
            return u8_error(n, "unexpected end of data");
        if (!cont(s[i + 2]))
            return u8_error(i + 2, "invalid continuation byte");
        return u8_error(n, "unexpected end of data");
    }
    unsigned char c2 = s[i + 1];
    if (!cont(c2) || (c == 0xF0 && c2 < 0x90) || (c == 0xF4 && c2 >= 0x90))
        return u8_error(i + 1, "invalid continuation byte");
    if (!cont(s[i + 2]))
        return u8_error(i + 2, "invalid continuation byte");
    if (!cont(s[i + 3]))
        return u8_error(i + 3, "invalid continuation byte");
    return (u8step){4, 0, 0, NULL};
}

static u8step u8_step(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (c < 0x80)
        return (u8step){1, 0, 0, NULL};
    if (c < 0xC2 || c >= 0xF5)
        return u8_error(i + 1, "invalid start byte");
    if (c < 0xE0) {
        if (n - i < 2)
            return u8_error(n, "unexpected end of data");
        if (!cont(s[i + 1]))
            return u8_error(i + 1, "invalid continuation byte");
        return (u8step){2, 0, 0, NULL};
    }
    return c < 0xF0 ? u8_three(s, n, i) : u8_four(s, n, i);
}

/* Strict UTF-8 without NUL bytes (ids and headers). */
static int utf8_clean(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        u8step st = s[i] ? u8_step(s, n, i) : (u8step){0};
        if (!st.len || st.surrogate)
            return 0;
        i += st.len;
    }
    return 1;
}

/* ---- JSON syntax, as CPython 3.11 json.loads (Modules/_json.c) ---------- */

typedef struct pj {
    const unsigned char *s;
    size_t len;
    int surrogate; /* an unpaired surrogate reached a string */
    vw_pyjson_check *out;
} pj;

static int pj_fail(pj *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pj_fail(pj *p, size_t at, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->out->msg, sizeof p->out->msg, fmt, ap);
    va_end(ap);
    p->out->kind = VW_PYJSON_SYNTAX;
    p->out->offset = at;
    return -1;
}

static size_t skip_ws(const pj *p, size_t i) {
    while (i < p->len && (p->s[i] == ' ' || p->s[i] == '\t' || p->s[i] == '\n' || p->s[i] == '\r'))
        i++;
    return i;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[at..at+4) into *cp; -1 on a non-hex digit. */
static int hex4(const pj *p, size_t at, uint32_t *cp) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; k++) {
        int h = hexval(p->s[at + k]);
        if (h < 0)
            return -1;
        v = v << 4 | (uint32_t)h;
    }
    *cp = v;
    return 0;
}

/* One \uXXXX escape (and its low half, if any) starting at the 'u' at u;
 * returns the index after it. Mirrors scanstring_unicode's bounds checks. */
static int scan_uescape(pj *p, size_t u, size_t *end_out) {
    size_t next = u + 1, end = next + 4;
    uint32_t cp, c2;
    if (end >= p->len)
        return pj_fail(p, next - 1, "Invalid \\uXXXX escape");
    if (hex4(p, next, &cp))
        return pj_fail(p, end - 5, "Invalid \\uXXXX escape");
    if (cp >= 0xD800 && cp <= 0xDBFF && end + 6 < p->len && p->s[end] == '\\' &&
        p->s[end + 1] == 'u') {
        if (hex4(p, end + 2, &c2))
            return pj_fail(p, end + 1, "Invalid \\uXXXX escape");
        if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
            *end_out = end + 6;
            return 0; /* a pair: one code point */
        }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        p->surrogate = 1;
    *end_out = end;
    return 0;
}

/* A string whose opening quote is at end - 1; *next is after the closing one. */
static int scan_string(pj *p, size_t end, size_t *next_out) {
    size_t begin = end - 1, next;
    for (;;) {
        unsigned char c = 0;
        for (next = end; next < p->len; next++) {
            c = p->s[next];
            if (c == '"' || c == '\\')
                break;
            if (c <= 0x1f)
                return pj_fail(p, next, "Invalid control character at");
        }
        if (next >= p->len)
            return pj_fail(p, begin, "Unterminated string starting at");
        if (c == '"') {
            *next_out = next + 1;
            return 0;
        }
        if (++next == p->len)
            return pj_fail(p, begin, "Unterminated string starting at");
        c = p->s[next];
        if (c == 'u') {
            if (scan_uescape(p, next, &end))
                return -1;
        } else if (c && strchr("\"\\/bfnrt", c)) {
            end = next + 1;
        } else {
            return pj_fail(p, next - 1, "Invalid \\escape");
        }
    }
}

static int scan_number(pj *p, size_t start, size_t *next_out) {
    const unsigned char *s = p->s;
    size_t idx = start, end_idx = p->len - 1;
    int is_float = 0;
#define DIGIT(i) (s[i] >= '0' && s[i] <= '9')
    if (s[idx] == '-' && ++idx > end_idx)
        return pj_fail(p, start, "Expecting value");
    if (s[idx] >= '1' && s[idx] <= '9') {
        idx++;
        while (idx <= end_idx && DIGIT(idx))
            idx++;
    } else if (s[idx] == '0') {
        idx++;
    } else {
        return pj_fail(p, start, "Expecting value");
    }
    if (idx < end_idx && s[idx] == '.' && DIGIT(idx + 1)) {
        is_float = 1;
        idx += 2;
        while (idx <= end_idx && DIGIT(idx))
            idx++;
    }
    if (idx < end_idx && (s[idx] == 'e' || s[idx] == 'E')) {
        size_t e_start = idx++;
        if (idx < end_idx && (s[idx] == '-' || s[idx] == '+'))
            idx++;
        while (idx <= end_idx && DIGIT(idx))
            idx++;
        if (DIGIT(idx - 1))
            is_float = 1;
        else
            idx = e_start; /* "1e" is the number 1 followed by 'e' */
    }
#undef DIGIT
    size_t digits = idx - start - (s[start] == '-');
    if (!is_float && digits > MAX_INT_DIGITS)
        return pj_fail(p, start,
                       "Exceeds the limit (%d digits) for integer string conversion: value has "
                       "%zu digits; use sys.set_int_max_str_digits() to increase the limit",
                       MAX_INT_DIGITS, digits);
    *next_out = idx;
    return 0;
}

static int scan_value(pj *p, size_t idx, size_t *next, int depth);

/* Object or array body after its opening bracket at idx - 1. */
static int scan_container(pj *p, size_t idx, size_t *next_out, int depth, int object) {
    char close = object ? '}' : ']';
    size_t n;
    idx = skip_ws(p, idx);
    if (idx >= p->len || p->s[idx] != close) {
        for (;;) {
            if (object) {
                if (idx >= p->len || p->s[idx] != '"')
                    return pj_fail(p, idx, "Expecting property name enclosed in double quotes");
                if (scan_string(p, idx + 1, &n))
                    return -1;
                idx = skip_ws(p, n);
                if (idx >= p->len || p->s[idx] != ':')
                    return pj_fail(p, idx, "Expecting ':' delimiter");
                idx = skip_ws(p, idx + 1);
            }
            if (scan_value(p, idx, &n, depth))
                return -1;
            idx = skip_ws(p, n);
            if (idx < p->len && p->s[idx] == close)
                break;
            if (idx >= p->len || p->s[idx] != ',')
                return pj_fail(p, idx, "Expecting ',' delimiter");
            idx = skip_ws(p, idx + 1);
        }
    }
    *next_out = idx + 1;
    return 0;
}

static int literal(const pj *p, size_t idx, const char *word) {
    size_t n = strlen(word);
    return idx + n - 1 < p->len && !memcmp(p->s + idx, word, n);
}

static int scan_value(pj *p, size_t idx, size_t *next, int depth) {
    static const char *const words[] = {"null", "true", "false", "NaN", "Infinity", "-Infinity"};
    if (idx >= p->len)
        return pj_fail(p, idx, "Expecting value");
    unsigned char c = p->s[idx];
    if (c == '"')
        return scan_string(p, idx + 1, next);
    if (c == '{' || c == '[') {
        /* CPython raises RecursionError; the contract fixes the depth at 1,000. */
        if (depth >= MAX_DEPTH)
            return pj_fail(p, idx,
                           "maximum recursion depth exceeded while decoding a JSON %s from a "
                           "unicode string",
                           c == '{' ? "object" : "array");
        return scan_container(p, idx + 1, next, depth + 1, c == '{');
    }
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
        if (c == (unsigned char)words[w][0] && literal(p, idx, words[w])) {
            *next = idx + strlen(words[w]);
            return 0;
        }
    return scan_number(p, idx, next);
}

void vw_pyjson_validate(const char *buf, size_t len, vw_pyjson_check *out) {
    const unsigned char *s = (const unsigned char *)(buf ? buf : "");
    pj p = {s, len, 0, out};
    memset(out, 0, sizeof *out);
    /* json.loads(bytes) would strip the BOM (utf-8-sig); the contract refuses
     * it with the message json.loads(str) gives. */
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
        pj_fail(&p, 0, "Unexpected UTF-8 BOM (decode using utf-8-sig)");
        return;
    }
    for (size_t i = 0; i < len;) {
        u8step st = u8_step(s, len, i);
        if (!st.len) {
            if (st.err_end - i == 1)
                pj_fail(&p, i, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s", s[i],
                        i, st.reason);
            else
                pj_fail(&p, i, "'utf-8' codec can't decode bytes in position %zu-%zu: %s", i,
                        st.err_end - 1, st.reason);
            return;
        }
        p.surrogate |= st.surrogate; /* only valid inside a string: else a syntax error */
        i += st.len;
    }
    size_t start = skip_ws(&p, 0), end;
    if (scan_value(&p, start, &end, 0))
        return;
    end = skip_ws(&p, end);
    if (end != len) {
        pj_fail(&p, end, "Extra data");
        return;
    }
    if (p.surrogate) {
        out->kind = VW_PYJSON_SURROGATE;
        return;
    }
    out->is_object = s[start] == '{';
}

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
    char msg[320];
    *rejected = true;
    if ((int64_t)rec->value_len > max_request_bytes) {
        /* pydantic's bytes_too_long wording, with the contract's type. */
        snprintf(msg, sizeof msg, "Data should have at most %lld bytes",
                 (long long)max_request_bytes);
        return one_triple(out, 413, -1, msg, VW_ET_TOO_LONG, err);
    }
    vw_pyjson_check chk;
    vw_pyjson_validate(rec->value, rec->value_len, &chk);
    switch (chk.kind) {
    case VW_PYJSON_SYNTAX:
        snprintf(msg, sizeof msg, "JSON decode error: %s", chk.msg);
        return one_triple(out, 400, (int64_t)chk.offset, msg, VW_ET_JSON_INVALID, err);
    case VW_PYJSON_SURROGATE:
        return one_triple(out, 400, -1, "the request contains an unpaired surrogate",
                          VW_ET_JSON_INVALID, err);
    case VW_PYJSON_OK:
        break;
    }
    if (!chk.is_object)
        return one_triple(out, 400, -1,
                          "Input should be a valid dictionary or object to extract fields from",
                          VW_ET_MODEL_ATTRIBUTES, err);
    *rejected = false;
    return VW_OK;
}

char *vw_request_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                    size_t hdr_len, const void *key, size_t key_len) {
    if (hdr && hdr_len && utf8_clean(hdr, hdr_len))
        return strndup(hdr, hdr_len);
    if (key && key_len && utf8_clean(key, key_len))
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
