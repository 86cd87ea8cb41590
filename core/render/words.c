/* words.c — `_WORD` units with PCRE2 and the first-token mapping (see
 * words.h). Owns the pattern text and the scan; never decodes spans. */
#include "words.h"
#include "util/reserve.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vw_word_re {
    pcre2_code *full;     /* every alternative */
    pcre2_code *no_email; /* the e-mail alternative replaced by (?!) */
};

/* The release's CJK ranges (one starts at U+8C48: an NFC artefact of U+F900). */
static const uint32_t CJK_RANGES[][2] = {
    {0x2E80, 0x2FFF}, {0x3000, 0x303F}, {0x3040, 0x30FF}, {0x3100, 0x31FF},
    {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xAC00, 0xD7AF},
    {0x8C48, 0xFAFF}, {0xFE30, 0xFE4F}, {0xFF00, 0xFFEF},
};

/* Outside the ranges, lower-casing into them (Python IGNORECASE classes):
 * Cherokee capitals, U+1C88, U+1D79, U+1D8E and ten IPA letters. */
static const uint32_t CJK_EXTRAS[] = {
    0x025C, 0x0261, 0x0265, 0x0266, 0x026A, 0x026C, 0x0282, 0x0287, 0x029D, 0x029E, 0x13A0, 0x13A1,
    0x13A2, 0x13A3, 0x13A4, 0x13A5, 0x13A6, 0x13A7, 0x13A8, 0x13A9, 0x13AA, 0x13AB, 0x13AC, 0x13AD,
    0x13AE, 0x13AF, 0x13B0, 0x13B1, 0x13B2, 0x13B3, 0x13B4, 0x13B5, 0x13B6, 0x13B7, 0x13B8, 0x13B9,
    0x13BA, 0x13BB, 0x13BC, 0x13BD, 0x13BE, 0x13BF, 0x13C0, 0x13C1, 0x13C2, 0x13C3, 0x13C4, 0x13C5,
    0x13C6, 0x13C7, 0x13C8, 0x13C9, 0x13CA, 0x13CB, 0x13CC, 0x13CD, 0x13CE, 0x13CF, 0x13D0, 0x13D1,
    0x13D2, 0x13D3, 0x13D4, 0x13D5, 0x13D6, 0x13D7, 0x13D8, 0x13D9, 0x13DA, 0x13DB, 0x13DC, 0x13DD,
    0x13DE, 0x13DF, 0x13E0, 0x13E1, 0x13E2, 0x13E3, 0x13E4, 0x13E5, 0x13E6, 0x13E7, 0x13E8, 0x13E9,
    0x13EA, 0x13EB, 0x13EC, 0x13ED, 0x13EE, 0x13EF, 0x1C88, 0x1D79, 0x1D8E,
};

const uint32_t *vw_words_cjk_extras(size_t *n) {
    *n = sizeof CJK_EXTRAS / sizeof CJK_EXTRAS[0];
    return CJK_EXTRAS;
}

int vw_words_in_cjk_ranges(uint32_t cp) {
    for (size_t i = 0; i < sizeof CJK_RANGES / sizeof CJK_RANGES[0]; i++)
        if (cp >= CJK_RANGES[i][0] && cp <= CJK_RANGES[i][1])
            return 1;
    return 0;
}

/* Python str.isspace. */
#define SPACE                                                                                      \
    "\\t-\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"  \
    "\\x{205f}\\x{3000}"
/* URL trail characters: . , ; : ! ? ) ] } > " ' U+201D U+2019 U+00BB */
#define TRAIL ".,;:!?)\\]}>\"'\\x{201d}\\x{2019}\\x{bb}"
/* ASCII letters under IGNORECASE: also U+0130, U+0131, U+017F, U+212A. */
#define FOLD "\\x{130}\\x{131}\\x{17f}\\x{212a}"

static void cjk_class(char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < sizeof CJK_RANGES / sizeof CJK_RANGES[0]; i++)
        o += (size_t)snprintf(out + o, cap - o, "\\x{%x}-\\x{%x}", CJK_RANGES[i][0],
                              CJK_RANGES[i][1]);
    for (size_t i = 0; i < sizeof CJK_EXTRAS / sizeof CJK_EXTRAS[0]; i++)
        o += (size_t)snprintf(out + o, cap - o, "\\x{%x}", CJK_EXTRAS[i]);
}

/* The `_WORD` alternatives, in order (docs/spec/answers.md §6.2):
 * 1 URL — the lazy body + lookahead of the release, written greedily: the
 *   body ends at the last non-TRAIL character of the maximal non-space,
 *   non-CJK run, or is its first character when the run is all TRAIL;
 * 2 e-mail (greedy local part, domain backtracks to the last ".xx");
 * 3 handle; 4 one CJK character; 5 a non-CJK word run joined by - or _;
 * 6 any other non-space character. */
static char *pattern(bool email) {
    char cjk[4096];
    cjk_class(cjk, sizeof cjk);
    size_t cap = 65536; /* 8 copies of the CJK class, at most 4 KiB each */
    char *p = malloc(cap);
    if (!p)
        return NULL;
    snprintf(p, cap,
             "((?:[hH][tT][tT][pP][sS\\x{17f}]?://|[wW][wW][wW]\\.)"
             "(?:[^" SPACE "%s]*[^" SPACE "%s" TRAIL "](?=[" TRAIL "]*(?![^" SPACE "%s]))"
             "|[^" SPACE "%s]))"
             "|(%s)"
             "|@[a-zA-Z0-9_" FOLD "]+"
             "|[%s]"
             "|[^\\W%s]+(?:[\\-_][^\\W%s]+)*"
             "|[^" SPACE "]",
             cjk, cjk, cjk, cjk,
             email ? "[a-zA-Z0-9._%+\\-" FOLD "]+@[a-zA-Z0-9.\\-" FOLD "]+\\.[a-zA-Z" FOLD "]{2,}"
                   : "(?!)",
             cjk, cjk, cjk);
    return p;
}

static pcre2_code *compile(bool email, vw_err *err) {
    char *p = pattern(email);
    if (!p) {
        VW_FAIL(err, VW_ENOMEM, "oom", "word pattern");
        return NULL;
    }
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_ANCHORED, &code, &at, NULL);
    free(p);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        VW_FAIL(err, VW_EINVAL, "bad_pattern", "word pattern at %zu: %s", (size_t)at, (char *)msg);
        return NULL;
    }
    /* JIT is an optimisation: without it the interpreter runs the same pattern. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    return re;
}

vw_status vw_word_re_new(vw_word_re **out, vw_err *err) {
    *out = NULL;
    vw_word_re *re = calloc(1, sizeof *re);
    if (!re)
        return VW_FAIL(err, VW_ENOMEM, "oom", "word pattern");
    re->full = compile(true, err);
    re->no_email = re->full ? compile(false, err) : NULL;
    if (!re->no_email) {
        vw_status st = err ? err->status : VW_EINVAL;
        vw_word_re_free(re);
        return st ? st : VW_EINVAL;
    }
    *out = re;
    return VW_OK;
}

void vw_word_re_free(vw_word_re *re) {
    if (!re)
        return;
    pcre2_code_free(re->full);
    pcre2_code_free(re->no_email);
    free(re);
}

static bool local_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '%' || c == '+' || c == '-';
}

/* End (bytes) of the run of e-mail local-part characters starting at i. */
static size_t local_run_end(const char *t, size_t len, size_t i) {
    while (i < len) {
        unsigned char c = (unsigned char)t[i];
        if (local_char(c)) {
            i++;
        } else if (i + 1 < len && ((c == 0xC4 && ((unsigned char)t[i + 1] == 0xB0 ||
                                                  (unsigned char)t[i + 1] == 0xB1)) ||
                                   (c == 0xC5 && (unsigned char)t[i + 1] == 0xBF))) {
            i += 2; /* U+0130, U+0131, U+017F */
        } else if (i + 2 < len && c == 0xE2 && (unsigned char)t[i + 1] == 0x84 &&
                   (unsigned char)t[i + 2] == 0xAA) {
            i += 3; /* U+212A */
        } else {
            break;
        }
    }
    return i;
}

static size_t cp_count(const char *t, size_t a, size_t b) {
    size_t n = 0;
    for (size_t i = a; i < b; i++)
        n += ((unsigned char)t[i] & 0xC0) != 0x80;
    return n;
}

static int match_at(const pcre2_code *re, const char *t, size_t len, size_t at,
                    pcre2_match_data *md) {
    int rc = pcre2_match(re, (PCRE2_SPTR)t, len, at, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re, (PCRE2_SPTR)t, len, at, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
    return rc;
}

static vw_status push_range(int32_t **r, size_t *n, size_t *cap, int64_t a, int64_t b) {
    if (vw_reserve((void **)r, cap, *n + 1, 2 * sizeof **r)) /* a pair per element */
        return VW_ENOMEM;
    (*r)[2 * *n] = (int32_t)a;
    (*r)[2 * *n + 1] = (int32_t)b;
    (*n)++;
    return VW_OK;
}

vw_status vw_words_split(const vw_word_re *re, const char *text, size_t len, int32_t **ranges,
                         size_t *n, vw_err *err) {
    *ranges = NULL;
    *n = 0;
    size_t cap = 0, at = 0, cp = 0, dead = 0;
    vw_status st = VW_OK;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->full, NULL);
    if (!md)
        return VW_FAIL(err, VW_ENOMEM, "oom", "word match data");
    while (at < len) {
        const pcre2_code *code = at < dead ? re->no_email : re->full;
        int rc = match_at(code, text, len, at, md);
        if (rc == PCRE2_ERROR_NOMATCH) { /* whitespace: finditer moves on */
            at++;
            while (at < len && ((unsigned char)text[at] & 0xC0) == 0x80)
                at++;
            cp++;
            continue;
        }
        if (rc < 0) {
            st = VW_FAIL(err, VW_EINVAL, "word_scan", "word scan failed at byte %zu (pcre2 %d)", at,
                         rc);
            goto done;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t end = ov[1], w = cp_count(text, at, end);
        bool url = rc > 1 && ov[2] != PCRE2_UNSET, mail = rc > 2 && ov[4] != PCRE2_UNSET;
        /* The e-mail alternative failed here, so it fails anywhere in the same
         * local-part run (same run end, same '@' and domain). */
        if (!url && !mail && code == re->full)
            dead = local_run_end(text, len, at);
        if (push_range(ranges, n, &cap, (int64_t)cp, (int64_t)(cp + w)) != VW_OK) {
            st = VW_FAIL(err, VW_ENOMEM, "oom", "word ranges");
            goto done;
        }
        cp += w;
        at = end > at ? end : at + 1;
    }
done:
    pcre2_match_data_free(md);
    if (st != VW_OK) {
        free(*ranges);
        *ranges = NULL;
        *n = 0;
    }
    return st;
}

/* First index in [0, n) with a[i] > x (a non-decreasing), or n. */
static size_t upper_bound(const int32_t *a, size_t n, int32_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

vw_status vw_words_of(const int32_t *ranges, size_t n_ranges, const int32_t *tok_offsets,
                      size_t n_tokens, vw_words *out, vw_err *err) {
    memset(out, 0, sizeof *out);
    if (!n_ranges || !n_tokens)
        return VW_OK;
    int32_t *reach = malloc(n_tokens * sizeof *reach);
    int32_t *next_valid = malloc((n_tokens + 1) * sizeof *next_valid);
    out->offsets = malloc(2 * n_ranges * sizeof *out->offsets);
    out->first = malloc(n_ranges * sizeof *out->first);
    vw_status st = VW_OK;
    if (!reach || !next_valid || !out->offsets || !out->first) {
        st = VW_FAIL(err, VW_ENOMEM, "oom", "words of %zu tokens", n_tokens);
        goto done;
    }
    int32_t run = -1;
    for (size_t t = 0; t < n_tokens; t++) {
        bool valid = tok_offsets[2 * t + 1] > tok_offsets[2 * t];
        if (valid && tok_offsets[2 * t + 1] > run)
            run = tok_offsets[2 * t + 1];
        reach[t] = run;
    }
    next_valid[n_tokens] = (int32_t)n_tokens;
    for (size_t t = n_tokens; t-- > 0;)
        next_valid[t] =
            tok_offsets[2 * t + 1] > tok_offsets[2 * t] ? (int32_t)t : next_valid[t + 1];
    for (size_t w = 0; w < n_ranges; w++) {
        int32_t a = ranges[2 * w], b = ranges[2 * w + 1];
        size_t t = upper_bound(reach, n_tokens, a);
        if (t >= n_tokens)
            continue;
        t = (size_t)next_valid[t];
        if (t >= n_tokens || tok_offsets[2 * t] >= b)
            continue;
        out->offsets[2 * out->n] = a;
        out->offsets[2 * out->n + 1] = b;
        out->first[out->n++] = (int32_t)t;
    }
done:
    free(reach);
    free(next_valid);
    if (st != VW_OK)
        vw_words_free(out);
    return st;
}

void vw_words_free(vw_words *w) {
    free(w->offsets);
    free(w->first);
    memset(w, 0, sizeof *w);
}
