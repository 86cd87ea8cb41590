/* test_cuda_attention.c — the attention kernels (cuda/ops_cuda.h
 * vw_cuda_op_attention: attention_k, FP32 SIMT, and attention_tc_k, FP16x3
 * Q Kᵀ / BF16x3 P V on tensor cores, whole and split-KV) against a float64
 * two-pass softmax of the same gated GQA attention over packed trees (prefix
 * rows, then the block's own rows up to the query's). A value passes when
 * |gpu - ref| <= 2e-5 (online vs two-pass softmax, and the tensor-core
 * splits); each case prints its max |diff|. A tree's rows must be bit-equal
 * packed and alone. Every test calls cr_skip_test when no CUDA device is
 * present, and the whole file is one skipped test in builds without CUDA.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num_check.h"
#include "ops_cuda.h"
#include "vw_cuda.h"

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

/* float64 reference of one query row: keys = parent rows then own rows <= i. */
static void ref_attn_row(const float *Q, const float *K, const float *V, const float *G,
                         const vw_cuda_seg *s, int i, size_t Hq, size_t Hk, size_t hd, float *O) {
    const int nk = s->parent_len + i + 1;
    double *sc = malloc(nk * sizeof *sc);
    const size_t row = (size_t)(s->start + i);
    for (size_t h = 0; h < Hq; h++) {
        const size_t g = h / (Hq / Hk);
        double m = -INFINITY, sum = 0.0;
        for (int j = 0; j < nk; j++) {
            size_t kr = j < s->parent_len ? (size_t)(s->parent_start + j)
                                          : (size_t)(s->start + j - s->parent_len);
            double d = 0.0;
            for (size_t e = 0; e < hd; e++)
                d += (double)Q[(row * Hq + h) * hd + e] * K[(kr * Hk + g) * hd + e];
            sc[j] = d / sqrt((double)hd);
            m = sc[j] > m ? sc[j] : m;
        }
        for (int j = 0; j < nk; j++)
            sum += (sc[j] = exp(sc[j] - m));
        for (size_t e = 0; e < hd; e++) {
            double o = 0.0;
            for (int j = 0; j < nk; j++) {
                size_t kr = j < s->parent_len ? (size_t)(s->parent_start + j)
                                              : (size_t)(s->start + j - s->parent_len);
                o += sc[j] / sum * V[(kr * Hk + g) * hd + e];
            }
            double gate = G[(row * Hq + h) * hd + e];
            O[(row * Hq + h) * hd + e] = (float)(o / (1.0 + exp(-gate)));
        }
    }
    free(sc);
}

/* Runs one precision's kernel (split-KV rule `split`: tiles per part, 0 none)
 * on the batch and on tree 1 alone (rows re-based), checks the batch against
 * ref and the tree's rows bit for bit. Returns the max |diff| vs ref. */
static double attention_run(vw_cuda_precision prec, int split, const float *Q, const float *K,
                            const float *V, const float *G, const float *ref, size_t Hq, size_t Hk,
                            size_t hd, float *O) {
    vw_cuda_seg segs[5] = {{0, 70, 0, 0, 0, 0}, {70, 3, 0, 0, 0, 1}};
    segs[2] = (vw_cuda_seg){73, 40, 70, 0, 70, 0};
    segs[3] = (vw_cuda_seg){113, 1, 70, 0, 70, 0};
    segs[4] = (vw_cuda_seg){114, 17, 3, 70, 3, 1};
    const size_t R = 131;
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_attention(prec, Q, K, V, G, segs, 5, R, Hq, Hk, hd, split, O, &err),
                 &err);
    char name[80];
    snprintf(name, sizeof name, "attention %s%s Hq=%zu Hk=%zu hd=%zu", vw_cuda_precision_name(prec),
             split ? " split-KV" : "", Hq, Hk, hd);
    double worst = 0;
    for (size_t i = 0; i < R * Hq * hd; i++)
        worst = fabs((double)O[i] - ref[i]) > worst || !isfinite(O[i]) ? fabs((double)O[i] - ref[i])
                                                                       : worst;
    vw_expect_close(name, O, ref, R * Hq * hd, 2e-5, 0);
    /* packing: tree 1 alone (re-based rows) equals its rows inside the batch */
    vw_cuda_seg alone[2] = {{0, 3, 0, 0, 0, 0}, {3, 17, 3, 0, 3, 0}};
    size_t a_rows[20];
    for (int i = 0; i < 3; i++)
        a_rows[i] = 70 + i;
    for (int i = 0; i < 17; i++)
        a_rows[3 + i] = 114 + i;
    float *Q1 = malloc(20 * Hq * hd * 4), *K1 = malloc(20 * Hk * hd * 4);
    float *V1 = malloc(20 * Hk * hd * 4), *G1 = malloc(20 * Hq * hd * 4),
          *O1 = malloc(20 * Hq * hd * 4);
    for (int i = 0; i < 20; i++) {
        memcpy(Q1 + i * Hq * hd, Q + a_rows[i] * Hq * hd, Hq * hd * 4);
        memcpy(G1 + i * Hq * hd, G + a_rows[i] * Hq * hd, Hq * hd * 4);
        memcpy(K1 + i * Hk * hd, K + a_rows[i] * Hk * hd, Hk * hd * 4);
        memcpy(V1 + i * Hk * hd, V + a_rows[i] * Hk * hd, Hk * hd * 4);
    }
    vw_expect_ok(
        vw_cuda_op_attention(prec, Q1, K1, V1, G1, alone, 2, 20, Hq, Hk, hd, split, O1, &err),
        &err);
    for (int i = 0; i < 20; i++)
        cr_expect(!memcmp(O1 + i * Hq * hd, O + a_rows[i] * Hq * hd, Hq * hd * 4),
                  "%s: attention row %d of a tree differs when packed with another tree", name, i);
    free(Q1), free(K1), free(V1), free(G1), free(O1);
    return worst;
}

/* Both kernels against the float64 reference: FP32 (SIMT) and BF16X2, which
 * takes the tensor-core kernel (FP16x3 Q Kᵀ, BF16x3 P V) where it takes the
 * shape; that it did shows as outputs not bit-equal to the SIMT kernel's. The
 * tensor-core kernel runs once whole and once split into parts of one 64-key
 * tile (split-KV: the 70-row prefix's last item and the 40-row block's items
 * run as 2 and 3 parts, the lone tree's block items as 2), which must differ
 * from the unsplit run in its bits (the combine pass ran) but not beyond the
 * bar. */
static void attention_case(size_t Hq, size_t Hk, size_t hd, int tc, uint64_t seed) {
    vw_rng r = {seed};
    /* two trees: prefixes of 70 and 3 rows, blocks of 40, 1 and 17 rows */
    vw_cuda_seg segs[5] = {{0, 70, 0, 0, 0, 0}, {70, 3, 0, 0, 0, 1}};
    segs[2] = (vw_cuda_seg){73, 40, 70, 0, 70, 0};
    segs[3] = (vw_cuda_seg){113, 1, 70, 0, 70, 0};
    segs[4] = (vw_cuda_seg){114, 17, 3, 70, 3, 1};
    const size_t R = 131;
    float *Q = vw_rng_floats(&r, R * Hq * hd, -1, 1), *K = vw_rng_floats(&r, R * Hk * hd, -1, 1);
    float *V = vw_rng_floats(&r, R * Hk * hd, -1, 1), *G = vw_rng_floats(&r, R * Hq * hd, -3, 3);
    for (size_t i = 0; i < R * Hq * hd; i++) /* larger logits: a peaked softmax too */
        Q[i] *= 4.0f;
    float *O = malloc(R * Hq * hd * 4), *Otc = malloc(R * Hq * hd * 4),
          *Osp = malloc(R * Hq * hd * 4), *ref = malloc(R * Hq * hd * 4);
    for (int s = 0; s < 5; s++)
        for (int i = 0; i < segs[s].len; i++)
            ref_attn_row(Q, K, V, G, &segs[s], i, Hq, Hk, hd, ref);
    const double w32 = attention_run(VW_CUDA_FP32, 0, Q, K, V, G, ref, Hq, Hk, hd, O);
    const double wtc = attention_run(VW_CUDA_BF16X2, 0, Q, K, V, G, ref, Hq, Hk, hd, Otc);
    const double wsp = attention_run(VW_CUDA_BF16X2, 1, Q, K, V, G, ref, Hq, Hk, hd, Osp);
    fprintf(stderr,
            "attention Hq=%zu Hk=%zu hd=%zu: max |diff| vs float64: fp32 %.3g, bf16x2 %.3g, "
            "split-KV %.3g (bar 2e-5)\n",
            Hq, Hk, hd, w32, wtc, wsp);
    cr_expect_eq(memcmp(O, Otc, R * Hq * hd * 4) != 0, tc,
                 "Hq=%zu Hk=%zu hd=%zu: bf16x2 %s the SIMT kernel's outputs", Hq, Hk, hd,
                 tc ? "repeats" : "differs from");
    cr_expect_eq(memcmp(Otc, Osp, R * Hq * hd * 4) != 0, tc,
                 "Hq=%zu Hk=%zu hd=%zu: split-KV %s the unsplit outputs", Hq, Hk, hd,
                 tc ? "repeats" : "differs from");
    free(Q), free(K), free(V), free(G), free(O), free(Otc), free(Osp), free(ref);
}

Test(cuda_attention, attention_with_prefix) {
    need_gpu();
    attention_case(4, 2, 64, 1, 18);  /* GQA group 2, two dims per lane */
    attention_case(4, 1, 32, 1, 19);  /* the tiny bundle's shape */
    attention_case(2, 1, 256, 1, 20); /* the 0.8B head width (8 dims per lane) */
    attention_case(8, 2, 256, 1, 21); /* the 0.8B shape: 4 heads x 16 tokens per block */
    attention_case(6, 1, 32, 1, 22);  /* group 6 (27B): two blocks of 3 heads per item */
    attention_case(2, 1, 96, 0, 23);  /* a head width only the SIMT kernel takes */
    attention_case(4, 1, 128, 1, 24); /* hd 128: two 64-dim panels */
}

/* Long rows: a 700-row prefix and a 60-row block (every row of the block
 * sees 701..760 keys, 12 tiles of 64), head width 64, GQA 4. The tensor-core
 * kernel whole, with the executor's split rule (parts of <= 10 tiles: the
 * block's items and the prefix's last ones in 2 parts) and with parts of <= 4
 * tiles (3 parts), each within the bar of the float64 reference. */
Test(cuda_attention, attention_long_rows) {
    need_gpu();
    vw_rng r = {26};
    const size_t Hq = 4, Hk = 1, hd = 64, P = 700, B = 60, R = P + B;
    vw_cuda_seg segs[2] = {{0, (int32_t)P, 0, 0, 0, 0},
                           {(int32_t)P, (int32_t)B, (int32_t)P, 0, (int32_t)P, 0}};
    float *Q = vw_rng_floats(&r, R * Hq * hd, -4, 4), *K = vw_rng_floats(&r, R * Hk * hd, -1, 1);
    float *V = vw_rng_floats(&r, R * Hk * hd, -1, 1), *G = vw_rng_floats(&r, R * Hq * hd, -3, 3);
    float *O = malloc(R * Hq * hd * 4), *ref = malloc(R * Hq * hd * 4);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < segs[s].len; i++)
            ref_attn_row(Q, K, V, G, &segs[s], i, Hq, Hk, hd, ref);
    const int splits[3] = {0, 10, 4};
    vw_err err = {0};
    for (int k = 0; k < 3; k++) {
        vw_expect_ok(vw_cuda_op_attention(VW_CUDA_BF16X2, Q, K, V, G, segs, 2, R, Hq, Hk, hd,
                                          splits[k], O, &err),
                     &err);
        char name[64];
        snprintf(name, sizeof name, "attention long rows, split %d", splits[k]);
        vw_expect_close(name, O, ref, R * Hq * hd, 2e-5, 0);
    }
    free(Q), free(K), free(V), free(G), free(O), free(ref);
}

/* A |q| or |k| of 2^15 or more does not fit the tensor-core kernel's FP16
 * planes: bf16x2 then runs the SIMT kernel, bit for bit the FP32 one. */
Test(cuda_attention, attention_fp16_range_falls_back) {
    need_gpu();
    vw_rng r = {25};
    const size_t Hq = 2, Hk = 1, hd = 32, R = 20;
    vw_cuda_seg segs[2] = {{0, 3, 0, 0, 0, 0}, {3, 17, 3, 0, 3, 0}};
    float *Q = vw_rng_floats(&r, R * Hq * hd, -1, 1), *K = vw_rng_floats(&r, R * Hk * hd, -1, 1);
    float *V = vw_rng_floats(&r, R * Hk * hd, -1, 1), *G = vw_rng_floats(&r, R * Hq * hd, -3, 3);
    float *O = malloc(R * Hq * hd * 4), *Otc = malloc(R * Hq * hd * 4);
    K[5] = 32768.0f;
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_attention(VW_CUDA_FP32, Q, K, V, G, segs, 2, R, Hq, Hk, hd, 0, O, &err),
                 &err);
    vw_expect_ok(
        vw_cuda_op_attention(VW_CUDA_BF16X2, Q, K, V, G, segs, 2, R, Hq, Hk, hd, 1, Otc, &err),
        &err);
    cr_expect(!memcmp(O, Otc, R * Hq * hd * 4), "|k| = 2^15: bf16x2 did not fall back to SIMT");
    K[5] = 32767.0f; /* just inside: the tensor-core kernel */
    vw_expect_ok(
        vw_cuda_op_attention(VW_CUDA_BF16X2, Q, K, V, G, segs, 2, R, Hq, Hk, hd, 1, Otc, &err),
        &err);
    cr_expect(memcmp(O, Otc, R * Hq * hd * 4) != 0, "|k| < 2^15: bf16x2 ran the SIMT kernel");
    free(Q), free(K), free(V), free(G), free(O), free(Otc);
}

#else
Test(cuda_attention, built_without_cuda) {
    cr_skip_test("built without CUDA");
}
#endif
