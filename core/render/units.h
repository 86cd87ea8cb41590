/* units.h — the span decoder's text rules: character classes, `_UNIT` vote
 * units, word -> unit mapping and span trimming (docs/spec/answers.md §6.1, §6.4,
 * §6.5.4). Offsets are Unicode code points (Python str indices).
 *
 * Owns the case-sensitive `_UNIT` scan and the trims. Never splits words (the
 * `_WORD` rules belong to the plan, core/render/words.c) and never reads probabilities.
 *
 * Character classes follow CPython: isspace is str.isspace; isalnum is
 * str.isalnum (general category L* or N*, from utf8proc's UCD, Unicode 15 like
 * CPython 3.12); the CJK class is the release's, U+8C48–FAFF included.
 *
 * Ownership: vw_text owns its arrays (vw_text_free). Thread-safety: pure
 * functions over caller data. Errors: invalid UTF-8 -> VW_EINVAL "invalid_utf8"
 * with the byte offset; malformed word offsets -> VW_EINVAL "bad_words".
 */
#ifndef VW_UNITS_H
#define VW_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A UTF-8 text decoded to code points, with the byte offset of every code point. */
typedef struct vw_text {
    uint32_t *cp;    /* [n] code points */
    size_t *byte_at; /* [n + 1]: byte offset of cp[i] in the UTF-8 input; byte_at[n] = len */
    size_t n;
} vw_text;

/* Decodes len bytes of UTF-8 into *t (replacing nothing: t is written whole). */
vw_status vw_text_init(vw_text *t, const char *utf8, size_t len, vw_err *err);
/* Releases t's arrays (t may be zeroed or NULL). */
void vw_text_free(vw_text *t);

bool vw_cp_is_cjk(uint32_t c);
bool vw_cp_is_edge(uint32_t c);

/* The `_UNIT` matches of the text, scanned left to right: *bounds = malloc'd
 * [n_units][2] code-point ranges (caller frees; NULL when there are none). */
vw_status vw_units_scan(const vw_text *t, int64_t **bounds, size_t *n_units, vw_err *err);

/* Checks word offsets [W][2]: 0 <= start < end <= t->n and start >= the previous end. */
vw_status vw_text_check_words(const vw_text *t, const int32_t *words, size_t n_words, vw_err *err);

/* unit_of[w] = the unit holding word w's first non-space character (the match
 * with the greatest start <= it, valid when that character lies inside the match
 * and inside the word), else -1. Words must pass vw_text_check_words. */
vw_status vw_word_units(const vw_text *t, const int32_t *words, size_t n_words, int64_t *unit_of,
                        vw_err *err);

/* Trims [*start, *end): strips whitespace and EDGE chars on both sides; when what
 * is left starts with a URL prefix (http://, https://, www., ASCII
 * case-insensitive, ſ for s), cuts at its first CJK char and strips trailing
 * `.,;:!?)`, EDGE and whitespace. May leave *end <= *start (empty). */
void vw_span_trim(const vw_text *t, int64_t *start, int64_t *end);

#ifdef __cplusplus
}
#endif
#endif
