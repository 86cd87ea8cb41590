/* synthetic.c — the instant and sim executors (see synthetic.h). */
#include "synthetic.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "random_bundle.h"
#include "util/reserve.h"

enum { N_VECTORS = 64 }; /* 64 x hidden floats: stays in L2 */

typedef struct synth {
    vw_synthetic_opts o;
    vw_qwen35_config c;        /* the bundle's: hidden size, vocabulary */
    vw_qwen35_config modelled; /* sim: the backbone whose FLOPs are waited for */
    size_t hidden;
    float *table;   /* [N_VECTORS, hidden], unit RMS each */
    uint64_t *keys; /* [cap_keys] the last forward's readouts (what the heads op reads) */
    size_t cap_keys;
} synth;

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
    x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27, x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double vw_qwen35_tree_flops(const vw_qwen35_config *c, const vw_tree *t) {
    const double H = c->hidden, F = c->intermediate, hd = c->head_dim, Hq = c->n_heads;
    const double kd = (double)vw_qwen35_key_dim(c), vd = (double)vw_qwen35_value_dim(c);
    const double cd = 2 * kd + vd, gdn = H * (cd + vd + 2.0 * c->lin_v_heads) + vd * H;
    const double attn = H * (Hq * 2 * hd + 2.0 * c->n_kv_heads * hd) + Hq * hd * H;
    double per_tok = 0, n_attn = 0;
    for (int l = 0; l < c->n_layers; l++) {
        per_tok += 2 * (3 * F * H + (c->full_attention[l] ? attn : gdn));
        n_attn += c->full_attention[l];
    }
    const double P = (double)t->n_prefix;
    double pairs = P * (P + 1) / 2;
    for (size_t b = 0; b < t->n_blocks; b++) {
        const double n = (double)t->blocks[b].n_ids;
        pairs += n * P + n * (n + 1) / 2;
    }
    return per_tok * (double)vw_tree_tokens(t) + n_attn * 4 * hd * Hq * pairs;
}

double vw_synthetic_seconds(const vw_synthetic_opts *o, const vw_qwen35_config *c,
                            const vw_tree *trees, size_t n) {
    if (!o->sim)
        return 0.0;
    double flops = 0, tokens = 0;
    for (size_t t = 0; t < n; t++) {
        flops += vw_qwen35_tree_flops(c, &trees[t]);
        tokens += (double)vw_tree_tokens(&trees[t]);
    }
    return o->call_us * 1e-6 + flops / (o->tflops * 1e12) + tokens * o->token_ns * 1e-9;
}

/* The readout (token, position, its index in its tree) -> its key; the row
 * is table row key % N_VECTORS, copied into out when there is one. */
static uint64_t row(const synth *s, int32_t token, size_t pos, size_t index, float *out) {
    uint64_t h = mix(((uint64_t)(uint32_t)token << 32) ^ ((uint64_t)pos << 12) ^ index);
    if (out)
        memcpy(out, s->table + (h % N_VECTORS) * s->hidden, s->hidden * sizeof *out);
    return h;
}

static vw_status synth_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                               vw_err *err) {
    synth *s = ex->impl;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    size_t n_rows = vw_trees_readout_count(trees, n_trees);
    if (vw_reserve((void **)&s->keys, &s->cap_keys, n_rows, sizeof *s->keys))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "synthetic readout keys");
    /* k counts the call's rows, r a tree's own: a tree's rows do not depend
     * on the batch it came in (as a real backbone's do not). */
    size_t k = 0;
    for (size_t t = 0; t < n_trees; t++) {
        const vw_tree *tr = &trees[t];
        size_t r = 0;
        for (size_t i = 0; i < tr->n_prefix_readouts; i++, k++, r++) {
            size_t pos = (size_t)tr->prefix_readouts[i];
            s->keys[k] = row(s, tr->prefix[pos], pos, r, rows ? rows + k * s->hidden : NULL);
        }
        for (size_t b = 0; b < tr->n_blocks; b++) {
            const vw_block *bl = &tr->blocks[b];
            for (size_t i = 0; i < bl->n_readouts; i++, k++, r++) {
                size_t j = (size_t)bl->readouts[i];
                s->keys[k] =
                    row(s, bl->ids[j], tr->n_prefix + j, r, rows ? rows + k * s->hidden : NULL);
            }
        }
    }
    double secs = vw_synthetic_seconds(&s->o, &s->modelled, trees, n_trees);
    if (secs > 0) {
        struct timespec due = start;
        double whole = floor(secs);
        due.tv_sec += (time_t)whole;
        due.tv_nsec += (long)((secs - whole) * 1e9);
        if (due.tv_nsec >= 1000000000L)
            due.tv_sec++, due.tv_nsec -= 1000000000L;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR) {
        }
    }
    return VW_OK;
}

/* A synthetic logit in [-4, 4) from the keys of the rows a head would read. */
static float synth_logit(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = mix(a ^ mix(b + 0x9e3779b97f4a7c15ull) ^ mix(c * 0xbf58476d1ce4e5b9ull + 1));
    return (float)((double)(h >> 11) / 9007199254740992.0 * 8.0 - 4.0);
}

/* The heads op: synthetic logits from the rows' keys, so a question's logits
 * depend only on its own readouts (as real heads' do) and no head math runs. */
static vw_status synth_heads(vw_executor *ex, const vw_head_job *job, vw_err *err) {
    (void)err;
    const synth *s = ex->impl;
    for (size_t k = 0; k < job->n_cand; k++) {
        const vw_head_cand_job *c = &job->cand[k];
        for (int32_t i = 0; i < c->m; i++)
            c->logits[i] = synth_logit(s->keys[c->row + i], s->keys[c->query], c->is_set);
    }
    for (size_t k = 0; k < job->n_span; k++) {
        const vw_head_span_job *sp = &job->span[k];
        for (int32_t w = 0; w < sp->n_words; w++)
            for (int32_t l = 0; l < sp->n_labels; l++)
                sp->z[(size_t)w * (size_t)sp->n_labels + (size_t)l] =
                    synth_logit(s->keys[sp->words + w], s->keys[sp->starts[l]],
                                s->keys[sp->ends[l]] + (uint64_t)sp->head);
    }
    return VW_OK;
}

static void synth_destroy(vw_executor *ex) {
    synth *s = ex->impl;
    if (s) {
        free(s->table);
        free(s->keys);
    }
    free(s);
    free(ex);
}

static const vw_executor_ops instant_ops = {"instant", synth_forward, synth_destroy, synth_heads};
static const vw_executor_ops sim_ops = {"sim", synth_forward, synth_destroy, synth_heads};

vw_status vw_synthetic_new(const vw_bundle *b, const vw_synthetic_opts *o, vw_executor **out,
                           vw_err *err) {
    *out = NULL;
    synth *s = calloc(1, sizeof *s);
    vw_executor *ex = calloc(1, sizeof *ex);
    if (s) {
        s->o = *o;
        s->c = *vw_bundle_backbone_config(b);
        s->hidden = (size_t)s->c.hidden;
        s->modelled = s->c;
        s->table = malloc((size_t)N_VECTORS * s->hidden * sizeof *s->table);
    }
    if (!s || !ex || !s->table) {
        if (s)
            free(s->table);
        free(s);
        free(ex);
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "synthetic executor");
    }
    if (o->sim && !o->bundle) {
        vw_status cs = vw_random_shape_config("0.8b", &s->modelled, err);
        if (cs != VW_OK) {
            free(s->table);
            free(s);
            free(ex);
            return cs;
        }
    }
    uint64_t st = 0x5eedull;
    for (size_t v = 0; v < N_VECTORS; v++) {
        float *r = s->table + v * s->hidden;
        double ss = 0;
        for (size_t i = 0; i < s->hidden; i++) {
            st = mix(st + 0x9e3779b97f4a7c15ull);
            r[i] = (float)((double)(st >> 11) / 9007199254740992.0 - 0.5);
            ss += (double)r[i] * r[i];
        }
        float scale = (float)(1.0 / sqrt(ss / (double)s->hidden));
        for (size_t i = 0; i < s->hidden; i++)
            r[i] *= scale;
    }
    *ex = (vw_executor){.ops = o->sim ? &sim_ops : &instant_ops,
                        .hidden = s->hidden,
                        .vocab = s->c.vocab,
                        .impl = s};
    *out = ex;
    return VW_OK;
}

vw_status vw_synthetic_parse(const char *spec, vw_synthetic_opts *o, vw_err *err) {
    const vw_synthetic_opts h200 = VW_SIM_H200;
    if (!strcmp(spec, "instant")) {
        *o = (vw_synthetic_opts){0};
        return VW_OK;
    }
    if (strncmp(spec, "sim", 3) || (spec[3] && spec[3] != ':'))
        return VW_FAIL(err, VW_EINVAL, "bad_executor",
                       "'%s': want instant, sim or sim:tflops=T,call_us=C,token_ns=N", spec);
    *o = h200;
    for (const char *p = spec[3] ? spec + 4 : spec + 3; *p;) {
        char key[16];
        double v;
        int used = 0;
        char word[16];
        if (sscanf(p, "model=%15[a-z0-9.]%n", word, &used) == 1) {
            if (strcmp(word, "0.8b") && strcmp(word, "bundle"))
                return VW_FAIL(err, VW_EINVAL, "bad_executor", "'%s': model is 0.8b or bundle",
                               spec);
            o->bundle = !strcmp(word, "bundle");
            p += used;
            if (*p == ',')
                p++;
            continue;
        }
        if (sscanf(p, "%15[a-z_]=%lf%n", key, &v, &used) != 2 || v < 0)
            return VW_FAIL(err, VW_EINVAL, "bad_executor", "'%s': bad parameter at '%s'", spec, p);
        if (!strcmp(key, "tflops") && v > 0)
            o->tflops = v;
        else if (!strcmp(key, "call_us"))
            o->call_us = v;
        else if (!strcmp(key, "token_ns"))
            o->token_ns = v;
        else
            return VW_FAIL(err, VW_EINVAL, "bad_executor", "'%s': unknown parameter '%s'", spec,
                           key);
        p += used;
        if (*p == ',')
            p++;
    }
    return VW_OK;
}
