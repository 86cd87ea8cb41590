/* test_eval.c — `vela-worker eval` against the goldens of
 * tools/make_eval_goldens.py (fixtures/eval/expected.json): every count and
 * metric — accuracy, macro/micro F1, per-label P/R/F1, ROC AUC, Brier and the
 * confusion matrix from scikit-learn; ECE, reliability bins, exact and
 * overlap span metrics and the A/B figures written out in the recipe — equal
 * to the report's JSON within 1e-9, through the library and through the
 * command. Plus the number kernels (stats.h) on hand-computed cases. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "eval/report_json.h"
#include "eval/stats.h"
#include "eval/strmap.h"
#include "vw_test.h"

#define TOL 1e-9
#define RECIPE "tools/make_eval_goldens.py"

typedef struct diff {
    int n;
    char first[10][640];
} diff;

static void mismatch(diff *d, const char *path, const char *what) {
    if (d->n < 10)
        snprintf(d->first[d->n], sizeof d->first[d->n], "%.400s: %.200s", path, what);
    d->n++;
}

/* Every value of `want` is in `got`: numbers within TOL (+TOL·|want|), the
 * rest equal; keys of got that want lacks are not checked. */
static void compare(const json_t *want, const json_t *got, const char *path, diff *d) {
    char sub[400], msg[200];
    if (json_is_number(want)) {
        double w = json_number_value(want), g = json_number_value(got);
        if (!json_is_number(got) || fabs(w - g) > TOL * (1.0 + fabs(w))) {
            snprintf(msg, sizeof msg, "want %.17g, got %.17g%s", w, g,
                     json_is_number(got) ? "" : " (not a number)");
            mismatch(d, path, msg);
        }
    } else if (json_is_object(want)) {
        const char *k;
        json_t *v;
        if (!json_is_object(got)) {
            mismatch(d, path, "not an object");
            return;
        }
        json_object_foreach((json_t *)want, k, v) {
            snprintf(sub, sizeof sub, "%s/%s", path, k);
            if (!json_object_get(got, k))
                mismatch(d, sub, "missing");
            else
                compare(v, json_object_get(got, k), sub, d);
        }
    } else if (json_is_array(want)) {
        size_t i;
        json_t *v;
        if (json_array_size(want) != json_array_size(got)) {
            snprintf(msg, sizeof msg, "want %zu items, got %zu", json_array_size(want),
                     json_array_size(got));
            mismatch(d, path, msg);
            return;
        }
        json_array_foreach(want, i, v) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            compare(v, json_array_get(got, i), sub, d);
        }
    } else if (!json_equal(want, got)) {
        char *w = json_dumps(want, JSON_ENCODE_ANY), *g = json_dumps(got, JSON_ENCODE_ANY);
        snprintf(msg, sizeof msg, "want %.80s, got %.80s", w ? w : "?", g ? g : "(none)");
        mismatch(d, path, msg);
        free(w);
        free(g);
    }
}

static json_t *expected(void) {
    char *p = vw_test_path("fixtures/eval/expected.json");
    json_error_t je;
    json_t *e = json_load_file(p, 0, &je);
    cr_assert(e, "%s: %s (regenerate with %s)", p, je.text, RECIPE);
    free(p);
    return e;
}

static void check(const json_t *got, const char *how) {
    json_t *want = expected();
    diff d = {0};
    compare(want, got, "", &d);
    for (int i = 0; i < d.n && i < 10; i++)
        cr_log_error("%s", d.first[i]);
    cr_assert_eq(d.n, 0, "%s: %d values differ from fixtures/eval/expected.json (%s)", how, d.n,
                 RECIPE);
    json_decref(want);
}

static void fixture_opts(vw_eval_opts *o, char **paths) {
    paths[0] = vw_test_path("fixtures/eval/results.jsonl");
    paths[1] = vw_test_path("fixtures/eval/baseline.jsonl");
    paths[2] = vw_test_path("fixtures/eval/labels.jsonl");
    *o = (vw_eval_opts){.results = paths[0], .baseline = paths[1], .labels = paths[2], .top = 12};
}

Test(eval, goldens_from_sklearn_and_the_recipe) {
    char *paths[3];
    vw_eval_opts o;
    vw_eval_report *r = NULL;
    vw_err err = {0};
    vw_sbuf sb = {0};
    fixture_opts(&o, paths);
    cr_assert_eq(vw_eval_run(&o, &r, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_eval_write_json(r, &sb), VW_OK);
    json_error_t je;
    json_t *got = json_loadb(sb.p, sb.len, 0, &je);
    cr_assert(got, "the report is not JSON: %s", je.text);
    check(got, "vw_eval_run");
    /* Six questions have labelled answers, each metric family is present. */
    json_t *q = json_object_get(got, "questions");
    cr_assert(json_is_number(json_object_get(json_object_get(q, "angry"), "auroc")));
    cr_assert(json_is_number(json_object_get(json_object_get(q, "pii"), "overlap_f1")));
    cr_assert(json_is_object(json_object_get(json_object_get(q, "intent"), "confusion")));
    cr_log_info("eval goldens: %zu questions, %llu records, %llu problems", json_object_size(q),
                (unsigned long long)r->results.records, (unsigned long long)r->problems_total);
    json_decref(got);
    vw_sbuf_free(&sb);
    vw_eval_report_free(r);
    for (int i = 0; i < 3; i++)
        free(paths[i]);
}

Test(eval, problems_name_file_and_line) {
    char *paths[3];
    vw_eval_opts o;
    vw_eval_report *r = NULL;
    fixture_opts(&o, paths);
    cr_assert_eq(vw_eval_run(&o, &r, NULL), VW_OK);
    /* The recipe puts "{]" at line 16 of the labels and a cut line at 51 of
     * the results. */
    bool labels16 = false, results51 = false;
    for (size_t i = 0; i < r->n_problems; i++) {
        labels16 |= r->problems[i].file == o.labels && r->problems[i].line == 16 &&
                    strstr(r->problems[i].msg, "not JSON");
        results51 |= r->problems[i].file == o.results && r->problems[i].line == 51;
    }
    cr_assert(labels16 && results51);
    vw_eval_report_free(r);
    for (int i = 0; i < 3; i++)
        free(paths[i]);
}

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

Test(eval, command_json_equals_the_goldens) {
    char *paths[3], cmd[4096];
    vw_eval_opts o;
    fixture_opts(&o, paths);
    snprintf(cmd, sizeof cmd,
             "'%s' eval --results '%s' --baseline '%s' --labels '%s' --json --top 12 2>/dev/null",
             worker_bin(), o.results, o.baseline, o.labels);
    FILE *f = popen(cmd, "r");
    cr_assert(f);
    json_error_t je;
    json_t *got = json_loadf(f, 0, &je);
    cr_assert_eq(pclose(f), 0, "eval exits 0 with bad lines in its input");
    cr_assert(got, "stdout is not JSON: %s", je.text);
    check(got, "vela-worker eval --json");
    json_decref(got);
    for (int i = 0; i < 3; i++)
        free(paths[i]);
}

/* ---- the kernels ------------------------------------------------------------- */

Test(eval, auroc_averages_tied_scores) {
    /* Scores 0.1 0.4 0.4 0.8 with labels 0 1 0 1: of the 4 (pos, neg) pairs,
     * (0.4+, 0.1-), (0.8+, 0.1-), (0.8+, 0.4-) are ordered and (0.4+, 0.4-) is
     * a tie worth 1/2: AUC = 3.5 / 4 (sklearn gives 0.875). */
    vw_eval_pairs ps = {0};
    const double p[] = {0.4, 0.1, 0.8, 0.4};
    const bool y[] = {true, false, true, false};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(vw_eval_pairs_add(&ps, p[i], y[i], NULL), VW_OK);
    cr_assert_float_eq(vw_eval_auroc(&ps), 0.875, 1e-15);
    vw_eval_pairs_free(&ps);
    /* One class only: undefined. */
    cr_assert_eq(vw_eval_pairs_add(&ps, 0.3, true, NULL), VW_OK);
    cr_assert(isnan(vw_eval_auroc(&ps)));
    vw_eval_pairs_free(&ps);
}

Test(eval, ece_bins_last_closed) {
    vw_eval_ece e = {0};
    cr_assert(isnan(vw_eval_ece_value(&e)), "no prediction: undefined");
    vw_eval_ece_add(&e, 1.0, true);       /* bin 14, not a 16th */
    vw_eval_ece_add(&e, 0.0, false);      /* bin 0 */
    vw_eval_ece_add(&e, 14.0 / 15, true); /* bin 14 */
    cr_assert_eq(e.n[14], 2);
    cr_assert_eq(e.n[0], 1);
    /* bin 14: accuracy 1, mean confidence (1 + 14/15)/2; bin 0: accuracy 0, 0. */
    double want = 2.0 / 3 * fabs(1.0 - (1.0 + 14.0 / 15) / 2);
    cr_assert_float_eq(vw_eval_ece_value(&e), want, 1e-15);
}

Test(eval, f1_undefined_only_without_counts) {
    cr_assert(isnan(vw_eval_f1((vw_eval_prf){0, 0, 0})));
    cr_assert(isnan(vw_eval_precision((vw_eval_prf){0, 0, 3})), "nothing predicted");
    cr_assert_float_eq(vw_eval_f1((vw_eval_prf){0, 0, 3}), 0.0, 0);
    cr_assert_float_eq(vw_eval_f1((vw_eval_prf){2, 1, 1}), 4.0 / 6, 1e-15);
}

Test(eval, strmap_keeps_indices_and_keys) {
    vw_strmap m = {0};
    char k[32];
    for (int i = 0; i < 100000; i++) {
        size_t idx;
        bool added;
        int n = snprintf(k, sizeof k, "request-%d", i);
        cr_assert_eq(vw_strmap_put(&m, k, (size_t)n, &idx, &added, NULL), VW_OK);
        cr_assert(added && idx == (size_t)i);
    }
    const char *first = vw_strmap_key(&m, 0);
    for (int i = 0; i < 100000; i += 997) {
        int n = snprintf(k, sizeof k, "request-%d", i);
        cr_assert_eq(vw_strmap_find(&m, k, (size_t)n), i);
    }
    cr_assert_eq(vw_strmap_find(&m, "request-", 8), -1);
    cr_assert_str_eq(first, "request-0", "keys do not move as the map grows");
    vw_strmap_free(&m);
}

/* The plots' bins (stats.h): a probability change's bin over [-1, 1] with
 * the last closed; a score's prediction and residual bins in quarter levels,
 * clamped at the ends. */
Test(eval, plot_bins) {
    cr_assert_eq(vw_eval_delta_bin(-1.0), 0);
    cr_assert_eq(vw_eval_delta_bin(-0.05), 9);
    cr_assert_eq(vw_eval_delta_bin(0.0), 10);
    cr_assert_eq(vw_eval_delta_bin(1.0), VW_EVAL_DELTA_BINS - 1, "the last bin is closed");
    vw_eval_score_bins s = {0};
    vw_eval_score_bins_add(&s, 2.71, 3.0); /* bin ⌊2.71/0.25⌋ = 10; residual -0.29 */
    vw_eval_score_bins_add(&s, 99.0, 0.0); /* past the last bins: clamped */
    vw_eval_score_bins_add(&s, -1.0, 40.0);
    cr_assert_eq(s.n[10], 1);
    cr_assert_float_eq(s.pred[10], 2.71, 1e-12);
    cr_assert_float_eq(s.label[10], 3.0, 0);
    cr_assert_eq(s.res[VW_EVAL_RES_BINS / 2 - 2], 1, "-0.29 is in [-0.5, -0.25)");
    cr_assert_eq(s.n[VW_EVAL_SCORE_BINS - 1], 1);
    cr_assert_eq(s.res[VW_EVAL_RES_BINS - 1], 1);
    cr_assert_eq(s.n[0], 1);
    cr_assert_eq(s.res[0], 1);
    cr_assert_float_eq(s.res_sum, -0.29 + 99.0 - 41.0, 1e-12);
    cr_assert_float_eq(s.top, 99.0, 0);
}
