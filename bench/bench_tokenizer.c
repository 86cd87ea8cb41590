/* bench_tokenizer.c — single-threaded encode throughput of core/tokenizer/tokenizer.h.
 *
 *   bench_tokenizer TOKENIZER.json CORPUS.jsonl [--no-added-tokens]
 *
 * CORPUS.jsonl holds one JSON string per line (bench/tokenizer.sh builds one). The
 * strings are decoded up front; then the tokenizer is loaded (timed) and every string
 * is encoded once, in file order, one call per string (timed), like bench/tokenizer_ref.py
 * does with HF `tokenizers`. Prints one line of key=value figures.
 */
#include "tokenizer/tokenizer.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct corpus {
    char **s;
    size_t *len;
    size_t n, cap, bytes;
} corpus;

static int read_corpus(const char *path, corpus *c) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t lcap = 0;
    ssize_t r;
    int rc = 0;
    while ((r = getline(&line, &lcap, f)) > 0) {
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)r, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!json_is_string(j)) {
            fprintf(stderr, "%s line %zu: not a JSON string\n", path, c->n + 1);
            json_decref(j);
            rc = -1;
            break;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 1024;
            c->s = realloc(c->s, c->cap * sizeof *c->s);
            c->len = realloc(c->len, c->cap * sizeof *c->len);
            if (!c->s || !c->len) {
                json_decref(j);
                rc = -1;
                break;
            }
        }
        size_t n = json_string_length(j);
        c->s[c->n] = malloc(n + 1);
        memcpy(c->s[c->n], json_string_value(j), n + 1);
        c->len[c->n++] = n;
        c->bytes += n;
        json_decref(j);
    }
    free(line);
    fclose(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER.json CORPUS.jsonl [--no-added-tokens]\n", argv[0]);
        return 2;
    }
    unsigned flags = argc > 3 && !strcmp(argv[3], "--no-added-tokens") ? VW_TOK_NO_ADDED_TOKENS : 0;
    corpus c = {0};
    if (read_corpus(argv[2], &c))
        return 1;
    double t0 = now();
    vw_tokenizer *tok = NULL;
    vw_err err;
    if (vw_tok_load(argv[1], &tok, &err)) {
        fprintf(stderr, "load: %s\n", err.msg);
        return 1;
    }
    double t1 = now();
    vw_encoding e = {0};
    size_t tokens = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (vw_tok_encode(tok, c.s[i], c.len[i], flags, &e, &err)) {
            fprintf(stderr, "line %zu: %s\n", i + 1, err.msg);
            return 1;
        }
        tokens += e.n;
    }
    double t2 = now(), enc = t2 - t1;
    printf("impl=c strings=%zu bytes=%zu tokens=%zu load_s=%.3f encode_s=%.3f MB_per_s=%.2f "
           "tokens_per_s=%.0f\n",
           c.n, c.bytes, tokens, t1 - t0, enc, (double)c.bytes / 1e6 / enc, (double)tokens / enc);
    vw_encoding_free(&e);
    vw_tok_free(tok);
    for (size_t i = 0; i < c.n; i++)
        free(c.s[i]);
    free(c.s);
    free(c.len);
    return 0;
}
