/* crashpoint.c — see crashpoint.h. Owns only the parse and the counter; never
 * touches Kafka state, so a crash leaves exactly what a kill would. */
#include "crashpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One point per line. */
// clang-format off
static const char *const names[] = {
    [VW_CRASH_AFTER_EXECUTOR] = "after_executor",
    [VW_CRASH_AFTER_PRODUCE] = "after_produce",
    [VW_CRASH_AFTER_DELIVERY] = "after_delivery",
    [VW_CRASH_AFTER_COMMIT] = "after_commit",
    [VW_CRASH_BEFORE_PRODUCE] = "before_produce",
    [VW_CRASH_AFTER_TXN_OFFSETS] = "after_txn_offsets",
    [VW_CRASH_AFTER_TXN_COMMIT] = "after_txn_commit",
};
// clang-format on
enum { N_NAMES = sizeof names / sizeof names[0] };

const char *vw_crashpoint_name(vw_crash_point p) {
    return p > VW_CRASH_NONE && (int)p < N_NAMES ? names[p] : NULL;
}

vw_status vw_crashpoint_init(vw_crashpoint *cp, const char *spec, vw_err *err) {
    cp->point = VW_CRASH_NONE;
    cp->at = 0;
    cp->action = VW_CRASH_ABORT;
    atomic_init(&cp->hits, 0);
    if (!spec || !*spec)
        return VW_OK;
    size_t len = strcspn(spec, ":");
    vw_crash_point found = VW_CRASH_NONE;
    for (int i = 1; i < N_NAMES; i++)
        if (strlen(names[i]) == len && !strncmp(spec, names[i], len))
            found = (vw_crash_point)i;
    long at = 1;
    vw_crash_action action = VW_CRASH_ABORT;
    if (found != VW_CRASH_NONE && spec[len] == ':') {
        char *end = NULL;
        errno = 0;
        at = strtol(spec + len + 1, &end, 10);
        if (errno || end == spec + len + 1 || at < 1)
            found = VW_CRASH_NONE;
        else if (!strcmp(end, ":fatal") &&
                 (found == VW_CRASH_BEFORE_PRODUCE || found == VW_CRASH_AFTER_PRODUCE ||
                  found == VW_CRASH_AFTER_DELIVERY))
            action = VW_CRASH_FATAL_PRODUCER;
        else if (*end)
            found = VW_CRASH_NONE;
    } else if (spec[len]) {
        found = VW_CRASH_NONE;
    }
    if (found == VW_CRASH_NONE)
        return VW_FAIL(err, VW_EINVAL, "bad_crash_point",
                       "VW_CRASH_AT=%s: expected after_executor|before_produce|after_produce|"
                       "after_delivery|after_commit|after_txn_offsets|after_txn_commit[:N], "
                       "N >= 1, or "
                       "before_produce|after_produce|after_delivery:N:fatal",
                       spec);
    cp->point = found;
    cp->at = at;
    cp->action = action;
    return VW_OK;
}

bool vw_crashpoint_hit(vw_crashpoint *cp, vw_crash_point p) {
    if (cp->point != p || p == VW_CRASH_NONE)
        return false;
    long n = atomic_fetch_add_explicit(&cp->hits, 1, memory_order_relaxed) + 1;
    if (n != cp->at)
        return false;
    const bool fatal = cp->action == VW_CRASH_FATAL_PRODUCER;
    /* write(2), not stdio: async-signal-safe and unbuffered. */
    char line[96];
    int k = snprintf(line, sizeof line, "vw_crashpoint: %s at %s:%ld\n",
                     fatal ? "fatal producer error" : "abort", names[p], n);
    if (k > 0 && write(2, line, (size_t)k) < 0)
        k = 0;
    if (!fatal)
        abort();
    return true;
}
