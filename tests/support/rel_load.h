/* rel_load.h — steady load for the reliability suites on a real broker
 * (tests/test_reliability_apache.c): a thread producing numbered requests
 * ("<prefix><i, 5 digits>", request i to input partition i % n_parts, the
 * echo request of rel_check.h) at a fixed rate through one idempotent
 * producer (acks=all) until stopped; and the longest pause of the results
 * in a time window, per input partition, from the results' timestamps.
 *
 * Ownership: a vw_rel_load is the caller's; vw_rel_load_stop joins the
 * thread and frees the producer. Threads: the producer thread only touches
 * the struct's counters (atomics). Errors: -1 and a message on stderr. */
#ifndef VW_REL_LOAD_H
#define VW_REL_LOAD_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vw_rel_load {
    pthread_t thread;
    void *rk; /* rd_kafka_t * */
    char prefix[16];
    int n_parts, per_s;
    atomic_bool stop;
    atomic_size_t sent; /* requests handed to the producer */
    atomic_size_t failed;
} vw_rel_load;

/* Starts producing per_s requests a second to "requests" (10 ms ticks). */
int vw_rel_load_start(const char *bootstrap, const char *prefix, int n_parts, int per_s,
                      vw_rel_load *l);
/* Stops, flushes (up to 60 s) and returns the number of requests delivered
 * (ids prefix00000 .. prefix(n-1)), or -1 when any delivery failed. */
long vw_rel_load_stop(vw_rel_load *l);

/* Wall-clock milliseconds (the results' CreateTime clock). */
int64_t vw_rel_wall_ms(void);

/* True when rec (a vw_kh_consume record) answers an id with `prefix` and is
 * stamped in [from_ms, to_ms] (wall clock); *ts: its stamp. */
bool vw_rel_stamped_in(const json_t *rec, const char *prefix, int64_t from_ms, int64_t to_ms,
                       int64_t *ts);

/* The longest gap, in ms, between consecutive results (by timestamp) of one
 * input partition, over every input partition, counting only results of
 * ids with `prefix` stamped in [from_ms, to_ms] (wall clock); a partition
 * with no result in the window counts the whole window. */
int64_t vw_rel_max_gap_ms(const json_t *results, const char *prefix, int n_parts, int64_t from_ms,
                          int64_t to_ms);

#endif
