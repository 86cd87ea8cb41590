/* utf8.c — UTF-8 checks and walking (see utf8.h). */
#include "utf8.h"

#include <stdlib.h>

static int cont(unsigned char c) {
    return c >= 0x80 && c < 0xC0;
}

static vw_utf8_step step_error(size_t end, const char *reason) {
    return (vw_utf8_step){0, 0, end, reason};
}

static vw_utf8_step step_three(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (n - i < 3) {
        if (n - i < 2)
            return step_error(n, "unexpected end of data");
        unsigned char c2 = s[i + 1];
        if (!cont(c2) || (c2 < 0xA0 ? c == 0xE0 : c == 0xED))
            return step_error(i + 1, "invalid continuation byte");
        return step_error(n, "unexpected end of data");
    }
    unsigned char c2 = s[i + 1], c3 = s[i + 2];
    if (!cont(c2) || (c == 0xE0 && c2 < 0xA0))
        return step_error(i + 1, "invalid continuation byte");
    if (c == 0xED && c2 >= 0xA0) {
        /* A surrogate: strict UTF-8 refuses it, surrogatepass takes it when the
         * three bytes are a complete sequence. */
        if (cont(c3))
            return (vw_utf8_step){3, 1, 0, NULL};
        return step_error(i + 1, "invalid continuation byte");
    }
    if (!cont(c3))
        return step_error(i + 2, "invalid continuation byte");
    return (vw_utf8_step){3, 0, 0, NULL};
}

static vw_utf8_step step_four(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (n - i < 4) {
        if (n - i < 2)
            return step_error(n, "unexpected end of data");
        unsigned char c2 = s[i + 1];
        if (!cont(c2) || (c2 < 0x90 ? c == 0xF0 : c == 0xF4))
            return step_error(i + 1, "invalid continuation byte");
        if (n - i < 3)
            return step_error(n, "unexpected end of data");
        if (!cont(s[i + 2]))
            return step_error(i + 2, "invalid continuation byte");
        return step_error(n, "unexpected end of data");
    }
    unsigned char c2 = s[i + 1];
    if (!cont(c2) || (c == 0xF0 && c2 < 0x90) || (c == 0xF4 && c2 >= 0x90))
        return step_error(i + 1, "invalid continuation byte");
    if (!cont(s[i + 2]))
        return step_error(i + 2, "invalid continuation byte");
    if (!cont(s[i + 3]))
        return step_error(i + 3, "invalid continuation byte");
    return (vw_utf8_step){4, 0, 0, NULL};
}

vw_utf8_step vw_utf8_step_at(const unsigned char *s, size_t n, size_t i) {
    unsigned char c = s[i];
    if (c < 0x80)
        return (vw_utf8_step){1, 0, 0, NULL};
    if (c < 0xC2 || c >= 0xF5)
        return step_error(i + 1, "invalid start byte");
    if (c < 0xE0) {
        if (n - i < 2)
            return step_error(n, "unexpected end of data");
        if (!cont(s[i + 1]))
            return step_error(i + 1, "invalid continuation byte");
        return (vw_utf8_step){2, 0, 0, NULL};
    }
    return c < 0xF0 ? step_three(s, n, i) : step_four(s, n, i);
}

bool vw_utf8_clean(const void *p, size_t n) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n;) {
        vw_utf8_step st = s[i] ? vw_utf8_step_at(s, n, i) : (vw_utf8_step){0};
        if (!st.len || st.surrogate)
            return false;
        i += st.len;
    }
    return true;
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
