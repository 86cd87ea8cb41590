/* windows.c — word_windows (see windows.h). */
#include "windows.h"
#include "util/reserve.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static vw_status push(int64_t **out, size_t *n, size_t *cap, int64_t a, int64_t b) {
    if (vw_reserve((void **)out, cap, *n + 1, 2 * sizeof **out)) /* a pair per element */
        return VW_ENOMEM;
    (*out)[2 * *n] = a;
    (*out)[2 * *n + 1] = b;
    (*n)++;
    return VW_OK;
}

vw_status vw_windows(const int32_t *first, size_t n_words, int64_t length, int64_t window,
                     int64_t stride, int64_t **out, size_t *n_out, vw_err *err) {
    *out = NULL;
    *n_out = 0;
    if (window <= 0)
        return VW_FAIL(err, VW_EINVAL, "bad_window", "window must be positive");
    size_t cap = 0, n = 0;
    int32_t *s = n_words ? malloc(n_words * sizeof *s) : NULL;
    if (n_words && !s)
        return VW_FAIL(err, VW_ENOMEM, "oom", "windows");
    if (n_words)
        memcpy(s, first, n_words * sizeof *s);
    if (n_words)
        qsort(s, n_words, sizeof *s, cmp_i32);
    for (size_t i = 0; i < n_words; i++)
        if (!n || s[n - 1] != s[i])
            s[n++] = s[i];
    vw_status st = VW_OK;
    size_t count = 0;
    if (!n) {
        st = push(out, &count, &cap, 0, length);
        goto done;
    }
    int64_t start = s[0];
    size_t j = 0; /* s[j] is the first start >= start */
    for (;;) {
        int64_t limit = start + window, end;
        while (j < n && s[j] < start)
            j++;
        size_t k = j; /* largest s[k] with start < s[k] < limit */
        int64_t inside = -1;
        while (k < n && s[k] < limit) {
            if (s[k] > start)
                inside = s[k];
            k++;
        }
        end = limit >= length ? length : inside >= 0 ? inside : (limit < length ? limit : length);
        if ((st = push(out, &count, &cap, start, end)))
            goto done;
        if (end >= length)
            break;
        int64_t next = end;
        for (size_t q = j; q < n && s[q] < end; q++)
            if (s[q] >= start + stride) {
                next = s[q];
                break;
            }
        start = next;
    }
done:
    free(s);
    if (st != VW_OK) {
        free(*out);
        *out = NULL;
        return VW_FAIL(err, st, "oom", "windows");
    }
    *n_out = count;
    return VW_OK;
}
