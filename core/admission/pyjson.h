/* pyjson.h — the one JSON front door: Python json.loads(bytes) acceptance with
 * CPython 3.11's messages and byte offsets, and the 413/400 rejection rows
 * every entry point answers with (the worker, `score`, `plan`;
 * docs/rejections.md R1-R9, docs/contract.md Decision 4).
 *
 * The checker decides, in one pass over the bytes, what json.loads would do:
 * the 'utf-8' codec with errors='surrogatepass' (so UTF-8-encoded surrogates
 * decode, then count as unpaired surrogates), a refused BOM, the syntax of
 * Modules/_json.c with NaN/Infinity/-Infinity, int()'s 4,300-digit limit, and a
 * nesting depth fixed at 1,000 (CPython's RecursionError text, with the offset
 * of the 1,001st bracket). It builds no tree. A caller that wants one
 * (core/admission/json_in.c) passes a sink and hears of every number token of a valid
 * document in input order, then hands the text to jansson.
 *
 * Messages: json.decoder / Modules/_json.c texts for syntax errors, the
 * UnicodeDecodeError text of the codec for bad bytes, the ValueError of int()
 * for long integers, the RecursionError text for deep nesting; without the
 * "JSON decode error: " prefix, which vw_body_reject_of adds. Offsets are bytes
 * into the input (CPython reports code points for syntax errors).
 *
 * Ownership: nothing is allocated; outputs are caller-owned structs.
 * Thread-safety: pure functions (reentrant).
 * Errors: vw_pyjson_scan returns the sink's non-OK status (the scan stops);
 * the other functions cannot fail.
 */
#ifndef VW_PYJSON_H
#define VW_PYJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VW_PYJSON_MAX_DEPTH 1000
#define VW_PYJSON_MAX_INT_DIGITS 4300

typedef enum vw_pyjson_kind {
    VW_PYJSON_OK = 0,
    VW_PYJSON_SYNTAX,    /* json.loads would raise; offset + msg */
    VW_PYJSON_SURROGATE, /* parses, but a string holds an unpaired surrogate */
} vw_pyjson_kind;

typedef struct vw_pyjson_check {
    vw_pyjson_kind kind;
    bool is_object; /* VW_PYJSON_OK: the top-level value is an object */
    size_t offset;  /* SYNTAX: byte offset of the error; SURROGATE: of the first
                       unpaired surrogate (its escape or its encoded bytes) */
    char msg[256];  /* SYNTAX: Python's message, without the prefix; SURROGATE:
                       "the request contains an unpaired surrogate" */
} vw_pyjson_check;

/* Token callbacks for a caller that builds on the scan. */
typedef struct vw_pyjson_sink {
    void *ctx;
    /* A number lexeme, or a NaN / Infinity / -Infinity literal, at
     * [at, at + len) of the input; is_int: a Python int (no '.', 'e', 'E'). */
    vw_status (*number)(void *ctx, size_t at, size_t len, bool is_int);
} vw_pyjson_sink;

/* Checks len bytes (not NUL-terminated; buf may be NULL when len is 0) as
 * json.loads(bytes) would. sink may be NULL; its calls may also come before a
 * syntax error is found (the caller then discards what it built). Returns
 * VW_OK, or the first non-OK status of a sink call (out then undefined). */
vw_status vw_pyjson_scan(const char *buf, size_t len, const vw_pyjson_sink *sink,
                         vw_pyjson_check *out);

/* vw_pyjson_scan without a sink. */
void vw_pyjson_validate(const char *buf, size_t len, vw_pyjson_check *out);

/* A whole-request rejection of the front door: loc ["body"] (offset < 0) or
 * ["body", offset], msg, and type (an errlist.h VW_ET_* string). */
typedef struct vw_body_reject {
    int status; /* 413 or 400 */
    int64_t offset;
    const char *type;
    char msg[320];
} vw_body_reject;

/* R1: true (and *out filled) when len exceeds max_bytes (0: no limit). The
 * message is pydantic's bytes_too_long wording: "Data should have at most N
 * bytes". */
bool vw_body_too_long(size_t len, size_t max_bytes, vw_body_reject *out);

/* R2-R9: true (and *out filled) when the checked body is refused: a syntax
 * error ("JSON decode error: " + msg at its offset), an unpaired surrogate, or a
 * top-level value that is not an object (model_attributes_type). */
bool vw_body_reject_of(const vw_pyjson_check *c, vw_body_reject *out);

#ifdef __cplusplus
}
#endif
#endif
