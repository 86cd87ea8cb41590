/* canonical_json.c — canonical JSON, Python float repr and str repr (see
 * canonical_json.h). Owns: byte-exact output rules. Never: parsing. */
#include "canonical_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* The p-significant-digit decimal that reads back as x > 0, if there is one:
 * the correctly rounded candidate first, then its neighbours, which catches
 * the asymmetric rounding interval at powers of two. Its digits (without
 * trailing zeros) go to digits[], its decimal exponent (x ~ d.ddd * 10^e) to
 * *exp10; returns the digit count, 0 when no p-digit decimal reads back. */
static size_t digits_at(double x, int p, char digits[20], int *exp10) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    char *e = strchr(buf, 'e');
    int ex = atoi(e + 1);
    uint64_t m = 0;
    for (char *q = buf; q < e; q++)
        if (*q >= '0' && *q <= '9')
            m = m * 10 + (uint64_t)(*q - '0');
    uint64_t best = 0;
    bool found = false;
    double best_err = 0;
    for (int d = 0; d < 3; d++) {
        uint64_t cand = d == 0 ? m : d == 1 ? m - 1 : m + 1;
        if (cand == 0)
            continue;
        char t[48];
        snprintf(t, sizeof t, "%" PRIu64 "e%d", cand, ex - (p - 1));
        double y = strtod(t, NULL);
        if (y != x)
            continue;
        if (d == 0) {
            best = cand;
            found = true;
            break;
        }
        double err = fabs(strtod(t, NULL) - x);
        if (!found || err < best_err) {
            best = cand;
            best_err = err;
            found = true;
        }
    }
    if (!found)
        return 0;
    char t[24];
    int n = snprintf(t, sizeof t, "%" PRIu64, best);
    /* A neighbour may carry into one more digit (999 + 1). */
    *exp10 = ex + (n - p);
    while (n > 1 && t[n - 1] == '0')
        n--;
    memcpy(digits, t, (size_t)n);
    digits[n] = 0;
    return (size_t)n;
}

/* Shortest round-trip digits of x > 0 (see digits_at): the fewest significant
 * digits p in 1..17 for which some p-digit decimal reads back as x. If one
 * with p digits does, one with p + 1 does (a 0 appended), so p is found by
 * bisection: about 4 tries instead of up to 17 (the envelope's probabilities
 * mostly need 16 or 17). 17 digits always read back. */
static size_t shortest_digits(double x, char digits[20], int *exp10) {
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2, e;
        char d[20];
        if (digits_at(x, mid, d, &e))
            hi = mid;
        else
            lo = mid + 1;
    }
    size_t n = digits_at(x, lo, digits, exp10);
    if (n)
        return n;
    /* Unreachable for finite doubles: 17 digits always round-trip. */
    digits[0] = '0';
    digits[1] = 0;
    *exp10 = 0;
    return 1;
}

size_t vw_float_repr(double x, char out[32]) {
    size_t o = 0;
    if (signbit(x)) {
        out[o++] = '-';
        x = -x;
    }
    if (x == 0) {
        memcpy(out + o, "0.0", 4);
        return o + 3;
    }
    char d[20];
    int e;
    size_t n = shortest_digits(x, d, &e);
    if (e >= -4 && e < 16) {
        if (e < 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = 0; i < -e - 1; i++)
                out[o++] = '0';
            memcpy(out + o, d, n);
            o += n;
        } else {
            for (int i = 0; i <= e; i++)
                out[o++] = (size_t)i < n ? d[i] : '0';
            out[o++] = '.';
            if ((size_t)e + 1 < n) {
                memcpy(out + o, d + e + 1, n - (size_t)e - 1);
                o += n - (size_t)e - 1;
            } else {
                out[o++] = '0';
            }
        }
    } else {
        out[o++] = d[0];
        if (n > 1) {
            out[o++] = '.';
            memcpy(out + o, d + 1, n - 1);
            o += n - 1;
        }
        o += (size_t)snprintf(out + o, 32 - o, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    out[o] = 0;
    return o;
}

typedef struct keyref {
    const char *k;
    size_t n;
    const json_t *v;
} keyref;

static int keycmp(const void *a, const void *b) {
    const keyref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->k, y->k, n);
    if (c)
        return c;
    return x->n < y->n ? -1 : x->n > y->n;
}

static vw_status write_number(vw_sbuf *sb, const vw_jnum *num, vw_err *err) {
    if (num->is_int) {
        if (num->len == 2 && !memcmp(num->lex, "-0", 2))
            vw_sbuf_put(sb, "0", 1);
        else
            vw_sbuf_put(sb, num->lex, num->len);
        return VW_OK;
    }
    if (!isfinite(num->value))
        return VW_FAIL(err, VW_EINVAL, "non_finite",
                       "Out of range float values are not JSON "
                       "compliant");
    char r[32];
    size_t n = vw_float_repr(num->value, r);
    vw_sbuf_put(sb, r, n);
    return VW_OK;
}

static vw_status write_object(vw_sbuf *sb, vw_jref r, vw_err *err) {
    size_t n = json_object_size(r.v);
    keyref small[16], *keys = n <= 16 ? small : malloc(n * sizeof *keys);
    if (!keys) {
        vw_sbuf_fail(sb);
        return VW_FAIL(err, VW_ENOMEM, "oom", "canonical JSON: %zu keys", n);
    }
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)r.v, k, v) {
        keys[i].k = k;
        keys[i].n = strlen(k);
        keys[i].v = v;
        i++;
    }
    qsort(keys, n, sizeof *keys, keycmp);
    vw_status st = VW_OK;
    vw_sbuf_put(sb, "{", 1);
    for (i = 0; i < n && st == VW_OK; i++) {
        if (i)
            vw_sbuf_put(sb, ",", 1);
        vw_canon_string(sb, keys[i].k, keys[i].n);
        vw_sbuf_put(sb, ":", 1);
        st = vw_canon_write(sb, (vw_jref){r.doc, keys[i].v}, err);
    }
    vw_sbuf_put(sb, "}", 1);
    if (keys != small)
        free(keys);
    return st;
}

vw_status vw_canon_write(vw_sbuf *sb, vw_jref r, vw_err *err) {
    const json_t *v = r.v;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return write_object(sb, r, err);
    case JSON_ARRAY: {
        vw_sbuf_put(sb, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                vw_sbuf_put(sb, ",", 1);
            vw_status st = vw_canon_write(sb, (vw_jref){r.doc, json_array_get(v, i)}, err);
            if (st != VW_OK)
                return st;
        }
        vw_sbuf_put(sb, "]", 1);
        return VW_OK;
    }
    case JSON_STRING:
        vw_canon_string(sb, json_string_value(v), json_string_length(v));
        return VW_OK;
    case JSON_INTEGER: {
        const vw_jnum *num = vw_json_num(r.doc, v);
        if (!num)
            return VW_FAIL(err, VW_EINVAL, "bad_number", "a number outside its document");
        return write_number(sb, num, err);
    }
    case JSON_REAL: /* never produced by vw_json_parse; kept for json_t built in code */ {
        char b[32];
        double x = json_real_value(v);
        if (!isfinite(x))
            return VW_FAIL(err, VW_EINVAL, "non_finite",
                           "Out of range float values are not "
                           "JSON compliant");
        vw_sbuf_put(sb, b, vw_float_repr(x, b));
        return VW_OK;
    }
    case JSON_TRUE:
        vw_sbuf_puts(sb, "true");
        return VW_OK;
    case JSON_FALSE:
        vw_sbuf_puts(sb, "false");
        return VW_OK;
    case JSON_NULL:
        vw_sbuf_puts(sb, "null");
        return VW_OK;
    }
    return VW_OK;
}

/* Python str.isprintable for one code point: not Cc Cf Cs Co Cn Zl Zp Zs,
 * except the ASCII space. */
static bool py_printable(utf8proc_int32_t cp) {
    if (cp == ' ')
        return true;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

void vw_py_repr_str(vw_sbuf *sb, const char *s, size_t n) {
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    vw_sbuf_put(sb, &q, 1);
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k =
            utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0) { /* not valid UTF-8: callers pass validated text */
            vw_sbuf_printf(sb, "\\x%02x", (unsigned char)s[i]);
            i++;
            continue;
        }
        if (cp == q || cp == '\\') {
            char e[2] = {'\\', (char)cp};
            vw_sbuf_put(sb, e, 2);
        } else if (cp == '\t') {
            vw_sbuf_puts(sb, "\\t");
        } else if (cp == '\n') {
            vw_sbuf_puts(sb, "\\n");
        } else if (cp == '\r') {
            vw_sbuf_puts(sb, "\\r");
        } else if (cp < 0x20 || cp == 0x7f) {
            vw_sbuf_printf(sb, "\\x%02x", (unsigned)cp);
        } else if (cp < 0x7f || py_printable(cp)) {
            vw_sbuf_put(sb, s + i, (size_t)k);
        } else if (cp <= 0xff) {
            vw_sbuf_printf(sb, "\\x%02x", (unsigned)cp);
        } else if (cp <= 0xffff) {
            vw_sbuf_printf(sb, "\\u%04x", (unsigned)cp);
        } else {
            vw_sbuf_printf(sb, "\\U%08x", (unsigned)cp);
        }
        i += (size_t)k;
    }
    vw_sbuf_put(sb, &q, 1);
}
