/* offsets.c — per-partition delivery order and commit tracker (see offsets.h).
 * Owns the record queues of the assigned partitions; never talks to Kafka. */
#include "offsets.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

typedef enum slot_state { PENDING, READY, PRODUCING, DONE } slot_state;

typedef struct slot {
    int64_t offset;
    slot_state state;
    void *result; /* READY only */
} slot;

/* One assigned partition. slots[head..n) are the live records in offset order;
 * produce is the index of the first record not yet PRODUCING/DONE. */
typedef struct part {
    char *topic;
    int32_t partition;
    uint32_t epoch;
    slot *slots;
    size_t head, n, cap, produce;
    int64_t last_tracked; /* -1 before the first record */
    int64_t position;     /* next offset to commit, -1 when none */
    int64_t committed;    /* last commit the broker confirmed, -1 when none */
    size_t live;          /* records not DONE (in_flight without a scan) */
} part;

struct vw_offsets {
    part *parts;
    size_t n_parts;
    size_t rr; /* round-robin start of next_ready */
    uint32_t next_epoch;
    uint64_t acked; /* vw_offsets_acked */
    void (*free_result)(void *);
};

vw_offsets *vw_offsets_new(void (*free_result)(void *result)) {
    vw_offsets *t = calloc(1, sizeof *t);
    if (t) {
        t->free_result = free_result;
        t->next_epoch = 1;
    }
    return t;
}

static void part_clear(vw_offsets *t, part *p) {
    for (size_t i = p->head; i < p->n; i++)
        if (p->slots[i].state == READY && t->free_result)
            t->free_result(p->slots[i].result);
    free(p->slots);
    free(p->topic);
}

void vw_offsets_free(vw_offsets *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n_parts; i++)
        part_clear(t, &t->parts[i]);
    free(t->parts);
    free(t);
}

static part *find(const vw_offsets *t, const char *topic, int32_t partition) {
    for (size_t i = 0; i < t->n_parts; i++)
        if (t->parts[i].partition == partition && !strcmp(t->parts[i].topic, topic))
            return &t->parts[i];
    return NULL;
}

static part *find_epoch(const vw_offsets *t, const char *topic, int32_t partition, uint32_t epoch,
                        vw_err *err) {
    part *p = find(t, topic, partition);
    if (!p) {
        VW_FAIL(err, VW_EINVAL, "partition_unknown", "%s [%d] is not assigned", topic,
                (int)partition);
        return NULL;
    }
    if (p->epoch != epoch) {
        VW_FAIL(err, VW_EINVAL, "stale_epoch", "%s [%d]: epoch %u is not current (%u)", topic,
                (int)partition, epoch, p->epoch);
        return NULL;
    }
    return p;
}

/* Index of offset in slots[head..n), or (size_t)-1. */
static size_t slot_index(const part *p, int64_t offset) {
    size_t lo = p->head, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->slots[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->slots[lo].offset == offset ? lo : (size_t)-1;
}

vw_status vw_offsets_assign(vw_offsets *t, const char *topic, int32_t partition, uint32_t *epoch,
                            vw_err *err) {
    part *p = find(t, topic, partition);
    if (p) {
        /* A re-assignment without a revoke (eager protocol, lost partitions):
         * start over; earlier work is stale. */
        for (size_t i = p->head; i < p->n; i++)
            if (p->slots[i].state == READY && t->free_result)
                t->free_result(p->slots[i].result);
        p->head = p->n = p->produce = p->live = 0;
    } else {
        char *name = strdup(topic);
        part *grown = name ? realloc(t->parts, (t->n_parts + 1) * sizeof *grown) : NULL;
        if (!grown) {
            free(name);
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "offset tracker partition");
        }
        t->parts = grown;
        p = &t->parts[t->n_parts++];
        memset(p, 0, sizeof *p);
        p->topic = name;
        p->partition = partition;
    }
    p->epoch = t->next_epoch++;
    p->last_tracked = p->position = p->committed = -1;
    if (epoch)
        *epoch = p->epoch;
    return VW_OK;
}

bool vw_offsets_is_assigned(const vw_offsets *t, const char *topic, int32_t partition,
                            uint32_t *epoch) {
    const part *p = find(t, topic, partition);
    if (p && epoch)
        *epoch = p->epoch;
    return p != NULL;
}

vw_status vw_offsets_track(vw_offsets *t, const char *topic, int32_t partition, int64_t offset,
                           vw_err *err) {
    part *p = find(t, topic, partition);
    if (!p)
        return VW_FAIL(err, VW_EINVAL, "partition_unknown", "%s [%d] is not assigned", topic,
                       (int)partition);
    if (offset < 0 || offset <= p->last_tracked)
        return VW_FAIL(err, VW_EINVAL, "offset_order", "%s [%d]: offset %lld after %lld", topic,
                       (int)partition, (long long)offset, (long long)p->last_tracked);
    if (p->head > 0 && p->head * 2 >= p->n) {
        /* Slide the live window to the front; amortised O(1) per record. */
        memmove(p->slots, p->slots + p->head, (p->n - p->head) * sizeof *p->slots);
        p->n -= p->head;
        p->produce -= p->head;
        p->head = 0;
    }
    if (vw_reserve((void **)&p->slots, &p->cap, p->n + 1, sizeof *p->slots))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "offset tracker slots");
    p->slots[p->n++] = (slot){.offset = offset, .state = PENDING};
    p->last_tracked = offset;
    p->live++;
    return VW_OK;
}

vw_status vw_offsets_set_result(vw_offsets *t, const char *topic, int32_t partition, uint32_t epoch,
                                int64_t offset, void *result, vw_err *err) {
    part *p = find_epoch(t, topic, partition, epoch, err);
    if (!p)
        return err ? err->status : VW_EINVAL;
    size_t i = slot_index(p, offset);
    if (i == (size_t)-1 || p->slots[i].state != PENDING)
        return VW_FAIL(err, VW_EINVAL, "offset_state", "%s [%d] offset %lld is not pending", topic,
                       (int)partition, (long long)offset);
    p->slots[i].state = READY;
    p->slots[i].result = result;
    return VW_OK;
}

bool vw_offsets_next_ready(vw_offsets *t, vw_offset_pos *out) {
    for (size_t k = 0; k < t->n_parts; k++) {
        size_t idx = (t->rr + k) % t->n_parts;
        part *p = &t->parts[idx];
        if (p->produce < p->head)
            p->produce = p->head;
        if (p->produce >= p->n || p->slots[p->produce].state != READY)
            continue;
        slot *s = &p->slots[p->produce++];
        *out = (vw_offset_pos){p->topic, p->partition, s->offset, p->epoch, s->result};
        s->state = PRODUCING;
        s->result = NULL;
        /* Stay on this partition while it has more, so its records go out in runs. */
        t->rr = idx;
        return true;
    }
    return false;
}

vw_status vw_offsets_ack(vw_offsets *t, const char *topic, int32_t partition, uint32_t epoch,
                         int64_t offset, vw_err *err) {
    part *p = find_epoch(t, topic, partition, epoch, err);
    if (!p)
        return err ? err->status : VW_EINVAL;
    size_t i = slot_index(p, offset);
    if (i == (size_t)-1 || p->slots[i].state != PRODUCING)
        return VW_FAIL(err, VW_EINVAL, "offset_state", "%s [%d] offset %lld is not in delivery",
                       topic, (int)partition, (long long)offset);
    p->slots[i].state = DONE;
    p->live--;
    t->acked++;
    while (p->head < p->n && p->slots[p->head].state == DONE)
        p->position = p->slots[p->head++].offset + 1;
    return VW_OK;
}

uint64_t vw_offsets_acked(const vw_offsets *t) {
    return t->acked;
}

int64_t vw_offsets_position(const vw_offsets *t, const char *topic, int32_t partition) {
    const part *p = find(t, topic, partition);
    return p ? p->position : -1;
}

size_t vw_offsets_commits(const vw_offsets *t, vw_offset_pos *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_parts; i++) {
        const part *p = &t->parts[i];
        if (p->position < 0 || p->position <= p->committed)
            continue;
        if (n < cap)
            out[n] = (vw_offset_pos){p->topic, p->partition, p->position, p->epoch, NULL};
        n++;
    }
    return n;
}

size_t vw_offsets_commits_produced(const vw_offsets *t, vw_offset_pos *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_parts; i++) {
        const part *p = &t->parts[i];
        int64_t pos = p->position;
        if (p->produce > p->head && p->slots[p->produce - 1].offset + 1 > pos)
            pos = p->slots[p->produce - 1].offset + 1;
        if (pos < 0 || pos <= p->committed)
            continue;
        if (n < cap)
            out[n] = (vw_offset_pos){p->topic, p->partition, pos, p->epoch, NULL};
        n++;
    }
    return n;
}

void vw_offsets_committed(vw_offsets *t, const char *topic, int32_t partition, int64_t offset) {
    part *p = find(t, topic, partition);
    if (p && offset > p->committed)
        p->committed = offset;
}

vw_status vw_offsets_revoke(vw_offsets *t, const char *topic, int32_t partition, int64_t *position,
                            vw_err *err) {
    part *p = find(t, topic, partition);
    if (!p)
        return VW_FAIL(err, VW_EINVAL, "partition_unknown", "%s [%d] is not assigned", topic,
                       (int)partition);
    if (position)
        *position = p->position;
    part_clear(t, p);
    size_t idx = (size_t)(p - t->parts);
    memmove(p, p + 1, (t->n_parts - idx - 1) * sizeof *p);
    t->n_parts--;
    t->rr = 0;
    return VW_OK;
}

size_t vw_offsets_in_flight(const vw_offsets *t, const char *topic, int32_t partition) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_parts; i++) {
        const part *p = &t->parts[i];
        if (!topic || (p->partition == partition && !strcmp(p->topic, topic)))
            n += p->live;
    }
    return n;
}

size_t vw_offsets_unacked(const vw_offsets *t, const char *topic, int32_t partition) {
    const part *p = find(t, topic, partition);
    size_t n = 0;
    bool behind_pending = false;
    for (size_t j = p ? p->head : 0; p && j < p->n; j++) {
        behind_pending |= p->slots[j].state == PENDING;
        n += p->slots[j].state == PRODUCING || (p->slots[j].state == READY && !behind_pending);
    }
    return n;
}

size_t vw_offsets_count(const vw_offsets *t) {
    return t->n_parts;
}

vw_offset_pos vw_offsets_at(const vw_offsets *t, size_t i) {
    const part *p = &t->parts[i];
    return (vw_offset_pos){p->topic, p->partition, p->position, p->epoch, NULL};
}

vw_status vw_offsets_find_time(int64_t lo, int64_t hi, int64_t ts, vw_first_record_fn first_at,
                               void *ctx, int64_t *out, vw_err *err) {
    /* Invariant: the answer is in [lo, hi) or is `best` (a record found earlier
     * at or after hi whose timestamp qualifies); each step shrinks [lo, hi). */
    int64_t best = hi;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, off = -1, rts = -1;
        int r = first_at(ctx, mid, hi, &off, &rts);
        if (r < 0)
            return VW_FAIL(err, VW_EKAFKA, "replay_seek",
                           "reading the record at or after offset %lld failed", (long long)mid);
        if (r == 0 || off >= hi) {
            hi = mid; /* nothing in [mid, hi) */
        } else if (rts >= ts) {
            best = off;
            hi = mid;
        } else {
            lo = off + 1;
        }
    }
    *out = best;
    return VW_OK;
}
