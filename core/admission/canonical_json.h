/* canonical_json.h — Python json.dumps(ensure_ascii=False, sort_keys=True,
 * separators=(",", ":"), allow_nan=False), byte for byte (docs/spec/request.md §1.3),
 * written into a vw_sbuf (util/sbuf.h, which also holds the string escaping).
 *
 * Rules: object keys sorted by code point (UTF-8 byte order); non-ASCII written
 * raw; escapes \" \\ \n \r \t \b \f and \u00xx (lower-case hex) for the other
 * C0 controls; integers exactly as written (any size; "-0" -> "0"); floats with
 * Python repr (shortest round trip; plain notation for decimal exponents
 * -4 <= x < 16, else d[.ddd]e+XX); NaN/Infinity refused.
 *
 * Thread-safety: no shared state.
 * Errors: as util/sbuf.h (an allocation failure marks the buffer); vw_canon_write
 * returns VW_EINVAL for a non-finite float.
 */
#ifndef VW_CANONICAL_JSON_H
#define VW_CANONICAL_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "json_in.h"
#include "util/sbuf.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends the canonical JSON of r. VW_EINVAL ("non_finite") for NaN/Infinity. */
vw_status vw_canon_write(vw_sbuf *sb, vw_jref r, vw_err *err);

/* Python repr(float(x)) for a finite x; returns the length written to out. */
size_t vw_float_repr(double x, char out[32]);

/* Appends Python repr(str) of s (n bytes of valid UTF-8), e.g. 'it\'s' -> "it's". */
void vw_py_repr_str(vw_sbuf *sb, const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
