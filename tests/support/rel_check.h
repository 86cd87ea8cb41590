/* rel_check.h — the reliability suite's bookkeeping (tests/test_reliability_*.c):
 * numbered requests in, results out, and the four invariants every scenario
 * asserts: every request id has >= 1 result, duplicates within a bound,
 * per-partition result order, committed offsets at the log end.
 *
 * Request i has key and request id "<prefix><i, 5 digits>" and goes to input
 * partition i % n_parts. Results are read with kcat (vw_kh_consume).
 * Ownership: vw_rel_collect returns a report by value; nothing to free.
 * Thread-safety: none needed (one test process each). Errors: -1 and a message
 * on stderr.
 */
#ifndef VW_REL_CHECK_H
#define VW_REL_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kafka_harness.h"

/* The echo request every volume scenario sends. */
#define VW_REL_ECHO_VALUE "{\"state\":\"s\",\"questions\":{\"q\":{}}}"

typedef struct vw_rel_report {
    size_t requests;     /* ids expected: prefix00000 .. prefix(n-1) */
    size_t results;      /* records in the topic carrying one of those ids */
    size_t distinct;     /* ids with >= 1 result */
    size_t missing;      /* ids with none */
    size_t duplicates;   /* results - distinct */
    size_t order_errors; /* first results of an input partition out of offset order */
    size_t not_200;      /* results whose vela-status is not 200 */
    int64_t waited_ms;   /* until every id had a result (or the timeout) */
} vw_rel_report;

/* Produces requests first..first+n-1 with value `value` to topic "requests"
 * over n_parts partitions. */
int vw_rel_produce(const char *bootstrap, size_t first, size_t n, int n_parts, const char *prefix,
                   const char *value);

/* n invalid requests (n <= 100) to topic "requests" over n_parts
 * partitions: key "badNN", header request-id "id-badNN", the value "{not
 * json" for even NN (400 json_invalid) and "[1, 2]" for odd (400
 * model_attributes_type). partitions and offsets (n each, may be NULL)
 * receive where each went. 0 or -1. */
int vw_rel_produce_bad(const char *bootstrap, size_t n, int n_parts, int32_t *partitions,
                       int64_t *offsets);

/* Of `results` (vw_kh_consume's records), the rejections of
 * vw_rel_produce_bad's records: returns how many there are and sets *wrong
 * to those whose status, request-id or first detail type is not what their
 * record asked for (each printed on stderr). */
size_t vw_rel_count_bad(const json_t *results, size_t *wrong);

/* Reads `topic` until every one of the n ids has a result or timeout_ms
 * passed, then counts. Order: within a (results partition, input partition)
 * pair, the offsets seen for the first time must increase (a replay after a
 * crash repeats a tail, it never reorders new work). */
vw_rel_report vw_rel_collect(const char *bootstrap, const char *topic, const char *prefix, size_t n,
                             int timeout_ms);

/* Prints the report as one line "name: requests=.. results=.. ..." on stderr
 * and appends it to $VW_REL_FIGURES when that is set (docs/reliability.md). */
void vw_rel_print(const char *name, const vw_rel_report *r, int64_t recover_ms);

/* Waits until the group's committed offsets of `topic` equal its end offsets. */
int vw_rel_committed_at_end(const char *bootstrap, const char *group, const char *topic,
                            int n_parts, int timeout_ms);

/* VmHWM (peak resident set) of a process in KiB, or -1. */
long vw_rel_vmhwm_kb(pid_t pid);

/* Waits for a process to exit by itself; returns what vw_kh_stop returns
 * (128+signal when it died of one), -1 on timeout (then it is killed). */
int vw_rel_wait_exit(vw_kh_proc *p, int timeout_ms);

#endif
