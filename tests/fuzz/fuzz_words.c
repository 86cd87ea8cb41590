/* fuzz_words.c — libFuzzer target: arbitrary valid UTF-8 through the `_WORD`
 * splitter and the first-token mapping. Checks: word ranges are non-empty,
 * increasing, non-overlapping and inside the text; every non-whitespace code
 * point lies in exactly one word (the last alternative, \S, catches the rest)
 * and no word starts with whitespace, except U+3000, a whitespace character
 * inside the CJK class (a one-character word, as in Python); with one token per code point (every
 * third one empty) each kept word maps to a valid token inside it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "util/pystr.h"
#include "render/words.h"

static vw_word_re *re;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (vw_word_re_new(&re, NULL) != VW_OK)
        abort();
    return 0;
}

static int valid_utf8(const uint8_t *d, size_t n) {
    size_t i = 0;
    while (i < n) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(d + i, (utf8proc_ssize_t)(n - i), &cp);
        if (k <= 0)
            return 0;
        i += (size_t)k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!valid_utf8(data, size))
        return 0;
    const char *text = (const char *)data;
    size_t n_cp = 0;
    uint32_t *cp = vw_utf8_decode(text, size, &n_cp, NULL);
    int32_t *r = NULL;
    size_t n = 0;
    if (!cp || vw_words_split(re, text, size, &r, &n, NULL) != VW_OK)
        abort();
    char *covered = calloc(n_cp + 1, 1);
    int32_t prev = 0;
    for (size_t w = 0; w < n; w++) {
        int32_t a = r[2 * w], b = r[2 * w + 1];
        if (a < prev || b <= a || (size_t)b > n_cp)
            abort();
        if (vw_py_isspace(cp[a]) && !(b == a + 1 && vw_words_in_cjk_ranges(cp[a])))
            abort();
        for (int32_t i = a; i < b; i++)
            covered[i] = 1;
        prev = b;
    }
    for (size_t i = 0; i < n_cp; i++)
        if (!covered[i] && !vw_py_isspace(cp[i]))
            abort();
    int32_t *off = malloc((2 * n_cp + 2) * sizeof *off);
    for (size_t i = 0; i < n_cp; i++) {
        off[2 * i] = (int32_t)i;
        off[2 * i + 1] = i % 3 == 2 ? (int32_t)i : (int32_t)i + 1; /* every third token empty */
    }
    vw_words words;
    if (vw_words_of(r, n, off, n_cp, &words, NULL) != VW_OK)
        abort();
    for (size_t w = 0; w < words.n; w++) {
        int32_t t = words.first[w];
        if (t < 0 || (size_t)t >= n_cp || off[2 * t + 1] <= off[2 * t] ||
            off[2 * t] >= words.offsets[2 * w + 1])
            abort();
    }
    vw_words_free(&words);
    free(off);
    free(covered);
    free(r);
    free(cp);
    return 0;
}
