/* test_windows.c — decoder span windows (docs/spec/request.md §7.4). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "render/windows.h"

static void expect_windows(const int32_t *first, size_t n, int64_t len, int64_t w, int64_t s,
                           const int64_t *want, size_t n_want) {
    int64_t *out = NULL;
    size_t k = 0;
    cr_assert_eq(vw_windows(first, n, len, w, s, &out, &k, NULL), VW_OK);
    cr_assert_eq(k, n_want, "%zu windows, want %zu", k, n_want);
    for (size_t i = 0; i < 2 * k; i++)
        cr_expect_eq(out[i], want[i], "bound %zu: %lld want %lld", i, (long long)out[i],
                     (long long)want[i]);
    free(out);
}

Test(windows, reference_example_covers_every_word) {
    /* test_word_windows_start_at_words_and_cover_every_word */
    const int32_t first[] = {0, 3, 9, 14, 20, 26, 31};
    const int64_t want[] = {0, 9, 9, 20, 20, 31, 31, 35}; /* Python word_windows */
    expect_windows(first, 7, 35, 12, 8, want, 4);
}

Test(windows, first_window_starts_at_the_first_word) {
    const int32_t first[] = {5, 5, 10}; /* duplicates and a late first word */
    const int64_t want[] = {5, 20};
    expect_windows(first, 3, 20, 100, 50, want, 1);
}

Test(windows, no_words_is_one_window) {
    const int64_t want[] = {0, 42};
    expect_windows(NULL, 0, 42, 10, 5, want, 1);
}

Test(windows, long_word_cut_at_the_limit) {
    /* one word of 5000 tokens: no start inside, end = min(length, limit) */
    const int32_t first[] = {0, 5000};
    const int64_t want[] = {0, 1800, 1800, 3600, 3600, 5100};
    expect_windows(first, 2, 5100, 1800, 1536, want, 3);
}

Test(windows, production_sizes_overlap_nominally) {
    /* one word per token: windows of 1799 (end at the last start inside) */
    int32_t *first = malloc(5000 * sizeof *first);
    for (int i = 0; i < 5000; i++)
        first[i] = i;
    int64_t *out = NULL;
    size_t k = 0;
    cr_assert_eq(vw_windows(first, 5000, 5000, 1800, 1536, &out, &k, NULL), VW_OK);
    const int64_t want[] = {0, 1799, 1536, 3335, 3072, 4871, 4608, 5000}; /* Python */
    cr_assert_eq(k, 4);
    for (size_t i = 0; i < 8; i++)
        cr_expect_eq(out[i], want[i]);
    free(out);
    free(first);
}
