/* test_span_decode.c — span decoder, units, trims, sparse gate, clipping and
 * window averaging (docs/spec/answers.md §4.6, §6, §7.1, fixtures §9.3). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/pystr.h"
#include "answers/span_decode.h"

typedef struct decoded {
    vw_text text;
    vw_span_list spans;
} decoded;

static void text_of(vw_text *t, const char *s) {
    vw_err e = {0};
    cr_assert_eq(vw_text_init(t, s, strlen(s), &e), VW_OK, "%s", e.msg);
}

static decoded decode(const char *s, const int32_t *words, size_t nw, const double *p, size_t nl,
                      double threshold) {
    decoded d;
    text_of(&d.text, s);
    vw_err e = {0};
    vw_status st = vw_span_decode(&d.text, words, nw, p, nl, threshold, &d.spans, &e);
    cr_assert_eq(st, VW_OK, "%s", e.msg);
    return d;
}

static void done(decoded *d) {
    vw_span_list_free(&d->spans);
    vw_text_free(&d->text);
}

static void assert_span(const vw_span *s, int32_t label, int64_t a, int64_t b, double prob) {
    cr_assert_eq(s->label, label, "label %d", s->label);
    cr_assert_eq(s->start, a, "start %lld", (long long)s->start);
    cr_assert_eq(s->end, b, "end %lld", (long long)s->end);
    cr_assert_eq(s->text_start, a);
    cr_assert_eq(s->text_end, b);
    cr_assert_eq(s->probability, prob, "probability %.17g want %.17g", s->probability, prob);
}

/* §9.3: joins neighbours; float32 mean 0.7999999523162842. */
Test(span_decode, joins_neighbours_float32_mean) {
    const int32_t w[] = {0, 3, 4, 9, 10, 14, 15, 17};
    const double p[] = {0.9, 0.1, 0.7, 0.1, 0.1, 0.2, 0.1, 0.1};
    decoded d = decode("Tom Baker said hi", w, 4, p, 2, 0.5);
    cr_assert_eq(d.spans.n, 1);
    assert_span(&d.spans.items[0], 0, 0, 9, 0.7999999523162842);
    cr_assert(fabs(d.spans.items[0].probability - 0.8) < 1e-6);
    done(&d);
}

/* §9.3: 0.5000000001 rounds to 0.5 in float32 and is not above 0.5. One word. */
Test(span_decode, compares_in_float32_one_word) {
    const int32_t w[] = {0, 1};
    const double p[] = {0.5000000001, 0.0};
    decoded d = decode("x", w, 1, p, 2, 0.5);
    cr_assert_eq(d.spans.n, 0);
    done(&d);
    /* Same word above the threshold: one span. */
    const double q[] = {0.5000001, 0.0};
    d = decode("x", w, 1, q, 2, 0.5);
    cr_assert_eq(d.spans.n, 1);
    assert_span(&d.spans.items[0], 0, 0, 1, (double)(float)0.5000001);
    done(&d);
}

/* §9.3: one unit (an e-mail address) with conflicting labels: vote 0.9 vs 0.6, fill. */
Test(span_decode, votes_inside_unit_and_fills) {
    const int32_t w[] = {0, 3, 3, 4, 4, 8};
    const double p[] = {0.9, 0.0, 0.0, 0.0, 0.0, 0.6};
    decoded d = decode("a.b@c.de", w, 3, p, 2, 0.5);
    cr_assert_eq(d.spans.n, 1);
    assert_span(&d.spans.items[0], 0, 0, 8, 0.29999998211860657);
    done(&d);
    /* A vote tie keeps the label met first in word order. */
    const int32_t w2[] = {0, 1, 1, 2, 2, 3};
    const double p2[] = {0.0, 0.7, 0.0, 0.0, 0.7, 0.0};
    d = decode("a.b", w2, 3, p2, 2, 0.5);
    cr_assert_eq(d.spans.n, 1);
    assert_span(&d.spans.items[0], 1, 0, 3, 0.23333333432674408);
    done(&d);
}

/* §9.3 / §6.5.3: a rejected word ends the active span: [0.9, 0.1, 0.9] -> TWO spans. */
Test(span_decode, rejected_word_resets_active_span) {
    const int32_t w[] = {0, 3, 4, 7, 8, 11};
    const double p[] = {0.9, 0.1, 0.9};
    decoded d = decode("Tom met Ann", w, 3, p, 1, 0.5);
    cr_assert_eq(d.spans.n, 2);
    assert_span(&d.spans.items[0], 0, 0, 3, 0.8999999761581421);
    assert_span(&d.spans.items[1], 0, 8, 11, 0.8999999761581421);
    done(&d);
}

/* §9.3: `+` stays out of the phone span; U . S . A is filled inside its unit. */
Test(span_decode, units_fill_but_do_not_extend) {
    const char *s = "Call +1-555-0100 or U.S.A. now";
    const int32_t w[] = {0,  4,  5,  6,  6,  16, 17, 19, 20, 21, 21,
                         22, 22, 23, 23, 24, 24, 25, 25, 26, 27, 30};
    const double p[] = {0.1, 0.2, 0.9, 0.1, 0.6, 0.1, 0.1, 0.1, 0.7, 0.1, 0.1};
    decoded d = decode(s, w, 11, p, 1, 0.5);
    cr_assert_eq(d.spans.n, 2);
    assert_span(&d.spans.items[0], 0, 6, 16, 0.8999999761581421);
    assert_span(&d.spans.items[1], 0, 20, 25, 0.320000022649765);
    done(&d);
}

Test(span_decode, empty_text_no_words_and_all_below_threshold) {
    decoded d = decode("", NULL, 0, NULL, 2, 0.5);
    cr_assert_eq(d.spans.n, 0);
    cr_assert_null(d.spans.items);
    done(&d);
    const int32_t w[] = {0, 3, 4, 7, 8, 11};
    const double p[] = {0.4, 0.2, 0.5, 0.5, 0.49, 0.0};
    d = decode("Tom met Ann", w, 3, p, 2, 0.5);
    cr_assert_eq(d.spans.n, 0, "p == threshold is not above it");
    done(&d);
}

/* The float32 mean is NumPy's pairwise float32 sum (differs from a float64 mean
 * rounded once and from a sequential float32 sum). Values from NumPy 2.4. */
Test(span_decode, long_span_mean_is_numpy_float32) {
    const struct {
        size_t n, m;
        double want;
    } cases[] = {
        {20, 3, 0.3176666498184204}, {130, 13, 0.462538480758667}, {300, 7, 0.4286190867424011}};
    for (size_t c = 0; c < 3; c++) {
        size_t n = cases[c].n;
        char *s = malloc(2 * n);
        int32_t *w = malloc(2 * n * sizeof *w);
        double *p = malloc(n * sizeof *p);
        for (size_t i = 0; i < n; i++) {
            s[2 * i] = 'a';
            s[2 * i + 1] = i + 1 < n ? ' ' : '\0';
            w[2 * i] = (int32_t)(2 * i);
            w[2 * i + 1] = (int32_t)(2 * i + 1);
            p[i] = (double)((i * 37) % cases[c].m) / (double)cases[c].m + 0.001;
        }
        decoded d = decode(s, w, n, p, 1, 0.0);
        cr_assert_eq(d.spans.n, 1);
        cr_assert_eq(d.spans.items[0].end, (int64_t)(2 * n - 1));
        cr_assert_eq(d.spans.items[0].probability, cases[c].want, "n=%zu: %.17g", n,
                     d.spans.items[0].probability);
        done(&d);
        free(s);
        free(w);
        free(p);
    }
}

/* §9.3 trims, through vw_span_trim. */
Test(span_decode, trim_edges_urls_and_cjk) {
    const struct {
        const char *text;
        int64_t a, b, want_a, want_b;
    } cases[] = {
        {"(\"hello\")", 0, 9, 2, 7},
        {"see www.example.com/x).", 4, 23, 4, 21},
        {"www.example.com.", 0, 16, 0, 15},   /* URL: trailing '.' goes */
        {"example.com.", 0, 12, 0, 12},       /* not a URL: '.' stays */
        {"HtTpS://A.b/c,;", 0, 15, 0, 13},    /* prefix is case-insensitive */
        {"httpſ://a.b.", 0, 12, 0, 11},       /* ſ matches s under IGNORECASE */
        {"https://a.b/路径).", 0, 16, 0, 12}, /* cut at the first CJK char */
        {"「张三」说", 0, 4, 1, 3},           /* CJK brackets are EDGE */
        {" \t«x»\u3000", 0, 6, 3, 4},         /* whitespace incl. U+3000, guillemets */
        {"()", 0, 2, 2, 2},                   /* nothing left */
        {"www", 0, 3, 0, 3},                  /* no prefix: untouched */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vw_text t;
        text_of(&t, cases[i].text);
        int64_t a = cases[i].a, b = cases[i].b;
        vw_span_trim(&t, &a, &b);
        cr_assert(a == cases[i].want_a && b == cases[i].want_b, "case %zu: got [%lld, %lld)", i,
                  (long long)a, (long long)b);
        vw_text_free(&t);
    }
}

/* A decoded URL stretch with a CJK tail: cut at the CJK char, trailing ")." stripped. */
Test(span_decode, decoder_applies_url_and_cjk_trims) {
    const char *s = "see https://example.com/a).你好";
    /* words: see | https://example.com/a | ) | . | 你 | 好 */
    const int32_t w[] = {0, 3, 4, 25, 25, 26, 26, 27, 27, 28, 28, 29};
    const double p[] = {0.1, 0.9, 0.8, 0.8, 0.9, 0.9};
    decoded d = decode(s, w, 6, p, 1, 0.5);
    cr_assert_eq(d.spans.n, 1);
    cr_assert_eq(d.spans.items[0].start, 4);
    cr_assert_eq(d.spans.items[0].end, 25);
    done(&d);
    /* CJK words joined, edge brackets trimmed: 「张三」说 -> 张三. */
    const int32_t w2[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 5};
    const double p2[] = {0.9, 0.9, 0.9, 0.9, 0.1};
    d = decode("「张三」说", w2, 5, p2, 1, 0.5);
    cr_assert_eq(d.spans.n, 1);
    cr_assert_eq(d.spans.items[0].start, 1);
    cr_assert_eq(d.spans.items[0].end, 3);
    done(&d);
    /* A stretch of edge characters only trims to nothing and is dropped. */
    const int32_t w3[] = {0, 1, 1, 2, 3, 4};
    const double p3[] = {0.9, 0.9, 0.1};
    d = decode("() x", w3, 3, p3, 1, 0.5);
    cr_assert_eq(d.spans.n, 0);
    done(&d);
}

Test(span_decode, unit_scan_and_word_units) {
    vw_text t;
    text_of(&t, "Mail a.b@c.de, see https://x.org/a?b=1. +1-555 U.S.A. 你好 ) www.");
    int64_t *b = NULL;
    size_t n = 0;
    cr_assert_eq(vw_units_scan(&t, &b, &n, NULL), VW_OK);
    const char *want[] = {"Mail", "a.b@c.de", ",",      "see", "https://x.org/a?b=1",
                          ".",    "+1-555",   "U.S.A.", "你",  "好",
                          ")",    "www."};
    cr_assert_eq(n, sizeof want / sizeof want[0], "%zu units", n);
    for (size_t i = 0; i < n; i++) {
        size_t len = (size_t)(b[2 * i + 1] - b[2 * i]);
        cr_assert_eq(len, strlen(want[i]) - (i == 8 || i == 9 ? 2 : 0), "unit %zu", i);
    }
    free(b);
    vw_text_free(&t);
    /* Upper-case URL prefixes are not URL units (case-sensitive `_UNIT`). */
    text_of(&t, "HTTP://a.b) x");
    cr_assert_eq(vw_units_scan(&t, &b, &n, NULL), VW_OK);
    cr_assert_eq(n, 7, "HTTP | : | / | / | a.b | ) | x -> %zu", n);
    free(b);
    vw_text_free(&t);
    /* Word -> unit: a whitespace-only word has no unit; leading spaces are skipped. */
    text_of(&t, "ab  cd");
    const int32_t w[] = {0, 2, 2, 3, 3, 6};
    int64_t u[3];
    cr_assert_eq(vw_word_units(&t, w, 3, u, NULL), VW_OK);
    cr_assert(u[0] == 0 && u[1] == -1 && u[2] == 1, "%lld %lld %lld", (long long)u[0],
              (long long)u[1], (long long)u[2]);
    vw_text_free(&t);
    text_of(&t, "");
    cr_assert_eq(vw_units_scan(&t, &b, &n, NULL), VW_OK);
    cr_assert(n == 0 && b == NULL);
    vw_text_free(&t);
}

Test(span_decode, character_classes) {
    cr_assert(vw_py_isspace(0x1C) && vw_py_isspace(0x85) && vw_py_isspace(0x202F));
    cr_assert(!vw_py_isspace(0x200B), "ZWSP is not whitespace in Python");
    cr_assert(vw_py_isalnum(0x00B2) && vw_py_isalnum(0x2160) && vw_py_isalnum(0x4E00));
    cr_assert(!vw_py_isalnum('_') && !vw_py_isalnum(0x00B7));
    cr_assert(vw_cp_is_cjk(0xAC00) && vw_cp_is_cjk(0x8C48) && vw_cp_is_cjk(0xE000));
    cr_assert(!vw_cp_is_cjk(0x2E7F) && !vw_cp_is_cjk(0xFB00));
    cr_assert(vw_cp_is_edge(0x2039) && !vw_cp_is_edge('.'));
}

/* §9.3 / [T-CAL]: the sparse gate at K 3 / t_sparse 0.1 / probe 0.5. */
Test(span_decode, sparse_gate) {
    const char *js =
        "{\"temperature\": {}, \"thresholds\": {},"
        " \"pii_sparse_gate\": {\"K\": 3, \"t_sparse\": 0.1, \"probe_threshold\": 0.5}}";
    vw_cal *cal = NULL;
    cr_assert_eq(vw_cal_parse(js, strlen(js), &cal, NULL), VW_OK);
    vw_text t;
    text_of(&t, "Tom met Ann");
    const int32_t w[] = {0, 3, 4, 7, 8, 11};
    const double p[] = {0.0, 0.9, 0.0, 0.0, 0.0, 0.08};
    vw_span_threshold thr = {0.01, VW_THR_PII_LENGTH, false, NULL};
    cr_assert_eq(vw_span_sparse_gate(cal, &t, w, 3, p, 2, &thr, NULL), VW_OK);
    cr_assert_eq(thr.value, 0.1);
    cr_assert(thr.sparse);
    char name[32];
    cr_assert_str_eq(vw_span_threshold_name(&thr, "pii", name, sizeof name), "pii:length+sparse");
    vw_span_list spans;
    cr_assert_eq(vw_span_decode(&t, w, 3, p, 2, thr.value, &spans, NULL), VW_OK);
    cr_assert_eq(spans.n, 1, "only Tom decodes at 0.1");
    cr_assert_eq(spans.items[0].end, 3);
    vw_span_list_free(&spans);
    /* threshold >= t_sparse: unchanged. */
    thr = (vw_span_threshold){0.2, VW_THR_PII_LENGTH, false, NULL};
    vw_span_sparse_gate(cal, &t, w, 3, p, 2, &thr, NULL);
    cr_assert(thr.value == 0.2 && !thr.sparse);
    /* Not a PII rule: unchanged. */
    thr = (vw_span_threshold){0.01, VW_THR_GIVEN, false, NULL};
    vw_span_sparse_gate(cal, &t, w, 3, p, 2, &thr, NULL);
    cr_assert(thr.value == 0.01 && !thr.sparse);
    /* No words: unchanged. */
    thr = (vw_span_threshold){0.01, VW_THR_PII_LENGTH, false, NULL};
    vw_span_sparse_gate(cal, &t, w, 0, p, 2, &thr, NULL);
    cr_assert(!thr.sparse);
    /* More than K spans at the probe: unchanged. */
    vw_text t5;
    text_of(&t5, "a b c d e");
    const int32_t w5[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const double p5[] = {0.9, 0.0, 0.9, 0.0, 0.9, 0.0, 0.9, 0.0, 0.9, 0.0};
    /* 5 one-word spans? no: neighbours join. Alternate labels keep them apart. */
    const double p5b[] = {0.9, 0.0, 0.0, 0.9, 0.9, 0.0, 0.0, 0.9, 0.9, 0.0};
    thr = (vw_span_threshold){0.01, VW_THR_PII_BUCKET, false, "short"};
    vw_span_sparse_gate(cal, &t5, w5, 5, p5, 2, &thr, NULL);
    cr_assert(thr.sparse, "one joined span <= 3");
    thr = (vw_span_threshold){0.01, VW_THR_PII_BUCKET, false, "short"};
    vw_span_sparse_gate(cal, &t5, w5, 5, p5b, 2, &thr, NULL);
    cr_assert(!thr.sparse && thr.value == 0.01, "5 spans > K");
    vw_text_free(&t5);
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* §6.6: clip to the `over` range, re-trim, drop empties, rebase. */
Test(span_decode, clip_to_over_range) {
    vw_text t;
    const char *s = "a: Tom Baker.\n\nb: (Ann)";
    text_of(&t, s);
    /* key a's value "Tom Baker." is [3, 13); key b's "(Ann)" is [18, 23). */
    vw_span items[] = {
        {0, 0, 9, 0, 9, 0.5},     /* "a: Tom Ba" -> clipped to "Tom Ba" */
        {1, 7, 22, 7, 22, 0.6},   /* "Baker.\n\nb: (Ann" -> "Baker." */
        {0, 18, 23, 18, 23, 0.7}, /* outside: dropped */
        {0, 1, 3, 1, 3, 0.8},     /* ": " clipped to empty */
    };
    vw_span_list l = {malloc(sizeof items), 4};
    memcpy(l.items, items, sizeof items);
    cr_assert_eq(vw_span_clip(&t, &l, 3, 13, NULL), VW_OK);
    cr_assert_eq(l.n, 2);
    cr_assert(l.items[0].start == 0 && l.items[0].end == 6, "%lld %lld",
              (long long)l.items[0].start, (long long)l.items[0].end);
    cr_assert(l.items[0].text_start == 3 && l.items[0].text_end == 9);
    cr_assert(l.items[1].start == 4 && l.items[1].end == 10 && l.items[1].probability == 0.6);
    cr_assert(l.items[1].text_start == 7 && l.items[1].text_end == 13);
    /* Clip to b: the brackets are trimmed again after the cut. */
    l.n = 1;
    l.items[0] = (vw_span){0, 15, 23, 15, 23, 0.7};
    cr_assert_eq(vw_span_clip(&t, &l, 18, 23, NULL), VW_OK);
    cr_assert(l.n == 1 && l.items[0].start == 1 && l.items[0].end == 4);
    vw_err e;
    cr_assert_eq(vw_span_clip(&t, &l, 5, 99, &e), VW_EINVAL);
    vw_span_list_free(&l);
    vw_text_free(&t);
}

/* §7.1: float64 mean over covering windows, -30 for uncovered words. */
Test(span_decode, window_average_with_uncovered_words) {
    const int32_t i0[] = {0, 1, 2}, i1[] = {2, 3};
    const float z0[] = {1.0f, -1.0f, 2.0f, 0.5f, 0.1f, 3.0f};
    const float z1[] = {0.2f, 1.0f, -4.0f, 8.0f};
    vw_span_window win[2] = {{i0, 3, z0}, {i1, 2, z1}};
    double out[10];
    cr_assert_eq(vw_span_window_average(win, 2, 5, 2, out, NULL), VW_OK);
    cr_assert_eq(out[0], 1.0);
    cr_assert_eq(out[3], 0.5);
    cr_assert_eq(out[4], ((double)0.1f + (double)0.2f) / 2.0, "word 2 averaged in float64");
    cr_assert_eq(out[5], 2.0);
    cr_assert(out[6] == -4.0 && out[7] == 8.0);
    cr_assert(out[8] == -30.0 && out[9] == -30.0, "uncovered word");
    /* No windows: every word uncovered. */
    cr_assert_eq(vw_span_window_average(NULL, 0, 5, 2, out, NULL), VW_OK);
    cr_assert_eq(out[0], VW_SPAN_UNCOVERED_LOGIT);
    vw_err e;
    const int32_t bad[] = {1, 1};
    vw_span_window wb = {bad, 2, z1};
    cr_assert_eq(vw_span_window_average(&wb, 1, 5, 2, out, &e), VW_EINVAL);
    const int32_t oob[] = {5};
    wb = (vw_span_window){oob, 1, z1};
    cr_assert_eq(vw_span_window_average(&wb, 1, 5, 2, out, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "5 words"), "%s", e.msg);
}

Test(span_decode, malformed_inputs_are_errors) {
    vw_text t;
    text_of(&t, "Tom met Ann");
    vw_span_list l;
    vw_err e;
    const double p[] = {0.9, 0.9, 0.9};
    const int32_t overlap[] = {0, 3, 2, 7};
    cr_assert_eq(vw_span_decode(&t, overlap, 2, p, 1, 0.5, &l, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "bad_words");
    const int32_t past[] = {0, 3, 8, 12};
    cr_assert_eq(vw_span_decode(&t, past, 2, p, 1, 0.5, &l, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "11 code points"), "%s", e.msg);
    const int32_t empty[] = {0, 0};
    cr_assert_eq(vw_span_decode(&t, empty, 1, p, 1, 0.5, &l, &e), VW_EINVAL);
    const int32_t ok[] = {0, 3};
    cr_assert_eq(vw_span_decode(&t, ok, 1, p, 0, 0.5, &l, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "length_mismatch");
    const double nan[] = {NAN};
    cr_assert_eq(vw_span_decode(&t, ok, 1, nan, 1, 0.5, &l, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "invalid_model_output");
    cr_assert_null(l.items);
    vw_text_free(&t);
    cr_assert_eq(vw_text_init(&t, "a\xff", 2, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "byte 1"), "%s", e.msg);
}

Test(span_decode, text_byte_offsets) {
    vw_text t;
    text_of(&t, "a\xc3\xa9\xe4\xbd\xa0"
                "b");
    cr_assert_eq(t.n, 4);
    cr_assert(t.byte_at[0] == 0 && t.byte_at[1] == 1 && t.byte_at[2] == 3 && t.byte_at[3] == 6 &&
              t.byte_at[4] == 7);
    vw_text_free(&t);
    vw_text_free(NULL);
}
