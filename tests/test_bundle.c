/* test_bundle.c — vw_bundle on fixtures/tiny-vela (tools/make_tiny_bundle.py):
 * the release layout opens and exposes config, heads and backbone tensors;
 * damaged copies (flipped byte, missing shard, wrong dtype, wrong shape, lying
 * header length, symlink out of the directory, renamed tensors, unlisted
 * file) are refused with a message naming the file or tensor; the content
 * digest (the revision) follows docs/backbone.md and changes with any file;
 * an external anchor on MODEL_MANIFEST.json's digest refuses a rewritten
 * bundle before its weights are read. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/bundle.h"
#include "model/bundle_files.h"
#include "tokenizer/tokenizer.h"
#include "util/sha256.h"
#include "bundle_edit.h"
#include "vw_test.h"

#define HINT "(fixture: regenerate with tools/make_tiny_bundle.py)"

static char *tiny_dir(void) {
    return vw_test_path("fixtures/tiny-vela");
}

/* Copies the tiny bundle into a fresh temp dir (vw_be_remove). */
static char *copy_bundle(void) {
    char *src = tiny_dir(), *dir = vw_be_copy(src);
    free(src);
    return dir;
}

/* Opens dir, expects failure with status st and type, and msg containing
 * `names`. */
static void expect_refusal(const char *dir, vw_status st, const char *type, const char *names) {
    vw_bundle *b = NULL;
    vw_err err = {0};
    vw_status got = vw_bundle_open(dir, &b, &err);
    cr_log_info("refused (%s, %s): %s", vw_status_name(got), err.type, err.msg);
    cr_expect_null(b);
    cr_expect_eq(got, st, "status %s, want %s: %s", vw_status_name(got), vw_status_name(st),
                 err.msg);
    cr_expect_str_eq(err.type, type, "type: %s", err.msg);
    cr_expect(strstr(err.msg, names) != NULL, "message does not name '%s': %s", names, err.msg);
    vw_bundle_free(b);
}

Test(bundle, opens_tiny_release_layout) {
    char *dir = tiny_dir();
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s " HINT, err.msg);
    const vw_qwen35_config *c = vw_bundle_backbone_config(b);
    cr_expect_eq(c->hidden, 64);
    cr_expect_eq(c->n_layers, 8);
    cr_expect_eq(c->intermediate, 224);
    cr_expect_eq(c->vocab, 1664);
    cr_expect_eq(c->n_heads, 4);
    cr_expect_eq(c->n_kv_heads, 1);
    cr_expect_eq(c->head_dim, 32);
    cr_expect_eq(c->rotary_dim, 8);
    cr_expect_eq(c->lin_k_heads, 2);
    cr_expect_eq(c->lin_v_heads, 4);
    cr_expect_eq(c->conv_kernel, 4);
    cr_expect_float_eq(c->rope_theta, 1e7, 1e-3);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(c->full_attention[i], i % 4 == 3, "layer %d", i);
    cr_expect_str_eq(vw_bundle_backbone_prefix(b), "backbone.");
    cr_expect_eq(vw_bundle_max_length(b), 16384);
    cr_expect(vw_bundle_has_broad_head(b));
    cr_expect(json_is_object(json_object_get(vw_bundle_calibration(b), "temperature")));
    cr_expect(json_is_object(json_object_get(vw_bundle_config(b), "span_layout")));
    size_t tl = 0;
    const char *tj = vw_bundle_tokenizer_json(b, &tl);
    cr_expect(tl > 1000 && tj[0] == '{');

    const vw_st_tensor *q = vw_bundle_backbone_tensor(b, "layers.3.self_attn.q_proj.weight");
    cr_assert(q);
    cr_expect_eq(q->dtype, VW_DT_BF16);
    cr_expect(q->ndim == 2 && q->shape[0] == 256 && q->shape[1] == 64);
    const vw_st_tensor *alog = vw_bundle_backbone_tensor(b, "layers.0.linear_attn.A_log");
    cr_assert(alog);
    cr_expect_eq(alog->dtype, VW_DT_F32);
    cr_expect_null(vw_bundle_backbone_tensor(b, "span2.K.weight"));

    vw_tensor_f32 t = {0};
    cr_assert_eq(vw_bundle_tensor_f32(b, "span_broad.slot.weight", &t, &err), VW_OK, "%s", err.msg);
    cr_expect(t.ndim == 2 && t.shape[0] == 64 && t.shape[1] == 64 && t.numel == 4096);
    vw_tensor_f32_free(&t);
    cr_assert_eq(vw_bundle_tensor_f32(b, "set_bias", &t, &err), VW_OK, "%s", err.msg);
    cr_expect(t.ndim == 0 && t.numel == 1);
    cr_expect_float_eq(t.data[0], 0.3f, 1e-7);
    vw_tensor_f32_free(&t);
    cr_assert_eq(vw_bundle_tensor_f32(b, "head.key.weight", &t, &err), VW_OK, "%s", err.msg);
    cr_expect(t.ndim == 2 && t.shape[0] == 256 && t.shape[1] == 64);
    vw_tensor_f32_free(&t);
    /* A BF16 backbone tensor converts exactly (low 16 bits of each float zero). */
    cr_assert_eq(vw_bundle_tensor_f32(b, "backbone.norm.weight", &t, &err), VW_OK);
    for (size_t i = 0; i < t.numel; i++) {
        uint32_t u;
        memcpy(&u, &t.data[i], 4);
        cr_expect_eq(u & 0xffffu, 0u);
    }
    vw_tensor_f32_free(&t);
    cr_expect_eq(vw_bundle_tensor_f32(b, "head.nope", &t, &err), VW_EINVAL);
    cr_expect_str_eq(err.type, "missing_tensor");
    cr_expect_null(t.data);
    vw_bundle_free(b);
    free(dir);
}

Test(bundle, refuses_flipped_byte) {
    char *dir = copy_bundle();
    char *p = vw_be_path(dir, "model-00002-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n / 2] ^= 0x01;
    vw_be_write(p, buf, n);
    expect_refusal(dir, VW_EINTEGRITY, "checksum_mismatch", "model-00002-of-00002.safetensors");
    free(buf);
    free(p);
    vw_be_remove(dir);
}

Test(bundle, refuses_flipped_byte_in_json) {
    char *dir = copy_bundle();
    vw_be_patch(dir, "calibration.json", NULL, "1.3786", "1.3787");
    expect_refusal(dir, VW_EINTEGRITY, "checksum_mismatch", "calibration.json");
    vw_be_remove(dir);
}

/* The small JSON files are hashed from the bytes the bundle keeps and uses:
 * changing them on disk after opening changes nothing the bundle hands out. */
Test(bundle, keeps_the_verified_json_bytes) {
    char *dir = copy_bundle();
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s", err.msg);
    const char *names[] = {"config.json", "calibration.json"};
    size_t len[2];
    const char *bytes[2] = {vw_bundle_config_json(b, &len[0]),
                            vw_bundle_calibration_json(b, &len[1])};
    for (int i = 0; i < 2; i++) {
        char *p = vw_be_path(dir, names[i]);
        size_t n = 0;
        char *disk = vw_test_read_file(p, &n);
        cr_assert(n == len[i] && !memcmp(disk, bytes[i], n), "%s: the bytes on disk", names[i]);
        vw_be_write(p, "{}", 2); /* replaced after opening */
        free(disk);
        free(p);
    }
    char hex[VW_SHA256_HEX];
    cr_assert_eq(vw_sha256_hex(bytes[0], len[0], hex, &err), VW_OK);
    cr_assert_str_eq(hex, vw_bundle_config_sha256(b), "config.json: still the verified bytes");
    cr_assert_gt(len[1], 2, "calibration.json: still the verified bytes");
    vw_bundle_free(b);
    vw_be_remove(dir);
}

Test(bundle, refuses_missing_shard) {
    char *dir = copy_bundle();
    char *p = vw_be_path(dir, "model-00001-of-00002.safetensors");
    unlink(p);
    expect_refusal(dir, VW_EIO, "missing_file", "model-00001-of-00002.safetensors");
    free(p);
    vw_be_remove(dir);
}

Test(bundle, refuses_wrong_dtype) {
    char *dir = copy_bundle();
    /* Same byte count (2-byte ints), so only the dtype check can object. */
    vw_be_patch(dir, "model-00001-of-00002.safetensors", "\"backbone.layers.1.mlp.up_proj.weight\"",
                "\"dtype\":\"BF16\"", "\"dtype\": \"I16\"");
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_dtype", "backbone.layers.1.mlp.up_proj.weight");
    vw_be_remove(dir);
}

Test(bundle, refuses_wrong_shape) {
    char *dir = copy_bundle();
    /* [224,64] -> [64,224]: same element count, transposed shape. */
    vw_be_patch(dir, "model-00001-of-00002.safetensors",
                "\"backbone.layers.0.mlp.gate_proj.weight\"", "[224,64]", "[64,224]");
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_shape", "backbone.layers.0.mlp.gate_proj.weight");
    vw_be_remove(dir);
}

static void set_header_len(const char *dir, const char *name, long delta) {
    char *p = vw_be_path(dir, name);
    size_t n = 0;
    unsigned char *buf = (unsigned char *)vw_test_read_file(p, &n);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | buf[i];
    h = (uint64_t)((long)h + delta);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(h >> (8 * i));
    vw_be_write(p, buf, n);
    free(buf);
    free(p);
}

Test(bundle, refuses_header_longer_than_file) {
    char *dir = copy_bundle();
    set_header_len(dir, "broad_head.safetensors", 1L << 30);
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_safetensors", "broad_head.safetensors");
    vw_be_remove(dir);
}

Test(bundle, refuses_header_shorter_than_its_json) {
    char *dir = copy_bundle();
    set_header_len(dir, "model-00002-of-00002.safetensors", -9);
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_safetensors", "model-00002-of-00002.safetensors");
    vw_be_remove(dir);
}

Test(bundle, refuses_symlink_out_of_directory) {
    char *dir = copy_bundle();
    char *outside = copy_bundle(); /* same bytes, so the digest still matches */
    char *p = vw_be_path(dir, "tokenizer.json"), *target = vw_be_path(outside, "tokenizer.json");
    unlink(p);
    cr_assert_eq(symlink(target, p), 0);
    expect_refusal(dir, VW_EINVAL, "path_escape", "tokenizer.json");
    free(p);
    free(target);
    vw_be_remove(outside);
    vw_be_remove(dir);
}

Test(bundle, accepts_symlink_inside_directory) {
    char *dir = copy_bundle();
    char *p = vw_be_path(dir, "tokenizer.json"), *moved = vw_be_path(dir, "tok-real.json");
    cr_assert_eq(rename(p, moved), 0);
    cr_assert_eq(symlink("tok-real.json", p), 0);
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_expect_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s", err.msg);
    vw_bundle_free(b);
    free(p);
    free(moved);
    vw_be_remove(dir);
}

Test(bundle, refuses_missing_backbone_tensor) {
    char *dir = copy_bundle();
    const char *from = "backbone.layers.5.mlp.up_proj.weight",
               *to = "backbone.layers.5.mlp.up_pro_.weight";
    vw_be_patch(dir, "model-00002-of-00002.safetensors", NULL, from, to);
    vw_be_patch(dir, "model.safetensors.index.json", NULL, from, to);
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "missing_tensor", from);
    vw_be_remove(dir);
}

Test(bundle, refuses_unknown_tensor) {
    char *dir = copy_bundle();
    vw_be_patch(dir, "model-00002-of-00002.safetensors", NULL, "\"span2.o.bias\"",
                "\"span2.x.bias\"");
    vw_be_patch(dir, "model.safetensors.index.json", NULL, "\"span2.o.bias\"", "\"span2.x.bias\"");
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "unknown_tensor", "span2.x.bias");
    vw_be_remove(dir);
}

Test(bundle, refuses_tensor_missing_from_index) {
    char *dir = copy_bundle();
    vw_be_patch(dir, "model.safetensors.index.json", NULL, "\"span2.o.bias\"", "\"span2.x.bias\"");
    vw_be_rehash(dir);
    expect_refusal(dir, VW_EINVAL, "missing_tensor", "span2.x.bias");
    vw_be_remove(dir);
}

Test(bundle, refuses_unlisted_file) {
    char *dir = copy_bundle();
    /* Drop broad_head from both digest lists: it is read, so it must be listed. */
    vw_be_patch(dir, "MODEL_MANIFEST.json", NULL, "\"broad_head.safetensors\"",
                "\"broad_head.safetensorz\"");
    vw_be_patch(dir, "SHA256SUMS", NULL, "broad_head.safetensors", "broad_head.safetensorz");
    expect_refusal(dir, VW_EINTEGRITY, "unlisted_file", "broad_head.safetensors");
    vw_be_remove(dir);
}

Test(bundle, refuses_listed_file_that_is_missing) {
    char *dir = copy_bundle();
    vw_be_patch(dir, "MODEL_MANIFEST.json", NULL, "\"calibration.json\"", "\"calibration.jsoN\"");
    expect_refusal(dir, VW_EIO, "missing_file", "calibration.jsoN");
    vw_be_remove(dir);
}

/* ---- identity (docs/backbone.md "Revision") ---------------------------------- */

/* The content digest of the package in dir, from vw_bundle_open. */
static void content_of(const char *dir, char out[VW_SHA256_HEX]) {
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s: %s", dir, err.msg);
    snprintf(out, VW_SHA256_HEX, "%s", vw_bundle_content_sha256(b));
    vw_bundle_free(b);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The rule of docs/backbone.md written out: SHA-256 of the name-sorted lines
 * "<sha256>  <name>\n" of the manifest's files_sha256, without the manifest. */
static void rule_digest(const char *dir, char out[VW_SHA256_HEX]) {
    char *mp = vw_be_path(dir, "MODEL_MANIFEST.json");
    json_t *man = json_load_file(mp, 0, NULL);
    cr_assert(man);
    json_t *files = json_object_get(man, "files_sha256");
    const char *names[64], *key;
    json_t *v;
    size_t n = 0;
    json_object_foreach(files, key, v) {
        if (strcmp(key, "MODEL_MANIFEST.json") && n < 64)
            names[n++] = key;
    }
    qsort(names, n, sizeof *names, cmp_str);
    char text[64 * 200];
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s  %s\n",
                                json_string_value(json_object_get(files, names[i])), names[i]);
    cr_assert_eq(vw_sha256_hex(text, len, out, NULL), VW_OK);
    json_decref(man);
    free(mp);
}

Test(bundle, revision_covers_every_file) {
    char *tiny = tiny_dir(), orig[VW_SHA256_HEX], want[VW_SHA256_HEX], got[VW_SHA256_HEX];
    content_of(tiny, orig);
    rule_digest(tiny, want);
    cr_assert_str_eq(orig, want, "the digest follows the documented rule " HINT);

    /* An unchanged copy, its lists rewritten (another manifest layout, the
     * manifest's own digest in SHA256SUMS): the same identity. */
    char *dir = copy_bundle();
    vw_be_rehash(dir);
    content_of(dir, got);
    cr_assert_str_eq(got, orig, "an unchanged copy keeps the identity");
    /* A file named by SHA256SUMS only still counts, once. */
    vw_be_rehash_except(dir, "tokenizer.json");
    content_of(dir, got);
    cr_assert_str_eq(got, orig, "which list names a file does not count");
    vw_be_remove(dir);

    /* One weight byte changed and the lists rewritten: the bundle loads, as
     * another model. */
    dir = copy_bundle();
    char *p = vw_be_path(dir, "model-00001-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n - 1] ^= 0x01; /* the last byte: tensor data, not the header */
    vw_be_write(p, buf, n);
    vw_be_rehash(dir);
    content_of(dir, got);
    cr_assert_str_neq(got, orig, "a changed weight is another revision");
    rule_digest(dir, want);
    cr_assert_str_eq(got, want);
    free(buf);
    free(p);
    vw_be_remove(dir);

    /* The same for a head file, the tokenizer, the calibration and the config
     * (the two parsed JSON files patched so that they still parse). */
    const char *others[][3] = {{"broad_head.safetensors", NULL, NULL},
                               {"tokenizer.json", NULL, NULL},
                               {"calibration.json", "1.3786", "1.3787"},
                               {"config.json", "random-tiny", "random-tinY"}};
    for (size_t i = 0; i < 4; i++) {
        dir = copy_bundle();
        p = vw_be_path(dir, others[i][0]);
        if (others[i][1]) {
            vw_be_patch(dir, others[i][0], NULL, others[i][1], others[i][2]);
        } else {
            buf = vw_test_read_file(p, &n);
            buf[n - 1] ^= 0x01;
            vw_be_write(p, buf, n);
            free(buf);
        }
        vw_be_rehash(dir);
        content_of(dir, got);
        cr_assert_str_neq(got, orig, "%s changed: another revision", others[i][0]);
        free(p);
        vw_be_remove(dir);
    }
    free(tiny);
}

/* ---- the external anchor (docs/backbone.md "Manifest anchor") ----------------- */

static vw_status open_anchored(const char *dir, const char *anchor, vw_err *err,
                               char content[VW_SHA256_HEX]) {
    vw_bundle *b = NULL;
    memset(err, 0, sizeof *err);
    vw_status st = vw_bundle_open_anchored(dir, anchor, &b, err);
    if (st == VW_OK && content)
        snprintf(content, VW_SHA256_HEX, "%s", vw_bundle_content_sha256(b));
    vw_bundle_free(b);
    return st;
}

/* A weight file rewritten together with the manifest (and SHA256SUMS): without
 * an anchor the bundle loads under another revision; under the original
 * manifest's digest it is refused naming both digests, before the weights are
 * read (a missing shard does not change the refusal). */
Test(bundle, manifest_anchor_refuses_a_rewritten_bundle) {
    char *tiny = tiny_dir(), anchor[VW_SHA256_HEX], upper[VW_SHA256_HEX];
    char orig[VW_SHA256_HEX], got[VW_SHA256_HEX];
    char *mp = vw_be_path(tiny, "MODEL_MANIFEST.json");
    cr_assert_eq(vw_sha256_file(mp, anchor, NULL), VW_OK);
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(tiny, &b, &err), VW_OK, "%s", err.msg);
    cr_assert_str_eq(vw_bundle_manifest_sha256(b), anchor, "the digest of the manifest's bytes");
    vw_bundle_free(b);
    cr_assert_eq(open_anchored(tiny, anchor, &err, orig), VW_OK, "%s", err.msg);
    for (size_t i = 0; i < VW_SHA256_HEX; i++)
        upper[i] = (char)(anchor[i] >= 'a' && anchor[i] <= 'f' ? anchor[i] - 32 : anchor[i]);
    cr_assert_eq(open_anchored(tiny, upper, &err, NULL), VW_OK, "either case: %s", err.msg);
    cr_assert_eq(open_anchored(tiny, "", &err, NULL), VW_OK, "\"\" is no anchor");
    cr_assert_eq(open_anchored(tiny, "abc", &err, NULL), VW_EINVAL);
    cr_assert_str_eq(err.type, "bad_anchor");

    char *dir = copy_bundle();
    char *p = vw_be_path(dir, "model-00001-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n - 1] ^= 0x01; /* tensor data */
    vw_be_write(p, buf, n);
    vw_be_rehash(dir);
    cr_assert_eq(open_anchored(dir, NULL, &err, got), VW_OK, "no anchor: %s", err.msg);
    cr_assert_str_neq(got, orig, "accepted without the anchor, as another revision");
    cr_assert_eq(open_anchored(dir, anchor, &err, NULL), VW_EINTEGRITY);
    cr_assert_str_eq(err.type, "manifest_mismatch");
    char now[VW_SHA256_HEX];
    char *dmp = vw_be_path(dir, "MODEL_MANIFEST.json");
    cr_assert_eq(vw_sha256_file(dmp, now, NULL), VW_OK);
    cr_assert(strstr(err.msg, anchor) && strstr(err.msg, now) &&
                  strstr(err.msg, "MODEL_MANIFEST.json"),
              "names both digests: %s", err.msg);
    unlink(p); /* the weights are never reached: the same refusal */
    cr_assert_eq(open_anchored(dir, anchor, &err, NULL), VW_EINTEGRITY);
    cr_assert_str_eq(err.type, "manifest_mismatch");
    free(dmp);
    free(buf);
    free(p);
    vw_be_remove(dir);
    free(mp);
    free(tiny);
}

/* Under an anchor, a file the bundle reads must be listed in the manifest
 * itself: SHA256SUMS is not anchored, so a file it alone lists is refused
 * (and accepted without the anchor, as before). */
Test(bundle, manifest_anchor_needs_every_read_file_in_the_manifest) {
    char *dir = copy_bundle(), anchor[VW_SHA256_HEX];
    vw_be_rehash_except(dir, "tokenizer.json");
    char *mp = vw_be_path(dir, "MODEL_MANIFEST.json");
    cr_assert_eq(vw_sha256_file(mp, anchor, NULL), VW_OK);
    vw_err err;
    cr_assert_eq(open_anchored(dir, NULL, &err, NULL), VW_OK, "%s", err.msg);
    cr_assert_eq(open_anchored(dir, anchor, &err, NULL), VW_EINTEGRITY);
    cr_assert_str_eq(err.type, "unlisted_file");
    cr_assert(strstr(err.msg, "tokenizer.json") && strstr(err.msg, "anchored"), "%s", err.msg);
    free(mp);
    vw_be_remove(dir);
}

/* Pads dir/name to `size` bytes with trailing spaces (still valid JSON). */
static void pad_to(const char *dir, const char *name, size_t size) {
    char *p = vw_be_path(dir, name);
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    cr_assert(buf && n <= size);
    char *big = realloc(buf, size);
    cr_assert(big);
    memset(big + n, ' ', size - n);
    vw_be_write(p, big, size);
    free(big);
    free(p);
}

/* Issue 35 finding 4: a 100 MB tokenizer.json passed bundle verify and took
 * 3.2 GB. Every file the bundle reads whole is refused past its bound before
 * it is read (tokenizer.json VW_TOK_MAX_JSON_BYTES, the JSON files
 * VW_BUNDLE_MAX_JSON_BYTES), its digests matching; at the bound it opens. */
Test(bundle, refuses_files_past_their_size_bound) {
    static const struct {
        const char *name;
        size_t max;
    } files[] = {{"tokenizer.json", VW_TOK_MAX_JSON_BYTES},
                 {"calibration.json", VW_BUNDLE_MAX_JSON_BYTES},
                 {"config.json", VW_BUNDLE_MAX_JSON_BYTES},
                 {"model.safetensors.index.json", VW_BUNDLE_MAX_JSON_BYTES}};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *dir = copy_bundle();
        pad_to(dir, files[i].name, files[i].max + 1);
        vw_be_rehash(dir);
        expect_refusal(dir, VW_EINVAL, "file_too_large", files[i].name);
        vw_be_remove(dir);
    }
    char *dir = copy_bundle();
    pad_to(dir, "tokenizer.json", VW_TOK_MAX_JSON_BYTES);
    vw_be_rehash(dir);
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_expect_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s", err.msg);
    vw_bundle_free(b);
    vw_be_remove(dir);
}
