/* strmap.h — strings to dense indices (0, 1, 2, … in insertion order): the
 * request-id index of `vela-worker eval` (a million ids), and the small name
 * tables (question ids, option and span labels, statuses).
 *
 * Keys are copied into arena blocks owned by the map and stay valid, at the
 * same address, until vw_strmap_free; an index never changes. Keys are byte
 * strings (embedded NULs allowed; each copy is also NUL-terminated).
 *
 * Memory: per key, its bytes + 1, a pointer, a length and a 32-bit hash, plus
 * 4 to 8 bytes of slots (load kept at or under one half).
 *
 * Ownership: the map owns its keys. Thread-safety: none. Errors: VW_ENOMEM
 * (the map is unchanged), VW_ETOOLONG past 2^31 keys.
 */
#ifndef VW_EVAL_STRMAP_H
#define VW_EVAL_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

typedef struct vw_strmap_block vw_strmap_block;

typedef struct vw_strmap {
    uint32_t *slots; /* index + 1; 0 = empty */
    size_t cap;      /* slots, a power of two (0 before the first put) */
    char **keys;
    uint32_t *lens;
    uint32_t *hashes;
    size_t n, cap_keys;
    vw_strmap_block *blocks; /* the arena */
} vw_strmap;

/* An empty map needs no call: vw_strmap m = {0}. vw_strmap_free(NULL) is a no-op. */
void vw_strmap_free(vw_strmap *m);

/* The index of key s (len bytes), or -1 when absent. */
int64_t vw_strmap_find(const vw_strmap *m, const char *s, size_t len);

/* Finds or adds s: *index receives its index, *added (may be NULL) whether it
 * was new. */
vw_status vw_strmap_put(vw_strmap *m, const char *s, size_t len, size_t *index, bool *added,
                        vw_err *err);

/* The key of index i (NUL-terminated; i < m->n). */
static inline const char *vw_strmap_key(const vw_strmap *m, size_t i) {
    return m->keys[i];
}

#endif
