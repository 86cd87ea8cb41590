/* words.h — span word units (GLiNER2-style `_WORD`, docs/spec/request.md §6.4,
 * docs/spec/answers.md §6.2–6.3) and the word -> first-token mapping.
 *
 * The `_WORD` pattern is the release's, with Python `re.IGNORECASE` semantics
 * made explicit for PCRE2 (UTF + UCP, no PCRE2_CASELESS): ASCII letters also
 * match U+0130, U+0131, U+017F and U+212A; `s` of "https" also matches U+017F;
 * the CJK class is the release's ranges (U+8C48–FAFF included) plus the 93 code
 * points whose simple lower-case falls inside them (docs/contract.md Decision
 * 7); whitespace is Python str.isspace. Words are scanned left to right as
 * re.finditer does (each visited position matched anchored); the URL
 * alternative is written in an equivalent linear form, and the e-mail
 * alternative is skipped inside a run where it already failed, so a scan is
 * linear in the text (the reference regex is quadratic on some inputs).
 *
 * Ownership: vw_word_re_new returns a compiled pattern (vw_word_re_free);
 * arrays returned in vw_words / *ranges are owned by the caller (free /
 * vw_words_free). Thread-safety: a vw_word_re is immutable and may be shared;
 * each call allocates its own match data. Errors: VW_ENOMEM; VW_EINVAL
 * "bad_offsets" for token offsets out of order.
 */
#ifndef VW_WORDS_H
#define VW_WORDS_H

#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_word_re vw_word_re;

vw_status vw_word_re_new(vw_word_re **out, vw_err *err);
void vw_word_re_free(vw_word_re *re);

/* The word units of text (len bytes of UTF-8) as code-point ranges:
 * *ranges = [start0, end0, start1, end1, ...], *n words (caller frees). */
vw_status vw_words_split(const vw_word_re *re, const char *text, size_t len, int32_t **ranges,
                         size_t *n, vw_err *err);

/* Words that some token overlaps, each with its first overlapping token. */
typedef struct vw_words {
    int32_t *offsets; /* [2n] code-point ranges */
    int32_t *first;   /* [n] index of the word's first sub-word token */
    size_t n;
} vw_words;

/* word_first_tokens (docs/spec/answers.md §6.3): tokens with end > start are valid; a word's token
 * is the first whose running maximum end passes the word start, moved on to the next valid token;
 * the word is kept when that token starts before the word ends. tok_offsets: [2 n_tokens] code
 * points. */
vw_status vw_words_of(const int32_t *ranges, size_t n_ranges, const int32_t *tok_offsets,
                      size_t n_tokens, vw_words *out, vw_err *err);
void vw_words_free(vw_words *w);

/* The 93 code points outside the CJK ranges that the release's IGNORECASE
 * class also matches (Decision 7); *n receives the count. */
const uint32_t *vw_words_cjk_extras(size_t *n);
/* True when cp is in the release's CJK ranges (without the extras). */
int vw_words_in_cjk_ranges(uint32_t cp);

#ifdef __cplusplus
}
#endif
#endif
