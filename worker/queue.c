/* queue.c — the bounded FIFO of pointers between threads (see queue.h). Owns
 * its ring; never looks at what it carries. */
#include "queue.h"

#include <pthread.h>
#include <stdlib.h>

struct vw_queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    void **ring;
    size_t cap, head, len;
    bool closed;
};

vw_queue *vw_queue_new(size_t capacity) {
    vw_queue *q = calloc(1, sizeof *q);
    if (!q || !capacity)
        goto fail;
    q->ring = calloc(capacity, sizeof *q->ring);
    if (!q->ring)
        goto fail;
    q->cap = capacity;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return q;
fail:
    free(q);
    return NULL;
}

void vw_queue_free(vw_queue *q, void (*free_item)(void *item)) {
    if (!q)
        return;
    for (size_t i = 0; i < q->len && free_item; i++)
        free_item(q->ring[(q->head + i) % q->cap]);
    pthread_cond_destroy(&q->not_full);
    pthread_cond_destroy(&q->not_empty);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
}

static bool push_locked(vw_queue *q, void *item, bool wait) {
    while (wait && !q->closed && q->len == q->cap)
        pthread_cond_wait(&q->not_full, &q->mu);
    if (q->closed || q->len == q->cap)
        return false;
    q->ring[(q->head + q->len++) % q->cap] = item;
    pthread_cond_signal(&q->not_empty);
    return true;
}

/* [thread: any] */
bool vw_queue_push(vw_queue *q, void *item) {
    pthread_mutex_lock(&q->mu);
    bool ok = push_locked(q, item, true);
    pthread_mutex_unlock(&q->mu);
    return ok;
}

/* [thread: any] */
bool vw_queue_try_push(vw_queue *q, void *item) {
    pthread_mutex_lock(&q->mu);
    bool ok = push_locked(q, item, false);
    pthread_mutex_unlock(&q->mu);
    return ok;
}

static void *pop_locked(vw_queue *q, bool wait) {
    while (wait && !q->closed && q->len == 0)
        pthread_cond_wait(&q->not_empty, &q->mu);
    if (q->len == 0)
        return NULL;
    void *item = q->ring[q->head];
    q->head = (q->head + 1) % q->cap;
    q->len--;
    pthread_cond_signal(&q->not_full);
    return item;
}

/* [thread: any] */
void *vw_queue_pop(vw_queue *q) {
    pthread_mutex_lock(&q->mu);
    void *item = pop_locked(q, true);
    pthread_mutex_unlock(&q->mu);
    return item;
}

/* [thread: any] */
void *vw_queue_try_pop(vw_queue *q) {
    pthread_mutex_lock(&q->mu);
    void *item = pop_locked(q, false);
    pthread_mutex_unlock(&q->mu);
    return item;
}

/* [thread: any] */
size_t vw_queue_len(vw_queue *q) {
    pthread_mutex_lock(&q->mu);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* [thread: any] */
void vw_queue_close(vw_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = true;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}
