/* pystr.h — Python str semantics on UTF-8 text: code points, isspace, strip,
 * isalnum, simple lower-casing (docs/spec/request.md §1.2, §6.4).
 *
 * All text is valid UTF-8 (callers validated it) and may contain U+0000, so
 * every function takes a byte length. Offsets called "cp" are Python str
 * indices (code points). Tables: isspace is the fixed CPython set; isalnum and
 * lower come from utf8proc (its Unicode version may trail CPython's; the
 * golden texts avoid code points new in the latest versions).
 *
 * The UTF-8 walking itself is utf8.h's.
 * Ownership: nothing allocated.
 * Thread-safety: pure functions. Errors: none (invalid UTF-8 is a programmer
 * error; it decodes byte by byte as U+FFFD).
 */
#ifndef VW_PYSTR_H
#define VW_PYSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Python str.isspace for one code point. */
bool vw_py_isspace(uint32_t cp);
/* Python str.isalnum for one code point (letters L*, or numeric N*). */
bool vw_py_isalnum(uint32_t cp);
/* Python's simple lower-case mapping (sre's lower): utf8proc_tolower. */
uint32_t vw_py_lower(uint32_t cp);

/* True when s is empty or all Python whitespace (not s.strip()). */
bool vw_py_blank(const char *s, size_t n);
/* Byte bounds [*b0, *b1) of s.strip(). */
void vw_py_strip(const char *s, size_t n, size_t *b0, size_t *b1);

#ifdef __cplusplus
}
#endif
#endif
