/* test_answers.c — raw logits to answer values (docs/spec/answers.md §4, §6.6, §7.1,
 * fixture §9.1 [T-ANS]). Expected values: the spec's digits, or NumPy float64 /
 * float32 as the reference computes them. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "answers/answers.h"

static const char *CAL_JSON =
    "{\"temperature\": {\"choice\": 1.3, \"score\": 1.1, \"set\": 1.05, \"span\": 0.4},"
    " \"thresholds\": {\"set:*\": 0.3, \"span:toxic\": 0.1, \"span:halu\": 0.55, \"span:*\": 0.5},"
    " \"pii_types\": [\"AGE\", \"EMAIL_ADDRESS\", \"PERSON\"],"
    " \"pii_length_rule\": {\"anchors\": [{\"n_tokens\": 21, \"threshold\": 0.75},"
    "   {\"n_tokens\": 126, \"threshold\": 0.05}, {\"n_tokens\": 1022, \"threshold\": 0.005919}]},"
    " \"pii_sparse_gate\": {\"K\": 3, \"t_sparse\": 0.1, \"probe_threshold\": 0.5},"
    " \"broad_head\": {\"temperature\": 1.0, \"threshold\": 0.55},"
    " \"noul_calibration\": {\"T\": 2.0, \"b\": 0.25, \"default\": false}}";

static vw_cal *cal_load(const char *js) {
    vw_cal *cal = NULL;
    vw_err e = {0};
    cr_assert_eq(vw_cal_parse(js, strlen(js), &cal, &e), VW_OK, "%s", e.msg);
    return cal;
}

static void assert_rel(double got, double want, const char *what) {
    cr_assert(fabs(got - want) <= 1e-12 * fabs(want), "%s: got %.17g want %.17g", what, got, want);
}

Test(answers, fixture_9_1_choice) {
    vw_cal *cal = cal_load(CAL_JSON);
    const double z[4] = {2.0, 0.5, -1.0, 0.3};
    vw_answer a;
    cr_assert_eq(vw_answer_choice(cal, z, 4, 3, true, &a, NULL), VW_OK);
    cr_assert_null(a.error);
    cr_assert_eq(a.kind, VW_ANS_CHOICE);
    cr_assert_eq(a.pick, 0, "math");
    cr_assert_eq(a.n, 3);
    assert_rel(a.probabilities[0], 0.7067578071182614, "math");
    assert_rel(a.probabilities[1], 0.22292644838226955, "law");
    assert_rel(a.probabilities[2], 0.07031574449946904, "other");
    assert_rel(a.confidence, 0.48383135873599187, "confidence");
    cr_assert(a.has_abstain);
    assert_rel(a.abstain, 0.16046672076465215, "abstain");
    vw_answer_free(&a);
    cr_assert_null(a.probabilities);
    vw_answer_free(NULL);
    vw_cal_free(cal);
}

Test(answers, fixture_9_1_noul_score_set) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_answer a;
    const double zn[3] = {-0.4, 1.2, 0.1};
    cr_assert_eq(vw_answer_noul(cal, zn, 3, true, false, &a, NULL), VW_OK);
    assert_rel(a.noul, 0.7739531792866866, "noul");
    cr_assert_eq(vw_answer_noul(cal, zn, 3, true, true, &a, NULL), VW_OK);
    assert_rel(a.noul, 0.7037844257867932, "noul calibrated (T 2, b 0.25)");

    const double zs[3] = {0.2, 1.5, -0.7};
    cr_assert_eq(vw_answer_score(cal, zs, 3, 3, &a, NULL), VW_OK);
    assert_rel(a.probabilities[0], 0.21269672705850162, "p0");
    assert_rel(a.probabilities[1], 0.6934544222892949, "p1");
    assert_rel(a.probabilities[2], 0.09384885065220339, "p2");
    assert_rel(a.score, 0.8811521235937017, "score");
    assert_rel(a.confidence, 0.5613688600233726, "confidence");
    cr_assert(!a.has_abstain, "Score has no abstain");
    vw_answer_free(&a);

    const double zt[2] = {1.4, -2.0};
    cr_assert_eq(vw_answer_set(cal, zt, 2, 2, "topics", NULL, &a, NULL), VW_OK);
    assert_rel(a.probabilities[0], 0.791391472673955, "billing");
    assert_rel(a.probabilities[1], 0.12957046939970593, "topics.travel");
    cr_assert(a.selected[0] && !a.selected[1], "selected [billing]");
    cr_assert_eq(a.threshold, 0.3);
    vw_answer_free(&a);
    /* A request threshold overrides set:*; selection is strict (p > threshold). */
    double given = 0.791391472673955;
    cr_assert_eq(vw_answer_set(cal, zt, 2, 2, "topics", &given, &a, NULL), VW_OK);
    cr_assert(!a.selected[0] && a.threshold == given);
    vw_answer_free(&a);
    vw_cal_free(cal);
}

static const char *TEXT = "mail tom.b@ex.com now";
static const int32_t WORDS[] = {0, 4, 5, 17, 18, 21};
static const char *const PII_LABELS[] = {"EMAIL_ADDRESS", "PERSON"};

static vw_span_answer_in span_in(const vw_text *t, const double *z, const double *given) {
    vw_span_answer_in in = {t, WORDS,          3,     z,     6, "pii", PII_LABELS, 2,
                            9, VW_SPAN_ROUTER, given, false, 0, 0};
    return in;
}

Test(answers, fixture_9_1_span_and_alias_labels) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_text t;
    cr_assert_eq(vw_text_init(&t, TEXT, strlen(TEXT), NULL), VW_OK);
    const double z[6] = {-5, -5, 4, -5, -5, -5};
    double given = 0.5;
    vw_span_answer_in in = span_in(&t, z, &given);
    vw_answer a;
    vw_err e = {0};
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert_null(a.error);
    cr_assert_eq(a.spans.n, 1);
    const vw_span *s = &a.spans.items[0];
    cr_assert(s->label == 0 && s->start == 5 && s->end == 17, "EMAIL_ADDRESS 5-17");
    cr_assert(s->text_start == 5 && s->text_end == 17, "text tom.b@ex.com");
    cr_assert_eq(s->probability, 0.9999545812606812, "float32(sigmoid(10))");
    cr_assert_eq(a.noul, 0.9999546021312976, "sigmoid(10) in float64");
    cr_assert_eq(a.threshold, 0.5);
    cr_assert_eq(a.span_threshold.rule, VW_THR_GIVEN);
    cr_assert_eq(a.head, VW_SPAN_ROUTER);
    vw_answer_free(&a);
    /* Alias fixture: labels come back by index (the envelope maps PERSON -> NAME). */
    const double z2[6] = {3, -5, -5, 3, -5, -5};
    in = span_in(&t, z2, &given);
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert_eq(a.spans.n, 2);
    cr_assert(a.spans.items[0].label == 0 && a.spans.items[0].end == 4);
    cr_assert(a.spans.items[1].label == 1 && a.spans.items[1].start == 5);
    cr_assert_eq(a.spans.items[1].probability, 0.999447226524353);
    vw_answer_free(&a);
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* §9.1 NaN row, and every other type: non-finite logits fail only that question. */
Test(answers, non_finite_logits_are_invalid_model_output) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_answer a;
    const double nan4[4] = {NAN, 0, 0, 0};
    cr_assert_eq(vw_answer_choice(cal, nan4, 4, 3, true, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert_eq(a.kind, VW_ANS_CHOICE);
    cr_assert_null(a.probabilities);
    vw_answer_free(&a);
    const double abs_inf[4] = {0, 0, 0, INFINITY};
    cr_assert_eq(vw_answer_choice(cal, abs_inf, 4, 3, true, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output", "a non-finite [ABS] logit too");
    const double n3[3] = {0, -INFINITY, 0};
    cr_assert_eq(vw_answer_noul(cal, n3, 3, true, false, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert_eq(vw_answer_score(cal, n3, 3, 3, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert(strstr(a.detail, "logit 1"), "%s", a.detail);
    cr_assert_eq(vw_answer_set(cal, n3, 3, 3, "s", NULL, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert_null(a.selected);
    vw_text t;
    vw_text_init(&t, TEXT, strlen(TEXT), NULL);
    const double zs[6] = {0, 0, NAN, 0, 0, 0};
    vw_span_answer_in in = span_in(&t, zs, NULL);
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert_eq(a.spans.n, 0);
    vw_text_free(&t);
    /* The same question with finite logits right after: unaffected. */
    const double ok[4] = {0, 1, 0, 0};
    cr_assert_eq(vw_answer_choice(cal, ok, 4, 3, true, &a, NULL), VW_OK);
    cr_assert_null(a.error);
    cr_assert_eq(a.pick, 1);
    vw_answer_free(&a);
    vw_cal_free(cal);
}

Test(answers, length_mismatches_are_errors_naming_both) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_answer a;
    vw_err e;
    const double z[4] = {0, 0, 0, 0};
    cr_assert_eq(vw_answer_choice(cal, z, 3, 3, true, &a, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "length_mismatch");
    cr_assert(strstr(e.msg, "3 logits") && strstr(e.msg, "has 4"), "%s", e.msg);
    cr_assert_eq(vw_answer_noul(cal, z, 3, false, false, &a, &e), VW_EINVAL);
    cr_assert_eq(vw_answer_score(cal, z, 4, 3, &a, &e), VW_EINVAL);
    cr_assert_eq(vw_answer_score(cal, z, 1, 1, &a, &e), VW_EINVAL, "one level");
    cr_assert_eq(vw_answer_set(cal, z, 2, 3, "s", NULL, &a, &e), VW_EINVAL);
    vw_text t;
    vw_text_init(&t, TEXT, strlen(TEXT), NULL);
    vw_span_answer_in in = span_in(&t, z, NULL);
    in.n_logits = 4;
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "4 logits") && strstr(e.msg, "3 words x 2 labels = 6"), "%s", e.msg);
    in = span_in(&t, z, NULL);
    in.has_range = true;
    in.lo = 3;
    in.hi = 99;
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "21 code points"), "%s", e.msg);
    vw_text_free(&t);
    vw_cal_free(cal);
}

Test(answers, missing_calibration_keys_fail_the_question) {
    vw_cal *cal = cal_load("{\"temperature\": {}, \"thresholds\": {}}");
    vw_answer a;
    const double z[2] = {1, 2};
    cr_assert_eq(vw_answer_set(cal, z, 2, 2, "topics", NULL, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    cr_assert(strstr(a.detail, "set:*"), "%s", a.detail);
    double given = 0.5;
    cr_assert_eq(vw_answer_set(cal, z, 2, 2, "topics", &given, &a, NULL), VW_OK);
    cr_assert_null(a.error, "a request threshold needs no calibration key");
    vw_answer_free(&a);
    vw_text t;
    vw_text_init(&t, TEXT, strlen(TEXT), NULL);
    const double zs[6] = {0};
    vw_span_answer_in in = span_in(&t, zs, NULL);
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output");
    in.head = VW_SPAN_BROAD;
    in.given = &given;
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert_str_eq(a.error, "invalid_model_output", "no broad_head temperature");
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* PII by labels: length rule (126 tokens -> 0.05), then the sparse gate raises it to 0.1. */
Test(answers, span_pii_length_rule_and_sparse_gate) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_text t;
    vw_text_init(&t, "Tom met Ann", 11, NULL);
    const int32_t w[] = {0, 3, 4, 7, 8, 11};
    const char *const labels[] = {"AGE", "PERSON"};
    /* T 0.4: P(Tom, PERSON) = sigmoid(2.5) = 0.924, P(Ann, PERSON) = sigmoid(-2.5) = 0.0759. */
    const double z[6] = {-5, 1.0, -5, -5, -5, -1.0};
    vw_span_answer_in in = {&t,   w,     3, z, 6, "names", labels, 2, 126, VW_SPAN_ROUTER,
                            NULL, false, 0, 0};
    vw_answer a;
    vw_err e = {0};
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert(a.span_threshold.rule == VW_THR_PII_LENGTH && a.span_threshold.sparse);
    cr_assert_eq(a.threshold, 0.1);
    cr_assert_eq(a.spans.n, 1, "Ann (0.0759) is below the raised threshold");
    cr_assert(a.spans.items[0].label == 1 && a.spans.items[0].end == 3);
    cr_assert_eq(a.spans.items[0].probability, 0.9241418242454529);
    assert_rel(a.noul, 0.9241418199787566, "noul");
    vw_answer_free(&a);
    /* Without the gate block the length-rule threshold 0.05 keeps Ann. */
    vw_cal *nogate = cal_load("{\"temperature\": {\"span\": 0.4}, \"thresholds\": {},"
                              " \"pii_types\": [\"AGE\", \"PERSON\"], \"pii_length_rule\": "
                              "{\"anchors\": [{\"n_tokens\": 21, \"threshold\": 0.75}, "
                              "{\"n_tokens\": 126, \"threshold\": 0.05}]}}");
    cr_assert_eq(vw_answer_span(nogate, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert(!a.span_threshold.sparse);
    assert_rel(a.threshold, 0.05, "length rule");
    cr_assert_eq(a.spans.n, 2);
    vw_answer_free(&a);
    vw_cal_free(nogate);
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* Broad head: its own temperature (1.0) and threshold (0.55). */
Test(answers, span_broad_head_temperature_and_threshold) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_text t;
    vw_text_init(&t, "x", 1, NULL);
    const int32_t w[] = {0, 1};
    const char *const labels[] = {"COLOUR"};
    const double z[1] = {0.1};
    vw_span_answer_in in = {&t,   w,     1, z, 1, "colours", labels, 1, 1, VW_SPAN_BROAD,
                            NULL, false, 0, 0};
    vw_answer a;
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert_eq(a.threshold, 0.55);
    cr_assert_eq(a.spans.n, 0, "sigmoid(0.1) = 0.525 <= 0.55");
    assert_rel(a.noul, 0.52497918747894, "broad T 1.0");
    cr_assert_eq(a.head, VW_SPAN_BROAD);
    vw_answer_free(&a);
    in.head = VW_SPAN_ROUTER; /* T 0.4, span:* 0.5: sigmoid(0.25) = 0.562 decodes */
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert_eq(a.spans.n, 1);
    cr_assert_eq(a.spans.items[0].probability, 0.562176525592804);
    vw_answer_free(&a);
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* §6.6: clipping to the `over` key's range rebases the spans and restricts the Noul view. */
Test(answers, span_clipped_to_over_range) {
    vw_cal *cal = cal_load(CAL_JSON);
    const char *s = "a: Tom Baker.\n\nb: Ann";
    vw_text t;
    vw_text_init(&t, s, strlen(s), NULL);
    const int32_t w[] = {0, 1, 1, 2, 3, 6, 7, 12, 12, 13, 15, 16, 16, 17, 18, 21};
    const char *const labels[] = {"who"};
    const double z[8] = {-5, -5, 2, 2, -5, -5, -5, 3};
    double given = 0.5;
    vw_span_answer_in in = {&t,     w,    8, z, 8, "who", labels, 1, 9, VW_SPAN_ROUTER,
                            &given, true, 3, 13};
    vw_answer a;
    vw_err e = {0};
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert_eq(a.spans.n, 1, "Ann lies outside [3, 13)");
    cr_assert(a.spans.items[0].start == 0 && a.spans.items[0].end == 9, "rebased Tom Baker");
    cr_assert(a.spans.items[0].text_start == 3 && a.spans.items[0].text_end == 12);
    cr_assert_eq(a.spans.items[0].probability, 0.9933071732521057);
    assert_rel(a.noul, 0.9933071490757153, "max over words inside the range (not Ann's)");
    vw_answer_free(&a);
    /* A range holding no word: Noul view 0.0. */
    in.lo = 13;
    in.hi = 15;
    cr_assert_eq(vw_answer_span(cal, &in, &a, &e), VW_OK, "%s", e.msg);
    cr_assert(a.spans.n == 0 && a.noul == 0.0);
    vw_answer_free(&a);
    vw_text_free(&t);
    vw_cal_free(cal);
}

/* §7.1 through the answer: uncovered words (-30) never decode; no words -> Noul 0. */
Test(answers, span_from_windows_and_without_words) {
    vw_cal *cal = cal_load(CAL_JSON);
    vw_text t;
    vw_text_init(&t, "a b c d", 7, NULL);
    const int32_t w[] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int32_t i0[] = {0, 1}, i1[] = {1, 2};
    const float z0[] = {2.0f, 2.0f}, z1[] = {-2.0f, 30.0f};
    vw_span_window win[2] = {{i0, 2, z0}, {i1, 2, z1}};
    double z[4];
    cr_assert_eq(vw_span_window_average(win, 2, 4, 1, z, NULL), VW_OK);
    cr_assert(z[1] == 0.0 && z[3] == -30.0);
    const char *const labels[] = {"L"};
    double given = 0.5;
    vw_span_answer_in in = {&t, w, 4, z, 4, "q", labels, 1, 7, VW_SPAN_ROUTER, &given, false, 0, 0};
    vw_answer a;
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    /* P = sigmoid(z / 0.4): words 0 and 2 above 0.5, word 1 exactly 0.5, word 3 ~2.7e-33. */
    cr_assert_eq(a.spans.n, 2);
    cr_assert(a.spans.items[0].end == 1 && a.spans.items[1].start == 4);
    cr_assert_eq(a.noul, 1.0 / (1.0 + exp(-75.0)));
    vw_answer_free(&a);
    in.n_words = 0;
    in.n_logits = 0;
    cr_assert_eq(vw_answer_span(cal, &in, &a, NULL), VW_OK);
    cr_assert(a.spans.n == 0 && a.noul == 0.0 && a.threshold == 0.5);
    vw_answer_free(&a);
    vw_text_free(&t);
    vw_cal_free(cal);
}
