/* rel_commits.h — the commit watch of the reliability suites on a real
 * broker (tests/test_reliability_apache.c): a thread that reads a group's
 * committed offsets from the broker every period, so a test can tell when
 * the group's commits did not land, and count the results answered then
 * (rel_load.h stamps). A member that rejoins answers again what it answered
 * since its last commit that landed; results answered while commits stalled
 * are therefore the duplicates a broker event can cost beyond what was in
 * flight (docs/reliability.md "Apache Kafka").
 *
 * Ownership: a vw_rel_commits is the caller's; vw_rel_commits_stop joins the
 * thread and frees the client; vw_rel_commits_free frees the samples. Threads: the watch thread
 * appends samples until stopped; read them only after vw_rel_commits_stop.
 * Errors: -1 and a message on stderr. */
#ifndef VW_REL_COMMITS_H
#define VW_REL_COMMITS_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vw_rel_commit_sample {
    int64_t wall_ms; /* when the answer came (rel_load.h vw_rel_wall_ms) */
    int64_t sum;     /* committed offsets summed over the partitions */
} vw_rel_commit_sample;

enum { VW_REL_COMMITS_MAX_PARTS = 64 };

typedef struct vw_rel_commits {
    pthread_t thread;
    void *rk; /* kafka_harness.h vw_kh_group_client: never a member */
    char topic[128];
    int n_parts, period_ms;
    atomic_bool stop;
    vw_rel_commit_sample *s; /* answered reads only: a failed read adds none */
    size_t n, cap;
} vw_rel_commits;

/* Starts reading group's committed offsets of topic's partitions
 * 0..n_parts-1 (n_parts <= VW_REL_COMMITS_MAX_PARTS) every period_ms (a read answered later than 4 periods is
 * dropped). */
int vw_rel_commits_start(const char *bootstrap, const char *group, const char *topic,
                         int n_parts, int period_ms, vw_rel_commits *c);
void vw_rel_commits_stop(vw_rel_commits *c);
void vw_rel_commits_free(vw_rel_commits *c);

/* Results of ids with `prefix` stamped while commits stalled: inside a
 * stretch of at least min_stall_ms between two reads that saw the sum
 * advance, counted from the read before the stretch's first (the last
 * commit may have landed anywhere after it). *stalled_ms: the stretches'
 * total length (may be NULL). */
size_t vw_rel_answered_in_stalls(const vw_rel_commits *c, const json_t *results,
                                 const char *prefix, int64_t min_stall_ms, int64_t *stalled_ms);

#endif
