/* test_cmd_score.c — `vela-worker score` reads its input the worker's way
 * (issue 27 item 8): with --jsonl every input line gets exactly one output
 * line, a blank line the worker's answer to an empty value (docs/contract.md
 * Decision 10); a request over limits.max_request_bytes (1 MiB by default,
 * --max-request-bytes N) gets the worker's 413 — the bytes of
 * worker/record_in.c vw_record_in_check for a record that size — at the
 * boundary exactly, without the input being held (peak RSS below its size).
 * The envelopes themselves are test_engine's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_in.h"
#include "service/config.h"
#include "vw_test.h"

#define REQ "{\"state\":\"hi\",\"questions\":{\"q\":{\"type\":\"noul\",\"instructions\":\"x?\"}}}"

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

/* Runs `<feed> | vela-worker score --bundle tiny ARGS`; returns stdout's lines
 * (*n of them) and sets *rc to the exit code. */
static char **score(const char *feed, const char *args, size_t *n, int *rc) {
    char *bundle = vw_test_path("fixtures/tiny-vela"), cmd[4096];
    snprintf(cmd, sizeof cmd, "%s | '%s' score --bundle '%s' %s 2>/dev/null", feed, worker_bin(),
             bundle, args);
    free(bundle);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    char **lines = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t got;
    *n = 0;
    while ((got = getline(&line, &cap, p)) > 0) {
        cr_assert_eq(line[got - 1], '\n', "every output line ends with a newline");
        line[got - 1] = 0;
        lines = realloc(lines, (*n + 1) * sizeof *lines);
        lines[(*n)++] = strdup(line);
    }
    free(line);
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return lines;
}

static void free_lines(char **lines, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* What the worker answers for a record value of value_len bytes (value may be
 * NULL past max): the rejection's value, or NULL when it passes. */
static char *worker_answer(const char *value, size_t value_len, int64_t max) {
    vw_record rec = {.value = value, .value_len = value_len};
    vw_result res = {0};
    bool rejected = false;
    cr_assert_eq(vw_record_in_check(&rec, max, &rejected, &res, NULL), VW_OK);
    char *out = rejected ? strndup(res.value, res.value_len) : NULL;
    vw_result_clear(&res);
    return out;
}

/* A file holding s (printf-style escapes are avoided: written as is). */
static char *feed_of(const char *s, char path[64]) {
    strcpy(path, "/tmp/vw_score_in_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
    close(fd);
    char *feed = malloc(96);
    snprintf(feed, 96, "cat '%s'", path);
    return feed;
}

Test(cmd_score, jsonl_one_output_line_per_input_line) {
    /* 6 lines: a request, a blank line, spaces, a request ended by \r\n, a
     * blank \r\n line, a last request without a newline. */
    const char *input = REQ "\n\n   \n" REQ "\r\n\r\n" REQ;
    char path[64], *feed = feed_of(input, path);
    size_t n = 0;
    int rc = -1;
    char **lines = score(feed, "--jsonl --batch 2", &n, &rc);
    cr_assert_eq(rc, 0);
    cr_assert_eq(n, 6, "one output line per input line, got %zu", n);
    char *blank = worker_answer("", 0, VW_MAX_REQUEST_BYTES_DEFAULT);
    char *spaces = worker_answer("   ", 3, VW_MAX_REQUEST_BYTES_DEFAULT);
    cr_assert(blank && spaces, "the worker rejects an empty and a blank value");
    cr_assert_str_eq(lines[1], blank, "a blank line is the empty body");
    cr_assert_str_eq(lines[2], spaces);
    cr_assert_str_eq(lines[4], blank, "a blank \\r\\n line too");
    const size_t answered[] = {0, 3, 5}; /* line 4: the \r is not part of the request */
    for (size_t k = 0; k < 3; k++) {
        const char *l = lines[answered[k]];
        cr_assert(strstr(l, "{\"answers\":{\"q\":") == l, "line %zu: %s", answered[k] + 1, l);
    }
    free(blank);
    free(spaces);
    free_lines(lines, n);
    unlink(path);
    free(feed);
}

Test(cmd_score, the_workers_413_at_the_limit) {
    size_t len = strlen(REQ);
    char args[96], path[64];
    char *feed = feed_of(REQ "\r\n", path);
    size_t n = 0;
    int rc = -1;
    /* Exactly at the limit (the \r\n not counted): answered. */
    snprintf(args, sizeof args, "--jsonl --max-request-bytes %zu", len);
    char **lines = score(feed, args, &n, &rc);
    cr_assert(rc == 0 && n == 1);
    cr_assert(strstr(lines[0], "{\"answers\"") == lines[0], "%s", lines[0]);
    free_lines(lines, n);
    /* One byte over: the worker's 413, with or without --jsonl. */
    char *want = worker_answer(NULL, len, (int64_t)len - 1);
    cr_assert(want && strstr(want, "\"status\":413"), "%s", want);
    for (int jsonl = 0; jsonl < 2; jsonl++) {
        snprintf(args, sizeof args, "%s--max-request-bytes %zu", jsonl ? "--jsonl " : "", len - 1);
        if (!jsonl) { /* the whole stream is the request: no line end */
            unlink(path);
            free(feed);
            feed = feed_of(REQ, path);
        }
        lines = score(feed, args, &n, &rc);
        cr_assert(rc == 0 && n == 1);
        cr_assert_str_eq(lines[0], want);
        free_lines(lines, n);
    }
    free(want);
    unlink(path);
    free(feed);
}

Test(cmd_score, a_large_request_is_refused_unread) {
    /* 64 MiB of input, not JSON: the size answers first (413, not 400), and
     * the command never holds it: the children's peak RSS stays within 32 MiB
     * of a run on a small request (the bundle and the runtime: ~21 MiB
     * without CUDA, ~230 MiB when the CUDA libraries are linked in). */
    size_t n = 0;
    int rc = -1;
    char path[64], *small = feed_of(REQ, path);
    char **lines = score(small, "", &n, &rc);
    cr_assert(rc == 0 && n == 1);
    free_lines(lines, n);
    unlink(path);
    free(small);
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    long base_kb = ru.ru_maxrss;
    const size_t size = (size_t)64 << 20;
    char feed[128];
    snprintf(feed, sizeof feed, "head -c %zu /dev/zero | tr '\\0' x", size);
    lines = score(feed, "", &n, &rc);
    cr_assert(rc == 0 && n == 1);
    char *want = worker_answer(NULL, size, VW_MAX_REQUEST_BYTES_DEFAULT);
    cr_assert_str_eq(lines[0], want);
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    cr_log_info("peak RSS of score: %ld KiB for %zu MiB of input (%ld KiB for a small request)",
                ru.ru_maxrss, size >> 20, base_kb);
    cr_assert_lt(ru.ru_maxrss - base_kb, 32 << 10,
                 "peak RSS %ld KiB (small request: %ld KiB): "
                 "the input was held",
                 ru.ru_maxrss, base_kb);
    free(want);
    free_lines(lines, n);
}

/* The worker's token bound (docs/contract.md Decision 9) applies to score too:
 * its default, an explicit limit, and 0 lifting it. */
Test(cmd_score, the_workers_token_bound) {
    char path[64];
    char *feed = feed_of(REQ, path);
    size_t n;
    int rc;
    char **lines = score(feed, "--max-request-tokens 5", &n, &rc);
    cr_assert_eq(rc, 0);
    cr_assert_eq(n, 1);
    cr_assert(strstr(lines[0], "{\"status\":413,\"detail\":[{\"loc\":[\"body\"],\"msg\":\"the "
                               "request would run ") == lines[0],
              "%s", lines[0]);
    cr_assert(strstr(lines[0], "more than the limit of 5\",\"type\":\"too_long\"}]}"));
    free_lines(lines, n);
    lines = score(feed, "--max-request-tokens 0", &n, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(n == 1 && strstr(lines[0], "\"answers\":"), "0 lifts the bound");
    free_lines(lines, n);
    lines = score(feed, "", &n, &rc);
    cr_assert(n == 1 && strstr(lines[0], "\"answers\":"), "a small request is under the default");
    free_lines(lines, n);
    unlink(path);
    free(feed);
}
