/* test_cuda_kernels.c — every CUDA backbone kernel (cuda/ops_cuda.h) but the
 * delta rule's (tests/test_cuda_delta.c) against its CPU reference
 * (core/model/ops_cpu.h) on seeded random inputs. A value passes when
 * |gpu - ref| <= atol + rtol * |ref|; each test prints its max |diff| and the
 * first mismatches. Tolerances (FP32 kernels): elementwise/norm ops
 * 1e-6 + 1e-5|ref| (libm vs CUDA expf/sqrtf ulps, double vs tree sums); GEMMs
 * 1e-5 + 1e-5|ref| at K <= 100 (different summation order); attention 2e-5
 * absolute vs a float64 reference (tests/test_cuda_attention.c). The
 * tensor-core probe (mma_layouts) is exact on small integers, on the emulator
 * and on a GPU, which proves the emulator's fragment tables.
 * Every test calls cr_skip_test when no CUDA device is present, and the whole
 * file is one skipped test in builds without CUDA.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ops_cpu.h"
#include "num_check.h"
#include "ops_cuda.h"
#include "vw_cuda.h"

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

static float bf16_round(float x) { /* round to nearest even, as __float2bfloat16_rn */
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* IEEE binary16 of x rounded to nearest even (|x| < 65520 here), and back. */
static uint16_t f16_rn(float x) {
    const uint16_t sign = signbit(x) ? 0x8000u : 0;
    const float a = fabsf(x);
    if (a < 0x1p-14f) /* subnormal: multiples of 2^-24 (1024 of them is the least normal) */
        return sign | (uint16_t)nearbyintf(a * 0x1p24f);
    int e;
    frexpf(a, &e);                           /* a in [2^(e-1), 2^e) */
    float q = nearbyintf(ldexpf(a, 11 - e)); /* 11 significant bits */
    if (q == 2048.0f)
        q = 1024.0f, e++;
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((int)q - 1024);
}
static float f16_val(uint16_t h) {
    const int e = h >> 10 & 31, f = h & 1023;
    const float v = e ? ldexpf((float)(1024 + f), e - 25) : ldexpf((float)f, -24);
    return h & 0x8000u ? -v : v;
}

/* ---- GEMM ------------------------------------------------------------------ */

static void ref_linear(const float *X, const float *W, float *Y, size_t T, size_t N, size_t K,
                       int acc) {
    vw_linear(X, K, W, Y, N, T, N, K, acc);
}

Test(cuda_kernels, linear_fp32_bf16_invariant) {
    need_gpu();
    vw_rng r = {11};
    const size_t T = 37, N = 70, K = 53; /* not multiples of any tile */
    float *X = vw_rng_floats(&r, T * K, -1, 1), *W = vw_rng_floats(&r, N * K, -1, 1),
          *Y0 = vw_rng_floats(&r, T * N, -1, 1);
    float *ref = vw_floats_dup(Y0, T * N), *got = vw_floats_dup(Y0, T * N);
    vw_err err = {0};
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, Y0, T * N * 4);
        ref_linear(X, W, ref, T, N, K, acc);
        for (int inv = 0; inv <= 1; inv++) {
            memcpy(got, Y0, T * N * 4);
            vw_expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, inv, X, W, got, T, N, K, acc, &err), &err);
            char name[64];
            snprintf(name, sizeof name, "linear fp32 %s acc=%d", inv ? "fixed" : "cublas", acc);
            vw_expect_close(name, got, ref, T * N, 1e-5, 1e-5);
        }
    }
    /* BF16: the GPU rounds X and W to BF16; the reference does the same in FP32. */
    float *Xb = vw_floats_dup(X, T * K), *Wb = vw_floats_dup(W, N * K);
    for (size_t i = 0; i < T * K; i++)
        Xb[i] = bf16_round(X[i]);
    for (size_t i = 0; i < N * K; i++)
        Wb[i] = bf16_round(W[i]);
    ref_linear(Xb, Wb, ref, T, N, K, 0);
    vw_expect_ok(vw_cuda_op_linear(VW_CUDA_BF16, 0, X, W, got, T, N, K, 0, &err), &err);
    vw_expect_close("linear bf16 (vs rounded fp32)", got, ref, T * N, 1e-5, 1e-5);
    /* BF16X2: W rounded as in BF16 (the bundle's own values), X kept: the hi + lo
     * split carries it to ~2^-17, so the product tracks FP32 on the unrounded X.
     * Each of the K terms is off by at most |w x| 2^-17 (7.6e-6 here); BF16
     * alone is off by ~2^-9 per term, which this bound would catch. */
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, Y0, T * N * 4);
        ref_linear(X, Wb, ref, T, N, K, acc);
        memcpy(got, Y0, T * N * 4);
        vw_expect_ok(vw_cuda_op_linear(VW_CUDA_BF16X2, 0, X, W, got, T, N, K, acc, &err), &err);
        char name[64];
        snprintf(name, sizeof name, "linear bf16x2 acc=%d (vs fp32 X)", acc);
        vw_expect_close(name, got, ref, T * N, 2e-4, 1e-5);
    }
    memcpy(ref, Y0, T * N * 4);
    ref_linear(X, Wb, ref, T, N, K, 0);
    vw_expect_ok(vw_cuda_op_linear(VW_CUDA_BF16, 0, X, W, got, T, N, K, 0, &err), &err);
    double worst = 0;
    for (size_t i = 0; i < T * N; i++)
        worst = fmax(worst, fabs((double)got[i] - ref[i]));
    cr_expect_gt(worst, 2e-4, "plain bf16 vs fp32 X: %.3g (the bf16x2 bound must be tighter)",
                 worst);
    /* The fixed-order GEMM: rows 5..9 alone equal the same rows inside T = 37, bit for bit. */
    float *sub = malloc(5 * N * 4);
    vw_expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, 1, X, W, got, T, N, K, 0, &err), &err);
    vw_expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, 1, X + 5 * K, W, sub, 5, N, K, 0, &err), &err);
    cr_expect(!memcmp(sub, got + 5 * N, 5 * N * 4), "fixed-order GEMM rows depend on T");
    free(sub), free(Xb), free(Wb), free(X), free(W), free(Y0), free(ref), free(got);
}

/* ---- row-local kernels ------------------------------------------------------- */

static uint16_t bf16_bits(float x) {
    x = bf16_round(x);
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
}

/* The fused casts (kernels.cuh vw_cu_planes): a producer's BF16 planes must be
 * its own FP32 output y [rows, cols] (ld ldy) split as gemm.cu's cast does,
 * hi = bf16(y) and lo = bf16(y - hi) (lo may be NULL), bit for bit. Counts the
 * elements that differ. */
static size_t planes_mismatch(const char *name, const float *y, size_t ldy, size_t rows,
                              size_t cols, const uint16_t *hi, const uint16_t *lo) {
    size_t bad = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            const float v = y[r * ldy + c], h = bf16_round(v);
            const size_t i = r * cols + c;
            if (hi[i] != bf16_bits(v) || (lo && lo[i] != bf16_bits(v - h)))
                bad++;
        }
    fprintf(stderr, "%s planes: %zu of %zu elements differ from the split of the output\n", name,
            bad, rows * cols);
    return bad;
}

Test(cuda_kernels, embed) {
    need_gpu();
    vw_rng r = {12};
    const size_t V = 50, H = 96, R = 9;
    float *E = vw_rng_floats(&r, V * H, -1, 1), *got = malloc(R * H * 4), *ref = malloc(R * H * 4);
    int32_t ids[9] = {0, 49, 7, 7, 13, 1, 48, 25, 0};
    vw_err err = {0};
    for (int bf = 0; bf <= 1; bf++) {
        for (size_t i = 0; i < R; i++)
            for (size_t d = 0; d < H; d++)
                ref[i * H + d] = bf ? bf16_round(E[ids[i] * H + d]) : E[ids[i] * H + d];
        vw_expect_ok(vw_cuda_op_embed(E, V, H, bf, ids, R, got, &err), &err);
        vw_expect_close(bf ? "embed bf16" : "embed fp32", got, ref, R * H, 0, 0);
    }
    free(E), free(got), free(ref);
}

Test(cuda_kernels, add_rmsnorm) {
    need_gpu();
    vw_rng r = {13};
    const size_t Ds[] = {64, 1024, 1000};
    vw_err err = {0};
    for (size_t k = 0; k < 3; k++) {
        const size_t D = Ds[k], R = 7;
        float *h = vw_rng_floats(&r, R * D, -3, 3), *delta = vw_rng_floats(&r, R * D, -1, 1),
              *w = vw_rng_floats(&r, D, 0.5, 1.5);
        float *h_ref = vw_floats_dup(h, R * D), *y = malloc(R * D * 4), *y_ref = malloc(R * D * 4);
        uint16_t *hi = malloc(R * D * 2), *lo = malloc(R * D * 2);
        for (int with = 0; with <= 1; with++) { /* with the residual: and the planes */
            if (with)
                for (size_t i = 0; i < R * D; i++)
                    h_ref[i] += delta[i];
            vw_rmsnorm(h_ref, D, y_ref, D, R, D, w, 1e-6f);
            vw_expect_ok(vw_cuda_op_add_rmsnorm(h, with ? delta : NULL, w, 1e-6f, R, D, y,
                                                with ? hi : NULL, with ? lo : NULL, &err),
                         &err);
            char name[64];
            snprintf(name, sizeof name, "add_rmsnorm D=%zu delta=%d (h)", D, with);
            vw_expect_close(name, h, h_ref, R * D, 0, 0);
            snprintf(name, sizeof name, "add_rmsnorm D=%zu delta=%d (y)", D, with);
            vw_expect_close(name, y, y_ref, R * D, 1e-6, 1e-5);
            if (with)
                cr_expect_eq(planes_mismatch(name, y, D, R, D, hi, lo), 0, "%s planes", name);
        }
        free(h), free(delta), free(w), free(h_ref), free(y), free(y_ref), free(hi), free(lo);
    }
}

Test(cuda_kernels, gated_rmsnorm) {
    need_gpu();
    vw_rng r = {14};
    const size_t R = 6, Hv = 4, dv = 48;
    float *o = vw_rng_floats(&r, R * Hv * dv, -2, 2), *z = vw_rng_floats(&r, R * Hv * dv, -4, 4);
    float *w = vw_rng_floats(&r, dv, 0.5, 1.5), *ref = vw_floats_dup(o, R * Hv * dv);
    vw_rmsnorm(ref, dv, ref, dv, R * Hv, dv, w, 1e-6f);
    for (size_t i = 0; i < R * Hv * dv; i++)
        ref[i] *= vw_silu(z[i]);
    vw_err err = {0};
    uint16_t *hi = malloc(R * Hv * dv * 2), *lo = malloc(R * Hv * dv * 2);
    vw_expect_ok(vw_cuda_op_gated_rmsnorm(o, z, w, 1e-6f, R, Hv, dv, hi, lo, &err), &err);
    vw_expect_close("gated_rmsnorm", o, ref, R * Hv * dv, 1e-6, 1e-5);
    cr_expect_eq(planes_mismatch("gated_rmsnorm", o, Hv * dv, R, Hv * dv, hi, lo), 0);
    free(o), free(z), free(w), free(ref), free(hi), free(lo);
}

Test(cuda_kernels, l2norm_gates_swiglu) {
    need_gpu();
    vw_rng r = {15};
    vw_err err = {0};
    const size_t R = 5, Hk = 3, dk = 40, W = 2 * Hk * dk;
    float *x = vw_rng_floats(&r, R * W, -2, 2), *ref = vw_floats_dup(x, R * W);
    const float qs = 1.0f / sqrtf((float)dk);
    for (size_t t = 0; t < R; t++)
        for (size_t h = 0; h < 2 * Hk; h++)
            vw_l2norm_scale(ref + t * W + h * dk, dk, 1e-6f, h < Hk ? qs : 1.0f);
    vw_expect_ok(vw_cuda_op_l2norm_qk(x, R, Hk, dk, 1e-6f, qs, &err), &err);
    vw_expect_close("l2norm q/k", x, ref, R * W, 1e-6, 1e-5);

    const size_t Hv = 6;
    float *ba = vw_rng_floats(&r, R * 2 * Hv, -6, 6), *A = vw_rng_floats(&r, Hv, -3, -0.1f);
    float *dt = vw_rng_floats(&r, Hv, -1, 1), *g = malloc(R * Hv * 4), *beta = malloc(R * Hv * 4);
    ba[Hv] = 25.0f; /* a + dt_bias > 20: softplus returns its input */
    float *g_ref = malloc(R * Hv * 4), *b_ref = malloc(R * Hv * 4);
    for (size_t t = 0; t < R; t++)
        for (size_t h = 0; h < Hv; h++) {
            g_ref[t * Hv + h] = A[h] * vw_softplus(ba[t * 2 * Hv + Hv + h] + dt[h]);
            b_ref[t * Hv + h] = vw_sigmoidf(ba[t * 2 * Hv + h]);
        }
    vw_expect_ok(vw_cuda_op_gates(ba, A, dt, R, Hv, g, beta, &err), &err);
    vw_expect_close("gates g", g, g_ref, R * Hv, 1e-6, 1e-5);
    vw_expect_close("gates beta", beta, b_ref, R * Hv, 1e-6, 1e-5);

    const size_t F = 300;
    float *gu = vw_rng_floats(&r, R * 2 * F, -5, 5), *gu_ref = vw_floats_dup(gu, R * 2 * F);
    for (size_t t = 0; t < R; t++)
        for (size_t i = 0; i < F; i++)
            gu_ref[t * 2 * F + i] = vw_silu(gu_ref[t * 2 * F + i]) * gu_ref[t * 2 * F + F + i];
    uint16_t *hi = malloc(R * F * 2); /* BF16 mode: hi only */
    vw_expect_ok(vw_cuda_op_swiglu(gu, R, F, hi, NULL, &err), &err);
    vw_expect_close("swiglu", gu, gu_ref, R * 2 * F, 1e-6, 1e-5);
    cr_expect_eq(planes_mismatch("swiglu (hi only)", gu, 2 * F, R, F, hi, NULL), 0);
    free(hi);
    free(x), free(ref), free(ba), free(A), free(dt), free(g), free(beta), free(g_ref), free(b_ref),
        free(gu), free(gu_ref);
}

/* ---- conv with a prefix's tail ------------------------------------------------ */

Test(cuda_kernels, conv_with_tail) {
    need_gpu();
    vw_rng r = {16};
    const size_t C = 48, K = 4;
    const size_t pre[3] = {1, 2, 9}, blk[3] = {6, 1, 5}; /* prefixes shorter than K-1 too */
    size_t rows = 0;
    for (int i = 0; i < 3; i++)
        rows += pre[i] + blk[i];
    float *x = vw_rng_floats(&r, rows * C, -2, 2), *w = vw_rng_floats(&r, C * K, -1, 1);
    float *got = malloc(rows * C * 4), *ref = malloc(rows * C * 4), *hist = malloc((K - 1) * C * 4);
    vw_cuda_seg segs[6];
    size_t row = 0;
    for (int i = 0; i < 3; i++) { /* packed like the executor: prefixes, then blocks */
        segs[i] = (vw_cuda_seg){(int32_t)row, (int32_t)pre[i], 0, 0, 0, i};
        row += pre[i];
    }
    for (int i = 0; i < 3; i++) {
        segs[3 + i] = (vw_cuda_seg){(int32_t)row,  (int32_t)blk[i], (int32_t)pre[i],
                                    segs[i].start, (int32_t)pre[i], i};
        row += blk[i];
    }
    for (int i = 0; i < 3; i++) { /* CPU: prefix from zeros, history, block from it */
        memset(hist, 0, (K - 1) * C * 4);
        const vw_cuda_seg *p = &segs[i], *b = &segs[3 + i];
        vw_causal_conv_silu(x + p->start * C, C, hist, w, p->len, C, K, ref + p->start * C);
        vw_conv_history(x + p->start * C, C, p->len, C, K, hist);
        vw_causal_conv_silu(x + b->start * C, C, hist, w, b->len, C, K, ref + b->start * C);
    }
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_conv_silu(x, w, C, K, segs, 6, rows, got, &err), &err);
    vw_expect_close("conv+silu with prefix tail", got, ref, rows * C, 1e-6, 1e-5);
    free(x), free(w), free(got), free(ref), free(hist);
}

/* ---- attention prep (q/k norm + partial RoPE) ------------------------------------ */

Test(cuda_kernels, attn_prep_rope) {
    need_gpu();
    vw_rng r = {17};
    const size_t Hq = 4, Hk = 2, hd = 64, rot = 16, half = rot / 2;
    const size_t W = Hq * 2 * hd + Hk * hd, P = 11, T = 5, R = P + T;
    const double theta = 1e7;
    vw_cuda_seg segs[2] = {{0, (int32_t)P, 0, 0, 0, 0},
                           {(int32_t)P, (int32_t)T, (int32_t)P, 0, (int32_t)P, 0}};
    float *proj = vw_rng_floats(&r, R * W, -2, 2), *qn = vw_rng_floats(&r, hd, 0.5, 1.5),
          *kn = vw_rng_floats(&r, hd, 0.5, 1.5);
    float *Q = malloc(R * Hq * hd * 4), *Kt = malloc(R * Hk * hd * 4);
    float *Qr = malloc(R * Hq * hd * 4), *Kr = malloc(R * Hk * hd * 4);
    float *cs = malloc(R * half * 4), *sn = malloc(R * half * 4);
    vw_rope_tables(0, R, rot, theta, cs, sn); /* row t of both segments sits at position t */
    for (size_t t = 0; t < R; t++) {
        for (size_t h = 0; h < Hq; h++) {
            float *q = Qr + (t * Hq + h) * hd;
            vw_rmsnorm(proj + t * W + h * 2 * hd, hd, q, hd, 1, hd, qn, 1e-6f);
            vw_rope_apply(q, rot, cs + t * half, sn + t * half);
        }
        for (size_t g = 0; g < Hk; g++) {
            float *k = Kr + (t * Hk + g) * hd;
            vw_rmsnorm(proj + t * W + Hq * 2 * hd + g * hd, hd, k, hd, 1, hd, kn, 1e-6f);
            vw_rope_apply(k, rot, cs + t * half, sn + t * half);
        }
    }
    vw_err err = {0};
    vw_expect_ok(
        vw_cuda_op_attn_prep(proj, qn, kn, 1e-6f, theta, rot, segs, 2, R, Hq, Hk, hd, Q, Kt, &err),
        &err);
    vw_expect_close("attn_prep q (norm+rope)", Q, Qr, R * Hq * hd, 1e-6, 1e-5);
    vw_expect_close("attn_prep k (norm+rope)", Kt, Kr, R * Hk * hd, 1e-6, 1e-5);
    /* The planes the tensor-core attention reads: the same Q and K split into
     * FP16 hi/lo, V into BF16 hi/lo, bit for bit as the host splits them. */
    float *V = vw_rng_floats(&r, R * Hk * hd, -40, 40);
    V[0] = 1e-30f, V[1] = -3e5f; /* far below and above FP16's range: BF16 keeps both */
    uint16_t *Qh = malloc(R * Hq * hd * 4), *Kh = malloc(R * Hk * hd * 4),
             *Vb = malloc(R * Hk * hd * 4);
    vw_expect_ok(vw_cuda_op_attn_prep_planes(proj, qn, kn, 1e-6f, theta, rot, segs, 2, R, Hq, Hk,
                                             hd, V, Qh, Kh, Vb, &err),
                 &err);
    size_t bad = 0;
    for (size_t i = 0; i < R * Hq * hd; i++) {
        const size_t row = i / hd, d = i % hd;
        const uint16_t hi = f16_rn(Q[i]), lo = f16_rn(Q[i] - f16_val(hi));
        bad += Qh[row * 2 * hd + d] != hi || Qh[row * 2 * hd + hd + d] != lo;
    }
    for (size_t i = 0; i < R * Hk * hd; i++) {
        const size_t row = i / hd, d = i % hd;
        const uint16_t hi = f16_rn(Kt[i]), lo = f16_rn(Kt[i] - f16_val(hi));
        bad += Kh[row * 2 * hd + d] != hi || Kh[row * 2 * hd + hd + d] != lo;
        const float vh = bf16_round(V[i]), vl = bf16_round(V[i] - vh);
        bad += Vb[row * 2 * hd + d] != bf16_bits(vh) || Vb[row * 2 * hd + hd + d] != bf16_bits(vl);
    }
    cr_expect_eq(bad, 0, "attn_prep planes: %zu halves differ from the split of Q, K, V", bad);
    free(V), free(Qh), free(Kh), free(Vb);
    free(proj), free(qn), free(kn), free(Q), free(Kt), free(Qr), free(Kr), free(cs), free(sn);
}

/* The executor's fused DeltaNet inputs (conv + SiLU, q/k L2 norm, gates in one
 * launch) against the CPU twins — vw_causal_conv_silu with the prefix
 * history, vw_l2norm_scale, the gate formulas — and bit for bit against the
 * three separate kernels. dk 40 and vd 300 leave partial lanes and a partial
 * value unit. */
Test(cuda_kernels, gdn_inputs_fused) {
    need_gpu();
    vw_rng r = {17};
    const size_t Hk = 2, dk = 40, vd = 300, Hv = 3, K = 4, C = 2 * Hk * dk + vd, W = C + 2 * Hv;
    const size_t pre[2] = {2, 9}, blk[2] = {6, 5};
    const size_t rows = pre[0] + pre[1] + blk[0] + blk[1];
    vw_cuda_seg segs[4];
    size_t row = 0;
    for (int i = 0; i < 2; i++, row += pre[i - 1])
        segs[i] = (vw_cuda_seg){(int32_t)row, (int32_t)pre[i], 0, 0, 0, i};
    for (int i = 0; i < 2; i++, row += blk[i - 1])
        segs[2 + i] = (vw_cuda_seg){(int32_t)row,  (int32_t)blk[i], (int32_t)pre[i],
                                    segs[i].start, (int32_t)pre[i], i};
    float *x = vw_rng_floats(&r, rows * W, -2, 2), *w = vw_rng_floats(&r, C * K, -1, 1);
    float *A = vw_rng_floats(&r, Hv, -3, -0.1f), *dt = vw_rng_floats(&r, Hv, -1, 1);
    float *xc = malloc(rows * C * 4), *ba = malloc(rows * 2 * Hv * 4), *hist = malloc(K * C * 4);
    for (size_t t = 0; t < rows; t++) {
        memcpy(xc + t * C, x + t * W, C * 4);
        memcpy(ba + t * 2 * Hv, x + t * W + C, 2 * Hv * 4);
    }
    float *y = malloc(rows * C * 4), *g = malloc(rows * Hv * 4), *beta = malloc(rows * Hv * 4);
    float *y_ref = malloc(rows * C * 4), *g_ref = malloc(rows * Hv * 4),
          *b_ref = malloc(rows * Hv * 4);
    const float qs = 1.0f / sqrtf((float)dk);
    for (int i = 0; i < 2; i++) { /* CPU: prefix from zeros, its history, the block */
        memset(hist, 0, (K - 1) * C * 4);
        const vw_cuda_seg *p = &segs[i], *b = &segs[2 + i];
        vw_causal_conv_silu(xc + p->start * C, C, hist, w, p->len, C, K, y_ref + p->start * C);
        vw_conv_history(xc + p->start * C, C, p->len, C, K, hist);
        vw_causal_conv_silu(xc + b->start * C, C, hist, w, b->len, C, K, y_ref + b->start * C);
    }
    for (size_t t = 0; t < rows; t++) {
        for (size_t h = 0; h < 2 * Hk; h++)
            vw_l2norm_scale(y_ref + t * C + h * dk, dk, 1e-6f, h < Hk ? qs : 1.0f);
        for (size_t h = 0; h < Hv; h++) {
            g_ref[t * Hv + h] = A[h] * vw_softplus(ba[t * 2 * Hv + Hv + h] + dt[h]);
            b_ref[t * Hv + h] = vw_sigmoidf(ba[t * 2 * Hv + h]);
        }
    }
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_gdn_inputs(x, w, K, segs, 4, rows, Hk, dk, vd, 1e-6f, qs, A, dt, Hv, y,
                                       g, beta, &err),
                 &err);
    vw_expect_close("gdn inputs: conv + silu + l2norm", y, y_ref, rows * C, 1e-6, 1e-5);
    vw_expect_close("gdn inputs: g", g, g_ref, rows * Hv, 1e-6, 1e-5);
    vw_expect_close("gdn inputs: beta", beta, b_ref, rows * Hv, 1e-6, 1e-5);
    /* the separate kernels: conv on the C channels, then l2norm, gates */
    float *y3 = malloc(rows * C * 4), *g3 = malloc(rows * Hv * 4), *b3 = malloc(rows * Hv * 4);
    float *qk = malloc(rows * 2 * Hk * dk * 4);
    vw_expect_ok(vw_cuda_op_conv_silu(xc, w, C, K, segs, 4, rows, y3, &err), &err);
    for (size_t t = 0; t < rows; t++)
        memcpy(qk + t * 2 * Hk * dk, y3 + t * C, 2 * Hk * dk * 4);
    vw_expect_ok(vw_cuda_op_l2norm_qk(qk, rows, Hk, dk, 1e-6f, qs, &err), &err);
    for (size_t t = 0; t < rows; t++)
        memcpy(y3 + t * C, qk + t * 2 * Hk * dk, 2 * Hk * dk * 4);
    vw_expect_ok(vw_cuda_op_gates(ba, A, dt, rows, Hv, g3, b3, &err), &err);
    cr_expect(!memcmp(y, y3, rows * C * 4) && !memcmp(g, g3, rows * Hv * 4) &&
                  !memcmp(beta, b3, rows * Hv * 4),
              "the fused kernel differs from conv_silu + l2norm_qk + gates");
    free(x), free(w), free(A), free(dt), free(xc), free(ba), free(hist), free(y), free(g),
        free(beta), free(y_ref), free(g_ref), free(b_ref), free(y3), free(g3), free(b3), free(qk);
}

/* ---- tensor cores (cuda/mma.cuh) ------------------------------------------------ */

/* D = A [16, K] B [K, 8] + C in double; mag = sum_k |a b| + |c| per output. */
static void ref_mma(const float *A, const float *B, const float *C, size_t K, double *D,
                    double *mag) {
    for (size_t r = 0; r < 16; r++)
        for (size_t n = 0; n < 8; n++) {
            double acc = C[r * 8 + n], m = fabs(C[r * 8 + n]);
            for (size_t k = 0; k < K; k++) {
                acc += (double)A[r * K + k] * B[k * 8 + n];
                m += fabs((double)A[r * K + k] * B[k * 8 + n]);
            }
            D[r * 8 + n] = acc, mag[r * 8 + n] = m;
        }
}

/* Worst |D - ref| over the 128 outputs of one probe, relative to rel * mag
 * (absolute when rel = 0). */
static double mma_case(vw_cuda_mma_kind kind, const float *A, const float *B, const float *C,
                       double rel) {
    const size_t K = kind == VW_CUDA_MMA_TF32 || kind == VW_CUDA_MMA_3XTF32 ? 8 : 16;
    float D[128];
    double ref[128], mag[128], worst = 0;
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_mma(kind, A, B, C, D, &err), &err);
    ref_mma(A, B, C, K, ref, mag);
    for (int i = 0; i < 128; i++) {
        double d = isfinite(D[i]) ? fabs(D[i] - ref[i]) / (rel ? rel * mag[i] : 1.0) : INFINITY;
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* cvt.rna.tf32.f32 by its definition: 11 significant bits, ties away from zero. */
static float tf32_rna(float x) {
    int e;
    double m = frexp(fabs((double)x), &e); /* |x| = m 2^e, m in [0.5, 1) */
    double r = ldexp(floor(ldexp(m, 11) + 0.5), e - 11);
    return (float)(signbit(x) ? -r : r);
}

/* The PTX ISA fragment tables of mma.cuh against the hardware (on a GPU) or the
 * emulator's own transcription: random small integers at every position of A,
 * B and C, so a misplaced element changes D; every sum is exact (|D| < 2^11),
 * so D must equal the plain product bit for bit (TF32, BF16 and FP16). Then
 * the 3xTF32, FP16x3 and BF16x3 splits reach FP32 grade on random floats
 * (mma.cuh: dropped terms <= ~3 * 2^-22, ~2^-21 and ~3 * 2^-18 of sum |a b|;
 * bounds 2^-19, 2^-19 and 2^-15 leave room for the FP32 accumulation of three
 * MMAs) where one plain TF32/FP16/BF16 MMA does not, and cvt.rna.tf32 is
 * bit-exact. */
Test(cuda_kernels, mma_layouts) {
    need_gpu();
    vw_rng r = {23};
    float A[256], B[128], C[128];
    static const vw_cuda_mma_kind plain[] = {VW_CUDA_MMA_TF32, VW_CUDA_MMA_BF16, VW_CUDA_MMA_F16};
    static const char *plain_name[] = {"tf32 m16n8k8", "bf16 m16n8k16", "f16 m16n8k16"};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 256; i++)
            A[i] = floorf(vw_rng_uni(&r, -8, 9));
        for (int i = 0; i < 128; i++)
            B[i] = floorf(vw_rng_uni(&r, -8, 9)), C[i] = floorf(vw_rng_uni(&r, -64, 65));
        double w = mma_case(plain[k], A, B, C, 0);
        fprintf(stderr, "mma %s layouts: max|D - AB - C| = %g\n", plain_name[k], w);
        cr_expect_eq(w, 0, "mma %s: D differs from the plain product", plain_name[k]);
    }
    for (int i = 0; i < 256; i++)
        A[i] = vw_rng_uni(&r, -1, 1);
    for (int i = 0; i < 128; i++)
        B[i] = vw_rng_uni(&r, -1, 1), C[i] = vw_rng_uni(&r, -1, 1);
    const double b3tf = 0x1p-19, b3bf = 0x1p-15; /* relative to sum |a b| + |c| */
    double w3tf = mma_case(VW_CUDA_MMA_3XTF32, A, B, C, b3tf);
    double w1tf = mma_case(VW_CUDA_MMA_TF32, A, B, C, b3tf);
    double w3bf = mma_case(VW_CUDA_MMA_BF16X3, A, B, C, b3bf);
    double w1bf = mma_case(VW_CUDA_MMA_BF16, A, B, C, b3bf);
    double w3h = mma_case(VW_CUDA_MMA_F16X3, A, B, C, b3tf);
    double w1h = mma_case(VW_CUDA_MMA_F16, A, B, C, b3tf);
    fprintf(stderr,
            "mma error / bound: 3xtf32 %.3g (1xtf32 %.3g), bf16x3 %.3g (1xbf16 %.3g), "
            "f16x3 %.3g (1xf16 %.3g)\n",
            w3tf, w1tf, w3bf, w1bf, w3h, w1h);
    cr_expect_leq(w3tf, 1.0, "3xTF32 beyond 2^-19 sum|ab| (%.3g of it)", w3tf);
    cr_expect_leq(w3bf, 1.0, "BF16x3 beyond 2^-15 sum|ab| (%.3g of it)", w3bf);
    cr_expect_leq(w3h, 1.0, "FP16x3 beyond 2^-19 sum|ab| (%.3g of it)", w3h);
    cr_expect_gt(w1tf, 1.0, "one TF32 MMA within the 3xTF32 bound: the bound cannot fail");
    cr_expect_gt(w1bf, 1.0, "one BF16 MMA within the BF16x3 bound: the bound cannot fail");
    cr_expect_gt(w1h, 1.0, "one FP16 MMA within the FP16x3 bound: the bound cannot fail");
    /* cvt.rna.tf32: ties (1 + 2^-11 goes up, where round-to-even would not),
     * just below ties, a carry into the exponent, negatives, then random
     * normal values over 2^-100 .. 2^100. */
    float x[1000], y[1000];
    const float fixed[] = {1.0f + 0x1p-11f,
                           1.0f + 0x1p-11f - 0x1p-23f,
                           1.0f + 3 * 0x1p-11f,
                           -(1.0f + 0x1p-11f),
                           2.0f - 0x1p-23f,
                           -3.0e30f,
                           0.0f,
                           -0.0f,
                           1.5e-30f};
    const size_t nf = sizeof fixed / sizeof *fixed;
    memcpy(x, fixed, sizeof fixed);
    for (size_t i = nf; i < 1000; i++)
        x[i] = ldexpf(vw_rng_uni(&r, 0.5f, 1.0f), (int)floorf(vw_rng_uni(&r, -100, 100))) *
               (vw_rng_uni(&r, -1, 1) < 0 ? -1.0f : 1.0f);
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_tf32_round(x, 1000, y, &err), &err);
    size_t bad = 0;
    for (size_t i = 0; i < 1000; i++) {
        float want = tf32_rna(x[i]);
        if (memcmp(&want, &y[i], 4) && ++bad <= 5)
            fprintf(stderr, "  tf32(%a) = %a, want %a\n", x[i], y[i], want);
    }
    cr_expect_eq(bad, 0, "cvt.rna.tf32: %zu of 1000 values differ from the definition", bad);
}

/* ---- loads (cuda/ldst.cuh) ----------------------------------------------------- */

/* ldmatrix by the PTX ISA's definition ("Warp-level matrix load instruction:
 * ldmatrix"): lane l's register i holds matrix i's elements (row l/4, columns
 * 2(l%4), +1), or with .trans (rows 2(l%4), +1, column l/4), low half first;
 * row j of matrix i is at the address lane 8i + j gave. Every element of the
 * tile is distinct and the lanes point at rows in a shuffled order (two lanes
 * share a row), so a misplaced element or row changes a register. */
Test(cuda_kernels, ldmatrix_layouts) {
    need_gpu();
    uint16_t tile[32 * 8];
    int32_t rows[32];
    for (int i = 0; i < 32 * 8; i++)
        tile[i] = (uint16_t)(0x1000 + 7 * i);
    for (int l = 0; l < 32; l++)
        rows[l] = (l * 13 + 5) % 32;
    rows[9] = rows[30];
    vw_err err = {0};
    for (int n = 1; n <= 4; n *= 2)
        for (int trans = 0; trans <= 1; trans++) {
            uint32_t got[32 * 4];
            vw_expect_ok(vw_cuda_op_ldmatrix(n, trans, tile, rows, got, &err), &err);
            size_t bad = 0;
            for (int l = 0; l < 32; l++)
                for (int i = 0; i < n; i++) {
                    const int g = l / 4, t = l % 4;
                    uint32_t lo, hi;
                    if (!trans) {
                        lo = tile[rows[8 * i + g] * 8 + 2 * t];
                        hi = tile[rows[8 * i + g] * 8 + 2 * t + 1];
                    } else {
                        lo = tile[rows[8 * i + 2 * t] * 8 + g];
                        hi = tile[rows[8 * i + 2 * t + 1] * 8 + g];
                    }
                    if (got[l * 4 + i] != (lo | hi << 16) && ++bad <= 3)
                        fprintf(stderr, "  x%d%s lane %d reg %d: %08x, want %08x\n", n,
                                trans ? ".trans" : "", l, i, got[l * 4 + i], lo | hi << 16);
                }
            fprintf(stderr, "ldmatrix x%d%s: %zu of %d registers differ\n", n,
                    trans ? ".trans" : "", bad, 32 * n);
            cr_expect_eq(bad, 0, "ldmatrix x%d trans=%d", n, trans);
        }
}

/* The fragments ldmatrix loads through ldst.cuh's row helpers feed mma.sync
 * exactly as plain loads by mma.cuh's tables do: small integers, so the
 * product is exact and must equal both the plain product and vw_cuda_op_mma's
 * result bit for bit (TF32: A and Bᵀ tiles; BF16: A, and B as Bᵀ or k-major
 * through .trans). */
Test(cuda_kernels, ldmatrix_feeds_mma) {
    need_gpu();
    vw_rng r = {29};
    float A[256], B[128], C[128], D[128], Dplain[128];
    double ref[128], mag[128];
    vw_err err = {0};
    const struct {
        vw_cuda_mma_kind kind;
        int kmajor;
        const char *name;
    } cases[] = {{VW_CUDA_MMA_TF32, 0, "tf32, Bt"},
                 {VW_CUDA_MMA_BF16, 0, "bf16, Bt"},
                 {VW_CUDA_MMA_BF16, 1, "bf16, B k-major (.trans)"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const size_t K = cases[c].kind == VW_CUDA_MMA_TF32 ? 8 : 16;
        for (int i = 0; i < 256; i++)
            A[i] = floorf(vw_rng_uni(&r, -8, 9));
        for (int i = 0; i < 128; i++)
            B[i] = floorf(vw_rng_uni(&r, -8, 9)), C[i] = floorf(vw_rng_uni(&r, -64, 65));
        vw_expect_ok(vw_cuda_op_ldsm_mma(cases[c].kind, cases[c].kmajor, A, B, C, D, &err), &err);
        vw_expect_ok(vw_cuda_op_mma(cases[c].kind, A, B, C, Dplain, &err), &err);
        ref_mma(A, B, C, K, ref, mag);
        double worst = 0;
        for (int i = 0; i < 128; i++)
            worst = fmax(worst, fabs(D[i] - ref[i]));
        fprintf(stderr, "ldmatrix -> mma %s: max|D - AB - C| = %g\n", cases[c].name, worst);
        cr_expect_eq(worst, 0, "ldmatrix-fed mma %s differs from the plain product", cases[c].name);
        cr_expect(!memcmp(D, Dplain, sizeof D), "ldmatrix-fed mma %s differs from plain loads",
                  cases[c].name);
    }
}

static int on_emulator(void) {
    char name[128] = "";
    vw_cuda_device_count(name, sizeof name);
    return strstr(name, "emulator") != NULL;
}

/* cp.async in groups (ops_cuda.h vw_cuda_op_cp_async) against plain loads:
 * after the last wait and a barrier every slot holds its source (zero-filled
 * past a short src-size, zeros for src-size 0), whichever thread reads it;
 * after wait_group 2 a thread's group-0 slots hold their data. On the
 * emulator, which lands a copy only at its covering wait, its group-1 slots
 * must still read NaN then (on a GPU they may hold either). */
Test(cuda_kernels, cp_async_groups) {
    need_gpu();
    vw_rng r = {31};
    const size_t n_src = 1000;
    float *src = vw_rng_floats(&r, n_src, -4, 4), early[8 * 64], out[1024], want[1024];
    for (int t = 0; t < 64; t++)
        for (int j = 0; j < 4; j++) {
            want[4 * t + j] = src[4 * t + j];
            want[256 + 4 * t + j] = src[256 + 4 * t + j];
            want[512 + 4 * t + j] = src[(t * 37 + j * 11) % n_src];
            want[768 + 4 * t + j] = 0.0f;
        }
    for (int t = 0; t < 64; t++) { /* the second 8-byte copy reads t % 9 bytes */
        unsigned char *w = (unsigned char *)&want[256 + 4 * t + 2];
        memset(w + t % 9, 0, (size_t)(8 - t % 9));
    }
    vw_err err = {0};
    vw_expect_ok(vw_cuda_op_cp_async(src, n_src, early, out, &err), &err);
    size_t bad = 0, bad_early = 0, landed_early = 0;
    for (int i = 0; i < 1024; i++)
        if (memcmp(&out[i], &want[i], 4) && ++bad <= 3)
            fprintf(stderr, "  slot %d: %a, want %a\n", i, out[i], want[i]);
    for (int t = 0; t < 64; t++)
        for (int j = 0; j < 4; j++) {
            bad_early += memcmp(&early[8 * t + j], &want[4 * t + j], 4) != 0;
            landed_early += !isnan(early[8 * t + 4 + j]);
        }
    fprintf(stderr,
            "cp.async: %zu of 1024 slots differ after the waits; after wait_group 2 "
            "%zu group-0 slots differ, %zu of 256 group-1 slots landed\n",
            bad, bad_early, landed_early);
    cr_expect_eq(bad, 0, "cp.async: slots differ from plain loads");
    cr_expect_eq(bad_early, 0, "cp.async: group 0 not landed after wait_group 2");
    if (on_emulator())
        cr_expect_eq(landed_early, 0, "emulator: group 1 landed before its wait");
    free(src);
}

#else
Test(cuda_kernels, built_without_cuda) {
    cr_skip_test("built without CUDA");
}
#endif
