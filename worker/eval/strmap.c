/* strmap.c — open addressing (linear probing) over dense indices, keys in an
 * arena of blocks growing from 1 KiB to 1 MiB (most maps are small: labels,
 * statuses). Owns only the map's memory; knows nothing of what the keys mean. */
#include "strmap.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES ((size_t)1 << 20)

struct vw_strmap_block {
    vw_strmap_block *next;
    size_t used, cap;
    char data[];
};

/* FNV-1a, 32 bits: ids are short; the table's power-of-two mask takes the
 * low bits, which FNV mixes well enough at these sizes. */
static uint32_t hash_of(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

void vw_strmap_free(vw_strmap *m) {
    if (!m)
        return;
    for (vw_strmap_block *b = m->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(m->slots);
    free(m->keys);
    free(m->lens);
    free(m->hashes);
    memset(m, 0, sizeof *m);
}

static int64_t lookup(const vw_strmap *m, const char *s, size_t len, uint32_t h, size_t *slot) {
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t v = m->slots[i];
        if (!v) {
            *slot = i;
            return -1;
        }
        size_t k = v - 1;
        if (m->hashes[k] == h && m->lens[k] == len && !memcmp(m->keys[k], s, len))
            return (int64_t)k;
    }
}

int64_t vw_strmap_find(const vw_strmap *m, const char *s, size_t len) {
    size_t slot;
    if (!m->cap)
        return -1;
    return lookup(m, s, len, hash_of(s, len), &slot);
}

static vw_status grow_slots(vw_strmap *m, vw_err *err) {
    size_t cap = m->cap ? m->cap * 2 : 16;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "strmap: %zu slots", cap);
    for (size_t k = 0; k < m->n; k++) {
        size_t i = m->hashes[k] & (cap - 1);
        while (slots[i])
            i = (i + 1) & (cap - 1);
        slots[i] = (uint32_t)(k + 1);
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return VW_OK;
}

static vw_status grow_keys(vw_strmap *m, vw_err *err) {
    /* keys, lens and hashes share one capacity. */
    size_t c1 = m->cap_keys, c2 = m->cap_keys, c3 = m->cap_keys;
    if (vw_reserve((void **)&m->keys, &c1, m->n + 1, sizeof *m->keys) ||
        vw_reserve((void **)&m->lens, &c2, m->n + 1, sizeof *m->lens) ||
        vw_reserve((void **)&m->hashes, &c3, m->n + 1, sizeof *m->hashes))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "strmap: %zu keys", m->n + 1);
    m->cap_keys = c1;
    return VW_OK;
}

/* A copy of s in the arena, NUL-terminated. */
static char *arena_copy(vw_strmap *m, const char *s, size_t len) {
    vw_strmap_block *b = m->blocks;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = b ? (b->cap * 2 > BLOCK_BYTES ? BLOCK_BYTES : b->cap * 2) : 1024;
        if (cap < len + 1)
            cap = len + 1;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = m->blocks;
        m->blocks = b;
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

vw_status vw_strmap_put(vw_strmap *m, const char *s, size_t len, size_t *index, bool *added,
                        vw_err *err) {
    if (added)
        *added = false;
    if (len > UINT32_MAX || m->n >= ((size_t)1 << 31))
        return VW_FAIL(err, VW_ETOOLONG, "too_long", "strmap: key of %zu bytes or %zu keys", len,
                       m->n);
    uint32_t h = hash_of(s, len);
    size_t slot = 0;
    vw_status st;
    if (m->cap) {
        int64_t k = lookup(m, s, len, h, &slot);
        if (k >= 0) {
            *index = (size_t)k;
            return VW_OK;
        }
    }
    if ((m->n + 1) * 2 > m->cap) {
        if ((st = grow_slots(m, err)))
            return st;
        lookup(m, s, len, h, &slot);
    }
    if (m->n == m->cap_keys && (st = grow_keys(m, err)))
        return st;
    char *copy = arena_copy(m, s, len);
    if (!copy)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "strmap: key of %zu bytes", len);
    m->keys[m->n] = copy;
    m->lens[m->n] = (uint32_t)len;
    m->hashes[m->n] = h;
    m->slots[slot] = (uint32_t)(m->n + 1);
    *index = m->n++;
    if (added)
        *added = true;
    return VW_OK;
}
