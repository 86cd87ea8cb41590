/* test_offsets.c — the per-partition delivery order and commit tracker:
 * out-of-order results and acks, offset gaps, commit retry, revoke and epochs,
 * and the replay-by-timestamp search behind its seam. */
#include "offsets.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static int freed;
static void count_free(void *r) {
    freed++;
    free(r);
}

static int *res(int v) {
    int *p = malloc(sizeof *p);
    *p = v;
    return p;
}

/* Marks offset READY with a result holding the offset itself. */
static void ready(vw_offsets *t, int32_t part, uint32_t ep, int64_t off) {
    vw_err err = {0};
    cr_assert_eq(vw_offsets_set_result(t, "in", part, ep, off, res((int)off), &err), VW_OK, "%s",
                 err.msg);
}

static int64_t take(vw_offsets *t) {
    vw_offset_pos pos;
    if (!vw_offsets_next_ready(t, &pos))
        return -1;
    cr_assert_eq(*(int *)pos.result, (int)pos.offset);
    free(pos.result);
    return pos.offset;
}

static void ack(vw_offsets *t, int32_t part, uint32_t ep, int64_t off) {
    vw_err err = {0};
    cr_assert_eq(vw_offsets_ack(t, "in", part, ep, off, &err), VW_OK, "%s", err.msg);
}

static vw_offsets *setup(uint32_t *ep, int64_t first, int64_t n) {
    vw_offsets *t = vw_offsets_new(count_free);
    cr_assert_eq(vw_offsets_assign(t, "in", 0, ep, NULL), VW_OK);
    for (int64_t o = first; o < first + n; o++)
        cr_assert_eq(vw_offsets_track(t, "in", 0, o, NULL), VW_OK);
    return t;
}

Test(offsets, in_order) {
    uint32_t ep;
    vw_offsets *t = setup(&ep, 0, 5);
    cr_assert_eq(vw_offsets_position(t, "in", 0), -1);
    for (int64_t o = 0; o < 5; o++)
        ready(t, 0, ep, o);
    for (int64_t o = 0; o < 5; o++)
        cr_assert_eq(take(t), o);
    cr_assert_eq(take(t), -1);
    for (int64_t o = 0; o < 5; o++)
        ack(t, 0, ep, o);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 5, "commit offset is the next offset");
    cr_assert_eq(vw_offsets_in_flight(t, NULL, 0), 0);
    vw_offsets_free(t);
}

Test(offsets, results_out_of_order_are_produced_in_order) {
    uint32_t ep;
    vw_offsets *t = setup(&ep, 0, 4);
    ready(t, 0, ep, 2);
    ready(t, 0, ep, 3);
    cr_assert_eq(take(t), -1, "offset 0 is not ready: nothing may go out");
    ready(t, 0, ep, 0);
    cr_assert_eq(take(t), 0);
    cr_assert_eq(take(t), -1, "offset 1 still pending");
    ready(t, 0, ep, 1);
    cr_assert_eq(take(t), 1);
    cr_assert_eq(take(t), 2);
    cr_assert_eq(take(t), 3);
    vw_offsets_free(t);
}

Test(offsets, acks_out_of_order) {
    uint32_t ep;
    vw_offsets *t = setup(&ep, 100, 4);
    for (int64_t o = 100; o < 104; o++) {
        ready(t, 0, ep, o);
        cr_assert_eq(take(t), o);
    }
    cr_assert_eq(vw_offsets_unacked(t, "in", 0), 4);
    ack(t, 0, ep, 102);
    ack(t, 0, ep, 103);
    cr_assert_eq(vw_offsets_unacked(t, "in", 0), 2);
    cr_assert_eq(vw_offsets_position(t, "in", 0), -1, "100 not acked: nothing to commit");
    ack(t, 0, ep, 100);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 101);
    cr_assert_eq(vw_offsets_in_flight(t, "in", 0), 1);
    ack(t, 0, ep, 101);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 104);
    cr_assert_eq(vw_offsets_ack(t, "in", 0, ep, 101, NULL), VW_EINVAL, "double ack refused");
    vw_offsets_free(t);
}

/* What a revoke waits for: a READY record behind a PENDING one (whose item a
 * revoke dropped) can never go out, so it is not counted; PRODUCING ones are. */
Test(offsets, unacked_stops_at_a_pending_record) {
    uint32_t ep;
    vw_offsets *t = setup(&ep, 0, 5);
    ready(t, 0, ep, 0);
    cr_assert_eq(take(t), 0); /* 0 PRODUCING */
    ready(t, 0, ep, 1);       /* 1 READY, can go out */
    ready(t, 0, ep, 3);       /* 2 PENDING, 3 READY behind it */
    ready(t, 0, ep, 4);       /* 4 READY behind it */
    cr_assert_eq(vw_offsets_unacked(t, "in", 0), 2, "0 and 1; not 3 and 4");
    cr_assert_eq(take(t), 1);
    ack(t, 0, ep, 0);
    ack(t, 0, ep, 1);
    cr_assert_eq(vw_offsets_unacked(t, "in", 0), 0, "only work behind the pending 2 is left");
    ready(t, 0, ep, 2);
    cr_assert_eq(vw_offsets_unacked(t, "in", 0), 3);
    vw_offsets_free(t);
}

Test(offsets, gaps_in_offsets) {
    /* Compacted topics and transaction markers leave holes in the offsets. */
    uint32_t ep;
    vw_offsets *t = vw_offsets_new(count_free);
    vw_offsets_assign(t, "in", 0, &ep, NULL);
    int64_t offs[] = {10, 11, 15, 20};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(vw_offsets_track(t, "in", 0, offs[i], NULL), VW_OK);
        ready(t, 0, ep, offs[i]);
        cr_assert_eq(take(t), offs[i]);
    }
    ack(t, 0, ep, 15);
    ack(t, 0, ep, 10);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 11);
    ack(t, 0, ep, 11);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 16);
    ack(t, 0, ep, 20);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 21, "last partition offset + 1");
    cr_assert_eq(vw_offsets_track(t, "in", 0, 20, NULL), VW_EINVAL, "offsets must increase");
    cr_assert_eq(vw_offsets_set_result(t, "in", 0, ep, 12, NULL, NULL), VW_EINVAL, "untracked");
    vw_offsets_free(t);
}

/* exactly_once's positions: as if every record handed out were acknowledged
 * (a READY record not yet handed out, or one behind a PENDING one, is not). */
Test(offsets, produced_positions_count_records_in_delivery) {
    uint32_t ep;
    vw_offsets *t = vw_offsets_new(count_free);
    vw_offsets_assign(t, "in", 0, &ep, NULL);
    vw_offset_pos c[2];
    for (int64_t o = 10; o < 14; o++)
        vw_offsets_track(t, "in", 0, o, NULL);
    ready(t, 0, ep, 10);
    ready(t, 0, ep, 11);
    ready(t, 0, ep, 13); /* 12 still pending */
    cr_assert_eq(vw_offsets_commits_produced(t, c, 2), 0, "nothing handed out yet");
    cr_assert_eq(take(t), 10);
    cr_assert_eq(take(t), 11);
    cr_assert_eq(vw_offsets_commits(t, c, 2), 0, "none acknowledged");
    cr_assert_eq(vw_offsets_commits_produced(t, c, 2), 1);
    cr_assert_eq(c[0].offset, 12, "10 and 11 in delivery; 13 waits behind 12");
    ack(t, 0, ep, 10);
    cr_assert_eq(vw_offsets_commits_produced(t, c, 2), 1);
    cr_assert_eq(c[0].offset, 12);
    vw_offsets_committed(t, "in", 0, 12);
    cr_assert_eq(vw_offsets_commits_produced(t, c, 2), 0, "confirmed");
    vw_offsets_free(t);
}

Test(offsets, commits_are_retried_until_confirmed) {
    uint32_t ep0, ep1;
    vw_offsets *t = vw_offsets_new(count_free);
    vw_offsets_assign(t, "in", 0, &ep0, NULL);
    vw_offsets_assign(t, "in", 1, &ep1, NULL);
    vw_offset_pos c[4];
    cr_assert_eq(vw_offsets_commits(t, c, 4), 0);
    vw_offsets_track(t, "in", 1, 7, NULL);
    ready(t, 1, ep1, 7);
    cr_assert_eq(take(t), 7);
    ack(t, 1, ep1, 7);
    cr_assert_eq(vw_offsets_commits(t, c, 4), 1);
    cr_assert_eq(c[0].partition, 1);
    cr_assert_eq(c[0].offset, 8);
    cr_assert_str_eq(c[0].topic, "in");
    /* The commit failed (no vw_offsets_committed): still pending next time. */
    cr_assert_eq(vw_offsets_commits(t, c, 4), 1);
    vw_offsets_committed(t, "in", 1, 8);
    cr_assert_eq(vw_offsets_commits(t, c, 4), 0);
    vw_offsets_committed(t, "in", 1, 5); /* a late, older confirmation changes nothing */
    cr_assert_eq(vw_offsets_commits(t, c, 4), 0);
    cr_assert_eq(vw_offsets_count(t), 2);
    vw_offsets_free(t);
}

Test(offsets, revoke_drops_work_and_fences_old_epoch) {
    uint32_t ep, ep2;
    freed = 0;
    vw_offsets *t = setup(&ep, 0, 3);
    ready(t, 0, ep, 0);
    cr_assert_eq(take(t), 0);
    ack(t, 0, ep, 0);
    ready(t, 0, ep, 2); /* held READY: freed by revoke */
    int64_t pos = 0;
    cr_assert_eq(vw_offsets_revoke(t, "in", 0, &pos, NULL), VW_OK);
    cr_assert_eq(pos, 1, "commit only what was delivered");
    cr_assert_eq(freed, 1);
    cr_assert_eq(vw_offsets_revoke(t, "in", 0, NULL, NULL), VW_EINVAL);
    cr_assert_not(vw_offsets_is_assigned(t, "in", 0, NULL));
    /* Assigned again: offsets restart from the committed position. */
    cr_assert_eq(vw_offsets_assign(t, "in", 0, &ep2, NULL), VW_OK);
    cr_assert_neq(ep, ep2);
    cr_assert_eq(vw_offsets_track(t, "in", 0, 1, NULL), VW_OK);
    vw_err err = {0};
    int *late = res(1);
    cr_assert_eq(vw_offsets_set_result(t, "in", 0, ep, 1, late, &err), VW_EINVAL);
    cr_assert_str_eq(err.type, "stale_epoch");
    free(late);
    ready(t, 0, ep2, 1);
    cr_assert_eq(take(t), 1);
    cr_assert_eq(vw_offsets_ack(t, "in", 0, ep, 1, NULL), VW_EINVAL, "stale ack refused");
    ack(t, 0, ep2, 1);
    cr_assert_eq(vw_offsets_position(t, "in", 0), 2);
    vw_offsets_free(t);
}

Test(offsets, free_releases_held_results) {
    uint32_t ep;
    freed = 0;
    vw_offsets *t = setup(&ep, 0, 3);
    ready(t, 0, ep, 1);
    ready(t, 0, ep, 2);
    vw_offsets_free(t);
    cr_assert_eq(freed, 2);
    vw_offsets_free(NULL);
}

Test(offsets, partitions_are_independent) {
    uint32_t ep[3];
    vw_offsets *t = vw_offsets_new(count_free);
    for (int p = 0; p < 3; p++) {
        vw_offsets_assign(t, "in", p, &ep[p], NULL);
        vw_offsets_track(t, "in", p, 0, NULL);
        vw_offsets_track(t, "in", p, 1, NULL);
    }
    ready(t, 1, ep[1], 0);
    ready(t, 2, ep[2], 1); /* blocked behind offset 0 of partition 2 */
    vw_offset_pos pos;
    cr_assert(vw_offsets_next_ready(t, &pos));
    cr_assert_eq(pos.partition, 1);
    free(pos.result);
    cr_assert_not(vw_offsets_next_ready(t, &pos));
    cr_assert_eq(vw_offsets_in_flight(t, NULL, 0), 6);
    cr_assert_eq(vw_offsets_in_flight(t, "in", 2), 2);
    cr_assert_eq(vw_offsets_track(t, "in", 9, 0, NULL), VW_EINVAL, "unassigned partition");
    vw_offsets_free(t);
}

Test(offsets, long_run_compacts) {
    uint32_t ep;
    vw_offsets *t = vw_offsets_new(count_free);
    vw_offsets_assign(t, "in", 0, &ep, NULL);
    /* A sliding window of 50 records over 20000 offsets, acked with lag. */
    for (int64_t o = 0; o < 20000; o++) {
        cr_assert_eq(vw_offsets_track(t, "in", 0, o, NULL), VW_OK);
        ready(t, 0, ep, o);
        cr_assert_eq(take(t), o);
        if (o >= 50)
            ack(t, 0, ep, o - 50);
    }
    cr_assert_eq(vw_offsets_position(t, "in", 0), 19950);
    cr_assert_eq(vw_offsets_in_flight(t, NULL, 0), 50);
    vw_offsets_free(t);
}

/* A fake partition for the timestamp search: records at offs[] with ts[]. */
typedef struct fake {
    const int64_t *offs, *ts;
    size_t n;
    int calls, fail_at;
} fake;

static int fake_first(void *ctx, int64_t from, int64_t hi, int64_t *off, int64_t *ts) {
    fake *f = ctx;
    if (++f->calls == f->fail_at)
        return -1;
    for (size_t i = 0; i < f->n; i++)
        if (f->offs[i] >= from && f->offs[i] < hi) {
            *off = f->offs[i];
            *ts = f->ts[i];
            return 1;
        }
    return 0;
}

Test(offsets, find_time_by_record_timestamps) {
    static const int64_t offs[] = {3, 4, 5, 9, 10, 11, 12, 20};
    static const int64_t ts[] = {100, 100, 150, 150, 150, 300, 400, 900};
    fake f = {offs, ts, 8, 0, 0};
    int64_t out;
    struct {
        int64_t ts, want;
    } cases[] = {{0, 3},    {100, 3},  {101, 5},  {150, 5}, {151, 11},
                 {300, 11}, {301, 12}, {900, 20}, {901, 21}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(vw_offsets_find_time(3, 21, cases[i].ts, fake_first, &f, &out, NULL), VW_OK);
        cr_assert_eq(out, cases[i].want, "ts %lld: got %lld want %lld", (long long)cases[i].ts,
                     (long long)out, (long long)cases[i].want);
    }
    /* Sub-range: only [5, 11) is searched. */
    cr_assert_eq(vw_offsets_find_time(5, 11, 200, fake_first, &f, &out, NULL), VW_OK);
    cr_assert_eq(out, 11, "nothing qualifies inside the range: hi");
    /* Empty range. */
    cr_assert_eq(vw_offsets_find_time(7, 7, 0, fake_first, &f, &out, NULL), VW_OK);
    cr_assert_eq(out, 7);
    /* A read error surfaces. */
    fake bad = {offs, ts, 8, 0, 1};
    vw_err err = {0};
    cr_assert_eq(vw_offsets_find_time(3, 21, 150, fake_first, &bad, &out, &err), VW_EKAFKA);
    /* Logarithmic: 1000 records need about log2(1000) reads. */
    static int64_t big_offs[1000], big_ts[1000];
    for (int i = 0; i < 1000; i++) {
        big_offs[i] = i;
        big_ts[i] = 1000 + i * 10;
    }
    fake big = {big_offs, big_ts, 1000, 0, 0};
    cr_assert_eq(vw_offsets_find_time(0, 1000, 5555, fake_first, &big, &out, NULL), VW_OK);
    cr_assert_eq(out, 456);
    cr_assert_leq(big.calls, 11);
}
