/* rel_commits.c — see rel_commits.h. Test-only. */
#include "rel_commits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_harness.h"
#include "rel_load.h"
#include "util/reserve.h"

/* One read of the committed offsets: 0 and their *sum, or -1 (no answer
 * within 4 periods). */
static int read_sum(vw_rel_commits *c, int64_t *sum) {
    int64_t off[VW_REL_COMMITS_MAX_PARTS];
    if (vw_kh_committed_via(c->rk, c->topic, c->n_parts, off, c->period_ms * 4))
        return -1;
    *sum = 0;
    for (int i = 0; i < c->n_parts; i++)
        *sum += off[i] > 0 ? off[i] : 0;
    return 0;
}

static void *watch(void *arg) {
    vw_rel_commits *c = arg;
    while (!atomic_load(&c->stop)) {
        int64_t t0 = vw_kh_now_ms(), sum;
        if (!read_sum(c, &sum)) {
            if (vw_reserve((void **)&c->s, &c->cap, c->n + 1, sizeof *c->s) != VW_OK)
                break;
            c->s[c->n++] = (vw_rel_commit_sample){vw_rel_wall_ms(), sum};
        }
        int64_t left = c->period_ms - (vw_kh_now_ms() - t0);
        if (left > 0)
            vw_kh_sleep_ms((int)left);
    }
    return NULL;
}

int vw_rel_commits_start(const char *bootstrap, const char *group, const char *topic,
                         int n_parts, int period_ms, vw_rel_commits *c) {
    memset(c, 0, sizeof *c);
    if (n_parts < 1 || n_parts > VW_REL_COMMITS_MAX_PARTS) {
        fprintf(stderr, "rel_commits: %d partitions (1 to %d)\n", n_parts,
                VW_REL_COMMITS_MAX_PARTS);
        return -1;
    }
    snprintf(c->topic, sizeof c->topic, "%s", topic);
    c->n_parts = n_parts;
    c->period_ms = period_ms;
    if (!(c->rk = vw_kh_group_client(bootstrap, group)))
        return -1;
    if (pthread_create(&c->thread, NULL, watch, c)) {
        fprintf(stderr, "rel_commits: no thread\n");
        vw_kh_client_free(c->rk);
        return -1;
    }
    return 0;
}

void vw_rel_commits_stop(vw_rel_commits *c) {
    atomic_store(&c->stop, true);
    pthread_join(c->thread, NULL);
    vw_kh_client_free(c->rk);
    c->rk = NULL;
}

void vw_rel_commits_free(vw_rel_commits *c) {
    free(c->s);
    c->s = NULL;
    c->n = c->cap = 0;
}

/* Results of ids with prefix stamped in [from_ms, to_ms]. */
static size_t stamped_in(const json_t *results, const char *prefix, int64_t from_ms,
                         int64_t to_ms) {
    size_t i, n = 0;
    int64_t ts;
    json_t *rec;
    json_array_foreach(results, i, rec) n += vw_rel_stamped_in(rec, prefix, from_ms, to_ms, &ts);
    return n;
}

size_t vw_rel_answered_in_stalls(const vw_rel_commits *c, const json_t *results,
                                 const char *prefix, int64_t min_stall_ms, int64_t *stalled_ms) {
    size_t answered = 0;
    int64_t total = 0;
    /* adv: the read that last saw the sum advance; before: the read before it */
    size_t adv = 0, before = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (c->s[i].sum == c->s[adv].sum)
            continue;
        if (c->s[i].wall_ms - c->s[adv].wall_ms >= min_stall_ms) {
            answered += stamped_in(results, prefix, c->s[before].wall_ms, c->s[i].wall_ms);
            total += c->s[i].wall_ms - c->s[before].wall_ms;
        }
        before = i - 1;
        adv = i;
    }
    if (stalled_ms)
        *stalled_ms = total;
    return answered;
}
