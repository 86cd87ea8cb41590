/* bundle.c — opens, verifies and indexes a Vela 2.0 decoder package (see
 * bundle.h). Owns the file mappings, parsed JSON and the tensor index; never
 * converts backbone weights (the backends do that) and never runs a model. */
#include "bundle.h"
#include "bundle_files.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sbuf.h"
#include "util/sha256.h"

typedef struct entry {
    const char *name;
    const vw_st_tensor *t;
    const vw_st_file *file;
    int backbone; /* matched an expected backbone tensor */
} entry;

struct vw_bundle {
    char *dir; /* realpath */
    json_t *config, *calibration;
    char config_sha256[65];   /* verified digest of config.json (hex) */
    char manifest_sha256[65]; /* digest of MODEL_MANIFEST.json's bytes as read (hex) */
    char content_sha256[65];  /* the package's identity (content_digest) */
    char *tok_json;
    char *config_json, *cal_json; /* verified bytes of config.json, calibration.json */
    size_t config_len, cal_len;
    size_t tok_len;
    vw_qwen35_config bb;
    const char *prefix;
    int64_t max_length;
    vw_st_file **shards;
    size_t n_shards;
    vw_st_file *broad;
    entry *idx; /* sorted by name */
    size_t n_idx;
};

static const char *const prefixes[] = {"backbone.", "model.language_model.", "model.", ""};

/* Files the bundle keeps in memory: they are hashed from these bytes, the
 * bytes that are then used, never read again from disk. */
typedef struct mem_file {
    const char *name;
    const char *buf;
    size_t len;
} mem_file;
enum { N_MEM = 3 };

/* Hashes one file (its kept bytes, if it is one of mem) and compares it with
 * each list that names it. must_be_listed: 0 no, 1 in either list, 2 in the
 * manifest (anchored: SHA256SUMS is not covered by the anchor). */
static vw_status verify_file(const char *dir, const char *name, const mem_file *mem,
                             const json_t *man, const json_t *sums, int must_be_listed,
                             vw_err *err) {
    const json_t *want[2] = {json_object_get(man, name), json_object_get(sums, name)};
    const char *src[2] = {MANIFEST, SUMS};
    if (must_be_listed && !want[0] && !want[1])
        return VW_FAIL(err, VW_EINTEGRITY, "unlisted_file",
                       "bundle file %s has no digest in " MANIFEST " or " SUMS, name);
    if (must_be_listed == 2 && !want[0])
        return VW_FAIL(err, VW_EINTEGRITY, "unlisted_file",
                       "bundle file %s has no digest in the anchored " MANIFEST " (" SUMS
                       " alone is not anchored)",
                       name);
    char *path = NULL, hex[VW_SHA256_HEX];
    const mem_file *m = NULL;
    for (int i = 0; i < N_MEM && !m; i++)
        if (!strcmp(mem[i].name, name))
            m = &mem[i];
    vw_status st = m ? vw_sha256_hex(m->buf, m->len, hex, err)
                     : vw_bundle_files_resolve(dir, name, &path, err);
    if (st == VW_OK && !m)
        st = vw_sha256_file(path, hex, err);
    for (int i = 0; i < 2 && st == VW_OK; i++) {
        if (!want[i])
            continue;
        if (!json_is_string(want[i]) || strcasecmp(json_string_value(want[i]), hex))
            st = VW_FAIL(err, VW_EINTEGRITY, "checksum_mismatch",
                         "bundle file %s: SHA-256 %s does not match %s (%s)", name, hex, src[i],
                         json_is_string(want[i]) ? json_string_value(want[i]) : "not a string");
    }
    free(path);
    return st;
}

/* The weight shard names: the index's weight_map values (first-seen order),
 * or model.safetensors. Borrowed from index; *names is malloc'd. */
static vw_status weight_files(const json_t *index, const char ***names, size_t *n, vw_err *err) {
    *names = NULL;
    *n = 0;
    if (!index) {
        if (!(*names = malloc(sizeof **names)))
            return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "weight files");
        (*names)[(*n)++] = "model.safetensors";
        return VW_OK;
    }
    const json_t *map = json_object_get(index, "weight_map");
    if (!json_is_object(map) || !json_object_size(map))
        return VW_FAIL(err, VW_EINVAL, "bad_index", INDEX " has no weight_map");
    if (!(*names = malloc(json_object_size(map) * sizeof **names)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "weight files");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)map, key, v) {
        if (!json_is_string(v))
            return VW_FAIL(err, VW_EINVAL, "bad_index", INDEX ": '%s' maps to a non-string", key);
        size_t i = 0;
        while (i < *n && strcmp((*names)[i], json_string_value(v)))
            i++;
        if (i == *n)
            (*names)[(*n)++] = json_string_value(v);
    }
    return VW_OK;
}

/* Verifies every file read plus every file a digest list names. */
/* Whether name is one of the loaded files or an earlier key of the lists:
 * verify_file checks a file against both lists at once, so each file is
 * hashed once (a weight shard of a 9B bundle is gigabytes). */
static bool verified_before(const char *name, const char **loaded, size_t n_loaded,
                            const json_t *man_files, int l) {
    for (size_t i = 0; i < n_loaded; i++)
        if (!strcmp(loaded[i], name))
            return true;
    return l == 1 && json_object_get(man_files, name) != NULL;
}

static vw_status verify_all(const char *dir, const char **loaded, size_t n_loaded,
                            const mem_file *mem, const json_t *man_files, const json_t *sums,
                            int anchored, vw_err *err) {
    vw_status st = VW_OK;
    for (size_t i = 0; i < n_loaded && st == VW_OK; i++)
        st = verify_file(dir, loaded[i], mem, man_files, sums, anchored ? 2 : 1, err);
    const json_t *lists[2] = {man_files, sums};
    for (int l = 0; l < 2 && st == VW_OK; l++) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)lists[l], key, v) {
            if (!strcmp(key, MANIFEST) && l == 0)
                continue; /* a manifest cannot hold its own digest */
            if (verified_before(key, loaded, n_loaded, man_files, l))
                continue;
            st = verify_file(dir, key, mem, man_files, sums, 0, err);
            if (st != VW_OK)
                break;
        }
    }
    return st;
}

/* ---- tensor index -------------------------------------------------------- */

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static entry *lookup(const vw_bundle *b, const char *name) {
    entry key = {.name = name};
    return bsearch(&key, b->idx, b->n_idx, sizeof key, cmp_entry);
}

static int has_suffix_in(const char *s, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(s, *list))
            return 1;
    return 0;
}

/* Head tensor names of docs/spec/answers.md §1.1. */
static int is_head_name(const char *n, int broad_file) {
    static const char *const cand[] = {"candidate_norm.weight",
                                       "candidate_norm.bias",
                                       "query_norm.weight",
                                       "query_norm.bias",
                                       "key.weight",
                                       "query.weight",
                                       "candidate_mlp.weight",
                                       "candidate_mlp.bias",
                                       "query_mlp.weight",
                                       "scalar.weight",
                                       NULL};
    static const char *const span[] = {
        "wn.weight", "wn.bias",  "ln.weight", "ln.bias",  "slot.weight", "K.weight", "Q.weight",
        "N.weight",  "M.weight", "M.bias",    "v.weight", "o.weight",    "o.bias",   NULL};
    if (broad_file)
        return !strncmp(n, "span_broad.", 11) && has_suffix_in(n + 11, span);
    if (!strncmp(n, "head.", 5))
        return has_suffix_in(n + 5, cand);
    if (!strncmp(n, "span2.", 6))
        return has_suffix_in(n + 6, span);
    return !strcmp(n, "set_bias");
}

static int is_ignored_name(const char *n) {
    return !strncmp(n, "mtp.", 4) || !strncmp(n, "model.visual.", 13) ||
           !strcmp(n, "lm_head.weight");
}

static vw_status add_file(vw_bundle *b, const vw_st_file *f, vw_err *err) {
    size_t n = vw_st_count(f);
    entry *grown = realloc(b->idx, (b->n_idx + n + 1) * sizeof *grown);
    if (!grown)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tensor index");
    b->idx = grown;
    for (size_t i = 0; i < n; i++) {
        const vw_st_tensor *t = vw_st_at(f, i);
        b->idx[b->n_idx++] = (entry){.name = t->name, .t = t, .file = f};
    }
    return VW_OK;
}

/* Every weight_map entry is in its shard and every shard tensor is mapped. */
static vw_status check_index(const vw_bundle *b, const json_t *index, const char **shards,
                             vw_err *err) {
    const json_t *map = json_object_get(index, "weight_map");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)map, key, v) {
        const entry *e = lookup(b, key);
        size_t j = 0;
        while (j < b->n_shards && strcmp(shards[j], json_string_value(v)))
            j++;
        if (!e || j == b->n_shards || e->file != b->shards[j])
            return VW_FAIL(err, VW_EINVAL, "missing_tensor",
                           INDEX " maps tensor '%s' to %s, which does not hold it", key,
                           json_string_value(v));
    }
    for (size_t i = 0; i < b->n_idx; i++)
        if (b->idx[i].file != b->broad && !json_object_get(map, b->idx[i].name))
            return VW_FAIL(err, VW_EINVAL, "unknown_tensor",
                           "tensor '%s' in %s is not listed in " INDEX, b->idx[i].name,
                           vw_st_path(b->idx[i].file));
    return VW_OK;
}

static vw_status check_spec(const vw_bundle *b, const vw_qwen35_tensor_spec *s, size_t missing,
                            vw_err *err) {
    char full[160];
    snprintf(full, sizeof full, "%s%s", b->prefix, s->name);
    entry *e = lookup(b, full);
    if (!e || e->file == b->broad)
        return VW_FAIL(err, VW_EINVAL, "missing_tensor",
                       "backbone tensor '%s' is missing (%zu expected tensors missing in all)",
                       full, missing);
    const vw_st_tensor *t = e->t;
    if (t->dtype != VW_DT_F32 && t->dtype != VW_DT_BF16 && t->dtype != VW_DT_F16)
        return VW_FAIL(err, VW_EINVAL, "bad_dtype",
                       "backbone tensor '%s' is %s; expected F32, BF16 or F16", full,
                       vw_dtype_name(t->dtype));
    int ok = t->ndim == s->ndim;
    for (int d = 0; ok && d < s->ndim; d++)
        ok = t->shape[d] == s->shape[d];
    if (!ok) {
        char got[96] = "", exp[96] = "";
        for (int d = 0; d < t->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "",
                     (long long)t->shape[d]);
        for (int d = 0; d < s->ndim; d++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", d ? "," : "",
                     (long long)s->shape[d]);
        return VW_FAIL(err, VW_EINVAL, "bad_shape",
                       "backbone tensor '%s' has shape [%s]; the config implies [%s]", full, got,
                       exp);
    }
    e->backbone = 1;
    return VW_OK;
}

/* Matches the index against the tensors the config implies. */
static vw_status check_tensors(vw_bundle *b, vw_err *err) {
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !b->prefix; i++) {
        char probe[64];
        snprintf(probe, sizeof probe, "%sembed_tokens.weight", prefixes[i]);
        if (lookup(b, probe))
            b->prefix = prefixes[i];
    }
    if (!b->prefix)
        return VW_FAIL(err, VW_EINVAL, "missing_tensor",
                       "no embed_tokens.weight under backbone., model.language_model., model. or "
                       "no prefix");
    size_t n = vw_qwen35_tensor_specs(&b->bb, NULL, 0), missing = 0;
    vw_qwen35_tensor_spec *specs = malloc(n * sizeof *specs);
    if (!specs)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tensor specs");
    vw_qwen35_tensor_specs(&b->bb, specs, n);
    char full[160];
    for (size_t i = 0; i < n; i++) {
        snprintf(full, sizeof full, "%s%s", b->prefix, specs[i].name);
        missing += !lookup(b, full);
    }
    vw_status st = VW_OK;
    for (size_t i = 0; i < n && st == VW_OK; i++)
        st = check_spec(b, &specs[i], missing, err);
    free(specs);
    for (size_t i = 0; i < b->n_idx && st == VW_OK; i++) {
        const entry *e = &b->idx[i];
        int broad = e->file == b->broad;
        if (e->backbone || is_head_name(e->name, broad) || (!broad && is_ignored_name(e->name)))
            continue;
        st = VW_FAIL(err, VW_EINVAL, "unknown_tensor",
                     "tensor '%s' in %s is neither a %s tensor the config implies nor a head "
                     "tensor",
                     e->name, vw_st_path(e->file), broad ? "broad-head" : "backbone");
    }
    return st;
}

static vw_status open_weights(vw_bundle *b, const char **shards, size_t n, int has_broad,
                              const json_t *index, vw_err *err) {
    if (!(b->shards = calloc(n, sizeof *b->shards)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "shards");
    vw_status st = VW_OK;
    char *path = NULL;
    for (size_t i = 0; i < n && st == VW_OK; i++) {
        st = vw_bundle_files_resolve(b->dir, shards[i], &path, err);
        if (st == VW_OK)
            st = vw_st_open(path, &b->shards[i], err);
        if (st == VW_OK)
            b->n_shards++, st = add_file(b, b->shards[i], err);
        free(path);
        path = NULL;
    }
    if (st == VW_OK && has_broad) {
        st = vw_bundle_files_resolve(b->dir, BROAD, &path, err);
        if (st == VW_OK)
            st = vw_st_open(path, &b->broad, err);
        if (st == VW_OK)
            st = add_file(b, b->broad, err);
        free(path);
    }
    if (st != VW_OK)
        return st;
    qsort(b->idx, b->n_idx, sizeof *b->idx, cmp_entry);
    for (size_t i = 1; i < b->n_idx; i++)
        if (!strcmp(b->idx[i - 1].name, b->idx[i].name))
            return VW_FAIL(err, VW_EINVAL, "duplicate_tensor", "tensor '%s' appears in %s and %s",
                           b->idx[i].name, vw_st_path(b->idx[i - 1].file),
                           vw_st_path(b->idx[i].file));
    if (index && (st = check_index(b, index, shards, err)) != VW_OK)
        return st;
    return check_tensors(b, err);
}

/* ---- identity ------------------------------------------------------------ */

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The package's identity (docs/backbone.md "Revision"): the SHA-256 of the
 * lines "<sha256>  <name>\n" of every file either digest list names, the two
 * lists themselves excepted, sorted by name (bytes), digests lower-case: what
 * `sha256sum` would print for those files, sorted. Every listed file was
 * verified and every file the bundle reads is listed (verify_all), so two
 * packages that differ in any file the worker uses (weights, heads,
 * calibration, tokenizer, config) differ here, while the lists' formatting,
 * the manifest's generator notes and which list names a file do not count. */
static vw_status content_digest(const json_t *man_files, const json_t *sums, char hex[65],
                                vw_err *err) {
    json_t *all = json_object();
    const char **names = NULL;
    vw_sbuf text = {0};
    vw_status st = all ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle identity");
    const json_t *lists[2] = {man_files, sums};
    for (int l = 0; l < 2 && st == VW_OK; l++) {
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)lists[l], key, v) {
            if (strcmp(key, MANIFEST) && strcmp(key, SUMS) && json_object_set(all, key, v))
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle identity");
        }
    }
    size_t n = st == VW_OK ? json_object_size(all) : 0, k = 0;
    if (st == VW_OK && !(names = malloc((n ? n : 1) * sizeof *names)))
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle identity");
    if (st == VW_OK) {
        const char *key;
        json_t *v;
        json_object_foreach(all, key, v) names[k++] = key;
        qsort(names, n, sizeof *names, cmp_name);
    }
    for (size_t i = 0; st == VW_OK && i < n; i++) {
        char lower[65];
        snprintf(lower, sizeof lower, "%s", json_string_value(json_object_get(all, names[i])));
        for (char *c = lower; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        vw_sbuf_printf(&text, "%s  %s\n", lower, names[i]);
    }
    if (st == VW_OK && text.oom)
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle identity");
    if (st == VW_OK)
        st = vw_sha256_hex(text.p ? text.p : "", text.len, hex, err);
    vw_sbuf_free(&text);
    free(names);
    json_decref(all);
    return st;
}

/* ---- open ---------------------------------------------------------------- */

static vw_status read_config(vw_bundle *b, vw_err *err) {
    vw_status st =
        vw_bundle_files_load(b->dir, "config.json", &b->config_json, &b->config_len, err);
    if (st == VW_OK)
        st = vw_bundle_files_object("config.json", b->config_json, b->config_len, &b->config, err);
    if (st != VW_OK)
        return st;
    const json_t *mt = json_object_get(b->config, "model_type");
    if (mt && !(json_is_string(mt) && !strcmp(json_string_value(mt), "vela2-decoder")))
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_config",
                       "config.json model_type is not \"vela2-decoder\"");
    const json_t *ml = json_object_get(b->config, "max_length");
    if (!json_is_integer(ml) || json_integer_value(ml) < 1)
        return VW_FAIL(err, VW_EINVAL, "bad_config",
                       "config.json max_length must be a positive "
                       "integer");
    b->max_length = json_integer_value(ml);
    return vw_qwen35_config_parse(json_object_get(b->config, "backbone_config"), &b->bb, err);
}

/* Reads MODEL_MANIFEST.json once, hashes those bytes and, with an anchor,
 * refuses the package before anything else is read when they differ; then
 * parses the same bytes. */
static vw_status read_manifest(vw_bundle *b, const char *anchor, json_t **manifest, vw_err *err) {
    char *buf = NULL;
    size_t len = 0;
    vw_status st = vw_bundle_files_load(b->dir, MANIFEST, &buf, &len, err);
    if (st == VW_OK)
        st = vw_sha256_hex(buf, len, b->manifest_sha256, err);
    if (st == VW_OK && anchor && strcasecmp(anchor, b->manifest_sha256))
        st = VW_FAIL(err, VW_EINTEGRITY, "manifest_mismatch",
                     MANIFEST " has SHA-256 %s; the anchor expects %s", b->manifest_sha256, anchor);
    if (st == VW_OK)
        st = vw_bundle_files_object(MANIFEST, buf, len, manifest, err);
    free(buf);
    return st;
}

static vw_status open_checked(vw_bundle *b, const char *anchor, vw_err *err) {
    json_t *manifest = NULL, *sums = NULL, *index = NULL;
    const char **shards = NULL, **loaded = NULL;
    size_t n_shards = 0, n_loaded = 0;
    char *probe = NULL;
    vw_status st = read_manifest(b, anchor, &manifest, err);
    const json_t *man_files = json_object_get(manifest, "files_sha256");
    if (st == VW_OK && !json_is_object(man_files))
        st = VW_FAIL(err, VW_EINVAL, "bad_manifest", MANIFEST " has no files_sha256 object");
    if (st == VW_OK)
        st = vw_bundle_files_sums(b->dir, &sums, err);
    if (st == VW_OK)
        st = read_config(b, err);
    int has_index = st == VW_OK && vw_bundle_files_resolve(b->dir, INDEX, &probe, NULL) == VW_OK;
    free(probe), probe = NULL;
    int has_broad = st == VW_OK && vw_bundle_files_resolve(b->dir, BROAD, &probe, NULL) == VW_OK;
    free(probe), probe = NULL;
    if (st == VW_OK && has_index)
        st = vw_bundle_files_json(b->dir, INDEX, &index, err);
    if (st == VW_OK)
        st = weight_files(index, &shards, &n_shards, err);
    if (st == VW_OK && !(loaded = malloc((n_shards + 6) * sizeof *loaded)))
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "file list");
    /* The small files are read once, before verification: what is hashed is
     * what is used. */
    if (st == VW_OK)
        st = vw_bundle_files_load(b->dir, "calibration.json", &b->cal_json, &b->cal_len, err);
    if (st == VW_OK)
        st = vw_bundle_files_load(b->dir, "tokenizer.json", &b->tok_json, &b->tok_len, err);
    if (st == VW_OK) {
        const mem_file mem[N_MEM] = {{"config.json", b->config_json, b->config_len},
                                     {"calibration.json", b->cal_json, b->cal_len},
                                     {"tokenizer.json", b->tok_json, b->tok_len}};
        const char *fixed[] = {"config.json", "calibration.json", "tokenizer.json"};
        for (size_t i = 0; i < 3; i++)
            loaded[n_loaded++] = fixed[i];
        if (has_index)
            loaded[n_loaded++] = INDEX;
        if (has_broad)
            loaded[n_loaded++] = BROAD;
        for (size_t i = 0; i < n_shards; i++)
            loaded[n_loaded++] = shards[i];
        st = verify_all(b->dir, loaded, n_loaded, mem, man_files, sums, anchor != NULL, err);
    }
    if (st == VW_OK) {
        const char *h = json_string_value(json_object_get(man_files, "config.json"));
        if (!h)
            h = json_string_value(json_object_get(sums, "config.json"));
        snprintf(b->config_sha256, sizeof b->config_sha256, "%s", h ? h : "");
        st = content_digest(man_files, sums, b->content_sha256, err);
    }
    if (st == VW_OK)
        st = vw_bundle_files_object("calibration.json", b->cal_json, b->cal_len, &b->calibration,
                                    err);
    if (st == VW_OK)
        st = open_weights(b, shards, n_shards, has_broad, index, err);
    free(probe);
    free(loaded);
    free(shards);
    json_decref(index);
    json_decref(sums);
    json_decref(manifest);
    return st;
}

vw_status vw_bundle_open(const char *dir, vw_bundle **out, vw_err *err) {
    return vw_bundle_open_anchored(dir, NULL, out, err);
}

int vw_bundle_anchor_valid(const char *hex) {
    size_t n = 0;
    while (hex[n] && isxdigit((unsigned char)hex[n]))
        n++;
    return n == 64 && !hex[n];
}

vw_status vw_bundle_open_anchored(const char *dir, const char *manifest_sha256, vw_bundle **out,
                                  vw_err *err) {
    *out = NULL;
    if (manifest_sha256 && !*manifest_sha256)
        manifest_sha256 = NULL;
    if (manifest_sha256 && !vw_bundle_anchor_valid(manifest_sha256))
        return VW_FAIL(err, VW_EINVAL, "bad_anchor",
                       "manifest anchor '%.80s' is not a SHA-256 (64 hex digits)", manifest_sha256);
    vw_bundle *b = calloc(1, sizeof *b);
    if (!b)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle");
    char real[PATH_MAX];
    vw_status st = VW_OK;
    if (!realpath(dir, real))
        st = VW_FAIL(err, VW_EIO, "missing_file", "bundle directory %s: %s", dir, strerror(errno));
    else if (!(b->dir = strdup(real)))
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "bundle");
    if (st == VW_OK)
        st = open_checked(b, manifest_sha256, err);
    if (st != VW_OK) {
        vw_bundle_free(b);
        return st;
    }
    *out = b;
    return VW_OK;
}

void vw_bundle_free(vw_bundle *b) {
    if (!b)
        return;
    free(b->idx);
    vw_st_close(b->broad);
    for (size_t i = 0; i < b->n_shards; i++)
        vw_st_close(b->shards[i]);
    free(b->shards);
    free(b->tok_json);
    free(b->config_json);
    free(b->cal_json);
    json_decref(b->calibration);
    json_decref(b->config);
    free(b->dir);
    free(b);
}

/* ---- accessors ----------------------------------------------------------- */

const char *vw_bundle_config_sha256(const vw_bundle *b) {
    return b->config_sha256;
}

const char *vw_bundle_content_sha256(const vw_bundle *b) {
    return b->content_sha256;
}

const char *vw_bundle_manifest_sha256(const vw_bundle *b) {
    return b->manifest_sha256;
}

const char *vw_bundle_dir(const vw_bundle *b) {
    return b->dir;
}
const vw_qwen35_config *vw_bundle_backbone_config(const vw_bundle *b) {
    return &b->bb;
}
const char *vw_bundle_backbone_prefix(const vw_bundle *b) {
    return b->prefix;
}
int64_t vw_bundle_max_length(const vw_bundle *b) {
    return b->max_length;
}
int vw_bundle_has_broad_head(const vw_bundle *b) {
    return b->broad != NULL;
}
const json_t *vw_bundle_config(const vw_bundle *b) {
    return b->config;
}
const json_t *vw_bundle_calibration(const vw_bundle *b) {
    return b->calibration;
}

const char *vw_bundle_config_json(const vw_bundle *b, size_t *len) {
    *len = b->config_len;
    return b->config_json;
}

const char *vw_bundle_calibration_json(const vw_bundle *b, size_t *len) {
    *len = b->cal_len;
    return b->cal_json;
}

const char *vw_bundle_tokenizer_json(const vw_bundle *b, size_t *len) {
    *len = b->tok_len;
    return b->tok_json;
}

size_t vw_bundle_tensor_count(const vw_bundle *b) {
    return b->n_idx;
}

const vw_st_tensor *vw_bundle_tensor_at(const vw_bundle *b, size_t i, const char **file) {
    if (i >= b->n_idx)
        return NULL;
    const entry *e = &b->idx[i];
    if (!e->backbone && !is_head_name(e->name, e->file == b->broad))
        return NULL; /* mtp.*, model.visual.*, lm_head.weight: never read */
    if (file)
        *file = vw_st_path(e->file);
    return e->t;
}

const vw_st_tensor *vw_bundle_find(const vw_bundle *b, const char *name) {
    const entry *e = lookup(b, name);
    return e ? e->t : NULL;
}

const vw_st_tensor *vw_bundle_backbone_tensor(const vw_bundle *b, const char *name) {
    char full[160];
    if (snprintf(full, sizeof full, "%s%s", b->prefix, name) >= (int)sizeof full)
        return NULL;
    const entry *e = lookup(b, full);
    return e && e->backbone ? e->t : NULL;
}

const vw_st_tensor *vw_bundle_layer_tensor(const vw_bundle *b, int layer, const char *name,
                                           vw_err *err) {
    char full[128];
    if (layer >= 0)
        snprintf(full, sizeof full, "layers.%d.%s", layer, name);
    else
        snprintf(full, sizeof full, "%s", name);
    const vw_st_tensor *t = vw_bundle_backbone_tensor(b, full);
    if (!t)
        VW_FAIL(err, VW_EINVAL, "missing_tensor", "backbone tensor '%s' is missing", full);
    return t;
}

void vw_bundle_drop_pages(const vw_bundle *b, const vw_st_tensor *t) {
    const entry *e = t ? lookup(b, t->name) : NULL;
    if (e)
        vw_st_drop_pages(e->file, t);
}

vw_status vw_bundle_tensor_f32(const vw_bundle *b, const char *name, vw_tensor_f32 *out,
                               vw_err *err) {
    memset(out, 0, sizeof *out);
    const vw_st_tensor *t = vw_bundle_find(b, name);
    if (!t)
        return VW_FAIL(err, VW_EINVAL, "missing_tensor", "bundle %s has no tensor '%s'", b->dir,
                       name);
    float *data = malloc((t->numel ? t->numel : 1) * sizeof *data);
    if (!data)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tensor '%s'", name);
    vw_status st = vw_st_to_f32(t, data, err);
    if (st != VW_OK) {
        free(data);
        return st;
    }
    out->data = data;
    out->numel = t->numel;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof out->shape);
    return VW_OK;
}

void vw_tensor_f32_free(vw_tensor_f32 *t) {
    if (!t)
        return;
    free(t->data);
    memset(t, 0, sizeof *t);
}
