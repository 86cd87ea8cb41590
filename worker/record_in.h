/* record_in.h — a consumed record on its way in: what the worker checks and
 * derives before any processor sees it.
 *
 * The checks answer the front-door rows of core/admission/pyjson.h
 * (docs/rejections.md R1-R9, one table for every entry point):
 *   413 too_long               ["body"]              the value is larger than
 *                                                    limits.max_request_bytes
 *   400 json_invalid           ["body", <byte off>]  "JSON decode error: <CPython's
 *                                                    message>"
 *   400 json_invalid           ["body"]              the request contains an
 *                                                    unpaired surrogate
 *   400 model_attributes_type  ["body"]              not a JSON object
 * The checker is core's (vw_pyjson_validate); nothing is re-implemented here.
 * A rejection's value is written by result_out.h.
 *
 * It also derives the request id, the echo of a key and the reply topic
 * (against the allow-list). Ownership: returned strings and results are the
 * caller's (free / vw_result_clear). Thread-safety: pure functions. Errors:
 * VW_ENOMEM only.
 */
#ifndef VW_RECORD_IN_H
#define VW_RECORD_IN_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/json_in.h" /* vw_json_parse: the checker these rows come from */
#include "contract.h"
#include "processor.h"
#include "service/config.h"
#include "util/sbuf.h"
#include "vw_status.h"

/* What a consumed record brings to its item (item.h vw_item_new); everything
 * borrowed. */
typedef struct vw_record_in {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp; /* ms, -1 if none */
    const void *key;   /* NULL: none */
    size_t key_len;
    const rd_kafka_headers_t *headers; /* NULL: none */
    const void *value;                 /* NULL: none (a tombstone) */
    size_t value_len;
} vw_record_in;

/* The checks above. On VW_OK, *rejected says whether the record was rejected;
 * if so, *out is a finished RECORD result (400/413) whose value is
 * {"status":..,"detail":[..]}. */
vw_status vw_record_in_check(const vw_record *rec, int64_t max_request_bytes, bool *rejected,
                             vw_result *out, vw_err *err);

/* The same checks for the worker's per-record path, which also parses: when
 * rec is rejected, writes the final result value (request_id and source
 * first: vw_result_out_rejection) into sb, reset first so its allocation is
 * reused, sets *status and *type (a static string) and returns true
 * (sb->oom on allocation failure); false when the record passes (sb
 * untouched), leaving in *doc the parsed value the processor's admit takes
 * (vw_record.doc; the caller frees it with vw_json_free), or NULL when the
 * parse ran out of memory. rec->request_id and rec->topic must be set. */
bool vw_record_in_reject(const vw_record *rec, int64_t max_request_bytes, vw_sbuf *sb, int *status,
                         const char **type, vw_json_doc **doc);

/* The echo of bytes p[0..len): p itself when len <= VW_ECHO_MAX (*out_len =
 * len), else its digest written into buf ("sha256:<hex>", NUL-terminated,
 * *out_len = VW_ECHO_DIGEST_LEN). NULL when the digest could not be made
 * (libcrypto out of memory). */
const char *vw_record_in_echo(const void *p, size_t len, char buf[VW_SOURCE_MAX], size_t *out_len);

/* The request id without copying: points into hdr, key or buf (which receives
 * "topic:partition:offset", or the digest of a header or key longer than
 * VW_ECHO_MAX); *len is its length (not NUL-terminated unless it is buf).
 * Same rule as vw_record_in_id. */
const char *vw_record_in_id_pick(const char *topic, int32_t partition, int64_t offset,
                                 const void *hdr, size_t hdr_len, const void *key, size_t key_len,
                                 char buf[VW_SOURCE_MAX], size_t *len);

/* The request id: the request-id header (hdr, may be NULL), else the key, else
 * "topic:partition:offset". A header or key that is not valid UTF-8 without
 * NUL bytes is skipped; one longer than VW_ECHO_MAX bytes is taken as its
 * digest (vw_record_in_echo). Returns a malloc'd string, NULL on VW_ENOMEM. */
char *vw_record_in_id(const char *topic, int32_t partition, int64_t offset, const void *hdr,
                      size_t hdr_len, const void *key, size_t key_len);

/* The reply-topic header value when it names a topic of topics.reply_allow,
 * else NULL (the configured results topic is used). */
const char *vw_record_in_reply_topic(const vw_config *cfg, const void *hdr, size_t hdr_len);

#endif
