/* cmd_tokenize.c — `vela-worker tokenize`: encodes JSON Lines from stdin with a
 * tokenizer.json (see core/tokenizer/tokenizer.h) and writes one JSON object per line:
 *   {"ids":[...]} or {"ids":[...],"offsets":[[s,e],...]} with --offsets,
 *   {"error":{"type":...,"msg":...,"line":N}} for a line that cannot be encoded.
 * A bad line never stops the run; the exit status is non-zero only when the
 * tokenizer cannot be loaded (1) or the arguments are wrong (2).
 */
#include "cli_args.h"
#include "commands.h"
#include "tokenizer/tokenizer.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker tokenize --tokenizer FILE [--offsets] [--no-added-tokens]\n"
               "  reads JSON Lines (each line a JSON string) on stdin and writes one JSON\n"
               "  object per line: {\"ids\":[...],\"offsets\":[[start,end],...]}\n"
               "  --tokenizer FILE    a Hugging Face tokenizer.json\n"
               "  --offsets           also write offsets ([start, end) code points)\n"
               "  --no-added-tokens   treat added-token strings (<|endoftext|>) as text\n");
}

static void put_int(FILE *out, int32_t v) {
    char buf[16];
    int n = 0;
    uint32_t u = v < 0 ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    do {
        buf[sizeof buf - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        buf[sizeof buf - 1 - n++] = '-';
    fwrite(buf + sizeof buf - n, 1, (size_t)n, out);
}

static void put_encoding(FILE *out, const vw_encoding *e, int offsets) {
    fputs("{\"ids\":[", out);
    for (size_t i = 0; i < e->n; i++) {
        if (i)
            fputc(',', out);
        put_int(out, e->ids[i]);
    }
    fputc(']', out);
    if (offsets) {
        fputs(",\"offsets\":[", out);
        for (size_t i = 0; i < e->n; i++) {
            fputs(i ? ",[" : "[", out);
            put_int(out, e->offsets[2 * i]);
            fputc(',', out);
            put_int(out, e->offsets[2 * i + 1]);
            fputc(']', out);
        }
        fputc(']', out);
    }
    fputs("}\n", out);
}

static void put_error(FILE *out, const char *type, const char *msg, size_t line) {
    json_t *o =
        json_pack("{s:{s:s,s:s,s:I}}", "error", "type", type, "msg", msg, "line", (json_int_t)line);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (s)
        fprintf(out, "%s\n", s);
    else /* out of memory: still one line per input line */
        fprintf(out, "{\"error\":{\"type\":\"out_of_memory\",\"line\":%zu}}\n", line);
    free(s);
    json_decref(o);
}

/* Encodes one input line (without its newline). */
static void do_line(vw_tokenizer *tok, const char *line, size_t len, size_t lineno, unsigned flags,
                    int offsets, vw_encoding *enc, FILE *out) {
    json_error_t je;
    json_t *v = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!v) {
        char msg[256];
        snprintf(msg, sizeof msg, "line %zu is not JSON: %s (byte %d)", lineno, je.text,
                 je.position);
        bool utf8 = !strncmp(je.text, "unable to decode byte", 21);
        put_error(out, utf8 ? "invalid_utf8" : "bad_line", msg, lineno);
        return;
    }
    if (!json_is_string(v)) {
        put_error(out, "bad_line", "each line must be a JSON string", lineno);
        json_decref(v);
        return;
    }
    vw_err err;
    vw_err_clear(&err);
    if (vw_tok_encode(tok, json_string_value(v), json_string_length(v), flags, enc, &err))
        put_error(out, err.type, err.msg, lineno);
    else
        put_encoding(out, enc, offsets);
    json_decref(v);
}

int vw_cmd_tokenize(int argc, char **argv) {
    static const struct option opts[] = {{"tokenizer", required_argument, NULL, 't'},
                                         {"offsets", no_argument, NULL, 'o'},
                                         {"no-added-tokens", no_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *path = NULL;
    int offsets = 0, c;
    unsigned flags = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            path = optarg;
            break;
        case 'o':
            offsets = 1;
            break;
        case 'n':
            flags |= VW_TOK_NO_ADDED_TOKENS;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            return vw_cli_getopt_error("tokenize", c, argv, usage);
        }
    }
    if (optind != argc)
        return vw_cli_bad_arg("tokenize", argv[optind], usage);
    if (!path)
        return vw_cli_usage_error("tokenize", "--tokenizer FILE is required", usage);
    vw_tokenizer *tok = NULL;
    vw_err err;
    vw_err_clear(&err);
    if (vw_tok_load(path, &tok, &err)) {
        fprintf(stderr, "vela-worker tokenize: %s (%s)\n", err.msg, err.type);
        return 1;
    }
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    vw_encoding enc = {0};
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n')
            len--;
        do_line(tok, line, len, lineno, flags, offsets, &enc, stdout);
    }
    fflush(stdout);
    free(line);
    vw_encoding_free(&enc);
    vw_tok_free(tok);
    return 0;
}
