/* test_eval_html.c — the eval report's figures and their layout (issue 33
 * item 8; docs/eval.md "Output"): score questions get a calibration plot and
 * a residual histogram, set and span questions per-label precision and
 * recall bars, the A/B section a histogram of probability changes per choice
 * and Noul question and the list of flipped decisions; each question's
 * figures are one group, and in headless Chromium (Debian's chromium, no
 * script in the report: the test adds its own probe to a copy) every
 * question's figures sit on one row at 1280 px (the lang confusion matrix
 * wrapped onto the next row, away from its reliability diagram) and nothing
 * overflows its card or the page at 1280 and 900 px. A screenshot of the page
 * is left beside the report (cr_log_info names it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vw_test.h"

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

/* The fixtures' report (eval --labels --baseline --top 12) in dir/r.html. */
static char *report(const char *dir) {
    char *src = vw_test_path(""), cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' eval --results fixtures/eval/results.jsonl --baseline "
             "fixtures/eval/baseline.jsonl --labels fixtures/eval/labels.jsonl --top 12 --html "
             "'%s/r.html' >/dev/null 2>&1",
             src, worker_bin(), dir);
    free(src);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s", cmd);
    char path[512];
    snprintf(path, sizeof path, "%s/r.html", dir);
    size_t n = 0;
    char *html = vw_test_read_file(path, &n);
    cr_assert_not_null(html);
    return html;
}

/* The text of question qid's figure group (<div class=qfig data-q="qid">
 * up to the next group or section); NULL when there is none. */
static char *group(const char *html, const char *qid) {
    char open[128];
    snprintf(open, sizeof open, "<div class=qfig data-q=\"%s\">", qid);
    const char *a = strstr(html, open);
    if (!a)
        return NULL;
    const char *b = strstr(a + 1, "<div class=qfig"), *h = strstr(a, "<h2");
    if (!b || (h && h < b))
        b = h;
    return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

Test(eval_html, every_question_type_has_its_figures_in_one_group) {
    char dir[] = "/tmp/vw-eval-html-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *html = report(dir);
    const char *want[][3] = {
        {"intent", "reliability: intent", "confusion: intent"},
        {"lang", "reliability: lang", "confusion: lang"},
        {"angry", "reliability: angry", NULL},
        {"sev", "calibration: sev", "residuals: sev"},
        {"tags", "tags <span class=muted>per label", "precision and recall: tags"},
        {"pii", "pii <span class=muted>per label", "precision and recall: pii"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *g = group(html, want[i][0]);
        cr_assert_not_null(g, "a figure group for %s", want[i][0]);
        for (int k = 1; k < 3 && want[i][k]; k++)
            cr_assert(strstr(g, want[i][k]), "%s's group has %s", want[i][0], want[i][k]);
        free(g);
    }
    for (const char *q = "intent"; q; q = !strcmp(q, "intent") ? "lang"
                                          : !strcmp(q, "lang") ? "angry"
                                                               : NULL) {
        char title[64];
        snprintf(title, sizeof title, "probability change: %s", q);
        cr_assert(strstr(html, title), "A/B histogram %s", title);
    }
    cr_assert(strstr(html, "Flipped decisions: 187; the first 20, in the results' order"));
    cr_assert_null(strstr(html, "<script"), "no script");
    free(html);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- headless Chromium --------------------------------------------------------- */

/* Lays the page out at `width` px and reports, in a <pre id=probe>, the
 * page's width against the window's, the cards whose SVG or table sticks
 * out of them, and the figure groups (a .qfig, else a question's
 * reliability/confusion cards) whose cards do not share one row. */
static const char probe[] =
    "<pre id=probe></pre><script>(function(){"
    "var w=window.innerWidth,o={width:w,scroll:document.documentElement.scrollWidth,"
    "split:[],overflow:[]},rows={};"
    "document.querySelectorAll('.card').forEach(function(c){"
    "var h=c.querySelector('h3'),t=h?h.textContent.split(' (')[0]:'',r=c.getBoundingClientRect();"
    "c.querySelectorAll('svg,table').forEach(function(e){var b=e.getBoundingClientRect();"
    "if(b.right>r.right+0.5||b.left<r.left-0.5)o.overflow.push(t);});"
    "if(r.right>w+0.5)o.overflow.push('page: '+t);"
    "var g=c.closest('.qfig'),m=t.match(/^(?:reliability|confusion): (\\S+)/),"
    "k=g?'group '+g.getAttribute('data-q')+' @'+Array.prototype.indexOf.call("
    "document.querySelectorAll('.qfig'),g):m?'question '+m[1]:null;"
    "if(!k)return;(rows[k]=rows[k]||[]).push(Math.round(r.top));});"
    "for(var k in rows)if(Math.max.apply(null,rows[k])-Math.min.apply(null,rows[k])>1)"
    "o.split.push(k);"
    "document.getElementById('probe').textContent=JSON.stringify(o);})();</script>";

static const char *chromium(void) {
    const char *c = getenv("VW_CHROMIUM");
    if (c && *c)
        return c;
    return access("/usr/bin/chromium", X_OK) ? NULL : "/usr/bin/chromium";
}

/* chromium --headless with a fresh profile; extra: --dump-dom or
 * --screenshot=PATH. Returns its stdout (malloc'd). */
static char *run_chromium(const char *dir, const char *page, int width, int height,
                          const char *extra) {
    char cmd[4096], out[600];
    snprintf(out, sizeof out, "%s/chromium.out", dir);
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s/profile' && timeout 120 '%s' --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--no-first-run --user-data-dir='%s/profile' --hide-scrollbars --window-size=%d,%d "
             "%s 'file://%s' >'%s' 2>/dev/null",
             dir, chromium(), dir, width, height, extra, page, out);
    int rc = system(cmd);
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s", cmd);
    size_t n = 0;
    char *s = vw_test_read_file(out, &n);
    cr_assert_not_null(s);
    return s;
}

/* The probe's JSON for the page at width. */
static char *layout(const char *dir, const char *html, int width) {
    char page[600];
    snprintf(page, sizeof page, "%s/probe.html", dir);
    const char *end = strstr(html, "</body>");
    cr_assert_not_null(end);
    FILE *f = fopen(page, "w");
    cr_assert_not_null(f);
    fprintf(f, "%.*s%s%s", (int)(end - html), html, probe, end);
    fclose(f);
    char *dom = run_chromium(dir, page, width, 2000, "--dump-dom");
    const char *a = strstr(dom, "<pre id=\"probe\">");
    cr_assert_not_null(a, "the probe ran: %.300s", dom);
    a += strlen("<pre id=\"probe\">");
    char *json = strndup(a, (size_t)(strstr(a, "</pre>") - a));
    free(dom);
    return json;
}

Test(eval_html, figures_stay_together_and_nothing_overflows_in_chromium) {
    if (!chromium())
        cr_skip_test("chromium is not installed (scripts/deps installs it; VW_CHROMIUM names "
                     "another)");
    char dir[] = "/tmp/vw-eval-html-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *html = report(dir);
    const int widths[] = {1280, 900};
    for (size_t i = 0; i < 2; i++) {
        char *json = layout(dir, html, widths[i]);
        cr_log_info("layout at %d px: %s", widths[i], json);
        int w = 0, sw = 0;
        cr_assert_eq(sscanf(json, "{\"width\":%d,\"scroll\":%d", &w, &sw), 2, "%s", json);
        cr_expect_leq(sw, w, "the page is wider than the window at %d px: %s", widths[i], json);
        cr_expect(strstr(json, "\"overflow\":[]"), "a figure sticks out of its card: %s", json);
        if (widths[i] == 1280)
            cr_expect(strstr(json, "\"split\":[]"),
                      "a question's figures are split over rows at 1280 px: %s", json);
        free(json);
    }
    /* A screenshot to look at (the report as a reader sees it). */
    char page[600], png[640], shot[700];
    snprintf(page, sizeof page, "%s/r.html", dir);
    snprintf(png, sizeof png, "%s/report.png", dir);
    snprintf(shot, sizeof shot, "--screenshot='%s'", png);
    free(run_chromium(dir, page, 1280, 4800, shot));
    cr_assert_eq(access(png, R_OK), 0, "the screenshot %s", png);
    cr_log_info("screenshot: %s", png);
    free(html);
}
