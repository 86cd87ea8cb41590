/* pystr.h — Python str semantics on UTF-8 text: code points, isspace, strip,
 * isalnum, simple lower-casing (vela-request-spec §1.2, §6.4).
 *
 * All text is valid UTF-8 (callers validated it) and may contain U+0000, so
 * every function takes a byte length. Offsets called "cp" are Python str
 * indices (code points). Tables: isspace is the fixed CPython set; isalnum and
 * lower come from utf8proc (its Unicode version may trail CPython's; the
 * golden texts avoid code points new in the latest versions).
 *
 * Ownership: nothing allocated except by vw_utf8_decode (caller frees).
 * Thread-safety: pure functions. Errors: none (invalid UTF-8 is a programmer
 * error; it decodes byte by byte as U+FFFD).
 */
#ifndef VW_PYSTR_H
#define VW_PYSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Python str.isspace for one code point. */
bool vw_py_isspace(uint32_t cp);
/* Python str.isalnum for one code point (letters L*, or numeric N*). */
bool vw_py_isalnum(uint32_t cp);
/* Python's simple lower-case mapping (sre's lower): utf8proc_tolower. */
uint32_t vw_py_lower(uint32_t cp);

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

/* True when s is empty or all Python whitespace (not s.strip()). */
bool vw_py_blank(const char *s, size_t n);
/* Byte bounds [*b0, *b1) of s.strip(). */
void vw_py_strip(const char *s, size_t n, size_t *b0, size_t *b1);

#ifdef __cplusplus
}
#endif
#endif
