/* log.c — formats and writes log events (see log.h). Owns no state. */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int vw_log_level_parse(const char *s) {
    for (int i = 0; i <= VW_LOG_OFF; i++)
        if (!strcmp(s, level_names[i]))
            return i;
    return -1;
}

const char *vw_log_level_name(vw_log_level lvl) {
    return (unsigned)lvl <= VW_LOG_OFF ? level_names[lvl] : "?";
}

/* A bounded string builder: appends are cut at capacity, never overflow. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_putc(sbuf *b, char c) {
    if (b->n + 1 < b->cap)
        b->p[b->n++] = c;
}

static void sb_puts(sbuf *b, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        sb_putc(b, s[i]);
}

/* JSON string body: escapes quotes, backslashes and control bytes. */
static void sb_json_str(sbuf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    sb_putc(b, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            sb_putc(b, '\\');
            sb_putc(b, (char)c);
        } else if (c < 0x20) {
            sb_puts(b, "\\u00", 4);
            sb_putc(b, hex[c >> 4]);
            sb_putc(b, hex[c & 15]);
        } else {
            sb_putc(b, (char)c);
        }
    }
    sb_putc(b, '"');
}

static bool is_number(const char *s, size_t len) {
    if (!len || len > 24)
        return false;
    char tmp[32], *end = NULL;
    memcpy(tmp, s, len);
    tmp[len] = 0;
    if (tmp[0] == '+' || tmp[0] == '.' || (len > 1 && tmp[0] == '0' && tmp[1] != '.'))
        return false;
    strtod(tmp, &end);
    return *end == 0 && !strpbrk(tmp, "xXnNiI");
}

/* Splits "free text k1=v1 k2=\"v 2\"" into "msg" and fields; a token is a field
 * when it has '=' with a non-empty identifier before it. */
static void emit_json_fields(sbuf *b, const char *m) {
    const char *p = m, *text_end = m;
    bool in_fields = false;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *tok = p, *eq = NULL;
        while (*p && *p != ' ' && *p != '=')
            p++;
        if (*p == '=' && p > tok)
            eq = p;
        if (!eq) {
            while (*p && *p != ' ')
                p++;
            if (!in_fields)
                text_end = p;
            continue;
        }
        if (!in_fields) {
            sb_puts(b, ",\"msg\":", 7);
            sb_json_str(b, m, (size_t)(text_end - m));
            in_fields = true;
        }
        const char *v = eq + 1, *vend;
        if (*v == '"') {
            v++;
            vend = strchr(v, '"');
            if (!vend)
                vend = v + strlen(v);
            p = *vend ? vend + 1 : vend;
        } else {
            vend = v;
            while (*vend && *vend != ' ')
                vend++;
            p = vend;
        }
        sb_putc(b, ',');
        sb_json_str(b, tok, (size_t)(eq - tok));
        sb_putc(b, ':');
        if (is_number(v, (size_t)(vend - v)))
            sb_puts(b, v, (size_t)(vend - v));
        else
            sb_json_str(b, v, (size_t)(vend - v));
    }
    if (!in_fields) {
        sb_puts(b, ",\"msg\":", 7);
        sb_json_str(b, m, (size_t)(text_end - m));
    }
}

void vw_log_emit(const vw_log *lg, vw_log_level lvl, const char *module, const char *file, int line,
                 const char *fmt, ...) {
    char msg[2048], out[4096], ts[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t tn = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + tn, sizeof ts - tn, ".%03ldZ", now.tv_nsec / 1000000);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    sbuf b = {out, 0, sizeof out - 1};
    if (lg->format == VW_LOG_TEXT) {
        int n = snprintf(out, sizeof out - 1, "%s %s %s %s where=%s:%d", ts, vw_log_level_name(lvl),
                         module, msg, base, line);
        b.n = n < 0 ? 0 : ((size_t)n < b.cap ? (size_t)n : b.cap);
    } else {
        char where[128];
        int wn = snprintf(where, sizeof where, "%s:%d", base, line);
        sb_puts(&b, "{\"ts\":\"", 7);
        sb_puts(&b, ts, strlen(ts));
        sb_puts(&b, "\",\"level\":\"", 11);
        sb_puts(&b, vw_log_level_name(lvl), strlen(vw_log_level_name(lvl)));
        sb_puts(&b, "\",\"module\":", 11);
        sb_json_str(&b, module, strlen(module));
        emit_json_fields(&b, msg);
        sb_puts(&b, ",\"where\":", 9);
        sb_json_str(&b, where, wn > 0 ? (size_t)wn : 0);
        sb_putc(&b, '}');
    }
    out[b.n++] = '\n';
    fwrite(out, 1, b.n, lg->out ? lg->out : stderr);
}
