/* eos_check.h — the exactly-once suites' bookkeeping (tests/test_eos_apache.c):
 * numbered requests into any input topic, and a checker that reads a results
 * topic whole with an explicit isolation.level and counts results per request
 * id: lost (none), duplicates (more than one), per-partition order of first
 * results. Read with read_committed it is what a downstream consumer sees;
 * read_uncommitted shows what aborted transactions left in the log besides.
 *
 * Request i has key and request id "<prefix><i, 5 digits>" and goes to input
 * partition i % n_parts (as rel_check.h's, for any topic).
 * Ownership: reports by value; nothing to free. Thread-safety: none needed.
 * Errors: -1 and a message on stderr.
 */
#ifndef VW_EOS_CHECK_H
#define VW_EOS_CHECK_H

#include <stddef.h>
#include <stdint.h>

typedef struct vw_eos_report {
    const char *isolation; /* "read_committed" or "read_uncommitted" */
    size_t requests;       /* ids expected: prefix00000 .. prefix(n-1) */
    size_t results;        /* records carrying one of those ids */
    size_t distinct;       /* ids with >= 1 result */
    size_t lost;           /* ids with none */
    size_t duplicates;     /* results - distinct */
    size_t order_errors;   /* first results of an input partition out of offset order */
    size_t not_200;        /* results whose vela-status is not 200 */
    int64_t waited_ms;     /* until every id had a result, or the timeout */
} vw_eos_report;

/* A request producer kept across calls: idempotent (a retry during a broker
 * failover never writes a request twice, which would show as a duplicate
 * result), acks=all. NULL on failure. */
typedef struct vw_eos_feeder vw_eos_feeder;
vw_eos_feeder *vw_eos_feeder_new(const char *bootstrap);
/* Produces requests first..first+n-1 with value to topic over n_parts
 * partitions and waits for their delivery (up to 60 s). */
int vw_eos_feed(vw_eos_feeder *f, const char *topic, size_t first, size_t n, int n_parts,
                const char *prefix, const char *value);
/* NULL is a no-op. */
void vw_eos_feeder_free(vw_eos_feeder *f);

/* Reads topic (n_parts partitions) from the beginning with isolation
 * ("read_committed" or "read_uncommitted") to its end (the last stable
 * offset for read_committed), again until every one of the n ids has a
 * result or timeout_ms passed, and counts. */
int vw_eos_count(const char *bootstrap, const char *topic, int n_parts, const char *prefix,
                 size_t n, const char *isolation, int timeout_ms, vw_eos_report *r);

/* One line "name: isolation=.. requests=.. lost=.. duplicates=.." on stderr,
 * appended to $VW_REL_FIGURES when set. */
void vw_eos_print(const char *name, const vw_eos_report *r);

/* The __transaction_state partition of a transactional.id among n
 * partitions (Kafka: abs(String.hashCode) % n). */
int vw_eos_txn_partition(const char *transactional_id, int n);

#endif
