/* tok_internal.h — the tokenizer's internals, shared by core/tokenizer/tokenizer.c (load, encode
 * pipeline), tok_text.c (UTF-8, NFC with alignments), tok_bpe.c (vocab, merges, BPE,
 * cache) and tok_split.c (regex pre-tokenizers, ByteLevel, added-token matching).
 * Not a public header: callers use tokenizer.h.
 *
 * Index conventions: "cp" indices count Unicode code points. An alignment (tok_span)
 * is a [start, end) range of code points of the ORIGINAL text, the unit HF
 * `tokenizers` reports offsets in (Python str indices).
 * Ownership: every struct here is owned by the vw_tokenizer (load-time, immutable
 * after load except the cache) or by a per-call tok_ws scratch.
 * Thread-safety: only tok_cache is mutated after load; it holds its own lock.
 */
#ifndef VW_TOK_INTERNAL_H
#define VW_TOK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/pystr.h"
#include "util/reserve.h"
#include "tokenizer.h"
#include "vw_status.h"

/* ---- text: UTF-8 and NFC (tok_text.c) ----------------------------------------- */

typedef struct tok_span {
    int32_t start, end; /* [start, end) original code points */
} tok_span;

/* Decodes len bytes of UTF-8 (Rust/Python rules: no overlongs, no surrogates, max
 * U+10FFFF) into (*cps)[0..*n). On invalid input returns VW_EINVAL, type
 * "invalid_utf8", with the byte offset of the first bad sequence in the message
 * and in *bad_at. */
vw_status tok_utf8_decode(const char *s, size_t len, uint32_t **cps, size_t *cap, size_t *n,
                          size_t *bad_at, vw_err *err);

/* UTF-8 encoding of a code point: vw_utf8_put (pystr.h). */

/* Code points whose NFC behaviour is not the identity in context (see tok_text.c). */
typedef struct tok_nfc_tables {
    uint8_t *second; /* bitmap over [0, TOK_NFC_MAX): may be the 2nd of a composition */
} tok_nfc_tables;
#define TOK_NFC_MAX 0x30000u

vw_status tok_nfc_tables_init(tok_nfc_tables *t);

/* Generated data (tok_unicode_data.c by tools/make_tok_unicode_tables.py). */
/* Sorted code points HF's normalization tables do not know: normalized as unassigned. */
extern const uint32_t tok_nfc_unknown[];
extern const size_t tok_nfc_unknown_n;

/* A general category whose Oniguruma (HF) set differs from PCRE2's. */
typedef struct tok_uprop {
    const char *name;     /* "L", "Lu", ... */
    const uint32_t *plus; /* [2 * nplus]: inclusive ranges only Oniguruma has */
    size_t nplus;
    size_t nminus; /* ranges only PCRE2 has (such a property is refused) */
} tok_uprop;
extern const tok_uprop tok_uprops[];
extern const size_t tok_uprops_n;
void tok_nfc_tables_free(tok_nfc_tables *t);

/* Normalized output of one text segment: code points and their alignments. */
typedef struct tok_norm {
    uint32_t *cp;
    tok_span *al;
    size_t n, cap;
    /* scratch for the decompose/recompose passes */
    uint32_t *dcp;
    int32_t *dchg;
    uint8_t *dccc;
    size_t dn, dcap;
} tok_norm;

/* Appends the normalization of in[0..n) (original code points base..base+n) to out.
 * nfc=false copies with identity alignments. Alignments follow HF `tokenizers`'
 * NormalizedString::transform fed by unicode-normalization-alignments' NFC: each
 * output char takes the range of the next unconsumed original char (a composed char
 * the range of its first original; marks it swallowed belong to none); inserted chars
 * share the previous char's range. */
vw_status tok_normalize(const tok_nfc_tables *t, bool nfc, const uint32_t *in, size_t n,
                        int32_t base, tok_norm *out);
void tok_norm_free(tok_norm *nm);

/* NFC of a short string (added-token contents at load). *out is malloc'd, NUL-terminated. */
vw_status tok_nfc_string(const tok_nfc_tables *t, const char *s, size_t len, char **out,
                         size_t *out_len);

/* ---- vocab, merges, BPE, cache (tok_bpe.c) ------------------------------------ */

typedef struct tok_vocab {
    char *arena; /* token strings, not NUL-terminated */
    size_t arena_len, arena_cap;
    uint32_t *off, *len; /* [n] */
    int32_t *id;         /* [n] */
    size_t n, cap;
    size_t unique;   /* distinct strings (HF's vocab size) */
    uint32_t *slots; /* open addressing: index+1 into off/len/id; 0 = empty */
    size_t nslots;   /* power of 2 */
} tok_vocab;

vw_status tok_vocab_add(tok_vocab *v, const char *s, size_t len, int32_t id);
vw_status tok_vocab_build_index(tok_vocab *v);
/* Id of s, or -1. */
int32_t tok_vocab_get(const tok_vocab *v, const char *s, size_t len);
void tok_vocab_free(tok_vocab *v);

typedef struct tok_merge_slot {
    uint64_t key; /* (a << 32 | b) + 1; 0 = empty */
    int32_t rank, new_id;
} tok_merge_slot;

typedef struct tok_merges {
    tok_merge_slot *slots;
    size_t nslots, n;
} tok_merges;

vw_status tok_merges_init(tok_merges *m, size_t expected);
/* Later insertions of the same pair replace earlier ones (as HF's HashMap collect). */
void tok_merges_put(tok_merges *m, int32_t a, int32_t b, int32_t rank, int32_t new_id);
void tok_merges_free(tok_merges *m);

/* One BPE output token: id and its [start, end) byte range in the model input. */
typedef struct tok_piece_tok {
    int32_t id, start, end;
} tok_piece_tok;

typedef struct tok_cache_entry {
    uint64_t hash;
    char *key; /* key bytes, then the tokens (one block) */
    uint32_t klen, ntok;
    tok_piece_tok *toks;
} tok_cache_entry;

typedef struct tok_cache {
    pthread_rwlock_t lock;
    tok_cache_entry *slots;
    size_t nslots, n, max_n;
} tok_cache;

typedef struct tok_bpe {
    tok_vocab vocab;
    tok_merges merges;
    int32_t small_id[0x800]; /* id of each single code point < U+0800, or -1 */
    int32_t byte_fb[256];    /* id of "<0xXX>" when byte_fallback, else -1 */
    int32_t unk_id;          /* -1: no unk_token */
    bool byte_fallback, fuse_unk, ignore_merges;
    tok_cache cache;
} tok_bpe;

/* Scratch for one BPE call (symbols and heap); reused across calls by one thread. */
typedef struct tok_bpe_ws {
    void *sym;
    size_t sym_cap;
    void *heap;
    size_t heap_cap;
    tok_piece_tok *out;
    size_t out_cap;
} tok_bpe_ws;

vw_status tok_bpe_init_tables(tok_bpe *b);
vw_status tok_cache_init(tok_cache *c, size_t max_entries);
void tok_bpe_free(tok_bpe *b);
/* Tokenizes the model input s[0..len) (one pre-token). On VW_OK, *toks points to *ntok
 * tokens in ws->out (valid until the next call with ws). */
vw_status tok_bpe_encode(tok_bpe *b, tok_bpe_ws *ws, const char *s, size_t len,
                         const tok_piece_tok **toks, size_t *ntok, vw_err *err);
void tok_bpe_ws_free(tok_bpe_ws *ws);

/* ---- regex pre-tokenizers, ByteLevel, added tokens (tok_split.c) -------------- */

typedef enum tok_behavior {
    TOK_REMOVED,
    TOK_ISOLATED,
    TOK_MERGED_PREV,
    TOK_MERGED_NEXT,
    TOK_CONTIGUOUS,
} tok_behavior;

/* Compiles an HF (Oniguruma-syntax) pattern with PCRE2 (UTF, UCP, MULTILINE), after
 * rewriting the escapes whose meaning differs (\s \S \w \W \h \H); literal=true
 * matches the string as is. VW_EUNSUPPORTED names what cannot be translated. */
vw_status tok_regex_compile(const char *pat, size_t len, bool literal, pcre2_code **out,
                            vw_err *err);

/* Whether pat (an HF Regex split pattern, as in tokenizer.json) is one of the
 * vetted patterns (docs/tokenizer.md "Split patterns a bundle may use"). */
bool tok_pattern_vetted(const char *pat, size_t len);

/* A match or gap of a pattern over a subject, in subject bytes. */
typedef struct tok_match {
    int32_t s, e;
    bool m;
} tok_match;

typedef struct tok_matches {
    tok_match *v;
    size_t n, cap;
} tok_matches;

/* Finds the matches of re in subj[0..len) the way HF's onig Pattern::find_matches
 * does (empty matches right after a match are skipped) and fills out with the
 * covering list of (range, is_match), is_match flipped when invert. Then applies
 * behavior (HF NormalizedString::split) in place: out keeps the ranges to keep. */
vw_status tok_regex_split(const pcre2_code *re, pcre2_match_data *md, const char *subj, size_t len,
                          bool invert, tok_behavior behavior, tok_matches *out, vw_err *err);

/* Added tokens, matched leftmost-longest (as aho-corasick LeftmostLongest). */
typedef struct tok_added {
    uint32_t *cps; /* content (normalized content for the normalized set) */
    size_t n;
    int32_t id;
    bool single_word, lstrip, rstrip, normalized, special;
} tok_added;

typedef struct tok_trie_node {
    uint32_t cp;
    int32_t child, sibling; /* -1 = none */
    int32_t token;          /* index into the token list, -1 = none */
} tok_trie_node;

typedef struct tok_trie {
    tok_trie_node *nodes; /* node 0 = root */
    size_t n, cap;
    tok_added *toks;
    size_t ntoks, toks_cap;
    uint64_t first[64]; /* bitmap of (first code point & 4095), a quick reject */
} tok_trie;

vw_status tok_trie_add(tok_trie *t, const uint32_t *cps, size_t n, const tok_added *info);
void tok_trie_free(tok_trie *t);

/* One split of a text: an added token (id >= 0) or text (id == -1), [s, e) in the
 * indices of the matched sequence. */
typedef struct tok_seg {
    int32_t s, e, id;
} tok_seg;

typedef struct tok_segs {
    tok_seg *v;
    size_t n, cap;
} tok_segs;

/* HF AddedVocabulary::find_matches over text[0..n) (code points): appends the splits
 * (covering the whole range, empty ranges omitted) to out, indices offset by base. */
vw_status tok_added_find(const tok_trie *t, const uint32_t *text, size_t n, int32_t base,
                         tok_segs *out);

/* GPT-2 byte-to-unicode map: UTF-8 of the char that stands for each byte. */
typedef struct tok_bytelevel {
    char utf8[256][2];
    uint8_t len[256];
} tok_bytelevel;

void tok_bytelevel_init(tok_bytelevel *bl);

/* ---- the tokenizer (tokenizer.c, tok_load.c) ------------------------------------ */

typedef enum tok_step_kind { TOK_STEP_SPLIT, TOK_STEP_BYTELEVEL } tok_step_kind;

typedef struct tok_step {
    tok_step_kind kind;
    pcre2_code *re; /* Split: the pattern; ByteLevel: NULL (uses gpt2) */
    char *regex;    /* Split with a Regex: its source (owned); NULL otherwise */
    size_t regex_len;
    bool invert;
    tok_behavior behavior;
    bool add_prefix_space, use_regex; /* ByteLevel */
} tok_step;

struct vw_tokenizer {
    tok_bpe bpe;
    bool nfc;
    tok_nfc_tables nfc_tables;
    tok_step *steps; /* pre-tokenizer sequence; a ByteLevel step can only be last */
    size_t nsteps, steps_cap;
    bool byte_level;  /* the model sees GPT-2 byte-level chars */
    pcre2_code *gpt2; /* ByteLevel's own split pattern (use_regex) */
    tok_bytelevel bl;
    tok_trie raw;    /* added tokens with normalized=false: matched in the input */
    tok_trie norm;   /* normalized=true: matched in the normalized text */
    tok_vocab added; /* added-token content -> id */
    int32_t vocab_size;
};

/* Fills t from a parsed tokenizer.json (jansson json_t *); t was calloc'd. On failure
 * t holds partial state for vw_tok_free. */
vw_status tok_load_config(vw_tokenizer *t, const void *root, vw_err *err);

#endif
