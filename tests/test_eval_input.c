/* test_eval_input.c — what `vela-worker eval` does with input it cannot use:
 * a line that is not JSON or not a record, a malformed answer, a label of the
 * wrong type for its question, an unknown question id, duplicate, missing
 * and extra ids — each reported with file:line and counted, never a crash —
 * and the command's exit codes, --html (one self-contained page) and --list
 * (one line per record). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval/eval.h"
#include "eval/report_json.h"
#include "eval/report_text.h"
#include "vw_test.h"

/* clang-format off */
static const char *const RESULTS[] = {
    /* 1 */ "{'request_id':'r1','vela_status':200,'value':{'answers':{"
                "'q':{'type':'choice','choice':'a','probabilities':{'a':0.7,'b':0.3}},"
                "'n':{'type':'noul','noul':0.8}}}}",
    /* 2 */ "not json",
    /* 3 */ "[1, 2]",
    /* 4 */ "{'request_id':'r1','vela_status':422,'value':{'status':422,'detail':[]}}",
    /* 5 */ "",
    /* 6 */ "{'request_id':5,'vela_status':200,'value':{'answers':{}}}",
    /* 7 */ "{'request_id':'rej','vela_status':422,'value':{'status':422,'detail':["
                "{'loc':['body','state'],'msg':'Field required','type':'missing'}]}}",
    /* 8 */ "{'request_id':'dl','dead_letter':'poison'}",
    /* 9 */ "{'request_id':'r2','vela_status':200,'value':{'answers':{"
                "'q':{'type':'choice','error':'max_length_exceeded'},"
                "'n':{'type':'noul','noul':0.2}}}}",
    /* 10 */ "{'request_id':'r9','vela_status':200,'value':{'answers':{"
                "'q':{'type':'choice','choice':'a','probabilities':[0.7]}}}}",
    /* 11 */ "{'request_id':'r3','vela_status':200,'value':{'answers':{'n':{'type':'noul','noul':0.4}}}}",
    /* 12 */ "{'request_id':'r4','vela_status':200,'value':{'answers':{"
                "'q':{'type':'choice','choice':'b','probabilities':{'a':0.4,'b':0.6}}}}}",
    /* 13 */ "{'request_id':'r5','vela_status':200,'value':{'answers':{"
                "'n':{'type':'choice','choice':'b','probabilities':{'a':0.4,'b':0.6}}}}}",
    NULL};

static const char *const LABELS[] = {
    /* 1 */ "{'request_id':'r1','labels':{'q':'a','n':true}}",
    /* 2 */ "{'request_id':'r1','labels':{}}",
    /* 3 */ "{'request_id':'r2','labels':{'q':'a','n':'yes'}}",
    /* 4 */ "{'request_id':'r3','labels':{'zz':1,'n':false}}",
    /* 5 */ "{'request_id':'nores','labels':{'q':'a'}}",
    /* 6 */ "oops",
    /* 7 */ "{'request_id':'rej','labels':{'q':'a'}}",
    /* 8 */ "{'request_id':'r4','labels':{'q':7}}",
    /* 9 */ "{'request_id':'r5','labels':{'n':true}}",
    /* 10 */ "{'labels':{'q':'a'}}",
    NULL};
/* clang-format on */

typedef struct files {
    char dir[32];
    char *results, *labels;
} files;

static void make(files *f) {
    strcpy(f->dir, "/tmp/vw-eval-in-XXXXXX");
    cr_assert(mkdtemp(f->dir));
    f->results = vw_test_write_lines(f->dir, "r.jsonl", RESULTS);
    f->labels = vw_test_write_lines(f->dir, "l.jsonl", LABELS);
}

static void clean(files *f) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    cr_assert_eq(system(cmd), 0);
    free(f->results);
    free(f->labels);
}

static bool has_problem(const vw_eval_report *r, const char *file, uint64_t line,
                        const char *text) {
    for (size_t i = 0; i < r->n_problems; i++)
        if (!strcmp(r->problems[i].file, file) && r->problems[i].line == line &&
            strstr(r->problems[i].msg, text))
            return true;
    return false;
}

Test(eval_input, bad_lines_and_labels_are_counted_with_file_and_line) {
    files f;
    make(&f);
    vw_eval_opts o = {.results = f.results, .labels = f.labels};
    vw_eval_report *r = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_eval_run(&o, &r, &err), VW_OK, "%s", err.msg);
    const char *res = f.results, *lab = f.labels;
    /* results: 12 non-empty lines = 7 records + 1 duplicate + 4 bad */
    cr_assert_eq(r->results.lines, 12);
    cr_assert_eq(r->results.records, 7, "r1 rej dl r2 r3 r4 r5");
    cr_assert_eq(r->results.duplicates, 1);
    cr_assert_eq(r->results.bad_lines, 4);
    cr_assert(has_problem(r, res, 2, "not JSON"));
    cr_assert(has_problem(r, res, 3, "not a JSON object"));
    cr_assert(has_problem(r, res, 4, "again"));
    cr_assert(has_problem(r, res, 6, "request_id must be a string"));
    cr_assert(has_problem(r, res, 10, "answers.q: probabilities must be an object"));
    /* labels: 10 lines = 7 records + 1 duplicate + 2 bad */
    cr_assert_eq(r->labels.records, 7);
    cr_assert_eq(r->labels.duplicates, 1);
    cr_assert_eq(r->labels.bad_lines, 2);
    cr_assert(has_problem(r, lab, 2, "again"));
    cr_assert(has_problem(r, lab, 6, "not JSON"));
    cr_assert(has_problem(r, lab, 10, "a labels line is"));
    cr_assert(has_problem(r, lab, 3, "noul question n: the label must be true or false"));
    cr_assert(has_problem(r, lab, 4, "has no question \"zz\""));
    cr_assert(has_problem(r, lab, 8, "choice question q: the label must be an option label"));
    cr_assert_eq(r->bad_labels, 2);
    cr_assert_eq(r->unknown_qids, 1);
    cr_assert_eq(r->problems_total, 11);
    /* joins */
    cr_assert_eq(r->labelled, 6, "r1 r2 r3 r4 r5 rej");
    cr_assert_eq(r->unlabelled, 1, "dl");
    cr_assert_eq(r->labels_without_result, 1, "nores");
    /* questions: q answered by r1 r4, an error in r2; n a noul in r1 r2 r3 and a
     * choice in r5 (a type conflict: skipped) */
    const vw_eval_q *q = vw_eval_qtable_find(&r->questions, "q");
    const vw_eval_q *n = vw_eval_qtable_find(&r->questions, "n");
    cr_assert(q && n && q->type == VW_QT_CHOICE && n->type == VW_QT_NOUL);
    cr_assert_eq(q->answered, 2);
    cr_assert_eq(q->errors, 1);
    cr_assert_eq(q->n, 1, "r1 only (r2 an error, r4 a bad label)");
    cr_assert_eq(n->n, 2, "r1, r3 (r2 a bad label, r5 another type)");
    cr_assert_eq(n->type_conflicts, 1);
    cr_assert_float_eq(n->m.accuracy, 1.0, 0, "0.8 yes, 0.4 no");
    /* the status counts */
    vw_sbuf sb = {0};
    cr_assert_eq(vw_eval_write_json(r, &sb), VW_OK);
    cr_assert(strstr(sb.p, "\"status\":{\"200\":5,\"422\":1,\"dead_letter:poison\":1}"), "%s",
              sb.p);
    vw_sbuf_reset(&sb);
    cr_assert_eq(vw_eval_write_text(r, &sb), VW_OK);
    for (char *line = strtok(sb.p, "\n"); line; line = strtok(NULL, "\n"))
        cr_assert_leq(strlen(line), 100, "a text line over 100 columns: %s", line);
    vw_sbuf_free(&sb);
    vw_eval_report_free(r);
    clean(&f);
}

Test(eval_input, empty_results_give_an_empty_report) {
    files f;
    const char *const none[] = {NULL};
    make(&f);
    char *empty = vw_test_write_lines(f.dir, "e.jsonl", none);
    vw_eval_opts o = {.results = empty, .labels = f.labels};
    vw_eval_report *r = NULL;
    cr_assert_eq(vw_eval_run(&o, &r, NULL), VW_OK);
    cr_assert_eq(r->results.records, 0);
    cr_assert_eq(r->labels_without_result, 7);
    cr_assert_eq(r->questions.ids.n, 0);
    vw_eval_report_free(r);
    free(empty);
    clean(&f);
}

Test(eval_input, missing_file_is_an_error) {
    vw_eval_opts o = {.results = "/nonexistent/r.jsonl"};
    vw_eval_report *r = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_eval_run(&o, &r, &err), VW_EIO);
    cr_assert_null(r);
    cr_assert(strstr(err.msg, "/nonexistent/r.jsonl"));
}

/* ---- the command --------------------------------------------------------------- */

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

/* Runs `vela-worker eval ARGS`, stdout and stderr into files of dir; returns
 * the exit code. */
static int eval_cmd(const files *f, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' eval %s >'%s/out' 2>'%s/err'", worker_bin(), args, f->dir,
             f->dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const files *f, const char *name) {
    char path[96];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    char *s = vw_test_read_file(path, NULL);
    cr_assert(s, "%s", path);
    return s;
}

Test(eval_input, command_exit_codes_and_stderr) {
    files f;
    char args[1024];
    make(&f);
    snprintf(args, sizeof args, "--results '%s' --labels '%s'", f.results, f.labels);
    cr_assert_eq(eval_cmd(&f, args), 0, "bad lines are counted, not fatal");
    char *err = slurp(&f, "err"), *out = slurp(&f, "out");
    char want[512];
    snprintf(want, sizeof want, "%s:2: not JSON", f.results);
    cr_assert(strstr(err, want), "stderr: %s", err);
    snprintf(want, sizeof want, "%s:8: request \"r4\": choice question q", f.labels);
    cr_assert(strstr(err, want), "stderr: %s", err);
    cr_assert(strstr(out, "choice"), "the tables: %s", out);
    free(err);
    free(out);
    cr_assert_eq(eval_cmd(&f, "--results /nonexistent.jsonl"), 1);
    cr_assert_eq(eval_cmd(&f, "--labels x"), 2, "no --results");
    snprintf(args, sizeof args, "--results '%s' --top 3", f.results);
    cr_assert_eq(eval_cmd(&f, args), 2, "--top needs --baseline");
    clean(&f);
}

Test(eval_input, html_is_one_self_contained_page) {
    files f;
    char args[1024];
    make(&f);
    snprintf(args, sizeof args, "--results '%s' --labels '%s' --baseline '%s' --html '%s/r.html'",
             f.results, f.labels, f.results, f.dir);
    cr_assert_eq(eval_cmd(&f, args), 0);
    char *html = slurp(&f, "r.html");
    cr_assert(strstr(html, "<!DOCTYPE html>") && strstr(html, "</html>"));
    cr_assert(strstr(html, "<svg"), "a reliability diagram");
    cr_assert(strstr(html, "confusion: q"), "a confusion matrix");
    cr_assert(strstr(html, "A/B"), "the A/B summary");
    cr_assert_null(strstr(html, "<script"), "no script");
    cr_assert_null(strstr(html, "src="), "nothing fetched");
    cr_assert_null(strstr(html, "href="), "nothing linked");
    cr_assert_null(strstr(html, "url("), "no CSS fetch");
    free(html);
    clean(&f);
}

Test(eval_input, list_prints_one_line_per_record) {
    files f;
    char args[1024];
    make(&f);
    snprintf(args, sizeof args, "--results '%s' --list", f.results);
    cr_assert_eq(eval_cmd(&f, args), 0);
    char *out = slurp(&f, "out");
    int lines = 0;
    for (char *p = out; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, 8, "7 records and r1's duplicate (bad lines on stderr): %s", out);
    cr_assert(strstr(out, "r1                   200 q=a n=0.800\n"), "%s", out);
    cr_assert(strstr(out, "rej                  422 body.state: Field required (missing)\n"), "%s",
              out);
    cr_assert(strstr(out, "dl                   dead_letter:poison\n"), "%s", out);
    cr_assert(strstr(out, "q:!max_length_exceeded"), "%s", out);
    free(out);
    clean(&f);
}

/* The problems come in (file, line) order (issue 33 item 6): a labels line
 * is found when its result is read, so in the results' order, and the list
 * showed labels.jsonl:108 before :32. 25 bad labels whose results come in
 * the reverse order: the 20 kept are lines 1..20 in order, in the report and
 * on the log, then a count of the other 5. */
Test(eval_input, problems_are_sorted_by_file_then_line) {
    enum { N = 25 };
    char dir[] = "/tmp/vw-eval-sort-XXXXXX";
    cr_assert(mkdtemp(dir));
    static char res[N][160], lab[N][96];
    const char *res_lines[N + 1], *lab_lines[N + 1];
    for (int i = 0; i < N; i++) {
        snprintf(res[i], sizeof res[i],
                 "{'request_id':'r%d','vela_status':200,'value':{'answers':{"
                 "'n':{'type':'noul','noul':0.5}}}}",
                 i);
        snprintf(lab[i], sizeof lab[i], "{'request_id':'r%d','labels':{'n':'maybe'}}", N - 1 - i);
        res_lines[i] = res[i];
        lab_lines[i] = lab[i];
    }
    res_lines[N] = lab_lines[N] = NULL;
    char *rp = vw_test_write_lines(dir, "results.jsonl", res_lines);
    char *lp = vw_test_write_lines(dir, "labels.jsonl", lab_lines);
    char log_path[64];
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    FILE *log = fopen(log_path, "w");
    cr_assert_not_null(log);
    vw_eval_opts o = {.results = rp, .labels = lp, .log = log, .log_max = 20};
    vw_eval_report *r = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_eval_run(&o, &r, &err), VW_OK, "%s", err.msg);
    fclose(log);
    cr_assert_eq(r->problems_total, N);
    cr_assert_eq(r->n_problems, VW_EVAL_KEEP_PROBLEMS);
    for (size_t i = 0; i < r->n_problems; i++) {
        cr_assert_str_eq(r->problems[i].file, lp);
        cr_assert_eq(r->problems[i].line, i + 1, "problem %zu is line %llu", i,
                     (unsigned long long)r->problems[i].line);
    }
    size_t len = 0;
    char *text = vw_test_read_file(log_path, &len);
    cr_assert_not_null(text);
    const char *at = text;
    for (int line = 1; line <= VW_EVAL_KEEP_PROBLEMS; line++) {
        char want[300];
        snprintf(want, sizeof want, "%s:%d: ", lp, line);
        const char *p = strstr(text, want);
        cr_assert(p && p >= at, "%s comes after the line before it:\n%s", want, text);
        at = p;
    }
    cr_assert(strstr(text, "eval: 5 more problems not shown\n"), "%s", text);
    free(text);
    vw_eval_report_free(r);
    free(rp);
    free(lp);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
