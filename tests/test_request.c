/* test_request.c — admission: state -> typed parts, question forms, over,
 * presets, span-head dispatch (docs/spec/request.md §1.2–§3.5 test vectors). */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "proc_test.h"
#include "admission/request.h"
#include "util/sbuf.h"

static vw_admit_cfg *cfg;
static void setup(void) {
    cfg = proc_cfg("bundle");
}
static void teardown(void) {
    vw_admit_cfg_free(cfg);
}
TestSuite(request, .init = setup, .fini = teardown);

static vw_request *ok(const char *json) {
    int status = 0;
    vw_errlist d = {0};
    vw_request *req = proc_admit(cfg, json, &status, &d);
    char *dj = proc_detail_json(&d);
    cr_assert_eq(status, 200, "status %d: %s", status, dj);
    free(dj);
    vw_errlist_free(&d);
    return req;
}

static void expect_part(const vw_request *r, vw_role role, const char *text) {
    const vw_part *p = vw_state_part(&r->state, role);
    cr_assert_not_null(p, "no %s part", vw_role_name(role));
    cr_expect_eq(p->len, strlen(text));
    cr_expect(!memcmp(p->text, text, p->len), "%s part: %.*s", vw_role_name(role), (int)p->len,
              p->text);
}

#define Q1 ",\"questions\":{\"q\":{\"type\":\"noul\",\"instructions\":\"Yes?\"}}}"

Test(request, object_state_maps_keys_with_field_ranges) {
    vw_request *r = ok("{\"state\":{\"prompt\":\"Q?\",\"source\":\"doc\",\"notes\":{\"n\":1},"
                       "\"response\":\"A.\"}" Q1);
    cr_expect_eq(r->state.n_parts, 3);
    expect_part(r, VW_ROLE_USER, "Q?");
    expect_part(r, VW_ROLE_CONTEXT, "source:\ndoc\n\nnotes:\n{\"n\":1}");
    expect_part(r, VW_ROLE_ANSWER, "A.");
    const vw_field *f = vw_state_field(&r->state, "notes");
    cr_assert_not_null(f);
    cr_expect_eq(f->role, VW_ROLE_CONTEXT);
    cr_expect_eq(f->start, 20);
    cr_expect_eq(f->end, 27);
    f = vw_state_field(&r->state, "prompt");
    cr_expect(f->role == VW_ROLE_USER && f->start == 0 && f->end == 2);
    vw_request_free(r);
}

Test(request, array_and_text_states) {
    vw_request *r = ok("{\"state\":[\"a\",{\"b\":1}]" Q1);
    expect_part(r, VW_ROLE_USER, "[\"a\",{\"b\":1}]");
    vw_request_free(r);
    r = ok("{\"state\":[]" Q1);
    expect_part(r, VW_ROLE_USER, "[]");
    vw_request_free(r);
    r = ok("{\"state\":\" {\\\"request\\\": \\\"hi\\\", \\\"answer\\\": \\\"yes\\\"}\"" Q1);
    cr_expect_eq(r->state.n_parts, 2);
    expect_part(r, VW_ROLE_USER, "hi");
    expect_part(r, VW_ROLE_ANSWER, "yes");
    vw_request_free(r);
    /* "[...]" in a string is not parsed; a non-object JSON text stays text */
    r = ok("{\"state\":\" [1,2] \"" Q1);
    expect_part(r, VW_ROLE_USER, " [1,2] ");
    vw_request_free(r);
    r = ok("{\"state\":\"{not json\"" Q1);
    expect_part(r, VW_ROLE_USER, "{not json");
    vw_request_free(r);
}

Test(request, single_unknown_key_and_case_folded_known_keys) {
    vw_request *r = ok("{\"state\":{\"Notes\":\"x\",\"REQUEST\":\"r\",\"Answer\":1.50}" Q1);
    expect_part(r, VW_ROLE_USER, "r");
    expect_part(r, VW_ROLE_CONTEXT, "Notes:\nx");
    expect_part(r, VW_ROLE_ANSWER, "1.5");
    cr_expect_eq(vw_state_field(&r->state, "Notes")->start, 7);
    vw_request_free(r);
}

Test(request, canonical_values_in_state) {
    vw_request *r = ok("{\"state\":{\"request\":{\"z\":1e2,\"a\":[100,-0,1E-7]}}" Q1);
    expect_part(r, VW_ROLE_USER, "{\"a\":[100,0,1e-07],\"z\":100.0}");
    vw_request_free(r);
}

Test(request, noul_is_a_two_option_choice_with_abstain) {
    vw_request *r = ok("{\"state\":\"text\"" Q1);
    const vw_question *q = &proc_entry(r, "q")->q;
    cr_expect_eq(q->kind, VW_Q_NOUL);
    cr_expect_str_eq(vw_qkind_engine(q->kind), "choice");
    cr_expect(q->abstain);
    cr_assert_eq(q->n_options, 2);
    cr_expect_str_eq(q->options[0].name.p, "no");
    cr_expect_str_eq(q->options[0].desc.p, "No. The statement or question is not satisfied.");
    cr_expect_str_eq(q->options[1].name.p, "yes");
    cr_expect_str_eq(q->options[1].desc.p, "Yes. The statement or question is satisfied.");
    vw_request_free(r);
    r = ok("{\"state\":\"t\",\"questions\":{\"q\":{\"type\":\"noul\",\"instructions\":\"Y?\","
           "\"criteria\":{\"true\":{\"k\":1},\"false\":null}}}}");
    q = &proc_entry(r, "q")->q;
    cr_expect_str_eq(q->options[0].desc.p, "No. The statement or question is not satisfied.");
    cr_expect_str_eq(q->options[1].desc.p, "{\"k\":1}");
    vw_request_free(r);
}

Test(request, choice_score_set_span_options_and_default_over) {
    vw_request *r =
        ok("{\"state\":{\"request\":\"r\",\"answer\":\"a\"},\"questions\":{"
           "\"c\":{\"type\":\"choice\",\"instructions\":\"Pick one\",\"criteria\":{\"a\":\"first\","
           "\"b\":null}},"
           "\"s\":{\"type\":\"score\",\"instructions\":\"How?\",\"criteria\":[\"low\",{\"x\":1}]},"
           "\"t\":{\"type\":\"set\",\"instructions\":\"Which?\",\"criteria\":{\"x\":\"y\"}},"
           "\"p\":{\"type\":\"span\",\"instructions\":\"Spans?\",\"criteria\":{\"L\":null}}}}");
    const vw_question *c = &proc_entry(r, "c")->q, *s = &proc_entry(r, "s")->q;
    const vw_question *t = &proc_entry(r, "t")->q, *p = &proc_entry(r, "p")->q;
    cr_expect_str_eq(c->options[1].desc.p, "");
    cr_expect_str_eq(s->options[1].name.p, "{\"x\":1}");
    cr_expect_str_eq(s->options[1].desc.p, "");
    cr_expect(!s->abstain && !t->abstain && c->abstain);
    cr_expect_eq(p->roles, 1u << VW_ROLE_ANSWER);
    cr_expect_eq(c->roles, (1u << VW_ROLE_USER) | (1u << VW_ROLE_ANSWER));
    cr_expect_str_eq(c->key.p, "c");
    vw_request_free(r);
}

Test(request, over_resolves_keys_parts_and_lists) {
    vw_request *r =
        ok("{\"state\":{\"request\":\"r\",\"source\":\"s\",\"tools\":\"t\",\"answer\":\"a\"},"
           "\"questions\":{"
           "\"k\":{\"type\":\"noul\",\"instructions\":\"x\",\"over\":\"tools\"},"
           "\"l\":{\"type\":\"noul\",\"instructions\":\"x\",\"over\":[\"answer\",\"request\"]},"
           "\"m\":{\"type\":\"noul\",\"instructions\":\"x\",\"over\":\"prompt\"},"
           "\"p\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"L\":\"l\"},"
           "\"over\":\"tools\"},"
           "\"o\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"L\":\"l\"},"
           "\"over\":[\"tools\"]}}}");
    cr_expect_eq(proc_entry(r, "k")->q.roles, 1u << VW_ROLE_CONTEXT);
    cr_expect_eq(proc_entry(r, "l")->q.roles, (1u << VW_ROLE_USER) | (1u << VW_ROLE_ANSWER));
    cr_expect_eq(proc_entry(r, "m")->q.roles, 1u << VW_ROLE_USER);
    const vw_question *p = &proc_entry(r, "p")->q;
    cr_expect(p->has_range);
    cr_expect(p->range_lo == 18 && p->range_hi == 19, "%lld %lld", (long long)p->range_lo,
              (long long)p->range_hi); /* "source:\ns\n\ntools:\nt" */
    cr_expect(!proc_entry(r, "o")->q.has_range);
    cr_expect(!proc_entry(r, "k")->q.has_range);
    vw_request_free(r);
}

Test(request, presets_fill_in_the_trained_schemas) {
    vw_request *r = ok("{\"state\":{\"request\":\"q\",\"source\":\"d\",\"answer\":\"a\"},"
                       "\"questions\":{\"pii\":{\"preset\":\"pii\",\"over\":\"request\","
                       "\"threshold\":0.3},\"h\":{\"preset\":\"halu\"},"
                       "\"r\":{\"preset\":\"relevance\",\"over\":[\"request\",\"source\"]}}}");
    const vw_question *pii = &proc_entry(r, "pii")->q, *h = &proc_entry(r, "h")->q;
    const vw_question *rel = &proc_entry(r, "r")->q;
    cr_expect_eq(pii->kind, VW_Q_SPAN);
    cr_expect_eq(pii->n_options, 17);
    cr_expect(pii->has_threshold && pii->threshold == 0.3);
    cr_expect_str_eq(pii->text.p, "Which spans are personal information?");
    cr_expect_str_eq(h->key.p, "halu");
    cr_expect_eq(h->roles, 1u << VW_ROLE_ANSWER);
    cr_expect_eq(rel->kind, VW_Q_SCORE);
    cr_expect_str_eq(rel->options[0].name.p, "not_relevant");
    cr_expect_str_eq(rel->options[0].desc.p, "The candidate does not help with the query.");
    cr_expect_str_eq(proc_entry(r, "h")->given_type, "null");
    vw_request_free(r);
}

Test(request, span_head_dispatch_and_halu_alias) {
    vw_request *r =
        ok("{\"state\":{\"request\":\"r\",\"answer\":\"a\"},\"questions\":{"
           "\"open\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"city\":\"a city\"},"
           "\"over\":\"request\"},"
           "\"alias\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"Hallucinated\":"
           "\"bad\"}},"
           "\"sub\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"PERSON\":\"p\"}},"
           "\"forced\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"PERSON\":\"p\"},"
           "\"head\":\"broad\"},"
           "\"plain\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"unsupported\":"
           "\"u\"}},"
           "\"nota\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"not-Supported \":"
           "\"u\",\"b\":\"c\"}}}}");
    vw_route rt = vw_question_route(cfg, &proc_entry(r, "open")->q);
    cr_expect(rt.head == VW_HEAD_BROAD && !rt.alias);
    rt = vw_question_route(cfg, &proc_entry(r, "alias")->q);
    cr_expect(rt.head == VW_HEAD_ROUTER && rt.alias);
    rt = vw_question_route(cfg, &proc_entry(r, "sub")->q);
    cr_expect(rt.head == VW_HEAD_ROUTER && !rt.alias);
    rt = vw_question_route(cfg, &proc_entry(r, "forced")->q);
    cr_expect(rt.head == VW_HEAD_BROAD);
    rt = vw_question_route(cfg, &proc_entry(r, "plain")->q);
    cr_expect(rt.head == VW_HEAD_ROUTER && !rt.alias);
    rt = vw_question_route(cfg, &proc_entry(r, "nota")->q);
    cr_expect(rt.head == VW_HEAD_BROAD);
    vw_request_free(r);
    vw_admit_cfg *nb = proc_cfg("bundle-nobroad");
    int status;
    vw_errlist d = {0};
    r = proc_admit(nb,
                   "{\"state\":\"t\",\"questions\":{\"a\":{\"type\":\"span\","
                   "\"instructions\":\"x\",\"criteria\":{\"Hallucinated\":\"bad\"}}}}",
                   &status, &d);
    rt = vw_question_route(nb, &proc_entry(r, "a")->q);
    cr_expect(rt.head == VW_HEAD_ROUTER && !rt.alias); /* Decision 3: unchanged */
    vw_request_free(r);
    vw_admit_cfg_free(nb);
}

Test(request, invalid_questions_fail_alone) {
    vw_request *r =
        ok("{\"state\":\"text\",\"questions\":{"
           "\"ok\":{\"type\":\"choice\",\"instructions\":\"Pick\",\"criteria\":{\"a\":\"x\",\"b\":"
           "null}},"
           "\"few\":{\"type\":\"choice\",\"instructions\":\"x\",\"criteria\":{\"a\":\"b\"}},"
           "\"unknown\":{\"type\":\"set\",\"instructions\":\"x\",\"criteria\":{\"a\":\"b\"},"
           "\"colour\":1}}}");
    cr_expect(proc_entry(r, "ok")->valid);
    const vw_qentry *e = proc_entry(r, "few");
    cr_expect(!e->valid);
    cr_expect_str_eq(e->error.msg, "criteria must name 2 to 255 options");
    e = proc_entry(r, "unknown");
    cr_expect_str_eq(e->error.msg, "set questions do not take ['colour']");
    cr_expect_str_eq(e->error.type, "extra_forbidden");
    cr_expect_str_eq(e->given_type, "\"set\"");
    vw_request_free(r);
}

Test(request, set_label_views_must_not_collide) {
    vw_request *r = ok("{\"state\":\"t\",\"questions\":{"
                       "\"s\":{\"type\":\"set\",\"instructions\":\"x\",\"criteria\":{\"a\":\"b\"}},"
                       "\"s.a\":{\"type\":\"noul\",\"instructions\":\"y\"}}}");
    const vw_qentry *e = proc_entry(r, "s");
    cr_expect(!e->valid);
    cr_expect(strstr(e->error.msg, "s.<label>") != NULL);
    cr_expect(proc_entry(r, "s.a")->valid);
    vw_request_free(r);
}

/* ---- cost: admission is linear in the request's bytes -------------------- */

/* A request whose state is an object of n keys ("request" first), or, with
 * text set, a string state of the same number of bytes. */
static char *big_request(size_t n, bool text) {
    vw_sbuf sb = {0};
    vw_sbuf_puts(&sb, "{\"state\":{\"request\":\"Is this fine?\"");
    for (size_t i = 0; i < n; i++)
        vw_sbuf_printf(&sb, ",\"key_%06zu\":\"value %zu\"", i, i);
    vw_sbuf_puts(&sb, "}" Q1);
    char *s = vw_sbuf_take(&sb, NULL);
    cr_assert_not_null(s);
    if (text) { /* "state":{...} -> "state":"aaaa...a" over the same bytes */
        char *a = s + strlen("{\"state\":"), *b = strstr(s, "},\"questions\"");
        *a = '"';
        memset(a + 1, 'a', (size_t)(b - a - 1));
        *b = '"';
    }
    return s;
}

/* The fastest of three admissions (status 200), in seconds. */
static double admit_seconds(const char *json) {
    double best = 1e9;
    for (int k = 0; k < 3; k++) {
        struct timespec t0, t1;
        int status = 0;
        vw_errlist d = {0};
        clock_gettime(CLOCK_MONOTONIC, &t0);
        vw_request *r = proc_admit(cfg, json, &status, &d);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        cr_assert_eq(status, 200);
        vw_request_free(r);
        vw_errlist_free(&d);
        double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        best = s < best ? s : best;
    }
    return best;
}

/* An object state of 100,000 keys (2.7 MB) against a text state of the same
 * bytes: a ratio, not a wall time. Each key's field range used to be counted
 * from the start of its part (quadratic: 95,000 keys took 31.7 s against 0.2 s
 * for the text, ~150x); linear, the object costs a small multiple of the text
 * (its keys are hashed, copied and written once). */
Test(request, object_state_admission_is_linear) {
    char *obj = big_request(100000, false), *txt = big_request(100000, true);
    cr_assert_eq(strlen(obj), strlen(txt));
    double o = admit_seconds(obj), t = admit_seconds(txt);
    cr_log_info("object %.4f s, text %.4f s, ratio %.1f", o, t, o / t);
    cr_assert_lt(o / t, 8.0, "object %.4f s vs text %.4f s", o, t);
    free(obj);
    free(txt);
}
