/* test_render.c — the decoder layout with the spec's 1-char-per-token
 * tokenizer (docs/spec/request.md §5.1 worked example), budget cuts (§7.3),
 * max_length_exceeded / 413 (Decision 1), span windows (§7.4), readout order
 * for the executor. Token positions equal code points here, so every
 * expectation is written as text. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "render/plan.h"
#include "proc_test.h"
#include "render/render.h"

static vw_admit_cfg *cfg;
static vw_renderer *rend;

static void open_bundle(const char *name) {
    cfg = proc_cfg(name);
    vw_err err = {0};
    vw_encoder enc = {proc_char_encode, proc_char_release, NULL};
    cr_assert_eq(vw_renderer_new(cfg, enc, &rend, &err), VW_OK, "%s", err.msg);
}
static void setup(void) {
    open_bundle("bundle");
}
static void teardown(void) {
    vw_renderer_free(rend);
    vw_admit_cfg_free(cfg);
}
static void setup_small(void) {
    /* hybrid_rmax 128, window 96, stride 80; one token per character makes
     * every piece ~4x longer than with the real tokenizer, so the budget of
     * 400 becomes 1200 here. */
    open_bundle("bundle-small");
    cfg->max_length = 1200;
}
TestSuite(render, .init = setup, .fini = teardown);
TestSuite(render_small, .init = setup_small, .fini = teardown);

static vw_plan *plan_of(const char *json, int want_status, vw_errlist *detail) {
    vw_plan *p = NULL;
    int status = 0;
    vw_err err = {0};
    cr_assert_eq(vw_plan_request(rend, json, strlen(json), &p, &status, detail, &err), VW_OK, "%s",
                 err.msg);
    cr_assert_eq(status, want_status, "status %d", status);
    return p;
}

static char *text_of(const vw_ivec *v) {
    return proc_char_decode(v->v, v->n);
}

static const vw_pblock *block_of(const vw_plan *p, size_t tree, const char *id) {
    const vw_ptree *t = &p->trees[tree];
    for (size_t i = 0; i < t->n_blocks; i++)
        if (!strcmp(p->req->entries[t->blocks[i].entry].id.p, id))
            return &t->blocks[i];
    return NULL;
}

Test(render, worked_example) {
    vw_errlist d = {0};
    vw_plan *p = plan_of("{\"state\":{\"request\":\"hello world\",\"answer\":\"done\"},"
                         "\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"Q\","
                         "\"criteria\":{\"a\":\"x\",\"b\":\"y\"},\"over\":\"request\"},"
                         "\"p\":{\"preset\":\"pii\",\"over\":\"request\"},"
                         "\"h\":{\"preset\":\"halu\"}}}",
                         200, &d);
    cr_assert_eq(p->n_rows, 2);
    cr_assert_eq(p->n_trees, 2);
    char *prefix = text_of(&p->trees[0].prefix);
    cr_expect_str_eq(prefix, "Context:\n<segment role=\"user\">\nhello world\n</segment>\n"
                             "<segment role=\"answer\">\ndone\n</segment>\n");
    char *prefix1 = text_of(&p->trees[1].prefix);
    cr_expect_str_eq(prefix, prefix1);
    const vw_pblock *c = block_of(p, 0, "c");
    char *ct = text_of(&c->ids);
    cr_expect_str_eq(ct, "\n\nTask type: choice\nTarget: user\nQuestion:\nQ\nOptions:"
                         "\n<option>\n{\"description\":\"x\",\"key\":\"a\"}\n</option>"
                         "\n<option>\n{\"description\":\"y\",\"key\":\"b\"}\n</option>"
                         "\n<option>\n{\"description\":\"None of the shown options applies.\","
                         "\"key\":\"[ABS]\"}\n</option>"
                         "\n\nSelect the single option best supported by the context and "
                         "instructions.\nDecision:");
    cr_expect_eq(c->query, (int32_t)c->ids.n - 1);
    cr_assert_eq(c->option_ends.n, 3);
    for (size_t i = 0; i < 3; i++)
        cr_expect_eq(ct[c->option_ends.v[i]], '>');
    const vw_pblock *pii = block_of(p, 0, "p");
    char *pt = text_of(&pii->ids);
    cr_expect(!strncmp(pt, "\n\nTask type: span\nTarget: user\n", 31));
    cr_expect(strstr(pt, "\n\nText:\n<segment role=\"user\">\nhello world\n</segment>\n") != NULL);
    cr_assert_eq(pii->word_positions.n, 2);
    cr_expect_eq(pt[pii->word_positions.v[0]], 'h');
    cr_expect_eq(pt[pii->word_positions.v[1]], 'w');
    cr_expect_eq(pii->label_ranges.n, 34); /* 17 labels */
    cr_expect_eq(pt[pii->label_ranges.v[0]], '\n');
    cr_expect_eq(pt[pii->label_ranges.v[1]], '>');
    cr_expect(pii->read);
    cr_expect_eq(p->spans[0].head, VW_HEAD_ROUTER);
    cr_expect_eq(p->rows[0].tokens, (int64_t)(p->trees[0].prefix.n + c->ids.n + pii->ids.n));
    cr_expect_eq(p->input_tokens, p->rows[0].tokens + p->rows[1].tokens);
    const vw_pblock *h = block_of(p, 1, "h");
    char *ht = text_of(&h->ids);
    cr_expect(!strncmp(ht,
                       "\n\nTask type: span\nTarget: answer\nQuestion:\nWhich spans of the "
                       "answer are not supported by the context?\nLabels:",
                       104));
    cr_expect(strstr(ht, "\nSpans:") != NULL);
    free(prefix);
    free(prefix1);
    free(ct);
    free(pt);
    free(ht);
    vw_plan_free(p);
}

Test(render, noul_renders_as_choice_and_score_set_suffixes) {
    vw_errlist d = {0};
    vw_plan *p = plan_of("{\"state\":\"t\",\"questions\":{\"n\":{\"type\":\"noul\","
                         "\"instructions\":\"Y?\"},\"s\":{\"type\":\"score\",\"instructions\":"
                         "\"S\",\"criteria\":[\"Routine\",\"Critical\"]},\"t\":{\"type\":\"set\","
                         "\"instructions\":\"T\",\"criteria\":{\"m\":null}}}}",
                         200, &d);
    char *n = text_of(&block_of(p, 0, "n")->ids);
    cr_expect(!strncmp(n, "\n\nTask type: choice\nTarget: user\n", 33));
    cr_expect(strstr(n, "{\"description\":\"No. The statement or question is not satisfied.\","
                        "\"key\":\"no\"}") != NULL);
    char *s = text_of(&block_of(p, 0, "s")->ids);
    cr_expect(strstr(s, "{\"description\":\"\",\"key\":\"Routine\"}") != NULL);
    cr_expect(strstr(s, "[ABS]") == NULL);
    cr_expect_eq(block_of(p, 0, "s")->option_ends.n, 2);
    char *t = text_of(&block_of(p, 0, "t")->ids);
    cr_expect(strstr(t, "\n\nSelect every option supported by the context and "
                        "instructions.\nDecision:") != NULL);
    cr_expect_str_eq(block_of(p, 0, "t")->kind, "set");
    free(n);
    free(s);
    free(t);
    vw_plan_free(p);
}

Test(render_small, unread_part_shrinks_first) {
    /* the context (unread) shrinks to make room */
    char body[4096];
    char ctx[1500];
    memset(ctx, 'c', 1000);
    ctx[1000] = 0;
    snprintf(body, sizeof body,
             "{\"state\":{\"request\":\"short question\",\"source\":\"%s\"},\"questions\":{"
             "\"q\":{\"type\":\"noul\",\"instructions\":\"Ok?\",\"over\":\"request\"}}}",
             ctx);
    vw_errlist d = {0};
    vw_plan *p = plan_of(body, 200, &d);
    cr_assert(p->rows[0].fits);
    char *prefix = text_of(&p->trees[0].prefix);
    cr_expect(strstr(prefix, "short question") != NULL);
    size_t total = p->trees[0].prefix.n + p->trees[0].blocks[0].ids.n;
    cr_expect_leq(total, 1200);
    cr_expect_lt(p->trees[0].prefix.n, 1000);
    free(prefix);
    vw_plan_free(p);
}

Test(render_small, row_that_cannot_fit_and_413) {
    char instr[1000];
    memset(instr, 'Q', 900);
    instr[900] = 0;
    char body[4096];
    /* one row too long next to one that fits: max_length_exceeded, 200 */
    snprintf(body, sizeof body,
             "{\"state\":\"text\",\"questions\":{\"big\":{\"type\":\"noul\",\"instructions\":"
             "\"%s\"},\"sp\":{\"type\":\"span\",\"instructions\":\"x\",\"criteria\":{\"L\":null}},"
             "\"sp2\":{\"type\":\"span\",\"instructions\":\"y\",\"criteria\":{\"M\":null}}}}",
             instr);
    vw_errlist d = {0};
    vw_plan *p = plan_of(body, 200, &d);
    cr_expect(!p->rows[0].fits); /* big + sp */
    cr_expect(p->rows[1].fits);  /* sp2 */
    cr_expect_eq(p->row_of[0], 0);
    cr_expect_eq(p->n_trees, 1);
    vw_sbuf sb = {0};
    vw_plan_write_json(&sb, p);
    cr_expect(strstr(sb.p, "\"error\":\"max_length_exceeded\",\"message\":\"the questions alone "
                           "exceed the input of 1200 tokens by") != NULL);
    vw_sbuf_free(&sb);
    vw_plan_free(p);
    /* no row fits: 413 */
    snprintf(body, sizeof body,
             "{\"state\":\"text\",\"questions\":{\"big\":{\"type\":\"noul\",\"instructions\":"
             "\"%s\"}}}",
             instr);
    p = plan_of(body, 413, &d);
    cr_expect_null(p);
    char *dj = proc_detail_json(&d);
    cr_expect(strstr(dj, "\"loc\":[\"body\",\"questions\",\"big\"]") != NULL, "%s", dj);
    cr_expect(strstr(dj, "\"type\":\"too_long\"") != NULL);
    free(dj);
    vw_errlist_free(&d);
}

Test(render_small, long_span_target_is_windowed) { /* hybrid_rmax 128, window 96, stride 80 */
    char text[2000] = "";
    for (int i = 0; i < 40; i++) {
        char w[16];
        snprintf(w, sizeof w, "%slorem%d", i ? " " : "", i);
        strcat(text, w);
    }
    char body[4096];
    snprintf(body, sizeof body,
             "{\"state\":{\"request\":\"%s\"},\"questions\":{\"p\":{\"type\":\"span\","
             "\"instructions\":\"x\",\"criteria\":{\"L\":\"d\"}},\"c\":{\"type\":\"noul\","
             "\"instructions\":\"y\"}}}",
             text);
    vw_errlist d = {0};
    vw_plan *p = plan_of(body, 200, &d);
    cr_assert(p->rows[0].fits);
    cr_assert_gt(p->n_trees, 2);
    const vw_ptree *row = &p->trees[0];
    cr_expect(!row->window);
    cr_assert_eq(row->n_blocks, 2);
    cr_expect_str_eq(p->req->entries[row->blocks[0].entry].id.p, "c");
    cr_expect(!row->blocks[1].read);
    cr_expect_eq(row->blocks[1].word_positions.n, 0);
    size_t n_words = p->parts[0].first.n;
    cr_expect_eq(n_words, 40);
    char *seen = calloc(n_words, 1);
    int64_t usage = (int64_t)(row->prefix.n + row->blocks[0].ids.n + row->blocks[1].ids.n);
    for (size_t t = 1; t < p->n_trees; t++) {
        const vw_ptree *w = &p->trees[t];
        cr_expect(w->window && w->n_blocks == 1 && w->blocks[0].read);
        const vw_pblock *b = &w->blocks[0];
        char *bt = text_of(&b->ids);
        for (size_t i = 0; i < b->word_index.n; i++) {
            int32_t g = b->word_index.v[i];
            seen[g] = 1;
            /* the word's first token, as text, starts the word */
            cr_expect_eq(bt[b->word_positions.v[i]], text[p->parts[0].words.v[2 * g]]);
        }
        usage += (int64_t)(w->prefix.n + b->ids.n);
        free(bt);
    }
    for (size_t g = 0; g < n_words; g++)
        cr_expect(seen[g], "word %zu not covered", g);
    cr_expect_eq(p->input_tokens, usage);
    cr_expect_eq(p->spans[0].n_windows, p->n_trees - 1);
    free(seen);
    vw_plan_free(p);
}

/* Decision 9: a plan that would run more model tokens than
 * max_request_tokens is a 413 at ["body"]; at the limit it is planned. */
Test(render_small, request_over_the_token_limit_is_413) {
    char text[2000] = "", body[4096];
    for (int i = 0; i < 40; i++) {
        char w[16];
        snprintf(w, sizeof w, "%slorem%d", i ? " " : "", i);
        strcat(text, w);
    }
    snprintf(body, sizeof body,
             "{\"state\":{\"request\":\"%s\"},\"questions\":{\"p\":{\"type\":\"span\","
             "\"instructions\":\"x\",\"criteria\":{\"L\":\"d\"}}}}",
             text);
    vw_errlist d = {0};
    vw_plan *p = plan_of(body, 200, &d);
    int64_t cost = 0; /* every executed tree: its prefix and read blocks */
    for (size_t t = 0; t < p->n_trees; t++) {
        int64_t read = 0;
        for (size_t b = 0; b < p->trees[t].n_blocks; b++)
            read += p->trees[t].blocks[b].read ? (int64_t)p->trees[t].blocks[b].ids.n : 0;
        cost += read ? (int64_t)p->trees[t].prefix.n + read : 0;
    }
    cr_assert_gt(p->n_trees, 2, "windowed");
    cr_expect_eq(vw_plan_cost(p), cost);
    vw_plan_free(p);
    cfg->max_request_tokens = cost;
    vw_plan_free(plan_of(body, 200, &d));
    cfg->max_request_tokens = cost - 1;
    cr_expect_null(plan_of(body, 413, &d));
    char *dj = proc_detail_json(&d), want[256];
    snprintf(want, sizeof want,
             "[{\"loc\":[\"body\"],\"msg\":\"the request would run %lld tokens through the "
             "model, more than the limit of %lld\",\"type\":\"too_long\"}]",
             (long long)cost, (long long)(cost - 1));
    cr_expect_str_eq(dj, want);
    free(dj);
    vw_errlist_free(&d);
}

Test(render, executor_readout_order) {
    vw_errlist d = {0};
    vw_plan *p =
        plan_of("{\"state\":{\"request\":\"hi there\"},\"questions\":{\"c\":{\"type\":"
                "\"choice\",\"instructions\":\"Q\",\"criteria\":{\"a\":\"x\",\"b\":\"y\"}},"
                "\"s\":{\"type\":\"span\",\"instructions\":\"S\",\"criteria\":{\"L\":null,"
                "\"M\":null}}}}",
                200, &d);
    vw_plan_exec_out ex;
    cr_assert_eq(vw_plan_exec(p, &ex, NULL), VW_OK);
    cr_assert_eq(ex.n_trees, 1);
    const vw_tree *t = &ex.trees[0];
    cr_assert_eq(t->n_blocks, 2);
    const vw_pblock *c = &p->trees[0].blocks[0], *s = &p->trees[0].blocks[1];
    cr_expect_eq(t->blocks[0].n_readouts, 4); /* a, b, [ABS], query */
    cr_expect_eq(t->blocks[0].readouts[3], c->query);
    size_t labels = (size_t)(s->label_ranges.v[1] - s->label_ranges.v[0] + 1 +
                             s->label_ranges.v[3] - s->label_ranges.v[2] + 1);
    cr_expect_eq(t->blocks[1].n_readouts, labels + 2);
    cr_expect_eq(t->blocks[1].readouts[0], s->label_ranges.v[0]);
    cr_expect_eq(t->blocks[1].readouts[labels], s->word_positions.v[0]);
    cr_expect_eq(ex.first_row[0], 0);
    cr_expect_eq(ex.first_row[1], 4);
    cr_expect_eq(ex.n_rows, vw_trees_readout_count(ex.trees, ex.n_trees));
    cr_expect_eq(vw_trees_validate(ex.trees, ex.n_trees, 2000, NULL), VW_OK);
    vw_plan_exec_free(&ex);
    vw_plan_free(p);
}

/* The renderer (its piece cache) is shared by threads: every thread's plans
 * are byte-identical to a single-threaded one. */
typedef struct worker_arg {
    const char *body;
    const char *want;
    int bad;
} worker_arg;

static void *plan_worker(void *p) {
    worker_arg *a = p;
    for (int i = 0; i < 50; i++) {
        vw_plan *plan = NULL;
        vw_errlist d = {0};
        int status;
        vw_sbuf sb = {0};
        if (vw_plan_request(rend, a->body, strlen(a->body), &plan, &status, &d, NULL) || !plan) {
            a->bad++;
        } else {
            vw_plan_write_json(&sb, plan);
            a->bad += strcmp(sb.p, a->want) != 0;
        }
        vw_sbuf_free(&sb);
        vw_plan_free(plan);
        vw_errlist_free(&d);
    }
    return NULL;
}

Test(render, renderer_is_shared_by_threads) {
    char body[2048];
    snprintf(body, sizeof body,
             "{\"state\":{\"request\":\"Tom at tom@x.org\",\"answer\":\"a\"},\"questions\":{"
             "\"p\":{\"preset\":\"pii\",\"over\":\"request\"},\"c\":{\"type\":\"choice\","
             "\"instructions\":\"Q\",\"criteria\":{\"a\":\"x\",\"b\":\"y\"}}}}");
    vw_admit_cfg *c2 = proc_cfg("bundle");
    vw_renderer *fresh = NULL;
    vw_encoder enc = {proc_char_encode, proc_char_release, NULL};
    cr_assert_eq(vw_renderer_new(c2, enc, &fresh, NULL), VW_OK);
    vw_plan *p = NULL;
    vw_errlist d = {0};
    int status;
    cr_assert_eq(vw_plan_request(fresh, body, strlen(body), &p, &status, &d, NULL), VW_OK);
    vw_sbuf want = {0};
    vw_plan_write_json(&want, p);
    vw_plan_free(p);
    vw_renderer_free(fresh);
    vw_admit_cfg_free(c2);
    pthread_t th[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){body, want.p, 0};
        pthread_create(&th[i], NULL, plan_worker, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(args[i].bad, 0, "thread %d: %d plans differ", i, args[i].bad);
    }
    vw_sbuf_free(&want);
}
