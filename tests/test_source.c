/* test_source.c — the source on its own (worker/source.h) against an
 * in-process mock cluster, its hooks played by the test: consumed records
 * reach the record hook in partition order; intake stops at `room` and at
 * limits.max_in_flight in the ledger and resumes once records are
 * acknowledged; a revoke (the close) runs drop and settle before it commits
 * what the ledger allows; replay assigns ranges without a group; a compressed
 * batch librdkafka cannot hand over reaches the unreadable hook offset by
 * offset and the partition moves on. No loop, flow or sink. */
#include "source.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bombs.h"
#include "kafka_harness.h"
#include "unit_kafka.h"

#define TOPICS "requests:2,results:2,requests.dlq:1"
enum { MAX_SEEN = 256 };

typedef struct fixture {
    vw_unit_env e;
    vw_source *src;
    size_t room; /* what the test's loop can still admit */
    /* what the hooks saw */
    int32_t part[MAX_SEEN];
    int64_t off[MAX_SEEN];
    rd_kafka_resp_err_t bad[MAX_SEEN]; /* the unreadable hook's error, 0: a record */
    size_t n_seen;
    int drops[2];
    int settles;
    int64_t settle_deadline;
    size_t settle_parts;
    size_t want; /* until: records seen */
} fixture;

static void on_record(void *ctx, const rd_kafka_message_t *m) {
    fixture *f = ctx;
    cr_assert_lt(f->n_seen, (size_t)MAX_SEEN);
    cr_assert_eq(vw_offsets_track(f->e.ledger, "requests", m->partition, m->offset, NULL), VW_OK,
                 "records come in offset order of assigned partitions");
    f->part[f->n_seen] = m->partition;
    f->off[f->n_seen++] = m->offset;
    f->room--;
}

static void on_unreadable(void *ctx, int32_t partition, int64_t offset, rd_kafka_resp_err_t e,
                          const char *reason) {
    fixture *f = ctx;
    cr_assert_lt(f->n_seen, (size_t)MAX_SEEN);
    cr_assert_eq(vw_offsets_track(f->e.ledger, "requests", partition, offset, NULL), VW_OK,
                 "unreadable offsets come in order too");
    cr_assert(reason && *reason);
    f->part[f->n_seen] = partition;
    f->bad[f->n_seen] = e;
    f->off[f->n_seen++] = offset;
}

static void on_drop(void *ctx, int32_t partition) {
    fixture *f = ctx;
    cr_assert(partition == 0 || partition == 1);
    f->drops[partition]++;
}

static void on_settle(void *ctx, const rd_kafka_topic_partition_list_t *parts,
                      int64_t deadline_ms) {
    fixture *f = ctx;
    f->settles++;
    f->settle_parts += (size_t)parts->cnt;
    f->settle_deadline = deadline_ms;
}

static void setup(fixture *f, const char *group, const char *extra, bool replay) {
    memset(f, 0, sizeof *f);
    vw_unit_env_init(&f->e, TOPICS, group, extra, NULL, NULL);
    vw_err err = {0};
    f->room = 1000;
    vw_source_opts o = {.cfg = f->e.cfg,
                        .log = &f->e.log,
                        .metrics = f->e.metrics,
                        .ledger = f->e.ledger,
                        .fault = &f->e.fault,
                        .crash = &f->e.crash,
                        .topic = "requests",
                        .replay = replay,
                        .wake_fd = -1,
                        .hooks = {f, on_record, on_unreadable, on_drop, on_settle, NULL}};
    cr_assert_eq(vw_source_open(&o, &f->src, &err), VW_OK, "%s", err.msg);
}

static void teardown(fixture *f) {
    vw_source_free(f->src);
    vw_unit_env_free(&f->e);
}

/* n records with values "v<i>", i % 2 to partition i % 2. */
static void produce(fixture *f, size_t first, size_t n) {
    vw_kh_msg *m = calloc(n, sizeof *m);
    char(*v)[32] = calloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        snprintf(v[i], sizeof v[i], "v%zu", first + i);
        m[i] = (vw_kh_msg){.partition = (int32_t)((first + i) % 2), .value = v[i]};
    }
    cr_assert_eq(vw_kh_produce(vw_broker_bootstraps(f->e.b), "requests", m, n, NULL, NULL), 0);
    free(m);
    free(v);
}

static bool seen_enough(void *ctx) {
    fixture *f = ctx;
    return f->n_seen >= f->want;
}
static void step(void *ctx) {
    fixture *f = ctx;
    vw_source_poll(f->src, f->room);
    vw_kh_sleep_ms(5);
}

/* Acknowledges every record seen so far, as the flow and the sink would. */
static void ack_all(fixture *f) {
    for (size_t i = 0; i < f->n_seen; i++) {
        uint32_t epoch = 0;
        cr_assert(vw_offsets_is_assigned(f->e.ledger, "requests", f->part[i], &epoch));
        vw_offsets_set_result(f->e.ledger, "requests", f->part[i], epoch, f->off[i], &f->part[i],
                              NULL);
    }
    vw_offset_pos pos;
    while (vw_offsets_next_ready(f->e.ledger, &pos))
        cr_assert_eq(
            vw_offsets_ack(f->e.ledger, pos.topic, pos.partition, pos.epoch, pos.offset, NULL),
            VW_OK);
}

Test(source, records_reach_the_hook_in_partition_order_and_commit) {
    fixture f;
    setup(&f, "unit-source", NULL, false);
    produce(&f, 0, 20);
    f.want = 20;
    cr_assert(vw_unit_until(seen_enough, step, &f, 30000), "seen %zu of 20", f.n_seen);
    int64_t next[2] = {0, 0};
    for (size_t i = 0; i < f.n_seen; i++) {
        cr_assert_eq(f.off[i], next[f.part[i]], "partition %d in order", f.part[i]);
        next[f.part[i]]++;
    }
    cr_assert_eq(next[0], 10);
    cr_assert_eq(next[1], 10);
    ack_all(&f);
    vw_source_commit(f.src, true);
    int64_t committed[2];
    cr_assert_eq(
        vw_kh_committed(vw_broker_bootstraps(f.e.b), "unit-source", "requests", 2, committed), 0);
    cr_assert_eq(committed[0], 10);
    cr_assert_eq(committed[1], 10);
    cr_assert_not(vw_fault_raised(&f.e.fault));
    teardown(&f);
}

/* Intake takes at most `room` records, and none while max_in_flight records
 * are unacknowledged in the ledger; acknowledging them lets it go on. */
Test(source, intake_stops_at_room_and_at_max_in_flight) {
    fixture f;
    setup(&f, "unit-backpressure", "limits: {max_in_flight: 6}\n", false);
    produce(&f, 0, 16);
    f.room = 2;
    f.want = 2;
    cr_assert(vw_unit_until(seen_enough, step, &f, 30000));
    for (int i = 0; i < 20; i++)
        step(&f);
    cr_assert_eq(f.n_seen, 2, "room 0: nothing more taken");
    f.room = 100;
    f.want = 6;
    cr_assert(vw_unit_until(seen_enough, step, &f, 10000));
    for (int i = 0; i < 20; i++)
        step(&f);
    cr_assert_eq(f.n_seen, 6, "max_in_flight 6 unacknowledged: nothing more taken");
    ack_all(&f);
    f.want = 12;
    cr_assert(vw_unit_until(seen_enough, step, &f, 10000), "acknowledged: intake goes on");
    cr_assert_eq(f.n_seen, 12);
    teardown(&f);
}

/* The close leaves the group: its revoke drops the partitions' queued work,
 * settles them (deadline: the close's), then commits what the ledger has
 * acknowledged, and only that. */
Test(source, revoke_drops_settles_then_commits_the_acknowledged) {
    fixture f;
    setup(&f, "unit-revoke", NULL, false);
    produce(&f, 0, 8);
    f.want = 8;
    cr_assert(vw_unit_until(seen_enough, step, &f, 30000));
    ack_all(&f);
    produce(&f, 8, 2); /* seen, never acknowledged: not committed */
    f.want = 10;
    cr_assert(vw_unit_until(seen_enough, step, &f, 10000));
    int64_t deadline = vw_kh_now_ms() + 5000;
    vw_source_close(f.src, deadline);
    cr_assert_eq(f.drops[0], 1);
    cr_assert_eq(f.drops[1], 1);
    cr_assert_eq(f.settles, 1, "one revoke of both partitions");
    cr_assert_eq(f.settle_parts, 2);
    cr_assert_leq(f.settle_deadline, deadline, "the stop deadline bounds the settle");
    int64_t committed[2];
    cr_assert_eq(
        vw_kh_committed(vw_broker_bootstraps(f.e.b), "unit-revoke", "requests", 2, committed), 0);
    cr_assert_eq(committed[0], 4);
    cr_assert_eq(committed[1], 4);
    cr_assert_not(vw_offsets_is_assigned(f.e.ledger, "requests", 0, NULL), "revoked in the ledger");
    teardown(&f);
}

/* Replay: no group; the partitions are assigned at their range's start. */
Test(source, replay_assigns_ranges_without_a_group) {
    fixture f;
    setup(&f, NULL, NULL, true);
    produce(&f, 0, 10);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, "requests", 1)->offset = 2;
    cr_assert_eq(vw_offsets_assign(f.e.ledger, "requests", 1, NULL, NULL), VW_OK);
    vw_err err = {0};
    cr_assert_eq(vw_source_assign(f.src, l, &err), VW_OK, "%s", err.msg);
    f.want = 3;
    cr_assert(vw_unit_until(seen_enough, step, &f, 20000));
    for (size_t i = 0; i < f.n_seen; i++) {
        cr_assert_eq(f.part[i], 1);
        cr_assert_eq(f.off[i], (int64_t)(2 + i));
    }
    cr_assert(vw_source_positions(f.src, l));
    cr_assert_eq(l->elems[0].offset, 5);
    rd_kafka_topic_partition_list_destroy(l);
    teardown(&f);
}

/* Issue 35 finding 1: a compressed batch librdkafka cannot hand over (three
 * zstd records of 2 MiB in one batch: 6 MiB decompressed, past
 * receive.message.max.bytes, bounded from limits.max_request_bytes 4096 at
 * 3 MiB) is reported as _BAD_COMPRESSION at its first offset, again and again
 * (2.0.2 and 2.16 alike). The source hands each of its offsets to the
 * unreadable hook, seeking one past it each time, and the records after the
 * batch follow in order: nothing stalls, nothing is skipped unseen. */
Test(source, an_unreadable_batch_is_handed_over_offset_by_offset) {
    fixture f;
    setup(&f, "unit-unreadable", "limits: {max_request_bytes: 4096}\n", false);
    const char *bs = vw_broker_bootstraps(f.e.b);
    vw_kh_msg one = {.partition = 0, .value = "v0"};
    cr_assert_eq(vw_kh_produce(bs, "requests", &one, 1, NULL, NULL), 0);
    int64_t offs[3];
    cr_assert_eq(vw_bomb_produce(bs, "requests", 0, "zstd", 0, 2 << 20, 3, offs), 0);
    cr_assert_eq(offs[0], 1);
    cr_assert_eq(offs[2], 3);
    vw_kh_msg after[2] = {{.partition = 0, .value = "v4"}, {.partition = 0, .value = "v5"}};
    cr_assert_eq(vw_kh_produce(bs, "requests", after, 2, NULL, NULL), 0);
    f.want = 6;
    cr_assert(vw_unit_until(seen_enough, step, &f, 30000), "seen %zu of 6", f.n_seen);
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(f.part[i], 0);
        cr_assert_eq(f.off[i], (int64_t)i, "offset %zu in order", i);
        rd_kafka_resp_err_t want = i >= 1 && i <= 3 ? RD_KAFKA_RESP_ERR__BAD_COMPRESSION : 0;
        cr_assert_eq(f.bad[i], want, "offset %zu: %s", i, rd_kafka_err2name(f.bad[i]));
    }
    for (int i = 0; i < 20; i++)
        step(&f);
    cr_assert_eq(f.n_seen, 6, "each offset once");
    cr_assert_not(vw_fault_raised(&f.e.fault));
    teardown(&f);
}
