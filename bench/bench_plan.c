/* bench_plan.c — planning throughput on one core: admission + tokenization +
 * words + render of a request, with the Qwen3 tokenizer.
 *   bench_plan [REQUEST.json [SECONDS]]
 * Default: the golden request of docs/spec/request.md §8.1
 * (fixtures/plan/cases/golden_8_1.req, 1,043 rendered tokens) for 3 s.
 * Prints plans/s and microseconds per plan (wall clock, CLOCK_MONOTONIC). The
 * tokenizer's BPE cache is warm after the first plan, as in a running worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/admit_cfg.h"
#include "render/plan.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    const char *req_path = argc > 1 ? argv[1] : VW_SOURCE_DIR "/fixtures/plan/cases/golden_8_1.req";
    double seconds = argc > 2 ? atof(argv[2]) : 3.0;
    vw_err err = {0};
    vw_tokenizer *tok = NULL;
    vw_admit_cfg *cfg = NULL;
    vw_renderer *r = NULL;
    size_t len = 0;
    char *body = vw_read_file(req_path, &len);
    int rc = 1;
    if (!body) {
        fprintf(stderr, "bench_plan: cannot read %s\n", req_path);
        return 1;
    }
    if (vw_tok_load(VW_SOURCE_DIR "/fixtures/tokenizers/qwen3/tokenizer.json", &tok, &err) ||
        vw_admit_cfg_load(VW_SOURCE_DIR "/fixtures/plan/bundle", &cfg, &err) ||
        vw_renderer_new(cfg, vw_encoder_tok(tok), &r, &err)) {
        fprintf(stderr, "bench_plan: %s\n", err.msg);
        goto done;
    }
    long iters = 0;
    int64_t tokens = 0;
    double t0 = 0;
    for (;;) {
        vw_plan *p = NULL;
        vw_errlist d = {0};
        int status;
        if (vw_plan_request(r, body, len, &p, &status, &d, &err) != VW_OK || status != 200) {
            fprintf(stderr, "bench_plan: status %d %s\n", status, err.msg);
            vw_errlist_free(&d);
            goto done;
        }
        tokens = p->input_tokens;
        vw_plan_free(p);
        if (iters == 0 && t0 == 0) { /* the first plan warms the BPE cache */
            t0 = now();
            continue;
        }
        iters++;
        if ((iters & 63) == 0 && now() - t0 >= seconds)
            break;
    }
    double dt = now() - t0;
    printf("bench_plan: %s\n  %lld input tokens per plan, %ld plans in %.2f s: %.0f plans/s, "
           "%.1f us/plan\n",
           req_path, (long long)tokens, iters, dt, (double)iters / dt, 1e6 * dt / (double)iters);
    rc = 0;
done:
    vw_renderer_free(r);
    vw_admit_cfg_free(cfg);
    vw_tok_free(tok);
    free(body);
    return rc;
}
