/* test_executor.c — the backend-independent rules of the executor seam. */
#include <criterion/criterion.h>
#include <string.h>

#include "model/executor.h"
#include "model/head_job.h"
#include "model/head_weights.h"

static const int32_t prefix[] = {1, 2, 3};
static const int32_t block_ids[] = {4, 5};
static const int32_t r_ok[] = {0, 1};
static const int32_t r_bad[] = {2};
static const int32_t p_r[] = {2};

Test(executor, readout_count_sums_prefix_and_blocks) {
    vw_block b[2] = {{block_ids, 2, r_ok, 2}, {block_ids, 2, r_ok, 1}};
    vw_tree t[2] = {{prefix, 3, p_r, 1, b, 2}, {prefix, 3, NULL, 0, b, 1}};
    cr_assert_eq(vw_trees_readout_count(t, 2), 1 + 2 + 1 + 0 + 2);
    cr_assert_eq(vw_trees_readout_count(t, 0), 0);
}

Test(executor, validate_accepts_good_tree) {
    vw_block b = {block_ids, 2, r_ok, 2};
    vw_tree t = {prefix, 3, p_r, 1, &b, 1};
    vw_err e;
    cr_assert_eq(vw_trees_validate(&t, 1, 6, &e), VW_OK);
}

Test(executor, validate_names_bad_readout_and_bad_id) {
    vw_block b = {block_ids, 2, r_bad, 1};
    vw_tree t = {prefix, 3, NULL, 0, &b, 1};
    vw_err e;
    cr_assert_eq(vw_trees_validate(&t, 1, 6, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "block 0") && strstr(e.msg, "readout 0 = 2"), "%s", e.msg);
    vw_block b2 = {block_ids, 2, r_ok, 2};
    vw_tree t2 = {prefix, 3, NULL, 0, &b2, 1};
    cr_assert_eq(vw_trees_validate(&t2, 1, 5, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "id 5"), "%s", e.msg);
    vw_tree t3 = {prefix, 0, NULL, 0, NULL, 0};
    cr_assert_eq(vw_trees_validate(&t3, 1, 6, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "bad_tree");
}

Test(executor, forward_without_backend_is_an_error) {
    vw_executor ex = {0};
    vw_err e;
    cr_assert_eq(vw_executor_forward(&ex, NULL, 0, NULL, &e), VW_EINVAL);
    vw_executor_free(NULL);
}

/* A backend that counts its calls, and an owner's cancel flag. */
static int backend_calls;
static vw_status counting_forward(vw_executor *ex, const vw_tree *t, size_t n, float *rows,
                                  vw_err *err) {
    (void)ex, (void)t, (void)n, (void)rows, (void)err;
    backend_calls++;
    return VW_OK;
}
static vw_status counting_heads(vw_executor *ex, const vw_head_job *job, vw_err *err) {
    (void)ex, (void)job, (void)err;
    backend_calls++;
    return VW_OK;
}
static bool flag_set(void *ctx) {
    return *(const bool *)ctx;
}

/* Once the owner cancels, neither op reaches the backend, whatever it is
 * (the CPU backbone also stops between trees; the CUDA one did not look). */
Test(executor, cancel_stops_every_backend_at_the_seam) {
    static const vw_executor_ops ops = {"counting", counting_forward, NULL, counting_heads};
    bool cancel = false;
    vw_executor ex = {
        .ops = &ops, .hidden = 1, .vocab = 6, .cancelled = flag_set, .cancel_ctx = &cancel};
    vw_block b = {block_ids, 2, r_ok, 2};
    vw_tree t = {prefix, 3, p_r, 1, &b, 1};
    float rows[3];
    vw_err e;
    float out[2];
    vw_head_cand_job c = {0, 2, 2, false, out};
    vw_head_job job = {&c, 1, NULL, 0};
    cr_assert_eq(vw_executor_forward(&ex, &t, 1, rows, &e), VW_OK);
    cr_assert_eq(vw_executor_heads(&ex, &job, &e), VW_OK);
    cr_assert_eq(backend_calls, 2);
    cancel = true;
    cr_assert_eq(vw_executor_heads(&ex, &job, &e), VW_ETRANSIENT);
    cr_assert_str_eq(e.type, "cancelled");
    cr_assert_eq(vw_executor_forward(&ex, &t, 1, rows, &e), VW_ETRANSIENT);
    cr_assert_str_eq(e.type, "cancelled");
    cr_assert_eq(backend_calls, 2, "the backend was not called once cancelled");
}

/* Head jobs are checked against the last forward's readouts before a backend
 * sees them; an executor without the op refuses them, and a forward without
 * rows. */
Test(executor, head_jobs_are_checked) {
    float out[16];
    int32_t st[2] = {0, 2}, en[2] = {1, 3};
    vw_head_cand_job c = {1, 2, 3, true, out};
    vw_head_span_job s = {VW_SPAN_HEAD_BROAD, 2, 2, st, en, 2, out};
    vw_head_job job = {&c, 1, &s, 1};
    vw_err e;
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_OK);
    cr_assert_eq(vw_head_job_validate(&job, 3, &e), VW_EINVAL); /* query 3 of 3 rows */
    cr_assert(strstr(e.msg, "candidate problem 0"), "%s", e.msg);
    cr_assert_str_eq(e.type, "bad_head_job");
    c.m = 0;
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_EINVAL);
    c.m = 2, en[1] = 1; /* start 2 > end 1 */
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "span problem 0: label 1"), "%s", e.msg);
    en[1] = 3, s.head = 2;
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_EINVAL);
    s.head = VW_SPAN_HEAD_ROUTER, s.n_labels = 0;
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_EINVAL);
    s.n_labels = 2, s.n_words = 3; /* words 2..4 of 4 rows */
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_EINVAL);
    s.n_words = 0, s.z = NULL; /* no words: no output needed */
    cr_assert_eq(vw_head_job_validate(&job, 4, &e), VW_OK);
    static const vw_executor_ops plain = {"plain", NULL, NULL, NULL};
    vw_executor ex = {.ops = &plain, .vocab = 6};
    cr_assert(!vw_executor_has_heads(&ex));
    cr_assert_eq(vw_executor_heads(&ex, &job, &e), VW_EUNSUPPORTED);
    cr_assert_str_eq(e.type, "no_heads");
}

/* A head job's slice for rows [r0, r1): the problems wholly inside, rows and
 * label ranges renumbered from r0, the copies owned by the slice. */
Test(executor, head_job_slices_renumber_rows) {
    float out[8];
    vw_head_jobs j = {0}, part = {0};
    vw_err e;
    vw_head_cand_job c0 = {0, 2, 2, false, out}, c1 = {5, 1, 6, true, out};
    int32_t st[2] = {7, 9}, en[2] = {8, 9};
    vw_head_span_job s0 = {VW_SPAN_HEAD_ROUTER, 10, 2, st, en, 2, out};
    vw_head_span_job s1 = {VW_SPAN_HEAD_BROAD, 3, 2, st, en, 2, out}; /* words 3-4, labels 7-9 */
    cr_assert_eq(vw_head_jobs_add_cand(&j, &c0, &e), VW_OK);
    cr_assert_eq(vw_head_jobs_add_cand(&j, &c1, &e), VW_OK);
    cr_assert_eq(vw_head_jobs_add_span(&j, &s0, &e), VW_OK);
    cr_assert_eq(vw_head_jobs_add_span(&j, &s1, &e), VW_OK);
    st[0] = -1; /* the job keeps its own copy of the ranges */
    cr_assert_eq(j.span[0].starts[0], 7);
    cr_assert_eq(vw_head_jobs_slice(&j, 5, 12, &part, &e), VW_OK);
    vw_head_job v = vw_head_jobs_view(&part);
    cr_assert_eq(v.n_cand, 1); /* c0 lies before 5 */
    cr_assert(v.cand[0].row == 0 && v.cand[0].query == 1 && v.cand[0].is_set);
    cr_assert_eq(v.n_span, 1); /* s1's words 3-4 lie before 5 */
    cr_assert(v.span[0].words == 5 && v.span[0].n_words == 2);
    cr_assert(v.span[0].starts[0] == 2 && v.span[0].ends[0] == 3 && v.span[0].starts[1] == 4 &&
              v.span[0].ends[1] == 4);
    cr_assert_eq(vw_head_jobs_slice(&j, 0, 11, &part, &e), VW_OK); /* s0 ends at row 11 */
    cr_assert(part.n_cand == 2 && part.n_span == 1 && part.span[0].head == VW_SPAN_HEAD_BROAD);
    cr_assert_eq(vw_head_jobs_slice(&j, 3, 2, &part, &e), VW_EINVAL);
    vw_head_jobs_free(&part);
    vw_head_jobs_free(&j);
    cr_assert_eq(j.n_span, 0);
}
