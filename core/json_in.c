/* json_in.c — Python-faithful JSON input (see json_in.h).
 *
 * Owns: the lexical pre-scan (UTF-8, BOM, depth, number grammar, NaN/Infinity,
 * unpaired surrogate escapes), the rewrite handed to jansson, and mapping
 * jansson's error offsets back to the input. Never: canonical output
 * (canonical_json.c), request semantics (request.c).
 */
#include "json_in.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One rewritten token: input [in0, in1) became output [out0, out1). */
typedef struct shift {
    size_t in0, in1, out0, out1;
} shift;

struct vw_json_doc {
    json_t *root;
    char *src; /* copy of the input: number lexemes point into it */
    vw_jnum *nums;
    size_t n_nums;
};

typedef struct scan {
    const char *in;
    size_t len, pos;
    char *out;
    size_t out_len, out_cap;
    vw_jnum *nums;
    size_t n_nums, cap_nums;
    shift *shifts;
    size_t n_shifts, cap_shifts;
    char stack[VW_JSON_MAX_DEPTH + 1]; /* '{' or '[' per open container */
    size_t depth;
    bool surrogate;      /* an unpaired surrogate escape was seen */
    size_t surrogate_at; /* its byte offset */
    bool failed;         /* lexical error recorded in err */
    vw_json_error err;
    bool oom;
} scan;

static void fail_at(scan *s, size_t at, const char *msg) {
    if (s->failed)
        return;
    s->failed = true;
    s->err.kind = VW_JSON_SYNTAX;
    s->err.offset = at;
    snprintf(s->err.msg, sizeof s->err.msg, "%s", msg);
}

static void emit(scan *s, const char *p, size_t n) {
    if (s->oom)
        return;
    if (s->out_len + n + 1 > s->out_cap) {
        size_t cap = (s->out_len + n + 1) * 2;
        char *np = realloc(s->out, cap);
        if (!np) {
            s->oom = true;
            return;
        }
        s->out = np;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
}

/* Length of a valid UTF-8 sequence at p (strict: no overlongs, no surrogates,
 * <= U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, size_t avail) {
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c < 0xC2 || c > 0xF4)
        return 0;
    size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if (c == 0xE0 && p[1] < 0xA0)
        return 0;
    if (c == 0xED && p[1] >= 0xA0)
        return 0;
    if (c == 0xF0 && p[1] < 0x90)
        return 0;
    if (c == 0xF4 && p[1] >= 0x90)
        return 0;
    return n;
}

/* Offset of the first byte that is not valid UTF-8, or len. */
static size_t utf8_check(const char *buf, size_t len) {
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;
    while (i < len) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_len(p + i, len - i);
        if (!n)
            return i;
        i += n;
    }
    return len;
}

static int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Copies a string literal starting at s->pos (the opening quote). Unpaired
 * surrogate escapes become \ufffd; everything else is left to jansson. */
static void scan_string(scan *s) {
    size_t i = s->pos + 1, start = s->pos;
    while (i < s->len) {
        char c = s->in[i];
        if (c == '"') {
            i++;
            break;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= s->len) {
            i = s->len;
            break;
        }
        if (s->in[i + 1] != 'u' || i + 6 > s->len || hex4(s->in + i + 2) < 0) {
            i += 2;
            continue;
        }
        int cp = hex4(s->in + i + 2);
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 12 <= s->len && s->in[i + 6] == '\\' &&
            s->in[i + 7] == 'u') {
            int lo = hex4(s->in + i + 8);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                i += 12;
                continue;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            emit(s, s->in + start, i - start);
            emit(s, "\\ufffd", 6);
            if (!s->surrogate) {
                s->surrogate = true;
                s->surrogate_at = i;
            }
            start = i + 6;
        }
        i += 6;
    }
    emit(s, s->in + start, i - start);
    s->pos = i;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Length of a Python JSON number at p: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?,
 * 0 when there is none; *is_int and *int_digits describe it. */
static size_t number_len(const char *p, size_t avail, bool *is_int, size_t *int_digits) {
    size_t i = 0;
    if (i < avail && p[i] == '-')
        i++;
    if (i >= avail || !is_digit(p[i]))
        return 0;
    size_t d0 = i;
    if (p[i] == '0')
        i++;
    else
        while (i < avail && is_digit(p[i]))
            i++;
    *int_digits = i - d0;
    *is_int = true;
    if (i + 1 < avail && p[i] == '.' && is_digit(p[i + 1])) {
        i += 2;
        while (i < avail && is_digit(p[i]))
            i++;
        *is_int = false;
    }
    if (i < avail && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (j < avail && (p[j] == '+' || p[j] == '-'))
            j++;
        if (j < avail && is_digit(p[j])) {
            while (j < avail && is_digit(p[j]))
                j++;
            i = j;
            *is_int = false;
        }
    }
    return i;
}

static bool starts(const scan *s, const char *lit) {
    size_t n = strlen(lit);
    return s->pos + n <= s->len && !memcmp(s->in + s->pos, lit, n);
}

/* Records a number token [pos, pos+n) and writes its table index instead. */
static void number_token(scan *s, size_t n, bool is_int, double value) {
    if (s->n_nums == s->cap_nums) {
        size_t cap = s->cap_nums ? s->cap_nums * 2 : 16;
        vw_jnum *nn = realloc(s->nums, cap * sizeof *nn);
        shift *ns = realloc(s->shifts, cap * sizeof *ns);
        if (nn)
            s->nums = nn;
        if (ns)
            s->shifts = ns;
        if (!nn || !ns) {
            s->oom = true;
            return;
        }
        s->cap_nums = s->cap_shifts = cap;
    }
    vw_jnum *num = &s->nums[s->n_nums];
    num->lex = NULL; /* set to the document's copy later: [pos, pos+n) */
    num->len = n;
    num->is_int = is_int;
    num->value = value;
    char idx[24];
    int k = snprintf(idx, sizeof idx, "%zu", s->n_nums);
    shift *sh = &s->shifts[s->n_shifts++];
    sh->in0 = s->pos;
    sh->in1 = s->pos + n;
    sh->out0 = s->out_len;
    emit(s, idx, (size_t)k);
    sh->out1 = s->out_len;
    s->n_nums++;
    s->pos += n;
    /* A value must be followed by a delimiter; otherwise two tokens could
     * fuse in the rewrite ("1.5.3" would read "0.1"). */
    if (s->pos < s->len) {
        char c = s->in[s->pos];
        if (!strchr(" \t\n\r,]}:", c))
            fail_at(s, s->pos, s->depth ? "Expecting ',' delimiter" : "Extra data");
    }
}

static void scan_number(scan *s) {
    bool is_int = true;
    size_t digits = 0, n = number_len(s->in + s->pos, s->len - s->pos, &is_int, &digits);
    if (!n) {
        if (starts(s, "-Infinity")) {
            number_token(s, 9, false, -INFINITY);
            return;
        }
        emit(s, s->in + s->pos, 1); /* jansson reports the bad token */
        s->pos++;
        return;
    }
    if (is_int && digits > VW_JSON_MAX_INT_DIGITS) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "Exceeds the limit (4300 digits) for integer string conversion: value has %zu "
                 "digits",
                 digits);
        fail_at(s, s->pos, msg);
        s->pos += n;
        return;
    }
    char small[64], *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) {
        s->oom = true;
        return;
    }
    memcpy(tmp, s->in + s->pos, n);
    tmp[n] = 0;
    double v = strtod(tmp, NULL); /* +-HUGE_VAL on overflow, as Python float() gives inf */
    if (tmp != small)
        free(tmp);
    number_token(s, n, is_int, v);
}

/* One step of the pre-scan at s->pos. */
static void scan_step(scan *s) {
    char c = s->in[s->pos];
    switch (c) {
    case '"':
        scan_string(s);
        return;
    case '{':
    case '[':
        if (s->depth == VW_JSON_MAX_DEPTH) {
            fail_at(s, s->pos, "nesting deeper than 1000");
            return;
        }
        s->stack[s->depth++] = c;
        break;
    case '}':
    case ']':
        if (s->depth)
            s->depth--;
        break;
    case 'N':
        if (starts(s, "NaN")) {
            number_token(s, 3, false, NAN);
            return;
        }
        break;
    case 'I':
        if (starts(s, "Infinity")) {
            number_token(s, 8, false, INFINITY);
            return;
        }
        break;
    default:
        if (c == '-' || is_digit(c)) {
            scan_number(s);
            return;
        }
    }
    emit(s, s->in + s->pos, 1);
    s->pos++;
}

/* Maps an offset of the rewritten text back to the input. */
static size_t map_back(const scan *s, size_t out_pos) {
    size_t in_pos = out_pos;
    for (size_t i = 0; i < s->n_shifts; i++) {
        const shift *sh = &s->shifts[i];
        if (out_pos < sh->out0)
            break;
        if (out_pos < sh->out1)
            return sh->in0;
        in_pos = sh->in1 + (out_pos - sh->out1);
    }
    return in_pos;
}

/* jansson reports the offset after the offending token and quotes the token
 * ("... near 'tok'"); Python reports where the token starts. */
static size_t token_start(const json_error_t *je) {
    size_t pos = je->position > 0 ? (size_t)je->position : 0;
    const char *near = strstr(je->text, " near '");
    if (!near)
        return pos;
    near += 7;
    size_t n = strlen(near);
    if (n == 0 || near[n - 1] != '\'')
        return pos; /* truncated message: keep jansson's offset */
    n--;
    return pos >= n ? pos - n : 0;
}

static void scan_free(scan *s) {
    free(s->out);
    free(s->nums);
    free(s->shifts);
}

static vw_status lexical(const char *buf, size_t len, scan *s, vw_json_error *jerr) {
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
        jerr->kind = VW_JSON_SYNTAX;
        jerr->offset = 0;
        snprintf(jerr->msg, sizeof jerr->msg, "Unexpected UTF-8 BOM (decode using utf-8-sig)");
        return VW_EINVAL;
    }
    size_t bad = utf8_check(buf, len);
    if (bad < len) {
        jerr->kind = VW_JSON_SYNTAX;
        jerr->offset = bad;
        snprintf(jerr->msg, sizeof jerr->msg,
                 "'utf-8' codec can't decode byte 0x%02x in position %zu", (unsigned char)buf[bad],
                 bad);
        return VW_EINVAL;
    }
    s->in = buf;
    s->len = len;
    while (s->pos < s->len && !s->failed && !s->oom)
        scan_step(s);
    emit(s, "", 0);
    return s->oom ? VW_ENOMEM : VW_OK;
}

vw_status vw_json_parse(const char *buf, size_t len, vw_json_doc **out, vw_json_error *jerr) {
    vw_json_error local;
    if (!jerr)
        jerr = &local;
    memset(jerr, 0, sizeof *jerr);
    *out = NULL;
    scan s;
    memset(&s, 0, sizeof s);
    vw_json_doc *doc = NULL;
    vw_status st = lexical(buf, len, &s, jerr);
    if (st != VW_OK)
        goto done;
    json_error_t je;
    /* On a lexical error, jansson still reads the text up to it: an earlier
     * structural error is the one Python reports. */
    json_t *root = json_loadb(s.out ? s.out : "", s.out_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!root || s.failed) {
        size_t at = root ? (size_t)-1 : map_back(&s, token_start(&je));
        json_decref(root);
        if (s.failed && s.err.offset <= at) {
            *jerr = s.err;
        } else {
            jerr->kind = VW_JSON_SYNTAX;
            jerr->offset = at > len ? len : at;
            /* jansson quotes the offending input ("near '...'"), possibly cut
             * inside a UTF-8 sequence; the offset already says where. */
            const char *near = strstr(je.text, " near ");
            int n = near ? (int)(near - je.text) : (int)strlen(je.text);
            snprintf(jerr->msg, sizeof jerr->msg, "%.*s", n, je.text);
        }
        st = VW_EINVAL;
        goto done;
    }
    if (s.surrogate) {
        json_decref(root);
        jerr->kind = VW_JSON_SURROGATE;
        jerr->offset = s.surrogate_at;
        snprintf(jerr->msg, sizeof jerr->msg, "the request contains an unpaired surrogate");
        st = VW_EINVAL;
        goto done;
    }
    doc = calloc(1, sizeof *doc);
    char *src = malloc(len + 1);
    if (!doc || !src) {
        free(doc);
        free(src);
        doc = NULL;
        json_decref(root);
        st = VW_ENOMEM;
        goto done;
    }
    memcpy(src, buf, len);
    src[len] = 0;
    for (size_t i = 0; i < s.n_nums; i++)
        s.nums[i].lex = src + s.shifts[i].in0;
    doc->root = root;
    doc->src = src;
    doc->nums = s.nums;
    doc->n_nums = s.n_nums;
    s.nums = NULL;
    *out = doc;
done:
    scan_free(&s);
    return st;
}

void vw_json_free(vw_json_doc *doc) {
    if (!doc)
        return;
    json_decref(doc->root);
    free(doc->src);
    free(doc->nums);
    free(doc);
}

const json_t *vw_json_root(const vw_json_doc *doc) {
    return doc->root;
}

const vw_jnum *vw_json_num(const vw_json_doc *doc, const json_t *v) {
    if (!doc || !json_is_integer(v))
        return NULL;
    json_int_t i = json_integer_value(v);
    if (i < 0 || (size_t)i >= doc->n_nums)
        return NULL;
    return &doc->nums[i];
}

bool vw_json_finite(vw_jref r) {
    const json_t *v = r.v;
    if (json_is_integer(v)) {
        const vw_jnum *n = vw_json_num(r.doc, v);
        return n && (n->is_int || isfinite(n->value));
    }
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!vw_json_finite((vw_jref){r.doc, json_array_get(v, i)}))
                return false;
        return true;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c) {
            if (!vw_json_finite((vw_jref){r.doc, c}))
                return false;
        }
    }
    return true;
}

bool vw_json_payload(vw_jref r) {
    if (!json_is_string(r.v) && !json_is_object(r.v) && !json_is_array(r.v))
        return false;
    return vw_json_finite(r);
}
