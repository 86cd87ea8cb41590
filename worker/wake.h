/* wake.h — wakes the Kafka thread's loop: one byte into its non-blocking wake
 * pipe (worker.c polls the read end). Thread-safety: any thread. Errors: none
 * that matter: a full pipe already wakes the loop. */
#ifndef VW_WAKE_H
#define VW_WAKE_H

#include <errno.h>
#include <unistd.h>

/* fd < 0: no loop to wake (a unit tested on its own). [thread: any] */
static inline void vw_wake(int fd) {
    char c = 'x';
    if (fd >= 0 && write(fd, &c, 1) < 0 && errno != EAGAIN) {
        /* Nothing else can go wrong here. */
    }
}

#endif
