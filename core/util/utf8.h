/* utf8.h — UTF-8 bytes: the check CPython's 'utf-8' codec makes (with
 * errors='surrogatepass', as json.loads(bytes) decodes), a strict check for
 * header values and keys, and code point walking for valid text.
 *
 * vw_utf8_step_at reports what the codec would: a valid sequence's length
 * (an encoded surrogate ED A0..BF xx is accepted and flagged), or the error
 * range and reason CPython names (unicodeobject.c decode_utf8: an invalid start
 * byte is 1 byte, an invalid continuation the bytes before the bad one, an
 * unexpected end runs to the end of the input).
 *
 * Ownership: nothing allocated except by vw_utf8_decode (caller frees).
 * Thread-safety: pure functions. Errors: none (the walking functions take
 * valid UTF-8; invalid bytes decode one by one as U+FFFD).
 */
#ifndef VW_UTF8_H
#define VW_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_utf8_step {
    size_t len;         /* > 0: a valid sequence (or an encoded surrogate) */
    int surrogate;      /* an ED A0..BF xx sequence accepted by surrogatepass */
    size_t err_end;     /* when len == 0: end of the error range */
    const char *reason; /* when len == 0: "invalid start byte", ... */
} vw_utf8_step;

/* Decodes the sequence at s[i] (i < n) as the codec does. */
vw_utf8_step vw_utf8_step_at(const unsigned char *s, size_t n, size_t i);

/* True when s[0..n) is strict UTF-8 (no surrogates) without NUL bytes. */
bool vw_utf8_clean(const void *s, size_t n);

/* Decodes one code point at s[*i] (advancing *i). */
uint32_t vw_utf8_next(const char *s, size_t n, size_t *i);
/* Number of code points of s[0, n). */
size_t vw_utf8_count(const char *s, size_t n);
/* Decodes s into a malloc'd code point array (*n_out code points); NULL on OOM.
 * When byte_at is non-NULL it receives a malloc'd [n_out + 1] array of byte
 * offsets of each code point (and n at the end). */
uint32_t *vw_utf8_decode(const char *s, size_t n, size_t *n_out, size_t **byte_at);
/* Appends the UTF-8 encoding of cp to out (>= 4 bytes); returns its length. */
size_t vw_utf8_put(uint32_t cp, char *out);

#ifdef __cplusplus
}
#endif
#endif
