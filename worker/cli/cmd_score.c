/* cmd_score.c — `vela-worker score --bundle DIR [--device auto|cpu|cuda] [--jsonl]
 * [--batch N] [--max-request-bytes N]`: reads one request (or JSON Lines of
 * requests) on stdin and writes, one line per request and in input order, the
 * System One envelope or the rejection record {"status":N,"detail":[...]}.
 * With --jsonl every input line is a request, a blank one included (it is the
 * empty body: 400 "Expecting value"), so output line N answers input line N
 * (docs/contract.md Decision 10). A request larger than the worker's
 * limits.max_request_bytes (default 1 MiB) gets the worker's 413 without being
 * kept or parsed: input is read in bounded pieces. Exit 0 even when a request
 * is rejected (the rejection is the answer); 1 when the bundle cannot be used,
 * stdin cannot be read or scoring fails; 2 on bad arguments. */
#include "cli_args.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/config.h"
#include "service/device.h"
#include "record_in.h"
#include "engine.h"
#include "util/reserve.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vela-worker score --bundle DIR [--device auto|cpu|cuda] [--precision "
            "auto|fp32|bf16|bf16x2]\n"
            "                          [--jsonl] [--batch N] [--max-request-bytes N]\n"
            "                          [--max-request-tokens N]\n"
            "  scores one request JSON (or, with --jsonl, one request per line) from stdin;\n"
            "  prints one envelope or rejection record per request, in input order.\n"
            "  --batch N: requests per executor call with --jsonl (default 16)\n"
            "  --max-request-bytes N: larger requests get the worker's 413 (default %d,\n"
            "  the worker's limits.max_request_bytes)\n"
            "  --max-request-tokens N: requests that would run more model tokens get the\n"
            "  worker's 413 (default %d, the worker's limits.max_request_tokens; 0: none)\n",
            VW_MAX_REQUEST_BYTES_DEFAULT,
            VW_REQUEST_TOKENS_PER_BATCH * VW_BATCH_MAX_TOKENS_DEFAULT);
}

/* One input request and what it became. */
typedef struct pending {
    vw_plan *plan; /* NULL when rejected */
    vw_sbuf out;
} pending;

/* Scores the planned items of a chunk in one executor call, then prints all. */
static vw_status flush_chunk(vw_engine *e, pending *items, size_t n, vw_err *err) {
    vw_plan **plans = malloc((n ? n : 1) * sizeof *plans);
    vw_sbuf *outs = calloc(n ? n : 1, sizeof *outs);
    vw_status st = plans && outs ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "chunk");
    size_t k = 0;
    for (size_t i = 0; st == VW_OK && i < n; i++)
        if (items[i].plan)
            plans[k++] = items[i].plan;
    if (st == VW_OK && k)
        st = vw_engine_score(e, plans, k, outs, err);
    for (size_t i = 0, j = 0; st == VW_OK && i < n; i++) {
        const vw_sbuf *sb = items[i].plan ? &outs[j++] : &items[i].out;
        fwrite(sb->p, 1, sb->len, stdout);
        fputc('\n', stdout);
    }
    for (size_t i = 0; outs && i < k; i++)
        vw_sbuf_free(&outs[i]);
    for (size_t i = 0; i < n; i++) {
        vw_plan_free(items[i].plan);
        vw_sbuf_free(&items[i].out);
        memset(&items[i], 0, sizeof items[i]);
    }
    free(plans);
    free(outs);
    fflush(stdout);
    return st;
}

/* One request read from the input: its first bytes (at most max of them)
 * and its whole size. */
typedef struct request_in {
    char *buf;
    size_t cap, len; /* len = min(size, max) bytes kept in buf */
    size_t size;     /* bytes of the request, a line's "\n" or "\r\n" excepted */
} request_in;

/* Reads the next request of f: a line with --jsonl, else the whole stream.
 * Bytes past max are counted, not kept. 1: a request (possibly empty), 0: the
 * input is done, -1: a read error or out of memory. */
static int read_request(FILE *f, int jsonl, size_t max, request_in *r) {
    int c = EOF, last = EOF, got = 0;
    r->len = r->size = 0;
    while ((c = getc_unlocked(f)) != EOF) {
        got = 1;
        if (jsonl && c == '\n')
            break;
        last = c;
        if (r->size++ >= max)
            continue;                                             /* counted, not kept */
        if (vw_reserve((void **)&r->buf, &r->cap, r->len + 2, 1)) /* the byte and a NUL */
            return -1;
        r->buf[r->len++] = (char)c;
    }
    if (ferror(f))
        return -1;
    if (jsonl && c == '\n' && last == '\r') { /* "\r\n" ends the line */
        if (r->len == r->size)
            r->len--;
        r->size--;
    }
    return got || !jsonl;
}

/* Plans one request into *it (a plan, or the rejection JSON): over max
 * bytes, the 413 the worker answers (record_in.h) for a record that size. */
static vw_status plan_one(vw_engine *e, const request_in *in, size_t max, pending *it,
                          vw_err *err) {
    if (in->size > max) {
        vw_record rec = {.value_len = in->size};
        vw_result res = {0};
        bool rejected = false;
        vw_status st = vw_record_in_check(&rec, (int64_t)max, &rejected, &res, err);
        if (st == VW_OK)
            vw_sbuf_put(&it->out, res.value, res.value_len);
        vw_result_clear(&res);
        return st ? st : vw_sbuf_status(&it->out);
    }
    const char *body = in->buf ? in->buf : "";
    size_t len = in->len;
    int status = 0;
    vw_errlist detail = {0};
    vw_status st = vw_engine_plan(e, body, len, &it->plan, &status, &detail, err);
    if (st == VW_OK && !it->plan) {
        vw_plan_write_rejection(&it->out, status, &detail);
        st = vw_sbuf_status(&it->out);
    }
    vw_errlist_free(&detail);
    return st;
}

static int run(const char *bundle, const char *device, const char *precision, int jsonl,
               size_t batch, size_t max, int64_t max_tokens) {
    vw_err err = {0};
    vw_engine_opts opts = {.noul_calibration = -1, .max_request_tokens = max_tokens};
    vw_engine *e = NULL;
    vw_device_choice dc;
    request_in in = {0};
    size_t n = 0;
    int got = 0;
    pending *items = calloc(batch, sizeof *items);
    vw_status st = items ? VW_OK : VW_FAIL(&err, VW_ENOMEM, "out_of_memory", "batch");
    if (st == VW_OK)
        st = vw_device_select(device, precision, 0, &dc, &opts, &err);
    if (st == VW_OK)
        st = vw_engine_open(bundle, &opts, &e, &err);
    if (st == VW_OK)
        fprintf(stderr, "vela-worker score: model %s on %s\n", vw_engine_model(e), dc.chosen);
    /* One request at a time (a line with --jsonl): the plans keep copies of
     * what they use (request.h), so the buffer is reused. */
    while (st == VW_OK && (got = read_request(stdin, jsonl, max, &in)) > 0) {
        st = plan_one(e, &in, max, &items[n++], &err);
        if (st == VW_OK && (n == batch || !jsonl)) {
            st = flush_chunk(e, items, n, &err);
            n = 0;
        }
        if (!jsonl)
            break;
    }
    if (st == VW_OK && got < 0)
        st = VW_FAIL(&err, VW_EIO, "read_failed", "stdin");
    if (st == VW_OK && n)
        st = flush_chunk(e, items, n, &err);
    if (st != VW_OK) {
        fprintf(stderr, "vela-worker score: %s (%s, %s)\n", err.msg, err.type, err.where);
        for (size_t i = 0; items && i < batch; i++) {
            vw_plan_free(items[i].plan);
            vw_sbuf_free(&items[i].out);
        }
    }
    free(items);
    free(in.buf);
    vw_engine_free(e);
    return st == VW_OK ? 0 : 1;
}

/* v is a whole number in [lo, hi]. */
static bool number(const char *v, long lo, long hi, long *out) {
    char *end = NULL;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

int vw_cmd_score(int argc, char **argv) {
    const char *bundle = NULL, *device = "auto", *precision = "auto";
    int jsonl = 0;
    long batch = 16, max = VW_MAX_REQUEST_BYTES_DEFAULT;
    long max_tokens = VW_REQUEST_TOKENS_PER_BATCH * VW_BATCH_MAX_TOKENS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (vw_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--jsonl")) {
            jsonl = 1;
        } else if (strcmp(argv[i], "--bundle") && strcmp(argv[i], "--device") &&
                   strcmp(argv[i], "--precision") && strcmp(argv[i], "--batch") &&
                   strcmp(argv[i], "--max-request-bytes") &&
                   strcmp(argv[i], "--max-request-tokens")) {
            return vw_cli_bad_arg("score", argv[i], usage);
        } else if (!(v = vw_cli_value("score", argc, argv, &i, usage))) {
            return 2;
        } else if (!strcmp(argv[i - 1], "--bundle")) {
            bundle = v;
        } else if (!strcmp(argv[i - 1], "--device")) {
            device = v;
        } else if (!strcmp(argv[i - 1], "--precision")) {
            precision = v;
        } else if (!strcmp(argv[i - 1], "--batch")) {
            if (!number(v, 1, 4096, &batch))
                return vw_cli_usage_error("score", "--batch wants 1..4096", NULL);
        } else if (!strcmp(argv[i - 1], "--max-request-bytes")) {
            if (!number(v, 1, 1000000000, &max)) /* the config's range */
                return vw_cli_usage_error("score", "--max-request-bytes wants 1..1000000000", NULL);
        } else if (!number(v, 0, 1000000000, &max_tokens)) { /* --max-request-tokens */
            return vw_cli_usage_error("score", "--max-request-tokens wants 0..1000000000", NULL);
        }
    }
    if (!bundle)
        return vw_cli_usage_error("score", "--bundle DIR is required", usage);
    return run(bundle, device, precision, jsonl, (size_t)batch, (size_t)max, max_tokens);
}
