/* random_bundle.c — a seeded random Vela 2.0 package (see random_bundle.h). */
#include "random_bundle.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "qwen35_config.h"
#include "util/reserve.h"
#include "util/sha256.h"

#define GENERATOR "core/model/random_bundle.c"

typedef struct rng {
    uint64_t s;
} rng;

static double unif(rng *r) { /* xorshift64*, [0, 1) */
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    return (double)((r->s * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static uint16_t to_bf16(float x) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* One weight value, HF-like ranges: matrices U(±0.035) (std 0.02),
 * zero-centred backbone norms 0 ± 0.1, plain norms (the GDN output norm and
 * the heads' LayerNorms) 1 ± 0.1, biases 0 ± 0.05, conv taps U(±0.5), A_log =
 * log U(1, 16), dt_bias = softplus^-1 of a log-uniform dt in [1e-3, 1e-1]. */
static float weight(rng *r, const char *name) {
    double u = unif(r);
    if (ends_with(name, "A_log"))
        return (float)log(1.0 + 15.0 * u);
    if (ends_with(name, "dt_bias")) {
        double dt = exp(log(1e-3) + u * (log(1e-1) - log(1e-3)));
        return (float)(dt + log(-expm1(-dt)));
    }
    if (ends_with(name, "conv1d.weight"))
        return (float)(u - 0.5);
    bool head = strncmp(name, "backbone.", 9) != 0;
    if (ends_with(name, "linear_attn.norm.weight") || (head && ends_with(name, "norm.weight")) ||
        (head && (ends_with(name, ".ln.weight") || ends_with(name, ".wn.weight"))))
        return (float)(1.0 + 0.2 * (u - 0.5));
    if (ends_with(name, "norm.weight"))
        return (float)(0.2 * (u - 0.5));
    if (ends_with(name, "bias"))
        return (float)(0.1 * (u - 0.5));
    return (float)(0.07 * (u - 0.5));
}

/* One tensor to write: full name, dtype size (2 BF16, 4 F32) and shape. */
typedef struct spec {
    char name[128];
    int es, ndim;
    int64_t shape[3];
} spec;

typedef struct specs {
    spec *v;
    size_t n, cap;
} specs;

static bool add(specs *s, const char *prefix, const char *name, int es, int ndim, int64_t a,
                int64_t b, int64_t c) {
    if (vw_reserve((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return false;
    spec *t = &s->v[s->n++];
    snprintf(t->name, sizeof t->name, "%s%s", prefix, name);
    t->es = es, t->ndim = ndim, t->shape[0] = a, t->shape[1] = b, t->shape[2] = c;
    return true;
}

/* The backbone inventory (BF16; A_log F32, as stock checkpoints). */
static bool backbone_specs(const vw_qwen35_config *c, specs *s) {
    size_t n = vw_qwen35_tensor_specs(c, NULL, 0);
    vw_qwen35_tensor_spec *sp = malloc(n * sizeof *sp);
    bool ok = sp != NULL;
    if (ok)
        vw_qwen35_tensor_specs(c, sp, n);
    for (size_t i = 0; ok && i < n; i++)
        ok = add(s, "backbone.", sp[i].name, ends_with(sp[i].name, "A_log") ? 4 : 2, sp[i].ndim,
                 sp[i].shape[0], sp[i].shape[1], sp[i].shape[2]);
    free(sp);
    return ok;
}

/* The candidate head and set_bias (docs/spec/answers.md §1.1), F32. */
static bool candidate_specs(int64_t H, int64_t d, specs *s) {
    static const char *const dh[] = {"key.weight", "query.weight", "candidate_mlp.weight",
                                     "query_mlp.weight"};
    static const char *const vh[] = {"candidate_norm.weight", "candidate_norm.bias",
                                     "query_norm.weight", "query_norm.bias"};
    bool ok = true;
    for (size_t i = 0; ok && i < 4; i++)
        ok = add(s, "head.", dh[i], 4, 2, d, H, 0) && add(s, "head.", vh[i], 4, 1, H, 0, 0);
    return ok && add(s, "head.", "candidate_mlp.bias", 4, 1, d, 0, 0) &&
           add(s, "head.", "scalar.weight", 4, 2, 1, d, 0) && add(s, "", "set_bias", 4, 0, 0, 0, 0);
}

/* A SpanHeadV2 under prefix ("span2." or "span_broad."), F32. */
static bool span_specs(const char *prefix, int64_t H, int64_t d, int64_t slots, specs *s) {
    static const char *const dh[] = {"K.weight", "Q.weight", "N.weight", "M.weight"};
    static const char *const vh[] = {"wn.weight", "wn.bias", "ln.weight", "ln.bias"};
    bool ok = true;
    for (size_t i = 0; ok && i < 4; i++)
        ok = add(s, prefix, dh[i], 4, 2, d, H, 0) && add(s, prefix, vh[i], 4, 1, H, 0, 0);
    return ok && add(s, prefix, "M.bias", 4, 1, d, 0, 0) &&
           add(s, prefix, "slot.weight", 4, 2, slots, H, 0) &&
           add(s, prefix, "v.weight", 4, 2, 1, d, 0) && add(s, prefix, "o.weight", 4, 2, 1, H, 0) &&
           add(s, prefix, "o.bias", 4, 1, 1, 0, 0);
}

static size_t numel(const spec *t) {
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

static vw_status write_safetensors(const char *path, const specs *s, uint64_t seed, vw_err *err) {
    enum { CHUNK = 1 << 20 };
    json_t *hdr = json_object();
    size_t off = 0;
    for (size_t i = 0; i < s->n; i++) {
        const spec *t = &s->v[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        size_t bytes = numel(t) * (size_t)t->es;
        json_object_set_new(hdr, t->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", t->es == 4 ? "F32" : "BF16",
                                      "shape", shape, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + bytes)));
        off += bytes;
    }
    json_object_set_new(hdr, "__metadata__",
                        json_pack("{s:s,s:s}", "format", "pt", "generator", GENERATOR));
    char *h = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    unsigned char *buf = malloc((size_t)CHUNK * 4);
    FILE *f = h && buf ? fopen(path, "wb") : NULL;
    bool ok = f != NULL;
    size_t hl = h ? strlen(h) : 0, padded = (hl + 7) / 8 * 8;
    uint64_t le = padded; /* little-endian host */
    ok = ok && fwrite(&le, 8, 1, f) == 1 && fwrite(h, 1, hl, f) == hl;
    for (size_t i = hl; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    rng r = {seed ? seed : 1};
    for (size_t i = 0; ok && i < s->n; i++) {
        const spec *t = &s->v[i];
        size_t n = numel(t);
        for (size_t done = 0; ok && done < n; done += CHUNK) {
            size_t k = n - done < CHUNK ? n - done : CHUNK;
            for (size_t j = 0; j < k; j++) {
                float w = weight(&r, t->name);
                if (t->es == 4) {
                    memcpy(buf + 4 * j, &w, 4);
                } else {
                    uint16_t b = to_bf16(w);
                    memcpy(buf + 2 * j, &b, 2);
                }
            }
            ok = fwrite(buf, (size_t)t->es, k, f) == k;
        }
    }
    if (f && fclose(f))
        ok = false;
    free(h);
    free(buf);
    return ok ? VW_OK : VW_FAIL(err, VW_EIO, "write_failed", "%s: %s", path, strerror(errno));
}

static vw_status copy_file(const char *src, const char *dst, vw_err *err) {
    FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
    char b[65536];
    size_t k;
    bool ok = in && out;
    while (ok && (k = fread(b, 1, sizeof b, in)) > 0)
        ok = fwrite(b, 1, k, out) == k;
    if (in)
        fclose(in);
    if (out && fclose(out))
        ok = false;
    return ok ? VW_OK
              : VW_FAIL(err, VW_EIO, "copy_failed", "%s -> %s: %s", src, dst, strerror(errno));
}

static void set_ints(json_t *bc, const char *const *keys, const int *values, size_t n) {
    for (size_t i = 0; i < n; i++)
        json_object_set_new(bc, keys[i], json_integer(values[i]));
}

/* The shape's backbone_config, on top of the template's (its tokenizer-bound
 * keys: vocab_size, token ids, rope parameters' shape stay unless the shape
 * sets them). */
static vw_status backbone_config(json_t *bc, const char *shape, vw_err *err) {
    static const char *const keys[] = {"full_attention_interval",
                                       "head_dim",
                                       "hidden_size",
                                       "intermediate_size",
                                       "linear_conv_kernel_dim",
                                       "linear_key_head_dim",
                                       "linear_num_key_heads",
                                       "linear_num_value_heads",
                                       "linear_value_head_dim",
                                       "num_attention_heads",
                                       "num_key_value_heads",
                                       "num_hidden_layers"};
    static const int b08[] = {4, 256, 1024, 3584, 4, 128, 16, 16, 128, 8, 2, 24};
    static const int ceil[] = {4, 32, 1024, 64, 4, 32, 1, 1, 32, 1, 1, 4};
    const int *v = !strcmp(shape, "0.8b") ? b08 : !strcmp(shape, "ceiling") ? ceil : NULL;
    if (!v)
        return VW_FAIL(err, VW_EINVAL, "bad_shape",
                       "random bundle: unknown shape '%s' (0.8b, ceiling)", shape);
    set_ints(bc, keys, v, sizeof keys / sizeof *keys);
    int layers = v[11];
    json_t *lt = json_array();
    for (int i = 0; i < layers; i++)
        json_array_append_new(lt, json_string((i + 1) % 4 ? "linear_attention" : "full_attention"));
    json_object_set_new(bc, "layer_types", lt);
    json_t *rope = json_object_get(bc, "rope_parameters");
    if (!strcmp(shape, "0.8b")) {
        json_object_set_new(bc, "vocab_size", json_integer(248320));
        if (rope) /* rotary width 64 over the three sections */
            json_object_set_new(rope, "mrope_section", json_pack("[i,i,i]", 11, 11, 10));
    } else if (rope) { /* rotary width 8 (head_dim 32 x 0.25) */
        json_object_set_new(rope, "mrope_section", json_pack("[i,i,i]", 2, 1, 1));
    }
    return VW_OK;
}

vw_status vw_random_shape_config(const char *shape, vw_qwen35_config *c, vw_err *err) {
    json_t *bc = json_pack("{s:i,s:s,s:b,s:b,s:f,s:{s:s,s:f,s:f}}", "vocab_size", 248320,
                           "hidden_act", "silu", "attention_bias", 0, "attn_output_gate", 1,
                           "rms_norm_eps", 1e-6, "rope_parameters", "rope_type", "default",
                           "rope_theta", 1e7, "partial_rotary_factor", 0.25);
    if (!bc)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "shape config");
    vw_status st = backbone_config(bc, shape, err);
    if (st == VW_OK)
        st = vw_qwen35_config_parse(bc, c, err);
    json_decref(bc);
    return st;
}

static bool manifest_matches(const char *dir, const char *shape, uint64_t seed) {
    char p[4096];
    snprintf(p, sizeof p, "%s/MODEL_MANIFEST.json", dir);
    json_t *m = json_load_file(p, 0, NULL);
    const json_t *g = json_object_get(m, "generator");
    const char *recipe = json_string_value(json_object_get(g, "recipe"));
    const char *sh = json_string_value(json_object_get(g, "shape"));
    bool same = recipe && sh && !strcmp(recipe, GENERATOR) && !strcmp(sh, shape) &&
                json_integer_value(json_object_get(g, "seed")) == (json_int_t)seed;
    json_decref(m);
    return same;
}

vw_status vw_random_bundle_write(const char *dir, const char *shape, const char *tmpl,
                                 uint64_t seed, bool *reused, vw_err *err) {
    char p[4096], q[4096];
    if (reused)
        *reused = false;
    if (manifest_matches(dir, shape, seed)) {
        if (reused)
            *reused = true;
        return VW_OK;
    }
    if (mkdir(dir, 0755) && errno != EEXIST)
        return VW_FAIL(err, VW_EIO, "mkdir_failed", "%s: %s", dir, strerror(errno));
    snprintf(p, sizeof p, "%s/config.json", tmpl);
    json_t *cfg = json_load_file(p, 0, NULL);
    json_t *bc = json_object_get(cfg, "backbone_config");
    if (!json_is_object(bc)) {
        json_decref(cfg);
        return VW_FAIL(err, VW_EINVAL, "bad_template", "%s: no backbone_config", p);
    }
    vw_status st = backbone_config(bc, shape, err);
    vw_qwen35_config c;
    if (st == VW_OK)
        st = vw_qwen35_config_parse(bc, &c, err);
    const json_t *sh = json_object_get(cfg, "span_head");
    int64_t d = json_integer_value(json_object_get(sh, "d"));
    int64_t slots = json_integer_value(json_object_get(sh, "slots"));
    if (st == VW_OK && (d <= 0 || slots <= 0))
        st = VW_FAIL(err, VW_EINVAL, "bad_template", "%s: span_head.d/slots missing", p);
    char name[160];
    snprintf(name, sizeof name, "vela-worker/Vela-2.0-random-%s", shape);
    json_object_set_new(cfg, "model_name", json_string(name));
    snprintf(q, sizeof q, "%s/config.json", dir);
    if (st == VW_OK && json_dump_file(cfg, q, JSON_INDENT(2) | JSON_SORT_KEYS))
        st = VW_FAIL(err, VW_EIO, "write_failed", "%s", q);
    json_decref(cfg);
    snprintf(p, sizeof p, "%s/broad_head.safetensors", tmpl);
    struct stat sb;
    bool broad = stat(p, &sb) == 0;
    specs model = {0}, head = {0};
    if (st == VW_OK && !(backbone_specs(&c, &model) && candidate_specs(c.hidden, d, &model) &&
                         span_specs("span2.", c.hidden, d, slots, &model) &&
                         (!broad || span_specs("span_broad.", c.hidden, d, slots, &head))))
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tensor list");
    snprintf(q, sizeof q, "%s/model.safetensors", dir);
    if (st == VW_OK)
        st = write_safetensors(q, &model, seed, err);
    snprintf(q, sizeof q, "%s/broad_head.safetensors", dir);
    if (st == VW_OK && broad)
        st = write_safetensors(q, &head, seed ^ 0x9e3779b97f4a7c15ull, err);
    free(model.v);
    free(head.v);
    const char *copies[] = {"tokenizer.json", "calibration.json"};
    for (int i = 0; st == VW_OK && i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpl, copies[i]);
        snprintf(q, sizeof q, "%s/%s", dir, copies[i]);
        st = copy_file(p, q, err);
    }
    const char *files[] = {"config.json", "tokenizer.json", "calibration.json", "model.safetensors",
                           "broad_head.safetensors"};
    json_t *sums = json_object();
    for (int i = 0; st == VW_OK && i < (broad ? 5 : 4); i++) {
        char hex[VW_SHA256_HEX];
        snprintf(q, sizeof q, "%s/%s", dir, files[i]);
        st = vw_sha256_file(q, hex, err);
        json_object_set_new(sums, files[i], json_string(hex));
    }
    json_t *man = json_pack("{s:o,s:s,s:{s:s,s:s,s:I,s:s}}", "files_sha256", sums, "format",
                            "vela2-decoder-release/1", "generator", "note",
                            "random weights for benchmarks; not a trained model", "recipe",
                            GENERATOR, "seed", (json_int_t)seed, "shape", shape);
    snprintf(q, sizeof q, "%s/MODEL_MANIFEST.json", dir);
    if (st == VW_OK && json_dump_file(man, q, JSON_INDENT(2) | JSON_SORT_KEYS))
        st = VW_FAIL(err, VW_EIO, "write_failed", "%s", q);
    json_decref(man);
    return st;
}
