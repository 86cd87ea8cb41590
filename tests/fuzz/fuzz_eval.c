/* fuzz_eval.c — libFuzzer target: arbitrary bytes as the inputs of
 * `vela-worker eval`: a results replay, a baseline replay and a labels file
 * (JSONL; split at the first two NUL bytes, a missing part is left out), run
 * through the whole evaluation (index, join, metrics, A/B with the top
 * changes) and written as text, JSON and HTML. Each file is a memfd opened by
 * its /proc/self/fd path, as eval reads files (with pread for the joins).
 * Checks: the run is VW_OK or fails with a message; a report's counts add up
 * (lines = records + duplicates + bad lines per file); for one input in four
 * (the reports cost twice the run) each output is written and the JSON one
 * parses. No crash, no leak. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "eval/eval.h"
#include "eval/report_html.h"
#include "eval/report_json.h"
#include "eval/report_text.h"
#include "util/sbuf.h"

static int fds[3] = {-1, -1, -1};
static char paths[3][64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    for (int i = 0; i < 3; i++) {
        fds[i] = memfd_create("fuzz_eval", 0);
        if (fds[i] < 0)
            abort();
        snprintf(paths[i], sizeof paths[i], "/proc/self/fd/%d", fds[i]);
    }
    return 0;
}

static void put(int i, const uint8_t *p, size_t n) {
    if (ftruncate(fds[i], 0) || (n && pwrite(fds[i], p, n, 0) != (ssize_t)n))
        abort();
}

static void check_file(const vw_eval_file *f) {
    if (f->lines != f->records + f->duplicates + f->bad_lines)
        abort();
}

static void write_all(const vw_eval_report *r) {
    vw_sbuf sb = {0};
    if (vw_eval_write_text(r, &sb) != VW_OK)
        abort();
    vw_sbuf_free(&sb);
    sb = (vw_sbuf){0};
    if (vw_eval_write_json(r, &sb) != VW_OK)
        abort();
    size_t len = 0;
    char *js = vw_sbuf_take(&sb, &len);
    json_error_t je;
    json_t *root = json_loadb(js, len, 0, &je);
    if (!root)
        abort();
    json_decref(root);
    free(js);
    sb = (vw_sbuf){0};
    if (vw_eval_write_html(r, &sb) != VW_OK)
        abort();
    vw_sbuf_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *part[3] = {data, NULL, NULL};
    size_t len[3] = {size, 0, 0};
    for (int i = 1; i < 3 && part[i - 1]; i++) {
        const uint8_t *nul = memchr(part[i - 1], 0, len[i - 1]);
        if (!nul)
            break;
        part[i] = nul + 1;
        len[i] = len[i - 1] - (size_t)(part[i] - part[i - 1]);
        len[i - 1] = (size_t)(nul - part[i - 1]);
    }
    for (int i = 0; i < 3; i++)
        put(i, part[i] ? part[i] : (const uint8_t *)"", len[i]);
    vw_eval_opts o = {.results = paths[0],
                      .baseline = part[1] ? paths[1] : NULL,
                      .labels = part[2] ? paths[2] : NULL,
                      .top = 3,
                      .log = NULL,
                      .log_max = 5};
    vw_eval_report *r = NULL;
    vw_err err = {0};
    vw_status st = vw_eval_run(&o, &r, &err);
    if (st == VW_OK) {
        if (!r)
            abort();
        check_file(&r->results);
        if (r->has_baseline)
            check_file(&r->baseline);
        if (r->has_labels)
            check_file(&r->labels);
        if (size % 4 == 0) /* the reports cost twice the run: one input in four */
            write_all(r);
    } else if (r || !err.msg[0]) {
        abort();
    }
    vw_eval_report_free(r);
    return 0;
}
