/* qtable.h — the questions of a replay by id, in first-seen order, each with
 * its accumulator (qmetrics.h). A question's type is the first known type its
 * answers show; answers of another type are counted as conflicts and skipped.
 *
 * Ownership: the table owns the questions and their ids. Thread-safety: none.
 * Errors: VW_ENOMEM (table unchanged).
 */
#ifndef VW_EVAL_QTABLE_H
#define VW_EVAL_QTABLE_H

#include "qmetrics.h"
#include "strmap.h"

typedef struct vw_eval_qtable {
    vw_strmap ids;
    vw_eval_q **q; /* q[i] for ids index i */
    size_t cap;
} vw_eval_qtable;

void vw_eval_qtable_free(vw_eval_qtable *t);

/* The question qid, added with this type when new; a question known only from
 * typeless errors takes the first known type. */
vw_status vw_eval_qtable_get(vw_eval_qtable *t, const char *qid, vw_qtype type, vw_eval_q **out,
                             vw_err *err);

/* The question qid, or NULL. */
vw_eval_q *vw_eval_qtable_find(const vw_eval_qtable *t, const char *qid);

#endif
