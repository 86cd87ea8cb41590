/* random_bundle.c — a seeded random Vela 2.0 package (see random_bundle.h).
 * Owns the shape table and the package layout; never reads a bundle back
 * (vw_bundle_open does). */
#include "random_bundle.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qwen35_config.h"
#include "util/reserve.h"
#include "util/sha256.h"
#include "util/thread_name.h"

#define GENERATOR "core/model/random_bundle.c"
/* Bumped whenever the bytes written for a (shape, seed) change, so a package
 * written by an older generator is not reused (2: per-chunk streams). */
#define GENERATOR_VERSION 2

/* ---- shapes --------------------------------------------------------------- */

/* The backbone_config keys a shape sets, in the order of shape_def.v. */
static const char *const shape_keys[] = {"full_attention_interval",
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
enum { N_SHAPE_KEYS = sizeof shape_keys / sizeof *shape_keys };

typedef struct shape_def {
    const char *name;
    int v[N_SHAPE_KEYS];
    int vocab;    /* embedding rows; 0: the template's */
    int mrope[3]; /* rope_parameters.mrope_section: rotary width / 2 in three parts */
} shape_def;

/* docs/spec/backbone.md §1.1 (0.8B) and §1.2 (4B, 9B); the 2B is left out:
 * its intermediate size has no primary source. */
#define Q08 4, 256, 1024, 3584, 4, 128, 16, 16, 128, 8, 2
#define Q4 4, 256, 2560, 9216, 4, 128, 16, 32, 128, 16, 4
#define Q9 4, 256, 4096, 12288, 4, 128, 16, 32, 128, 16, 4
static const shape_def shapes[] = {
    {"0.8b", {Q08, 24}, 248320, {11, 11, 10}},
    {"4b", {Q4, 32}, 248320, {11, 11, 10}},
    {"9b", {Q9, 32}, 248320, {11, 11, 10}},
    {"4b-slice", {Q4, VW_RANDOM_SLICE_LAYERS}, 0, {11, 11, 10}},
    {"9b-slice", {Q9, VW_RANDOM_SLICE_LAYERS}, 0, {11, 11, 10}},
    {"ceiling", {4, 32, 1024, 64, 4, 32, 1, 1, 32, 1, 1, 4}, 0, {2, 1, 1}},
};
#undef Q08
#undef Q4
#undef Q9

static const shape_def *find_shape(const char *name) {
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        if (!strcmp(shapes[i].name, name))
            return &shapes[i];
    return NULL;
}

/* ---- weights -------------------------------------------------------------- */

/* How a tensor's values are drawn (HF-like ranges): matrices U(±0.035) (std
 * 0.02), zero-centred backbone norms 0 ± 0.1, plain norms (the GDN output norm
 * and the heads' LayerNorms) 1 ± 0.1, biases 0 ± 0.05, conv taps U(±0.5),
 * A_log = log U(1, 16), dt_bias = softplus^-1 of a log-uniform dt in
 * [1e-3, 1e-1]. */
typedef enum wkind { W_MATRIX, W_A_LOG, W_DT_BIAS, W_CONV, W_PLAIN_NORM, W_NORM, W_BIAS } wkind;

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static wkind kind_of(const char *name) {
    if (ends_with(name, "A_log"))
        return W_A_LOG;
    if (ends_with(name, "dt_bias"))
        return W_DT_BIAS;
    if (ends_with(name, "conv1d.weight"))
        return W_CONV;
    bool head = strncmp(name, "backbone.", 9) != 0;
    if (ends_with(name, "linear_attn.norm.weight") || (head && ends_with(name, "norm.weight")) ||
        (head && (ends_with(name, ".ln.weight") || ends_with(name, ".wn.weight"))))
        return W_PLAIN_NORM;
    if (ends_with(name, "norm.weight"))
        return W_NORM;
    if (ends_with(name, "bias"))
        return W_BIAS;
    return W_MATRIX;
}

static float weight(wkind k, double u) {
    switch (k) {
    case W_A_LOG:
        return (float)log(1.0 + 15.0 * u);
    case W_DT_BIAS: {
        double dt = exp(log(1e-3) + u * (log(1e-1) - log(1e-3)));
        return (float)(dt + log(-expm1(-dt)));
    }
    case W_CONV:
        return (float)(u - 0.5);
    case W_PLAIN_NORM:
        return (float)(1.0 + 0.2 * (u - 0.5));
    case W_NORM:
        return (float)(0.2 * (u - 0.5));
    case W_BIAS:
        return (float)(0.1 * (u - 0.5));
    case W_MATRIX:
        break;
    }
    return (float)(0.07 * (u - 0.5));
}

static uint16_t to_bf16(float x) { /* round to nearest even */
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* ---- the tensor list ------------------------------------------------------ */

/* One tensor to write: full name, dtype size (2 BF16, 4 F32), shape, and its
 * byte offset in the data section. */
typedef struct spec {
    char name[128];
    int es, ndim;
    int64_t shape[3];
    size_t off;
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

/* ---- writing a safetensors file (every core generating) ------------------- */

/* A tensor's values come in chunks of CHUNK elements, each drawn from its own
 * xorshift64* stream seeded by (seed, tensor name, chunk index): the bytes do
 * not depend on how many threads write them, and chunks are written in any
 * order (pwrite at their offset). */
enum { CHUNK = 1 << 20, MAX_WRITERS = 16 };

typedef struct job {
    const specs *s;
    uint64_t seed;
    int fd;
    size_t data_start;
    size_t n_chunks, *first; /* first[t]: index of tensor t's first chunk */
    atomic_size_t next;
    atomic_int failed_errno;
} job;

static void write_chunk(job *j, unsigned char *buf, size_t c) {
    size_t t = 0, lo = 0, hi = j->s->n;
    while (lo < hi) { /* the last tensor whose first chunk is <= c */
        size_t mid = (lo + hi) / 2;
        if (j->first[mid] <= c)
            t = mid, lo = mid + 1;
        else
            hi = mid;
    }
    const spec *sp = &j->s->v[t];
    size_t ci = c - j->first[t], start = ci * (size_t)CHUNK, n = numel(sp);
    size_t k = n - start < (size_t)CHUNK ? n - start : (size_t)CHUNK;
    wkind kind = kind_of(sp->name);
    uint64_t r = splitmix(j->seed ^ splitmix(fnv1a(sp->name) ^ splitmix(ci)));
    r = r ? r : 1;
    for (size_t i = 0; i < k; i++) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        double u = (double)((r * 2685821657736338717ull) >> 11) / 9007199254740992.0;
        float w = weight(kind, u);
        if (sp->es == 4) {
            memcpy(buf + 4 * i, &w, 4);
        } else {
            uint16_t b = to_bf16(w);
            memcpy(buf + 2 * i, &b, 2);
        }
    }
    size_t bytes = k * (size_t)sp->es, done = 0;
    off_t at = (off_t)(j->data_start + sp->off + start * (size_t)sp->es);
    while (done < bytes) {
        ssize_t w = pwrite(j->fd, buf + done, bytes - done, at + (off_t)done);
        if (w <= 0) {
            atomic_store(&j->failed_errno, w < 0 ? errno : EIO);
            return;
        }
        done += (size_t)w;
    }
}

static void *writer(void *arg) {
    job *j = arg;
    unsigned char *buf = malloc((size_t)CHUNK * 4);
    if (!buf) {
        atomic_store(&j->failed_errno, ENOMEM);
        return NULL;
    }
    for (size_t c;
         !atomic_load(&j->failed_errno) && (c = atomic_fetch_add(&j->next, 1)) < j->n_chunks;)
        write_chunk(j, buf, c);
    free(buf);
    return NULL;
}

/* The header JSON (data offsets filled into s as well), malloc'd. */
static char *st_header(specs *s) {
    json_t *hdr = json_object();
    size_t off = 0;
    for (size_t i = 0; hdr && i < s->n; i++) {
        spec *t = &s->v[i];
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++)
            json_array_append_new(shape, json_integer(t->shape[d]));
        size_t bytes = numel(t) * (size_t)t->es;
        t->off = off;
        json_object_set_new(hdr, t->name,
                            json_pack("{s:s,s:o,s:[I,I]}", "dtype", t->es == 4 ? "F32" : "BF16",
                                      "shape", shape, "data_offsets", (json_int_t)off,
                                      (json_int_t)(off + bytes)));
        off += bytes;
    }
    json_object_set_new(hdr, "__metadata__",
                        json_pack("{s:s,s:s}", "format", "pt", "generator", GENERATOR));
    char *h = hdr ? json_dumps(hdr, JSON_COMPACT) : NULL;
    json_decref(hdr);
    return h;
}

static vw_status write_safetensors(const char *path, specs *s, uint64_t seed, vw_err *err) {
    char *h = st_header(s);
    job j = {.s = s, .seed = seed, .fd = -1};
    atomic_init(&j.next, 0);
    atomic_init(&j.failed_errno, 0);
    j.first = malloc((s->n + 1) * sizeof *j.first);
    int e = h && j.first ? 0 : ENOMEM;
    for (size_t i = 0; !e && i < s->n; i++)
        j.first[i] = j.n_chunks, j.n_chunks += (numel(&s->v[i]) + CHUNK - 1) / CHUNK;
    size_t hl = h ? strlen(h) : 0, padded = (hl + 7) / 8 * 8;
    if (!e && (j.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        e = errno;
    char *head = e ? NULL : malloc(8 + padded);
    if (!e && !head)
        e = ENOMEM;
    if (!e) {
        uint64_t le = padded; /* little-endian host */
        memcpy(head, &le, 8);
        memcpy(head + 8, h, hl);
        memset(head + 8 + hl, ' ', padded - hl);
        if (pwrite(j.fd, head, 8 + padded, 0) != (ssize_t)(8 + padded))
            e = errno ? errno : EIO;
        j.data_start = 8 + padded;
    }
    if (!e) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int n = cores < 1 ? 1 : cores > MAX_WRITERS ? MAX_WRITERS : (int)cores, started = 0;
        pthread_t th[MAX_WRITERS];
        for (int i = 1; i < n; i++)
            if (pthread_create(&th[started], NULL, writer, &j) == 0)
                vw_thread_name(th[started++], "vw-bundle", i);
        writer(&j); /* this thread writes too: one thread is enough if none started */
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        e = atomic_load(&j.failed_errno);
    }
    if (j.fd >= 0 && close(j.fd) && !e)
        e = errno;
    free(head);
    free(j.first);
    free(h);
    return e ? VW_FAIL(err, VW_EIO, "write_failed", "%s: %s", path, strerror(e)) : VW_OK;
}

/* ---- the package ---------------------------------------------------------- */

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

static vw_status unknown_shape(const char *shape, vw_err *err) {
    return VW_FAIL(err, VW_EINVAL, "bad_shape", "random bundle: unknown shape '%s' (%s)", shape,
                   VW_RANDOM_SHAPES);
}

/* The shape's backbone_config, on top of the template's (its tokenizer-bound
 * keys: vocab_size, token ids stay unless the shape sets them). Layers
 * alternate as in Qwen3.5 (every 4th is full attention); a slice's last layer
 * is full attention too, so every slice has both token mixers. */
static vw_status backbone_config(json_t *bc, const char *shape, vw_err *err) {
    const shape_def *sd = find_shape(shape);
    if (!sd)
        return unknown_shape(shape, err);
    for (size_t i = 0; i < N_SHAPE_KEYS; i++)
        json_object_set_new(bc, shape_keys[i], json_integer(sd->v[i]));
    int layers = sd->v[N_SHAPE_KEYS - 1];
    json_t *lt = json_array();
    for (int i = 0; i < layers; i++)
        json_array_append_new(
            lt, json_string((i + 1) % 4 && i + 1 < layers ? "linear_attention" : "full_attention"));
    json_object_set_new(bc, "layer_types", lt);
    if (sd->vocab)
        json_object_set_new(bc, "vocab_size", json_integer(sd->vocab));
    json_t *rope = json_object_get(bc, "rope_parameters");
    if (rope)
        json_object_set_new(rope, "mrope_section",
                            json_pack("[i,i,i]", sd->mrope[0], sd->mrope[1], sd->mrope[2]));
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
                json_integer_value(json_object_get(g, "seed")) == (json_int_t)seed &&
                json_integer_value(json_object_get(g, "version")) == GENERATOR_VERSION;
    json_decref(m);
    return same;
}

static const char *const files[] = {"config.json",         "tokenizer.json",
                                    "calibration.json",    "model.safetensors",
                                    "MODEL_MANIFEST.json", "broad_head.safetensors"};
enum { N_FILES = sizeof files / sizeof *files };

/* Removes a package this writer wrote (its files, then the directory). A
 * directory holding any other name is left untouched: -1, errno ENOTEMPTY. */
static int remove_package(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    bool foreign = false;
    for (struct dirent *e; !foreign && (e = readdir(d));) {
        bool known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        for (size_t i = 0; !known && i < N_FILES; i++)
            known = !strcmp(e->d_name, files[i]);
        foreign = !known;
    }
    closedir(d);
    if (foreign) {
        errno = ENOTEMPTY;
        return -1;
    }
    char p[4096];
    for (size_t i = 0; i < N_FILES; i++)
        if (snprintf(p, sizeof p, "%s/%s", dir, files[i]) < (int)sizeof p)
            unlink(p);
    return rmdir(dir);
}

/* Writes every file of the package into dir (an empty directory). */
static vw_status write_package(const char *dir, const char *shape, const char *tmpl, uint64_t seed,
                               vw_err *err) {
    char p[4096], q[4096];
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
    for (int i = 1; st == VW_OK && i < 3; i++) { /* tokenizer.json, calibration.json */
        snprintf(p, sizeof p, "%s/%s", tmpl, files[i]);
        snprintf(q, sizeof q, "%s/%s", dir, files[i]);
        st = copy_file(p, q, err);
    }
    json_t *sums = json_object();
    for (size_t i = 0; st == VW_OK && i < N_FILES; i++) {
        char hex[VW_SHA256_HEX];
        if (!strcmp(files[i], "MODEL_MANIFEST.json") ||
            (!broad && !strcmp(files[i], "broad_head.safetensors")))
            continue;
        snprintf(q, sizeof q, "%s/%s", dir, files[i]);
        st = vw_sha256_file(q, hex, err);
        json_object_set_new(sums, files[i], json_string(hex));
    }
    json_t *man =
        json_pack("{s:o,s:s,s:{s:s,s:s,s:I,s:s,s:i}}", "files_sha256", sums, "format",
                  "vela2-decoder-release/1", "generator", "note",
                  "random weights for benchmarks; not a trained model", "recipe", GENERATOR, "seed",
                  (json_int_t)seed, "shape", shape, "version", GENERATOR_VERSION);
    snprintf(q, sizeof q, "%s/MODEL_MANIFEST.json", dir);
    if (st == VW_OK && json_dump_file(man, q, JSON_INDENT(2) | JSON_SORT_KEYS))
        st = VW_FAIL(err, VW_EIO, "write_failed", "%s", q);
    json_decref(man);
    return st;
}

vw_status vw_random_bundle_write(const char *dir, const char *shape, const char *tmpl,
                                 uint64_t seed, bool *reused, vw_err *err) {
    if (reused)
        *reused = false;
    if (!find_shape(shape))
        return unknown_shape(shape, err);
    if (manifest_matches(dir, shape, seed)) {
        if (reused)
            *reused = true;
        return VW_OK;
    }
    /* Written beside dir, then renamed: a reader (or a concurrent writer of
     * the same package) never sees a half-written package. */
    char tmp[4096];
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') /* "out/" names the directory out, not a child */
        n--;
    if (n > sizeof tmp - 16)
        return VW_FAIL(err, VW_EINVAL, "bad_path", "random bundle: path too long: %s", dir);
    memcpy(tmp, dir, n);
    memcpy(tmp + n, ".tmp-XXXXXX", 12);
    if (!mkdtemp(tmp) || chmod(tmp, 0755))
        return VW_FAIL(err, VW_EIO, "mkdir_failed", "%s: %s", tmp, strerror(errno));
    vw_status st = write_package(tmp, shape, tmpl, seed, err);
    struct stat sb;
    if (st == VW_OK && stat(dir, &sb) == 0 && !manifest_matches(dir, shape, seed) &&
        remove_package(dir))
        st = VW_FAIL(err, VW_EIO, "write_failed",
                     "%s holds another package or other files (%s); not replaced", dir,
                     strerror(errno));
    if (st == VW_OK && rename(tmp, dir)) {
        if (manifest_matches(dir, shape, seed)) { /* a concurrent writer finished first */
            if (reused)
                *reused = true;
        } else {
            st = VW_FAIL(err, VW_EIO, "write_failed", "rename %s -> %s: %s", tmp, dir,
                         strerror(errno));
        }
    }
    if (stat(tmp, &sb) == 0)
        remove_package(tmp);
    return st;
}
