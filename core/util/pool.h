/* pool.h — a fixed set of threads that runs the indexed tasks of one loop at
 * a time for its caller: the CPU executor's only threading (docs/performance.md
 * "CPU thread model").
 *
 * A run hands out the tasks 0 .. n-1 one at a time from a shared counter, in
 * increasing order, to whichever thread asks next: the calling thread takes
 * part (worker 0) beside the pool's own threads (workers 1 .. threads-1). A
 * thread that is descheduled only delays the task it holds; the others take
 * the rest. So tasks should be many (several per thread) and of a size worth a
 * counter increment (microseconds or more).
 *
 * Waiting: an idle pool thread spins for at most VW_POOL_SPIN_NS on the next
 * run, then sleeps on a condition variable; the caller waits for the last
 * task the same way. Nothing spins for longer, so an idle pool costs the
 * machine nothing after that.
 *
 * Nesting: a run asked from inside a task (by any thread of the pool, or by the
 * caller while its own run is on) runs its tasks inline on that thread, in
 * order, with that thread's worker index. Runs asked at once from two threads
 * that are not in a run take turns. A pool is freed only when no run is on.
 *
 * Errors: vw_pool_try's tasks may fail. The first failure closes the run: no
 * further task starts, the tasks already started finish, and the call returns
 * the failure of the lowest task index that failed (that task is always run,
 * as tasks start in order) with its err. vw_pool_for's tasks cannot fail.
 * Creating a pool fails with VW_ENOMEM or VW_EIO ("thread_create", the
 * pthread error named); nothing is left running then.
 *
 * Ownership: the pool owns its threads; ctx is borrowed for the call.
 * Thread-safety: see Nesting; vw_pool_threads may be called from any thread.
 */
#ifndef VW_POOL_H
#define VW_POOL_H

#include <stddef.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How long an idle thread polls before it sleeps: 1 ms, below a scheduler
 * time slice (~3 ms), so a pool beside other work gives its cores back
 * within a slice. Shorter cost the forward more than it saved (bench of
 * 2026-12-05, docs/performance.md "CPU thread model": 50 us lost 11-13 %
 * clean, 7 % beside a busy thread, 16 % beside a nice-19 one): a thread that
 * slept between two runs first waits for its wake-up (a virtual CPU's halt
 * and interrupt) and, with the kernel's EEVDF scheduler, for the slice of
 * whatever ran on its CPU meanwhile. */
#define VW_POOL_SPIN_NS 1000000L

/* Most threads a pool runs (the counter holds 32-bit task indices). */
#define VW_POOL_MAX_THREADS 256

typedef struct vw_pool vw_pool;

/* A task that cannot fail: index task in [0, n), run on worker (see above). */
typedef void (*vw_pool_fn)(void *ctx, size_t task, unsigned worker);
/* A task that may fail: returns VW_OK, or a status and fills err. */
typedef vw_status (*vw_pool_try_fn)(void *ctx, size_t task, unsigned worker, vw_err *err);

/* A pool of `threads` workers in all, the caller included: threads - 1 pool
 * threads are started (none for 1). threads in [1, VW_POOL_MAX_THREADS]. */
vw_status vw_pool_new(unsigned threads, vw_pool **out, vw_err *err);

/* Stops and joins the threads; NULL is a no-op. */
void vw_pool_free(vw_pool *p);

/* Workers of the pool, the caller included (per-worker scratch is sized by it). */
unsigned vw_pool_threads(const vw_pool *p);

/* Runs fn(ctx, i, worker) once for every i in [0, n) and returns when all
 * have returned. n < UINT32_MAX. */
void vw_pool_for(vw_pool *p, size_t n, vw_pool_fn fn, void *ctx);

/* As vw_pool_for for tasks that may fail (see Errors). */
vw_status vw_pool_try(vw_pool *p, size_t n, vw_pool_try_fn fn, void *ctx, vw_err *err);

/* The CPUs this process may use: the affinity mask's count, capped by a
 * cgroup v2 CPU quota (cpu.max, rounded up) when there is one; >= 1. */
unsigned vw_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
