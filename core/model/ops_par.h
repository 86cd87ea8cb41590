/* ops_par.h — the CPU ops of ops_cpu.h spread over a task pool (util/pool.h):
 * how the CPU backbone splits its work (docs/backbone.md "Threads").
 *
 * Row-wise ops (norms, gates, the convolution, RoPE) split rows into tasks;
 * each row is computed exactly as ops_cpu.h computes it alone, so the result
 * is the same bits for any split and any number of threads.
 * vw_par_linear splits Y into tiles of at most VW_PAR_TILE_ROWS rows x
 * VW_PAR_TILE_COLS (VW_PAR_TILE_COLS_SMALL for N <= VW_PAR_SMALL_N) columns,
 * one single-threaded sgemm per tile. The tiles depend on T, N and K only, so
 * the result is the same bits for any number of threads; it is not the same
 * bits as one sgemm over the whole matrix (OpenBLAS rounds an element
 * differently by its place in the call), which is within the backbone's
 * tolerances (docs/backbone.md "Evidence and tolerances").
 *
 * OpenBLAS must run single-threaded (openblas_set_num_threads(1): the CPU
 * executor sets it), or every tile would start BLAS threads of its own.
 * Ownership: every buffer is the caller's; nothing allocates. Thread-safety:
 * one call at a time per pool (pool.h); outputs of a call are disjoint per
 * task. Nothing can fail.
 */
#ifndef VW_OPS_PAR_H
#define VW_OPS_PAR_H

#include <stddef.h>

#include "util/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    VW_PAR_TILE_ROWS = 256,
    VW_PAR_TILE_COLS = 256,
    VW_PAR_TILE_COLS_SMALL = 128,
    VW_PAR_SMALL_N = 2048,
};

/* Rows [r0, r1) of a row-wise op, on worker w (pool.h). */
typedef void (*vw_rows_fn)(void *ctx, size_t r0, size_t r1, unsigned w);

/* fn over [0, rows) in tasks of at least min_rows rows (about four tasks per
 * thread when rows allow). */
void vw_par_rows(vw_pool *p, size_t rows, size_t min_rows, vw_rows_fn fn, void *ctx);

/* vw_linear (ops_cpu.h) in tiles: Y[T,N] (+)= X[T,K] · W[N,K]^T. */
void vw_par_linear(vw_pool *p, const float *X, size_t ldx, const float *W, float *Y, size_t ldy,
                   size_t T, size_t N, size_t K, int accumulate);

/* vw_rmsnorm (ops_cpu.h) over rows in parallel. */
void vw_par_rmsnorm(vw_pool *p, const float *x, size_t ldx, float *y, size_t ldy, size_t rows,
                    size_t D, const float *w, float eps);

/* The tile grid of vw_par_linear for a T x N output: rows and columns per
 * tile (tests and the docs use it). */
void vw_par_linear_tiles(size_t T, size_t N, size_t *rows, size_t *cols);

#ifdef __cplusplus
}
#endif
#endif
