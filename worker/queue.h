/* queue.h — a bounded FIFO of pointers with a mutex and condition variables,
 * where the worker's threads hand work on: the admission lane (to_admit,
 * from_admit) and the flights (to_exec, to_finish, from_exec; flow.c).
 *
 * Ownership: the queue never owns or frees what it carries, except through
 * vw_queue_free's callback. Thread-safety: any thread may call any function
 * but vw_queue_free (the owner's, once no other thread uses the queue).
 * Errors: vw_queue_new returns NULL when out of memory or for capacity 0.
 */
#ifndef VW_QUEUE_H
#define VW_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct vw_queue vw_queue;

vw_queue *vw_queue_new(size_t capacity);
/* free_item (may be NULL) is applied to anything still queued. */
void vw_queue_free(vw_queue *q, void (*free_item)(void *item));

/* Blocks while full; false when the queue is closed (the item stays the caller's). */
bool vw_queue_push(vw_queue *q, void *item);
/* Never blocks; false when full or closed. */
bool vw_queue_try_push(vw_queue *q, void *item);
/* Blocks until an item arrives (returns it) or the queue is closed and empty (NULL). */
void *vw_queue_pop(vw_queue *q);
/* Never blocks; NULL when empty. */
void *vw_queue_try_pop(vw_queue *q);
size_t vw_queue_len(vw_queue *q);
/* Wakes every waiter; later pushes fail, pops drain what is left. */
void vw_queue_close(vw_queue *q);

#endif
