/* test_pool.c — the task pool (core/util/pool.h): every task runs exactly
 * once on a worker index below the pool's size, over many back-to-back runs
 * and after the threads went to sleep; a task held up does not hold up the
 * others (tasks are handed out as threads ask, not split in advance); the
 * lowest failing task's error comes back and nothing runs after the run
 * closes; nested runs go inline on the asking thread; two outer callers take
 * turns; an idle pool sleeps instead of spinning; bad sizes are refused. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/pool.h"

enum { MAX_N = 4096 };

typedef struct counts {
    _Atomic int hits[MAX_N];
    _Atomic int bad_worker;
    unsigned threads;
} counts;

static void count_task(void *ctx, size_t i, unsigned w) {
    counts *c = ctx;
    atomic_fetch_add(&c->hits[i], 1);
    if (w >= c->threads)
        atomic_store(&c->bad_worker, 1);
}

static vw_pool *new_pool(unsigned threads) {
    vw_pool *p = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_pool_new(threads, &p, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_pool_threads(p), threads);
    return p;
}

static void expect_each_once(counts *c, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(atomic_load(&c->hits[i]), 1, "%s: task %zu ran %d times", what, i,
                     atomic_load(&c->hits[i]));
    for (size_t i = n; i < MAX_N; i++)
        cr_assert_eq(atomic_load(&c->hits[i]), 0, "%s: task %zu beyond n ran", what, i);
    cr_assert_eq(atomic_load(&c->bad_worker), 0, "%s: worker index out of range", what);
}

Test(pool, every_task_once_over_many_runs) {
    static const unsigned sizes[] = {1, 2, 3, 8};
    static const size_t ns[] = {0, 1, 2, 7, 64, 1000, MAX_N};
    counts *c = calloc(1, sizeof *c);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        vw_pool *p = new_pool(sizes[s]);
        c->threads = sizes[s];
        for (int rep = 0; rep < 300; rep++) {
            size_t n = ns[rep % (sizeof ns / sizeof *ns)];
            memset(c->hits, 0, sizeof c->hits);
            vw_pool_for(p, n, count_task, c);
            char what[64];
            snprintf(what, sizeof what, "%u threads, run %d, n %zu", sizes[s], rep, n);
            expect_each_once(c, n, what);
        }
        vw_pool_free(p);
    }
    free(c);
}

/* More threads than cores, so threads are preempted anywhere, and runs of
 * alternating sizes back to back: a thread late for one run must never take a
 * task of the next (a task beyond n, or one run twice). A stress test: the
 * race it guards (a thread entering run g-1 as run g was posted read g's n
 * under g-1's index and ran g's function past it) was found by a ThreadSanitizer
 * build of the pool, whose slowness widens the window; natively it is rare. */
Test(pool, late_threads_never_take_tasks_of_the_next_run) {
    counts *c = calloc(1, sizeof *c);
    vw_pool *p = new_pool(6);
    c->threads = 6;
    for (int rep = 0; rep < 20000; rep++) {
        size_t n = rep % 2 ? 3 : 40 + (size_t)rep % 7;
        for (size_t i = 0; i < 48; i++)
            atomic_store(&c->hits[i], 0);
        vw_pool_for(p, n, count_task, c);
        for (size_t i = 0; i < 48; i++)
            cr_assert_eq(atomic_load(&c->hits[i]), i < n, "run %d (n %zu): task %zu ran %d times",
                         rep, n, i, atomic_load(&c->hits[i]));
    }
    vw_pool_free(p);
    free(c);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The threads sleep on their condition variable after VW_POOL_SPIN_NS; the
 * next run must wake them (no lost wake-up), many times over. */
Test(pool, runs_after_the_threads_slept) {
    counts *c = calloc(1, sizeof *c);
    vw_pool *p = new_pool(4);
    c->threads = 4;
    for (int rep = 0; rep < 20; rep++) {
        sleep_ms((int)(VW_POOL_SPIN_NS / 1000000) + 2);
        memset(c->hits, 0, sizeof c->hits);
        vw_pool_for(p, 500, count_task, c);
        expect_each_once(c, 500, "after sleeping");
    }
    vw_pool_free(p);
    free(c);
}

/* Task 0 waits until every other task has run. With tasks split in advance
 * (thread t gets a fixed share) the thread holding task 0 would own others
 * that never run: a deadlock. Handed out on demand, the other thread takes
 * them all. */
typedef struct held {
    _Atomic int others;
    size_t n;
} held;

static void held_task(void *ctx, size_t i, unsigned w) {
    (void)w;
    held *h = ctx;
    if (i == 0) {
        while (atomic_load(&h->others) != (int)h->n - 1)
            sched_yield();
    } else {
        atomic_fetch_add(&h->others, 1);
    }
}

Test(pool, a_held_task_does_not_hold_the_others, .timeout = 60) {
    for (unsigned t = 2; t <= 4; t++) {
        vw_pool *p = new_pool(t);
        held h = {.n = 200};
        vw_pool_for(p, h.n, held_task, &h);
        cr_assert_eq(atomic_load(&h.others), 199);
        vw_pool_free(p);
    }
}

typedef struct failing {
    _Atomic int hits[MAX_N];
    size_t fail_a, fail_b; /* tasks that fail (fail_b may be n: none) */
} failing;

static vw_status failing_task(void *ctx, size_t i, unsigned w, vw_err *err) {
    (void)w;
    failing *f = ctx;
    atomic_fetch_add(&f->hits[i], 1);
    if (i == f->fail_a || i == f->fail_b)
        return VW_FAIL(err, i == f->fail_a ? VW_EINVAL : VW_EIO, "task_failed", "task %zu failed",
                       i);
    return VW_OK;
}

Test(pool, the_lowest_failure_comes_back) {
    failing *f = calloc(1, sizeof *f);
    for (unsigned t = 1; t <= 4; t++) {
        vw_pool *p = new_pool(t);
        for (int rep = 0; rep < 200; rep++) {
            size_t n = 1000;
            memset(f->hits, 0, sizeof f->hits);
            f->fail_a = (size_t)(rep * 37) % n;
            f->fail_b = rep % 2 ? f->fail_a + 1 + (size_t)rep % 50 : n;
            vw_err err = {0};
            vw_status st = vw_pool_try(p, n, failing_task, f, &err);
            cr_assert_eq(st, VW_EINVAL, "threads %u rep %d: %s", t, rep, vw_status_name(st));
            char want[64];
            snprintf(want, sizeof want, "task %zu failed", f->fail_a);
            cr_assert_str_eq(err.msg, want);
            cr_assert_str_eq(err.type, "task_failed");
            for (size_t i = 0; i < n; i++) {
                int h = atomic_load(&f->hits[i]);
                cr_assert(h <= 1, "task %zu ran %d times", i, h);
                cr_assert(i > f->fail_a || h == 1, "task %zu before the failure did not run", i);
            }
            if (t == 1) /* in order on one thread: nothing after the failure */
                for (size_t i = f->fail_a + 1; i < n; i++)
                    cr_assert_eq(atomic_load(&f->hits[i]), 0);
        }
        /* and a run without failures afterwards is clean */
        memset(f->hits, 0, sizeof f->hits);
        f->fail_a = f->fail_b = MAX_N;
        vw_err err = {0};
        cr_assert_eq(vw_pool_try(p, 300, failing_task, f, &err), VW_OK);
        for (size_t i = 0; i < 300; i++)
            cr_assert_eq(atomic_load(&f->hits[i]), 1);
        vw_pool_free(p);
    }
    free(f);
}

/* A task that runs an inner loop on the same pool: the inner tasks run inline
 * on the asking thread, with its worker index. */
typedef struct nest {
    vw_pool *p;
    _Atomic int inner[64][16];
    _Atomic int wrong_worker;
} nest;

typedef struct inner_ctx {
    nest *n;
    size_t outer;
    unsigned worker;
} inner_ctx;

static void inner_task(void *ctx, size_t i, unsigned w) {
    inner_ctx *ic = ctx;
    if (w != ic->worker)
        atomic_store(&ic->n->wrong_worker, 1);
    atomic_fetch_add(&ic->n->inner[ic->outer][i], 1);
}

static void outer_task(void *ctx, size_t i, unsigned w) {
    nest *n = ctx;
    inner_ctx ic = {.n = n, .outer = i, .worker = w};
    vw_pool_for(n->p, 16, inner_task, &ic);
}

Test(pool, nested_runs_go_inline) {
    nest *n = calloc(1, sizeof *n);
    for (unsigned t = 1; t <= 3; t++) {
        n->p = new_pool(t);
        memset(n->inner, 0, sizeof n->inner);
        vw_pool_for(n->p, 64, outer_task, n);
        for (size_t o = 0; o < 64; o++)
            for (size_t i = 0; i < 16; i++)
                cr_assert_eq(atomic_load(&n->inner[o][i]), 1, "outer %zu inner %zu", o, i);
        cr_assert_eq(atomic_load(&n->wrong_worker), 0);
        vw_pool_free(n->p);
    }
    free(n);
}

typedef struct caller_arg {
    vw_pool *p;
    counts *c;
    int ok;
} caller_arg;

static void *caller_main(void *arg) {
    caller_arg *a = arg;
    a->ok = 1;
    for (int rep = 0; rep < 200; rep++) {
        memset(a->c->hits, 0, sizeof a->c->hits);
        vw_pool_for(a->p, 333, count_task, a->c);
        for (size_t i = 0; i < 333; i++)
            if (atomic_load(&a->c->hits[i]) != 1)
                a->ok = 0;
    }
    return NULL;
}

Test(pool, two_callers_take_turns) {
    vw_pool *p = new_pool(3);
    counts *c1 = calloc(1, sizeof *c1), *c2 = calloc(1, sizeof *c2);
    c1->threads = c2->threads = 3;
    caller_arg a = {p, c1, 0}, b = {p, c2, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, caller_main, &a);
    pthread_create(&tb, NULL, caller_main, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_assert(a.ok && b.ok);
    cr_assert_eq(atomic_load(&c1->bad_worker) | atomic_load(&c2->bad_worker), 0);
    vw_pool_free(p);
    free(c1);
    free(c2);
}

static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Idle for 200 ms after a run, 7 pool threads cost (far) less than 20 ms of
 * CPU: they sleep after VW_POOL_SPIN_NS. Spinning threads would burn up to
 * 7 x 200 ms. */
Test(pool, an_idle_pool_sleeps) {
    vw_pool *p = new_pool(8);
    counts *c = calloc(1, sizeof *c);
    c->threads = 8;
    vw_pool_for(p, 100, count_task, c);
    sleep_ms((int)(VW_POOL_SPIN_NS / 1000000) + 5);
    double c0 = process_cpu_s();
    sleep_ms(200);
    double used = process_cpu_s() - c0;
    cr_expect(used < 0.02, "idle pool used %.1f ms of CPU in 200 ms", used * 1e3);
    vw_pool_free(p);
    free(c);
}

Test(pool, sizes_are_checked) {
    vw_pool *p = (vw_pool *)&p;
    vw_err err = {0};
    cr_assert_eq(vw_pool_new(0, &p, &err), VW_EINVAL);
    cr_assert_null(p);
    cr_assert_str_eq(err.type, "bad_threads");
    cr_assert_eq(vw_pool_new(VW_POOL_MAX_THREADS + 1, &p, &err), VW_EINVAL);
    vw_pool_free(NULL);
    for (int i = 0; i < 50; i++) { /* start and stop, idle */
        cr_assert_eq(vw_pool_new(4, &p, &err), VW_OK);
        vw_pool_free(p);
    }
}

Test(pool, cpu_count_is_within_the_affinity_mask) {
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    unsigned n = vw_cpu_count();
    cr_assert(n >= 1 && n <= (unsigned)CPU_COUNT(&set), "%u of %d", n, CPU_COUNT(&set));
}
