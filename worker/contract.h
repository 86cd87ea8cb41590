/* contract.h — the names and sizes of the record contract (docs/contract.md
 * "Request record (input topic)", "Result record (results topic)"): the
 * headers a request may bring and a result or dead letter carries, and the
 * bounds on what a result echoes. Both sides use it: record_in.h (a consumed
 * record) and result_out.h (what is produced).
 * Header only: no state, no functions.
 */
#ifndef VW_CONTRACT_H
#define VW_CONTRACT_H

/* Header names. In: request-id, reply-topic. Out (a result): request-id,
 * vela-model, source, vela-status; a dead letter also vela-error,
 * vela-error-type and, when its payload was cut, vela-payload-truncated. */
#define VW_HDR_REQUEST_ID "request-id"
#define VW_HDR_REPLY_TOPIC "reply-topic"
#define VW_HDR_STATUS "vela-status"
#define VW_HDR_MODEL "vela-model"
#define VW_HDR_SOURCE "source"
#define VW_HDR_ERROR "vela-error"                 /* DLQ: why the record has no result */
#define VW_HDR_ERROR_TYPE "vela-error-type"       /* DLQ: the stable error type */
#define VW_HDR_TRUNCATED "vela-payload-truncated" /* DLQ: the value's size; payload cut */

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

#endif
