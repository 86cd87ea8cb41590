/* tok_split.c — splitting for the tokenizer: the Split pre-tokenizer's regex (HF's
 * Oniguruma patterns run with PCRE2), the delimiter behaviours of
 * NormalizedString::split, the ByteLevel byte map, and added-token matching.
 *
 * Regex semantics. HF `tokenizers` compiles Split/ByteLevel patterns with Oniguruma
 * (Ruby syntax, UTF-8). PCRE2 with UTF+UCP agrees on \p{..} classes, (?i:..) single
 * char folds (s/S/U+017F) and lookahead, but not on a few escapes, which we rewrite:
 *   \s  Onig: U+0009-000D, U+0085, Zs, Zl, Zp (so not U+180E, which PCRE2 includes)
 *   \w  Onig: L, M, Nd, Pc (PCRE2: L, N, _)        \h  Onig: hex digit (PCRE2: blank)
 * and ^/$ are line anchors in Onig (PCRE2_MULTILINE). Negated forms inside a bracket
 * class cannot be rewritten and are refused. Onig's multi-char case folds (ß ~ ss)
 * have no PCRE2 equivalent; the contraction group of the GPT-2/Qwen patterns needs
 * none. Match iteration follows rust-onig's FindMatches (an empty match right after
 * the previous match is skipped by one char).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

/* ---- regex -------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom || vw_reserve((void **)&b->p, &b->cap, b->n + n + 1, 1)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) {
    sb_put(b, s, strlen(s));
}

static const tok_uprop *uprop(const char *name, size_t n) {
    for (size_t i = 0; i < tok_uprops_n; i++)
        if (strlen(tok_uprops[i].name) == n && !memcmp(tok_uprops[i].name, name, n))
            return &tok_uprops[i];
    return NULL;
}

/* An escape that stands for a set: literal members plus general categories. */
typedef struct onig_set {
    const char *lit;
    const char *props[4];
} onig_set;

static const onig_set SET_SPACE = {"\\t\\n\\x{0B}\\f\\r\\x{85}", {"Zs", "Zl", "Zp", NULL}};
static const onig_set SET_WORD = {"", {"L", "M", "Nd", "Pc"}};
static const onig_set SET_HEX = {"0-9A-Fa-f", {NULL}};

/* Class members of one category: PCRE2's \p{X} plus the ranges only Oniguruma has. */
static void put_prop_members(sbuf *b, const tok_uprop *u) {
    sb_str(b, "\\p{");
    sb_str(b, u->name);
    sb_str(b, "}");
    for (size_t i = 0; i < u->nplus; i++) {
        char r[40];
        snprintf(r, sizeof r, "\\x{%X}-\\x{%X}", u->plus[2 * i], u->plus[2 * i + 1]);
        sb_str(b, r);
    }
}

/* Emits set (negated when neg) as a class, or as class members when in_class. Returns
 * false when it cannot be expressed (a negated set inside a class that needs ranges). */
static bool put_set(sbuf *b, const onig_set *set, bool neg, bool in_class) {
    if (in_class && neg)
        return false;
    if (!in_class)
        sb_str(b, neg ? "[^" : "[");
    sb_str(b, set->lit);
    for (size_t i = 0; i < 4 && set->props[i]; i++)
        put_prop_members(b, uprop(set->props[i], strlen(set->props[i])));
    if (!in_class)
        sb_str(b, "]");
    return true;
}

/* \p{X} \P{X} \p{^X} \pX at pat[i] (pat[i] is 'p' or 'P'); returns chars consumed after
 * the backslash, or 0 when it cannot be translated (bad names the construct). */
static size_t put_property(sbuf *b, const char *pat, size_t len, size_t i, bool in_class, char *bad,
                           size_t badn) {
    bool neg = pat[i] == 'P';
    const char *name = pat + i + 1;
    size_t n = 1, used = 2;
    if (i + 1 < len && pat[i + 1] == '{') {
        const char *end = memchr(pat + i + 2, '}', len - i - 2);
        if (!end)
            return 1; /* let PCRE2 report it */
        name = pat + i + 2;
        n = (size_t)(end - name);
        used = n + 3;
        if (n && name[0] == '^') {
            neg = !neg;
            name++;
            n--;
        }
    }
    const tok_uprop *u = uprop(name, n);
    if (!u) { /* a script or long name: PCRE2's own data */
        sb_put(b, pat + i - 1, used + 1);
        return used;
    }
    onig_set set = {"", {u->name, NULL}};
    bool ok = u->nminus == 0;
    if (ok && in_class && neg) { /* only expressible when nothing must be added */
        ok = u->nplus == 0;
        if (ok) {
            sb_str(b, "\\P{");
            sb_str(b, u->name);
            sb_str(b, "}");
        }
    } else if (ok) {
        put_set(b, &set, neg, in_class);
    }
    if (!ok) {
        snprintf(bad, badn, "\\%c{%.*s}%s", neg ? 'P' : 'p', (int)n, name,
                 u->nminus ? " (its Unicode data differs)" : " inside a character class");
        return 0;
    }
    return used;
}

/* Rewrites pat into b; returns false (bad = the construct) when it cannot. */
static bool translate(const char *pat, size_t len, sbuf *b, char *bad, size_t badn) {
    bool in_class = false;
    size_t class_start = 0;
    for (size_t i = 0; i < len; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char e = pat[++i];
            const onig_set *set = e == 's' || e == 'S'   ? &SET_SPACE
                                  : e == 'w' || e == 'W' ? &SET_WORD
                                  : e == 'h' || e == 'H' ? &SET_HEX
                                                         : NULL;
            if (e == 'p' || e == 'P') {
                size_t used = put_property(b, pat, len, i, in_class, bad, badn);
                if (!used)
                    return false;
                i += used - 1;
            } else if (!set) {
                char esc[2] = {'\\', e};
                sb_put(b, esc, 2);
            } else if (!put_set(b, set, e == 'S' || e == 'W' || e == 'H', in_class)) {
                snprintf(bad, badn, "\\%c inside a character class", e);
                return false;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            sb_put(b, &c, 1);
            if (i + 1 < len && pat[i + 1] == '^') {
                sb_put(b, "^", 1);
                i++;
            }
            class_start = b->n;
            continue;
        }
        if (in_class && c == '[') {
            if (i + 1 < len && pat[i + 1] == ':') { /* POSIX bracket [:name:] */
                const char *end = memchr(pat + i, ']', len - i);
                if (!end) {
                    snprintf(bad, badn, "an unterminated POSIX class");
                    return false;
                }
                sb_put(b, pat + i, (size_t)(end - (pat + i)) + 1);
                i = (size_t)(end - pat);
                continue;
            }
            snprintf(bad, badn, "a nested character class");
            return false;
        }
        if (in_class && c == ']' && b->n > class_start)
            in_class = false;
        sb_put(b, &c, 1);
    }
    return true;
}

/* The split patterns a bundle may use, byte for byte as tokenizer.json holds
 * them (JSON-decoded). Each is an alternation of single classes or literals,
 * each quantified once (no quantified group, no back-reference), so PCRE2's
 * backtracking at one position is at most linear in the run it scans; Qwen's
 * `\s*[\r\n]+` is the only overlap, and a failed try there is followed by
 * `\s+(?!\S)` consuming the run, so a subject costs linear time overall
 * (docs/tokenizer.md: measured on runs of each class). */
static const char *const vetted[] = {
    /* Qwen2, Qwen2.5, Qwen3 */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* Qwen3.5 (letters with their marks) */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* Llama 3 (cl100k: digits in threes) */
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    /* GPT-2 (ByteLevel's own, when a file spells it as a Split) */
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
};

bool tok_pattern_vetted(const char *pat, size_t len) {
    for (size_t i = 0; i < sizeof vetted / sizeof vetted[0]; i++)
        if (strlen(vetted[i]) == len && !memcmp(vetted[i], pat, len))
            return true;
    return false;
}

vw_status tok_regex_compile(const char *pat, size_t len, bool literal, pcre2_code **out,
                            vw_err *err) {
    sbuf b = {0};
    char bad[96] = "";
    bool ok = true;
    if (literal)
        sb_put(&b, pat, len);
    else
        ok = translate(pat, len, &b, bad, sizeof bad);
    if (!ok) {
        free(b.p);
        return VW_FAIL(err, VW_EUNSUPPORTED, "unsupported_tokenizer",
                       "tokenizer: Split regex uses %s, which PCRE2 cannot reproduce", bad);
    }
    if (b.oom) {
        free(b.p);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: regex");
    }
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP | PCRE2_MULTILINE);
    int ecode = 0;
    PCRE2_SIZE eoff = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(b.p ? b.p : ""), b.n, opts, &ecode, &eoff, NULL);
    free(b.p);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(ecode, msg, sizeof msg);
        return VW_FAIL(err, VW_EINVAL, "bad_tokenizer",
                       "tokenizer: Split regex does not compile at %zu: %s", (size_t)eoff,
                       (const char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter is the fallback */
    *out = re;
    return VW_OK;
}

static vw_status push_match(tok_matches *o, int32_t s, int32_t e, bool m) {
    if (vw_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
        return VW_ENOMEM;
    o->v[o->n++] = (tok_match){s, e, m};
    return VW_OK;
}

/* Pattern::find_matches for onig: the covering list of (range, is_match). */
static vw_status find_matches(const pcre2_code *re, pcre2_match_data *md, const char *subj,
                              size_t len, bool invert, tok_matches *o, vw_err *err) {
    o->n = 0;
    if (len == 0)
        return push_match(o, 0, 0, invert);
    size_t last_end = 0, prev = 0;
    bool have_last = false;
    size_t last_match_end = 0;
    while (last_end <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)subj, len, last_end, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH)
            break;
        if (rc < 0) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return VW_FAIL(err, VW_EINVAL, "regex_failed", "tokenizer: regex match: %s",
                           (const char *)msg);
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[0], e = ov[1];
        if (e < s)
            e = s; /* \K in a lookahead; not produced by tokenizer patterns */
        if (e == s && have_last && last_match_end == e) {
            if (last_end >= len)
                break;
            unsigned char c0 = (unsigned char)subj[last_end];
            last_end += c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4;
            continue;
        }
        last_end = e;
        last_match_end = e;
        have_last = true;
        if (prev != s && push_match(o, (int32_t)prev, (int32_t)s, invert))
            return VW_ENOMEM;
        if (push_match(o, (int32_t)s, (int32_t)e, !invert))
            return VW_ENOMEM;
        prev = e;
    }
    if (prev != len && push_match(o, (int32_t)prev, (int32_t)len, invert))
        return VW_ENOMEM;
    return VW_OK;
}

/* NormalizedString::split's behaviours, in place; keeps only non-empty kept ranges. */
static void apply_behavior(tok_matches *o, tok_behavior behavior) {
    size_t k = 0;
    bool prev_m = false;
    if (behavior == TOK_MERGED_NEXT) {
        /* folded right to left, then reversed: merge a match into the range after it */
        size_t w = o->n;
        for (size_t r = o->n; r-- > 0;) {
            tok_match x = o->v[r];
            if (x.m && !prev_m && w < o->n)
                o->v[w].s = x.s;
            else
                o->v[--w] = (tok_match){x.s, x.e, false};
            prev_m = x.m;
        }
        for (size_t r = w; r < o->n; r++)
            if (o->v[r].e > o->v[r].s)
                o->v[k++] = o->v[r];
        o->n = k;
        return;
    }
    for (size_t r = 0; r < o->n; r++) {
        tok_match x = o->v[r];
        bool keep = true, merge = false;
        switch (behavior) {
        case TOK_REMOVED:
            keep = !x.m;
            break;
        case TOK_CONTIGUOUS:
            merge = x.m == prev_m && k > 0;
            break;
        case TOK_MERGED_PREV:
            merge = x.m && !prev_m && k > 0;
            break;
        default:
            break;
        }
        prev_m = x.m;
        if (merge)
            o->v[k - 1].e = x.e;
        else if (keep)
            o->v[k++] = (tok_match){x.s, x.e, false};
    }
    size_t w = 0;
    for (size_t r = 0; r < k; r++)
        if (o->v[r].e > o->v[r].s)
            o->v[w++] = o->v[r];
    o->n = w;
}

vw_status tok_regex_split(const pcre2_code *re, pcre2_match_data *md, const char *subj, size_t len,
                          bool invert, tok_behavior behavior, tok_matches *out, vw_err *err) {
    vw_status rc = find_matches(re, md, subj, len, invert, out, err);
    if (rc == VW_ENOMEM)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: split");
    if (rc)
        return rc;
    apply_behavior(out, behavior);
    return VW_OK;
}

/* ---- ByteLevel ---------------------------------------------------------------- */

void tok_bytelevel_init(tok_bytelevel *bl) {
    unsigned n = 0;
    for (unsigned b = 0; b < 256; b++) {
        bool keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        uint32_t cp = keep ? b : 256 + n++;
        char u[4];
        size_t l = vw_utf8_put(cp, u);
        memcpy(bl->utf8[b], u, l);
        bl->len[b] = (uint8_t)l;
    }
}

/* ---- added tokens ------------------------------------------------------------- */

static vw_status trie_node(tok_trie *t, uint32_t cp, int32_t *out) {
    if (vw_reserve((void **)&t->nodes, &t->cap, t->n + 1, sizeof *t->nodes))
        return VW_ENOMEM;
    t->nodes[t->n] = (tok_trie_node){cp, -1, -1, -1};
    *out = (int32_t)t->n++;
    return VW_OK;
}

vw_status tok_trie_add(tok_trie *t, const uint32_t *cps, size_t n, const tok_added *info) {
    int32_t cur = 0, nx;
    if (!t->n && trie_node(t, 0, &cur))
        return VW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int32_t c = t->nodes[cur].child;
        while (c >= 0 && t->nodes[c].cp != cps[i])
            c = t->nodes[c].sibling;
        if (c < 0) {
            if (trie_node(t, cps[i], &nx))
                return VW_ENOMEM;
            t->nodes[nx].sibling = t->nodes[cur].child;
            t->nodes[cur].child = nx;
            c = nx;
        }
        cur = c;
    }
    if (t->nodes[cur].token >= 0)
        return VW_OK; /* same content twice: the first one stands */
    if (n)
        t->first[(cps[0] & 4095) >> 6] |= 1ull << (cps[0] & 63);
    if (vw_reserve((void **)&t->toks, &t->toks_cap, t->ntoks + 1, sizeof *t->toks))
        return VW_ENOMEM;
    t->toks[t->ntoks] = *info;
    t->nodes[cur].token = (int32_t)t->ntoks++;
    return VW_OK;
}

void tok_trie_free(tok_trie *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->ntoks; i++)
        free(t->toks[i].cps);
    free(t->toks);
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

/* Rust regex \s (White_Space) and \w (Alphabetic, M, Nd, Pc, Join_Control). */
static bool is_white_space(uint32_t c) {
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static bool is_word(uint32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D || (c >= 0x24B6 && c <= 0x24E9) ||
        (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
        (c >= 0x1F170 && c <= 0x1F189))
        return true;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

/* Longest token matching at text[p..n); returns its length (0: none). */
static size_t longest_at(const tok_trie *t, const uint32_t *text, size_t p, size_t n,
                         int32_t *tok) {
    int32_t cur = 0;
    size_t best = 0;
    for (size_t i = p; i < n; i++) {
        int32_t c = t->nodes[cur].child;
        while (c >= 0 && t->nodes[c].cp != text[i])
            c = t->nodes[c].sibling;
        if (c < 0)
            break;
        cur = c;
        if (t->nodes[cur].token >= 0) {
            best = i - p + 1;
            *tok = t->nodes[cur].token;
        }
    }
    return best;
}

static vw_status push_seg(tok_segs *o, int32_t s, int32_t e, int32_t id) {
    if (vw_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
        return VW_ENOMEM;
    o->v[o->n++] = (tok_seg){s, e, id};
    return VW_OK;
}

vw_status tok_added_find(const tok_trie *t, const uint32_t *text, size_t n, int32_t base,
                         tok_segs *out) {
    size_t start_offset = 0, p = 0;
    while (t->ntoks && p < n) {
        int32_t ti = -1;
        uint32_t c0 = text[p] & 4095;
        size_t ml = (t->first[c0 >> 6] >> (c0 & 63)) & 1 ? longest_at(t, text, p, n, &ti) : 0;
        if (!ml) {
            p++;
            continue;
        }
        size_t start = p, stop = p + ml;
        p = stop; /* the automaton resumes after the match, kept or not */
        const tok_added *a = &t->toks[ti];
        if (a->single_word) {
            bool start_space = start == 0 || !is_word(text[start - 1]);
            bool stop_space = stop == n || !is_word(text[stop]);
            if (!start_space || !stop_space)
                continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0 && is_white_space(text[ns - 1]))
                ns--;
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip)
            while (stop < n && is_white_space(text[stop]))
                stop++;
        if (start_offset < start &&
            push_seg(out, base + (int32_t)start_offset, base + (int32_t)start, -1))
            return VW_ENOMEM;
        if (push_seg(out, base + (int32_t)start, base + (int32_t)stop, a->id))
            return VW_ENOMEM;
        start_offset = stop;
    }
    if (start_offset < n && push_seg(out, base + (int32_t)start_offset, base + (int32_t)n, -1))
        return VW_ENOMEM;
    return VW_OK;
}
