/* tok_bpe.c — the BPE model: vocab hash, merge table, the merge loop and the
 * per-pre-token cache.
 *
 * The merge loop is HF `tokenizers`' Word::merge_all (models/bpe/word.rs): a min-heap
 * of (rank, position) candidates over a linked list of symbols; a popped candidate
 * is applied when the pair now at its position still merges to the same new id.
 * That check (new id, not pair) is HF's, and we keep it so that ids match even for
 * vocabularies where two pairs build the same token. Unknown chars follow
 * BPE::merge_word: byte fallback to "<0xXX>", else unk (fused when fuse_unk), else
 * dropped (later offsets then shift left, as in HF).
 * The cache maps a pre-token (model input bytes) to its tokens; it is bounded and
 * stops admitting entries when full; a rwlock makes it safe for concurrent encodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

enum { CACHE_MAX_KEY = 256 }; /* HF caches words shorter than 256 bytes */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t k;
        memcpy(&k, s, 8);
        h = (h ^ k) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t k = 0;
    memcpy(&k, s, n);
    h = (h ^ k) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* ---- vocab -------------------------------------------------------------------- */

static int32_t vocab_find_slot(const tok_vocab *v, const char *s, size_t len, size_t *slot) {
    size_t mask = v->nslots - 1;
    size_t i = (size_t)hash_bytes(s, len) & mask;
    for (;;) {
        uint32_t e = v->slots[i];
        if (!e) {
            *slot = i;
            return -1;
        }
        e--;
        if (v->len[e] == len && !memcmp(v->arena + v->off[e], s, len)) {
            *slot = i;
            return (int32_t)e;
        }
        i = (i + 1) & mask;
    }
}

/* Indexes entry k; a repeated key keeps its first entry and takes the last id. */
static void vocab_index(tok_vocab *v, size_t k) {
    size_t slot;
    int32_t e = vocab_find_slot(v, v->arena + v->off[k], v->len[k], &slot);
    if (e >= 0) {
        v->id[e] = v->id[k];
    } else {
        v->slots[slot] = (uint32_t)k + 1;
        v->unique++;
    }
}

vw_status tok_vocab_build_index(tok_vocab *v) {
    size_t ns = 16;
    while (ns < v->n * 2 + 2)
        ns *= 2;
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
        return VW_ENOMEM;
    free(v->slots);
    v->slots = slots;
    v->nslots = ns;
    v->unique = 0;
    for (size_t k = 0; k < v->n; k++)
        vocab_index(v, k);
    return VW_OK;
}

vw_status tok_vocab_add(tok_vocab *v, const char *s, size_t len, int32_t id) {
    if (len > UINT32_MAX || v->arena_len + len > UINT32_MAX || v->n >= UINT32_MAX - 1)
        return VW_ETOOLONG;
    size_t c1 = v->cap, c2 = v->cap, c3 = v->cap;
    if (vw_reserve((void **)&v->off, &c1, v->n + 1, sizeof *v->off) ||
        vw_reserve((void **)&v->len, &c2, v->n + 1, sizeof *v->len) ||
        vw_reserve((void **)&v->id, &c3, v->n + 1, sizeof *v->id) ||
        vw_reserve((void **)&v->arena, &v->arena_cap, v->arena_len + len + 1, 1))
        return VW_ENOMEM;
    v->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    memcpy(v->arena + v->arena_len, s, len);
    v->off[v->n] = (uint32_t)v->arena_len;
    v->len[v->n] = (uint32_t)len;
    v->id[v->n] = id;
    v->arena_len += len;
    v->n++;
    /* the index stays at most half full, so lookups stay short */
    if (v->n * 2 + 2 > v->nslots)
        return tok_vocab_build_index(v);
    vocab_index(v, v->n - 1);
    return VW_OK;
}

int32_t tok_vocab_get(const tok_vocab *v, const char *s, size_t len) {
    if (!v->nslots)
        return -1;
    size_t slot;
    int32_t e = vocab_find_slot(v, s, len, &slot);
    return e < 0 ? -1 : v->id[e];
}

void tok_vocab_free(tok_vocab *v) {
    if (!v)
        return;
    free(v->arena);
    free(v->off);
    free(v->len);
    free(v->id);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

/* ---- merges ------------------------------------------------------------------- */

vw_status tok_merges_init(tok_merges *m, size_t expected) {
    size_t ns = 16;
    while (ns < expected * 2)
        ns *= 2;
    m->slots = calloc(ns, sizeof *m->slots);
    if (!m->slots)
        return VW_ENOMEM;
    m->nslots = ns;
    m->n = 0;
    return VW_OK;
}

static tok_merge_slot *merge_slot(const tok_merges *m, uint64_t key) {
    size_t mask = m->nslots - 1;
    size_t i = (size_t)hash_u64(key) & mask;
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & mask;
    return &m->slots[i];
}

void tok_merges_put(tok_merges *m, int32_t a, int32_t b, int32_t rank, int32_t new_id) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    tok_merge_slot *s = merge_slot(m, key);
    if (!s->key)
        m->n++;
    *s = (tok_merge_slot){key, rank, new_id};
}

static const tok_merge_slot *merges_get(const tok_merges *m, int32_t a, int32_t b) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    const tok_merge_slot *s = merge_slot(m, key);
    return s->key ? s : NULL;
}

void tok_merges_free(tok_merges *m) {
    if (m) {
        free(m->slots);
        memset(m, 0, sizeof *m);
    }
}

/* ---- cache -------------------------------------------------------------------- */

vw_status tok_cache_init(tok_cache *c, size_t max_entries) {
    size_t ns = 16;
    while (ns < max_entries * 2)
        ns *= 2;
    c->slots = calloc(ns, sizeof *c->slots);
    if (!c->slots)
        return VW_ENOMEM;
    if (pthread_rwlock_init(&c->lock, NULL)) {
        free(c->slots);
        c->slots = NULL;
        return VW_ENOMEM;
    }
    c->nslots = ns;
    c->max_n = max_entries;
    c->n = 0;
    return VW_OK;
}

static tok_cache_entry *cache_slot(const tok_cache *c, uint64_t h, const char *k, size_t len) {
    size_t mask = c->nslots - 1;
    size_t i = (size_t)h & mask;
    for (;;) {
        tok_cache_entry *e = &c->slots[i];
        if (!e->key || (e->hash == h && e->klen == len && !memcmp(e->key, k, len)))
            return e;
        i = (i + 1) & mask;
    }
}

static void cache_free(tok_cache *c) {
    if (!c->slots)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        free(c->slots[i].key);
    free(c->slots);
    pthread_rwlock_destroy(&c->lock);
    c->slots = NULL;
}

/* Copies a cached result into ws->out; true on a hit. */
static bool cache_get(tok_cache *c, tok_bpe_ws *ws, uint64_t h, const char *k, size_t len,
                      size_t *ntok) {
    bool hit = false;
    pthread_rwlock_rdlock(&c->lock);
    const tok_cache_entry *e = cache_slot(c, h, k, len);
    if (e->key && vw_reserve((void **)&ws->out, &ws->out_cap, e->ntok, sizeof *ws->out) == VW_OK) {
        if (e->ntok) /* a pre-token can yield no token (unknown chars, no unk) */
            memcpy(ws->out, e->toks, e->ntok * sizeof *e->toks);
        *ntok = e->ntok;
        hit = true;
    }
    pthread_rwlock_unlock(&c->lock);
    return hit;
}

/* Best effort: a full cache or a failed allocation only means no caching. */
static void cache_put(tok_cache *c, uint64_t h, const char *k, size_t len,
                      const tok_piece_tok *toks, size_t ntok) {
    pthread_rwlock_wrlock(&c->lock);
    tok_cache_entry *e = cache_slot(c, h, k, len);
    if (!e->key && c->n < c->max_n) {
        size_t kpad = (len + 7) & ~(size_t)7;
        char *blk = malloc(kpad + ntok * sizeof *toks + 1);
        if (blk) {
            memcpy(blk, k, len);
            tok_piece_tok *t = (tok_piece_tok *)(void *)(blk + kpad);
            if (ntok)
                memcpy(t, toks, ntok * sizeof *toks);
            *e = (tok_cache_entry){h, blk, (uint32_t)len, (uint32_t)ntok, t};
            c->n++;
        }
    }
    pthread_rwlock_unlock(&c->lock);
}

/* ---- model -------------------------------------------------------------------- */

vw_status tok_bpe_init_tables(tok_bpe *b) {
    for (uint32_t cp = 0; cp < 0x800; cp++) {
        char u[4];
        size_t n = vw_utf8_put(cp, u);
        b->small_id[cp] = (cp >= 0xD800 && cp < 0xE000) ? -1 : tok_vocab_get(&b->vocab, u, n);
    }
    for (int i = 0; i < 256; i++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", i);
        b->byte_fb[i] = b->byte_fallback ? tok_vocab_get(&b->vocab, name, 6) : -1;
    }
    return VW_OK;
}

void tok_bpe_free(tok_bpe *b) {
    if (!b)
        return;
    tok_vocab_free(&b->vocab);
    tok_merges_free(&b->merges);
    cache_free(&b->cache);
}

typedef struct sym {
    int32_t id, prev, next, len;
} sym;

typedef struct cand {
    int32_t rank, pos, new_id;
} cand;

static bool cand_less(cand a, cand b) {
    return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

static void heap_push(cand *h, size_t *n, cand c) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(c, h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
}

static cand heap_pop(cand *h, size_t *n) {
    cand top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        cand best = last;
        if (l < *n && cand_less(h[l], best)) {
            m = l;
            best = h[l];
        }
        if (r < *n && cand_less(h[r], best))
            m = r;
        if (m == i)
            break;
        h[i] = h[m];
        i = m;
    }
    if (*n)
        h[i] = last;
    return top;
}

static void push_pair(const tok_merges *m, const sym *s, int32_t pos, int32_t right, cand *h,
                      size_t *nh) {
    const tok_merge_slot *ms = merges_get(m, s[pos].id, s[right].id);
    if (ms)
        heap_push(h, nh, (cand){ms->rank, pos, ms->new_id});
}

static void merge_all(const tok_merges *m, sym *s, size_t n, cand *h) {
    size_t nh = 0;
    for (size_t i = 0; i + 1 < n; i++)
        push_pair(m, s, (int32_t)i, (int32_t)i + 1, h, &nh);
    while (nh) {
        cand top = heap_pop(h, &nh);
        sym *cur = &s[top.pos];
        if (cur->len == 0 || cur->next < 0)
            continue;
        sym right = s[cur->next];
        const tok_merge_slot *ms = merges_get(m, cur->id, right.id);
        if (!ms || ms->new_id != top.new_id)
            continue; /* stale candidate */
        s[cur->next].len = 0;
        cur->id = top.new_id;
        cur->len += right.len;
        cur->next = right.next;
        if (right.next >= 0)
            s[right.next].prev = top.pos;
        if (cur->prev >= 0)
            push_pair(m, s, cur->prev, top.pos, h, &nh);
        if (cur->next >= 0)
            push_pair(m, s, top.pos, cur->next, h, &nh);
    }
}

static void add_sym(sym *s, size_t *n, int32_t id, int32_t len) {
    int32_t k = (int32_t)*n;
    s[k] = (sym){id, k - 1, -1, len};
    if (k > 0)
        s[k - 1].next = k;
    (*n)++;
}

/* Char length of the valid UTF-8 sequence starting with lead byte c. */
static size_t char_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* BPE::merge_word's symbol building: returns the symbol count. */
static size_t build_symbols(const tok_bpe *b, const char *s, size_t len, sym *out) {
    size_t n = 0;
    int32_t unk_len = -1; /* pending unk, HF's `unk` */
    for (size_t i = 0; i < len;) {
        const unsigned char *u = (const unsigned char *)s + i;
        size_t cl = char_len(u[0]);
        if (cl > len - i)
            cl = len - i;
        int32_t id;
        if (cl == 1)
            id = b->small_id[u[0]];
        else if (cl == 2)
            id = b->small_id[((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu)];
        else
            id = tok_vocab_get(&b->vocab, s + i, cl);
        if (id >= 0) {
            if (unk_len >= 0) {
                add_sym(out, &n, b->unk_id, unk_len);
                unk_len = -1;
            }
            add_sym(out, &n, id, (int32_t)cl);
        } else {
            bool fb = b->byte_fallback;
            for (size_t k = 0; fb && k < cl; k++)
                fb = b->byte_fb[u[k]] >= 0;
            if (fb) { /* a pending unk stays pending, as in HF */
                for (size_t k = 0; k < cl; k++)
                    add_sym(out, &n, b->byte_fb[u[k]], 1);
            } else if (b->unk_id >= 0) {
                if (unk_len >= 0 && b->fuse_unk) {
                    unk_len += (int32_t)cl;
                } else {
                    if (unk_len >= 0)
                        add_sym(out, &n, b->unk_id, unk_len);
                    unk_len = (int32_t)cl;
                }
            }
        }
        i += cl;
    }
    if (unk_len >= 0)
        add_sym(out, &n, b->unk_id, unk_len);
    return n;
}

vw_status tok_bpe_encode(tok_bpe *b, tok_bpe_ws *ws, const char *s, size_t len,
                         const tok_piece_tok **toks, size_t *ntok, vw_err *err) {
    if (vw_reserve((void **)&ws->out, &ws->out_cap, len + 1, sizeof *ws->out))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: BPE of %zu bytes", len);
    if (b->ignore_merges) {
        int32_t id = tok_vocab_get(&b->vocab, s, len);
        if (id >= 0) {
            ws->out[0] = (tok_piece_tok){id, 0, (int32_t)len};
            *toks = ws->out;
            *ntok = 1;
            return VW_OK;
        }
    }
    uint64_t h = 0;
    bool cacheable = len < CACHE_MAX_KEY && b->cache.slots;
    if (cacheable) {
        h = hash_bytes(s, len);
        if (cache_get(&b->cache, ws, h, s, len, ntok)) {
            *toks = ws->out;
            return VW_OK;
        }
    }
    /* len bytes give at most len symbols (byte fallback: one per byte) and at most
     * 3 heap entries per symbol over the whole loop. */
    if (vw_reserve(&ws->sym, &ws->sym_cap, len + 1, sizeof(sym)) ||
        vw_reserve(&ws->heap, &ws->heap_cap, 3 * len + 1, sizeof(cand)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "tokenizer: BPE of %zu bytes", len);
    sym *sy = ws->sym;
    size_t n = build_symbols(b, s, len, sy);
    merge_all(&b->merges, sy, n, ws->heap);
    size_t k = 0;
    int32_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (sy[i].len == 0)
            continue;
        ws->out[k++] = (tok_piece_tok){sy[i].id, pos, pos + sy[i].len};
        pos += sy[i].len;
    }
    if (cacheable)
        cache_put(&b->cache, h, s, len, ws->out, k);
    *toks = ws->out;
    *ntok = k;
    return VW_OK;
}

void tok_bpe_ws_free(tok_bpe_ws *ws) {
    if (!ws)
        return;
    free(ws->sym);
    free(ws->heap);
    free(ws->out);
    memset(ws, 0, sizeof *ws);
}
