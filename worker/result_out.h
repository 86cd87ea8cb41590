/* result_out.h — a result on its way out: the value of a result record
 * (request_id and source first, docs/envelope.md), a rejection's value in the
 * same shape, and the source string ("topic:partition:offset") a result and a
 * dead letter carry in their headers. Never reads a record's value and never
 * calls Kafka: the sink (sink.c) produces what this file writes, and the
 * record checks (record_in.c) write their rejections with it.
 *
 * Ownership: returned strings are the caller's (free). Thread-safety: pure
 * functions. Errors: VW_EINVAL for a result value that is not a JSON object,
 * VW_ENOMEM.
 */
#ifndef VW_RESULT_OUT_H
#define VW_RESULT_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "admission/pyjson.h" /* vw_body_reject */
#include "contract.h"
#include "processor.h"
#include "util/sbuf.h"
#include "vw_status.h"

/* "topic:partition:offset" into buf (VW_SOURCE_MAX bytes hold any). */
void vw_result_out_source(char *buf, size_t cap, const char *topic, int32_t partition,
                          int64_t offset);

/* The result record value: r->value (a JSON object) with "request_id" and
 * "source":{"topic","partition","offset","timestamp"} put first. VW_EINVAL
 * when r->value is not an object text. */
vw_status vw_result_out_value(const vw_result *r, const vw_record *rec, char **out, size_t *out_len,
                              vw_err *err);

/* Appends the value of a front-door rejection to sb:
 * {"status":N,"detail":[{"loc":["body"(,offset)],"msg":..,"type":..}]}, the
 * shape errlist.h writes, with rec's request_id and source first when rec is
 * given (the worker's result value; NULL: the bare rejection). */
void vw_result_out_rejection(vw_sbuf *sb, const vw_record *rec, const vw_body_reject *rej);

#endif
