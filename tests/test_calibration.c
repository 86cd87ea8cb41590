/* test_calibration.c — calibration.json parsing, thresholds, PII rule, Noul
 * calibration and the calibrated probabilities (docs/spec/answers.md §4, §9.1,
 * §9.2); the float64 sums themselves are test_f64.c's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "answers/calibration.h"

/* The reference runtime's synthetic decoder calibration (spec §4.7 "test-fixture
 * values"; [RT-FIX] calibration(decoder=True)), PII schema left out. */
static const char *CAL_JSON =
    "{\"temperature\": {\"choice\": 1.3, \"score\": 1.1, \"set\": 1.05, \"span\": 0.4},"
    " \"thresholds\": {\"set:*\": 0.3, \"span:toxic\": 0.1, \"span:halu\": 0.55,"
    "                 \"span:*\": 0.5, \"span:names\": 0.42, \"set:topics\": 0.6},"
    " \"pii_types\": [\"AGE\", \"CREDIT_CARD\", \"DATE_TIME\", \"DOMAIN_NAME\","
    "   \"EMAIL_ADDRESS\", \"GPE\", \"IBAN_CODE\", \"IP_ADDRESS\", \"NRP\", \"ORGANIZATION\","
    "   \"PERSON\", \"PHONE_NUMBER\", \"STREET_ADDRESS\", \"TITLE\", \"US_DRIVER_LICENSE\","
    "   \"US_SSN\", \"ZIP_CODE\"],"
    " \"pii_length_rule\": {\"anchors\": [{\"n_tokens\": 21, \"threshold\": 0.75},"
    "   {\"n_tokens\": 126, \"threshold\": 0.05}, {\"n_tokens\": 1022, \"threshold\": 0.005919}]},"
    " \"pii_sparse_gate\": {\"K\": 3, \"t_sparse\": 0.1, \"probe_threshold\": 0.5},"
    " \"halu_schema\": {\"text\": \"x\", \"labels\": {\"unsupported\": \"y\"}},"
    " \"some_future_key\": [1, 2, {\"x\": null}],"
    " \"broad_head\": {\"temperature\": 1.0, \"threshold\": 0.55,"
    "   \"router_label_sets\": [[\"PERSON\"], [\"unsupported\"]]},"
    " \"noul_calibration\": {\"T\": 2.0, \"b\": 0.25, \"default\": false}}";

static vw_cal *load(const char *json) {
    vw_cal *cal = NULL;
    vw_err e = {0};
    vw_status st = vw_cal_parse(json, strlen(json), &cal, &e);
    cr_assert_eq(st, VW_OK, "%s: %s", e.type, e.msg);
    return cal;
}

static void assert_rel(double got, double want, double rel, const char *what) {
    double tol = rel * fabs(want);
    cr_assert(fabs(got - want) <= tol, "%s: got %.17g want %.17g", what, got, want);
}

Test(calibration, temperatures_and_missing_type) {
    vw_cal *cal = load(CAL_JSON);
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_CHOICE), 1.3);
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_SCORE), 1.1);
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_SET), 1.05);
    double t = 0;
    cr_assert_eq(vw_cal_span_temperature(cal, VW_SPAN_ROUTER, &t, NULL), VW_OK);
    cr_assert_eq(t, 0.4);
    cr_assert_eq(vw_cal_span_temperature(cal, VW_SPAN_BROAD, &t, NULL), VW_OK);
    cr_assert_eq(t, 1.0);
    cr_assert(vw_cal_has_broad(cal));
    vw_cal_free(cal);

    cal = load("{\"temperature\": {\"choice\": 2}, \"thresholds\": {}, \"broad_head\": {}}");
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_CHOICE), 2.0);
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_SCORE), 1.0, "missing type -> 1.0");
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_SET), 1.0);
    cr_assert(!vw_cal_has_broad(cal), "an empty broad_head block counts as absent");
    vw_err e;
    cr_assert_eq(vw_cal_span_temperature(cal, VW_SPAN_BROAD, &t, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "calibration_missing_key");
    vw_cal_free(cal);
    vw_cal_free(NULL);
}

Test(calibration, set_threshold_precedence) {
    vw_cal *cal = load(CAL_JSON);
    double t = 0, given = 0.9;
    cr_assert_eq(vw_cal_set_threshold(cal, "topics", &given, &t, NULL), VW_OK);
    cr_assert_eq(t, 0.9, "request threshold first");
    cr_assert_eq(vw_cal_set_threshold(cal, "topics", NULL, &t, NULL), VW_OK);
    cr_assert_eq(t, 0.6, "set:<key> next");
    cr_assert_eq(vw_cal_set_threshold(cal, "anything", NULL, &t, NULL), VW_OK);
    cr_assert_eq(t, 0.3, "set:* last");
    vw_cal_free(cal);

    cal = load("{\"temperature\": {}, \"thresholds\": {\"span:*\": 0.5}}");
    vw_err e;
    cr_assert_eq(vw_cal_set_threshold(cal, "topics", NULL, &t, &e), VW_EINVAL);
    cr_assert_str_eq(e.type, "calibration_missing_key");
    cr_assert(strstr(e.msg, "set:*") && strstr(e.msg, "set:topics"), "%s", e.msg);
    vw_cal_free(cal);
}

/* Spec §9.2 (values computed by NumPy; 126 -> 0.05000000000000001 there). */
Test(calibration, pii_length_rule_values) {
    vw_cal *cal = load(CAL_JSON);
    const struct {
        int64_t n;
        double want;
    } cases[] = {{0, 0.75},          {1, 0.75},
                 {5, 0.75},          {10, 0.75},
                 {21, 0.75},         {51, 0.19617568619126172},
                 {126, 0.05},        {300, 0.020649436019000534},
                 {1022, 0.005919},   {1023, 0.005919},
                 {1000000, 0.005919}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double t = 0;
        cr_assert_eq(vw_cal_pii_length_threshold(cal, cases[i].n, &t, NULL), VW_OK);
        char what[32];
        snprintf(what, sizeof what, "n=%lld", (long long)cases[i].n);
        assert_rel(t, cases[i].want, 1e-12, what);
    }
    /* n = 51 by the formula of [T-CAL]. */
    double f = (log(51) - log(21)) / (log(126) - log(21));
    double want = exp(log(0.75) + f * (log(0.05) - log(0.75)));
    double t = 0;
    vw_cal_pii_length_threshold(cal, 51, &t, NULL);
    assert_rel(t, want, 1e-12, "n=51 formula");
    vw_cal_free(cal);
}

static vw_span_threshold resolve(const vw_cal *cal, const char *key, const char *const *labels,
                                 size_t n, int64_t tokens, vw_span_head_kind head,
                                 const double *given, char *name, size_t cap) {
    vw_span_query q = {key, labels, n, tokens, head, given};
    vw_span_threshold t;
    vw_err e = {0};
    cr_assert_eq(vw_cal_span_threshold(cal, &q, &t, &e), VW_OK, "%s", e.msg);
    vw_span_threshold_name(&t, key, name, cap);
    return t;
}

Test(calibration, span_threshold_every_precedence_level) {
    vw_cal *cal = load(CAL_JSON);
    const char *pii_labels[] = {"PERSON", "EMAIL_ADDRESS"};
    const char *mixed[] = {"PERSON", "COLOUR"};
    const char *halu[] = {"unsupported"};
    const char *other[] = {"x"};
    char name[64];
    double given = 0.77;

    /* 1. given beats everything, including the broad head and PII. */
    vw_span_threshold t = resolve(cal, "pii", pii_labels, 2, 126, VW_SPAN_BROAD, &given, name, 64);
    cr_assert_eq(t.value, 0.77);
    cr_assert_str_eq(name, "given");
    /* 2. broad head beats PII. */
    t = resolve(cal, "pii", pii_labels, 2, 126, VW_SPAN_BROAD, NULL, name, 64);
    cr_assert_eq(t.value, 0.55);
    cr_assert_str_eq(name, "broad");
    /* 3. PII by key (labels need not be PII types) and by labels (any key). */
    t = resolve(cal, "pii", other, 1, 126, VW_SPAN_ROUTER, NULL, name, 64);
    assert_rel(t.value, 0.05, 1e-12, "pii key");
    cr_assert_str_eq(name, "pii:length");
    t = resolve(cal, "names", pii_labels, 2, 51, VW_SPAN_ROUTER, NULL, name, 64);
    assert_rel(t.value, 0.19617568619126172, 1e-12, "pii labels");
    cr_assert_str_eq(name, "pii:length", "PII labels beat span:names");
    /* 4. halu / toxic read span:<key>. */
    t = resolve(cal, "halu", halu, 1, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.55);
    cr_assert_str_eq(name, "halu");
    t = resolve(cal, "toxic", other, 1, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.1);
    cr_assert_str_eq(name, "toxic");
    /* 5. span:<key>, then span:*; a label set that is not all PII is not PII. */
    t = resolve(cal, "names", mixed, 2, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.42);
    cr_assert_str_eq(name, "span:names");
    t = resolve(cal, "other", other, 1, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.5);
    cr_assert_str_eq(name, "span:*");
    /* The halu alias under another ID takes span:<key> / span:*, not span:halu (§4.4). */
    t = resolve(cal, "claims", halu, 1, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.5);
    /* Empty labels under a non-pii key are not PII. */
    t = resolve(cal, "other", NULL, 0, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_str_eq(name, "span:*");
    vw_cal_free(cal);
}

Test(calibration, pii_buckets_fallback_and_missing_keys) {
    vw_cal *cal = load("{\"temperature\": {}, \"thresholds\": {\"span:*\": 0.5},"
                       " \"pii_types\": [\"PERSON\"],"
                       " \"pii_buckets\": [{\"name\": \"short\", \"max_tokens\": 9, "
                       "\"threshold\": 0.7}, {\"name\": \"mid\", \"max_tokens\": 99, "
                       "\"threshold\": 0.2}]}");
    char name[64];
    vw_span_threshold t = resolve(cal, "pii", NULL, 0, 5, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.7);
    cr_assert_str_eq(name, "pii:short");
    t = resolve(cal, "pii", NULL, 0, 9, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_str_eq(name, "pii:short", "tokens <= max_tokens");
    t = resolve(cal, "pii", NULL, 0, 10, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.2);
    cr_assert_str_eq(name, "pii:mid");
    /* No bucket fits: the reference falls through to span:<key> / span:*. */
    t = resolve(cal, "pii", NULL, 0, 100, VW_SPAN_ROUTER, NULL, name, 64);
    cr_assert_eq(t.value, 0.5);
    cr_assert_str_eq(name, "span:*");
    vw_err e;
    double v;
    cr_assert_eq(vw_cal_pii_length_threshold(cal, 5, &v, &e), VW_EINVAL);
    /* Without span:halu the halu key fails (no span:* fallback, as the reference). */
    const char *halu[] = {"unsupported"};
    vw_span_query q = {"halu", halu, 1, 10, VW_SPAN_ROUTER, NULL};
    cr_assert_eq(vw_cal_span_threshold(cal, &q, &t, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "span:halu"), "%s", e.msg);
    q.head = VW_SPAN_BROAD;
    cr_assert_eq(vw_cal_span_threshold(cal, &q, &t, &e), VW_EINVAL, "broad without block");
    vw_cal_free(cal);

    cal = load("{\"temperature\": {}, \"thresholds\": {}}");
    q = (vw_span_query){"pii", NULL, 0, 10, VW_SPAN_ROUTER, NULL};
    cr_assert_eq(vw_cal_span_threshold(cal, &q, &t, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "pii_length_rule") && strstr(e.msg, "pii_buckets"), "%s", e.msg);
    q.key = "x";
    cr_assert_eq(vw_cal_span_threshold(cal, &q, &t, &e), VW_EINVAL);
    cr_assert(strstr(e.msg, "span:*"), "%s", e.msg);
    cr_assert(!vw_cal_is_pii(cal, "x", (const char *[]){"PERSON"}, 1), "no pii_types");
    vw_cal_free(cal);
}

Test(calibration, sparse_gate_parameters) {
    vw_cal *cal = load(CAL_JSON);
    int64_t k;
    double ts, probe;
    cr_assert(vw_cal_sparse_gate(cal, &k, &ts, &probe));
    cr_assert_eq(k, 3);
    cr_assert_eq(ts, 0.1);
    cr_assert_eq(probe, 0.5);
    vw_cal_free(cal);
    cal = load("{\"temperature\": {}, \"thresholds\": {}, \"pii_sparse_gate\": {\"K\": -1}}");
    cr_assert(!vw_cal_sparse_gate(cal, &k, &ts, &probe), "K < 0 disables");
    vw_cal_free(cal);
    cal = load("{\"temperature\": {}, \"thresholds\": {}, \"pii_sparse_gate\": "
               "{\"K\": 2, \"t_sparse\": 0.2}}");
    cr_assert(vw_cal_sparse_gate(cal, &k, &ts, &probe));
    cr_assert_eq(probe, 0.5, "probe default");
    vw_cal_free(cal);
    cal = load("{\"temperature\": {}, \"thresholds\": {}, \"pii_sparse_gate\": {}}");
    cr_assert(!vw_cal_sparse_gate(cal, &k, &ts, &probe), "empty block");
    vw_cal_free(cal);
}

Test(calibration, noul_calibration_optional) {
    vw_cal *cal = load(CAL_JSON);
    cr_assert_eq(vw_cal_noul(cal, 0.7, false), 0.7);
    double want = 1.0 / (1.0 + exp(-(log(0.7 / 0.3) / 2.0 + 0.25)));
    assert_rel(vw_cal_noul(cal, 0.7, true), want, 1e-15, "noul calibrated");
    assert_rel(vw_cal_noul(cal, 0.7, true), 0.662319733593768, 1e-15, "python value");
    cr_assert(!vw_cal_noul_default(cal));
    /* p clipped to [1e-12, 1 - 1e-12]: finite at the ends. */
    cr_assert(isfinite(vw_cal_noul(cal, 0.0, true)) && vw_cal_noul(cal, 0.0, true) > 0.0);
    cr_assert(isfinite(vw_cal_noul(cal, 1.0, true)) && vw_cal_noul(cal, 1.0, true) < 1.0);
    vw_cal_free(cal);
    cal = load("{\"temperature\": {}, \"thresholds\": {}, \"noul_calibration\": "
               "{\"T\": 2.0, \"b\": 0.25, \"default\": true}}");
    cr_assert(vw_cal_noul_default(cal));
    vw_cal_free(cal);
    cal = load("{\"temperature\": {}, \"thresholds\": {}}");
    cr_assert_eq(vw_cal_noul(cal, 0.7, true), 0.7, "no block: unchanged even when enabled");
    cr_assert(!vw_cal_noul_default(cal));
    vw_cal_free(cal);
}

Test(calibration, malformed_values_name_the_key) {
    const struct {
        const char *json;
        const char *needle;
    } cases[] = {
        {"not json", "line 1"},
        {"[1]", "not an object"},
        {"{\"thresholds\": {}}", "temperature"},
        {"{\"temperature\": {}}", "thresholds"},
        {"{\"temperature\": {\"choice\": \"1.3\"}, \"thresholds\": {}}", "temperature.choice"},
        {"{\"temperature\": {\"span\": 0}, \"thresholds\": {}}", "temperature.span"},
        {"{\"temperature\": {}, \"thresholds\": {\"set:*\": true}}", "thresholds.set:*"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_types\": [\"A\", 3]}", "pii_types[1]"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_length_rule\": {\"anchors\": []}}",
         "pii_length_rule.anchors"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_length_rule\": {\"anchors\": "
         "[{\"n_tokens\": 20, \"threshold\": 0.5}, {\"n_tokens\": 10, \"threshold\": 0.1}]}}",
         "anchors[1].n_tokens"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_length_rule\": {\"anchors\": "
         "[{\"n_tokens\": 20, \"threshold\": 0}]}}",
         "anchors[0].threshold"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_buckets\": [{\"name\": 1}]}",
         "pii_buckets[0].name"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"pii_sparse_gate\": {\"K\": 3}}",
         "pii_sparse_gate.t_sparse"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"broad_head\": {\"temperature\": 1}}",
         "broad_head.threshold"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"broad_head\": {\"temperature\": 1, "
         "\"threshold\": 0.5, \"router_label_sets\": [[\"a\", 2]]}}",
         "router_label_sets[0][1]"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"noul_calibration\": {\"T\": 2, \"b\": 0, "
         "\"default\": 1}}",
         "noul_calibration.default"},
        {"{\"temperature\": {}, \"thresholds\": {}, \"noul_calibration\": 5}", "noul_calibration"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vw_cal *cal = (vw_cal *)1;
        vw_err e = {0};
        vw_status st = vw_cal_parse(cases[i].json, strlen(cases[i].json), &cal, &e);
        cr_assert_eq(st, VW_EINVAL, "case %zu", i);
        cr_assert_null(cal, "case %zu", i);
        cr_assert_str_eq(e.type, "bad_calibration", "case %zu", i);
        cr_assert(strstr(e.msg, cases[i].needle), "case %zu: %s", i, e.msg);
    }
}

Test(calibration, load_from_file) {
    char path[] = "/tmp/vw_cal_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(CAL_JSON, f);
    fclose(f);
    vw_cal *cal = NULL;
    vw_err e;
    cr_assert_eq(vw_cal_load(path, &cal, &e), VW_OK, "%s", e.msg);
    cr_assert_eq(vw_cal_temperature(cal, VW_CAL_SET), 1.05);
    vw_cal_free(cal);
    remove(path);
    cr_assert_eq(vw_cal_load("/nonexistent/calibration.json", &cal, &e), VW_EIO);
    cr_assert_null(cal);
}

/* Spec §9.1 (T_c 1.3, T_s 1.1, T_set 1.05); ≤ 1e-12 relative to the spec's digits. */
Test(calibration, fixture_9_1_choice_noul_score_set) {
    vw_cal *cal = load(CAL_JSON);
    const double z[4] = {2.0, 0.5, -1.0, 0.3};
    double p[4];
    vw_choice_stats st;
    vw_cal_choice(cal, z, 3, true, p, &st);
    cr_assert_eq(st.pick, 0);
    assert_rel(p[0], 0.7067578071182614, 1e-12, "p math");
    assert_rel(p[1], 0.22292644838226955, 1e-12, "p law");
    assert_rel(p[2], 0.07031574449946904, 1e-12, "p other");
    assert_rel(st.confidence, 0.48383135873599187, 1e-12, "confidence");
    assert_rel(st.abstain, 0.16046672076465215, 1e-12, "abstain");

    assert_rel(vw_cal_noul_yes(cal, -0.4, 1.2), 0.7739531792866866, 1e-12, "noul");

    const double zs[3] = {0.2, 1.5, -0.7};
    double ps[3], score, conf;
    vw_cal_score(cal, zs, 3, ps, &score, &conf);
    assert_rel(ps[0], 0.21269672705850162, 1e-12, "score p0");
    assert_rel(ps[1], 0.6934544222892949, 1e-12, "score p1");
    assert_rel(ps[2], 0.09384885065220339, 1e-12, "score p2");
    assert_rel(score, 0.8811521235937017, 1e-12, "score");
    assert_rel(conf, 0.5613688600233726, 1e-12, "score confidence");

    const double zt[2] = {1.4, -2.0};
    double pt[2];
    vw_cal_set_probs(cal, zt, 2, pt);
    assert_rel(pt[0], 0.791391472673955, 1e-12, "billing");
    assert_rel(pt[1], 0.12957046939970593, 1e-12, "travel");
    vw_cal_free(cal);
}

Test(calibration, choice_edges_single_option_ties_and_clipped_score) {
    vw_cal *cal = load(CAL_JSON);
    double p[3];
    vw_choice_stats st;
    const double one[1] = {0.4};
    vw_cal_choice(cal, one, 1, false, p, &st);
    cr_assert_eq(st.confidence, 1.0);
    cr_assert_eq(p[0], 1.0);
    cr_assert_eq(st.abstain, 0.0);
    const double tie[2] = {1.0, 1.0};
    vw_cal_choice(cal, tie, 2, false, p, &st);
    cr_assert_eq(st.pick, 0, "first index on ties");
    cr_assert_eq(st.confidence, 0.0);
    /* A flat Score distribution has the uniform variance: confidence clips at 0. */
    const double flat[3] = {0.0, 0.0, 0.0};
    double score, conf;
    vw_cal_score(cal, flat, 3, p, &score, &conf);
    assert_rel(score, 1.0, 1e-15, "flat score");
    cr_assert(conf >= 0.0 && conf <= 1e-15, "%.17g", conf);
    const double u[3] = {30.0, -30.0, 30.0}; /* mass on both ends: Var > uniform */
    vw_cal_score(cal, u, 3, p, &score, &conf);
    cr_assert_eq(conf, 0.0, "clipped to 0");
    vw_cal_free(cal);
}

Test(calibration, from_parsed_json_keeps_its_reference) {
    json_error_t je;
    json_t *root = json_loads(CAL_JSON, 0, &je);
    cr_assert_not_null(root);
    vw_cal *cal = NULL;
    vw_err e = {0};
    cr_assert_eq(vw_cal_from_json(root, &cal, &e), VW_OK, "%s", e.msg);
    json_decref(root); /* the vw_cal holds its own reference */
    double t = 0;
    cr_assert_eq(vw_cal_set_threshold(cal, "x", NULL, &t, NULL), VW_OK);
    cr_assert_eq(t, 0.3);
    cr_assert(vw_cal_is_pii_type(cal, "ZIP_CODE"), "borrowed strings still alive");
    vw_cal_free(cal);
    root = json_loads("[1]", 0, &je);
    cr_assert_eq(vw_cal_from_json(root, &cal, &e), VW_EINVAL);
    json_decref(root);
    cr_assert_eq(vw_cal_from_json(NULL, &cal, &e), VW_EINVAL);
}
