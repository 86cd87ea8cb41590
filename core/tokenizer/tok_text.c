/* tok_text.c — the tokenizer's text layer: UTF-8 decoding with Rust/Python validity
 * rules, and NFC with the offset alignments HF `tokenizers` computes.
 *
 * HF normalizes with the `unicode-normalization-alignments` crate, which yields each
 * output char with a "change" (0 = replaces the next original char, -N = replaces it
 * and removes N more, +1 = inserted), and NormalizedString::transform turns those into
 * alignments positionally. We reproduce that pipeline exactly: canonical decomposition
 * (first char of a decomposition change 0, the rest +1), stable reordering of
 * non-starters by combining class (the changes travel with their chars), then the
 * crate's recomposition state machine (a composition gets change k + c - 1). utf8proc
 * supplies the Unicode data (decompositions, classes, pair composition).
 * Never allocates per character; never reads past its inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

/* ---- UTF-8 -------------------------------------------------------------------- */

/* Length of the valid sequence at s[i..len), or 0 when invalid/truncated. */
static size_t utf8_seq(const unsigned char *s, size_t i, size_t len, uint32_t *cp) {
    unsigned c = s[i];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        *cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        *cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        *cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else {
        return 0;
    }
    if (len - i - 1 < need)
        return 0;
    for (size_t k = 1; k <= need; k++) {
        unsigned b = s[i + k];
        if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return 0;
        *cp = (*cp << 6) | (b & 0x3F);
    }
    return need + 1;
}

vw_status tok_utf8_decode(const char *s, size_t len, uint32_t **cps, size_t *cap, size_t *n,
                          size_t *bad_at, vw_err *err) {
    const unsigned char *u = (const unsigned char *)s;
    if (vw_reserve((void **)cps, cap, len + 1, sizeof **cps))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: %zu bytes of text", len);
    size_t i = 0, k = 0;
    uint32_t *out = *cps;
    while (i < len) {
        if (u[i] < 0x80) {
            out[k++] = u[i++];
            continue;
        }
        uint32_t cp;
        size_t l = utf8_seq(u, i, len, &cp);
        if (!l) {
            if (bad_at)
                *bad_at = i;
            return VW_FAIL(err, VW_EINVAL, "invalid_utf8", "invalid UTF-8 at byte %zu (0x%02X)", i,
                           u[i]);
        }
        out[k++] = cp;
        i += l;
    }
    *n = k;
    return VW_OK;
}

/* ---- NFC tables --------------------------------------------------------------- */

static bool is_hangul_syllable(uint32_t c) {
    return c >= 0xAC00 && c <= 0xD7A3;
}

/* HF's tables are older than utf8proc's (Unicode 9.0 vs 15.0): a character assigned
 * since then is, for HF, an unassigned starter (tools/make_tok_nfc_table.py). */
static bool hf_unknown(uint32_t c) {
    size_t lo = 0, hi = tok_nfc_unknown_n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (tok_nfc_unknown[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < tok_nfc_unknown_n && tok_nfc_unknown[lo] == c;
}

static bool has_canonical_decomposition(const utf8proc_property_t *p, uint32_t c) {
    return ((p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) || is_hangul_syllable(c)) &&
           !hf_unknown(c);
}

/* Full canonical decomposition of c into d (>= 8 slots); returns the count (>= 1). */
static size_t decompose(uint32_t c, uint32_t *d) {
    if (c < 0xC0 || !has_canonical_decomposition(utf8proc_get_property((utf8proc_int32_t)c), c)) {
        d[0] = c;
        return 1;
    }
    utf8proc_int32_t buf[8];
    int bound = 0;
    utf8proc_ssize_t r =
        utf8proc_decompose_char((utf8proc_int32_t)c, buf, 8, UTF8PROC_DECOMPOSE, &bound);
    if (r < 1 || r > 8) {
        d[0] = c;
        return 1;
    }
    for (utf8proc_ssize_t i = 0; i < r; i++)
        d[i] = (uint32_t)buf[i];
    return (size_t)r;
}

vw_status tok_nfc_tables_init(tok_nfc_tables *t) {
    t->second = calloc(TOK_NFC_MAX / 8, 1);
    if (!t->second)
        return VW_ENOMEM;
    /* Every non-first char of a canonical decomposition may be the second element of
     * a primary composition (a superset is harmless: it only routes text through the
     * full algorithm and asks utf8proc for a pair that does not compose). */
    for (uint32_t c = 0xC0; c < TOK_NFC_MAX; c++) {
        const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)c);
        if (!has_canonical_decomposition(p, c))
            continue;
        uint32_t d[8];
        size_t k = decompose(c, d);
        for (size_t i = 1; i < k; i++)
            if (d[i] < TOK_NFC_MAX)
                t->second[d[i] >> 3] |= (uint8_t)(1u << (d[i] & 7));
    }
    return VW_OK;
}

void tok_nfc_tables_free(tok_nfc_tables *t) {
    if (t) {
        free(t->second);
        t->second = NULL;
    }
}

static bool is_second(const tok_nfc_tables *t, uint32_t c) {
    return c < TOK_NFC_MAX && (t->second[c >> 3] >> (c & 7)) & 1;
}

static int ccc_of(uint32_t c) {
    if (c < 0x300)
        return 0;
    int ccc = utf8proc_get_property((utf8proc_int32_t)c)->combining_class;
    return ccc && hf_unknown(c) ? 0 : ccc;
}

/* A char whose NFC output is itself with change 0 whatever surrounds it, and after
 * which the normalizer's state is fresh: a starter with no canonical decomposition
 * that never composes with what precedes it. */
static bool is_clean(const tok_nfc_tables *t, uint32_t c) {
    if (c < 0x300)
        return true;
    const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)c);
    return ccc_of(c) == 0 && !has_canonical_decomposition(p, c) && !is_second(t, c);
}

/* Primary composite of (a, b), or 0. */
static uint32_t compose_pair(const tok_nfc_tables *t, uint32_t a, uint32_t b) {
    if (!is_second(t, b))
        return 0;
    utf8proc_int32_t buf[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
    if (utf8proc_normalize_utf32(buf, 2, UTF8PROC_COMPOSE | UTF8PROC_STABLE) == 1 &&
        !hf_unknown((uint32_t)buf[0]))
        return (uint32_t)buf[0];
    return 0;
}

/* ---- NFC with alignments ------------------------------------------------------ */

typedef struct emit_state {
    tok_norm *out;
    int32_t oi;   /* next unconsumed original char (absolute) */
    int32_t base; /* first original char of the segment (absolute) */
    int32_t end;  /* one past the segment's last original char */
} emit_state;

/* NormalizedString::transform for one output char. */
static void emit(emit_state *st, uint32_t cp, int32_t chg) {
    tok_norm *o = st->out;
    tok_span al;
    if (chg > 0) {
        if (st->oi <= st->base)
            al = (tok_span){st->base, st->base};
        else
            al = (tok_span){st->oi - 1, st->oi};
    } else {
        int32_t i = st->oi < st->end ? st->oi : st->end - 1;
        al = (tok_span){i, i + 1};
        st->oi += 1 - chg;
    }
    o->cp[o->n] = cp;
    o->al[o->n] = al;
    o->n++;
}

/* Stable sort of d[lo..hi) by combining class (runs of non-starters): insertion sort
 * for the usual short runs, a counting sort for long ones (adversarial input); when
 * its scratch cannot be allocated the insertion sort still gives the right order. */
static void sort_by_ccc(tok_norm *nm, size_t lo, size_t hi) {
    size_t n = hi > lo ? hi - lo : 0;
    uint32_t *tc = n > 64 ? malloc(n * sizeof *tc) : NULL;
    int32_t *tg = tc ? malloc(n * sizeof *tg) : NULL;
    if (tg) {
        size_t start[257] = {0};
        for (size_t i = lo; i < hi; i++)
            start[nm->dccc[i] + 1]++;
        for (int k = 0; k < 256; k++)
            start[k + 1] += start[k];
        for (size_t i = lo; i < hi; i++) {
            size_t at = start[nm->dccc[i]]++;
            tc[at] = nm->dcp[i];
            tg[at] = nm->dchg[i];
        }
        memcpy(nm->dcp + lo, tc, n * sizeof *tc);
        memcpy(nm->dchg + lo, tg, n * sizeof *tg);
        for (size_t i = lo; i < hi; i++) /* classes follow from the sorted chars */
            nm->dccc[i] = (uint8_t)ccc_of(nm->dcp[i]);
        free(tc);
        free(tg);
        return;
    }
    free(tc);
    for (size_t i = lo + 1; i < hi; i++) {
        uint32_t c = nm->dcp[i];
        int32_t g = nm->dchg[i];
        uint8_t k = nm->dccc[i];
        size_t j = i;
        while (j > lo && nm->dccc[j - 1] > k) {
            nm->dcp[j] = nm->dcp[j - 1];
            nm->dchg[j] = nm->dchg[j - 1];
            nm->dccc[j] = nm->dccc[j - 1];
            j--;
        }
        nm->dcp[j] = c;
        nm->dchg[j] = g;
        nm->dccc[j] = k;
    }
}

/* Canonical decomposition + reordering of in[0..n) into nm->d*. */
static vw_status decompose_run(tok_norm *nm, const uint32_t *in, size_t n) {
    nm->dn = 0;
    size_t pending = 0; /* start of the non-starters after the last starter */
    for (size_t i = 0; i < n; i++) {
        uint32_t d[8];
        size_t k = decompose(in[i], d);
        size_t need = nm->dn + k;
        if (need > nm->dcap) {
            size_t c1 = nm->dcap, c2 = nm->dcap, c3 = nm->dcap;
            if (vw_reserve((void **)&nm->dcp, &c1, need, sizeof *nm->dcp) ||
                vw_reserve((void **)&nm->dchg, &c2, need, sizeof *nm->dchg) ||
                vw_reserve((void **)&nm->dccc, &c3, need, sizeof *nm->dccc))
                return VW_ENOMEM;
            nm->dcap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
        }
        for (size_t j = 0; j < k; j++) {
            int ccc = ccc_of(d[j]);
            if (ccc == 0) {
                sort_by_ccc(nm, pending, nm->dn);
                pending = nm->dn + 1;
            }
            nm->dcp[nm->dn] = d[j];
            nm->dchg[nm->dn] = j == 0 ? 0 : 1;
            nm->dccc[nm->dn] = (uint8_t)ccc;
            nm->dn++;
        }
    }
    sort_by_ccc(nm, pending, nm->dn);
    return VW_OK;
}

/* The crate's Recompositions state machine over nm->d*, emitting through st. The
 * blocked marks are kept in place: they are a subsequence of d, so we record their
 * indices in the (already consumed) prefix of nm->dccc's companion, pend[]. */
static void recompose_run(const tok_nfc_tables *t, tok_norm *nm, emit_state *st, size_t *pend) {
    bool have = false;
    uint32_t kc = 0;
    int32_t kg = 0;
    int last_ccc = -1;
    size_t np = 0;
    for (size_t i = 0; i < nm->dn; i++) {
        uint32_t ch = nm->dcp[i];
        int32_t g = nm->dchg[i];
        int cc = nm->dccc[i];
        if (!have) {
            if (cc != 0) {
                emit(st, ch, g);
            } else {
                have = true;
                kc = ch;
                kg = g;
            }
            continue;
        }
        if (last_ccc >= 0 && last_ccc >= cc) { /* blocked from the composee */
            if (cc == 0) {
                emit(st, kc, kg);
                for (size_t j = 0; j < np; j++)
                    emit(st, nm->dcp[pend[j]], nm->dchg[pend[j]]);
                np = 0;
                kc = ch;
                kg = g;
                last_ccc = -1;
                continue;
            }
            pend[np++] = i;
            last_ccc = cc;
            continue;
        }
        uint32_t r = compose_pair(t, kc, ch);
        if (r) {
            kc = r;
            kg = kg + g - 1;
            continue;
        }
        if (last_ccc < 0 && cc == 0) {
            emit(st, kc, kg);
            kc = ch;
            kg = g;
            continue;
        }
        pend[np++] = i;
        last_ccc = cc;
    }
    if (have)
        emit(st, kc, kg);
    for (size_t j = 0; j < np; j++)
        emit(st, nm->dcp[pend[j]], nm->dchg[pend[j]]);
}

static vw_status reserve_out(tok_norm *out, size_t extra) {
    size_t c1 = out->cap, c2 = out->cap;
    if (vw_reserve((void **)&out->cp, &c1, out->n + extra, sizeof *out->cp) ||
        vw_reserve((void **)&out->al, &c2, out->n + extra, sizeof *out->al))
        return VW_ENOMEM;
    out->cap = c1 < c2 ? c1 : c2;
    return VW_OK;
}

vw_status tok_normalize(const tok_nfc_tables *t, bool nfc, const uint32_t *in, size_t n,
                        int32_t base, tok_norm *out) {
    if (reserve_out(out, n))
        return VW_ENOMEM;
    if (!nfc) {
        for (size_t i = 0; i < n; i++) {
            out->cp[out->n] = in[i];
            out->al[out->n] = (tok_span){base + (int32_t)i, base + (int32_t)i + 1};
            out->n++;
        }
        return VW_OK;
    }
    emit_state st = {out, base, base, base + (int32_t)n};
    size_t *pend = NULL, pend_cap = 0;
    vw_status rc = VW_OK;
    size_t i = 0;
    while (i < n) {
        if (is_clean(t, in[i])) {
            emit(&st, in[i], 0);
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_clean(t, in[j]))
            j++;
        size_t s = i;
        if (i > 0) { /* the clean starter before the run may compose with it */
            s = i - 1;
            out->n--;
            st.oi--;
        }
        if ((rc = decompose_run(out, in + s, j - s)))
            break;
        /* A run of r chars decomposes to at most 4r chars and recomposes to no more. */
        if ((rc = reserve_out(out, out->dn + (n - j))) ||
            (rc = vw_reserve((void **)&pend, &pend_cap, out->dn + 1, sizeof *pend)))
            break;
        recompose_run(t, out, &st, pend);
        i = j;
    }
    free(pend);
    return rc;
}

void tok_norm_free(tok_norm *nm) {
    if (!nm)
        return;
    free(nm->cp);
    free(nm->al);
    free(nm->dcp);
    free(nm->dchg);
    free(nm->dccc);
    memset(nm, 0, sizeof *nm);
}

vw_status tok_nfc_string(const tok_nfc_tables *t, const char *s, size_t len, char **out,
                         size_t *out_len) {
    uint32_t *cps = NULL;
    size_t cap = 0, n = 0;
    tok_norm nm = {0};
    vw_status rc = tok_utf8_decode(s, len, &cps, &cap, &n, NULL, NULL);
    if (rc)
        goto done;
    if ((rc = tok_normalize(t, true, cps, n, 0, &nm)))
        goto done;
    char *o = malloc(nm.n * 4 + 1);
    if (!o) {
        rc = VW_ENOMEM;
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < nm.n; i++)
        k += vw_utf8_put(nm.cp[i], o + k);
    o[k] = '\0';
    *out = o;
    *out_len = k;
done:
    free(cps);
    tok_norm_free(&nm);
    return rc;
}
