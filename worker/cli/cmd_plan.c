/* cmd_plan.c — `vela-worker plan --bundle DIR [--tokenizer FILE]`: reads one
 * request JSON on stdin and prints its token plan as JSON (trees, readout
 * indices, answer plan, usage) or the rejection {"status":..,"detail":[..]}.
 * Exit 0 when a decision was printed (200 or a rejection), 1 on a failure
 * (bundle, tokenizer, memory), 2 on bad arguments. */
#include "cli_args.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admit_cfg.h"
#include "util/file.h"
#include "admission/canonical_json.h"
#include "render/plan.h"
#include "render/render.h"
#include "tokenizer/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker plan --bundle DIR [--tokenizer FILE] < request.json\n"
               "  prints the token plan (or the rejection) of one request as JSON;\n"
               "  the tokenizer defaults to DIR/tokenizer.json\n");
}

static int run(const char *bundle, const char *tok_path) {
    int rc = 1;
    vw_err err = {0};
    vw_admit_cfg *cfg = NULL;
    vw_tokenizer *tok = NULL;
    vw_renderer *rend = NULL;
    vw_plan *plan = NULL;
    vw_errlist detail = {0};
    vw_sbuf out = {0};
    size_t len = 0;
    char *body = NULL, *path = NULL;
    if (vw_admit_cfg_load(bundle, &cfg, &err) != VW_OK)
        goto done;
    if (!tok_path) {
        size_t n = strlen(bundle) + 32;
        if (!(path = malloc(n)))
            goto done;
        snprintf(path, n, "%s/tokenizer.json", bundle);
        tok_path = path;
    }
    if (vw_tok_load(tok_path, &tok, &err) != VW_OK ||
        vw_renderer_new(cfg, vw_encoder_tok(tok), &rend, &err) != VW_OK)
        goto done;
    if (!(body = vw_read_stream(stdin, &len))) {
        VW_FAIL(&err, VW_EIO, "read_failed", "stdin");
        goto done;
    }
    int status = 0;
    if (vw_plan_request(rend, body, len, &plan, &status, &detail, &err) != VW_OK)
        goto done;
    if (plan)
        vw_plan_write_json(&out, plan);
    else
        vw_plan_write_rejection(&out, status, &detail);
    if (vw_sbuf_status(&out) != VW_OK) {
        VW_FAIL(&err, VW_ENOMEM, "oom", "plan output");
        goto done;
    }
    fwrite(out.p, 1, out.len, stdout);
    fputc('\n', stdout);
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "vela-worker plan: %s (%s, %s)\n", err.msg, err.type, err.where);
    vw_sbuf_free(&out);
    vw_errlist_free(&detail);
    vw_plan_free(plan);
    vw_renderer_free(rend);
    vw_tok_free(tok);
    vw_admit_cfg_free(cfg);
    free(body);
    free(path);
    return rc;
}

int vw_cmd_plan(int argc, char **argv) {
    const char *bundle = NULL, *tok = NULL;
    for (int i = 1; i < argc; i++) {
        if (vw_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--bundle")) {
            if (!(bundle = vw_cli_value("plan", argc, argv, &i, usage)))
                return 2;
        } else if (!strcmp(argv[i], "--tokenizer")) {
            if (!(tok = vw_cli_value("plan", argc, argv, &i, usage)))
                return 2;
        } else {
            return vw_cli_bad_arg("plan", argv[i], usage);
        }
    }
    if (!bundle)
        return vw_cli_usage_error("plan", "--bundle DIR is required", usage);
    return run(bundle, tok);
}
