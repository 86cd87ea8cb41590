/* tok_load.c — reads a Hugging Face tokenizer.json (parsed by jansson) into a
 * vw_tokenizer: the BPE model, the normalizer, the pre-tokenizer steps, the added
 * tokens. It accepts exactly the components tokenizer.h lists and refuses every
 * other one with VW_EUNSUPPORTED, type "unsupported_tokenizer", naming it; a
 * malformed file is VW_EINVAL, type "bad_tokenizer", naming the field.
 * It never encodes; tokenizer.c does.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

#define BAD(...) VW_FAIL(err, VW_EINVAL, "bad_tokenizer", "tokenizer.json: " __VA_ARGS__)
#define UNSUPPORTED(...)                                                                           \
    VW_FAIL(err, VW_EUNSUPPORTED, "unsupported_tokenizer", "tokenizer.json: " __VA_ARGS__)
#define NOMEM() VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer.json: out of memory")

static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static bool is_null(const json_t *v) {
    return !v || json_is_null(v);
}

static const char *type_of(const json_t *obj) {
    const json_t *ty = json_object_get(obj, "type");
    return json_is_string(ty) ? json_string_value(ty) : NULL;
}

/* Optional boolean field: def when absent or null; VW_EINVAL when not a boolean. */
static vw_status get_bool(const json_t *obj, const char *key, bool def, bool *out,
                          const char *where, vw_err *err) {
    const json_t *v = json_object_get(obj, key);
    if (is_null(v)) {
        *out = def;
        return VW_OK;
    }
    if (!json_is_boolean(v))
        return BAD("%s.%s must be a boolean", where, key);
    *out = json_is_true(v);
    return VW_OK;
}

/* Optional string that must be empty (continuing_subword_prefix, end_of_word_suffix). */
static vw_status want_empty(const json_t *model, const char *key, vw_err *err) {
    const json_t *v = json_object_get(model, key);
    if (is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return VW_OK;
    return UNSUPPORTED("model.%s is not supported (only null or \"\")", key);
}

/* ---- model -------------------------------------------------------------------- */

static vw_status load_vocab(tok_vocab *v, const json_t *vocab, vw_err *err) {
    if (!json_is_object(vocab))
        return BAD("model.vocab must be an object");
    const char *key;
    size_t klen;
    json_t *val;
    json_object_keylen_foreach((json_t *)vocab, key, klen, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || id > INT32_MAX)
            return BAD("model.vocab[\"%.*s\"] must be an id in [0, 2^31)",
                       (int)(klen > 64 ? 64 : klen), key);
        if (tok_vocab_add(v, key, klen, (int32_t)id))
            return NOMEM();
    }
    return VW_OK;
}

/* Splits merge i into its two parts (either "a b" or ["a", "b"]). */
static vw_status merge_parts(const json_t *m, size_t i, bool strings, const char **a, size_t *al,
                             const char **b, size_t *bl, vw_err *err) {
    if (json_is_string(m) != strings) /* HF: all "a b" strings or all pairs */
        return BAD("model.merges[%zu] mixes the \"a b\" and [\"a\", \"b\"] forms", i);
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        size_t n = json_string_length(m);
        const char *sp = memchr(s, ' ', n);
        if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)))
            return BAD("model.merges[%zu] must be two tokens separated by one space", i);
        *a = s;
        *al = (size_t)(sp - s);
        *b = sp + 1;
        *bl = n - *al - 1;
        return VW_OK;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        *a = json_string_value(json_array_get(m, 0));
        *al = json_string_length(json_array_get(m, 0));
        *b = json_string_value(json_array_get(m, 1));
        *bl = json_string_length(json_array_get(m, 1));
        return VW_OK;
    }
    return BAD("model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", i);
}

static vw_status load_merges(tok_bpe *bpe, const json_t *merges, vw_err *err) {
    if (is_null(merges))
        merges = NULL;
    else if (!json_is_array(merges))
        return BAD("model.merges must be an array");
    size_t n = merges ? json_array_size(merges) : 0;
    if (tok_merges_init(&bpe->merges, n))
        return NOMEM();
    char *cat = NULL;
    size_t cat_cap = 0;
    vw_status rc = VW_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        bool strings = json_is_string(json_array_get(merges, 0));
        if ((rc = merge_parts(json_array_get(merges, i), i, strings, &a, &al, &b, &bl, err)))
            break;
        if (vw_reserve((void **)&cat, &cat_cap, al + bl + 1, 1)) {
            rc = NOMEM();
            break;
        }
        memcpy(cat, a, al);
        memcpy(cat + al, b, bl);
        int32_t ia = tok_vocab_get(&bpe->vocab, a, al);
        int32_t ib = tok_vocab_get(&bpe->vocab, b, bl);
        int32_t ic = tok_vocab_get(&bpe->vocab, cat, al + bl);
        if (ia < 0 || ib < 0 || ic < 0) {
            const char *miss = ia < 0 ? a : ib < 0 ? b : cat;
            int ml = (int)(ia < 0 ? al : ib < 0 ? bl : al + bl);
            rc = BAD("model.merges[%zu]: \"%.*s\" is not in the vocab", i, ml > 64 ? 64 : ml, miss);
            break;
        }
        tok_merges_put(&bpe->merges, ia, ib, (int32_t)i, ic);
    }
    free(cat);
    return rc;
}

static vw_status load_model(vw_tokenizer *t, const json_t *model, vw_err *err) {
    if (!json_is_object(model))
        return BAD("model must be an object");
    const char *ty = type_of(model);
    if (ty && strcmp(ty, "BPE"))
        return UNSUPPORTED("model '%s' is not supported (only BPE)", ty);
    if (!ty && !json_object_get(model, "merges"))
        return UNSUPPORTED("a model without type or merges is not supported (only BPE)");
    const json_t *dropout = json_object_get(model, "dropout");
    if (!is_null(dropout) && !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return UNSUPPORTED("model.dropout is not supported (only null or 0)");
    vw_status rc;
    tok_bpe *b = &t->bpe;
    if ((rc = want_empty(model, "continuing_subword_prefix", err)) ||
        (rc = want_empty(model, "end_of_word_suffix", err)) ||
        (rc = get_bool(model, "fuse_unk", false, &b->fuse_unk, "model", err)) ||
        (rc = get_bool(model, "byte_fallback", false, &b->byte_fallback, "model", err)) ||
        (rc = get_bool(model, "ignore_merges", false, &b->ignore_merges, "model", err)) ||
        (rc = load_vocab(&b->vocab, json_object_get(model, "vocab"), err)) ||
        (rc = load_merges(b, json_object_get(model, "merges"), err)))
        return rc;
    b->unk_id = -1;
    const json_t *unk = json_object_get(model, "unk_token");
    if (!is_null(unk)) {
        if (!json_is_string(unk))
            return BAD("model.unk_token must be a string or null");
        b->unk_id = tok_vocab_get(&b->vocab, json_string_value(unk), json_string_length(unk));
        if (b->unk_id < 0)
            return BAD("model.unk_token \"%s\" is not in the vocab", json_string_value(unk));
    }
    return VW_OK;
}

/* ---- normalizer --------------------------------------------------------------- */

static vw_status load_normalizer(vw_tokenizer *t, const json_t *n, int depth, vw_err *err) {
    if (is_null(n))
        return VW_OK;
    const char *ty = json_is_object(n) ? type_of(n) : NULL;
    if (!ty)
        return BAD("normalizer must be null or an object with a type");
    if (!strcmp(ty, "NFC")) {
        t->nfc = true;
        return VW_OK;
    }
    if (strcmp(ty, "Sequence"))
        return UNSUPPORTED("normalizer '%s' is not supported (only NFC and Sequence)", ty);
    const json_t *list = json_object_get(n, "normalizers");
    if (!json_is_array(list) || depth > 8)
        return BAD("normalizer Sequence needs a normalizers array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        vw_status rc = load_normalizer(t, json_array_get(list, i), depth + 1, err);
        if (rc)
            return rc;
    }
    return VW_OK;
}

/* ---- pre-tokenizer ------------------------------------------------------------ */

static vw_status add_step(vw_tokenizer *t, tok_step s, vw_err *err) {
    if (vw_reserve((void **)&t->steps, &t->steps_cap, t->nsteps + 1, sizeof *t->steps)) {
        if (s.re)
            pcre2_code_free(s.re);
        free(s.regex);
        return NOMEM();
    }
    t->steps[t->nsteps++] = s;
    return VW_OK;
}

static vw_status load_split(vw_tokenizer *t, const json_t *p, vw_err *err) {
    static const struct {
        const char *name;
        tok_behavior b;
    } behaviors[] = {{"Removed", TOK_REMOVED},
                     {"Isolated", TOK_ISOLATED},
                     {"MergedWithPrevious", TOK_MERGED_PREV},
                     {"MergedWithNext", TOK_MERGED_NEXT},
                     {"Contiguous", TOK_CONTIGUOUS}};
    tok_step s = {.kind = TOK_STEP_SPLIT};
    const json_t *beh = json_object_get(p, "behavior");
    if (!json_is_string(beh))
        return BAD("Split.behavior must be a string");
    size_t i = 0, nb = sizeof behaviors / sizeof behaviors[0];
    while (i < nb && strcmp(behaviors[i].name, json_string_value(beh)))
        i++;
    if (i == nb)
        return UNSUPPORTED("Split behavior '%s' is not supported", json_string_value(beh));
    s.behavior = behaviors[i].b;
    vw_status rc = get_bool(p, "invert", false, &s.invert, "Split", err);
    if (rc)
        return rc;
    const json_t *pat = json_object_get(p, "pattern");
    const json_t *re = json_is_object(pat) ? json_object_get(pat, "Regex") : NULL;
    const json_t *str = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
    const json_t *src = json_is_string(re) ? re : str;
    if (!json_is_string(src))
        return BAD("Split.pattern must be {\"Regex\": ...} or {\"String\": ...}");
    if (json_is_string(str) && json_string_length(str) == 0)
        return UNSUPPORTED("Split with an empty String pattern is not supported");
    if ((rc = tok_regex_compile(json_string_value(src), json_string_length(src), src == str, &s.re,
                                err)))
        return rc;
    if (src == re) { /* kept for vw_tok_check_patterns */
        s.regex_len = json_string_length(re);
        if (!(s.regex = malloc(s.regex_len + 1))) {
            pcre2_code_free(s.re);
            return NOMEM();
        }
        memcpy(s.regex, json_string_value(re), s.regex_len + 1);
    }
    return add_step(t, s, err);
}

static vw_status load_pretok(vw_tokenizer *t, const json_t *p, int depth, vw_err *err) {
    if (is_null(p))
        return VW_OK;
    const char *ty = json_is_object(p) ? type_of(p) : NULL;
    if (!ty)
        return BAD("pre_tokenizer must be null or an object with a type");
    if (t->byte_level)
        return UNSUPPORTED("pre_tokenizer '%s' after ByteLevel is not supported", ty);
    vw_status rc;
    if (!strcmp(ty, "Sequence")) {
        const json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list) || depth > 8)
            return BAD("pre_tokenizer Sequence needs a pretokenizers array");
        for (size_t i = 0; i < json_array_size(list); i++)
            if ((rc = load_pretok(t, json_array_get(list, i), depth + 1, err)))
                return rc;
        return VW_OK;
    }
    if (!strcmp(ty, "Split"))
        return load_split(t, p, err);
    if (strcmp(ty, "ByteLevel"))
        return UNSUPPORTED("pre_tokenizer '%s' is not supported (only Split, ByteLevel and "
                           "Sequence)",
                           ty);
    tok_step s = {.kind = TOK_STEP_BYTELEVEL};
    if ((rc = get_bool(p, "add_prefix_space", true, &s.add_prefix_space, "ByteLevel", err)) ||
        (rc = get_bool(p, "use_regex", true, &s.use_regex, "ByteLevel", err)))
        return rc;
    if (s.use_regex && !t->gpt2 &&
        (rc = tok_regex_compile(GPT2_PATTERN, sizeof GPT2_PATTERN - 1, false, &t->gpt2, err)))
        return rc;
    t->byte_level = true;
    return add_step(t, s, err);
}

/* ---- post-processor, truncation, padding ------------------------------------------ */

static vw_status check_post(const json_t *p, int depth, vw_err *err) {
    if (is_null(p))
        return VW_OK;
    const char *ty = json_is_object(p) ? type_of(p) : NULL;
    if (!ty)
        return BAD("post_processor must be null or an object with a type");
    if (!strcmp(ty, "TemplateProcessing") || !strcmp(ty, "BertProcessing"))
        return VW_OK; /* they only add special tokens; encode runs without them */
    if (!strcmp(ty, "ByteLevel") || !strcmp(ty, "RobertaProcessing")) {
        bool trim = false;
        vw_status rc = get_bool(p, "trim_offsets", !strcmp(ty, "RobertaProcessing"), &trim,
                                "post_processor", err);
        if (rc)
            return rc;
        if (trim)
            return UNSUPPORTED("post_processor %s with trim_offsets=true is not supported", ty);
        return VW_OK;
    }
    if (!strcmp(ty, "Sequence")) {
        const json_t *list = json_object_get(p, "processors");
        if (!json_is_array(list) || depth > 8)
            return BAD("post_processor Sequence needs a processors array");
        for (size_t i = 0; i < json_array_size(list); i++) {
            vw_status rc = check_post(json_array_get(list, i), depth + 1, err);
            if (rc)
                return rc;
        }
        return VW_OK;
    }
    return UNSUPPORTED("post_processor '%s' is not supported", ty);
}

/* ---- added tokens ------------------------------------------------------------- */

static vw_status load_added_one(vw_tokenizer *t, const json_t *a, size_t i, vw_err *err) {
    const json_t *content = json_object_get(a, "content");
    const json_t *jid = json_object_get(a, "id");
    if (!json_is_string(content) || !json_is_integer(jid) || json_integer_value(jid) < 0 ||
        json_integer_value(jid) > INT32_MAX)
        return BAD("added_tokens[%zu] needs a string content and an id", i);
    const char *s = json_string_value(content);
    size_t len = json_string_length(content);
    if (len == 0)
        return VW_OK; /* HF ignores empty added tokens */
    tok_added info = {0};
    vw_status rc;
    if ((rc = get_bool(a, "special", false, &info.special, "added_tokens[]", err)) ||
        (rc = get_bool(a, "normalized", !info.special, &info.normalized, "added_tokens[]", err)) ||
        (rc = get_bool(a, "single_word", false, &info.single_word, "added_tokens[]", err)) ||
        (rc = get_bool(a, "lstrip", false, &info.lstrip, "added_tokens[]", err)) ||
        (rc = get_bool(a, "rstrip", false, &info.rstrip, "added_tokens[]", err)))
        return rc;
    if (tok_vocab_get(&t->added, s, len) >= 0)
        return VW_OK; /* the first entry for a content stands */
    /* HF ignores the stored id (AddedVocabulary::add_tokens): a content the model knows
     * keeps the model's id, a new one gets the next id after the model vocabulary (its
     * entry count) or after the largest added id. Real files agree with this. */
    int32_t model_id = tok_vocab_get(&t->bpe.vocab, s, len);
    int32_t vsize = (int32_t)t->bpe.vocab.unique, amax = -1;
    for (size_t k = 0; k < t->added.n; k++)
        amax = t->added.id[k] > amax ? t->added.id[k] : amax;
    info.id = model_id >= 0 ? model_id : amax < 0 ? vsize : amax >= vsize ? amax + 1 : vsize;
    char *norm = NULL;
    size_t nlen = len;
    if (info.normalized && t->nfc && tok_nfc_string(&t->nfc_tables, s, len, &norm, &nlen))
        return BAD("added_tokens[%zu].content is not valid UTF-8", i);
    const char *m = norm ? norm : s;
    size_t cap = 0, n = 0;
    rc = tok_utf8_decode(m, nlen, &info.cps, &cap, &n, NULL, NULL);
    free(norm);
    if (rc == VW_ENOMEM)
        return NOMEM();
    if (rc)
        return BAD("added_tokens[%zu].content is not valid UTF-8", i);
    info.n = n;
    if (n == 0) { /* normalized to nothing: HF's trie never matches it */
        free(info.cps);
        return VW_OK;
    }
    tok_trie *trie = info.normalized ? &t->norm : &t->raw;
    size_t before = trie->ntoks;
    if (tok_trie_add(trie, info.cps, n, &info) || tok_vocab_add(&t->added, s, len, info.id)) {
        if (trie->ntoks == before)
            free(info.cps);
        return NOMEM();
    }
    if (trie->ntoks == before)
        free(info.cps); /* same pattern already present */
    return VW_OK;
}

static vw_status load_added(vw_tokenizer *t, const json_t *list, vw_err *err) {
    if (is_null(list))
        return VW_OK;
    if (!json_is_array(list))
        return BAD("added_tokens must be an array");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *a = json_array_get(list, i);
        if (!json_is_object(a))
            return BAD("added_tokens[%zu] must be an object", i);
        vw_status rc = load_added_one(t, a, i, err);
        if (rc)
            return rc;
    }
    return VW_OK;
}

static int32_t max_id(const tok_vocab *v) {
    int32_t m = -1;
    for (size_t i = 0; i < v->n; i++)
        if (v->id[i] > m)
            m = v->id[i];
    return m;
}

vw_status tok_load_config(vw_tokenizer *t, const void *root_v, vw_err *err) {
    const json_t *root = root_v;
    if (!json_is_object(root))
        return BAD("the top level must be an object");
    if (!is_null(json_object_get(root, "truncation")))
        return UNSUPPORTED("truncation is not supported (set it to null)");
    if (!is_null(json_object_get(root, "padding")))
        return UNSUPPORTED("padding is not supported (set it to null)");
    vw_status rc;
    if ((rc = load_model(t, json_object_get(root, "model"), err)) ||
        (rc = load_normalizer(t, json_object_get(root, "normalizer"), 0, err)) ||
        (rc = load_pretok(t, json_object_get(root, "pre_tokenizer"), 0, err)) ||
        (rc = check_post(json_object_get(root, "post_processor"), 0, err)))
        return rc;
    if (t->nfc && tok_nfc_tables_init(&t->nfc_tables))
        return NOMEM();
    if ((rc = load_added(t, json_object_get(root, "added_tokens"), err)))
        return rc;
    tok_bytelevel_init(&t->bl);
    if (tok_bpe_init_tables(&t->bpe) || tok_cache_init(&t->bpe.cache, 1u << 16))
        return NOMEM();
    int32_t m1 = max_id(&t->bpe.vocab), m2 = max_id(&t->added);
    t->vocab_size = (m1 > m2 ? m1 : m2) + 1;
    return VW_OK;
}
