/* piece_cache.c — bounded, locked text -> ids map (see piece_cache.h). Open
 * addressing with linear probing; the table has twice the entries' slots. */
#include "piece_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t hash;
    char *text; /* NULL: empty */
    size_t len;
    int32_t *ids;
    size_t n;
} slot;

struct vw_piece_cache {
    pthread_rwlock_t lock;
    slot *slots;
    size_t n_slots; /* power of two */
    size_t used, max;
};

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

vw_status vw_piece_cache_new(size_t max_entries, vw_piece_cache **out) {
    *out = NULL;
    vw_piece_cache *c = calloc(1, sizeof *c);
    if (!c)
        return VW_ENOMEM;
    c->n_slots = 16;
    while (c->n_slots < 2 * max_entries)
        c->n_slots *= 2;
    c->max = max_entries;
    c->slots = calloc(c->n_slots, sizeof *c->slots);
    if (!c->slots || pthread_rwlock_init(&c->lock, NULL)) {
        free(c->slots);
        free(c);
        return VW_ENOMEM;
    }
    *out = c;
    return VW_OK;
}

void vw_piece_cache_free(vw_piece_cache *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->n_slots; i++) {
        free(c->slots[i].text);
        free(c->slots[i].ids);
    }
    free(c->slots);
    pthread_rwlock_destroy(&c->lock);
    free(c);
}

/* The slot holding text, or the empty slot where it would go. */
static slot *find(const vw_piece_cache *c, uint64_t h, const char *text, size_t len) {
    size_t i = (size_t)h & (c->n_slots - 1);
    for (;;) {
        slot *s = &c->slots[i];
        if (!s->text || (s->hash == h && s->len == len && !memcmp(s->text, text, len)))
            return s;
        i = (i + 1) & (c->n_slots - 1);
    }
}

bool vw_piece_cache_get(vw_piece_cache *c, const char *text, size_t len, vw_ivec *out) {
    if (!c || len > VW_PIECE_MAX_BYTES)
        return false;
    uint64_t h = fnv1a(text, len);
    pthread_rwlock_rdlock(&c->lock);
    const slot *s = find(c, h, text, len);
    bool hit = s->text && vw_ivec_append(out, s->ids, s->n) == VW_OK;
    pthread_rwlock_unlock(&c->lock);
    return hit;
}

void vw_piece_cache_put(vw_piece_cache *c, const char *text, size_t len, const int32_t *ids,
                        size_t n) {
    if (!c || len > VW_PIECE_MAX_BYTES)
        return;
    uint64_t h = fnv1a(text, len);
    char *t = malloc(len + 1);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    if (t && v) {
        memcpy(t, text, len);
        t[len] = 0;
        if (n)
            memcpy(v, ids, n * sizeof *v);
        pthread_rwlock_wrlock(&c->lock);
        slot *s = find(c, h, text, len);
        if (!s->text && c->used < c->max) {
            *s = (slot){h, t, len, v, n};
            c->used++;
            t = NULL;
            v = NULL;
        }
        pthread_rwlock_unlock(&c->lock);
    }
    free(t);
    free(v);
}
