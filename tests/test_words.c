/* test_words.c — `_WORD` units against Python `re` (fixtures/words, made by
 * tools/make_words_vectors.py), Decision 7's CJK extras, the spec vectors and
 * the first-token mapping (docs/spec/request.md §6.4, docs/spec/answers.md §6.2–6.3). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "util/pystr.h"
#include "vw_test.h"
#include "render/words.h"

#define HINT "(regenerate with tools/make_words_vectors.py)"

static vw_word_re *re;
static void setup(void) {
    vw_err err = {0};
    cr_assert_eq(vw_word_re_new(&re, &err), VW_OK, "%s", err.msg);
}
static void teardown(void) {
    vw_word_re_free(re);
}
TestSuite(words, .init = setup, .fini = teardown);

/* The words of text as "w1|w2|..." (code-point slices). */
static char *joined(const char *text) {
    int32_t *r = NULL;
    size_t n = 0;
    cr_assert_eq(vw_words_split(re, text, strlen(text), &r, &n, NULL), VW_OK);
    size_t cps;
    size_t *at = NULL;
    uint32_t *cp = vw_utf8_decode(text, strlen(text), &cps, &at);
    char *out = calloc(1, strlen(text) * 2 + n + 2);
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(out, "|");
        strncat(out, text + at[r[2 * i]], at[r[2 * i + 1]] - at[r[2 * i]]);
    }
    free(cp);
    free(at);
    free(r);
    return out;
}

Test(words, spec_vectors) {
    char *w = joined("state-of-the-art, well_known (yes)!");
    cr_expect_str_eq(w, "state-of-the-art|,|well_known|(|yes|)|!");
    free(w);
    w = joined("Mail tom.baker@example.com or see https://example.org/a?b=1. @alice 你好");
    cr_expect_str_eq(w,
                     "Mail|tom.baker@example.com|or|see|https://example.org/a?b=1|.|@alice|你|好");
    free(w);
    w = joined("hi there");
    cr_expect_str_eq(w, "hi|there");
    free(w);
}

Test(words, decision7_cjk_extras_are_one_character_words) {
    /* U+13A0 (Cherokee capital) and U+0261 lower-case into U+8C48-FAFF */
    char *w = joined("ab\xE1\x8E\xA0"
                     "cd x\xC9\xA1y");
    cr_expect_str_eq(w, "ab|\xE1\x8E\xA0|cd|x|\xC9\xA1|y");
    free(w);
    size_t n;
    const uint32_t *ex = vw_words_cjk_extras(&n);
    cr_assert_eq(n, 93);
    /* The same set from utf8proc's simple lower-case mapping: c outside the
     * ranges with lower(c) == lower(d) for some d inside, plus sre's one extra
     * case pair touching the ranges (U+1C88 <-> U+A64B, re._casefix). */
    unsigned char *low = calloc(0x110000, 1);
    for (uint32_t d = 0; d < 0x110000; d++)
        if (vw_words_in_cjk_ranges(d))
            low[utf8proc_tolower((utf8proc_int32_t)d)] = 1;
    low[0x1C88] = low[0xA64B];
    size_t found = 0;
    for (uint32_t c = 0; c < 0x110000; c++) {
        if ((c >= 0xD800 && c <= 0xDFFF) || vw_words_in_cjk_ranges(c) ||
            !low[utf8proc_tolower((utf8proc_int32_t)c)])
            continue;
        cr_expect(found < n && ex[found] == c, "extra %04X", c);
        found++;
    }
    free(low);
    cr_expect_eq(found, 93);
}

Test(words, python_re_vectors) {
    char *path = vw_test_path("fixtures/words/words.jsonl");
    char *data = vw_test_read_file(path, NULL);
    cr_assert_not_null(data, "%s " HINT, path);
    size_t texts = 0, bad = 0;
    for (char *line = strtok(data, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *rec = json_loads(line, JSON_ALLOW_NUL, &e);
        cr_assert_not_null(rec, "%s", e.text);
        const json_t *t = json_object_get(rec, "text"), *want = json_object_get(rec, "words");
        int32_t *r = NULL;
        size_t n = 0;
        cr_assert_eq(vw_words_split(re, json_string_value(t), json_string_length(t), &r, &n, NULL),
                     VW_OK);
        bool same = n == json_array_size(want);
        for (size_t i = 0; same && i < n; i++) {
            const json_t *p = json_array_get(want, i);
            same = r[2 * i] == json_integer_value(json_array_get(p, 0)) &&
                   r[2 * i + 1] == json_integer_value(json_array_get(p, 1));
        }
        if (!same && bad++ < 5)
            cr_log_error("text %s: %zu words, want %zu", json_string_value(t), n,
                         json_array_size(want));
        free(r);
        json_decref(rec);
        texts++;
    }
    cr_expect_eq(bad, 0, "%zu of %zu texts split differently " HINT, bad, texts);
    cr_expect_geq(texts, 400);
    free(data);
    free(path);
}

Test(words, first_token_mapping) {
    /* "ab cd ef", offsets [0,2],[2,2],[3,4],[4,5],[6,8] -> words [0,2],[3,5],[6,8], first 0,2,4 */
    const int32_t ranges[] = {0, 2, 3, 5, 6, 8};
    const int32_t offs[] = {0, 2, 2, 2, 3, 4, 4, 5, 6, 8};
    vw_words w;
    cr_assert_eq(vw_words_of(ranges, 3, offs, 5, &w, NULL), VW_OK);
    cr_assert_eq(w.n, 3);
    const int32_t first[] = {0, 2, 4};
    for (size_t i = 0; i < 3; i++) {
        cr_expect_eq(w.first[i], first[i]);
        cr_expect_eq(w.offsets[2 * i], ranges[2 * i]);
    }
    vw_words_free(&w);
    /* only the first token: the later words are not covered and dropped */
    cr_assert_eq(vw_words_of(ranges, 3, offs, 1, &w, NULL), VW_OK);
    cr_expect_eq(w.n, 1);
    vw_words_free(&w);
    /* no words */
    cr_assert_eq(vw_words_of(ranges, 0, offs, 5, &w, NULL), VW_OK);
    cr_expect_eq(w.n, 0);
    vw_words_free(&w);
    /* a composed character's token covers [0,1); a swallowed mark belongs to
     * no token (Decision 6): the word [1,3) starts at the token [2,3) */
    const int32_t r2[] = {0, 1, 1, 3};
    const int32_t o2[] = {0, 1, 2, 3};
    cr_assert_eq(vw_words_of(r2, 2, o2, 2, &w, NULL), VW_OK);
    cr_expect(w.n == 2 && w.first[0] == 0 && w.first[1] == 1);
    vw_words_free(&w);
}

Test(words, scan_is_linear_on_adversarial_text) {
    size_t n = 200000;
    char *t = malloc(n + 16);
    memcpy(t, "http://a", 8);
    memset(t + 8, '.', n - 8);
    t[n] = 0;
    clock_t c0 = clock();
    int32_t *r = NULL;
    size_t k = 0;
    cr_assert_eq(vw_words_split(re, t, n, &r, &k, NULL), VW_OK);
    free(r);
    memset(t, '.', n); /* e-mail local-part run without '@' */
    cr_assert_eq(vw_words_split(re, t, n, &r, &k, NULL), VW_OK);
    cr_expect_eq(k, n);
    free(r);
    double s = (double)(clock() - c0) / CLOCKS_PER_SEC;
    cr_expect_lt(s, 2.0, "%.2f s for 2 x 200k adversarial characters", s);
    free(t);
}
