/* tokenizer.c — the tokenizer's public API (tokenizer.h) and the encode pipeline,
 * in HF `tokenizers` order (Tokenizer::encode_single_sequence):
 *   1. added tokens with normalized=false, found in the original text;
 *   2. per remaining piece: the normalizer (NFC), then added tokens with
 *      normalized=true found in the normalized text;
 *   3. the pre-tokenizer steps (Split regexes, then ByteLevel) on what is left;
 *   4. BPE on each pre-token; offsets mapped back through the alignments.
 * Offsets are code points of the original text (tokenizer.h). Loading lives in
 * tok_load.c; the pieces in tok_text.c, tok_bpe.c and tok_split.c.
 * Each encode uses its own scratch; the only shared mutable state is the BPE cache.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* ---- load / free -------------------------------------------------------------- */

vw_status vw_tok_load_json(const char *json, size_t len, vw_tokenizer **out, vw_err *err) {
    if (!json || !out)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "vw_tok_load_json: NULL argument");
    if (len > VW_TOK_MAX_JSON_BYTES)
        return VW_FAIL(err, VW_EINVAL, "file_too_large",
                       "tokenizer.json: %zu bytes, more than the %u a tokenizer may have", len,
                       VW_TOK_MAX_JSON_BYTES);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_ALLOW_NUL, &je);
    if (!root)
        return VW_FAIL(err, VW_EINVAL, "bad_tokenizer", "tokenizer.json: %s (line %d, column %d)",
                       je.text, je.line, je.column);
    vw_tokenizer *t = calloc(1, sizeof *t);
    vw_status rc = t ? tok_load_config(t, root, err)
                     : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: out of memory");
    json_decref(root);
    if (rc) {
        vw_tok_free(t);
        return rc;
    }
    *out = t;
    return VW_OK;
}

vw_status vw_tok_load(const char *path, vw_tokenizer **out, vw_err *err) {
    if (!path || !out)
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "vw_tok_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f)
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    vw_status rc = VW_OK;
    for (;;) {
        if (vw_reserve((void **)&buf, &cap, n + 65536, 1)) {
            rc = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: reading %s", path);
            goto done;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0 || n > VW_TOK_MAX_JSON_BYTES)
            break; /* past the bound: vw_tok_load_json refuses it */
    }
    if (ferror(f)) {
        rc = VW_FAIL(err, VW_EIO, "io_error", "tokenizer: reading %s failed", path);
        goto done;
    }
    rc = vw_tok_load_json(buf, n, out, err);
    /* Its messages name "tokenizer.json", the file of a bundle; this one is path. */
    if (rc && err && !strncmp(err->msg, "tokenizer.json: ", 16)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s: %s", path, err->msg + 16);
        memcpy(err->msg, msg, sizeof msg);
    }
done:
    free(buf);
    fclose(f);
    return rc;
}

void vw_tok_free(vw_tokenizer *t) {
    if (!t)
        return;
    tok_bpe_free(&t->bpe);
    tok_nfc_tables_free(&t->nfc_tables);
    for (size_t i = 0; i < t->nsteps; i++) {
        pcre2_code_free(t->steps[i].re);
        free(t->steps[i].regex);
    }
    free(t->steps);
    pcre2_code_free(t->gpt2);
    tok_trie_free(&t->raw);
    tok_trie_free(&t->norm);
    tok_vocab_free(&t->added);
    free(t);
}

vw_status vw_tok_check_patterns(const vw_tokenizer *t, vw_err *err) {
    for (size_t i = 0; t && i < t->nsteps; i++) {
        const tok_step *s = &t->steps[i];
        if (s->regex && !tok_pattern_vetted(s->regex, s->regex_len))
            return VW_FAIL(err, VW_EUNSUPPORTED, "unvetted_pattern",
                           "tokenizer.json: Split pattern '%.120s%s' is not one of the vetted "
                           "split patterns (Qwen2/Qwen3, Qwen3.5, GPT-2, Llama 3; "
                           "docs/tokenizer.md): an arbitrary regex can take exponential time "
                           "per word",
                           s->regex, s->regex_len > 120 ? "..." : "");
    }
    return VW_OK;
}

int32_t vw_tok_vocab_size(const vw_tokenizer *t) {
    return t ? t->vocab_size : 0;
}

int32_t vw_tok_token_to_id(const vw_tokenizer *t, const char *token) {
    if (!t || !token)
        return -1;
    size_t n = strlen(token);
    int32_t id = tok_vocab_get(&t->added, token, n);
    return id >= 0 ? id : tok_vocab_get(&t->bpe.vocab, token, n);
}

void vw_encoding_free(vw_encoding *enc) {
    if (!enc)
        return;
    free(enc->ids);
    free(enc->offsets);
    memset(enc, 0, sizeof *enc);
}

/* ---- encode ------------------------------------------------------------------- */

typedef struct tok_pc {
    int32_t a, b; /* [a, b) normalized code points */
    bool pre;     /* a ByteLevel prefix space (aligned to a) comes first */
} tok_pc;

typedef struct tok_pcs {
    tok_pc *v;
    size_t n, cap;
} tok_pcs;

/* Per-call scratch. */
typedef struct tok_ws {
    uint32_t *cps;
    size_t ncps, cps_cap;
    tok_segs seg1, seg2;
    tok_norm norm;
    char *nbuf; /* UTF-8 of norm.cp */
    size_t nb, nbuf_cap;
    int32_t *nbyte; /* [norm.n + 1]: byte offset of each normalized code point */
    size_t nbyte_cap;
    int32_t *b2c; /* [nb]: code point index of each byte of nbuf */
    size_t b2c_cap;
    tok_pcs pa, pb;
    tok_matches m;
    char *tmp; /* a subject with the prefix space */
    size_t tmp_cap;
    char *min; /* model input (byte-level string) */
    size_t min_cap;
    int32_t *pb2cp; /* model input byte -> normalized code point */
    size_t pb2cp_cap;
    tok_bpe_ws bpe;
    pcre2_match_data *md;
} tok_ws;

static void ws_free(tok_ws *w) {
    free(w->cps);
    free(w->seg1.v);
    free(w->seg2.v);
    tok_norm_free(&w->norm);
    free(w->nbuf);
    free(w->nbyte);
    free(w->b2c);
    free(w->pa.v);
    free(w->pb.v);
    free(w->m.v);
    free(w->tmp);
    free(w->min);
    free(w->pb2cp);
    tok_bpe_ws_free(&w->bpe);
    pcre2_match_data_free(w->md);
}

static vw_status oom(vw_err *err) {
    return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: out of memory");
}

static vw_status emit(vw_encoding *out, int32_t id, int32_t s, int32_t e, vw_err *err) {
    if (out->n == out->cap) { /* ids and offset pairs share one capacity */
        size_t c1 = out->cap, c2 = out->cap;
        if (vw_reserve((void **)&out->ids, &c1, out->n + 1, sizeof *out->ids) ||
            vw_reserve((void **)&out->offsets, &c2, out->n + 1, 2 * sizeof *out->offsets))
            return oom(err);
        out->cap = c1;
    }
    out->ids[out->n] = id;
    out->offsets[2 * out->n] = s;
    out->offsets[2 * out->n + 1] = e;
    out->n++;
    return VW_OK;
}

static vw_status push_pc(tok_pcs *p, int32_t a, int32_t b, bool pre) {
    if (b <= a && !pre)
        return VW_OK;
    if (vw_reserve((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v))
        return VW_ENOMEM;
    p->v[p->n++] = (tok_pc){a, b, pre};
    return VW_OK;
}

/* UTF-8 of the normalized segment, with byte <-> code point maps. */
static vw_status build_nbuf(tok_ws *w) {
    size_t n = w->norm.n;
    if (vw_reserve((void **)&w->nbuf, &w->nbuf_cap, 4 * n + 1, 1) ||
        vw_reserve((void **)&w->nbyte, &w->nbyte_cap, n + 1, sizeof *w->nbyte) ||
        vw_reserve((void **)&w->b2c, &w->b2c_cap, 4 * n + 1, sizeof *w->b2c))
        return VW_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        w->nbyte[i] = (int32_t)k;
        size_t l = vw_utf8_put(w->norm.cp[i], w->nbuf + k);
        for (size_t j = 0; j < l; j++)
            w->b2c[k + j] = (int32_t)i;
        k += l;
    }
    w->nbyte[n] = (int32_t)k;
    w->nb = k;
    return VW_OK;
}

/* Code point index of byte offset o of piece p's subject (pre: a space comes first). */
static int32_t subj_cp(const tok_ws *w, tok_pc p, size_t o, size_t slen) {
    if (o == slen)
        return p.b;
    if (p.pre) {
        if (o == 0)
            return p.a;
        o--;
    }
    return w->b2c[(size_t)w->nbyte[p.a] + o];
}

/* Splits each piece of w->pa by re into w->pb. */
static vw_status split_pieces(tok_ws *w, const pcre2_code *re, bool invert, tok_behavior beh,
                              bool bytelevel, bool prefix, vw_err *err) {
    w->pb.n = 0;
    for (size_t i = 0; i < w->pa.n; i++) {
        tok_pc p = w->pa.v[i];
        if (bytelevel)
            p.pre = prefix && w->norm.cp[p.a] != ' ';
        const char *subj = w->nbuf + w->nbyte[p.a];
        size_t plen = (size_t)(w->nbyte[p.b] - w->nbyte[p.a]), slen = plen + p.pre;
        if (!re) {
            if (push_pc(&w->pb, p.a, p.b, p.pre))
                return oom(err);
            continue;
        }
        if (p.pre) {
            if (vw_reserve((void **)&w->tmp, &w->tmp_cap, slen + 1, 1))
                return oom(err);
            w->tmp[0] = ' ';
            memcpy(w->tmp + 1, subj, plen);
            subj = w->tmp;
        }
        vw_status rc = tok_regex_split(re, w->md, subj, slen, invert, beh, &w->m, err);
        if (rc)
            return rc;
        for (size_t k = 0; k < w->m.n; k++) {
            size_t s = (size_t)w->m.v[k].s, e = (size_t)w->m.v[k].e;
            bool pre = p.pre && s == 0;
            int32_t a = pre ? p.a : subj_cp(w, p, s, slen);
            if (push_pc(&w->pb, a, subj_cp(w, p, e, slen), pre))
                return oom(err);
        }
    }
    tok_pcs t = w->pa;
    w->pa = w->pb;
    w->pb = t;
    return VW_OK;
}

/* Runs the model on one pre-token and emits its tokens. */
static vw_status model_piece(vw_tokenizer *tok, tok_ws *w, tok_pc p, vw_encoding *out,
                             vw_err *err) {
    size_t r0 = (size_t)w->nbyte[p.a], r1 = (size_t)w->nbyte[p.b];
    const char *in;
    const int32_t *map;
    size_t len;
    if (tok->byte_level) {
        size_t need = 2 * (r1 - r0 + 1);
        if (vw_reserve((void **)&w->min, &w->min_cap, need, 1) ||
            vw_reserve((void **)&w->pb2cp, &w->pb2cp_cap, need, sizeof *w->pb2cp))
            return oom(err);
        size_t k = 0;
        for (size_t r = r0; r < r1 + p.pre; r++) {
            bool space = p.pre && r == r0; /* the prefix space, aligned to p.a */
            unsigned char byte = space ? ' ' : (unsigned char)w->nbuf[r - p.pre];
            int32_t cp = space ? p.a : w->b2c[r - p.pre];
            for (size_t j = 0; j < tok->bl.len[byte]; j++) {
                w->min[k] = tok->bl.utf8[byte][j];
                w->pb2cp[k++] = cp;
            }
        }
        in = w->min;
        map = w->pb2cp;
        len = k;
    } else {
        in = w->nbuf + r0;
        map = w->b2c + r0;
        len = r1 - r0;
    }
    const tok_piece_tok *toks;
    size_t nt;
    vw_status rc = tok_bpe_encode(&tok->bpe, &w->bpe, in, len, &toks, &nt, err);
    for (size_t i = 0; !rc && i < nt; i++) {
        int32_t c0 = map[toks[i].start], c1 = map[toks[i].end - 1];
        rc = emit(out, toks[i].id, w->norm.al[c0].start, w->norm.al[c1].end, err);
    }
    return rc;
}

/* Pre-tokenizes normalized code points [a, b) and runs the model on each pre-token. */
static vw_status pretok_model(vw_tokenizer *tok, tok_ws *w, int32_t a, int32_t b, vw_encoding *out,
                              vw_err *err) {
    w->pa.n = 0;
    if (push_pc(&w->pa, a, b, false))
        return oom(err);
    for (size_t i = 0; i < tok->nsteps; i++) {
        const tok_step *st = &tok->steps[i];
        vw_status rc;
        if (st->kind == TOK_STEP_SPLIT)
            rc = split_pieces(w, st->re, st->invert, st->behavior, false, false, err);
        else
            rc = split_pieces(w, st->use_regex ? tok->gpt2 : NULL, false, TOK_ISOLATED, true,
                              st->add_prefix_space, err);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < w->pa.n; i++) {
        vw_status rc = model_piece(tok, w, w->pa.v[i], out, err);
        if (rc)
            return rc;
    }
    return VW_OK;
}

/* Steps 2-4 for original code points [s, e). */
static vw_status encode_text(vw_tokenizer *tok, tok_ws *w, int32_t s, int32_t e, bool added,
                             vw_encoding *out, vw_err *err) {
    w->norm.n = 0;
    w->seg2.n = 0;
    if (tok_normalize(&tok->nfc_tables, tok->nfc, w->cps + s, (size_t)(e - s), s, &w->norm) ||
        build_nbuf(w))
        return oom(err);
    int32_t nn = (int32_t)w->norm.n;
    if (added && tok->norm.ntoks) {
        if (tok_added_find(&tok->norm, w->norm.cp, w->norm.n, 0, &w->seg2))
            return oom(err);
    } else if (nn > 0) {
        if (vw_reserve((void **)&w->seg2.v, &w->seg2.cap, 1, sizeof *w->seg2.v))
            return oom(err);
        w->seg2.v[w->seg2.n++] = (tok_seg){0, nn, -1};
    }
    for (size_t i = 0; i < w->seg2.n; i++) {
        tok_seg g = w->seg2.v[i];
        vw_status rc = g.id >= 0
                           ? emit(out, g.id, w->norm.al[g.s].start, w->norm.al[g.e - 1].end, err)
                           : pretok_model(tok, w, g.s, g.e, out, err);
        if (rc)
            return rc;
    }
    return VW_OK;
}

vw_status vw_tok_encode(vw_tokenizer *tok, const char *text, size_t len, unsigned flags,
                        vw_encoding *out, vw_err *err) {
    if (!tok || !out || (!text && len))
        return VW_FAIL(err, VW_EINVAL, "bad_argument", "vw_tok_encode: NULL argument");
    if (len > INT32_MAX / 16) /* NFC may triple the text; offsets are int32 */
        return VW_FAIL(err, VW_ETOOLONG, "too_long", "tokenizer: %zu bytes of text", len);
    out->n = 0;
    tok_ws w = {0};
    bool added = !(flags & VW_TOK_NO_ADDED_TOKENS);
    vw_status rc = tok_utf8_decode(text ? text : "", len, &w.cps, &w.cps_cap, &w.ncps, NULL, err);
    if (rc)
        goto done;
    w.md = pcre2_match_data_create(1, NULL);
    if (!w.md) {
        rc = oom(err);
        goto done;
    }
    if (added && tok->raw.ntoks) {
        if (tok_added_find(&tok->raw, w.cps, w.ncps, 0, &w.seg1)) {
            rc = oom(err);
            goto done;
        }
    } else if (w.ncps > 0) {
        if (vw_reserve((void **)&w.seg1.v, &w.seg1.cap, 1, sizeof *w.seg1.v)) {
            rc = oom(err);
            goto done;
        }
        w.seg1.v[w.seg1.n++] = (tok_seg){0, (int32_t)w.ncps, -1};
    }
    for (size_t i = 0; i < w.seg1.n && !rc; i++) {
        tok_seg g = w.seg1.v[i];
        rc = g.id >= 0 ? emit(out, g.id, g.s, g.e, err)
                       : encode_text(tok, &w, g.s, g.e, added, out, err);
    }
done:
    ws_free(&w);
    if (rc)
        out->n = 0;
    return rc;
}
