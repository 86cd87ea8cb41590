/* ops_cpu.c — FP32 ops of the CPU reference backbone (see ops_cpu.h). The
 * math follows transformers' Qwen3.5 modeling file in FP32 step by step;
 * comments name the spec section each op implements. */
#include "ops_cpu.h"

#include "qwen35_config.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

void vw_linear(const float *X, size_t ldx, const float *W, float *Y, size_t ldy, size_t T, size_t N,
               size_t K, int accumulate) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)N, (blasint)K, 1.0f,
                X, (blasint)ldx, W, (blasint)K, accumulate ? 1.0f : 0.0f, Y, (blasint)ldy);
}

void vw_rmsnorm(const float *x, size_t ldx, float *y, size_t ldy, size_t rows, size_t D,
                const float *w, float eps) {
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * ldx;
        float *yr = y + r * ldy;
        double ss = 0.0; /* double sum: the mean of squares is the only long reduction */
        for (size_t i = 0; i < D; i++)
            ss += (double)xr[i] * xr[i];
        float inv = 1.0f / sqrtf((float)(ss / (double)D) + eps);
        for (size_t i = 0; i < D; i++)
            yr[i] = xr[i] * inv * w[i];
    }
}

void vw_rope_tables(size_t pos0, size_t T, size_t rot, double theta, float *cos_t, float *sin_t) {
    size_t half = rot / 2;
    float inv[VW_QWEN35_MAX_ROTARY / 2]; /* rot <= VW_QWEN35_MAX_ROTARY (config check) */
    /* transformers: 1.0 / (base ** (arange(0, dim, 2, float32) / dim)), all FP32. */
    for (size_t i = 0; i < half; i++)
        inv[i] = 1.0f / powf((float)theta, (float)(2 * i) / (float)rot);
    for (size_t t = 0; t < T; t++) {
        float pos = (float)(pos0 + t);
        for (size_t i = 0; i < half; i++) {
            float a = pos * inv[i];
            cos_t[t * half + i] = cosf(a);
            sin_t[t * half + i] = sinf(a);
        }
    }
}

void vw_rope_apply(float *x, size_t rot, const float *c, const float *s) {
    size_t half = rot / 2;
    for (size_t i = 0; i < half; i++) {
        float a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
    }
}

float vw_silu(float x) {
    return x / (1.0f + expf(-x));
}

float vw_softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

void vw_l2norm_scale(float *x, size_t n, float eps, float scale) {
    double ss = 0.0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float inv = 1.0f / sqrtf((float)ss + eps) * scale;
    for (size_t i = 0; i < n; i++)
        x[i] *= inv;
}

void vw_causal_conv_silu_rows(const float *x, size_t ldx, const float *hist, const float *w,
                              size_t t0, size_t t1, size_t C, size_t K, float *y) {
    for (size_t t = t0; t < t1; t++) {
        float *yr = y + t * C;
        memset(yr, 0, C * sizeof *yr);
        for (size_t j = 0; j < K; j++) {
            /* tap j reads position t - (K-1) + j; negative positions come from hist */
            long p = (long)t - (long)(K - 1) + (long)j;
            const float *src =
                p >= 0 ? x + (size_t)p * ldx : hist + (size_t)((long)(K - 1) + p) * C;
            for (size_t c = 0; c < C; c++)
                yr[c] += w[c * K + j] * src[c];
        }
        for (size_t c = 0; c < C; c++)
            yr[c] = vw_silu(yr[c]);
    }
}

void vw_causal_conv_silu(const float *x, size_t ldx, const float *hist, const float *w, size_t T,
                         size_t C, size_t K, float *y) {
    vw_causal_conv_silu_rows(x, ldx, hist, w, 0, T, C, K, y);
}

void vw_conv_history(const float *x, size_t ldx, size_t T, size_t C, size_t K, float *hist) {
    size_t H = K - 1;
    if (!H)
        return;
    if (T < H) /* keep the newest H - T old rows, then append x */
        memmove(hist, hist + T * C, (H - T) * C * sizeof *hist);
    size_t take = T < H ? T : H;
    for (size_t r = 0; r < take; r++)
        memcpy(hist + (H - take + r) * C, x + (T - take + r) * ldx, C * sizeof *hist);
}

void vw_softmax_prefix(float *row, size_t n, size_t width) {
    float m = -INFINITY;
    for (size_t i = 0; i < n; i++)
        m = row[i] > m ? row[i] : m;
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        row[i] = expf(row[i] - m);
        sum += row[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < n; i++)
        row[i] *= inv;
    for (size_t i = n; i < width; i++)
        row[i] = 0.0f;
}
