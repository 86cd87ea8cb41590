/* test_bundle_sense.c — bundles checked for sense (issue 35 findings 6 and 7):
 * copies of fixtures/tiny-vela, each with one nonsense value and its digests
 * rewritten, are refused by `vela-worker bundle verify` (exit 1, the key or
 * tensor named and what is wrong said) where they used to verify (exit 0) and
 * mislead at run time; the engine's own open (the worker's load) refuses the
 * same, sampling the weights. The unedited copy verifies. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle_edit.h"
#include "engine.h"
#include "model/synthetic.h"
#include "vw_test.h"

#define SHARD1 "model-00001-of-00002.safetensors"

static const char *worker_bin(void) {
    const char *bin = getenv("VW_WORKER_BIN");
    return bin ? bin : VW_BINARY_DIR "/vela-worker";
}

static char *copy_tiny(void) {
    char *src = vw_test_path("fixtures/tiny-vela"), *dir = vw_be_copy(src);
    free(src);
    return dir;
}

/* `vela-worker bundle verify dir`: its exit status, stderr in err. */
static int verify(const char *dir, char *err, size_t cap) {
    char errf[] = "/tmp/vw_sense_err_XXXXXX", cmd[4096];
    close(mkstemp(errf));
    snprintf(cmd, sizeof cmd, "'%s' bundle verify '%s' >/dev/null 2>%s", worker_bin(), dir, errf);
    int st = system(cmd);
    FILE *f = fopen(errf, "r");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = 0;
    if (f)
        fclose(f);
    unlink(errf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static vw_status instant(const vw_bundle *b, void *ctx, vw_executor **out, vw_err *err) {
    (void)ctx;
    vw_synthetic_opts o = {0};
    return vw_synthetic_new(b, &o, out, err);
}

/* The engine's open as the worker loads (weights sampled), without upcasting. */
static vw_status load(const char *dir, vw_err *err) {
    vw_engine_opts opts = {.make_executor = instant, .noul_calibration = -1};
    vw_engine *e = NULL;
    vw_status st = vw_engine_open(dir, &opts, &e, err);
    vw_engine_free(e);
    return st;
}

/* Rehashes dir, then expects verify to refuse it with a message holding want
 * (and type), and the load too unless verify_only. */
static void expect_refused(char *dir, const char *want, const char *type, int verify_only) {
    vw_be_rehash(dir);
    char err[4096];
    int rc = verify(dir, err, sizeof err);
    cr_log_info("verify: exit %d: %s", rc, err);
    cr_expect_eq(rc, 1, "bundle verify exit %d (want 1, refused): %s", rc, err);
    cr_expect(strstr(err, want), "verify's message lacks '%s': %s", want, err);
    char t[96];
    snprintf(t, sizeof t, "(%s)", type);
    cr_expect(strstr(err, t), "verify's type is not %s: %s", type, err);
    if (!verify_only) {
        vw_err e = {0};
        cr_expect_neq(load(dir, &e), VW_OK, "the load accepted it");
        cr_expect_str_eq(e.type, type, "%s", e.msg);
        cr_expect(strstr(e.msg, want), "the load's message lacks '%s': %s", want, e.msg);
    }
    vw_be_remove(dir);
}

static void set_num(char *dir, const char *file, const char *path, const char *lexeme) {
    vw_be_set_number(dir, file, path, lexeme);
}

Test(bundle_sense, the_tiny_bundle_verifies_and_loads) {
    char *dir = copy_tiny(), err[4096];
    cr_assert_eq(verify(dir, err, sizeof err), 0, "%s", err);
    vw_err e = {0};
    cr_assert_eq(load(dir, &e), VW_OK, "%s", e.msg);
    vw_be_remove(dir);
}

/* Finding 6: (\p{L}+)+$ backtracks exponentially per word (a 22 KB request
 * cost 32.5 s of planning); only vetted split patterns pass. */
Test(bundle_sense, refuses_an_unvetted_split_pattern) {
    char *dir = copy_tiny();
    char *p = vw_be_path(dir, "tokenizer.json");
    size_t n = 0;
    char *text = vw_test_read_file(p, &n);
    json_t *root = json_loads(text, 0, NULL);
    cr_assert(root);
    free(text);
    json_t *pre = json_pack("{s:s,s:[{s:s,s:{s:s},s:s,s:b},{s:s,s:b,s:b,s:b}]}", "type", "Sequence",
                            "pretokenizers", "type", "Split", "pattern", "Regex",
                            "(\\p{L}+)+$|\\s+|.", "behavior", "Isolated", "invert", 0, "type",
                            "ByteLevel", "add_prefix_space", 0, "trim_offsets", 0, "use_regex", 0);
    cr_assert(pre);
    json_object_set_new(root, "pre_tokenizer", pre);
    cr_assert_eq(json_dump_file(root, p, JSON_INDENT(2)), 0);
    json_decref(root);
    free(p);
    expect_refused(dir, "Split pattern '(\\p{L}+)+$|\\s+|.' is not one of the vetted",
                   "unvetted_pattern", 0);
}

/* Finding 7: nonsense values, each named with what is wrong. */
Test(bundle_sense, refuses_a_tokenizer_id_past_the_embedding) {
    char *dir = copy_tiny();
    set_num(dir, "tokenizer.json", "model.vocab.§", "1000000000");
    expect_refused(dir, "tokenizer.json holds id 1000000000, past backbone_config.vocab_size 1664",
                   "bad_tokenizer", 0);
}

Test(bundle_sense, refuses_span_layouts_that_cannot_plan) {
    char *dir = copy_tiny();
    set_num(dir, "config.json", "span_layout.window", "1000000000");
    expect_refused(dir, "config.json: span_layout.window is 1000000000, exceeds 2^20 (1048576)",
                   "bad_config", 0);
    dir = copy_tiny();
    set_num(dir, "config.json", "span_layout.window", "4000");
    expect_refused(dir, "span_layout.window 4000 exceeds span_layout.hybrid_rmax 2048",
                   "bad_config", 0);
    dir = copy_tiny();
    set_num(dir, "config.json", "span_layout.stride", "1801");
    expect_refused(dir, "span_layout.stride 1801 exceeds span_layout.window 1800", "bad_config", 0);
}

Test(bundle_sense, refuses_calibration_values_out_of_range) {
    static const struct {
        const char *path, *value, *want;
    } cases[] = {
        {"thresholds.span:*", "-5", "thresholds.span:* is -5, outside [0, 1]"},
        {"temperature.span", "1e-300", "temperature.span is 1e-300, outside [0.01, 100]"},
        {"broad_head.temperature", "0", "broad_head.temperature is 0, outside [0.01, 100]"},
        {"noul_calibration.T", "-2", "noul_calibration.T is -2, outside [0.01, 100]"},
        {"pii_sparse_gate.probe_threshold", "2", "probe_threshold is 2, outside [0, 1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = copy_tiny();
        set_num(dir, "calibration.json", cases[i].path, cases[i].value);
        expect_refused(dir, cases[i].want, "bad_calibration", 0);
    }
    /* An array member: pii_buckets[0].max_tokens -1. */
    char *dir = copy_tiny();
    vw_be_patch(dir, "calibration.json", "pii_buckets", "\"max_tokens\": 128",
                "\"max_tokens\": -12");
    expect_refused(dir, "pii_buckets[0].max_tokens is -12, outside [1, 2147483647]",
                   "bad_calibration", 0);
}

Test(bundle_sense, refuses_head_keys_that_disagree_with_the_heads) {
    static const struct {
        const char *path, *value, *want;
    } cases[] = {
        {"span_head.slots", "0", "config.json span_head.slots is 0, below 1"},
        {"span_head.slots", "1000000000", "span_head.slots is 1000000000, exceeds 2^16 (65536)"},
        {"span_head.slots", "32", "span_head.slots is 32 but span2.slot.weight has 64 rows"},
        {"head_dim", "0", "config.json head_dim is 0, below 1"},
        {"span_head.d", "512", "span_head.d is 512 but span2.K.weight has 256 rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = copy_tiny();
        set_num(dir, "config.json", cases[i].path, cases[i].value);
        expect_refused(dir, cases[i].want, "bad_config", 0);
    }
}

/* hidden_size 1e9 and vocab_size 2^40 were refused, but as "must be an
 * integer >= 1": the message now says what is wrong. */
Test(bundle_sense, backbone_sizes_say_what_is_wrong) {
    char *dir = copy_tiny();
    set_num(dir, "config.json", "backbone_config.hidden_size", "1000000000");
    expect_refused(dir, "backbone_config.hidden_size is 1000000000, exceeds 2^20 (1048576)",
                   "bad_config", 0);
    dir = copy_tiny();
    set_num(dir, "config.json", "backbone_config.vocab_size", "1099511627776");
    expect_refused(dir, "backbone_config.vocab_size is 1099511627776, exceeds 2^26 (67108864)",
                   "bad_config", 0);
    dir = copy_tiny();
    set_num(dir, "config.json", "backbone_config.num_hidden_layers", "0");
    expect_refused(dir, "backbone_config.num_hidden_layers is 0, below 1", "bad_config", 0);
}

/* bf16-max weights are finite nonsense (every answer p = 0.5, confidence 0):
 * refused at verify and, the whole tensor being nonsense, at load too. */
Test(bundle_sense, refuses_weights_no_trained_model_has) {
    char *dir = copy_tiny();
    uint16_t bf16_max = 0x7F7F;
    vw_be_fill_tensor(dir, SHARD1, "backbone.layers.0.mlp.down_proj.weight", &bf16_max, 2, 0);
    expect_refused(dir,
                   "tensor 'backbone.layers.0.mlp.down_proj.weight' (" SHARD1
                   ") holds 3.38953e+38 at element 0: no trained model has |w| > 10000",
                   "bad_weights", 0);
    dir = copy_tiny();
    float inf = 1.0f / 0.0f;
    vw_be_fill_tensor(dir, SHARD1, "backbone.layers.1.linear_attn.A_log", &inf, 4, 1);
    expect_refused(dir, "holds inf at element 0: weights must be finite", "bad_weights", 0);
}

/* One NaN deep inside the embedding (element 100,000 of 106,496, in a block
 * the load's sample skips): verify reads every weight and refuses it; the
 * load samples about 1/64 of each tensor and lets it through (documented). */
Test(bundle_sense, verify_reads_every_weight_the_load_samples) {
    char *dir = copy_tiny();
    char *p = vw_be_path(dir, SHARD1);
    vw_st_file *f = NULL;
    cr_assert_eq(vw_st_open(p, &f, NULL), VW_OK);
    const vw_st_tensor *t = vw_st_find(f, "backbone.embed_tokens.weight");
    cr_assert(t && t->numel == 1664 * 64);
    size_t len = 0;
    size_t off =
        (size_t)((const unsigned char *)t->data - (const unsigned char *)vw_st_bytes(f, &len));
    vw_st_close(f);
    size_t n = 0;
    unsigned char *buf = (unsigned char *)vw_test_read_file(p, &n);
    buf[off + 2 * 100000] = 0xC0; /* BF16 0x7FC0: NaN */
    buf[off + 2 * 100000 + 1] = 0x7F;
    vw_be_write(p, buf, n);
    free(buf);
    free(p);
    vw_be_rehash(dir);
    vw_err e = {0};
    cr_expect_eq(load(dir, &e), VW_OK, "the load's sample reached element 100000: %s", e.msg);
    expect_refused(dir, "'backbone.embed_tokens.weight' (" SHARD1 ") holds nan at element 100000",
                   "bad_weights", 1);
}
