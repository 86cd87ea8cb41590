/* thread_name.h — a thread's name as top -H, ps -L, gdb and perf show it
 * (docs/architecture.md "Threads" lists the worker's).
 * Thread-safety: any thread may name any thread it started. Errors: none
 * reported; a name that cannot be set leaves the thread with the process's. */
#ifndef VW_THREAD_NAME_H
#define VW_THREAD_NAME_H

#include <pthread.h>

/* The most characters Linux keeps of a thread's name (16 with the NUL). */
#define VW_THREAD_NAME_MAX 15

/* Names thread t `name`, or `name/index` when index >= 0, cut to
 * VW_THREAD_NAME_MAX characters ("vw-admit/3"). */
void vw_thread_name(pthread_t t, const char *name, long index);

#endif
