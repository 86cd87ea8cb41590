/* sbuf.h — bytes out: a growable byte buffer, JSON string literals,
 * terminal-safe text and decimal integers, the helpers every writer of a
 * record, a plan, an envelope, a report or a log line needs. Nothing here
 * parses or knows a format beyond that.
 *
 * String literals follow Python's json.dumps(ensure_ascii=False): non-ASCII
 * bytes are written raw, escapes are \" \\ \n \r \t \b \f and \u00xx
 * (lower-case hex) for the other C0 controls (docs/spec/request.md §1.3).
 *
 * Ownership: a vw_sbuf owns its bytes (vw_sbuf_free); writers append to it.
 * Thread-safety: no shared state.
 * Errors: the append functions never fail visibly: an allocation failure sets
 * sb->oom and later appends are dropped; check it (or vw_sbuf_status) once at
 * the end.
 */
#ifndef VW_SBUF_H
#define VW_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_sbuf {
    char *p; /* NUL-terminated after any append (p may contain NUL bytes) */
    size_t len;
    size_t cap;
    bool oom;
} vw_sbuf;

void vw_sbuf_put(vw_sbuf *sb, const char *s, size_t n);
void vw_sbuf_puts(vw_sbuf *sb, const char *s);
void vw_sbuf_printf(vw_sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vw_sbuf_reset(vw_sbuf *sb); /* len = 0, keeps the allocation */
void vw_sbuf_free(vw_sbuf *sb);
/* An empty buffer with room for cap bytes up front (a writer that knows its
 * size skips the doubling); on allocation failure an empty one that grows. */
vw_sbuf vw_sbuf_with(size_t cap);
/* Cuts the bytes to the first len (len <= sb->len), NUL-terminated. */
void vw_sbuf_truncate(vw_sbuf *sb, size_t len);
/* Marks the buffer failed, as a failed append does: a writer whose own
 * allocation failed makes the whole text fail at the end (vw_sbuf_status). */
void vw_sbuf_fail(vw_sbuf *sb);
/* VW_ENOMEM when an append failed, else VW_OK. */
vw_status vw_sbuf_status(const vw_sbuf *sb);
/* Hands the bytes to the caller (free()); the buffer is left empty. */
char *vw_sbuf_take(vw_sbuf *sb, size_t *len);

/* Appends s (n bytes of valid UTF-8) as a JSON string literal, quotes included. */
void vw_canon_string(vw_sbuf *sb, const char *s, size_t n);

/* Appends s[0, n) (any bytes) as text safe to show on a terminal: every byte
 * a terminal could act on is written as an escape, so a string taken from a
 * record cannot move the cursor, recolour, retitle or rewrite what is shown.
 * Escaped: C0 controls and DEL as \xhh (\x1b, \x0d, \x0a, ...), C1
 * controls U+0080..U+009F as \u00hh, a byte that does not start or continue a
 * valid UTF-8 sequence (an encoded surrogate included) as \xhh, and a
 * backslash as \\ (so an escape read back is unambiguous). Everything else
 * is copied; the output is valid UTF-8 without controls. */
void vw_sbuf_put_visible(vw_sbuf *sb, const char *s, size_t n);

/* The decimal text of v into buf (at least 21 bytes), NUL-terminated; returns
 * its length. The per-record paths use it instead of snprintf, which cost
 * 1,100-2,700 instructions a call there (callgrind, docs/worker-tests.md "Benchmark"). */
size_t vw_fmt_i64(char *buf, int64_t v);

/* s into buf (cap >= 1 bytes), cut to cap - 1 bytes, NUL-terminated; returns
 * its length. For the fixed-size type names of errors and results. */
size_t vw_fmt_str(char *buf, size_t cap, const char *s);

#ifdef __cplusplus
}
#endif
#endif
