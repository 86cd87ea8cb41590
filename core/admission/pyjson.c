/* pyjson.c — the JSON front door (see pyjson.h). Owns the json.loads-compatible
 * checker (UTF-8 with surrogatepass, Modules/_json.c syntax, the digit and depth
 * limits) and the R1-R9 rejection rows. Never builds a tree (core/admission/json_in.c
 * does, through the sink) and never formats envelopes. */
#include "pyjson.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errlist.h" /* the VW_ET_* type names */
#include "util/utf8.h"

enum { MAX_DEPTH = VW_PYJSON_MAX_DEPTH, MAX_INT_DIGITS = VW_PYJSON_MAX_INT_DIGITS };

/* ---- JSON syntax, as CPython 3.11 json.loads (Modules/_json.c) ---------- */

typedef struct pj {
    const unsigned char *s;
    size_t len;
    size_t surrogate; /* offset of the first unpaired surrogate, or SIZE_MAX */
    vw_pyjson_check *out;
    const vw_pyjson_sink *sink; /* may be NULL */
    vw_status sink_st;          /* the first failed sink call stops the scan */
} pj;

static void note_surrogate(pj *p, size_t at) {
    if (at < p->surrogate)
        p->surrogate = at;
}

/* Reports a number token to the sink; -1 when the sink failed. */
static int emit_number(pj *p, size_t at, size_t len, int is_int) {
    if (!p->sink || !p->sink->number)
        return 0;
    p->sink_st = p->sink->number(p->sink->ctx, at, len, is_int != 0);
    return p->sink_st == VW_OK ? 0 : -1;
}

static int pj_fail(pj *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pj_fail(pj *p, size_t at, const char *fmt, ...) {
    if (!strchr(fmt, '%')) { /* most messages: a plain copy is ~10x cheaper */
        size_t n = strlen(fmt);
        memcpy(p->out->msg, fmt, n + 1 <= sizeof p->out->msg ? n + 1 : sizeof p->out->msg);
        p->out->msg[sizeof p->out->msg - 1] = 0;
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->out->msg, sizeof p->out->msg, fmt, ap);
        va_end(ap);
    }
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
        note_surrogate(p, u - 1);
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
    return emit_number(p, start, idx - start, !is_float);
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
            size_t n = strlen(words[w]);
            *next = idx + n;
            return w < 3 ? 0 : emit_number(p, idx, n, 0); /* NaN, Infinity, -Infinity */
        }
    return scan_number(p, idx, next);
}

/* The 'utf-8' codec pass: 0, or -1 with the codec's error in p->out. */
static int decode_utf8(pj *p) {
    const unsigned char *s = p->s;
    for (size_t i = 0; i < p->len;) {
        if (s[i] < 0x80) { /* the common case, kept out of vw_utf8_step_at */
            i++;
            continue;
        }
        vw_utf8_step st = vw_utf8_step_at(s, p->len, i);
        if (!st.len) {
            if (st.err_end - i == 1)
                return pj_fail(p, i, "'utf-8' codec can't decode byte 0x%02x in position %zu: %s",
                               s[i], i, st.reason);
            return pj_fail(p, i, "'utf-8' codec can't decode bytes in position %zu-%zu: %s", i,
                           st.err_end - 1, st.reason);
        }
        if (st.surrogate) /* only valid inside a string: else a syntax error */
            note_surrogate(p, i);
        i += st.len;
    }
    return 0;
}

vw_status vw_pyjson_scan(const char *buf, size_t len, const vw_pyjson_sink *sink,
                         vw_pyjson_check *out) {
    const unsigned char *s = (const unsigned char *)(buf ? buf : "");
    pj p = {s, len, SIZE_MAX, out, sink, VW_OK};
    memset(out, 0, sizeof *out);
    /* json.loads(bytes) would strip the BOM (utf-8-sig); the contract refuses
     * it with the message json.loads(str) gives. */
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
        pj_fail(&p, 0, "Unexpected UTF-8 BOM (decode using utf-8-sig)");
        return VW_OK;
    }
    if (decode_utf8(&p))
        return VW_OK;
    size_t start = skip_ws(&p, 0), end;
    if (scan_value(&p, start, &end, 0))
        return p.sink_st;
    end = skip_ws(&p, end);
    if (end != len) {
        pj_fail(&p, end, "Extra data");
        return VW_OK;
    }
    if (p.surrogate != SIZE_MAX) {
        out->kind = VW_PYJSON_SURROGATE;
        out->offset = p.surrogate;
        snprintf(out->msg, sizeof out->msg, "the request contains an unpaired surrogate");
        return VW_OK;
    }
    out->is_object = s[start] == '{';
    return VW_OK;
}

void vw_pyjson_validate(const char *buf, size_t len, vw_pyjson_check *out) {
    (void)vw_pyjson_scan(buf, len, NULL, out); /* no sink: cannot fail */
}

/* ---- the rejection rows ------------------------------------------------ */

bool vw_body_too_long(size_t len, size_t max_bytes, vw_body_reject *out) {
    if (!max_bytes || len <= max_bytes)
        return false;
    out->status = 413;
    out->offset = -1;
    out->type = VW_ET_TOO_LONG;
    snprintf(out->msg, sizeof out->msg, "Data should have at most %zu bytes", max_bytes);
    return true;
}

/* prefix + msg into out->msg, cut to fit. Not snprintf: this runs once per
 * rejected record, where snprintf("%s") alone cost ~1,100 instructions. */
static void copy_msg(vw_body_reject *out, const char *prefix, const char *msg, size_t msg_cap) {
    size_t p = strlen(prefix), m = strnlen(msg, msg_cap);
    if (p + m >= sizeof out->msg)
        m = sizeof out->msg - 1 - p;
    memcpy(out->msg, prefix, p);
    memcpy(out->msg + p, msg, m);
    out->msg[p + m] = 0;
}

bool vw_body_reject_of(const vw_pyjson_check *c, vw_body_reject *out) {
    out->status = 400;
    out->offset = -1;
    out->type = VW_ET_JSON_INVALID;
    switch (c->kind) {
    case VW_PYJSON_SYNTAX:
        out->offset = (int64_t)c->offset;
        copy_msg(out, "JSON decode error: ", c->msg, sizeof c->msg);
        return true;
    case VW_PYJSON_SURROGATE:
        copy_msg(out, "", c->msg, sizeof c->msg);
        return true;
    case VW_PYJSON_OK:
        break;
    }
    if (c->is_object)
        return false;
    out->type = VW_ET_MODEL_ATTRIBUTES;
    snprintf(out->msg, sizeof out->msg,
             "Input should be a valid dictionary or object to extract fields from");
    return true;
}
