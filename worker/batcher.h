/* batcher.h — micro-batches.
 *
 * The batcher groups admitted items into batches for the executor. A batch
 * closes when (a) the next item would take it over the token budget (the item
 * opens the next batch), (b) it reaches the budget exactly or holds max_requests
 * items, or (c) max_wait_ms passed since its first item. One item larger than
 * the whole budget forms a batch of its own (an item is never split).
 * Time is passed in by the caller (milliseconds, any monotonic origin), so the
 * rules are testable without sleeping.
 *
 * Ownership: items are opaque and owned by the batcher until handed out in a
 * batch; a vw_batch and its item array belong to whoever took it (vw_batch_free,
 * which calls free_item on each remaining item when given one).
 * Thread-safety: a batcher belongs to one thread.
 * Errors: VW_ENOMEM (the batcher is unchanged), VW_EINVAL for a negative cost.
 */
#ifndef VW_BATCHER_H
#define VW_BATCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_batch {
    void **items; /* [n] in arrival order */
    int64_t *costs;
    size_t n;
    int64_t tokens;    /* sum of the items' costs */
    int64_t opened_ms; /* arrival time of the first item */
    int64_t closed_ms; /* time the batch closed */
    size_t cap;        /* allocated length of items/costs (batcher-internal) */
} vw_batch;

typedef struct vw_batcher vw_batcher;

/* max_tokens, max_requests >= 1; max_wait_ms >= 0 (0: close at the next take). */
vw_batcher *vw_batcher_new(int64_t max_tokens, int64_t max_requests, int64_t max_wait_ms);
void vw_batcher_free(vw_batcher *b, void (*free_item)(void *item));

/* Adds an item costing `tokens` at time now_ms (closes batches per the rules). */
vw_status vw_batcher_push(vw_batcher *b, void *item, int64_t tokens, int64_t now_ms, vw_err *err);

/* Hands out the oldest closed batch, closing the open one first if its wait is
 * over at now_ms. False (and *out NULL) when no batch is due. */
bool vw_batcher_take(vw_batcher *b, int64_t now_ms, vw_batch **out);

/* Closes the open batch now (shutdown, drain); a no-op when it is empty. */
void vw_batcher_flush(vw_batcher *b, int64_t now_ms);

/* When the open batch's wait ends (ms), now_ms-independent; INT64_MAX when no
 * batch is open. A closed batch waiting to be taken makes it 0. */
int64_t vw_batcher_deadline(const vw_batcher *b);

/* Items held (open and closed batches). */
size_t vw_batcher_pending(const vw_batcher *b);

/* Drops every held item for which drop(item, ctx) is true, freeing it with
 * free_item (may be NULL); returns how many. Empty closed batches disappear. */
size_t vw_batcher_remove_if(vw_batcher *b, bool (*drop)(void *item, void *ctx), void *ctx,
                            void (*free_item)(void *item));

/* Drops the items of one batch for which drop(item, ctx) is true (freed with
 * free_item when given), keeping order and the token count; returns how many. */
size_t vw_batch_remove_if(vw_batch *batch, bool (*drop)(void *item, void *ctx), void *ctx,
                          void (*free_item)(void *item));

/* NULL is a no-op. free_item may be NULL (items then stay with their owner). */
void vw_batch_free(vw_batch *batch, void (*free_item)(void *item));

#endif
