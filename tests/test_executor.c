/* test_executor.c — the backend-independent rules of the executor seam. */
#include <criterion/criterion.h>
#include <string.h>

#include "model/executor.h"

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
