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
#include "util/sha256.h"
#include "vw_test.h"

#define HINT "(fixture: regenerate with tools/make_tiny_bundle.py)"

static char *tiny_dir(void) {
    return vw_test_path("fixtures/tiny-vela");
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Copies the tiny bundle into a fresh temp dir; returns it (malloc'd). */
static char *copy_bundle(void) {
    char tmpl[] = "/tmp/vw_bundle_XXXXXX";
    cr_assert(mkdtemp(tmpl));
    char *src = tiny_dir();
    DIR *d = opendir(src);
    cr_assert(d, "%s missing " HINT, src);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char from[1024], to[1024];
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        snprintf(to, sizeof to, "%s/%s", tmpl, de->d_name);
        size_t n = 0;
        char *buf = vw_test_read_file(from, &n);
        cr_assert(buf, "cannot read %s", from);
        write_file(to, buf, n);
        free(buf);
    }
    closedir(d);
    free(src);
    return strdup(tmpl);
}

static void remove_tree(char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
}

static char *path_in(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* Replaces the first occurrence of `from` (after `after`, when given) by `to`
 * (same length) inside the file. */
static void patch(const char *dir, const char *name, const char *after, const char *from,
                  const char *to) {
    cr_assert_eq(strlen(from), strlen(to));
    char *p = path_in(dir, name);
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    cr_assert(buf);
    char *start = after ? memmem(buf, n, after, strlen(after)) : buf;
    cr_assert(start, "'%s' not in %s", after, name);
    char *hit = memmem(start, n - (size_t)(start - buf), from, strlen(from));
    cr_assert(hit, "'%s' not in %s", from, name);
    memcpy(hit, to, strlen(to));
    write_file(p, buf, n);
    free(buf);
    free(p);
}

/* Rewrites MODEL_MANIFEST.json and SHA256SUMS so digests match the damaged
 * files: the refusal must then come from the check under test. A file named
 * sums_only (may be NULL) leaves the manifest and stays in SHA256SUMS. */
static void rehash_except(const char *dir, const char *sums_only) {
    char *mp = path_in(dir, "MODEL_MANIFEST.json");
    json_t *man = json_load_file(mp, 0, NULL);
    cr_assert(man);
    json_t *files = json_object_get(man, "files_sha256"), *all = json_object();
    const char *key;
    json_t *v;
    char hex[VW_SHA256_HEX];
    json_object_foreach(files, key, v) {
        char *p = path_in(dir, key);
        cr_assert_eq(vw_sha256_file(p, hex, NULL), VW_OK);
        json_object_set_new(all, key, json_string(hex));
        free(p);
    }
    json_object_update(files, all);
    if (sums_only)
        cr_assert_eq(json_object_del(files, sums_only), 0);
    cr_assert_eq(json_dump_file(man, mp, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
    char *sp = path_in(dir, "SHA256SUMS");
    FILE *f = fopen(sp, "w");
    json_object_foreach(all, key, v) fprintf(f, "%s  %s\n", json_string_value(v), key);
    cr_assert_eq(vw_sha256_file(mp, hex, NULL), VW_OK);
    fprintf(f, "%s  MODEL_MANIFEST.json\n", hex);
    fclose(f);
    json_decref(all);
    json_decref(man);
    free(mp);
    free(sp);
}

static void rehash(const char *dir) {
    rehash_except(dir, NULL);
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
    char *p = path_in(dir, "model-00002-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n / 2] ^= 0x01;
    write_file(p, buf, n);
    expect_refusal(dir, VW_EINTEGRITY, "checksum_mismatch", "model-00002-of-00002.safetensors");
    free(buf);
    free(p);
    remove_tree(dir);
}

Test(bundle, refuses_flipped_byte_in_json) {
    char *dir = copy_bundle();
    patch(dir, "calibration.json", NULL, "1.3786", "1.3787");
    expect_refusal(dir, VW_EINTEGRITY, "checksum_mismatch", "calibration.json");
    remove_tree(dir);
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
        char *p = path_in(dir, names[i]);
        size_t n = 0;
        char *disk = vw_test_read_file(p, &n);
        cr_assert(n == len[i] && !memcmp(disk, bytes[i], n), "%s: the bytes on disk", names[i]);
        write_file(p, "{}", 2); /* replaced after opening */
        free(disk);
        free(p);
    }
    char hex[VW_SHA256_HEX];
    cr_assert_eq(vw_sha256_hex(bytes[0], len[0], hex, &err), VW_OK);
    cr_assert_str_eq(hex, vw_bundle_config_sha256(b), "config.json: still the verified bytes");
    cr_assert_gt(len[1], 2, "calibration.json: still the verified bytes");
    vw_bundle_free(b);
    remove_tree(dir);
}

Test(bundle, refuses_missing_shard) {
    char *dir = copy_bundle();
    char *p = path_in(dir, "model-00001-of-00002.safetensors");
    unlink(p);
    expect_refusal(dir, VW_EIO, "missing_file", "model-00001-of-00002.safetensors");
    free(p);
    remove_tree(dir);
}

Test(bundle, refuses_wrong_dtype) {
    char *dir = copy_bundle();
    /* Same byte count (2-byte ints), so only the dtype check can object. */
    patch(dir, "model-00001-of-00002.safetensors", "\"backbone.layers.1.mlp.up_proj.weight\"",
          "\"dtype\":\"BF16\"", "\"dtype\": \"I16\"");
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_dtype", "backbone.layers.1.mlp.up_proj.weight");
    remove_tree(dir);
}

Test(bundle, refuses_wrong_shape) {
    char *dir = copy_bundle();
    /* [224,64] -> [64,224]: same element count, transposed shape. */
    patch(dir, "model-00001-of-00002.safetensors", "\"backbone.layers.0.mlp.gate_proj.weight\"",
          "[224,64]", "[64,224]");
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_shape", "backbone.layers.0.mlp.gate_proj.weight");
    remove_tree(dir);
}

static void set_header_len(const char *dir, const char *name, long delta) {
    char *p = path_in(dir, name);
    size_t n = 0;
    unsigned char *buf = (unsigned char *)vw_test_read_file(p, &n);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | buf[i];
    h = (uint64_t)((long)h + delta);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(h >> (8 * i));
    write_file(p, buf, n);
    free(buf);
    free(p);
}

Test(bundle, refuses_header_longer_than_file) {
    char *dir = copy_bundle();
    set_header_len(dir, "broad_head.safetensors", 1L << 30);
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_safetensors", "broad_head.safetensors");
    remove_tree(dir);
}

Test(bundle, refuses_header_shorter_than_its_json) {
    char *dir = copy_bundle();
    set_header_len(dir, "model-00002-of-00002.safetensors", -9);
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "bad_safetensors", "model-00002-of-00002.safetensors");
    remove_tree(dir);
}

Test(bundle, refuses_symlink_out_of_directory) {
    char *dir = copy_bundle();
    char *outside = copy_bundle(); /* same bytes, so the digest still matches */
    char *p = path_in(dir, "tokenizer.json"), *target = path_in(outside, "tokenizer.json");
    unlink(p);
    cr_assert_eq(symlink(target, p), 0);
    expect_refusal(dir, VW_EINVAL, "path_escape", "tokenizer.json");
    free(p);
    free(target);
    remove_tree(outside);
    remove_tree(dir);
}

Test(bundle, accepts_symlink_inside_directory) {
    char *dir = copy_bundle();
    char *p = path_in(dir, "tokenizer.json"), *moved = path_in(dir, "tok-real.json");
    cr_assert_eq(rename(p, moved), 0);
    cr_assert_eq(symlink("tok-real.json", p), 0);
    vw_bundle *b = NULL;
    vw_err err = {0};
    cr_expect_eq(vw_bundle_open(dir, &b, &err), VW_OK, "%s", err.msg);
    vw_bundle_free(b);
    free(p);
    free(moved);
    remove_tree(dir);
}

Test(bundle, refuses_missing_backbone_tensor) {
    char *dir = copy_bundle();
    const char *from = "backbone.layers.5.mlp.up_proj.weight",
               *to = "backbone.layers.5.mlp.up_pro_.weight";
    patch(dir, "model-00002-of-00002.safetensors", NULL, from, to);
    patch(dir, "model.safetensors.index.json", NULL, from, to);
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "missing_tensor", from);
    remove_tree(dir);
}

Test(bundle, refuses_unknown_tensor) {
    char *dir = copy_bundle();
    patch(dir, "model-00002-of-00002.safetensors", NULL, "\"span2.o.bias\"", "\"span2.x.bias\"");
    patch(dir, "model.safetensors.index.json", NULL, "\"span2.o.bias\"", "\"span2.x.bias\"");
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "unknown_tensor", "span2.x.bias");
    remove_tree(dir);
}

Test(bundle, refuses_tensor_missing_from_index) {
    char *dir = copy_bundle();
    patch(dir, "model.safetensors.index.json", NULL, "\"span2.o.bias\"", "\"span2.x.bias\"");
    rehash(dir);
    expect_refusal(dir, VW_EINVAL, "missing_tensor", "span2.x.bias");
    remove_tree(dir);
}

Test(bundle, refuses_unlisted_file) {
    char *dir = copy_bundle();
    /* Drop broad_head from both digest lists: it is read, so it must be listed. */
    patch(dir, "MODEL_MANIFEST.json", NULL, "\"broad_head.safetensors\"",
          "\"broad_head.safetensorz\"");
    patch(dir, "SHA256SUMS", NULL, "broad_head.safetensors", "broad_head.safetensorz");
    expect_refusal(dir, VW_EINTEGRITY, "unlisted_file", "broad_head.safetensors");
    remove_tree(dir);
}

Test(bundle, refuses_listed_file_that_is_missing) {
    char *dir = copy_bundle();
    patch(dir, "MODEL_MANIFEST.json", NULL, "\"calibration.json\"", "\"calibration.jsoN\"");
    expect_refusal(dir, VW_EIO, "missing_file", "calibration.jsoN");
    remove_tree(dir);
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
    char *mp = path_in(dir, "MODEL_MANIFEST.json");
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
    rehash(dir);
    content_of(dir, got);
    cr_assert_str_eq(got, orig, "an unchanged copy keeps the identity");
    /* A file named by SHA256SUMS only still counts, once. */
    rehash_except(dir, "tokenizer.json");
    content_of(dir, got);
    cr_assert_str_eq(got, orig, "which list names a file does not count");
    remove_tree(dir);

    /* One weight byte changed and the lists rewritten: the bundle loads, as
     * another model. */
    dir = copy_bundle();
    char *p = path_in(dir, "model-00001-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n - 1] ^= 0x01; /* the last byte: tensor data, not the header */
    write_file(p, buf, n);
    rehash(dir);
    content_of(dir, got);
    cr_assert_str_neq(got, orig, "a changed weight is another revision");
    rule_digest(dir, want);
    cr_assert_str_eq(got, want);
    free(buf);
    free(p);
    remove_tree(dir);

    /* The same for a head file, the tokenizer, the calibration and the config
     * (the two parsed JSON files patched so that they still parse). */
    const char *others[][3] = {{"broad_head.safetensors", NULL, NULL},
                               {"tokenizer.json", NULL, NULL},
                               {"calibration.json", "1.3786", "1.3787"},
                               {"config.json", "random-tiny", "random-tinY"}};
    for (size_t i = 0; i < 4; i++) {
        dir = copy_bundle();
        p = path_in(dir, others[i][0]);
        if (others[i][1]) {
            patch(dir, others[i][0], NULL, others[i][1], others[i][2]);
        } else {
            buf = vw_test_read_file(p, &n);
            buf[n - 1] ^= 0x01;
            write_file(p, buf, n);
            free(buf);
        }
        rehash(dir);
        content_of(dir, got);
        cr_assert_str_neq(got, orig, "%s changed: another revision", others[i][0]);
        free(p);
        remove_tree(dir);
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
    char *mp = path_in(tiny, "MODEL_MANIFEST.json");
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
    char *p = path_in(dir, "model-00001-of-00002.safetensors");
    size_t n = 0;
    char *buf = vw_test_read_file(p, &n);
    buf[n - 1] ^= 0x01; /* tensor data */
    write_file(p, buf, n);
    rehash(dir);
    cr_assert_eq(open_anchored(dir, NULL, &err, got), VW_OK, "no anchor: %s", err.msg);
    cr_assert_str_neq(got, orig, "accepted without the anchor, as another revision");
    cr_assert_eq(open_anchored(dir, anchor, &err, NULL), VW_EINTEGRITY);
    cr_assert_str_eq(err.type, "manifest_mismatch");
    char now[VW_SHA256_HEX];
    char *dmp = path_in(dir, "MODEL_MANIFEST.json");
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
    remove_tree(dir);
    free(mp);
    free(tiny);
}

/* Under an anchor, a file the bundle reads must be listed in the manifest
 * itself: SHA256SUMS is not anchored, so a file it alone lists is refused
 * (and accepted without the anchor, as before). */
Test(bundle, manifest_anchor_needs_every_read_file_in_the_manifest) {
    char *dir = copy_bundle(), anchor[VW_SHA256_HEX];
    rehash_except(dir, "tokenizer.json");
    char *mp = path_in(dir, "MODEL_MANIFEST.json");
    cr_assert_eq(vw_sha256_file(mp, anchor, NULL), VW_OK);
    vw_err err;
    cr_assert_eq(open_anchored(dir, NULL, &err, NULL), VW_OK, "%s", err.msg);
    cr_assert_eq(open_anchored(dir, anchor, &err, NULL), VW_EINTEGRITY);
    cr_assert_str_eq(err.type, "unlisted_file");
    cr_assert(strstr(err.msg, "tokenizer.json") && strstr(err.msg, "anchored"), "%s", err.msg);
    free(mp);
    remove_tree(dir);
}
