/* tokenizer.h — a Hugging Face tokenizer.json byte-level BPE, encoded exactly as
 * `tokenizers` does with add_special_tokens=False (ids and offsets).
 *
 * Supported: model BPE (vocab, merges as "a b" strings or ["a","b"] pairs,
 * ignore_merges, byte_fallback, unk_token); normalizer NFC / Sequence / none;
 * pre_tokenizer Sequence of Split (PCRE2, UTF+UCP; Isolated, Removed,
 * MergedWithPrevious, MergedWithNext, Contiguous; invert) and ByteLevel
 * (add_prefix_space, use_regex); added tokens (special, normalized, lstrip,
 * rstrip, single_word) matched in the input first. Anything else is refused at
 * load time with an error naming the component.
 *
 * Offsets are [start, end) in Unicode code points of the ORIGINAL text (Python
 * str indices), as `tokenizers` reports them after normalization alignment.
 *
 * Ownership: vw_tok_load returns a tokenizer the caller frees with vw_tok_free.
 * vw_encoding buffers are owned by the encoding; vw_encoding_free releases them
 * (the struct itself is the caller's, e.g. on the stack; reuse across calls is
 * allowed and avoids reallocations).
 * Thread-safety: a loaded tokenizer is immutable except for an internal,
 * internally locked cache: vw_tok_encode may be called from several threads.
 * Errors: invalid UTF-8 input -> VW_EINVAL, type "invalid_utf8", with the byte
 * offset; a bad file -> VW_EINVAL/VW_EUNSUPPORTED naming the field (types
 * "bad_tokenizer" / "unsupported_tokenizer"); text over 128 MiB -> VW_ETOOLONG. On any
 * encode failure the encoding holds no tokens (n == 0).
 * Details (offset semantics, Unicode-version handling, evidence): docs/tokenizer.md.
 */
#ifndef VW_TOKENIZER_H
#define VW_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_tokenizer vw_tokenizer;

/* The largest tokenizer.json loaded (a file, a buffer, a bundle's): parsed
 * whole, it costs 9 to 32 times its size in memory (Qwen3's 11.4 MB, 151,643
 * tokens: 102 MB; a 100 MB file of 10 M short merges: 3.2 GB). 32 MiB is
 * about 2.9 times a Qwen3.5-sized file (bench/tokenizer.sh's synthetic one,
 * 248,044 tokens and 247,788 merges: 11.7 MB). Larger is VW_EINVAL
 * "file_too_large" before any parsing. */
#define VW_TOK_MAX_JSON_BYTES (32u << 20)

typedef struct vw_encoding {
    int32_t *ids;     /* [n] */
    int32_t *offsets; /* [2n]: start0, end0, start1, end1, ... (code points) */
    size_t n;
    size_t cap;
} vw_encoding;

enum {
    /* Treat added-token strings (<|endoftext|>, also non-special ones) as plain text: the
     * result equals HF with the file's added_tokens emptied. */
    VW_TOK_NO_ADDED_TOKENS = 1u << 0,
};

/* Loads tokenizer.json from a file / from memory (len bytes, not NUL-terminated).
 * Error messages start with the path given ("PATH: ...") from a file, with
 * "tokenizer.json: " from memory (a bundle's file). */
vw_status vw_tok_load(const char *path, vw_tokenizer **out, vw_err *err);
vw_status vw_tok_load_json(const char *json, size_t len, vw_tokenizer **out, vw_err *err);
void vw_tok_free(vw_tokenizer *tok);

/* Refuses a tokenizer whose pre-tokenizer has a Split Regex outside the vetted
 * set (Qwen2/Qwen3, Qwen3.5, GPT-2, Llama 3: alternations of single quantified
 * classes, linear per word; docs/tokenizer.md "Split patterns a bundle may
 * use"): VW_EUNSUPPORTED, type "unvetted_pattern", quoting the pattern. A
 * bundle's tokenizer must pass (the engine checks at open, so bundle verify
 * and every load); vw_tok_load itself loads any pattern PCRE2 takes, for
 * `vela-worker tokenize`. String patterns are literal, always linear. Pure. */
vw_status vw_tok_check_patterns(const vw_tokenizer *tok, vw_err *err);

/* Encodes len bytes of UTF-8 text; replaces out's content. flags: VW_TOK_*. */
vw_status vw_tok_encode(vw_tokenizer *tok, const char *text, size_t len, unsigned flags,
                        vw_encoding *out, vw_err *err);
void vw_encoding_free(vw_encoding *enc);

/* Number of ids (max id + 1, added tokens included). */
int32_t vw_tok_vocab_size(const vw_tokenizer *tok);
/* Id of an exact token string (vocab or added), or -1. */
int32_t vw_tok_token_to_id(const vw_tokenizer *tok, const char *token);

#ifdef __cplusplus
}
#endif
#endif
