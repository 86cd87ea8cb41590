/* test_queue.c — the bounded queue between threads (worker/queue.h): full,
 * empty, blocking pushes against a slow consumer, close. */
#include "queue.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

static void *item(intptr_t v) {
    return (void *)v;
}

static void *consumer(void *arg) {
    vw_queue *q = arg;
    intptr_t sum = 0;
    for (void *it; (it = vw_queue_pop(q));)
        sum += (intptr_t)it;
    return (void *)sum;
}

Test(queue, bounded_and_closable) {
    vw_queue *q = vw_queue_new(2);
    cr_assert(vw_queue_try_push(q, item(1)));
    cr_assert(vw_queue_try_push(q, item(2)));
    cr_assert_not(vw_queue_try_push(q, item(3)), "full");
    cr_assert_eq(vw_queue_len(q), 2);
    cr_assert_eq((intptr_t)vw_queue_try_pop(q), 1);
    cr_assert_eq((intptr_t)vw_queue_try_pop(q), 2);
    cr_assert_null(vw_queue_try_pop(q));
    pthread_t th;
    pthread_create(&th, NULL, consumer, q);
    intptr_t want = 0;
    for (intptr_t i = 1; i <= 10000; i++) {
        cr_assert(vw_queue_push(q, item(i))); /* blocks while the consumer lags */
        want += i;
    }
    vw_queue_close(q);
    void *sum;
    pthread_join(th, &sum);
    cr_assert_eq((intptr_t)sum, want);
    cr_assert_not(vw_queue_push(q, item(1)), "closed");
    vw_queue_free(q, NULL);
}
