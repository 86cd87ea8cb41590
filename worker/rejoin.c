/* rejoin.c — the source's rebalance holds (see rejoin.h). Owns the join-state
 * bookkeeping; never calls librdkafka. */
#include "rejoin.h"

#include <string.h>

void vw_rejoin_init(vw_rejoin *r, int64_t hold_ms, bool wa_4059, bool kip848) {
    memset(r, 0, sizeof *r);
    r->hold_ms = hold_ms;
    r->wa_4059 = wa_4059;
    r->kip848 = kip848;
    atomic_init(&r->joining, false);
    atomic_init(&r->join_lines, false);
    atomic_init(&r->joined, false);
}

/* [thread: any] */
bool vw_rejoin_join_line(const char *fac, const char *buf, bool *steady, bool *joined) {
    if (strcmp(fac, "CGRPJOINSTATE"))
        return false;
    /* After the group id, which may itself hold " -> ". */
    const char *from = strstr(buf, "\" changed join state ");
    const char *arrow = from ? strstr(from, " -> ") : NULL;
    if (!arrow)
        return false;
    const char *to = arrow + 4;
    *steady = !strncmp(to, "steady ", 7);
    /* A JoinGroup answer: the follower's wait-sync, or the leader's
     * wait-metadata from wait-join (init -> wait-metadata is not one). */
    *joined =
        !strncmp(to, "wait-sync ", 10) || (!strncmp(to, "wait-metadata ", 14) && arrow - buf >= 9 &&
                                           !strncmp(arrow - 9, "wait-join", 9));
    return true;
}

/* Join-state lines are the only immediate signal that this member is
 * rejoining (librdkafka has no API for it). [thread: librdkafka] */
void vw_rejoin_log_line(vw_rejoin *r, const char *fac, const char *buf) {
    bool steady, joined;
    if (!vw_rejoin_join_line(fac, buf, &steady, &joined))
        return;
    atomic_store(&r->joining, !steady);
    atomic_store(&r->join_lines, true);
    if (joined)
        atomic_store(&r->joined, true);
}

bool vw_rejoin_stats(vw_rejoin *r, const char *js) {
    bool unsteady = js && strcmp(js, "steady") && strcmp(js, "init");
    bool changed = unsteady != r->group_unsteady;
    r->group_unsteady = unsteady;
    return changed;
}

bool vw_rejoin_in_progress(vw_rejoin *r, int64_t now) {
    bool fresh = r->commit_hold_until <= now;
    r->commit_hold_until = now + r->hold_ms;
    return fresh;
}

void vw_rejoin_callback(vw_rejoin *r) {
    r->commit_hold_until = 0;
}

void vw_rejoin_assigned(vw_rejoin *r, int64_t now) {
    if (r->second_round)
        r->commit_hold_until = now + r->hold_ms;
    r->second_round = false;
}

void vw_rejoin_revoked_cooperative(vw_rejoin *r, int64_t now, bool lost) {
    if (r->kip848)
        return;
    r->commit_hold_until = now + r->hold_ms;
    r->second_round = !lost;
}

/* Statistics show the same state up to an interval late, so they count only
 * while no line was read (a librdkafka that stopped writing them). */
bool vw_rejoin_rejoining(vw_rejoin *r) {
    return atomic_load(&r->joining) || (r->group_unsteady && !atomic_load(&r->join_lines));
}

bool vw_rejoin_commits_held(const vw_rejoin *r, int64_t now) {
    return now < r->commit_hold_until;
}

bool vw_rejoin_intake_held(vw_rejoin *r, int64_t now) {
    return vw_rejoin_commits_held(r, now) || (r->wa_4059 && atomic_load(&r->joining));
}

bool vw_rejoin_commit_gated(vw_rejoin *r, int64_t now) {
    return vw_rejoin_commits_held(r, now) || (r->wa_4059 && vw_rejoin_rejoining(r));
}

bool vw_rejoin_joined(vw_rejoin *r) {
    return atomic_load(&r->joined);
}
