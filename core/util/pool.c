/* pool.c — the task pool of pool.h. One run at a time: the caller closes the
 * last run, posts the new one (the function, its context, n) and bumps the
 * generation in `claim` again; every
 * thread then takes tasks by compare-and-swap on `claim` = generation << 32 |
 * next index, so a thread that wakes late for an earlier run can never take a
 * task of the current one (its generation no longer matches). `done` counts
 * finished (or, after a failure, skipped) tasks; the run is over at n. The
 * posted fields are atomics because such a late thread may read them while the
 * next run is being posted: it then fails the generation check and reads
 * again. Sleeping threads are woken through one mutex and two condition
 * variables, only when someone sleeps (the sleepers count and the caller's
 * flag are checked after the state they wait on is published, all seq_cst, so
 * no wake-up is lost). */
#include "pool.h"
#include "thread_name.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct worker_arg {
    vw_pool *p;
    unsigned index; /* 1 .. threads-1 */
} worker_arg;

struct vw_pool {
    unsigned threads;
    pthread_t *tid; /* threads - 1 */
    worker_arg *args;
    /* the run at hand */
    _Atomic uint64_t claim; /* generation << 32 | next task index */
    _Atomic uint32_t done;
    _Atomic(vw_pool_fn) fn;
    _Atomic(vw_pool_try_fn) try_fn;
    _Atomic(void *) ctx;
    _Atomic uint32_t n;
    /* the first failure of the run (lowest task index) */
    pthread_mutex_t err_mu;
    int failed;
    uint32_t err_task;
    vw_status err_st;
    vw_err err;
    /* sleeping */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* pool threads: a new run, or stop */
    pthread_cond_t idle; /* the caller: the last task finished */
    _Atomic unsigned sleepers;
    _Atomic int caller_sleeping;
    _Atomic int stop;
    /* callers: a recursive mutex, so a run asked inside the caller's own run is
     * seen (depth > 0) and run inline; depth is only touched by its holder. */
    pthread_mutex_t run_mu;
    unsigned depth;
};

static uint32_t gen_of(uint64_t s) {
    return (uint32_t)(s >> 32);
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Adds k finished (or skipped) tasks; the one that completes the run wakes a
 * sleeping caller. */
static void add_done(vw_pool *p, uint32_t k, uint32_t n) {
    if (atomic_fetch_add(&p->done, k) + k == n && atomic_load(&p->caller_sleeping)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_signal(&p->idle);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Records a failure and closes run g: the tasks not yet handed out count as
 * done without running. */
static void fail(vw_pool *p, uint32_t g, uint32_t task, vw_status st, const vw_err *e) {
    pthread_mutex_lock(&p->err_mu);
    if (!p->failed || task < p->err_task) {
        p->failed = 1;
        p->err_task = task;
        p->err_st = st;
        p->err = *e;
    }
    pthread_mutex_unlock(&p->err_mu);
    uint32_t n = atomic_load(&p->n);
    uint64_t s = atomic_load(&p->claim);
    while (gen_of(s) == g && (uint32_t)s < n)
        if (atomic_compare_exchange_weak(&p->claim, &s, ((uint64_t)g << 32) | n)) {
            add_done(p, n - (uint32_t)s, n);
            break;
        }
}

/* Takes and runs tasks of run g until none is left (or the run is over). */
static void work(vw_pool *p, uint32_t g, unsigned w) {
    vw_pool_fn fn = atomic_load(&p->fn);
    vw_pool_try_fn try_fn = atomic_load(&p->try_fn);
    void *ctx = atomic_load(&p->ctx);
    uint32_t n = atomic_load(&p->n);
    for (;;) {
        uint64_t s = atomic_load(&p->claim);
        do {
            if (gen_of(s) != g || (uint32_t)s >= n)
                return;
        } while (!atomic_compare_exchange_weak(&p->claim, &s, s + 1));
        uint32_t task = (uint32_t)s;
        if (fn) {
            fn(ctx, task, w);
        } else {
            vw_err e;
            vw_err_clear(&e);
            vw_status st = try_fn(ctx, task, w, &e);
            if (st != VW_OK)
                fail(p, g, task, st, &e);
        }
        add_done(p, 1, n);
    }
}

/* Spins at most VW_POOL_SPIN_NS while the generation is `seen`; then sleeps.
 * Returns the new generation (or any, once stop is set). */
static uint32_t wait_run(vw_pool *p, uint32_t seen) {
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        uint32_t g = gen_of(atomic_load(&p->claim));
        if (g != seen || atomic_load(&p->stop))
            return g;
        if ((i & 63) == 63) {
            int64_t t = mono_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > VW_POOL_SPIN_NS)
                break;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->sleepers, 1);
    uint32_t g;
    while ((g = gen_of(atomic_load(&p->claim))) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mu);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->mu);
    return g;
}

static void wait_done(vw_pool *p, uint32_t n) {
    int64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load(&p->done) == n)
            return;
        if ((i & 63) == 63) {
            int64_t t = mono_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > VW_POOL_SPIN_NS)
                break;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_sleeping, 1);
    while (atomic_load(&p->done) != n)
        pthread_cond_wait(&p->idle, &p->mu);
    atomic_store(&p->caller_sleeping, 0);
    pthread_mutex_unlock(&p->mu);
}

static void *thread_main(void *arg) {
    const worker_arg *a = arg;
    vw_pool *p = a->p;
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = wait_run(p, seen);
        if (atomic_load(&p->stop))
            return NULL;
        seen = g;
        work(p, g, a->index);
    }
}

/* Every task in order on this thread; stops at the first failure. */
static vw_status run_inline(size_t n, vw_pool_fn fn, vw_pool_try_fn try_fn, void *ctx, unsigned w,
                            vw_err *err) {
    for (size_t i = 0; i < n; i++) {
        if (fn) {
            fn(ctx, i, w);
            continue;
        }
        vw_err e;
        vw_err_clear(&e);
        vw_status st = try_fn(ctx, i, w, &e);
        if (st != VW_OK) {
            if (err)
                *err = e;
            return st;
        }
    }
    return VW_OK;
}

/* The worker index of the calling thread when it is one of the pool's. */
static int pool_thread(const vw_pool *p, unsigned *w) {
    pthread_t self = pthread_self();
    for (unsigned i = 0; i + 1 < p->threads; i++)
        if (pthread_equal(self, p->tid[i])) {
            *w = i + 1;
            return 1;
        }
    return 0;
}

static vw_status run(vw_pool *p, size_t n, vw_pool_fn fn, vw_pool_try_fn try_fn, void *ctx,
                     vw_err *err) {
    unsigned w = 0;
    if (n == 0)
        return VW_OK;
    if (pool_thread(p, &w)) /* nested, inside a task on a pool thread */
        return run_inline(n, fn, try_fn, ctx, w, err);
    pthread_mutex_lock(&p->run_mu);
    vw_status st = VW_OK;
    if (p->depth > 0 || p->threads == 1 || n == 1) {
        p->depth++; /* nested on the caller's thread, or nothing to share */
        st = run_inline(n, fn, try_fn, ctx, 0, err);
        p->depth--;
        pthread_mutex_unlock(&p->run_mu);
        return st;
    }
    p->depth = 1;
    p->failed = 0;
    /* Close the last run first (a new generation whose index is past any n):
     * a thread still on its way into the last run, which may read the new n
     * below, must not find that run's index under it and take a task with the
     * new function. The run itself is the generation after. */
    uint32_t g = gen_of(atomic_load(&p->claim)) + 1;
    atomic_store(&p->claim, (uint64_t)g << 32 | UINT32_MAX);
    atomic_store(&p->fn, fn);
    atomic_store(&p->try_fn, try_fn);
    atomic_store(&p->ctx, ctx);
    atomic_store(&p->n, (uint32_t)n);
    atomic_store(&p->done, 0);
    atomic_store(&p->claim, (uint64_t)++g << 32);
    if (atomic_load(&p->sleepers)) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, g, 0);
    wait_done(p, (uint32_t)n);
    pthread_mutex_lock(&p->err_mu); /* the failing threads wrote it under the lock */
    if (p->failed) {
        st = p->err_st;
        if (err)
            *err = p->err;
    }
    pthread_mutex_unlock(&p->err_mu);
    p->depth = 0;
    pthread_mutex_unlock(&p->run_mu);
    return st;
}

void vw_pool_for(vw_pool *p, size_t n, vw_pool_fn fn, void *ctx) {
    run(p, n, fn, NULL, ctx, NULL);
}

vw_status vw_pool_try(vw_pool *p, size_t n, vw_pool_try_fn fn, void *ctx, vw_err *err) {
    return run(p, n, NULL, fn, ctx, err);
}

unsigned vw_pool_threads(const vw_pool *p) {
    return p->threads;
}

/* Stops and joins the first `started` threads, then frees p. */
static void teardown(vw_pool *p, unsigned started) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_mutex_destroy(&p->run_mu);
    pthread_mutex_destroy(&p->err_mu);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    free(p->tid);
    free(p->args);
    free(p);
}

vw_status vw_pool_new(unsigned threads, vw_pool **out, vw_err *err) {
    *out = NULL;
    if (threads < 1 || threads > VW_POOL_MAX_THREADS)
        return VW_FAIL(err, VW_EINVAL, "bad_threads", "pool of %u threads: expected 1 .. %d",
                       threads, VW_POOL_MAX_THREADS);
    vw_pool *p = calloc(1, sizeof *p);
    if (!p)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "thread pool");
    p->threads = threads;
    p->tid = calloc(threads, sizeof *p->tid);
    p->args = calloc(threads, sizeof *p->args);
    pthread_mutexattr_t ra;
    pthread_mutexattr_init(&ra);
    pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&p->run_mu, &ra);
    pthread_mutexattr_destroy(&ra);
    pthread_mutex_init(&p->err_mu, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    if (!p->tid || !p->args) {
        teardown(p, 0);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "thread pool of %u", threads);
    }
    for (unsigned i = 0; i + 1 < threads; i++) {
        p->args[i] = (worker_arg){.p = p, .index = i + 1};
        int rc = pthread_create(&p->tid[i], NULL, thread_main, &p->args[i]);
        if (rc != 0) {
            teardown(p, i);
            return VW_FAIL(err, rc == EAGAIN ? VW_ENOMEM : VW_EIO, "thread_create",
                           "thread %u of a pool of %u: %s", i + 1, threads, strerror(rc));
        }
        vw_thread_name(p->tid[i], "vw-pool", (long)i + 1); /* 0 is the caller */
    }
    *out = p;
    return VW_OK;
}

void vw_pool_free(vw_pool *p) {
    if (p)
        teardown(p, p->threads - 1);
}

/* ceil(quota / period) of a cgroup v2 cpu.max file, or 0 for "max" / none. */
static unsigned quota_cpus(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char q[32] = "";
    unsigned long long period = 0;
    int got = fscanf(f, "%31s %llu", q, &period);
    fclose(f);
    if (got != 2 || !strcmp(q, "max") || period == 0)
        return 0;
    unsigned long long quota = strtoull(q, NULL, 10);
    return quota ? (unsigned)((quota + period - 1) / period) : 0;
}

unsigned vw_cpu_count(void) {
    unsigned n = 1;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        n = (unsigned)CPU_COUNT(&set);
    /* cgroup v2: this process's group ("0::/path" in /proc/self/cgroup). */
    char line[512], path[600];
    unsigned q = 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && !q && fgets(line, sizeof line, f))
        if (!strncmp(line, "0::", 3)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", line + 3);
            q = quota_cpus(path);
        }
    if (f)
        fclose(f);
    if (!q)
        q = quota_cpus("/sys/fs/cgroup/cpu.max");
    return q && q < n ? q : n;
}
