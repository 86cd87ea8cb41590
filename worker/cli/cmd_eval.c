/* cmd_eval.c — `vela-worker eval`: replay results evaluated against labels
 * and/or compared with a baseline replay (worker/eval/, docs/eval.md).
 * Owns the options and where each output goes: the report on stdout (tables,
 * or JSON with --json), the HTML page in its file, problems (file:line) and
 * the timing on stderr. Exit 0 when the report was written (bad lines and
 * labels are counted, not fatal), 1 when a file cannot be read or written,
 * 2 on bad usage. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "commands.h"
#include "eval/eval.h"
#include "eval/list.h"
#include "eval/report_html.h"
#include "eval/report_json.h"
#include "eval/report_text.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vela-worker eval --results A.jsonl [--baseline B.jsonl] [--labels L.jsonl]\n"
            "         [--json] [--html report.html] [--top N]\n"
            "       vela-worker eval --results A.jsonl --list [--width W]\n"
            "  Evaluates a `vela-worker replay --out` file: per question, metrics against the\n"
            "  labels ({\"request_id\", \"labels\": {qid: expected}} lines) and agreement with a\n"
            "  baseline replay of the same records, joined by request_id (docs/eval.md).\n"
            "  --json       one JSON object on stdout instead of the tables\n"
            "  --html FILE  also a self-contained HTML report (tables; per question its\n"
            "               figures: reliability, confusion, score calibration and\n"
            "               residuals, per-label precision/recall; A/B changes and flips)\n"
            "  --top N      list the N records that changed most against the baseline\n"
            "  --list       one line per record (id, status, decisions) instead of a report\n"
            "  Bad lines and labels are reported on stderr as file:line and counted.\n");
}

typedef struct args {
    vw_eval_opts o;
    const char *html;
    bool json, list;
    size_t width;
} args;

static int parse_count(const char *s, size_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !*s || *end || v < 0 || v > 1000000)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, args *a) {
    static const struct option opts[] = {
        {"results", required_argument, 0, 'r'}, {"baseline", required_argument, 0, 'b'},
        {"labels", required_argument, 0, 'l'},  {"json", no_argument, 0, 'j'},
        {"html", required_argument, 0, 'H'},    {"top", required_argument, 0, 't'},
        {"list", no_argument, 0, 'L'},          {"width", required_argument, 0, 'w'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int c;
    memset(a, 0, sizeof *a);
    a->o.log = stderr;
    a->o.log_max = 20;
    a->width = 100;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            a->o.results = optarg;
            break;
        case 'b':
            a->o.baseline = optarg;
            break;
        case 'l':
            a->o.labels = optarg;
            break;
        case 'j':
            a->json = true;
            break;
        case 'H':
            a->html = optarg;
            break;
        case 't':
            if (parse_count(optarg, &a->o.top)) {
                vw_cli_usage_error("eval", "--top wants 0..1000000", usage);
                return -2;
            }
            break;
        case 'L':
            a->list = true;
            break;
        case 'w':
            if (parse_count(optarg, &a->width)) {
                vw_cli_usage_error("eval", "--width wants 0..1000000", usage);
                return -2;
            }
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            vw_cli_getopt_error("eval", c, argv, usage);
            return -2;
        }
    }
    if (optind != argc) {
        vw_cli_bad_arg("eval", argv[optind], usage);
        return -2;
    }
    if (!a->o.results) {
        vw_cli_usage_error("eval", "--results FILE is required", usage);
        return -2;
    }
    if (a->o.top && !a->o.baseline) {
        vw_cli_usage_error("eval", "--top needs --baseline", usage);
        return -2;
    }
    return 0;
}

/* An error of the run: its message may quote a file's content, so it is
 * escaped for the terminal like every other text output. */
static void say_error(const char *msg) {
    vw_sbuf sb = {0};
    vw_sbuf_puts(&sb, "vela-worker eval: ");
    vw_sbuf_put_visible(&sb, msg, strlen(msg));
    vw_sbuf_puts(&sb, "\n");
    if (!sb.oom)
        fwrite(sb.p, 1, sb.len, stderr);
    vw_sbuf_free(&sb);
}

static int write_file(const char *path, const vw_sbuf *sb) {
    FILE *f = fopen(path, "w");
    if (!f || fwrite(sb->p, 1, sb->len, f) != sb->len) {
        fprintf(stderr, "vela-worker eval: %s: %s\n", path, strerror(errno));
        if (f)
            fclose(f);
        return 1;
    }
    if (fclose(f)) {
        fprintf(stderr, "vela-worker eval: %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static int report(const args *a) {
    vw_eval_report *r = NULL;
    vw_err err = {0};
    vw_sbuf sb = {0};
    int rc = 1;
    if (vw_eval_run(&a->o, &r, &err)) {
        say_error(err.msg);
        return 1;
    }
    fprintf(stderr, "eval: %llu records in %.2f s\n", (unsigned long long)r->results.lines,
            r->seconds);
    if (a->html) {
        if (vw_eval_write_html(r, &sb) || write_file(a->html, &sb))
            goto done;
        vw_sbuf_reset(&sb);
    }
    vw_status st = a->json ? vw_eval_write_json(r, &sb) : vw_eval_write_text(r, &sb);
    if (st || fwrite(sb.p, 1, sb.len, stdout) != sb.len || fflush(stdout))
        goto done;
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "vela-worker eval: the report could not be written\n");
    vw_sbuf_free(&sb);
    vw_eval_report_free(r);
    return rc;
}

int vw_cmd_eval(int argc, char **argv) {
    args a;
    int p = parse_args(argc, argv, &a);
    if (p)
        return p < 0 ? 2 : 0; /* a usage error was said, or --help printed */
    if (a.list) {
        vw_err err = {0};
        if (vw_eval_list(a.o.results, a.width, stdout, stderr, &err)) {
            say_error(err.msg);
            return 1;
        }
        return 0;
    }
    return report(&a);
}
