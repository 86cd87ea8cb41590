/* test_cmd_bundle.c — `vela-worker bundle verify DIR [--anchor SHA256]`
 * (worker/cli/cmd_bundle.c): on the tiny bundle and the 4B slice it prints
 * the manifest's SHA-256 (the file's own), the revision (the content digest's
 * first 12 digits), the shape, the parameters and the weights per precision,
 * exit 0; under an anchor a bundle rewritten together with its manifest is
 * refused naming both digests (exit 1) and accepted without it under another
 * revision; a damaged file and a malformed anchor are refused; usage is 2. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/bundle.h"
#include "model/sizes.h"
#include "util/sha256.h"
#include "vw_test.h"

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

typedef struct run {
    char out[8192], err[4096];
    int rc;
} run;

static char *slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
    return buf;
}

/* vela-worker bundle ARGS, stdout and stderr kept apart. */
static void bundle_cmd(const char *args, run *r) {
    char out[] = "/tmp/vw_bundle_out_XXXXXX", err[] = "/tmp/vw_bundle_err_XXXXXX", cmd[4096];
    close(mkstemp(out));
    close(mkstemp(err));
    snprintf(cmd, sizeof cmd, "'%s' bundle %s >%s 2>%s", worker_bin(), args, out, err);
    int st = system(cmd);
    r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    slurp(out, r->out, sizeof r->out);
    slurp(err, r->err, sizeof r->err);
    unlink(out);
    unlink(err);
}

static void sha_of(const char *dir, const char *name, char hex[VW_SHA256_HEX]) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(vw_sha256_file(p, hex, NULL), VW_OK, "%s", p);
}

/* The line of r->out starting with key, without the key (static buffer). */
static const char *field(const run *r, const char *key) {
    static char v[1024];
    const char *at = strstr(r->out, key);
    cr_assert(at, "no '%s' in:\n%s", key, r->out);
    at += strlen(key);
    size_t n = strcspn(at, "\n");
    snprintf(v, sizeof v, "%.*s", (int)n, at);
    return v;
}

Test(cmd_bundle, verify_prints_digest_revision_shape_and_memory) {
    char *tiny = vw_test_path("fixtures/tiny-vela"), args[4400], man[VW_SHA256_HEX];
    run r;
    snprintf(args, sizeof args, "verify '%s'", tiny);
    bundle_cmd(args, &r);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    sha_of(tiny, "MODEL_MANIFEST.json", man);
    cr_expect_str_eq(field(&r, "manifest_sha256: "), man);
    cr_expect(!strncmp(field(&r, "revision: "), "091ffd773159 (content digest 091ffd7731597e", 42),
              "%s", r.out);
    cr_expect_str_eq(field(&r, "model: "), "vela-worker/Vela-2.0-random-tiny@091ffd773159");
    cr_expect(!strncmp(field(&r, "shape: "),
                       "custom: hidden 64, 8 layers (6 Gated DeltaNet, 2 "
                       "attention)",
                       48),
              "%s", r.out);
    cr_expect(!strncmp(field(&r, "parameters: "), "715184 ", 7), "%s", r.out);

    /* The 4B slice: the real widths, named as a slice of the 4B. */
    char *slice = vw_test_slice_bundle("4b-slice");
    cr_assert_not_null(slice);
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(slice, &b, &err), VW_OK, "%s", err.msg);
    vw_model_size size;
    vw_model_size_of(vw_bundle_backbone_config(b), &size);
    char want[160];
    snprintf(want, sizeof want, "%llu ", (unsigned long long)size.params);
    snprintf(args, sizeof args, "verify '%s' --max-tokens 65536", slice);
    bundle_cmd(args, &r);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(field(&r, "shape: "),
                     "4B width, 2 of 32 layers: hidden 2560, 2 layers (1 "
                     "Gated DeltaNet, 1 attention), SwiGLU 9216, attention "
                     "16/4 heads of 256, DeltaNet 16 key / 32 value heads") == field(&r, "shape: "),
              "%s", r.out);
    cr_expect(!strncmp(field(&r, "parameters: "), want, strlen(want)), "%s", r.out);
    snprintf(want, sizeof want, "fp32 %.1f MiB (the CPU backbone, CUDA fp32); bf16 %.1f MiB",
             (double)vw_model_weight_bytes(&size, 4) / (1u << 20),
             (double)vw_model_weight_bytes(&size, 2) / (1u << 20));
    cr_expect(strstr(field(&r, "weights: "), want), "want '%s' in %s", want, r.out);
#ifdef VW_HAVE_CUDA
    cr_expect(strstr(r.out, "cuda at batching.max_tokens 65536 (arena of 65536 rows)"), "%s",
              r.out);
#else
    cr_expect(strstr(r.out, "cuda: not sized (this build has no CUDA executor)"), "%s", r.out);
#endif
    vw_bundle_free(b);
    free(slice);
    free(tiny);
}

/* The case: a weight byte and the manifest rewritten together. */
Test(cmd_bundle, anchor_refuses_a_bundle_rewritten_with_its_manifest) {
    char *tiny = vw_test_path("fixtures/tiny-vela"), dir[] = "/tmp/vw_verify_XXXXXX";
    char cmd[4400], args[4400], anchor[VW_SHA256_HEX], now[VW_SHA256_HEX];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "cp -r '%s'/. '%s'/", tiny, dir);
    cr_assert_eq(system(cmd), 0);
    sha_of(dir, "MODEL_MANIFEST.json", anchor);
    run r;
    snprintf(args, sizeof args, "verify '%s' --anchor %s", dir, anchor);
    bundle_cmd(args, &r);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_expect(strstr(r.out, ": verified against the anchor\n"), "%s", r.out);
    char orig_rev[64];
    snprintf(orig_rev, sizeof orig_rev, "%.12s", field(&r, "revision: "));

    /* A byte of a shard's tensor data flipped: refused, the file named. */
    const char *shard = "model-00001-of-00002.safetensors";
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, shard);
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    fseek(f, -1, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 1, f);
    fclose(f);
    snprintf(args, sizeof args, "verify '%s'", dir);
    bundle_cmd(args, &r);
    cr_expect_eq(r.rc, 1);
    cr_expect(strstr(r.err, shard) && strstr(r.err, "(checksum_mismatch)"), "%s", r.err);

    /* ... and the manifest rewritten with it (SHA256SUMS dropped). */
    vw_test_relist(dir, shard);
    sha_of(dir, "MODEL_MANIFEST.json", now);
    bundle_cmd(args, &r);
    cr_assert_eq(r.rc, 0, "without the anchor it loads: %s", r.err);
    cr_expect_str_eq(field(&r, "manifest_sha256: "), now);
    cr_expect(strncmp(field(&r, "revision: "), orig_rev, 12), "another revision: %s", r.out);
    snprintf(args, sizeof args, "verify '%s' --anchor %s", dir, anchor);
    bundle_cmd(args, &r);
    cr_expect_eq(r.rc, 1);
    cr_expect(strstr(r.err, anchor) && strstr(r.err, now) && strstr(r.err, "(manifest_mismatch)"),
              "names both digests: %s", r.err);
    cr_expect_eq(r.out[0], 0, "nothing on stdout: %s", r.out);

    snprintf(args, sizeof args, "verify '%s' --anchor 12ab", dir);
    bundle_cmd(args, &r);
    cr_expect_eq(r.rc, 1);
    cr_expect(strstr(r.err, "(bad_anchor)"), "%s", r.err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    free(tiny);
}

Test(cmd_bundle, usage) {
    static const struct {
        const char *args;
        int rc;
        const char *out, *err;
    } cases[] = {
        {"", 2, NULL, NULL},
        {"check x", 2, NULL, NULL},
        {"verify", 2, NULL, NULL},
        {"verify a b", 2, NULL, NULL},
        {"verify x --max-tokens 0", 2, NULL, "--max-tokens wants 1..100000000"},
        {"verify --help", 0, "usage: vela-worker bundle verify DIR [--anchor SHA256]", NULL},
        {"verify /nonexistent/bundle", 1, NULL,
         "refused: bundle directory /nonexistent/bundle: No such file or directory "
         "(missing_file)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        run r;
        bundle_cmd(cases[i].args, &r);
        cr_expect_eq(r.rc, cases[i].rc, "'%s': exit %d", cases[i].args, r.rc);
        cr_expect(!cases[i].out || strstr(r.out, cases[i].out), "'%s': %s", cases[i].args, r.out);
        cr_expect(!cases[i].err || strstr(r.err, cases[i].err), "'%s': %s", cases[i].args, r.err);
    }
}
