/* batcher.c — micro-batch closing rules (see batcher.h).
 * Owns held items and closed batches; never runs them. */
#include "batcher.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

struct vw_batcher {
    int64_t max_tokens, max_requests, max_wait_ms;
    vw_batch *open;    /* NULL when no item waits */
    vw_batch **closed; /* FIFO of closed batches */
    size_t n_closed, cap_closed;
};

vw_batcher *vw_batcher_new(int64_t max_tokens, int64_t max_requests, int64_t max_wait_ms) {
    if (max_tokens < 1 || max_requests < 1 || max_wait_ms < 0)
        return NULL;
    vw_batcher *b = calloc(1, sizeof *b);
    if (b) {
        b->max_tokens = max_tokens;
        b->max_requests = max_requests;
        b->max_wait_ms = max_wait_ms;
    }
    return b;
}

void vw_batch_free(vw_batch *batch, void (*free_item)(void *item)) {
    if (!batch)
        return;
    if (free_item)
        for (size_t i = 0; i < batch->n; i++)
            free_item(batch->items[i]);
    free(batch->items);
    free(batch->costs);
    free(batch);
}

void vw_batcher_free(vw_batcher *b, void (*free_item)(void *item)) {
    if (!b)
        return;
    for (size_t i = 0; i < b->n_closed; i++)
        vw_batch_free(b->closed[i], free_item);
    free(b->closed);
    vw_batch_free(b->open, free_item);
    free(b);
}

/* Moves the open batch to the closed FIFO. The slot was reserved beforehand
 * (reserve_closed), so closing cannot fail. */
static void close_open(vw_batcher *b, int64_t now_ms) {
    if (!b->open)
        return;
    b->open->closed_ms = now_ms;
    b->closed[b->n_closed++] = b->open;
    b->open = NULL;
}

static vw_status reserve_closed(vw_batcher *b, size_t extra, vw_err *err) {
    if (b->n_closed + extra <= b->cap_closed)
        return VW_OK;
    if (vw_reserve((void **)&b->closed, &b->cap_closed, b->n_closed + extra, sizeof *b->closed))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batcher queue");
    return VW_OK;
}

static vw_batch *batch_new(int64_t now_ms) {
    vw_batch *batch = calloc(1, sizeof *batch);
    if (batch)
        batch->opened_ms = now_ms;
    return batch;
}

/* Makes room for one more item (arrays double, starting at 16). */
static vw_status batch_room(vw_batch *batch, vw_err *err) {
    if (batch->n < batch->cap)
        return VW_OK;
    size_t c1 = batch->cap, c2 = batch->cap; /* items and costs share one capacity */
    if (vw_reserve((void **)&batch->items, &c1, batch->n + 1, sizeof *batch->items))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batch items");
    if (vw_reserve((void **)&batch->costs, &c2, batch->n + 1, sizeof *batch->costs))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batch costs");
    batch->cap = c1;
    return VW_OK;
}

vw_status vw_batcher_push(vw_batcher *b, void *item, int64_t tokens, int64_t now_ms, vw_err *err) {
    if (tokens < 0)
        return VW_FAIL(err, VW_EINVAL, "bad_cost", "negative token cost %lld", (long long)tokens);
    /* Up to two closes may follow (the open batch, then the new one when full). */
    vw_status st = reserve_closed(b, 2, err);
    if (st)
        return st;
    bool overflow = b->open && b->open->tokens + tokens > b->max_tokens;
    vw_batch *target = overflow || !b->open ? batch_new(now_ms) : b->open;
    if (!target)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "batch");
    if ((st = batch_room(target, err))) {
        if (target != b->open)
            vw_batch_free(target, NULL);
        return st;
    }
    if (target != b->open) {
        close_open(b, now_ms); /* (a): the item does not fit the open batch */
        b->open = target;
    }
    target->items[target->n] = item;
    target->costs[target->n++] = tokens;
    target->tokens += tokens;
    if (target->tokens >= b->max_tokens || (int64_t)target->n >= b->max_requests)
        close_open(b, now_ms); /* (b): full */
    return VW_OK;
}

bool vw_batcher_take(vw_batcher *b, int64_t now_ms, vw_batch **out) {
    *out = NULL;
    if (!b->n_closed && b->open && now_ms - b->open->opened_ms >= b->max_wait_ms &&
        reserve_closed(b, 1, NULL) == VW_OK)
        close_open(b, now_ms); /* (c): waited long enough */
    if (!b->n_closed)
        return false;
    *out = b->closed[0];
    memmove(b->closed, b->closed + 1, (b->n_closed - 1) * sizeof *b->closed);
    b->n_closed--;
    return true;
}

void vw_batcher_flush(vw_batcher *b, int64_t now_ms) {
    if (b->open && reserve_closed(b, 1, NULL) == VW_OK)
        close_open(b, now_ms);
}

int64_t vw_batcher_deadline(const vw_batcher *b) {
    if (b->n_closed)
        return 0;
    if (!b->open)
        return INT64_MAX;
    return b->open->opened_ms + b->max_wait_ms;
}

size_t vw_batcher_pending(const vw_batcher *b) {
    size_t n = b->open ? b->open->n : 0;
    for (size_t i = 0; i < b->n_closed; i++)
        n += b->closed[i]->n;
    return n;
}

size_t vw_batch_remove_if(vw_batch *batch, bool (*drop)(void *item, void *ctx), void *ctx,
                          void (*free_item)(void *item)) {
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < batch->n; i++) {
        if (drop(batch->items[i], ctx)) {
            batch->tokens -= batch->costs[i];
            if (free_item)
                free_item(batch->items[i]);
            dropped++;
            continue;
        }
        batch->items[kept] = batch->items[i];
        batch->costs[kept++] = batch->costs[i];
    }
    batch->n = kept;
    return dropped;
}

size_t vw_batcher_remove_if(vw_batcher *b, bool (*drop)(void *item, void *ctx), void *ctx,
                            void (*free_item)(void *item)) {
    size_t dropped = 0, kept = 0;
    for (size_t i = 0; i < b->n_closed; i++) {
        dropped += vw_batch_remove_if(b->closed[i], drop, ctx, free_item);
        if (b->closed[i]->n)
            b->closed[kept++] = b->closed[i];
        else
            vw_batch_free(b->closed[i], NULL);
    }
    b->n_closed = kept;
    if (b->open) {
        dropped += vw_batch_remove_if(b->open, drop, ctx, free_item);
        if (!b->open->n) {
            vw_batch_free(b->open, NULL);
            b->open = NULL;
        }
    }
    return dropped;
}
