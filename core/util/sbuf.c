/* sbuf.c — the byte buffer, JSON string literals, terminal-safe text,
 * decimal integers (see sbuf.h). */
#include "sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void vw_sbuf_put(vw_sbuf *sb, const char *s, size_t n) {
    if (sb->oom)
        return;
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 64;
        while (cap < sb->len + n + 1)
            cap *= 2;
        char *p = realloc(sb->p, cap);
        if (!p) {
            sb->oom = true;
            return;
        }
        sb->p = p;
        sb->cap = cap;
    }
    if (n)
        memcpy(sb->p + sb->len, s, n);
    sb->len += n;
    sb->p[sb->len] = 0;
}

void vw_sbuf_puts(vw_sbuf *sb, const char *s) {
    vw_sbuf_put(sb, s, strlen(s));
}

void vw_sbuf_printf(vw_sbuf *sb, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        sb->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        vw_sbuf_put(sb, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        sb->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    vw_sbuf_put(sb, big, (size_t)n);
    free(big);
}

void vw_sbuf_reset(vw_sbuf *sb) {
    sb->len = 0;
    if (sb->p)
        sb->p[0] = 0;
}

void vw_sbuf_free(vw_sbuf *sb) {
    free(sb->p);
    sb->p = NULL;
    sb->len = sb->cap = 0;
    sb->oom = false;
}

vw_sbuf vw_sbuf_with(size_t cap) {
    vw_sbuf sb = {0};
    if (cap && (sb.p = malloc(cap))) {
        sb.cap = cap;
        sb.p[0] = 0;
    }
    return sb;
}

void vw_sbuf_truncate(vw_sbuf *sb, size_t len) {
    if (len < sb->len) {
        sb->len = len;
        sb->p[len] = 0;
    }
}

void vw_sbuf_fail(vw_sbuf *sb) {
    sb->oom = true;
}

vw_status vw_sbuf_status(const vw_sbuf *sb) {
    return sb->oom ? VW_ENOMEM : VW_OK;
}

char *vw_sbuf_take(vw_sbuf *sb, size_t *len) {
    char *p = sb->p;
    if (!p && !sb->oom) {
        p = calloc(1, 1);
    }
    if (len)
        *len = sb->len;
    sb->p = NULL;
    sb->len = sb->cap = 0;
    return p;
}

void vw_canon_string(vw_sbuf *sb, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    vw_sbuf_put(sb, "\"", 1);
    size_t run = 0; /* start of the pending run of bytes written verbatim */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[7];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            memcpy(u, "\\u00", 4);
            u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
            u[6] = 0;
            esc = u;
        }
        if (!esc)
            continue;
        vw_sbuf_put(sb, s + run, i - run);
        vw_sbuf_puts(sb, esc);
        run = i + 1;
    }
    vw_sbuf_put(sb, s + run, n - run);
    vw_sbuf_put(sb, "\"", 1);
}

void vw_sbuf_put_visible(vw_sbuf *sb, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0; /* start of the pending run of bytes written verbatim */
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        char esc[7];
        size_t len = 1, esc_len = 0;
        if (c >= 0x80) {
            vw_utf8_step st = vw_utf8_step_at(u, n, i);
            if (st.len && !st.surrogate && !(c == 0xC2 && u[i + 1] < 0xA0)) {
                i += st.len; /* a valid character outside C1: kept */
                continue;
            }
            if (st.len && !st.surrogate) { /* C2 80..9F: a C1 control, U+0080..U+009F */
                len = 2;
                esc_len = 6;
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[u[i + 1] >> 4];
                esc[5] = hex[u[i + 1] & 15];
            }
        } else if (c == '\\') {
            esc_len = 2;
            memcpy(esc, "\\\\", 2);
        } else if (c >= 0x20 && c != 0x7F) {
            i++;
            continue;
        }
        if (!esc_len) { /* C0, DEL, or a byte that is not UTF-8 */
            esc_len = 4;
            memcpy(esc, "\\x", 2);
            esc[2] = hex[c >> 4];
            esc[3] = hex[c & 15];
        }
        vw_sbuf_put(sb, s + run, i - run);
        vw_sbuf_put(sb, esc, esc_len);
        i += len;
        run = i;
    }
    vw_sbuf_put(sb, s + run, n - run);
}

size_t vw_fmt_i64(char *buf, int64_t v) {
    char tmp[24];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[len++] = '-';
    while (n)
        buf[len++] = tmp[--n];
    buf[len] = 0;
    return len;
}

size_t vw_fmt_str(char *buf, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return n;
}
