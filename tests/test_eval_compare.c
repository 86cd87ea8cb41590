/* test_eval_compare.c — A/B (`vela-worker eval --baseline`) on crafted pairs:
 * each question type's agreement rule at its edges (a Noul at exactly 0.5, a
 * score rounding across .5, a set selection in another order, spans in
 * another order with other fields), |Δ| (choice: the probability of A's pick,
 * 0 where B lacks that option), status changes (a rejection, dead letters of
 * two types), ids on one side only, and the order of --top. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/compare.h"
#include "eval/eval.h"
#include "vw_test.h"

/* clang-format off */
static const char *const A[] = {
    /* c1: every question agrees with the baseline */
    "{'request_id':'c1','vela_status':200,'value':{'answers':{"
        "'pick':{'type':'choice','choice':'a','probabilities':{'a':0.6,'b':0.4}},"
        "'p':{'type':'noul','noul':0.5},'s':{'type':'score','score':2.5},"
        "'t.x':{'type':'noul','noul':0.7},'t.y':{'type':'noul','noul':0.6},"
        "'sp':{'type':'noul','noul':0.9}},"
        "'spans':{'sp':[{'label':'A','start':0,'end':3},{'label':'B','start':4,'end':6}]},"
        "'sets':{'t':{'selected':['x','y'],'probabilities':{'x':0.7,'y':0.6}}}}}",
    /* c2: every question disagrees */
    "{'request_id':'c2','vela_status':200,'value':{'answers':{"
        "'pick':{'type':'choice','choice':'a','probabilities':{'a':0.6,'b':0.4}},"
        "'p':{'type':'noul','noul':0.5},'s':{'type':'score','score':1.49},"
        "'t.x':{'type':'noul','noul':0.7},'t.y':{'type':'noul','noul':0.2},"
        "'sp':{'type':'noul','noul':0.9}},"
        "'spans':{'sp':[{'label':'A','start':0,'end':3}]},"
        "'sets':{'t':{'selected':['x'],'probabilities':{'x':0.7,'y':0.2}}}}}",
    /* c3: answered here, rejected in the baseline */
    "{'request_id':'c3','vela_status':200,'value':{'answers':{'p':{'type':'noul','noul':0.9}}}}",
    /* c4: dead letters of two types */
    "{'request_id':'c4','dead_letter':'poison'}",
    /* c5: only here */
    "{'request_id':'c5','vela_status':200,'value':{'answers':{'p':{'type':'noul','noul':0.9}}}}",
    /* c7: A picks an option the baseline does not have */
    "{'request_id':'c7','vela_status':200,'value':{'answers':{"
        "'pick':{'type':'choice','choice':'c','probabilities':{'a':0.2,'c':0.8}}}}}",
    /* c8: p is a score in the baseline: not compared */
    "{'request_id':'c8','vela_status':200,'value':{'answers':{'p':{'type':'noul','noul':0.9}}}}",
    NULL};

static const char *const B[] = {
    /* another key order, other probabilities, the set and spans in another order */
    "{'request_id':'c1','vela_status':200,'value':{'answers':{"
        "'sp':{'type':'noul','noul':0.1},"
        "'t.x':{'type':'noul','noul':0.9},'t.y':{'type':'noul','noul':0.8},"
        "'pick':{'type':'choice','choice':'a','probabilities':{'a':0.55,'b':0.45}},"
        "'p':{'type':'noul','noul':0.7},'s':{'type':'score','score':2.7}},"
        "'spans':{'sp':[{'label':'B','start':4,'end':6,'text':'zz'},"
                       "{'label':'A','start':0,'end':3,'probability':0.5}]},"
        "'sets':{'t':{'selected':['y','x'],'probabilities':{'x':0.9,'y':0.8}}}}}",
    "{'request_id':'c2','vela_status':200,'value':{'answers':{"
        "'pick':{'type':'choice','choice':'b','probabilities':{'a':0.3,'b':0.7}},"
        "'p':{'type':'noul','noul':0.49},'s':{'type':'score','score':1.51},"
        "'t.x':{'type':'noul','noul':0.7},'t.y':{'type':'noul','noul':0.6},"
        "'sp':{'type':'noul','noul':0.9}},"
        "'spans':{'sp':[{'label':'B','start':0,'end':3}]},"
        "'sets':{'t':{'selected':['x','y'],'probabilities':{'x':0.7,'y':0.6}}}}}",
    "{'request_id':'c3','vela_status':422,'value':{'status':422,"
        "'detail':[{'loc':['body','state'],'msg':'Field required','type':'missing'}]}}",
    "{'request_id':'c4','dead_letter':'too_large'}",
    "{'request_id':'c6','vela_status':200,'value':{'answers':{'p':{'type':'noul','noul':0.9}}}}",
    "{'request_id':'c7','vela_status':200,'value':{'answers':{"
        "'pick':{'type':'choice','choice':'a','probabilities':{'a':0.6,'b':0.4}}}}}",
    "{'request_id':'c8','vela_status':200,'value':{'answers':{'p':{'type':'score','score':1}}}}",
    NULL};
/* clang-format on */

/* A run of A against B in a fresh directory (the report borrows the paths). */
typedef struct ab {
    char dir[32];
    char *a, *b;
    vw_eval_report *r;
} ab;

static void run(ab *x, size_t top) {
    strcpy(x->dir, "/tmp/vw-eval-cmp-XXXXXX");
    cr_assert(mkdtemp(x->dir));
    x->a = vw_test_write_lines(x->dir, "a.jsonl", A);
    x->b = vw_test_write_lines(x->dir, "b.jsonl", B);
    vw_eval_opts o = {.results = x->a, .baseline = x->b, .top = top};
    vw_err err = {0};
    cr_assert_eq(vw_eval_run(&o, &x->r, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(x->r->problems_total, 0, "crafted files are clean");
}

static void done(ab *x) {
    vw_eval_report_free(x->r);
    unlink(x->a);
    unlink(x->b);
    rmdir(x->dir);
    free(x->a);
    free(x->b);
}

static const vw_eval_q *q_of(const vw_eval_report *r, const char *qid) {
    const vw_eval_q *q = vw_eval_qtable_find(&r->questions, qid);
    cr_assert(q, "question %s", qid);
    return q;
}

static void expect(const vw_eval_report *r, const char *qid, uint64_t n, uint64_t agree,
                   double mean_delta) {
    const vw_eval_q *q = q_of(r, qid);
    cr_assert_eq(q->cmp_n, n, "%s: n %llu", qid, (unsigned long long)q->cmp_n);
    cr_assert_eq(q->cmp_agree, agree, "%s: agree %llu", qid, (unsigned long long)q->cmp_agree);
    double got = vw_eval_ratio(q->cmp_delta_sum, (double)q->cmp_n_delta);
    if (isnan(mean_delta))
        cr_assert(isnan(got), "%s: no |delta| for this type", qid);
    else
        cr_assert_float_eq(got, mean_delta, 1e-12, "%s: mean |delta| %.17g", qid, got);
}

Test(eval_compare, agreement_per_type) {
    ab x;
    run(&x, 0);
    const vw_eval_report *r = x.r;
    /* choice: c1 same pick (|0.6-0.55|), c2 b vs a (|0.6-0.3|), c7 c vs a (0.8 - 0) */
    expect(r, "pick", 3, 1, (fabs(0.6 - 0.55) + fabs(0.6 - 0.3) + 0.8) / 3);
    /* noul: 0.5 and 0.7 agree (0.5 is yes), 0.5 and 0.49 do not; c3's baseline has no
     * envelope, c8's p is a score there */
    expect(r, "p", 2, 1, (fabs(0.5 - 0.7) + fabs(0.5 - 0.49)) / 2);
    /* score: 2.5 and 2.7 both round to 3, 1.49 and 1.51 to 1 and 2 */
    expect(r, "s", 2, 1, (fabs(2.5 - 2.7) + fabs(1.49 - 1.51)) / 2);
    /* set: [x, y] vs [y, x] agree; [x] vs [x, y] do not */
    expect(r, "t", 2, 1, NAN);
    /* span: the same triples in another order with other fields agree; label A vs B not */
    expect(r, "sp", 2, 1, NAN);
    cr_assert_eq(r->status_changed, 2, "c3 200 vs 422, c4 two dead-letter types");
    cr_assert_eq(r->in_both, 6);
    cr_assert_eq(r->only_in_results, 1, "c5");
    cr_assert_eq(r->only_in_baseline, 1, "c6");
    done(&x);
}

Test(eval_compare, top_ranks_status_then_disagreements_then_delta) {
    ab x;
    run(&x, 10);
    const vw_eval_report *r = x.r;
    const char *order[] = {"c3", "c4", "c2", "c7", "c1"};
    cr_assert_eq(r->top.n, 5, "c5, c8: nothing compared changed");
    for (size_t i = 0; i < 5; i++)
        cr_assert_str_eq(r->top.v[i].id, order[i], "top[%zu]", i);
    cr_assert_str_eq(r->top.v[0].status_a, "200");
    cr_assert_str_eq(r->top.v[0].status_b, "422");
    cr_assert_str_eq(r->top.v[1].status_b, "dead_letter:too_large");
    cr_assert_eq(r->top.v[2].disagreements, 5);
    cr_assert_str_eq(r->top.v[2].changed, "pick,p,s,t,sp");
    cr_assert_float_eq(r->top.v[3].max_delta, 0.8, 1e-15);
    done(&x);
    /* A shorter list keeps the most changed. */
    run(&x, 3);
    cr_assert_eq(x.r->top.n, 3);
    cr_assert_str_eq(x.r->top.v[2].id, "c2");
    done(&x);
}

Test(eval_compare, answers_rules) {
    json_error_t je;
    bool agree;
    double d;
    json_t *a = json_loads("{\"score\": 0.5}", 0, &je), *b = json_loads("{\"score\": 0.4}", 0, &je);
    vw_eval_compare_answers(VW_QT_SCORE, a, b, &agree, &d);
    cr_assert(!agree, "0.5 rounds to 1 (half away from zero), 0.4 to 0");
    cr_assert_float_eq(d, 0.1, 1e-15);
    json_decref(a);
    json_decref(b);
    a = json_loads("{\"selected\": []}", 0, &je);
    b = json_loads("{\"selected\": []}", 0, &je);
    vw_eval_compare_answers(VW_QT_SET, a, b, &agree, &d);
    cr_assert(agree && isnan(d), "two empty selections agree");
    json_decref(a);
    json_decref(b);
    a = json_loads("[]", 0, &je);
    b = json_loads("[{\"label\":\"A\",\"start\":0,\"end\":1}]", 0, &je);
    vw_eval_compare_answers(VW_QT_SPAN, a, b, &agree, &d);
    cr_assert(!agree, "no span vs one span");
    vw_eval_compare_answers(VW_QT_SPAN, a, a, &agree, &d);
    cr_assert(agree, "no span vs no span");
    json_decref(a);
    json_decref(b);
}
