/* errlist.h — (loc, msg, type) triples: the `detail` of a rejection and the
 * reason of a per-question error (docs/contract.md Decision 5).
 *
 * A loc is a flat path rooted at "body": string segments (field names,
 * question IDs) and integer segments (list indices, byte offsets).
 *
 * Ownership: a vw_errlist owns its entries and their strings (vw_errlist_free).
 * `type` strings are static (one table: VW_ET_* below). Thread-safety: none
 * needed (one owner). Errors: appends return VW_ENOMEM on allocation failure,
 * leaving the list as it was.
 */
#ifndef VW_ERRLIST_H
#define VW_ERRLIST_H

#include <stddef.h>
#include <stdint.h>

#include "util/sbuf.h"
#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stable `type` strings of docs/rejections.md. */
#define VW_ET_JSON_INVALID "json_invalid"
#define VW_ET_MODEL_ATTRIBUTES "model_attributes_type"
#define VW_ET_STRING_TYPE "string_type"
#define VW_ET_MISSING "missing"
#define VW_ET_VALUE_ERROR "value_error"
#define VW_ET_DICT_TYPE "dict_type"
#define VW_ET_TOO_SHORT "too_short"
#define VW_ET_TOO_LONG "too_long"
#define VW_ET_EXTRA_FORBIDDEN "extra_forbidden"
#define VW_ET_LITERAL_ERROR "literal_error"
#define VW_ET_MODEL_TYPE "model_type"

typedef struct vw_locseg {
    char *str; /* NULL for an integer segment */
    size_t len;
    int64_t index;
} vw_locseg;

typedef struct vw_loc {
    vw_locseg *segs;
    size_t n;
} vw_loc;

typedef struct vw_errent {
    vw_loc loc;
    char *msg;
    const char *type;
} vw_errent;

typedef struct vw_errlist {
    vw_errent *items;
    size_t n, cap;
} vw_errlist;

vw_status vw_loc_add_str(vw_loc *loc, const char *s, size_t len);
vw_status vw_loc_add_int(vw_loc *loc, int64_t index);
vw_status vw_loc_copy(vw_loc *dst, const vw_loc *src);
void vw_loc_free(vw_loc *loc);

/* Appends (loc, msg, type); takes ownership of *loc (emptied on success). */
vw_status vw_errlist_add(vw_errlist *l, vw_loc *loc, const char *msg, const char *type);
void vw_errlist_free(vw_errlist *l);

/* Appends [..loc..] as JSON (strings escaped, integers as numbers). */
void vw_loc_write(vw_sbuf *sb, const vw_loc *loc);
/* Appends [{"loc":[..],"msg":"..","type":".."}, ...]. */
void vw_errlist_write(vw_sbuf *sb, const vw_errlist *l);

#ifdef __cplusplus
}
#endif
#endif
