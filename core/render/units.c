/* units.c — character classes, `_UNIT` vote units and trims of the span decoder
 * (see units.h; docs/spec/answers.md §6.1, §6.4, §6.5.4). */
#include "units.h"

#include "util/pystr.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

vw_status vw_text_init(vw_text *t, const char *utf8, size_t len, vw_err *err) {
    memset(t, 0, sizeof *t);
    /* At most one code point per byte. */
    t->cp = malloc((len ? len : 1) * sizeof *t->cp);
    t->byte_at = malloc((len + 1) * sizeof *t->byte_at);
    if (!t->cp || !t->byte_at) {
        vw_text_free(t);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "text of %zu bytes", len);
    }
    size_t pos = 0;
    while (pos < len) {
        utf8proc_int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)utf8 + pos,
                                              (utf8proc_ssize_t)(len - pos), &c);
        if (k <= 0) {
            vw_text_free(t);
            return VW_FAIL(err, VW_EINVAL, "invalid_utf8", "invalid UTF-8 at byte %zu", pos);
        }
        t->byte_at[t->n] = pos;
        t->cp[t->n++] = (uint32_t)c;
        pos += (size_t)k;
    }
    t->byte_at[t->n] = len;
    return VW_OK;
}

void vw_text_free(vw_text *t) {
    if (!t)
        return;
    free(t->cp);
    free(t->byte_at);
    memset(t, 0, sizeof *t);
}

/* The release's CJK class, one range starting at U+8C48 (an NFC-normalised
 * U+F900 in its source), so Hangul, Yi and the PUA count as CJK (§6.1). */
bool vw_cp_is_cjk(uint32_t c) {
    return (c >= 0x2E80 && c <= 0x2FFF) || (c >= 0x3000 && c <= 0x303F) ||
           (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3100 && c <= 0x31FF) ||
           (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xA000 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7AF) ||
           (c >= 0x8C48 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFF00 && c <= 0xFFEF);
}

static bool in_list(uint32_t c, const uint32_t *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (list[i] == c)
            return true;
    return false;
}

static const uint32_t EDGE[] = {'[',    ']',    '(',    ')',    '{',    '}',    '<',
                                '>',    0x300C, 0x300D, 0x300E, 0x300F, 0x3010, 0x3011,
                                0x300A, 0x300B, 0x3008, 0x3009, '"',    '\'',   0x201C,
                                0x201D, 0x2018, 0x2019, 0x00AB, 0x00BB, 0x2039, 0x203A};
static const uint32_t UNIT_EXCLUDED[] = {']',    ')',    '}', '>',  0x300C, 0x300D,
                                         0x300E, 0x300F, '"', '\'', 0x201C, 0x201D};
static const uint32_t UNIT_TRAIL[] = {'.', ',', ';', ':', '!', '?'};
static const uint32_t URL_TRAIL[] = {'.', ',', ';', ':', '!', '?', ')'};

bool vw_cp_is_edge(uint32_t c) {
    return in_list(c, EDGE, sizeof EDGE / sizeof EDGE[0]);
}

static bool unit_body(uint32_t c) {
    return !vw_py_isspace(c) && !vw_cp_is_cjk(c) &&
           !in_list(c, UNIT_EXCLUDED, sizeof UNIT_EXCLUDED / sizeof UNIT_EXCLUDED[0]);
}

/* Literal ASCII prefix at i; `fold` makes it ASCII case-insensitive with ſ
 * (U+017F) for s, as Python re.IGNORECASE matches these letters. */
static size_t prefix_at(const vw_text *t, size_t i, const char *lit, bool fold) {
    size_t k = 0;
    for (; lit[k]; k++) {
        if (i + k >= t->n)
            return 0;
        uint32_t c = t->cp[i + k], want = (unsigned char)lit[k];
        if (fold && c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        if (fold && c == 0x17F)
            c = 's';
        if (c != want)
            return 0;
    }
    return k;
}

static size_t url_prefix(const vw_text *t, size_t i, bool fold) {
    size_t k = prefix_at(t, i, "http://", fold);
    if (!k)
        k = prefix_at(t, i, "https://", fold);
    if (!k)
        k = prefix_at(t, i, "www.", fold);
    return k;
}

/* `(?:https?://|www\.)BODY+?(?=[.,;:!?]*(?!BODY))`: the body is the maximal
 * BODY run less its longest UNIT-TRAIL suffix, at least one char; 0 = no match. */
static size_t unit_url(const vw_text *t, size_t i) {
    size_t k = url_prefix(t, i, false);
    if (!k)
        return 0;
    size_t p = i + k, r = 0;
    while (p + r < t->n && unit_body(t->cp[p + r]))
        r++;
    if (r == 0)
        return 0;
    size_t body = r;
    while (body > 0 &&
           in_list(t->cp[p + body - 1], UNIT_TRAIL, sizeof UNIT_TRAIL / sizeof UNIT_TRAIL[0]))
        body--;
    return k + (body ? body : 1);
}

static bool unit_run_char(uint32_t c) {
    return (!vw_cp_is_cjk(c) && vw_py_isalnum(c)) || c == '@' || c == '.' || c == '_' || c == '-' ||
           c == '+';
}

vw_status vw_units_scan(const vw_text *t, int64_t **bounds, size_t *n_units, vw_err *err) {
    *bounds = NULL;
    *n_units = 0;
    if (t->n == 0)
        return VW_OK;
    /* Units are disjoint and non-empty: at most one per code point. */
    int64_t *b = malloc(2 * t->n * sizeof *b);
    if (!b)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "units of %zu code points", t->n);
    size_t n = 0, i = 0;
    while (i < t->n) {
        size_t len = unit_url(t, i);
        if (!len)
            while (i + len < t->n && unit_run_char(t->cp[i + len]))
                len++;
        if (!len && !vw_py_isspace(t->cp[i]))
            len = 1;
        if (!len) {
            i++;
            continue;
        }
        b[2 * n] = (int64_t)i;
        b[2 * n + 1] = (int64_t)(i + len);
        n++;
        i += len;
    }
    *bounds = b;
    *n_units = n;
    return VW_OK;
}

vw_status vw_text_check_words(const vw_text *t, const int32_t *words, size_t n_words, vw_err *err) {
    int64_t prev = 0;
    for (size_t w = 0; w < n_words; w++) {
        int64_t a = words[2 * w], b = words[2 * w + 1];
        if (a < prev || a >= b || b > (int64_t)t->n)
            return VW_FAIL(err, VW_EINVAL, "bad_words",
                           "word %zu = [%lld, %lld) is not an ordered, non-empty range inside a "
                           "text of %zu code points (previous word ends at %lld)",
                           w, (long long)a, (long long)b, t->n, (long long)prev);
        prev = b;
    }
    return VW_OK;
}

vw_status vw_word_units(const vw_text *t, const int32_t *words, size_t n_words, int64_t *unit_of,
                        vw_err *err) {
    int64_t *bounds = NULL;
    size_t n_units = 0;
    vw_status st = vw_units_scan(t, &bounds, &n_units, err);
    if (st != VW_OK)
        return st;
    size_t u = 0; /* words ascend, so the unit search only moves forward */
    for (size_t w = 0; w < n_words; w++) {
        int64_t f = words[2 * w], end = words[2 * w + 1];
        while (f < end && vw_py_isspace(t->cp[f]))
            f++;
        unit_of[w] = -1;
        while (u < n_units && bounds[2 * u] <= f)
            u++;
        /* u is now the first unit starting after f: u - 1 is the greatest start <= f. */
        if (u == 0 || f >= end || f >= (int64_t)t->n)
            continue;
        if (f < bounds[2 * (u - 1) + 1])
            unit_of[w] = (int64_t)(u - 1);
    }
    free(bounds);
    return VW_OK;
}

void vw_span_trim(const vw_text *t, int64_t *start, int64_t *end) {
    int64_t a = *start, b = *end;
    while (a < b && (vw_py_isspace(t->cp[a]) || vw_cp_is_edge(t->cp[a])))
        a++;
    while (b > a && (vw_py_isspace(t->cp[b - 1]) || vw_cp_is_edge(t->cp[b - 1])))
        b--;
    /* The reference matches the URL prefix from `a` against the whole text (re.match
     * with no end position), so a prefix may run past b. */
    if (a < (int64_t)t->n && url_prefix(t, (size_t)a, true)) {
        for (int64_t i = a; i < b; i++) {
            if (vw_cp_is_cjk(t->cp[i])) {
                b = i;
                break;
            }
        }
        while (b > a && (in_list(t->cp[b - 1], URL_TRAIL, sizeof URL_TRAIL / sizeof URL_TRAIL[0]) ||
                         vw_cp_is_edge(t->cp[b - 1]) || vw_py_isspace(t->cp[b - 1])))
            b--;
    }
    *start = a;
    *end = b;
}
