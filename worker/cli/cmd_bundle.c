/* cmd_bundle.c — `vela-worker bundle verify DIR [--anchor SHA256] [--max-tokens N]`:
 * what a deployment pipeline runs before rolling out a bundle. Opens the
 * package as the worker does (every file against its digests, the safetensors
 * headers, the backbone's tensors, config, tokenizer, calibration and the
 * heads against the backbone's width, every weight for sense (finite, within
 * VW_WEIGHT_MAX_ABS); with --anchor, MODEL_MANIFEST.json's digest first)
 * without upcasting the backbone: the engine gets an executor
 * that reads no weights (core/model/synthetic.h "instant"). Prints the
 * manifest digest (the value to pin as model.manifest_sha256), the revision,
 * the shape, the parameter count and the memory per precision
 * (docs/backbone.md "Memory per size").
 * Exit codes: 0 verified, 1 refused (the reason on stderr), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "commands.h"
#include "engine.h"
#include "model/sizes.h"
#include "model/synthetic.h"
#include "service/config.h"
#include "service/device.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vela-worker bundle verify DIR [--anchor SHA256] [--max-tokens N]\n"
            "  checks every file of the package in DIR as the worker does and prints its\n"
            "  manifest digest, revision, shape, parameters and memory per precision;\n"
            "  --anchor: refuse unless MODEL_MANIFEST.json has this SHA-256\n"
            "  (model.manifest_sha256); --max-tokens: batching.max_tokens for the CUDA\n"
            "  arena (default %d)\n",
            VW_BATCH_MAX_TOKENS_DEFAULT);
}

/* What the executor factory saw of the bundle (it borrows the engine's). */
typedef struct seen {
    char manifest[65], content[65];
    vw_qwen35_config cfg;
} seen;

static vw_status verify_executor(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    seen *s = ctx;
    snprintf(s->manifest, sizeof s->manifest, "%s", vw_bundle_manifest_sha256(b));
    snprintf(s->content, sizeof s->content, "%s", vw_bundle_content_sha256(b));
    s->cfg = *vw_bundle_backbone_config(b);
    vw_synthetic_opts instant = {0};
    return vw_synthetic_new(b, &instant, out, err);
}

static double gib(uint64_t bytes) {
    return (double)bytes / (double)(1u << 30);
}

/* "15.67 GiB", or "2.7 MiB" under 1 GiB. */
static const char *human(uint64_t bytes, char buf[32]) {
    if (bytes >= (1u << 30))
        snprintf(buf, 32, "%.2f GiB", gib(bytes));
    else
        snprintf(buf, 32, "%.1f MiB", (double)bytes / (double)(1u << 20));
    return buf;
}

static void print_report(const vw_engine *e, const seen *s, size_t max_tokens) {
    const vw_qwen35_config *c = &s->cfg;
    vw_model_size size;
    vw_model_size_of(c, &size);
    int n_attn = 0;
    for (int i = 0; i < c->n_layers; i++)
        n_attn += c->full_attention[i] != 0;
    printf("manifest_sha256: %s\n", s->manifest);
    printf("revision: %.12s (content digest %s)\n", s->content, s->content);
    printf("model: %s\n", vw_engine_model(e));
    printf("shape: %s: hidden %d, %d layers (%d Gated DeltaNet, %d attention), SwiGLU %d, "
           "attention %d/%d heads of %d, DeltaNet %d key / %d value heads of %d/%d, "
           "%d embedding rows\n",
           size.name, c->hidden, c->n_layers, c->n_layers - n_attn, n_attn, c->intermediate,
           c->n_heads, c->n_kv_heads, c->head_dim, c->lin_k_heads, c->lin_v_heads, c->lin_k_dim,
           c->lin_v_dim, c->vocab);
    printf("parameters: %llu (backbone; the heads are FP32 besides)\n",
           (unsigned long long)size.params);
    char a[32], b[32];
    printf("weights: fp32 %s (the CPU backbone, CUDA fp32); bf16 %s (CUDA bf16, bf16x2)\n",
           human(vw_model_weight_bytes(&size, 4), a), human(vw_model_weight_bytes(&size, 2), b));
    vw_device_need bf, f32;
    if (vw_device_need_of(c, "bf16x2", max_tokens, &bf) ||
        vw_device_need_of(c, "fp32", max_tokens, &f32)) {
        printf("cuda: not sized (this build has no CUDA executor)\n");
        return;
    }
    printf("cuda at batching.max_tokens %zu (arena of %zu rows): bf16x2/bf16 needs %.2f GiB "
           "(arena %.2f), fp32 %.2f GiB (arena %.2f), each with %.2f GiB reserve\n",
           max_tokens, bf.arena_tokens, gib(bf.total), gib(bf.arena), gib(f32.total),
           gib(f32.arena), gib(bf.reserve));
}

static int verify(int argc, char **argv) {
    const char *dir = NULL, *anchor = NULL;
    size_t max_tokens = VW_BATCH_MAX_TOKENS_DEFAULT;
    const char *cmd = "bundle verify", *v;
    for (int i = 1; i < argc; i++) {
        if (vw_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--anchor")) {
            if (!(anchor = vw_cli_value(cmd, argc, argv, &i, usage)))
                return 2;
        } else if (!strcmp(argv[i], "--max-tokens")) {
            if (!(v = vw_cli_value(cmd, argc, argv, &i, usage)))
                return 2;
            char *end = NULL;
            long long n = strtoll(v, &end, 10);
            if (!*v || *end || n < 1 || n > 100000000)
                return vw_cli_usage_error(cmd, "--max-tokens wants 1..100000000", NULL);
            max_tokens = (size_t)n;
        } else if (argv[i][0] != '-' && !dir) {
            dir = argv[i];
        } else {
            return vw_cli_bad_arg(cmd, argv[i], usage);
        }
    }
    if (!dir)
        return vw_cli_usage_error(cmd, "the bundle directory DIR is required", usage);
    seen s = {0};
    vw_engine_opts opts = {.make_executor = verify_executor,
                           .make_ctx = &s,
                           .noul_calibration = -1,
                           .manifest_sha256 = anchor,
                           .scan_weights_full = 1};
    vw_engine *e = NULL;
    vw_err err = {0};
    if (vw_engine_open(dir, &opts, &e, &err) != VW_OK) {
        fprintf(stderr, "vela-worker bundle verify: %s: refused: %s (%s)\n", dir, err.msg,
                err.type);
        return 1;
    }
    printf("bundle: %s: verified%s\n", dir, anchor ? " against the anchor" : "");
    print_report(e, &s, max_tokens);
    vw_engine_free(e);
    return 0;
}

int vw_cmd_bundle(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "verify"))
        return verify(argc - 1, argv + 1);
    if (argc >= 2 && vw_cli_is_help(argv[1])) {
        usage(stdout);
        return 0;
    }
    if (argc < 2)
        return vw_cli_usage_error("bundle", "which? (verify)", usage);
    if (argv[1][0] == '-')
        return vw_cli_bad_arg("bundle", argv[1], usage);
    char why[300];
    snprintf(why, sizeof why, "unknown subcommand '%.200s' (verify)", argv[1]);
    return vw_cli_usage_error("bundle", why, usage);
}
