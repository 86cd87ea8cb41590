/* test_batcher.c — micro-batch closing rules (token budget, request count,
 * max wait) at their boundaries. */
#include "batcher.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

static void *item(intptr_t v) {
    return (void *)v;
}

static void push(vw_batcher *b, intptr_t v, int64_t cost, int64_t now) {
    cr_assert_eq(vw_batcher_push(b, item(v), cost, now, NULL), VW_OK);
}

/* Takes a batch at now and checks its items are first..first+n-1. */
static void expect_batch(vw_batcher *b, int64_t now, intptr_t first, size_t n, int64_t tokens) {
    vw_batch *batch = NULL;
    cr_assert(vw_batcher_take(b, now, &batch), "expected a batch of %zu", n);
    cr_assert_eq(batch->n, n, "batch size %zu, want %zu", batch->n, n);
    cr_assert_eq(batch->tokens, tokens);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq((intptr_t)batch->items[i], first + (intptr_t)i);
    vw_batch_free(batch, NULL);
}

static void expect_none(vw_batcher *b, int64_t now) {
    vw_batch *batch = (vw_batch *)1;
    cr_assert_not(vw_batcher_take(b, now, &batch));
    cr_assert_null(batch);
}

Test(batcher, empty) {
    vw_batcher *b = vw_batcher_new(10, 4, 5);
    expect_none(b, 0);
    expect_none(b, 1000000);
    vw_batcher_flush(b, 0);
    expect_none(b, 0);
    cr_assert_eq(vw_batcher_deadline(b), INT64_MAX);
    cr_assert_eq(vw_batcher_pending(b), 0);
    vw_batcher_free(b, NULL);
    cr_assert_null(vw_batcher_new(0, 1, 0));
    cr_assert_null(vw_batcher_new(1, 0, 0));
    cr_assert_null(vw_batcher_new(1, 1, -1));
}

Test(batcher, closes_on_token_budget) {
    vw_batcher *b = vw_batcher_new(10, 100, 1000);
    push(b, 1, 4, 0);
    push(b, 2, 4, 0);
    expect_none(b, 1);
    push(b, 3, 4, 2); /* 12 > 10: [1,2] closes, 3 opens the next batch */
    expect_batch(b, 2, 1, 2, 8);
    expect_none(b, 2);
    cr_assert_eq(vw_batcher_pending(b), 1);
    vw_batcher_flush(b, 3);
    expect_batch(b, 3, 3, 1, 4);
    vw_batcher_free(b, NULL);
}

Test(batcher, exactly_at_budget_closes) {
    vw_batcher *b = vw_batcher_new(10, 100, 1000);
    push(b, 1, 6, 0);
    push(b, 2, 4, 0); /* 10 == budget: full */
    cr_assert_eq(vw_batcher_deadline(b), 0, "a closed batch is due now");
    expect_batch(b, 0, 1, 2, 10);
    vw_batcher_free(b, NULL);
}

Test(batcher, one_over_budget_starts_next) {
    vw_batcher *b = vw_batcher_new(10, 100, 1000);
    push(b, 1, 6, 0);
    push(b, 2, 5, 0); /* 11 > 10 */
    expect_batch(b, 0, 1, 1, 6);
    expect_none(b, 0);
    expect_batch(b, 1000, 2, 1, 5);
    vw_batcher_free(b, NULL);
}

Test(batcher, oversized_item_runs_alone) {
    vw_batcher *b = vw_batcher_new(10, 100, 1000);
    push(b, 1, 3, 0);
    push(b, 2, 25, 0);
    push(b, 3, 1, 0);
    expect_batch(b, 0, 1, 1, 3);
    expect_batch(b, 0, 2, 1, 25);
    expect_none(b, 0);
    vw_batcher_free(b, NULL);
}

Test(batcher, closes_on_request_count) {
    vw_batcher *b = vw_batcher_new(1000, 3, 1000);
    for (intptr_t i = 1; i <= 7; i++)
        push(b, i, 1, 0);
    expect_batch(b, 0, 1, 3, 3);
    expect_batch(b, 0, 4, 3, 3);
    expect_none(b, 0);
    cr_assert_eq(vw_batcher_pending(b), 1);
    vw_batcher_free(b, NULL);
}

Test(batcher, closes_on_max_wait) {
    vw_batcher *b = vw_batcher_new(1000, 100, 5);
    push(b, 1, 1, 100);
    push(b, 2, 1, 103);
    cr_assert_eq(vw_batcher_deadline(b), 105, "wait counts from the first item");
    expect_none(b, 104);
    expect_batch(b, 105, 1, 2, 2);
    vw_batcher_free(b, NULL);
}

Test(batcher, batch_of_one) {
    vw_batcher *b = vw_batcher_new(1000, 100, 5);
    push(b, 1, 7, 0);
    expect_none(b, 4);
    expect_batch(b, 5, 1, 1, 7);
    vw_batcher *one = vw_batcher_new(1000, 1, 1000);
    push(one, 9, 1, 0);
    expect_batch(one, 0, 9, 1, 1);
    vw_batcher_free(one, NULL);
    vw_batcher_free(b, NULL);
}

Test(batcher, zero_wait_and_zero_cost) {
    vw_batcher *b = vw_batcher_new(10, 100, 0);
    push(b, 1, 0, 50);
    push(b, 2, 0, 50);
    expect_batch(b, 50, 1, 2, 0);
    vw_batcher_free(b, NULL);
    vw_batcher *c = vw_batcher_new(10, 100, 0);
    cr_assert_eq(vw_batcher_push(c, item(1), -1, 0, NULL), VW_EINVAL);
    vw_batcher_free(c, NULL);
}

Test(batcher, large_batches_grow) {
    vw_batcher *b = vw_batcher_new(100000, 1000, 1000);
    for (intptr_t i = 1; i <= 1000; i++)
        push(b, i, 1, 0);
    expect_batch(b, 0, 1, 1000, 1000);
    vw_batcher_free(b, NULL);
}

static bool is_odd(void *it, void *ctx) {
    (void)ctx;
    return ((intptr_t)it & 1) != 0;
}

Test(batcher, remove_if) {
    vw_batcher *b = vw_batcher_new(1000, 2, 1000);
    for (intptr_t i = 1; i <= 5; i++)
        push(b, i, 10, 0);
    cr_assert_eq(vw_batcher_remove_if(b, is_odd, NULL, NULL), 3);
    cr_assert_eq(vw_batcher_pending(b), 2);
    vw_batch *batch;
    cr_assert(vw_batcher_take(b, 0, &batch));
    cr_assert_eq(batch->n, 1);
    cr_assert_eq((intptr_t)batch->items[0], 2);
    cr_assert_eq(batch->tokens, 10);
    vw_batch_free(batch, NULL);
    cr_assert(vw_batcher_take(b, 0, &batch));
    cr_assert_eq((intptr_t)batch->items[0], 4);
    vw_batch_free(batch, NULL);
    expect_none(b, 5000);
    vw_batcher_free(b, NULL);
}

static int frees;
static void count_free(void *p) {
    frees++;
    free(p);
}

Test(batcher, free_releases_items) {
    frees = 0;
    vw_batcher *b = vw_batcher_new(10, 2, 1000);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(vw_batcher_push(b, malloc(4), 1, 0, NULL), VW_OK);
    vw_batcher_free(b, count_free);
    cr_assert_eq(frees, 5);
}
