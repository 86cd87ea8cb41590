/* cmd_score.c — `vela-worker score --bundle DIR [--device auto|cpu|cuda] [--jsonl]
 * [--batch N]`: reads one request (or JSON Lines of requests) on stdin and
 * writes, one line per request and in input order, the System One envelope or
 * the rejection record {"status":N,"detail":[...]}. Exit 0 even when a request
 * is rejected (the rejection is the answer); 1 when the bundle cannot be used
 * or scoring fails; 2 on bad arguments. */
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "service/device.h"
#include "engine.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker score --bundle DIR [--device auto|cpu|cuda] [--precision "
               "auto|fp32|bf16|bf16x2]\n"
               "                          [--jsonl] [--batch N]\n"
               "  scores one request JSON (or, with --jsonl, one request per line) from stdin;\n"
               "  prints one envelope or rejection record per request, in input order.\n"
               "  --batch N: requests per executor call with --jsonl (default 16)\n");
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

/* Plans one request into *it (a plan, or the rejection JSON). */
static vw_status plan_one(vw_engine *e, const char *body, size_t len, pending *it, vw_err *err) {
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
               size_t batch) {
    vw_err err = {0};
    vw_engine_opts opts = {.noul_calibration = -1};
    vw_engine *e = NULL;
    vw_device_choice dc;
    size_t len = 0, n = 0;
    char *body = NULL;
    pending *items = calloc(batch, sizeof *items);
    vw_status st = items ? VW_OK : VW_FAIL(&err, VW_ENOMEM, "out_of_memory", "batch");
    if (st == VW_OK)
        st = vw_device_select(device, precision, 0, &dc, &opts, &err);
    if (st == VW_OK)
        st = vw_engine_open(bundle, &opts, &e, &err);
    if (st == VW_OK) {
        fprintf(stderr, "vela-worker score: model %s on %s\n", vw_engine_model(e), dc.chosen);
        body = vw_read_stream(stdin, &len);
        if (!body)
            st = VW_FAIL(&err, VW_EIO, "read_failed", "stdin");
    }
    if (st == VW_OK && !jsonl) {
        st = plan_one(e, body, len, &items[0], &err);
        if (st == VW_OK)
            st = flush_chunk(e, items, 1, &err);
    }
    for (char *line = body, *end; st == VW_OK && jsonl && line < body + len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(body + len - line));
        if (!end)
            end = body + len;
        size_t ll = (size_t)(end - line);
        if (ll && line[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            continue;
        st = plan_one(e, line, ll, &items[n++], &err);
        if (st == VW_OK && n == batch) {
            st = flush_chunk(e, items, n, &err);
            n = 0;
        }
    }
    if (st == VW_OK && jsonl && n)
        st = flush_chunk(e, items, n, &err);
    if (st != VW_OK) {
        fprintf(stderr, "vela-worker score: %s (%s, %s)\n", err.msg, err.type, err.where);
        for (size_t i = 0; items && i < batch; i++) {
            vw_plan_free(items[i].plan);
            vw_sbuf_free(&items[i].out);
        }
    }
    free(items);
    free(body);
    vw_engine_free(e);
    return st == VW_OK ? 0 : 1;
}

int vw_cmd_score(int argc, char **argv) {
    const char *bundle = NULL, *device = "auto", *precision = "auto";
    int jsonl = 0;
    long batch = 16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--bundle") && i + 1 < argc) {
            bundle = argv[++i];
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            device = argv[++i];
        } else if (!strcmp(argv[i], "--precision") && i + 1 < argc) {
            precision = argv[++i];
        } else if (!strcmp(argv[i], "--jsonl")) {
            jsonl = 1;
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            char *end = NULL;
            batch = strtol(argv[++i], &end, 10);
            if (!end || *end || batch < 1 || batch > 4096) {
                fprintf(stderr, "vela-worker score: --batch wants 1..4096\n");
                return 2;
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!bundle) {
        usage(stderr);
        return 2;
    }
    return run(bundle, device, precision, jsonl, (size_t)batch);
}
