/* json_in.h — JSON input with Python json.loads fidelity, on top of jansson.
 *
 * Purpose: parse a request body (or a calibration/config file, or the JSON text
 * inside a string state) the way Python's json.loads does (docs/contract.md
 * Decision 4), keeping what canonical JSON needs: object key order, the
 * integer/float distinction of every number and integers of any size.
 *
 * How: core/admission/pyjson.h's checker decides acceptance in one pass (UTF-8 with
 * surrogatepass, BOM refused, depth > 1000, Python's number grammar and its
 * 4,300-digit integer limit, NaN / Infinity / -Infinity, unpaired surrogates)
 * with CPython's messages and byte offsets; while it runs, its sink builds a
 * copy of the text in which every number (and NaN/Infinity literal) is
 * replaced by its index in the document's number table. Only a valid document
 * reaches jansson, which builds the tree (strings, escapes, objects with
 * Python's duplicate-key rule: first position, last value). Every JSON_INTEGER
 * of a document is therefore a table index: read numbers only through
 * vw_json_num(). See docs/processor.md for why.
 *
 * Ownership: vw_json_parse returns a document the caller frees with
 * vw_json_free; json_t pointers and vw_jnum records are borrowed from it.
 * Thread-safety: a parsed document is immutable; readers may share it.
 * Errors: VW_EINVAL with *jerr filled (pyjson.h: kind, byte offset, CPython
 * message); VW_ENOMEM on allocation failure. Deviation from Python: an object
 * key containing U+0000 is refused (jansson cannot hold it).
 */
#ifndef VW_JSON_IN_H
#define VW_JSON_IN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyjson.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VW_JSON_MAX_DEPTH VW_PYJSON_MAX_DEPTH
#define VW_JSON_MAX_INT_DIGITS VW_PYJSON_MAX_INT_DIGITS

/* One number of a document, as written in the input. */
typedef struct vw_jnum {
    const char *lex; /* [len] the lexeme (borrowed from the document) */
    size_t len;
    bool is_int;  /* Python int: no '.', 'e' or 'E' and not a NaN/Infinity literal */
    double value; /* Python float(lexeme): +-inf on overflow, NaN for NaN */
} vw_jnum;

/* A parse failure is the front door's check (pyjson.h): kind SYNTAX (not
 * JSON: offset + CPython's message) or SURROGATE (valid JSON with an unpaired
 * surrogate). An object key holding U+0000 is the one SYNTAX that jansson
 * reports (its message, without the quote of the input). */
typedef vw_pyjson_check vw_json_error;
#define VW_JSON_SYNTAX VW_PYJSON_SYNTAX
#define VW_JSON_SURROGATE VW_PYJSON_SURROGATE

typedef struct vw_json_doc vw_json_doc;

/* Parses len bytes (not NUL-terminated). On VW_EINVAL *jerr says why. */
vw_status vw_json_parse(const char *buf, size_t len, vw_json_doc **out, vw_json_error *jerr);
void vw_json_free(vw_json_doc *doc);

/* The top-level value (never NULL for a parsed document). */
const json_t *vw_json_root(const vw_json_doc *doc);

/* The number record of v, or NULL when v is not a number of doc. */
const vw_jnum *vw_json_num(const vw_json_doc *doc, const json_t *v);

/* A value and the document that owns it (numbers are read through the doc). */
typedef struct vw_jref {
    const vw_json_doc *doc;
    const json_t *v;
} vw_jref;

/* Python json_payload: text, object or array whose every float is finite
 * (and, when nonempty_text, text must not be ""). NULL / scalars -> false. */
bool vw_json_payload(vw_jref r);

/* True when every number below r is finite (r may be any value). */
bool vw_json_finite(vw_jref r);

#ifdef __cplusplus
}
#endif
#endif
