/* canonical_json.h — Python json.dumps(ensure_ascii=False, sort_keys=True,
 * separators=(",", ":"), allow_nan=False), byte for byte (vela-request-spec §1.3),
 * plus the small text builder the processor writes into.
 *
 * Rules: object keys sorted by code point (UTF-8 byte order); non-ASCII written
 * raw; escapes \" \\ \n \r \t \b \f and \u00xx (lower-case hex) for the other
 * C0 controls; integers exactly as written (any size; "-0" -> "0"); floats with
 * Python repr (shortest round trip; plain notation for decimal exponents
 * -4 <= x < 16, else d[.ddd]e+XX); NaN/Infinity refused.
 *
 * Ownership: a vw_sbuf owns its bytes (vw_sbuf_free); writers append to it.
 * Thread-safety: no shared state.
 * Errors: the append functions never fail visibly: an allocation failure sets
 * sb->oom and later appends are dropped; check it (or vw_sbuf_status) once at
 * the end. vw_canon_write returns VW_EINVAL for a non-finite float.
 */
#ifndef VW_CANONICAL_JSON_H
#define VW_CANONICAL_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "json_in.h"
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
/* VW_ENOMEM when an append failed, else VW_OK. */
vw_status vw_sbuf_status(const vw_sbuf *sb);
/* Hands the bytes to the caller (free()); the buffer is left empty. */
char *vw_sbuf_take(vw_sbuf *sb, size_t *len);

/* Appends the canonical JSON of r. VW_EINVAL ("non_finite") for NaN/Infinity. */
vw_status vw_canon_write(vw_sbuf *sb, vw_jref r, vw_err *err);

/* Appends s (n bytes of valid UTF-8) as a JSON string literal, quotes included. */
void vw_canon_string(vw_sbuf *sb, const char *s, size_t n);

/* Python repr(float(x)) for a finite x; returns the length written to out. */
size_t vw_float_repr(double x, char out[32]);

/* Appends Python repr(str) of s (n bytes of valid UTF-8), e.g. 'it\'s' -> "it's". */
void vw_py_repr_str(vw_sbuf *sb, const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
