/* piece_cache.h — token ids of short layout pieces (question heads, option
 * and label blocks) kept across requests, as the reference runtime allows
 * ("the IDs of a short string ... which a model may cache across requests").
 * Every piece is tokenized on its own, so its ids depend on its text only.
 *
 * Bounded: at most max_entries pieces of at most VW_PIECE_MAX_BYTES each; when
 * full, new pieces are simply not kept.
 * Ownership: the cache owns copies of texts and ids (vw_piece_cache_free).
 * Thread-safety: internally locked (rwlock): get/put from any thread.
 * Errors: VW_ENOMEM from new; get reports a hit only when it could append.
 */
#ifndef VW_PIECE_CACHE_H
#define VW_PIECE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/ivec.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VW_PIECE_MAX_BYTES 4096

typedef struct vw_piece_cache vw_piece_cache;

vw_status vw_piece_cache_new(size_t max_entries, vw_piece_cache **out);
void vw_piece_cache_free(vw_piece_cache *c);

/* On a hit, appends the piece's ids to out and returns true. */
bool vw_piece_cache_get(vw_piece_cache *c, const char *text, size_t len, vw_ivec *out);
/* Keeps the ids of text (ignored when full, too long or out of memory). */
void vw_piece_cache_put(vw_piece_cache *c, const char *text, size_t len, const int32_t *ids,
                        size_t n);

#ifdef __cplusplus
}
#endif
#endif
