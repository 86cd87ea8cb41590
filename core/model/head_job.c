/* head_job.c — growable head jobs and their row-range slices (see head_job.h).
 * Bookkeeping only: never reads rows or runs a head. */
#include "head_job.h"

#include <stdlib.h>
#include <string.h>

#include "util/reserve.h"

vw_status vw_head_jobs_add_cand(vw_head_jobs *j, const vw_head_cand_job *c, vw_err *err) {
    if (vw_reserve((void **)&j->cand, &j->cap_cand, j->n_cand + 1, sizeof *j->cand))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "head job: candidate problems");
    j->cand[j->n_cand++] = *c;
    return VW_OK;
}

vw_status vw_head_jobs_add_span(vw_head_jobs *j, const vw_head_span_job *s, vw_err *err) {
    size_t L = s->n_labels > 0 ? (size_t)s->n_labels : 0;
    int32_t *r = malloc((2 * L + 1) * sizeof *r);
    if (!r || vw_reserve((void **)&j->span, &j->cap_span, j->n_span + 1, sizeof *j->span) ||
        vw_reserve((void **)&j->ranges, &j->cap_ranges, j->n_span + 1, sizeof *j->ranges)) {
        free(r);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "head job: span problems");
    }
    memcpy(r, s->starts, L * sizeof *r);
    memcpy(r + L, s->ends, L * sizeof *r);
    j->ranges[j->n_span] = r;
    j->span[j->n_span] = *s;
    j->span[j->n_span].starts = r;
    j->span[j->n_span++].ends = r + L;
    return VW_OK;
}

vw_head_job vw_head_jobs_view(const vw_head_jobs *j) {
    return (vw_head_job){j->cand, j->n_cand, j->span, j->n_span};
}

static bool inside(int32_t a, int32_t n, int32_t r0, int32_t r1) {
    return a >= r0 && n >= 0 && a + n <= r1;
}

vw_status vw_head_jobs_slice(const vw_head_jobs *j, int32_t r0, int32_t r1, vw_head_jobs *out,
                             vw_err *err) {
    vw_head_jobs_free(out);
    if (r0 < 0 || r1 < r0)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "head job slice [%d, %d)", (int)r0, (int)r1);
    vw_status st = VW_OK;
    for (size_t k = 0; k < j->n_cand && st == VW_OK; k++) {
        vw_head_cand_job c = j->cand[k];
        if (!inside(c.row, c.m, r0, r1) || !inside(c.query, 1, r0, r1))
            continue;
        c.row -= r0, c.query -= r0;
        st = vw_head_jobs_add_cand(out, &c, err);
    }
    for (size_t k = 0; k < j->n_span && st == VW_OK; k++) {
        vw_head_span_job s = j->span[k];
        bool in = !s.n_words || inside(s.words, s.n_words, r0, r1);
        for (int32_t l = 0; in && l < s.n_labels; l++)
            in = inside(s.starts[l], s.ends[l] - s.starts[l] + 1, r0, r1);
        if (!in)
            continue;
        st = vw_head_jobs_add_span(out, &s, err);
        if (st != VW_OK)
            break;
        vw_head_span_job *t = &out->span[out->n_span - 1];
        int32_t *r = out->ranges[out->n_span - 1];
        for (int32_t l = 0; l < 2 * s.n_labels; l++)
            r[l] -= r0;
        t->words = s.n_words ? s.words - r0 : 0;
    }
    if (st != VW_OK)
        vw_head_jobs_free(out);
    return st;
}

void vw_head_jobs_free(vw_head_jobs *j) {
    if (!j)
        return;
    for (size_t k = 0; k < j->n_span; k++)
        free(j->ranges[k]);
    free(j->ranges);
    free(j->span);
    free(j->cand);
    memset(j, 0, sizeof *j);
}
