/* pystr.c — Python str semantics on UTF-8 (see pystr.h). */
#include "pystr.h"

#include <stdlib.h>
#include <utf8proc.h>

bool vw_py_isspace(uint32_t cp) {
    /* CPython's Py_UNICODE_ISSPACE: bidi WS/B/S or category Zs. */
    if (cp < 0x80)
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool vw_py_isalnum(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return true;
    default:
        return false;
    }
}

uint32_t vw_py_lower(uint32_t cp) {
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    return (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
}

uint32_t vw_utf8_next(const char *s, size_t n, size_t *i) {
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    unsigned c = p[0];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (k == 1 || k > left) {
        *i += 1;
        return 0xFFFD;
    }
    uint32_t cp = c & (0x7F >> k);
    for (size_t j = 1; j < k; j++)
        cp = (cp << 6) | (p[j] & 0x3F);
    *i += k;
    return cp;
}

size_t vw_utf8_count(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

uint32_t *vw_utf8_decode(const char *s, size_t n, size_t *n_out, size_t **byte_at) {
    size_t m = vw_utf8_count(s, n);
    uint32_t *cps = malloc((m + 1) * sizeof *cps);
    size_t *at = byte_at ? malloc((m + 1) * sizeof *at) : NULL;
    if (!cps || (byte_at && !at)) {
        free(cps);
        free(at);
        return NULL;
    }
    size_t i = 0, k = 0;
    while (i < n && k < m) {
        if (at)
            at[k] = i;
        cps[k++] = vw_utf8_next(s, n, &i);
    }
    if (at)
        at[k] = n;
    *n_out = k;
    if (byte_at)
        *byte_at = at;
    return cps;
}

size_t vw_utf8_put(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

void vw_py_strip(const char *s, size_t n, size_t *b0, size_t *b1) {
    size_t i = 0, start = n, end = 0;
    while (i < n) {
        size_t at = i;
        uint32_t cp = vw_utf8_next(s, n, &i);
        if (!vw_py_isspace(cp)) {
            if (start == n)
                start = at;
            end = i;
        }
    }
    if (start == n) {
        *b0 = *b1 = 0;
        return;
    }
    *b0 = start;
    *b1 = end;
}

bool vw_py_blank(const char *s, size_t n) {
    size_t b0, b1;
    vw_py_strip(s, n, &b0, &b1);
    return b0 == b1;
}
