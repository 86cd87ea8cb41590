/* fuzz_admission.c — libFuzzer target: arbitrary bytes (and, from the seeds,
 * mutated golden requests) as a request body, admitted and planned with the
 * Qwen3 tokenizer. The low bit of the last byte picks the bundle
 * (fixtures/plan/bundle or bundle-small, whose small budget and hybrid_rmax
 * reach cuts, max_length_exceeded, 413 and windows with short inputs).
 * Checks: every input yields a plan (status 200) or a rejection (400/413/422
 * with a non-empty detail); the output is valid JSON; the executor trees of a
 * plan validate against the vocabulary and their readout count. No crash, no
 * leak. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admit_cfg.h"
#include "render/plan.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"

static vw_tokenizer *tok;
static vw_admit_cfg *cfg[2];
static vw_renderer *rend[2];

static void *must(void *p, const char *what) {
    if (!p) {
        fprintf(stderr, "fuzz_admission: cannot load %s\n", what);
        abort();
    }
    return p;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    vw_err err = {0};
    vw_tok_load(VW_SOURCE_DIR "/fixtures/tokenizers/qwen3/tokenizer.json", &tok, &err);
    must(tok, err.msg);
    const char *dirs[2] = {VW_SOURCE_DIR "/fixtures/plan/bundle",
                           VW_SOURCE_DIR "/fixtures/plan/bundle-small"};
    for (int i = 0; i < 2; i++) {
        vw_admit_cfg_load(dirs[i], &cfg[i], &err);
        must(cfg[i], err.msg);
        cfg[i]->max_request_bytes = 60000;
        vw_renderer_new(cfg[i], vw_encoder_tok(tok), &rend[i], &err);
        must(rend[i], err.msg);
    }
    return 0;
}

static void check_plan(const vw_plan *p) {
    vw_plan_exec_out ex;
    if (vw_plan_exec(p, &ex, NULL) != VW_OK)
        abort();
    if (ex.n_trees && vw_trees_validate(ex.trees, ex.n_trees, vw_tok_vocab_size(tok), NULL))
        abort();
    if (ex.n_rows != vw_trees_readout_count(ex.trees, ex.n_trees))
        abort();
    if (p->input_tokens <= 0)
        abort();
    vw_plan_exec_free(&ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int which = size ? data[size - 1] & 1 : 0;
    vw_plan *p = NULL;
    vw_errlist d = {0};
    int status = 0;
    vw_err err = {0};
    vw_status st = vw_plan_request(rend[which], (const char *)data, size, &p, &status, &d, &err);
    if (st != VW_OK) {
        fprintf(stderr, "fuzz_admission: %s (%s)\n", err.msg, err.type);
        abort();
    }
    if ((status == 200) != (p != NULL) || (status != 200 && !d.n))
        abort();
    if (status != 200 && status != 400 && status != 413 && status != 422)
        abort();
    vw_sbuf sb = {0};
    if (p) {
        check_plan(p);
        vw_plan_write_json(&sb, p);
    } else {
        vw_plan_write_rejection(&sb, status, &d);
    }
    json_error_t je;
    json_t *back = json_loadb(sb.p, sb.len, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &je);
    if (!back) {
        fprintf(stderr, "fuzz_admission: output is not JSON: %s\n", je.text);
        abort();
    }
    json_decref(back);
    vw_sbuf_free(&sb);
    vw_plan_free(p);
    vw_errlist_free(&d);
    return 0;
}
