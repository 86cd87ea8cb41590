/* bench_admission.c — what a large state costs by its form: an object of N
 * keys beside a text state of the same bytes (the reference) and an array of
 * the same pairs, for N = 8,000 .. 100,000 (up to ~2.7 MB, past the worker's
 * 1 MiB record limit on purpose). Admission (state + questions) and the whole
 * plan (admission + Qwen3 tokenization + render) are timed, fastest of three,
 * and printed as a ratio to the text state of the same size: linear admission
 * keeps the ratio flat as N grows (it grew with N when every key's range was
 * counted from the start of its part: 95,000 keys took 31.7 s).
 *   bench_admission [MAX_KEYS]
 * Wall clock (CLOCK_MONOTONIC), one core. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/admit_cfg.h"
#include "admission/request.h"
#include "render/plan.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"
#include "util/sbuf.h"

enum form { OBJECT, TEXT, ARRAY, N_FORMS };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define QUESTIONS ",\"questions\":{\"q\":{\"type\":\"noul\",\"instructions\":\"Is this fine?\"}}}"

/* The state of n keys in one form; TEXT has exactly OBJECT's bytes. */
static char *request(size_t n, enum form f) {
    vw_sbuf sb = {0};
    vw_sbuf_puts(&sb, f == ARRAY ? "{\"state\":[[\"request\",\"Is this fine?\"]"
                                 : "{\"state\":{\"request\":\"Is this fine?\"");
    for (size_t i = 0; i < n; i++)
        vw_sbuf_printf(
            &sb, f == ARRAY ? ",[\"key_%06zu\",\"value %zu\"]" : ",\"key_%06zu\":\"value %zu\"", i,
            i);
    vw_sbuf_puts(&sb, f == ARRAY ? "]" QUESTIONS : "}" QUESTIONS);
    char *s = vw_sbuf_take(&sb, NULL);
    if (s && f == TEXT) { /* "state":{...} -> "state":"the text ..." over the same bytes */
        char *a = s + strlen("{\"state\":"), *b = strstr(s, "},\"questions\"");
        for (char *p = a; p < b; p++)
            *p = "the text "[(p - a) % 9];
        *a = *b = '"';
    }
    return s;
}

/* Fastest of three runs of admission (plan = false) or the whole plan. */
static double cost(const vw_admit_cfg *cfg, const vw_renderer *r, const char *body, bool plan) {
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        vw_err err = {0};
        vw_errlist d = {0};
        int status = 0;
        vw_request *req = NULL;
        vw_plan *p = NULL;
        double t0 = now();
        vw_status st = plan ? vw_plan_request(r, body, strlen(body), &p, &status, &d, &err)
                            : vw_request_admit(cfg, body, strlen(body), &req, &status, &d, &err);
        double dt = now() - t0;
        vw_plan_free(p);
        vw_request_free(req);
        vw_errlist_free(&d);
        if (st != VW_OK || status != 200) {
            fprintf(stderr, "bench_admission: status %d %s\n", status, err.msg);
            exit(1);
        }
        best = dt < best ? dt : best;
    }
    return best;
}

int main(int argc, char **argv) {
    size_t max_keys = argc > 1 ? (size_t)atol(argv[1]) : 100000;
    vw_err err = {0};
    vw_tokenizer *tok = NULL;
    vw_admit_cfg *cfg = NULL;
    vw_renderer *r = NULL;
    if (vw_tok_load(VW_SOURCE_DIR "/fixtures/tokenizers/qwen3/tokenizer.json", &tok, &err) ||
        vw_admit_cfg_load(VW_SOURCE_DIR "/fixtures/plan/bundle", &cfg, &err) ||
        vw_renderer_new(cfg, vw_encoder_tok(tok), &r, &err)) {
        fprintf(stderr, "bench_admission: %s\n", err.msg);
        return 1;
    }
    printf(
        "keys     bytes    | admission s: object  text    array  | object/text | plan s: object  "
        "text    array  | object/text\n");
    for (size_t n = 8000; n <= max_keys; n = n * 2 > max_keys && n < max_keys ? max_keys : n * 2) {
        double adm[N_FORMS], pl[N_FORMS];
        size_t bytes = 0;
        for (int f = 0; f < N_FORMS; f++) {
            char *body = request(n, (enum form)f);
            if (!body)
                return 1;
            bytes = f == OBJECT ? strlen(body) : bytes;
            adm[f] = cost(cfg, r, body, false);
            pl[f] = cost(cfg, r, body, true);
            free(body);
        }
        printf("%-8zu %-8zu |              %.4f  %.4f  %.4f |    %5.2fx   |         %.4f  %.4f  "
               "%.4f |    %5.2fx\n",
               n, bytes, adm[OBJECT], adm[TEXT], adm[ARRAY], adm[OBJECT] / adm[TEXT], pl[OBJECT],
               pl[TEXT], pl[ARRAY], pl[OBJECT] / pl[TEXT]);
        if (n == max_keys)
            break;
    }
    vw_renderer_free(r);
    vw_admit_cfg_free(cfg);
    vw_tok_free(tok);
    return 0;
}
