/* test_cuda_delta.c — the chunked gated delta rule on the GPU (cuda/ops_cuda.h
 * vw_cuda_op_gdn*, kernels.cuh vw_cu_gdn_run) against the CPU chunked form and
 * the token recurrence (core/model/delta_rule.h) and float64 references of its
 * intermediates, on seeded random inputs, in both kernel sets: fp32_* runs the
 * FP32 SIMT kernels (delta_rule.cu), tc_* the tensor-core ones (delta_rule_tc.cu,
 * delta_rule_tc_state.cu: BF16x3 on planes) through the BF16X2 precision, which
 * fall back to the SIMT kernels for the dk 40 / dv 72 shapes. Both meet the
 * same bars: 2e-5 + 2e-4|ref| vs the CPU chunked form and 1e-4 + 1e-3|ref| vs
 * the token recurrence
 * (docs/spec/backbone.md §4.4: chunked and recurrent forms differ by ~1e-6
 * relative in FP32; these bounds leave room for chunk sums of 64 terms without
 * hiding an indexing error, which shows up at O(1)). Packing checks (several
 * sequences in one launch) are bit-exact. Every test calls cr_skip_test when no
 * CUDA device is present, and the whole file is one skipped test in builds
 * without CUDA.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/delta_rule.h"
#include "model/ops_cpu.h"
#include "num_check.h"
#include "ops_cuda.h"
#include "vw_cuda.h"

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

typedef struct gdn_case {
    size_t T, Hk, Hv, dk, dv;
    float *q, *k, *v, *g, *beta, *S0;
} gdn_case;

static gdn_case gdn_make(vw_rng *r, size_t T, size_t Hk, size_t Hv, size_t dk, size_t dv) {
    gdn_case c = {T, Hk, Hv, dk, dv, NULL, NULL, NULL, NULL, NULL, NULL};
    c.q = vw_rng_floats(r, T * Hk * dk, -1, 1), c.k = vw_rng_floats(r, T * Hk * dk, -1, 1);
    c.v = vw_rng_floats(r, T * Hv * dv, -1, 1), c.g = vw_rng_floats(r, T * Hv, -1.5f, -0.001f);
    c.beta = vw_rng_floats(r, T * Hv, 0.05f, 0.95f),
    c.S0 = vw_rng_floats(r, Hv * dk * dv, -0.5f, 0.5f);
    for (size_t t = 0; t < T; t++) /* q̂, k̂ as the model feeds them (§3.5 step 7) */
        for (size_t h = 0; h < Hk; h++) {
            vw_l2norm_scale(c.q + (t * Hk + h) * dk, dk, 1e-6f, 1.0f / sqrtf((float)dk));
            vw_l2norm_scale(c.k + (t * Hk + h) * dk, dk, 1e-6f, 1.0f);
        }
    return c;
}

/* Log-decays in [-0.03, 0): e^c stays above ~0.15 over a 64-row chunk, so far
 * rows, the far blocks of (I + L)^-1 and states from earlier chunks weigh in
 * (gdn_make's g in [-1.5, 0) forgets them within ~20 rows). */
static void gdn_weak_decay(gdn_case *c) {
    for (size_t i = 0; i < c->T * c->Hv; i++)
        c->g[i] *= 0.02f;
}

static vw_gdn_io gdn_io(const gdn_case *c, size_t t0, size_t T, float *out) {
    return (vw_gdn_io){T,
                       c->Hk,
                       c->Hv,
                       c->dk,
                       c->dv,
                       c->q + t0 * c->Hk * c->dk,
                       c->k + t0 * c->Hk * c->dk,
                       c->v + t0 * c->Hv * c->dv,
                       c->Hk * c->dk,
                       c->Hk * c->dk,
                       c->Hv * c->dv,
                       c->g + t0 * c->Hv,
                       c->beta + t0 * c->Hv,
                       out,
                       c->Hv * c->dv};
}

static void gdn_free(gdn_case *c) {
    free(c->q), free(c->k), free(c->v), free(c->g), free(c->beta), free(c->S0);
}

/* One sequence of length T, with or without the initial state: GPU output and
 * final state vs the CPU chunked form and the token recurrence. */
static void gdn_check(vw_cuda_precision prec, gdn_case *c, int with_state) {
    const size_t T = c->T, ns = c->Hv * c->dk * c->dv, no = T * c->Hv * c->dv;
    float *o = malloc(no * 4), *oc = malloc(no * 4), *orc = malloc(no * 4);
    float *s = malloc(ns * 4), *sc = malloc(ns * 4), *sr = malloc(ns * 4);
    float *ws = malloc(vw_gdn_workspace_floats(c->dk, c->dv) * 4);
    for (size_t i = 0; i < ns; i++)
        sc[i] = sr[i] = with_state ? c->S0[i] : 0.0f;
    vw_gdn_io io = gdn_io(c, 0, T, oc);
    vw_gdn_chunked(&io, 0, c->Hv, sc, ws);
    io.out = orc;
    vw_gdn_recurrent(&io, 0, c->Hv, sr);
    io.out = o;
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_gdn(prec, &io, &T, 1, with_state ? c->S0 : NULL, s, &err), &err);
    const char *p = vw_cuda_precision_name(prec);
    char name[96];
    snprintf(name, sizeof name, "%s T=%zu dk=%zu dv=%zu S0=%d vs chunked", p, T, c->dk, c->dv,
             with_state);
    vw_expect_close(name, o, oc, no, 2e-5, 2e-4);
    snprintf(name, sizeof name, "%s T=%zu dk=%zu dv=%zu S0=%d vs recurrence", p, T, c->dk, c->dv,
             with_state);
    vw_expect_close(name, o, orc, no, 1e-4, 1e-3);
    snprintf(name, sizeof name, "%s T=%zu S0=%d final state", p, T, with_state);
    vw_expect_close(name, s, sc, ns, 2e-5, 2e-4);
    free(o), free(oc), free(orc), free(s), free(sc), free(sr), free(ws);
}

static void lengths(vw_cuda_precision prec) {
    const size_t Ts[] = {1, 63, 64, 65, 200};
    for (size_t i = 0; i < 5; i++) {
        vw_rng r = {100 + i};
        gdn_case c = gdn_make(&r, Ts[i], 2, 4, 32, 32); /* grouped: 2 v-heads per k-head */
        gdn_check(prec, &c, 0);
        gdn_check(prec, &c, 1);
        gdn_free(&c);
    }
}

static void shapes(vw_cuda_precision prec) {
    vw_rng r = {200};
    gdn_case c = gdn_make(&r, 130, 1, 2, 40, 72); /* dv: two full column slices + 8 */
    gdn_check(prec, &c, 1);
    gdn_free(&c);
    vw_rng r2 = {201};
    gdn_case d = gdn_make(&r2, 70, 1, 1, 128, 128); /* the 0.8B head shape */
    gdn_check(prec, &d, 1);
    gdn_free(&d);
}

/* CPU chunked reference of one sequence, rows [t0, t0 + len) of c: its output
 * rows into out ([T, Hv, dv]), state S ([Hv, dk, dv]) read and overwritten. */
static void ref_seq(const gdn_case *c, size_t t0, size_t len, float *S, float *out) {
    float *ws = malloc(vw_gdn_workspace_floats(c->dk, c->dv) * 4);
    cr_assert(ws);
    vw_gdn_io io = gdn_io(c, t0, len, out + t0 * c->Hv * c->dv);
    vw_gdn_chunked(&io, 0, c->Hv, S, ws);
    free(ws);
}

/* Sequences of lens[] packed in one launch, each with its own initial state:
 * outputs and final states against the CPU chunked form, and each sequence
 * run alone equals its rows in the batch bit for bit. Returns the batch's
 * initial and final states and outputs (caller frees) for more checks. */
typedef struct packed_run {
    gdn_case c;
    float *S0, *S, *o;
} packed_run;

static packed_run packed_case(vw_cuda_precision prec, const size_t *lens, size_t n_seq, size_t Hk,
                              size_t Hv, size_t dk, size_t dv, uint64_t seed) {
    vw_rng r = {seed};
    size_t T = 0;
    for (size_t i = 0; i < n_seq; i++)
        T += lens[i];
    const size_t ns = Hv * dk * dv;
    packed_run pr = {gdn_make(&r, T, Hk, Hv, dk, dv), NULL, NULL, NULL};
    gdn_case *c = &pr.c;
    pr.S0 = vw_rng_floats(&r, n_seq * ns, -0.5f, 0.5f), pr.S = malloc(n_seq * ns * 4);
    pr.o = malloc(T * Hv * dv * 4);
    float *S1 = malloc(ns * 4), *o1 = malloc(T * Hv * dv * 4);
    float *ref = malloc(T * Hv * dv * 4), *Sref = vw_floats_dup(pr.S0, n_seq * ns);
    vw_err err = {0};
    vw_gdn_io io = gdn_io(c, 0, T, pr.o);
    vw_expect_ok(vw_cuda_op_gdn(prec, &io, lens, n_seq, pr.S0, pr.S, &err), &err);
    size_t t0 = 0;
    for (size_t i = 0; i < n_seq; i++) {
        ref_seq(c, t0, lens[i], Sref + i * ns, ref);
        vw_gdn_io one = gdn_io(c, t0, lens[i], o1 + t0 * Hv * dv);
        vw_expect_ok(vw_cuda_op_gdn(prec, &one, &lens[i], 1, pr.S0 + i * ns, S1, &err), &err);
        cr_expect(!memcmp(o1 + t0 * Hv * dv, pr.o + t0 * Hv * dv, lens[i] * Hv * dv * 4),
                  "sequence %zu: packed output differs from alone", i);
        cr_expect(!memcmp(S1, pr.S + i * ns, ns * 4), "sequence %zu: packed state differs", i);
        t0 += lens[i];
    }
    char name[96];
    snprintf(name, sizeof name, "%s packed (%zu seqs, Hv %zu) vs chunked",
             vw_cuda_precision_name(prec), n_seq, Hv);
    vw_expect_close(name, pr.o, ref, T * Hv * dv, 2e-5, 2e-4);
    snprintf(name, sizeof name, "%s packed final states", vw_cuda_precision_name(prec));
    vw_expect_close(name, pr.S, Sref, n_seq * ns, 2e-5, 2e-4);
    free(S1), free(o1), free(ref), free(Sref);
    return pr;
}

static void packed_free(packed_run *pr) {
    free(pr->S0), free(pr->S), free(pr->o);
    gdn_free(&pr->c);
}

/* Five sequences in one launch (lengths across the chunk edge, 1-token ones);
 * then an empty sequence, which keeps its initial state and leaves the next
 * one as it was. */
static void packed(vw_cuda_precision prec) {
    const size_t lens[5] = {65, 1, 130, 64, 1}, Hv = 4, dk = 32, dv = 32, ns = Hv * dk * dv;
    packed_run pr = packed_case(prec, lens, 5, 2, Hv, dk, dv, 300);
    const size_t lz[2] = {0, 65};
    float *Sin = malloc(2 * ns * 4), *Sz = malloc(2 * ns * 4), *oz = malloc(65 * Hv * dv * 4);
    memcpy(Sin, pr.S0 + ns, ns * 4), memcpy(Sin + ns, pr.S0, ns * 4);
    vw_err err = {0};
    vw_gdn_io z = gdn_io(&pr.c, 0, 65, oz);
    vw_expect_ok(vw_cuda_op_gdn(prec, &z, lz, 2, Sin, Sz, &err), &err);
    cr_expect(!memcmp(Sz, Sin, ns * 4), "empty sequence: final state is not the initial one");
    cr_expect(!memcmp(Sz + ns, pr.S, ns * 4) && !memcmp(oz, pr.o, 65 * Hv * dv * 4),
              "the sequence after an empty one differs");
    free(Sin), free(Sz), free(oz);
    packed_free(&pr);
}

/* The executor's hand-off: two trees packed as prefixes (130 and 1 rows) then
 * blocks (1, 65, 40 after the first; 64, 3 after the second); prefixes run
 * from zero, each block from its prefix's final state. Outputs of every row
 * and the prefixes' states against the CPU chunked form run tree by tree. */
static void gdn_tree_case(vw_cuda_precision prec, size_t Hk, size_t Hv, size_t dk, size_t dv,
                          int weak, uint64_t seed) {
    enum { NS = 7 };
    const int32_t len[NS] = {130, 1, 1, 65, 40, 64, 3}, tree[NS] = {0, 1, 0, 0, 0, 1, 1};
    vw_cuda_seg segs[NS];
    size_t T = 0;
    for (int i = 0; i < NS; i++) {
        const vw_cuda_seg *pre = i < 2 ? NULL : &segs[tree[i]];
        segs[i] =
            (vw_cuda_seg){(int32_t)T,         len[i], pre ? pre->len : 0, pre ? pre->start : 0,
                          pre ? pre->len : 0, tree[i]};
        T += (size_t)len[i];
    }
    vw_rng r = {seed};
    gdn_case c = gdn_make(&r, T, Hk, Hv, dk, dv);
    if (weak)
        gdn_weak_decay(&c);
    const size_t ns = Hv * dk * dv, no = T * Hv * dv;
    float *o = malloc(no * 4), *ref = malloc(no * 4), *slots = malloc(2 * ns * 4);
    float *Sref = calloc(2 * ns, 4), *Sb = malloc(ns * 4);
    for (int i = 0; i < NS; i++) {
        float *S = Sref + tree[i] * ns;
        if (i < 2) {
            ref_seq(&c, (size_t)segs[i].start, (size_t)len[i], S, ref);
        } else { /* a block continues a copy of its prefix's state */
            memcpy(Sb, S, ns * 4);
            ref_seq(&c, (size_t)segs[i].start, (size_t)len[i], Sb, ref);
        }
    }
    vw_err err = {0};
    vw_gdn_io io = gdn_io(&c, 0, T, o);
    vw_expect_ok(vw_cuda_op_gdn_tree(prec, &io, segs, NS, 2, 2, slots, &err), &err);
    char name[96];
    snprintf(name, sizeof name, "%s tree dk=%zu dv=%zu Hv=%zu%s out", vw_cuda_precision_name(prec),
             dk, dv, Hv, weak ? " weak" : "");
    vw_expect_close(name, o, ref, no, 2e-5, 2e-4);
    snprintf(name, sizeof name, "%s tree dk=%zu dv=%zu%s prefix states",
             vw_cuda_precision_name(prec), dk, dv, weak ? " weak" : "");
    vw_expect_close(name, slots, Sref, 2 * ns, 2e-5, 2e-4);
    free(o), free(ref), free(slots), free(Sref), free(Sb);
    gdn_free(&c);
}

static void prefix_blocks(vw_cuda_precision prec) {
    gdn_tree_case(prec, 2, 4, 32, 32, 0, 400);   /* the tiny bundle's shape */
    gdn_tree_case(prec, 2, 4, 32, 32, 1, 403);   /* same, long memory */
    gdn_tree_case(prec, 1, 2, 40, 72, 0, 401);   /* odd widths: partial tiles and column slices */
    gdn_tree_case(prec, 1, 2, 40, 72, 1, 404);   /* same, long memory */
    gdn_tree_case(prec, 1, 2, 128, 128, 1, 402); /* the 0.8B head shape, long memory */
}

/* Float64 reference of the first kernel for one chunk (rows t0 .. t0+n) of
 * value head h: c = cumsum(g), L = strict_lower(beta K K^T Γ), A = (I + L)^-1
 * by forward substitution, U = A beta V, W = A beta e^c K. A [64*64], U [n*dv],
 * W [n*dk]. */
static void ref_prep_chunk(const gdn_case *c, size_t h, size_t t0, size_t n, double *cc, double *A,
                           double *U, double *W) {
    const size_t Hk = c->Hk, Hv = c->Hv, dk = c->dk, dv = c->dv, kh = h / (Hv / Hk);
    double acc = 0.0, *L = calloc(64 * 64, sizeof *L);
    cr_assert(L);
    for (size_t i = 0; i < n; i++)
        cc[i] = acc += c->g[(t0 + i) * Hv + h];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++) {
            double kk = 0.0;
            for (size_t d = 0; d < dk; d++)
                kk += (double)c->k[((t0 + i) * Hk + kh) * dk + d] *
                      c->k[((t0 + j) * Hk + kh) * dk + d];
            L[i * 64 + j] = c->beta[(t0 + i) * Hv + h] * kk * exp(cc[i] - cc[j]);
        }
    for (size_t j = 0; j < n; j++) /* column j of A solves (I + L) x = e_j */
        for (size_t i = 0; i < n; i++) {
            double x = i == j ? 1.0 : 0.0;
            for (size_t m = j; m < i; m++)
                x -= L[i * 64 + m] * A[m * 64 + j];
            A[i * 64 + j] = i < j ? 0.0 : x;
        }
    for (size_t i = 0; i < n; i++) {
        for (size_t e = 0; e < dv; e++) {
            double u = 0.0;
            for (size_t m = 0; m <= i; m++)
                u +=
                    A[i * 64 + m] * c->beta[(t0 + m) * Hv + h] * c->v[((t0 + m) * Hv + h) * dv + e];
            U[i * dv + e] = u;
        }
        for (size_t d = 0; d < dk; d++) {
            double w = 0.0;
            for (size_t m = 0; m <= i; m++)
                w += A[i * 64 + m] * c->beta[(t0 + m) * Hv + h] * exp(cc[m]) *
                     c->k[((t0 + m) * Hk + kh) * dk + d];
            W[i * dk + d] = w;
        }
    }
    free(L);
}

/* The first kernel's scratch (cumsum, W', U') for sequences of lens[] against
 * ref_prep_chunk, chunk by chunk. With inverse_probe, V is set so that
 * beta V = I within each chunk (dv must be 64): U' is then (I + L)^-1 itself,
 * checked against the float64 forward substitution. */
static void gdn_prep_case(vw_cuda_precision prec, size_t Hk, size_t Hv, size_t dk, size_t dv,
                          const size_t *lens, size_t n_seq, int inverse_probe, int weak,
                          uint64_t seed) {
    size_t T = 0;
    for (size_t i = 0; i < n_seq; i++)
        T += lens[i];
    vw_rng r = {seed};
    gdn_case c = gdn_make(&r, T, Hk, Hv, dk, dv);
    if (weak)
        gdn_weak_decay(&c);
    if (inverse_probe) {
        cr_assert_eq(dv, 64);
        for (size_t s = 0, t0 = 0; s < n_seq; t0 += lens[s++])
            for (size_t t = 0; t < lens[s]; t++)
                for (size_t h = 0; h < Hv; h++)
                    for (size_t e = 0; e < dv; e++)
                        c.v[((t0 + t) * Hv + h) * dv + e] =
                            e == t % 64 ? 1.0f / c.beta[(t0 + t) * Hv + h] : 0.0f;
    }
    float *gc = malloc(Hv * T * 4), *gw = malloc(Hv * T * dk * 4), *gu = malloc(Hv * T * dv * 4);
    float *rc = malloc(Hv * T * 4), *rw = malloc(Hv * T * dk * 4), *ru = malloc(Hv * T * dv * 4);
    double *cc = malloc(64 * sizeof *cc), *A = malloc(64 * 64 * sizeof *A);
    double *U = malloc(64 * dv * sizeof *U), *W = malloc(64 * dk * sizeof *W);
    for (size_t s = 0, t0 = 0; s < n_seq; t0 += lens[s++])
        for (size_t c0 = 0; c0 < lens[s]; c0 += 64) {
            const size_t n = lens[s] - c0 < 64 ? lens[s] - c0 : 64, row = t0 + c0;
            for (size_t h = 0; h < Hv; h++) {
                ref_prep_chunk(&c, h, row, n, cc, A, U, W);
                for (size_t i = 0; i < n; i++) {
                    rc[h * T + row + i] = (float)cc[i];
                    for (size_t d = 0; d < dk; d++)
                        rw[(h * T + row + i) * dk + d] = (float)W[i * dk + d];
                    for (size_t e = 0; e < dv; e++) /* the probe's U' is A's row i */
                        ru[(h * T + row + i) * dv + e] =
                            (float)(inverse_probe ? A[i * 64 + e] : U[i * dv + e]);
                }
            }
        }
    vw_err err = {0};
    vw_gdn_io io = gdn_io(&c, 0, T, NULL);
    float *o = malloc(T * Hv * dv * 4);
    io.out = o;
    vw_expect_ok(vw_cuda_op_gdn_prep(prec, &io, lens, n_seq, gc, gw, gu, &err), &err);
    const char *p = vw_cuda_precision_name(prec);
    char name[96];
    if (inverse_probe) {
        snprintf(name, sizeof name, "%s prep (I+L)^-1 dk=%zu%s", p, dk, weak ? " weak" : "");
        vw_expect_close(name, gu, ru, Hv * T * dv, 2e-5, 2e-4);
    } else {
        const char *wk = weak ? " weak" : "";
        snprintf(name, sizeof name, "%s prep cumsum dk=%zu dv=%zu%s", p, dk, dv, wk);
        vw_expect_close(name, gc, rc, Hv * T, 2e-5, 2e-4);
        snprintf(name, sizeof name, "%s prep W' dk=%zu dv=%zu%s", p, dk, dv, wk);
        vw_expect_close(name, gw, rw, Hv * T * dk, 2e-5, 2e-4);
        snprintf(name, sizeof name, "%s prep U' dk=%zu dv=%zu%s", p, dk, dv, wk);
        vw_expect_close(name, gu, ru, Hv * T * dv, 2e-5, 2e-4);
    }
    free(gc), free(gw), free(gu), free(rc), free(rw), free(ru), free(cc), free(A), free(U), free(W);
    free(o);
    gdn_free(&c);
}

static void prep_intermediates(vw_cuda_precision prec) {
    const size_t a[4] = {1, 63, 64, 130}, b[2] = {65, 7}, d[1] = {70}, e[2] = {64, 30};
    gdn_prep_case(prec, 2, 4, 32, 32, a, 4, 0, 0, 500);
    gdn_prep_case(prec, 2, 4, 32, 32, a, 4, 0, 1, 504);
    gdn_prep_case(prec, 1, 2, 40, 72, b, 2, 0, 1, 501);
    gdn_prep_case(prec, 1, 1, 128, 128, d, 1, 0, 1, 502);
    gdn_prep_case(prec, 1, 2, 32, 64, e, 2, 1, 1, 503); /* beta V = I: U' = (I + L)^-1 */
}

/* Which kernel set ran: for shapes the tensor-core kernels take, BF16X2 and
 * BF16 give the same bits (the precision only picks the kernels) and differ
 * from FP32's; for the others (dk 40, dv 72) all three are the SIMT kernels'. */
static void path_case(size_t dk, size_t dv, int tc, uint64_t seed) {
    vw_rng r = {seed};
    const size_t T = 130, Hv = 2, no = T * Hv * dv;
    gdn_case c = gdn_make(&r, T, 1, Hv, dk, dv);
    float *o[3];
    const vw_cuda_precision precs[3] = {VW_CUDA_FP32, VW_CUDA_BF16X2, VW_CUDA_BF16};
    vw_err err = {0};
    for (int i = 0; i < 3; i++) {
        o[i] = malloc(no * 4);
        vw_gdn_io io = gdn_io(&c, 0, T, o[i]);
        vw_expect_ok(vw_cuda_op_gdn(precs[i], &io, &T, 1, c.S0, NULL, &err), &err);
    }
    cr_expect(!memcmp(o[1], o[2], no * 4), "dk %zu dv %zu: bf16 and bf16x2 differ", dk, dv);
    const int same = !memcmp(o[0], o[1], no * 4);
    cr_expect(tc ? !same : same, "dk %zu dv %zu: bf16x2 %s fp32 (expected the %s kernels)", dk, dv,
              same ? "equals" : "differs from", tc ? "tensor-core" : "SIMT");
    for (int i = 0; i < 3; i++)
        free(o[i]);
    gdn_free(&c);
}

/* Each case in both kernel sets: fp32_<name> (SIMT) and tc_<name> (tensor cores). */
#define BOTH_SETS(name)                                                                            \
    Test(cuda_delta, fp32_##name, .init = need_gpu) {                                              \
        name(VW_CUDA_FP32);                                                                        \
    }                                                                                              \
    Test(cuda_delta, tc_##name, .init = need_gpu) {                                                \
        name(VW_CUDA_BF16X2);                                                                      \
    }
BOTH_SETS(lengths)
BOTH_SETS(shapes)
BOTH_SETS(packed)
BOTH_SETS(prefix_blocks)
BOTH_SETS(prep_intermediates)

/* A pass of many (sequence, head) pairs runs the tensor-core state pass in
 * 32-column value slices, each sequence alone here in 16-column ones
 * (delta_rule_tc_state.cu pick_mt: 8 heads x 3 slices < 32 blocks): the
 * numbers must not change, bit for bit. dk 96 also takes the key-column
 * split's odd n-tile (3 per warp). */
Test(cuda_delta, tc_wide_slices, .init = need_gpu) {
    const size_t lens[17] = {1, 64, 65, 3, 130, 7, 64, 2, 1, 40, 70, 5, 1, 9, 66, 11, 33};
    packed_run pr = packed_case(VW_CUDA_BF16X2, lens, 17, 4, 8, 96, 96, 700);
    packed_free(&pr);
}

Test(cuda_delta, tc_path, .init = need_gpu) {
    path_case(32, 32, 1, 600);
    path_case(128, 64, 1, 601);
    path_case(40, 72, 0, 602);
}

#else
Test(cuda_delta, built_without_cuda) {
    cr_skip_test("built without CUDA");
}
#endif
