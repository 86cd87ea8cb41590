/* admit_record.h — what the worker checks and adds around any processor.
 *
 * Checks, in this order, before a processor sees a record
 * (worker-contract.md "Decisions" 4-5; docs/worker.md has the full table):
 *   413 too_long               ["body"]              the value is larger than
 *                                                    limits.max_request_bytes
 *   400 json_invalid           ["body", <byte off>]  "JSON decode error: <Python's
 *                                                    message>": UTF-8 BOM, invalid
 *                                                    UTF-8, any json.loads syntax
 *                                                    error, an integer over 4,300
 *                                                    digits, nesting deeper than 1,000
 *   400 json_invalid           ["body"]              the request contains an
 *                                                    unpaired surrogate
 *   400 model_attributes_type  ["body"]              not a JSON object
 * Messages are CPython 3.11's: json.decoder / Modules/_json.c texts for syntax
 * errors, the UnicodeDecodeError text of the 'utf-8' codec (with the
 * surrogatepass handler json.loads uses on bytes) for bad bytes, the ValueError
 * of int() for long integers, the RecursionError text for deep nesting. Offsets
 * are bytes into the record value (Python reports code points for syntax errors).
 *
 * It also derives the request id, writes the result value (request_id and source
 * first), checks a reply-topic against the allow-list, and builds rejection
 * results. Ownership: returned strings and results are the caller's (free /
 * vw_result_clear). Thread-safety: pure functions. Errors: VW_ENOMEM only.
 */
#ifndef VW_ADMIT_RECORD_H
#define VW_ADMIT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "processor.h"
#include "vw_status.h"

/* Header names of the record contract. */
#define VW_HDR_REQUEST_ID "request-id"
#define VW_HDR_REPLY_TOPIC "reply-topic"
#define VW_HDR_STATUS "vela-status"
#define VW_HDR_MODEL "vela-model"
#define VW_HDR_SOURCE "source"
#define VW_HDR_ERROR "vela-error"           /* DLQ: why the record has no result */
#define VW_HDR_ERROR_TYPE "vela-error-type" /* DLQ: the stable error type */

typedef enum vw_pyjson_kind {
    VW_PYJSON_OK = 0,
    VW_PYJSON_SYNTAX,    /* json.loads would raise; offset + msg */
    VW_PYJSON_SURROGATE, /* parses, but a string holds an unpaired surrogate */
} vw_pyjson_kind;

typedef struct vw_pyjson_check {
    vw_pyjson_kind kind;
    bool is_object; /* VW_PYJSON_OK: the top-level value is an object */
    size_t offset;  /* VW_PYJSON_SYNTAX: byte offset */
    char msg[256];  /* VW_PYJSON_SYNTAX: Python's message, without the prefix */
} vw_pyjson_check;

/* Checks len bytes as Python's json.loads(bytes) would (UTF-8 only). */
void vw_pyjson_validate(const char *buf, size_t len, vw_pyjson_check *out);

/* The worker-level checks above. On VW_OK, *rejected says whether the record was
 * rejected; if so, *out is a finished RECORD result (400/413) whose value is
 * {"status":..,"detail":[..]}. */
vw_status vw_admit_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                         vw_result *out, vw_err *err);

/* The request id: the request-id header (hdr, may be NULL), else the key, else
 * "topic:partition:offset". A header or key that is not valid UTF-8 without
 * NUL bytes is skipped. Returns a malloc'd string, NULL on VW_ENOMEM. */
char *vw_request_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                    size_t hdr_len, const void *key, size_t key_len);

/* "topic:partition:offset" into buf. */
void vw_source_string(char *buf, size_t cap, const char *topic, int32_t partition, int64_t offset);

/* The result record value: r->value (a JSON object) with "request_id" and
 * "source":{"topic","partition","offset","timestamp"} put first. VW_EINVAL
 * when r->value is not an object text. */
vw_status vw_result_value(const vw_result *r, const vw_record *rec, char **out, size_t *out_len,
                          vw_err *err);

/* The reply-topic header value when it names a topic of topics.reply_allow,
 * else NULL (the configured results topic is used). */
const char *vw_reply_topic(const vw_config *cfg, const void *hdr, size_t hdr_len);

#endif
