/* fault.c — the first-wins fault record (see fault.h). Owns nothing but the
 * cause it keeps; never decides what to do about it (the loop does). */
#include "fault.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void vw_fault_init(vw_fault *f, vw_metrics *metrics) {
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    atomic_init(&f->raised, false);
    f->metrics = metrics;
}

void vw_fault_destroy(vw_fault *f) {
    pthread_mutex_destroy(&f->mu);
}

/* [thread: any] */
bool vw_fault_raise(vw_fault *f, vw_status st, const char *type, const char *file, int line,
                    const char *fmt, ...) {
    bool first = false;
    pthread_mutex_lock(&f->mu);
    if (!atomic_load(&f->raised)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->first.msg, sizeof f->first.msg, fmt, ap);
        va_end(ap);
        f->first.status = st;
        snprintf(f->first.type, sizeof f->first.type, "%s", type);
        const char *base = strrchr(file, '/');
        snprintf(f->first.where, sizeof f->first.where, "%s:%d", base ? base + 1 : file, line);
        atomic_store(&f->raised, true);
        first = true;
    }
    pthread_mutex_unlock(&f->mu);
    /* Every raise: the flag is idempotent. */
    if (f->metrics)
        vw_metrics_set_fatal(f->metrics);
    return first;
}

/* [thread: any] */
bool vw_fault_raised(vw_fault *f) {
    return atomic_load_explicit(&f->raised, memory_order_relaxed);
}

/* [thread: any] */
vw_status vw_fault_cause(vw_fault *f, vw_err *err) {
    vw_status st = VW_OK;
    pthread_mutex_lock(&f->mu);
    if (atomic_load(&f->raised)) {
        st = f->first.status;
        if (err)
            *err = f->first;
    }
    pthread_mutex_unlock(&f->mu);
    return st;
}
