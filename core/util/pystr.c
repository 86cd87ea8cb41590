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
