/* thread_name.c — see thread_name.h. Linux's pthread_setname_np (_GNU_SOURCE,
 * set by the build) refuses a name over 15 characters, hence the cut. */
#include "thread_name.h"

#include <stdio.h>

void vw_thread_name(pthread_t t, const char *name, long index) {
    char buf[64];
    if (index >= 0)
        snprintf(buf, sizeof buf, "%s/%ld", name, index);
    else
        snprintf(buf, sizeof buf, "%s", name);
    buf[VW_THREAD_NAME_MAX] = 0; /* the cut */
    (void)pthread_setname_np(t, buf);
}
