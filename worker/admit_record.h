/* admit_record.h — what the worker checks and adds around any processor.
 *
 * Before a processor sees a record the worker answers the front-door rows of
 * core/admission/pyjson.h (docs/rejections.md R1-R9, one table for every entry point):
 *   413 too_long               ["body"]              the value is larger than
 *                                                    limits.max_request_bytes
 *   400 json_invalid           ["body", <byte off>]  "JSON decode error: <CPython's
 *                                                    message>"
 *   400 json_invalid           ["body"]              the request contains an
 *                                                    unpaired surrogate
 *   400 model_attributes_type  ["body"]              not a JSON object
 * The checker is core's (vw_pyjson_validate); nothing is re-implemented here.
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

#include "util/sbuf.h"
#include "service/config.h"
#include "processor.h"
#include "admission/json_in.h" /* vw_json_parse: the checker these rows come from */
#include "vw_status.h"

/* Header names of the record contract. */
#define VW_HDR_REQUEST_ID "request-id"
#define VW_HDR_REPLY_TOPIC "reply-topic"
#define VW_HDR_STATUS "vela-status"
#define VW_HDR_MODEL "vela-model"
#define VW_HDR_SOURCE "source"
#define VW_HDR_ERROR "vela-error"                 /* DLQ: why the record has no result */
#define VW_HDR_ERROR_TYPE "vela-error-type"       /* DLQ: the stable error type */
#define VW_HDR_TRUNCATED "vela-payload-truncated" /* DLQ: the value's size; payload cut */

/* The worker-level checks above. On VW_OK, *rejected says whether the record was
 * rejected; if so, *out is a finished RECORD result (400/413) whose value is
 * {"status":..,"detail":[..]}. */
vw_status vw_admit_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                         vw_result *out, vw_err *err);

/* Copies a type name into dst (cap bytes), truncated, NUL-terminated. */
void vw_copy_type(char *dst, size_t cap, const char *type);

/* The same checks for the worker's per-record path, which also parses: when
 * rec is rejected, writes the final result value (what vw_result_value makes
 * of vw_admit_check's value: request_id and source first) into sb, reset first
 * so its allocation is reused, sets *status and type, and returns true
 * (sb->oom on allocation failure); false when the record passes (sb
 * untouched), leaving in *doc the parsed value the processor's admit takes
 * (vw_record.doc; the caller frees it with vw_json_free), or NULL when the
 * parse ran out of memory. rec->request_id and rec->topic must be set. */
#define VW_REJECT_TYPE_MAX 48
bool vw_admit_reject_into(const vw_record *rec, int64_t max_request_bytes, vw_sbuf *sb, int *status,
                          char type[VW_REJECT_TYPE_MAX], vw_json_doc **doc);

/* Room for "topic:partition:offset" with a topic name of Kafka's maximum length
 * (249 bytes) and two 20-digit numbers. */
#define VW_SOURCE_MAX 320

/* The most bytes of a request id, and of a record key, the worker echoes as
 * they are (docs/contract.md "Request ids and keys echoed"): one longer is
 * echoed as its digest, "sha256:" and the 64 lowercase hex digits of its
 * bytes (VW_ECHO_DIGEST_LEN bytes), so a result's echoes stay a few KiB
 * whatever the record brought. */
#define VW_ECHO_MAX 1024
#define VW_ECHO_DIGEST_LEN 71

/* The echo of bytes p[0..len): p itself when len <= VW_ECHO_MAX (*out_len =
 * len), else its digest written into buf ("sha256:<hex>", NUL-terminated,
 * *out_len = VW_ECHO_DIGEST_LEN). NULL when the digest could not be made
 * (libcrypto out of memory). */
const char *vw_echo_bounded(const void *p, size_t len, char buf[VW_SOURCE_MAX], size_t *out_len);

/* The request id without copying: points into hdr, key or buf (which receives
 * "topic:partition:offset", or the digest of a header or key longer than
 * VW_ECHO_MAX); *len is its length (not NUL-terminated unless it is buf).
 * Same rule as vw_request_id. */
const char *vw_request_id_pick(const char *topic, int32_t partition, int64_t offset,
                               const void *hdr, size_t hdr_len, const void *key, size_t key_len,
                               char buf[VW_SOURCE_MAX], size_t *len);

/* The request id: the request-id header (hdr, may be NULL), else the key, else
 * "topic:partition:offset". A header or key that is not valid UTF-8 without
 * NUL bytes is skipped; one longer than VW_ECHO_MAX bytes is taken as its
 * digest (vw_echo_bounded). Returns a malloc'd string, NULL on VW_ENOMEM. */
char *vw_request_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                    size_t hdr_len, const void *key, size_t key_len);

/* "topic:partition:offset" into buf. */
void vw_record_source(char *buf, size_t cap, const char *topic, int32_t partition, int64_t offset);

/* The result record value: r->value (a JSON object) with "request_id" and
 * "source":{"topic","partition","offset","timestamp"} put first. VW_EINVAL
 * when r->value is not an object text. */
vw_status vw_result_value(const vw_result *r, const vw_record *rec, char **out, size_t *out_len,
                          vw_err *err);

/* The reply-topic header value when it names a topic of topics.reply_allow,
 * else NULL (the configured results topic is used). */
const char *vw_reply_topic(const vw_config *cfg, const void *hdr, size_t hdr_len);

#endif
