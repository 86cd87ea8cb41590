/* qtable.c — question ids to accumulators. Owns only the table. */
#include "qtable.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

void vw_eval_qtable_free(vw_eval_qtable *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->ids.n; i++)
        vw_eval_q_free(t->q[i]);
    free(t->q);
    vw_strmap_free(&t->ids);
    memset(t, 0, sizeof *t);
}

vw_status vw_eval_qtable_get(vw_eval_qtable *t, const char *qid, vw_qtype type, vw_eval_q **out,
                             vw_err *err) {
    int64_t k = vw_strmap_find(&t->ids, qid, strlen(qid));
    vw_status st;
    if (k >= 0) {
        *out = t->q[k];
        if ((*out)->type == VW_QT_UNKNOWN)
            (*out)->type = type;
        return VW_OK;
    }
    if (vw_reserve((void **)&t->q, &t->cap, t->ids.n + 1, sizeof *t->q))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: %zu questions", t->ids.n + 1);
    /* The question first, the id after: an id is never left without one. */
    vw_eval_q *q = NULL;
    size_t i;
    if ((st = vw_eval_q_new(qid, type, &q, err)))
        return st;
    if ((st = vw_strmap_put(&t->ids, qid, strlen(qid), &i, NULL, err))) {
        vw_eval_q_free(q);
        return st;
    }
    vw_eval_q_set_qid(q, vw_strmap_key(&t->ids, i));
    t->q[i] = *out = q;
    return VW_OK;
}

vw_eval_q *vw_eval_qtable_find(const vw_eval_qtable *t, const char *qid) {
    int64_t k = vw_strmap_find(&t->ids, qid, strlen(qid));
    return k >= 0 ? t->q[k] : NULL;
}
