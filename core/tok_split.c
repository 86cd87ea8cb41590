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

#define ONIG_SPACE "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Zs}\\p{Zl}\\p{Zp}"
#define ONIG_WORD "\\p{L}\\p{M}\\p{Nd}\\p{Pc}"
#define ONIG_HEX "0-9A-Fa-f"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom || tok_reserve((void **)&b->p, &b->cap, b->n + n + 1, 1)) {
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

/* Rewrites pat into b; returns NULL or the construct that cannot be translated. */
static const char *translate(const char *pat, size_t len, sbuf *b) {
    bool in_class = false;
    size_t class_start = 0;
    for (size_t i = 0; i < len; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char e = pat[++i];
            const char *set = e == 's' || e == 'S'   ? ONIG_SPACE
                              : e == 'w' || e == 'W' ? ONIG_WORD
                              : e == 'h' || e == 'H' ? ONIG_HEX
                                                     : NULL;
            bool neg = e == 'S' || e == 'W' || e == 'H';
            if (!set) {
                char esc[2] = {'\\', e};
                sb_put(b, esc, 2);
            } else if (in_class && neg) {
                return e == 'S'   ? "\\S inside a character class"
                       : e == 'W' ? "\\W inside a character class"
                                  : "\\H inside a character class";
            } else if (in_class) {
                sb_str(b, set);
            } else {
                sb_str(b, neg ? "[^" : "[");
                sb_str(b, set);
                sb_str(b, "]");
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            sb_put(b, &c, 1);
            class_start = b->n;
            if (i + 1 < len && pat[i + 1] == '^') {
                sb_put(b, "^", 1);
                i++;
                class_start = b->n;
            }
            continue;
        }
        if (in_class && c == '[') {
            if (i + 1 < len && pat[i + 1] == ':') { /* POSIX bracket [:name:] */
                const char *end = memchr(pat + i, ']', len - i);
                if (!end)
                    return "an unterminated POSIX class";
                sb_put(b, pat + i, (size_t)(end - (pat + i)) + 1);
                i = (size_t)(end - pat);
                continue;
            }
            return "a nested character class";
        }
        if (in_class && c == ']' && b->n > class_start) {
            in_class = false;
        }
        sb_put(b, &c, 1);
    }
    return NULL;
}

vw_status tok_regex_compile(const char *pat, size_t len, bool literal, pcre2_code **out,
                            vw_err *err) {
    sbuf b = {0};
    const char *bad = NULL;
    if (literal)
        sb_put(&b, pat, len);
    else
        bad = translate(pat, len, &b);
    if (bad) {
        free(b.p);
        return VW_FAIL(err, VW_EUNSUPPORTED, "unsupported_tokenizer",
                       "tokenizer: Split regex uses %s, which PCRE2 cannot reproduce", bad);
    }
    if (b.oom) {
        free(b.p);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: regex");
    }
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : PCRE2_MULTILINE);
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
    if (tok_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
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
        size_t l = tok_utf8_put(cp, u);
        memcpy(bl->utf8[b], u, l);
        bl->len[b] = (uint8_t)l;
    }
}

/* ---- added tokens ------------------------------------------------------------- */

static vw_status trie_node(tok_trie *t, uint32_t cp, int32_t *out) {
    if (tok_reserve((void **)&t->nodes, &t->cap, t->n + 1, sizeof *t->nodes))
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
    if (tok_reserve((void **)&t->toks, &t->toks_cap, t->ntoks + 1, sizeof *t->toks))
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
    if (tok_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v))
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
