/* ops_par.c — ops_cpu.h's ops over a task pool (see ops_par.h). */
#include "ops_par.h"

#include "ops_cpu.h"

static size_t ceil_div(size_t a, size_t b) {
    return (a + b - 1) / b;
}

typedef struct rows_job {
    vw_rows_fn fn;
    void *ctx;
    size_t rows, per;
} rows_job;

static void rows_task(void *ctx, size_t i, unsigned w) {
    const rows_job *j = ctx;
    size_t r0 = i * j->per, r1 = r0 + j->per < j->rows ? r0 + j->per : j->rows;
    j->fn(j->ctx, r0, r1, w);
}

void vw_par_rows(vw_pool *p, size_t rows, size_t min_rows, vw_rows_fn fn, void *ctx) {
    if (!rows)
        return;
    size_t per = ceil_div(rows, 4 * (size_t)vw_pool_threads(p));
    per = per < min_rows ? min_rows : per;
    per = per ? per : 1;
    rows_job j = {.fn = fn, .ctx = ctx, .rows = rows, .per = per};
    vw_pool_for(p, ceil_div(rows, per), rows_task, &j);
}

void vw_par_linear_tiles(size_t T, size_t N, size_t *rows, size_t *cols) {
    *rows = T < VW_PAR_TILE_ROWS ? T : VW_PAR_TILE_ROWS;
    size_t c = N <= VW_PAR_SMALL_N ? VW_PAR_TILE_COLS_SMALL : VW_PAR_TILE_COLS;
    *cols = N < c ? N : c;
}

typedef struct linear_job {
    const float *X, *W;
    float *Y;
    size_t ldx, ldy, T, N, K, tr, tc, n_cols;
    int accumulate;
} linear_job;

static void linear_task(void *ctx, size_t i, unsigned w) {
    (void)w;
    const linear_job *j = ctx;
    size_t r0 = (i / j->n_cols) * j->tr, c0 = (i % j->n_cols) * j->tc;
    size_t nr = j->T - r0 < j->tr ? j->T - r0 : j->tr, nc = j->N - c0 < j->tc ? j->N - c0 : j->tc;
    vw_linear(j->X + r0 * j->ldx, j->ldx, j->W + c0 * j->K, j->Y + r0 * j->ldy + c0, j->ldy, nr, nc,
              j->K, j->accumulate);
}

void vw_par_linear(vw_pool *p, const float *X, size_t ldx, const float *W, float *Y, size_t ldy,
                   size_t T, size_t N, size_t K, int accumulate) {
    if (!T || !N)
        return;
    linear_job j = {.X = X,
                    .W = W,
                    .Y = Y,
                    .ldx = ldx,
                    .ldy = ldy,
                    .T = T,
                    .N = N,
                    .K = K,
                    .accumulate = accumulate};
    vw_par_linear_tiles(T, N, &j.tr, &j.tc);
    j.n_cols = ceil_div(N, j.tc);
    vw_pool_for(p, ceil_div(T, j.tr) * j.n_cols, linear_task, &j);
}

typedef struct norm_job {
    const float *x, *w;
    float *y;
    size_t ldx, ldy, D;
    float eps;
} norm_job;

static void norm_rows(void *ctx, size_t r0, size_t r1, unsigned w) {
    (void)w;
    const norm_job *j = ctx;
    vw_rmsnorm(j->x + r0 * j->ldx, j->ldx, j->y + r0 * j->ldy, j->ldy, r1 - r0, j->D, j->w, j->eps);
}

void vw_par_rmsnorm(vw_pool *p, const float *x, size_t ldx, float *y, size_t ldy, size_t rows,
                    size_t D, const float *w, float eps) {
    norm_job j = {.x = x, .w = w, .y = y, .ldx = ldx, .ldy = ldy, .D = D, .eps = eps};
    vw_par_rows(p, rows, 8, norm_rows, &j);
}
