/* test_cuda_kernels.c — every CUDA backbone kernel (cuda/ops_cuda.h) against
 * its CPU reference (core/model/ops_cpu.h, core/model/delta_rule.h) on seeded random
 * inputs. A value passes when |gpu - ref| <= atol + rtol * |ref|; each test
 * prints its max |diff| and the first mismatches. Tolerances (FP32 kernels):
 * elementwise/norm ops 1e-6 + 1e-5|ref| (libm vs CUDA expf/sqrtf ulps, double
 * vs tree sums); GEMMs 1e-5 + 1e-5|ref| at K <= 100 (different summation
 * order); attention 2e-5 absolute vs a float64 reference (online vs two-pass
 * softmax); the delta rule 2e-5 + 2e-4|ref| vs the CPU chunked form and
 * 1e-4 + 1e-3|ref| vs the token recurrence (docs/spec/backbone.md §4.4: chunked and recurrent
 * forms differ by ~1e-6 relative in FP32; these bounds leave room for chunk
 * sums of 64 terms without hiding an indexing error, which shows up at O(1)).
 * Packing checks (several sequences in one launch) are bit-exact. The
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

#include "model/delta_rule.h"
#include "model/ops_cpu.h"
#include "ops_cuda.h"
#include "vw_cuda.h"

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

/* xorshift64*: uniform floats in [lo, hi), reproducible across machines. */
typedef struct rng {
    uint64_t s;
} rng;

static float uni(rng *r, float lo, float hi) {
    r->s ^= r->s >> 12, r->s ^= r->s << 25, r->s ^= r->s >> 27;
    uint64_t x = r->s * 2685821657736338717ull;
    return lo + (hi - lo) * (float)((double)(x >> 11) / 9007199254740992.0);
}

static float *rnd(rng *r, size_t n, float lo, float hi) {
    float *x = malloc((n ? n : 1) * sizeof *x);
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = uni(r, lo, hi);
    return x;
}

static float *dup(const float *x, size_t n) {
    float *y = malloc((n ? n : 1) * sizeof *y);
    cr_assert(y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

static float bf16_round(float x) { /* round to nearest even, as __float2bfloat16_rn */
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
}

/* Counts values outside atol + rtol|ref| (and non-finite outputs), prints the
 * max |diff| and the first five mismatches, and fails the test on any. */
static void expect_close(const char *what, const float *got, const float *ref, size_t n,
                         double atol, double rtol) {
    double maxd = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]);
        if (!isfinite(ref[i]))
            continue;
        if (!isfinite(got[i]) || !(d <= atol + rtol * fabs(ref[i]))) {
            if (++bad <= 5)
                fprintf(stderr, "  %s[%zu]: got %.9g, want %.9g\n", what, i, got[i], ref[i]);
        }
        if (isfinite(d) && d > maxd)
            maxd = d;
    }
    fprintf(stderr, "%-36s n=%-7zu max|diff|=%.3g (atol %.0e + rtol %.0e|ref|)%s\n", what, n, maxd,
            atol, rtol, bad ? "  FAIL" : "");
    cr_expect_eq(bad, 0, "%s: %zu of %zu values out of tolerance (max |diff| %.3g)", what, bad, n,
                 maxd);
}

static void expect_ok(vw_status st, const vw_err *err) {
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), err->msg, err->where);
}

/* ---- GEMM ------------------------------------------------------------------ */

static void ref_linear(const float *X, const float *W, float *Y, size_t T, size_t N, size_t K,
                       int acc) {
    vw_linear(X, K, W, Y, N, T, N, K, acc);
}

Test(cuda_kernels, linear_fp32_bf16_invariant) {
    need_gpu();
    rng r = {11};
    const size_t T = 37, N = 70, K = 53; /* not multiples of any tile */
    float *X = rnd(&r, T * K, -1, 1), *W = rnd(&r, N * K, -1, 1), *Y0 = rnd(&r, T * N, -1, 1);
    float *ref = dup(Y0, T * N), *got = dup(Y0, T * N);
    vw_err err = {0};
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, Y0, T * N * 4);
        ref_linear(X, W, ref, T, N, K, acc);
        for (int inv = 0; inv <= 1; inv++) {
            memcpy(got, Y0, T * N * 4);
            expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, inv, X, W, got, T, N, K, acc, &err), &err);
            char name[64];
            snprintf(name, sizeof name, "linear fp32 %s acc=%d", inv ? "fixed" : "cublas", acc);
            expect_close(name, got, ref, T * N, 1e-5, 1e-5);
        }
    }
    /* BF16: the GPU rounds X and W to BF16; the reference does the same in FP32. */
    float *Xb = dup(X, T * K), *Wb = dup(W, N * K);
    for (size_t i = 0; i < T * K; i++)
        Xb[i] = bf16_round(X[i]);
    for (size_t i = 0; i < N * K; i++)
        Wb[i] = bf16_round(W[i]);
    ref_linear(Xb, Wb, ref, T, N, K, 0);
    expect_ok(vw_cuda_op_linear(VW_CUDA_BF16, 0, X, W, got, T, N, K, 0, &err), &err);
    expect_close("linear bf16 (vs rounded fp32)", got, ref, T * N, 1e-5, 1e-5);
    /* BF16X2: W rounded as in BF16 (the bundle's own values), X kept: the hi + lo
     * split carries it to ~2^-17, so the product tracks FP32 on the unrounded X.
     * Each of the K terms is off by at most |w x| 2^-17 (7.6e-6 here); BF16
     * alone is off by ~2^-9 per term, which this bound would catch. */
    for (int acc = 0; acc <= 1; acc++) {
        memcpy(ref, Y0, T * N * 4);
        ref_linear(X, Wb, ref, T, N, K, acc);
        memcpy(got, Y0, T * N * 4);
        expect_ok(vw_cuda_op_linear(VW_CUDA_BF16X2, 0, X, W, got, T, N, K, acc, &err), &err);
        char name[64];
        snprintf(name, sizeof name, "linear bf16x2 acc=%d (vs fp32 X)", acc);
        expect_close(name, got, ref, T * N, 2e-4, 1e-5);
    }
    memcpy(ref, Y0, T * N * 4);
    ref_linear(X, Wb, ref, T, N, K, 0);
    expect_ok(vw_cuda_op_linear(VW_CUDA_BF16, 0, X, W, got, T, N, K, 0, &err), &err);
    double worst = 0;
    for (size_t i = 0; i < T * N; i++)
        worst = fmax(worst, fabs((double)got[i] - ref[i]));
    cr_expect_gt(worst, 2e-4, "plain bf16 vs fp32 X: %.3g (the bf16x2 bound must be tighter)",
                 worst);
    /* The fixed-order GEMM: rows 5..9 alone equal the same rows inside T = 37, bit for bit. */
    float *sub = malloc(5 * N * 4);
    expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, 1, X, W, got, T, N, K, 0, &err), &err);
    expect_ok(vw_cuda_op_linear(VW_CUDA_FP32, 1, X + 5 * K, W, sub, 5, N, K, 0, &err), &err);
    cr_expect(!memcmp(sub, got + 5 * N, 5 * N * 4), "fixed-order GEMM rows depend on T");
    free(sub), free(Xb), free(Wb), free(X), free(W), free(Y0), free(ref), free(got);
}

/* ---- row-local kernels ------------------------------------------------------- */

Test(cuda_kernels, embed) {
    need_gpu();
    rng r = {12};
    const size_t V = 50, H = 96, R = 9;
    float *E = rnd(&r, V * H, -1, 1), *got = malloc(R * H * 4), *ref = malloc(R * H * 4);
    int32_t ids[9] = {0, 49, 7, 7, 13, 1, 48, 25, 0};
    vw_err err = {0};
    for (int bf = 0; bf <= 1; bf++) {
        for (size_t i = 0; i < R; i++)
            for (size_t d = 0; d < H; d++)
                ref[i * H + d] = bf ? bf16_round(E[ids[i] * H + d]) : E[ids[i] * H + d];
        expect_ok(vw_cuda_op_embed(E, V, H, bf, ids, R, got, &err), &err);
        expect_close(bf ? "embed bf16" : "embed fp32", got, ref, R * H, 0, 0);
    }
    free(E), free(got), free(ref);
}

Test(cuda_kernels, add_rmsnorm) {
    need_gpu();
    rng r = {13};
    const size_t Ds[] = {64, 1024, 1000};
    vw_err err = {0};
    for (size_t k = 0; k < 3; k++) {
        const size_t D = Ds[k], R = 7;
        float *h = rnd(&r, R * D, -3, 3), *delta = rnd(&r, R * D, -1, 1), *w = rnd(&r, D, 0.5, 1.5);
        float *h_ref = dup(h, R * D), *y = malloc(R * D * 4), *y_ref = malloc(R * D * 4);
        for (int with = 0; with <= 1; with++) {
            if (with)
                for (size_t i = 0; i < R * D; i++)
                    h_ref[i] += delta[i];
            vw_rmsnorm(h_ref, D, y_ref, D, R, D, w, 1e-6f);
            expect_ok(vw_cuda_op_add_rmsnorm(h, with ? delta : NULL, w, 1e-6f, R, D, y, &err),
                      &err);
            char name[64];
            snprintf(name, sizeof name, "add_rmsnorm D=%zu delta=%d (h)", D, with);
            expect_close(name, h, h_ref, R * D, 0, 0);
            snprintf(name, sizeof name, "add_rmsnorm D=%zu delta=%d (y)", D, with);
            expect_close(name, y, y_ref, R * D, 1e-6, 1e-5);
        }
        free(h), free(delta), free(w), free(h_ref), free(y), free(y_ref);
    }
}

Test(cuda_kernels, gated_rmsnorm) {
    need_gpu();
    rng r = {14};
    const size_t R = 6, Hv = 4, dv = 48;
    float *o = rnd(&r, R * Hv * dv, -2, 2), *z = rnd(&r, R * Hv * dv, -4, 4);
    float *w = rnd(&r, dv, 0.5, 1.5), *ref = dup(o, R * Hv * dv);
    vw_rmsnorm(ref, dv, ref, dv, R * Hv, dv, w, 1e-6f);
    for (size_t i = 0; i < R * Hv * dv; i++)
        ref[i] *= vw_silu(z[i]);
    vw_err err = {0};
    expect_ok(vw_cuda_op_gated_rmsnorm(o, z, w, 1e-6f, R, Hv, dv, &err), &err);
    expect_close("gated_rmsnorm", o, ref, R * Hv * dv, 1e-6, 1e-5);
    free(o), free(z), free(w), free(ref);
}

Test(cuda_kernels, l2norm_gates_swiglu) {
    need_gpu();
    rng r = {15};
    vw_err err = {0};
    const size_t R = 5, Hk = 3, dk = 40, W = 2 * Hk * dk;
    float *x = rnd(&r, R * W, -2, 2), *ref = dup(x, R * W);
    const float qs = 1.0f / sqrtf((float)dk);
    for (size_t t = 0; t < R; t++)
        for (size_t h = 0; h < 2 * Hk; h++)
            vw_l2norm_scale(ref + t * W + h * dk, dk, 1e-6f, h < Hk ? qs : 1.0f);
    expect_ok(vw_cuda_op_l2norm_qk(x, R, Hk, dk, 1e-6f, qs, &err), &err);
    expect_close("l2norm q/k", x, ref, R * W, 1e-6, 1e-5);

    const size_t Hv = 6;
    float *ba = rnd(&r, R * 2 * Hv, -6, 6), *A = rnd(&r, Hv, -3, -0.1f);
    float *dt = rnd(&r, Hv, -1, 1), *g = malloc(R * Hv * 4), *beta = malloc(R * Hv * 4);
    ba[Hv] = 25.0f; /* a + dt_bias > 20: softplus returns its input */
    float *g_ref = malloc(R * Hv * 4), *b_ref = malloc(R * Hv * 4);
    for (size_t t = 0; t < R; t++)
        for (size_t h = 0; h < Hv; h++) {
            g_ref[t * Hv + h] = A[h] * vw_softplus(ba[t * 2 * Hv + Hv + h] + dt[h]);
            b_ref[t * Hv + h] = vw_sigmoidf(ba[t * 2 * Hv + h]);
        }
    expect_ok(vw_cuda_op_gates(ba, A, dt, R, Hv, g, beta, &err), &err);
    expect_close("gates g", g, g_ref, R * Hv, 1e-6, 1e-5);
    expect_close("gates beta", beta, b_ref, R * Hv, 1e-6, 1e-5);

    const size_t F = 300;
    float *gu = rnd(&r, R * 2 * F, -5, 5), *gu_ref = dup(gu, R * 2 * F);
    for (size_t t = 0; t < R; t++)
        for (size_t i = 0; i < F; i++)
            gu_ref[t * 2 * F + i] = vw_silu(gu_ref[t * 2 * F + i]) * gu_ref[t * 2 * F + F + i];
    expect_ok(vw_cuda_op_swiglu(gu, R, F, &err), &err);
    expect_close("swiglu", gu, gu_ref, R * 2 * F, 1e-6, 1e-5);
    free(x), free(ref), free(ba), free(A), free(dt), free(g), free(beta), free(g_ref), free(b_ref),
        free(gu), free(gu_ref);
}

/* ---- conv with a prefix's tail ------------------------------------------------ */

Test(cuda_kernels, conv_with_tail) {
    need_gpu();
    rng r = {16};
    const size_t C = 48, K = 4;
    const size_t pre[3] = {1, 2, 9}, blk[3] = {6, 1, 5}; /* prefixes shorter than K-1 too */
    size_t rows = 0;
    for (int i = 0; i < 3; i++)
        rows += pre[i] + blk[i];
    float *x = rnd(&r, rows * C, -2, 2), *w = rnd(&r, C * K, -1, 1);
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
    expect_ok(vw_cuda_op_conv_silu(x, w, C, K, segs, 6, rows, got, &err), &err);
    expect_close("conv+silu with prefix tail", got, ref, rows * C, 1e-6, 1e-5);
    free(x), free(w), free(got), free(ref), free(hist);
}

/* ---- attention prep (q/k norm + partial RoPE) ------------------------------------ */

Test(cuda_kernels, attn_prep_rope) {
    need_gpu();
    rng r = {17};
    const size_t Hq = 4, Hk = 2, hd = 64, rot = 16, half = rot / 2;
    const size_t W = Hq * 2 * hd + Hk * hd, P = 11, T = 5, R = P + T;
    const double theta = 1e7;
    vw_cuda_seg segs[2] = {{0, (int32_t)P, 0, 0, 0, 0},
                           {(int32_t)P, (int32_t)T, (int32_t)P, 0, (int32_t)P, 0}};
    float *proj = rnd(&r, R * W, -2, 2), *qn = rnd(&r, hd, 0.5, 1.5), *kn = rnd(&r, hd, 0.5, 1.5);
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
    expect_ok(
        vw_cuda_op_attn_prep(proj, qn, kn, 1e-6f, theta, rot, segs, 2, R, Hq, Hk, hd, Q, Kt, &err),
        &err);
    expect_close("attn_prep q (norm+rope)", Q, Qr, R * Hq * hd, 1e-6, 1e-5);
    expect_close("attn_prep k (norm+rope)", Kt, Kr, R * Hk * hd, 1e-6, 1e-5);
    free(proj), free(qn), free(kn), free(Q), free(Kt), free(Qr), free(Kr), free(cs), free(sn);
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
    expect_ok(vw_cuda_op_mma(kind, A, B, C, D, &err), &err);
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
 * so D must equal the plain product bit for bit. Then the 3xTF32 and BF16x3
 * splits reach FP32 grade on random floats (mma.cuh: dropped terms <= ~3 * 2^-22
 * and ~3 * 2^-18 of sum |a b|; bounds 2^-19 and 2^-15 leave room for the
 * FP32 accumulation of three MMAs)
 * where one plain TF32/BF16 MMA does not, and cvt.rna.tf32 is bit-exact. */
Test(cuda_kernels, mma_layouts) {
    need_gpu();
    rng r = {23};
    float A[256], B[128], C[128];
    for (int kind = VW_CUDA_MMA_TF32; kind <= VW_CUDA_MMA_BF16; kind++) {
        for (int i = 0; i < 256; i++)
            A[i] = floorf(uni(&r, -8, 9));
        for (int i = 0; i < 128; i++)
            B[i] = floorf(uni(&r, -8, 9)), C[i] = floorf(uni(&r, -64, 65));
        double w = mma_case((vw_cuda_mma_kind)kind, A, B, C, 0);
        fprintf(stderr, "mma %s layouts: max|D - AB - C| = %g\n",
                kind ? "bf16 m16n8k16" : "tf32 m16n8k8", w);
        cr_expect_eq(w, 0, "mma kind %d: D differs from the plain product", kind);
    }
    for (int i = 0; i < 256; i++)
        A[i] = uni(&r, -1, 1);
    for (int i = 0; i < 128; i++)
        B[i] = uni(&r, -1, 1), C[i] = uni(&r, -1, 1);
    const double b3tf = 0x1p-19, b3bf = 0x1p-15; /* relative to sum |a b| + |c| */
    double w3tf = mma_case(VW_CUDA_MMA_3XTF32, A, B, C, b3tf);
    double w1tf = mma_case(VW_CUDA_MMA_TF32, A, B, C, b3tf);
    double w3bf = mma_case(VW_CUDA_MMA_BF16X3, A, B, C, b3bf);
    double w1bf = mma_case(VW_CUDA_MMA_BF16, A, B, C, b3bf);
    fprintf(stderr, "mma error / bound: 3xtf32 %.3g (1xtf32 %.3g), bf16x3 %.3g (1xbf16 %.3g)\n",
            w3tf, w1tf, w3bf, w1bf);
    cr_expect_leq(w3tf, 1.0, "3xTF32 beyond 2^-19 sum|ab| (%.3g of it)", w3tf);
    cr_expect_leq(w3bf, 1.0, "BF16x3 beyond 2^-15 sum|ab| (%.3g of it)", w3bf);
    cr_expect_gt(w1tf, 1.0, "one TF32 MMA within the 3xTF32 bound: the bound cannot fail");
    cr_expect_gt(w1bf, 1.0, "one BF16 MMA within the BF16x3 bound: the bound cannot fail");
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
        x[i] = ldexpf(uni(&r, 0.5f, 1.0f), (int)floorf(uni(&r, -100, 100))) *
               (uni(&r, -1, 1) < 0 ? -1.0f : 1.0f);
    vw_err err = {0};
    expect_ok(vw_cuda_op_tf32_round(x, 1000, y, &err), &err);
    size_t bad = 0;
    for (size_t i = 0; i < 1000; i++) {
        float want = tf32_rna(x[i]);
        if (memcmp(&want, &y[i], 4) && ++bad <= 5)
            fprintf(stderr, "  tf32(%a) = %a, want %a\n", x[i], y[i], want);
    }
    cr_expect_eq(bad, 0, "cvt.rna.tf32: %zu of 1000 values differ from the definition", bad);
}

/* ---- attention with prefix ---------------------------------------------------- */

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

/* Runs one precision's kernel on the batch and on tree 1 alone (rows
 * re-based), checks the batch against ref and the tree's rows bit for bit. */
static void attention_run(vw_cuda_precision prec, const float *Q, const float *K, const float *V,
                          const float *G, const float *ref, size_t Hq, size_t Hk, size_t hd,
                          float *O) {
    vw_cuda_seg segs[5] = {{0, 70, 0, 0, 0, 0}, {70, 3, 0, 0, 0, 1}};
    segs[2] = (vw_cuda_seg){73, 40, 70, 0, 70, 0};
    segs[3] = (vw_cuda_seg){113, 1, 70, 0, 70, 0};
    segs[4] = (vw_cuda_seg){114, 17, 3, 70, 3, 1};
    const size_t R = 131;
    vw_err err = {0};
    expect_ok(vw_cuda_op_attention(prec, Q, K, V, G, segs, 5, R, Hq, Hk, hd, O, &err), &err);
    char name[64];
    snprintf(name, sizeof name, "attention %s Hq=%zu Hk=%zu hd=%zu", vw_cuda_precision_name(prec),
             Hq, Hk, hd);
    expect_close(name, O, ref, R * Hq * hd, 2e-5, 0);
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
    expect_ok(vw_cuda_op_attention(prec, Q1, K1, V1, G1, alone, 2, 20, Hq, Hk, hd, O1, &err), &err);
    for (int i = 0; i < 20; i++)
        cr_expect(!memcmp(O1 + i * Hq * hd, O + a_rows[i] * Hq * hd, Hq * hd * 4),
                  "%s: attention row %d of a tree differs when packed with another tree", name, i);
    free(Q1), free(K1), free(V1), free(G1), free(O1);
}

/* Both kernels against the float64 reference: FP32 (SIMT) and BF16X2, which
 * takes the tensor-core kernel (3xTF32) where it takes the shape; that it did
 * shows as outputs not bit-equal to the SIMT kernel's. */
static void attention_case(size_t Hq, size_t Hk, size_t hd, int tc, uint64_t seed) {
    rng r = {seed};
    /* two trees: prefixes of 70 and 3 rows, blocks of 40, 1 and 17 rows */
    vw_cuda_seg segs[5] = {{0, 70, 0, 0, 0, 0}, {70, 3, 0, 0, 0, 1}};
    segs[2] = (vw_cuda_seg){73, 40, 70, 0, 70, 0};
    segs[3] = (vw_cuda_seg){113, 1, 70, 0, 70, 0};
    segs[4] = (vw_cuda_seg){114, 17, 3, 70, 3, 1};
    const size_t R = 131;
    float *Q = rnd(&r, R * Hq * hd, -1, 1), *K = rnd(&r, R * Hk * hd, -1, 1);
    float *V = rnd(&r, R * Hk * hd, -1, 1), *G = rnd(&r, R * Hq * hd, -3, 3);
    for (size_t i = 0; i < R * Hq * hd; i++) /* larger logits: a peaked softmax too */
        Q[i] *= 4.0f;
    float *O = malloc(R * Hq * hd * 4), *Otc = malloc(R * Hq * hd * 4),
          *ref = malloc(R * Hq * hd * 4);
    for (int s = 0; s < 5; s++)
        for (int i = 0; i < segs[s].len; i++)
            ref_attn_row(Q, K, V, G, &segs[s], i, Hq, Hk, hd, ref);
    attention_run(VW_CUDA_FP32, Q, K, V, G, ref, Hq, Hk, hd, O);
    attention_run(VW_CUDA_BF16X2, Q, K, V, G, ref, Hq, Hk, hd, Otc);
    cr_expect_eq(memcmp(O, Otc, R * Hq * hd * 4) != 0, tc,
                 "Hq=%zu Hk=%zu hd=%zu: bf16x2 %s the SIMT kernel's outputs", Hq, Hk, hd,
                 tc ? "repeats" : "differs from");
    free(Q), free(K), free(V), free(G), free(O), free(Otc), free(ref);
}

Test(cuda_kernels, attention_with_prefix) {
    need_gpu();
    attention_case(4, 2, 64, 1, 18);  /* GQA group 2, two dims per lane */
    attention_case(4, 1, 32, 1, 19);  /* the tiny bundle's shape */
    attention_case(2, 1, 256, 1, 20); /* the 0.8B head width (8 dims per lane) */
    attention_case(8, 2, 256, 1, 21); /* the 0.8B shape: 4 heads x 16 tokens per block */
    attention_case(6, 1, 32, 1, 22);  /* group 6 (27B): two blocks of 3 heads per item */
    attention_case(2, 1, 96, 0, 23);  /* a head width only the SIMT kernel takes */
}

/* ---- the delta rule ----------------------------------------------------------- */

typedef struct gdn_case {
    size_t T, Hk, Hv, dk, dv;
    float *q, *k, *v, *g, *beta, *S0;
} gdn_case;

static gdn_case gdn_make(rng *r, size_t T, size_t Hk, size_t Hv, size_t dk, size_t dv) {
    gdn_case c = {T, Hk, Hv, dk, dv, NULL, NULL, NULL, NULL, NULL, NULL};
    c.q = rnd(r, T * Hk * dk, -1, 1), c.k = rnd(r, T * Hk * dk, -1, 1);
    c.v = rnd(r, T * Hv * dv, -1, 1), c.g = rnd(r, T * Hv, -1.5f, -0.001f);
    c.beta = rnd(r, T * Hv, 0.05f, 0.95f), c.S0 = rnd(r, Hv * dk * dv, -0.5f, 0.5f);
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
static void gdn_check(gdn_case *c, int with_state) {
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
    expect_ok(vw_cuda_op_gdn(&io, &T, 1, with_state ? c->S0 : NULL, s, &err), &err);
    char name[96];
    snprintf(name, sizeof name, "gdn T=%zu dk=%zu dv=%zu S0=%d vs chunked", T, c->dk, c->dv,
             with_state);
    expect_close(name, o, oc, no, 2e-5, 2e-4);
    snprintf(name, sizeof name, "gdn T=%zu dk=%zu dv=%zu S0=%d vs recurrence", T, c->dk, c->dv,
             with_state);
    expect_close(name, o, orc, no, 1e-4, 1e-3);
    snprintf(name, sizeof name, "gdn T=%zu S0=%d final state", T, with_state);
    expect_close(name, s, sc, ns, 2e-5, 2e-4);
    free(o), free(oc), free(orc), free(s), free(sc), free(sr), free(ws);
}

Test(cuda_kernels, delta_rule_lengths) {
    need_gpu();
    const size_t Ts[] = {1, 63, 64, 65, 200};
    for (size_t i = 0; i < 5; i++) {
        rng r = {100 + i};
        gdn_case c = gdn_make(&r, Ts[i], 2, 4, 32, 32); /* grouped: 2 v-heads per k-head */
        gdn_check(&c, 0);
        gdn_check(&c, 1);
        gdn_free(&c);
    }
}

Test(cuda_kernels, delta_rule_shapes) {
    need_gpu();
    rng r = {200};
    gdn_case c = gdn_make(&r, 130, 1, 2, 40, 72); /* dv: two full column slices + 8 */
    gdn_check(&c, 1);
    gdn_free(&c);
    rng r2 = {201};
    gdn_case d = gdn_make(&r2, 70, 1, 1, 128, 128); /* the 0.8B head shape */
    gdn_check(&d, 1);
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

/* Five sequences in one launch (lengths across the chunk edge, 1-token ones),
 * each with its own initial state: outputs and final states against the CPU
 * chunked form, and each sequence run alone equals its rows in the batch bit
 * for bit. */
Test(cuda_kernels, delta_rule_packed) {
    need_gpu();
    rng r = {300};
    const size_t lens[5] = {65, 1, 130, 64, 1}, T = 261, Hv = 4, dk = 32, dv = 32;
    const size_t ns = Hv * dk * dv;
    gdn_case c = gdn_make(&r, T, 2, Hv, dk, dv);
    float *S0 = rnd(&r, 5 * ns, -0.5f, 0.5f), *S = malloc(5 * ns * 4), *S1 = malloc(ns * 4);
    float *o = malloc(T * Hv * dv * 4), *o1 = malloc(T * Hv * dv * 4);
    float *ref = malloc(T * Hv * dv * 4), *Sref = dup(S0, 5 * ns);
    vw_err err = {0};
    vw_gdn_io io = gdn_io(&c, 0, T, o);
    expect_ok(vw_cuda_op_gdn(&io, lens, 5, S0, S, &err), &err);
    size_t t0 = 0;
    for (size_t i = 0; i < 5; i++) {
        ref_seq(&c, t0, lens[i], Sref + i * ns, ref);
        vw_gdn_io one = gdn_io(&c, t0, lens[i], o1 + t0 * Hv * dv);
        expect_ok(vw_cuda_op_gdn(&one, &lens[i], 1, S0 + i * ns, S1, &err), &err);
        cr_expect(!memcmp(o1 + t0 * Hv * dv, o + t0 * Hv * dv, lens[i] * Hv * dv * 4),
                  "sequence %zu: packed output differs from alone", i);
        cr_expect(!memcmp(S1, S + i * ns, ns * 4), "sequence %zu: packed state differs", i);
        t0 += lens[i];
    }
    expect_close("gdn packed (5 seqs) vs chunked", o, ref, T * Hv * dv, 2e-5, 2e-4);
    expect_close("gdn packed final states", S, Sref, 5 * ns, 2e-5, 2e-4);
    /* an empty sequence keeps its initial state and leaves the next one as it was */
    const size_t lz[2] = {0, 65};
    float *Sin = malloc(2 * ns * 4), *Sz = malloc(2 * ns * 4);
    memcpy(Sin, S0 + ns, ns * 4), memcpy(Sin + ns, S0, ns * 4);
    vw_gdn_io z = gdn_io(&c, 0, 65, o1);
    expect_ok(vw_cuda_op_gdn(&z, lz, 2, Sin, Sz, &err), &err);
    cr_expect(!memcmp(Sz, Sin, ns * 4), "empty sequence: final state is not the initial one");
    cr_expect(!memcmp(Sz + ns, S, ns * 4) && !memcmp(o1, o, 65 * Hv * dv * 4),
              "the sequence after an empty one differs");
    free(Sin), free(Sz);
    free(S0), free(S), free(S1), free(o), free(o1), free(ref), free(Sref);
    gdn_free(&c);
}

/* The executor's hand-off: two trees packed as prefixes (130 and 1 rows) then
 * blocks (1, 65, 40 after the first; 64, 3 after the second); prefixes run
 * from zero, each block from its prefix's final state. Outputs of every row
 * and the prefixes' states against the CPU chunked form run tree by tree. */
static void gdn_tree_case(size_t Hk, size_t Hv, size_t dk, size_t dv, int weak, uint64_t seed) {
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
    rng r = {seed};
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
    expect_ok(vw_cuda_op_gdn_tree(&io, segs, NS, 2, 2, slots, &err), &err);
    char name[96];
    snprintf(name, sizeof name, "gdn tree dk=%zu dv=%zu Hv=%zu%s out", dk, dv, Hv,
             weak ? " weak" : "");
    expect_close(name, o, ref, no, 2e-5, 2e-4);
    snprintf(name, sizeof name, "gdn tree dk=%zu dv=%zu%s prefix states", dk, dv,
             weak ? " weak" : "");
    expect_close(name, slots, Sref, 2 * ns, 2e-5, 2e-4);
    free(o), free(ref), free(slots), free(Sref), free(Sb);
    gdn_free(&c);
}

Test(cuda_kernels, delta_rule_prefix_blocks) {
    need_gpu();
    gdn_tree_case(2, 4, 32, 32, 0, 400);   /* the tiny bundle's shape */
    gdn_tree_case(2, 4, 32, 32, 1, 403);   /* same, long memory */
    gdn_tree_case(1, 2, 40, 72, 0, 401);   /* odd widths: partial tiles and column slices */
    gdn_tree_case(1, 2, 40, 72, 1, 404);   /* same, long memory */
    gdn_tree_case(1, 2, 128, 128, 1, 402); /* the 0.8B head shape, long memory */
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
static void gdn_prep_case(size_t Hk, size_t Hv, size_t dk, size_t dv, const size_t *lens,
                          size_t n_seq, int inverse_probe, int weak, uint64_t seed) {
    size_t T = 0;
    for (size_t i = 0; i < n_seq; i++)
        T += lens[i];
    rng r = {seed};
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
    expect_ok(vw_cuda_op_gdn_prep(&io, lens, n_seq, gc, gw, gu, &err), &err);
    char name[96];
    if (inverse_probe) {
        snprintf(name, sizeof name, "gdn prep (I+L)^-1 dk=%zu%s", dk, weak ? " weak" : "");
        expect_close(name, gu, ru, Hv * T * dv, 2e-5, 2e-4);
    } else {
        const char *wk = weak ? " weak" : "";
        snprintf(name, sizeof name, "gdn prep cumsum dk=%zu dv=%zu%s", dk, dv, wk);
        expect_close(name, gc, rc, Hv * T, 2e-5, 2e-4);
        snprintf(name, sizeof name, "gdn prep W' dk=%zu dv=%zu%s", dk, dv, wk);
        expect_close(name, gw, rw, Hv * T * dk, 2e-5, 2e-4);
        snprintf(name, sizeof name, "gdn prep U' dk=%zu dv=%zu%s", dk, dv, wk);
        expect_close(name, gu, ru, Hv * T * dv, 2e-5, 2e-4);
    }
    free(gc), free(gw), free(gu), free(rc), free(rw), free(ru), free(cc), free(A), free(U), free(W);
    free(o);
    gdn_free(&c);
}

Test(cuda_kernels, delta_rule_prep_intermediates) {
    need_gpu();
    const size_t a[4] = {1, 63, 64, 130}, b[2] = {65, 7}, d[1] = {70}, e[2] = {64, 30};
    gdn_prep_case(2, 4, 32, 32, a, 4, 0, 0, 500);
    gdn_prep_case(2, 4, 32, 32, a, 4, 0, 1, 504);
    gdn_prep_case(1, 2, 40, 72, b, 2, 0, 1, 501);
    gdn_prep_case(1, 1, 128, 128, d, 1, 0, 1, 502);
    gdn_prep_case(1, 2, 32, 64, e, 2, 1, 1, 503); /* beta V = I: U' = (I + L)^-1 */
}

#else
Test(cuda_kernels, built_without_cuda) {
    cr_skip_test("built without CUDA");
}
#endif
