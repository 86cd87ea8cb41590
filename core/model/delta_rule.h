/* delta_rule.h — the gated delta rule of Gated DeltaNet (docs/spec/backbone.md
 * §3.5 step 8 and §4), FP32, per value head, with an initial state.
 *
 * Inputs for T tokens: q̂ and k̂ already L2-normalised (q̂ also scaled by
 * dk^-0.5), both laid out as rows of stride ldq / ldk holding Hk heads of dk;
 * v rows of stride ldv holding Hv heads of dv; g (log-decay, <= 0) and beta,
 * both [T, Hv]. Value head h reads key head h / (Hv / Hk) (grouped mapping,
 * spec §3.5). state: [Hv, dk, dv], S[i][j] = key i, value j; read as the
 * initial state and overwritten with the final one. out: rows of stride ldo,
 * head h at columns h*dv.
 *
 * vw_gdn_chunked is the prefill form (chunks of VW_GDN_CHUNK = 64, WY/UT
 * transform, decays only as exp of differences of cumulative log-decays, so
 * nothing overflows). vw_gdn_recurrent is the token recurrence it must equal
 * (the spec's reference; also the right form for very short inputs).
 *
 * The chunked form in two steps, so it runs in parallel as on the GPU
 * (docs/backbone.md "Threads"): vw_gdn_chunk_prep computes what a chunk
 * needs that does not depend on the state (independent for every head and
 * chunk), vw_gdn_chunk_state then carries the state through the chunk for
 * value columns [j0, j1) (the columns of S, V and O never mix, so slices of
 * one head run side by side; chunks of a head run in order). vw_gdn_chunked
 * is exactly those calls, slices of VW_GDN_SLICE columns, so any schedule of
 * the same calls gives the same bits.
 * Ownership: caller owns all buffers; ws is scratch of
 * vw_gdn_workspace_floats(dk, dv) floats. Thread-safety: reentrant (distinct
 * ws/state/out per caller). Cannot fail.
 */
#ifndef VW_DELTA_RULE_H
#define VW_DELTA_RULE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { VW_GDN_CHUNK = 64, VW_GDN_SLICE = 128 };

typedef struct vw_gdn_io {
    size_t T, Hk, Hv, dk, dv;
    const float *q, *k, *v; /* see above */
    size_t ldq, ldk, ldv;
    const float *g, *beta; /* [T, Hv] */
    float *out;
    size_t ldo;
} vw_gdn_io;

size_t vw_gdn_workspace_floats(size_t dk, size_t dv);

/* Value heads [h0, h1) only, so callers may split heads across threads. */
void vw_gdn_chunked(const vw_gdn_io *io, size_t h0, size_t h1, float *state, float *ws);

/* Floats of one chunk's record (vw_gdn_chunk_prep's output). */
size_t vw_gdn_chunk_floats(size_t dk, size_t dv);

/* The state-free part of head h's chunk starting at row t0 (a multiple of
 * VW_GDN_CHUNK): cumulative decays, the masked Q K^T, the solved U and W,
 * the decayed Q and K, into chunk (vw_gdn_chunk_floats). L: scratch of
 * VW_GDN_CHUNK^2 floats. */
void vw_gdn_chunk_prep(const vw_gdn_io *io, size_t h, size_t t0, float *chunk, float *L);

/* Head h's state S [dk, dv] through that chunk, value columns [j0, j1):
 * writes out's columns, updates S's and overwrites chunk's U columns (with
 * V_new). The chunk's earlier chunks must have been carried already. */
void vw_gdn_chunk_state(const vw_gdn_io *io, size_t h, size_t t0, float *chunk, float *S, size_t j0,
                        size_t j1);
void vw_gdn_recurrent(const vw_gdn_io *io, size_t h0, size_t h1, float *state);

#ifdef __cplusplus
}
#endif
#endif
