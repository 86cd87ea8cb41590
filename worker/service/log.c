/* log.c — formats and writes log events (see log.h). Owns no state. */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/sbuf.h"
#include "util/utf8.h"

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

/* ---- JSON lines ------------------------------------------------------------
 *
 * The fields of an event come from its FORMAT, never from the formatted text:
 * the format is a literal of the code, while its arguments (a librdkafka error
 * text, a request id, an error message) may hold anything, '=', quotes and
 * newlines included. The format reads "free text key=%x key=\"%s\" ...": the
 * message is what comes before the first " key=", each field's value is one
 * unquoted token or a double-quoted run of the format. Where each piece starts
 * and ends in the formatted text is found by formatting the format's prefixes
 * (vsnprintf of fmt[0, i) gives the output up to that point), so a value is cut
 * exactly where its own conversions end, whatever they printed. */

enum { MAX_FIELDS = 16, MAX_VALUE = 8192 };

typedef struct piece {
    size_t key0, key1; /* the key in fmt; key1 == key0 for the message */
    size_t v0, v1;     /* the value in fmt */
    bool quoted;
} piece;

/* Length of the conversion specification at fmt[i] == '%'. */
static size_t conv_len(const char *fmt, size_t i) {
    size_t j = i + 1;
    if (fmt[j] == '%')
        return 2;
    while (fmt[j] && strchr("-+ #0'", fmt[j]))
        j++;
    while (fmt[j] && (strchr("0123456789.*", fmt[j])))
        j++;
    while (fmt[j] && strchr("hlLqjzt", fmt[j]))
        j++;
    return fmt[j] ? j + 1 - i : j - i;
}

static bool key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

/* Length of "key=" at fmt[i] (a literal key, then '='), or 0. */
static size_t key_at(const char *fmt, size_t i) {
    size_t j = i;
    while (key_char(fmt[j]))
        j++;
    return j > i && fmt[j] == '=' ? j - i + 1 : 0;
}

/* Splits fmt into the message (pc[0]) and its fields; returns the count. A
 * field runs to the next field (" key=") or the end, so no text is lost; it is
 * quoted when it is exactly "..." in the format. */
static size_t split_format(const char *fmt, piece *pc) {
    size_t n = 1, i = 0, len = strlen(fmt);
    pc[0] = (piece){0, 0, 0, len, false};
    while (i < len) {
        if (fmt[i] == '%') {
            i += conv_len(fmt, i);
            continue;
        }
        size_t k = fmt[i] == ' ' ? key_at(fmt, i + 1) : 0;
        if (!k || n == MAX_FIELDS) {
            i++;
            continue;
        }
        pc[n - 1].v1 = i; /* the previous piece ends at this field */
        piece *f = &pc[n++];
        *f = (piece){i + 1, i + k, i + 1 + k, len, false};
        i = f->v0;
        if (fmt[i] == '"') { /* a quoted value: no field starts inside it */
            i++;
            while (i < len && fmt[i] != '"')
                i += fmt[i] == '%' ? conv_len(fmt, i) : 1;
            i += i < len;
        }
    }
    for (size_t k = 1; k < n; k++) {
        piece *f = &pc[k];
        if (f->v1 - f->v0 >= 2 && fmt[f->v0] == '"' && fmt[f->v1 - 1] == '"') {
            f->quoted = true;
            f->v0++;
            f->v1--;
        }
    }
    return n;
}

/* Formatted length of fmt[0, end). */
static size_t out_at(const char *fmt, size_t end, va_list ap) {
    char small[512], *pre = end < sizeof small ? small : malloc(end + 1);
    if (!pre)
        return 0;
    memcpy(pre, fmt, end);
    pre[end] = 0;
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, pre, aq);
    va_end(aq);
    if (pre != small)
        free(pre);
    return n < 0 ? 0 : (size_t)n;
}

/* A JSON string of s[0, n): quotes, backslashes and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD, at most MAX_VALUE bytes of s. */
static void json_str(vw_sbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    bool cut = n > MAX_VALUE;
    if (cut)
        n = MAX_VALUE;
    vw_sbuf_put(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c >= 0x80) {
            vw_utf8_step st = vw_utf8_step_at(u, n, i);
            if (st.len && !st.surrogate) {
                vw_sbuf_put(b, s + i, st.len);
                i += st.len;
            } else {
                vw_sbuf_puts(b, "\\ufffd");
                i++;
            }
            continue;
        }
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            vw_sbuf_put(b, e, 2);
        } else if (c == '\n') {
            vw_sbuf_puts(b, "\\n");
        } else if (c == '\t') {
            vw_sbuf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            vw_sbuf_put(b, e, 6);
        } else {
            vw_sbuf_put(b, s + i, 1);
        }
        i++;
    }
    if (cut)
        vw_sbuf_puts(b, "...");
    vw_sbuf_put(b, "\"", 1);
}

/* A value written bare when it is a JSON number as it stands. */
static bool is_number(const char *s, size_t len) {
    size_t i = 0;
    if (!len || len > 24)
        return false;
    if (s[i] == '-')
        i++;
    if (i == len || !(s[i] >= '0' && s[i] <= '9') ||
        (s[i] == '0' && i + 1 < len && s[i + 1] != '.'))
        return false;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i < len && s[i] == '.') {
        size_t d = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return false;
    }
    return i == len;
}

static const char *const reserved[] = {"ts", "level", "module", "msg", "where"};

/* A key written once: a key the line already has (a reserved one, or one the
 * format repeats) gets a suffix (_2, _3, ...). */
static void json_key(vw_sbuf *b, const char *fmt, const piece *pc, size_t k) {
    size_t len = pc[k].key1 - pc[k].key0, dup = 1;
    const char *key = fmt + pc[k].key0;
    for (size_t r = 0; r < sizeof reserved / sizeof *reserved; r++)
        dup += strlen(reserved[r]) == len && !memcmp(reserved[r], key, len);
    for (size_t j = 1; j < k; j++)
        dup += pc[j].key1 - pc[j].key0 == len && !memcmp(fmt + pc[j].key0, key, len);
    vw_sbuf_put(b, ",\"", 2);
    vw_sbuf_put(b, key, len);
    if (dup > 1) {
        char num[24];
        vw_sbuf_put(b, "_", 1);
        vw_sbuf_put(b, num, vw_fmt_i64(num, (int64_t)dup));
    }
    vw_sbuf_put(b, "\":", 2);
}

static void json_line(vw_sbuf *b, const char *ts, vw_log_level lvl, const char *module,
                      const char *where, const char *fmt, const char *out, size_t out_len,
                      va_list ap) {
    piece pc[MAX_FIELDS];
    size_t n = split_format(fmt, pc);
    vw_sbuf_puts(b, "{\"ts\":\"");
    vw_sbuf_puts(b, ts);
    vw_sbuf_puts(b, "\",\"level\":\"");
    vw_sbuf_puts(b, vw_log_level_name(lvl));
    vw_sbuf_puts(b, "\",\"module\":");
    json_str(b, module, strlen(module));
    for (size_t k = 0; k < n; k++) {
        size_t o0 = out_at(fmt, pc[k].v0, ap), o1 = out_at(fmt, pc[k].v1, ap);
        o1 = o1 > out_len ? out_len : o1;
        o0 = o0 > o1 ? o1 : o0;
        if (k == 0)
            vw_sbuf_puts(b, ",\"msg\":");
        else
            json_key(b, fmt, pc, k);
        if (k && !pc[k].quoted && is_number(out + o0, o1 - o0))
            vw_sbuf_put(b, out + o0, o1 - o0);
        else
            json_str(b, out + o0, o1 - o0);
    }
    vw_sbuf_puts(b, ",\"where\":");
    json_str(b, where, strlen(where));
    vw_sbuf_puts(b, "}\n");
}

void vw_log_emit(const vw_log *lg, vw_log_level lvl, const char *module, const char *file, int line,
                 const char *fmt, ...) {
    char small[1024], ts[40], where[160];
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(small, sizeof small, fmt, aq);
    va_end(aq);
    char *msg = small;
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) {
        va_copy(aq, ap);
        vsnprintf(msg, (size_t)n + 1, fmt, aq);
        va_end(aq);
    } else if (n >= (int)sizeof small) {
        msg = small; /* out of memory: the cut text (values past it read as empty) */
    }
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t tn = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + tn, sizeof ts - tn, ".%03ldZ", now.tv_nsec / 1000000);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    snprintf(where, sizeof where, "%s:%d", base, line);
    vw_sbuf b = {0};
    if (lg->format == VW_LOG_TEXT)
        vw_sbuf_printf(&b, "%s %s %s %s where=%s\n", ts, vw_log_level_name(lvl), module, msg,
                       where);
    else
        json_line(&b, ts, lvl, module, where, fmt, msg, strlen(msg), ap);
    va_end(ap);
    if (!vw_sbuf_status(&b) && b.p)
        fwrite(b.p, 1, b.len, lg->out ? lg->out : stderr);
    else /* out of memory: the event is cut to its level, module and place */
        fprintf(lg->out ? lg->out : stderr,
                "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"(log line out of memory)\","
                "\"where\":\"%s\"}\n",
                ts, vw_log_level_name(lvl), where);
    vw_sbuf_free(&b);
    if (msg != small)
        free(msg);
}
