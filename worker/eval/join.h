/* join.h — the request-id index that joins the results with the baseline and
 * the labels: one entry per id, holding where its baseline and labels lines
 * are (byte offset, length, line number) and whether the results had it.
 * Lines are read back with pread when the results reach their id, so a
 * million-record baseline costs its ids and 40 bytes each, not its envelopes.
 *
 * Ownership: the join owns the index, the two files it reads back and their
 * line buffers. Thread-safety: none. Errors: VW_EIO (a file cannot be opened
 * or read), VW_ENOMEM; an entry never half-added.
 */
#ifndef VW_EVAL_JOIN_H
#define VW_EVAL_JOIN_H

#include <stdbool.h>
#include <stdint.h>

#include "strmap.h"

enum { VW_SIDE_BASELINE = 0, VW_SIDE_LABELS = 1 };

#define VW_JOIN_RESULTS 1u  /* the results had this id */
#define VW_JOIN_BASELINE 2u /* the baseline had it (off/len/line[0]) */
#define VW_JOIN_LABELS 4u   /* the labels had it (off/len/line[1]) */

typedef struct vw_eval_entry {
    int64_t off[2];
    uint32_t len[2];
    uint32_t line[2];
    uint32_t flags;
} vw_eval_entry;

typedef struct vw_eval_join {
    vw_strmap ids;
    vw_eval_entry *e; /* e[i] for ids index i */
    size_t cap;
    int fd[2]; /* read-back files, -1 when closed */
    char *buf[2];
    size_t buf_cap[2];
} vw_eval_join;

/* An empty join (both files closed). */
void vw_eval_join_init(vw_eval_join *j);
void vw_eval_join_free(vw_eval_join *j);

/* The entry of id, added (zeroed) when new. The pointer is valid until the
 * next call that adds. */
vw_status vw_eval_join_entry(vw_eval_join *j, const char *id, size_t len, vw_eval_entry **e,
                             vw_err *err);

/* Opens path for read-back on a side. */
vw_status vw_eval_join_open(vw_eval_join *j, int side, const char *path, vw_err *err);

/* Reads back the side's line of e into the join's buffer of that side (valid
 * until the next read of the same side). */
vw_status vw_eval_join_read(vw_eval_join *j, int side, const vw_eval_entry *e, const char **line,
                            size_t *len, vw_err *err);

#endif
