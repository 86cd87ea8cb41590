/* test_eval_terminal.c — no byte a terminal acts on reaches `vela-worker
 * eval`'s text outputs (issue 27 item 6): request ids, question ids, labels,
 * choices, error and dead-letter types and rejection triples holding ESC
 * colour codes, \r, an OSC title sequence, C1 CSI (U+009B), DEL and, in
 * problem lines, bytes that are not UTF-8, come out escaped
 * (vw_sbuf_put_visible) in the text report, in --list and in the problem
 * lines on stderr. JSON and HTML keep their own escaping (test_eval_input). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/sbuf.h"
#include "util/utf8.h"
#include "vw_test.h"

/* The hostile strings, as JSON escapes (written with ' for "). */
#define COLOUR "\\u001b[31mred\\u001b[0m"
#define CR "cr\\rover"
#define OSC "\\u001b]0;title\\u0007"
#define C1 "c1\\u009bX"
#define LONG_ID                                                                                    \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\u00e9"

/* clang-format off */
static const char *const RESULTS[] = {
    /* 1 */ "{'request_id':'" COLOUR "','vela_status':200,'value':{'answers':{"
                "'" OSC "':{'type':'choice','choice':'" CR "','probabilities':{'" CR "':0.7,'b':0.3}},"
                "'n" C1 "':{'type':'noul','noul':0.8},"
                "'tags.\\u001b[1mX':{'type':'noul','noul':0.7},"
                "'sp':{'type':'noul','noul':0.9}},"
                "'sets':{'tags':{'selected':['\\u001b[1mX'],'probabilities':{'\\u001b[1mX':0.7}}},"
                "'spans':{'sp':[{'start':0,'end':1,'label':'L\\u009b\\u007f'}]}}}",
    /* 2 */ "{'request_id':'" CR "','vela_status':422,'value':{'status':422,'detail':["
                "{'loc':['body','q\\u001b[2J'],'msg':'m" OSC "','type':'t\\r'}]}}",
    /* 3 */ "{'request_id':'" OSC "','dead_letter':'poison\\u001b[5m'}",
    /* 4 */ "{'request_id':'" C1 "','vela_status':200,'value':{'answers':{"
                "'" OSC "':{'type':'choice','error':'err\\u001b[31m'}}}}",
    /* 5 */ "{'request_id':'" COLOUR "','dead_letter':'again'}",
    /* 6 */ "\x1b]0;raw\x07 \xff\x9b{",
    /* 7 */ "{'request_id':'z','vela_status':200,'value':{'answers':{"
                "'\\u001b[31mq':{'type':'choice','choice':1}}}}",
    /* 8 */ "{'request_id':'" LONG_ID "','dead_letter':'x'}",
    /* 9 */ "{'request_id':'" LONG_ID "','dead_letter':'x'}",
    NULL};

static const char *const BASELINE[] = {
    "{'request_id':'" COLOUR "','vela_status':200,'value':{'answers':{"
        "'" OSC "':{'type':'choice','choice':'b','probabilities':{'" CR "':0.3,'b':0.7}},"
        "'n" C1 "':{'type':'noul','noul':0.1}}}}",
    "{'request_id':'" C1 "','dead_letter':'poison\\u009b'}",
    NULL};

static const char *const LABELS[] = {
    "{'request_id':'" COLOUR "','labels':{'" OSC "':'" CR "','n" C1 "':true,"
        "'tags':['\\u001b[1mX'],'sp':[{'start':0,'end':1,'label':'L\\u009b\\u007f'}],"
        "'zz\\u001b[0m':1}}",
    NULL};
/* clang-format on */

/* No C0 byte but the newline, no DEL, no C1 (C2 80..9F), strict UTF-8. */
static void expect_clean(const char *what, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        cr_assert(!(c < 0x20 && c != '\n') && c != 0x7f, "%s: raw byte 0x%02x at %zu", what, c, i);
        cr_assert(!(c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] < 0xa0),
                  "%s: raw C1 control at %zu", what, i);
    }
    cr_assert(vw_utf8_clean(s, n), "%s: not UTF-8", what);
}

/* The three input files, written into a fresh directory. */
enum { RES, BASE, LAB, N_FILES };
typedef struct files {
    char dir[32];
    char *path[N_FILES];
} files;

static void make(files *f) {
    static const char *const *const lines[N_FILES] = {RESULTS, BASELINE, LABELS};
    static const char *const names[N_FILES] = {"r.jsonl", "b.jsonl", "l.jsonl"};
    strcpy(f->dir, "/tmp/vw-eval-tty-XXXXXX");
    cr_assert(mkdtemp(f->dir));
    for (int i = 0; i < N_FILES; i++)
        f->path[i] = vw_test_write_lines(f->dir, names[i], lines[i]);
}

static void clean(files *f) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    cr_assert_eq(system(cmd), 0);
    for (int i = 0; i < N_FILES; i++)
        free(f->path[i]);
}

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

/* Runs `vela-worker eval ARGS`; *out and *err are its stdout and stderr. */
static void eval_cmd(const files *f, const char *args, char **out, char **err) {
    char cmd[2048], path[96];
    snprintf(cmd, sizeof cmd, "'%s' eval %s >'%s/out' 2>'%s/err'", worker_bin(), args, f->dir,
             f->dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", WEXITSTATUS(st), cmd);
    snprintf(path, sizeof path, "%s/out", f->dir);
    cr_assert((*out = vw_test_read_file(path, NULL)));
    snprintf(path, sizeof path, "%s/err", f->dir);
    cr_assert((*err = vw_test_read_file(path, NULL)));
}

static void expect_has(const char *what, const char *s, const char *part) {
    cr_assert(strstr(s, part), "%s lacks '%s':\n%s", what, part, s);
}

Test(eval_terminal, helper_escapes_controls_and_bad_bytes) {
    static const char in[] = "a\x1b[31mb\r\x1b]0;t\x07\xc2\x9b\\\x7f\xff\xc3\xc3\xa9\xe2\x82\xac"
                             "\xed\xa0\x80\xc2\xa0\n\t\xe2\x82";
    static const char want[] = "a\\x1b[31mb\\x0d\\x1b]0;t\\x07\\u009b\\\\\\x7f\\xff\\xc3\xc3\xa9"
                               "\xe2\x82\xac\\xed\\xa0\\x80\xc2\xa0\\x0a\\x09\\xe2\\x82";
    vw_sbuf sb = {0};
    vw_sbuf_put_visible(&sb, in, sizeof in - 1);
    cr_assert_eq(vw_sbuf_status(&sb), VW_OK);
    cr_assert_str_eq(sb.p, want);
    expect_clean("helper", sb.p);
    vw_sbuf_reset(&sb);
    vw_sbuf_put_visible(&sb, "plain \xc3\xa9 text", 13);
    cr_assert_str_eq(sb.p, "plain \xc3\xa9 text", "clean text is copied");
    vw_sbuf_free(&sb);
}

Test(eval_terminal, report_and_problem_lines) {
    files f;
    char args[1024], *out, *err;
    make(&f);
    snprintf(args, sizeof args, "--results '%s' --baseline '%s' --labels '%s' --top 5", f.path[RES],
             f.path[BASE], f.path[LAB]);
    eval_cmd(&f, args, &out, &err);
    expect_clean("report", out);
    expect_clean("problems", err);
    /* Shown, escaped: ids (top changes), question ids, labels, statuses. */
    expect_has("report", out, "\\x1b[31mred\\x1b[0m");
    expect_has("report", out, "\\x1b]0;title\\x07");
    expect_has("report", out, "nc1\\u009bX");
    expect_has("report", out, "\\x1b[1mX");
    expect_has("report", out, "L\\u009b\\x7f");
    expect_has("report", out, "dead_letter:poison\\x1b[5m");
    expect_has("report", out, "dead_letter:poison\\u009b");
    /* Problem lines: a duplicate id, a bad line's parser message, a qid in a
     * shape error, an unknown label qid, an id cut inside a character. */
    expect_has("problems", err, "request_id \"\\x1b[31mred\\x1b[0m\" again");
    expect_has("problems", err, "answers.\\x1b[31mq: choice must be a string");
    expect_has("problems", err, "has no question \"zz\\x1b[0m\"");
    expect_has("problems", err, "aaaaaaa\\xc3\" again");
    free(out);
    free(err);
    clean(&f);
}

Test(eval_terminal, list_lines) {
    files f;
    char args[1024], *out, *err;
    make(&f);
    snprintf(args, sizeof args, "--results '%s' --list --width 0", f.path[RES]);
    eval_cmd(&f, args, &out, &err);
    expect_clean("--list", out);
    expect_clean("--list problems", err);
    expect_has("--list", out,
               "\\x1b[31mred\\x1b[0m   200 \\x1b]0;title\\x07=cr\\x0dover nc1\\u009bX=0.800");
    expect_has("--list", out, "tags={\\x1b[1mX}");
    expect_has("--list", out, "sp=[L\\u009b\\x7f:1]");
    expect_has("--list", out,
               "cr\\x0dover           422 body.q\\x1b[2J: m\\x1b]0;title\\x07 (t\\x0d)");
    expect_has("--list", out, "\\x1b]0;title\\x07     dead_letter:poison\\x1b[5m");
    expect_has("--list", out, "\\x1b]0;title\\x07:!err\\x1b[31m");
    expect_has("--list problems", err, "answers.\\x1b[31mq: choice must be a string");
    expect_has("--list problems", err, ":6: not JSON");
    free(out);
    free(err);
    clean(&f);
}
