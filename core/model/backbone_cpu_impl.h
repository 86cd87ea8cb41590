/* backbone_cpu_impl.h — internal to the CPU backbone (backbone_cpu.c loads
 * weights and drives trees; backbone_layers.c runs one segment through the
 * layers, backbone_gdn.c the Gated DeltaNet mixer). Not a public contract:
 * only those files include it.
 *
 * Threads: every stage is a run of the model's pool (util/pool.h, ops_par.h);
 * per-worker scratch is indexed by the pool's worker index.
 *
 * Shapes: the widths of vw_qwen35_dims (qwen35_config.h): H hidden, F ffn,
 * Hq/Hk attention heads of hd, Hv/Hkl GDN heads of dv/dk, kd = Hkl*dk,
 * vd = Hv*dv, cd = 2*kd + vd (conv channels).
 */
#ifndef VW_BACKBONE_CPU_IMPL_H
#define VW_BACKBONE_CPU_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "qwen35_config.h"
#include "util/pool.h"

typedef struct gdn_w {
    float *in;      /* [cd + vd + 2*Hv, H]: rows qkv | z | b | a */
    float *conv;    /* [cd, K] depthwise taps */
    float *dt_bias; /* [Hv] */
    float *A;       /* [Hv] = -exp(A_log) */
    float *norm;    /* [dv] plain weight of the gated RMSNorm */
    float *out;     /* [H, vd] */
} gdn_w;

typedef struct attn_w {
    float *in;              /* [Hq*2*hd + 2*Hk*hd, H]: q/gate interleaved per head | k | v */
    float *q_norm, *k_norm; /* [hd], stored as 1 + w */
    float *o;               /* [H, Hq*hd] */
} attn_w;

typedef struct layer_w {
    int full;                   /* 1: attention, 0: GDN */
    size_t slot;                /* index among layers of the same kind */
    float *in_norm, *post_norm; /* [H], stored as 1 + w */
    float *mlp_in;              /* [2*F, H]: gate | up */
    float *down;                /* [H, F] */
    gdn_w g;
    attn_w a;
} layer_w;

typedef struct cpu_model {
    vw_qwen35_config c;
    vw_qwen35_dims d;
    size_t gdn_state;  /* floats per GDN layer: S [Hv,dk,dv] then history [K-1, cd] */
    float *embed;      /* [vocab, H] */
    float *final_norm; /* [H], 1 + w */
    layer_w *layers;
    float *arena;  /* owns every weight */
    vw_pool *pool; /* owned: the executor's threads */
} cpu_model;

/* Scratch for one forward call, sized for segments of <= cap_T tokens with
 * <= cap_past prefix tokens before them, and for `workers` pool workers. */
typedef struct cpu_scratch {
    size_t cap_T, cap_past, workers;
    float *h, *x;         /* [T, H] residual stream, normed rows */
    float *big;           /* [T, max(gdn_in, attn_in)] stacked projections */
    float *conv;          /* [T, cd] */
    float *core;          /* [T, max(vd, Hq*hd)] token-mixer output */
    float *gb;            /* [T, 2*Hv]: g then beta */
    float *mlp;           /* [VW_MLP_ROWS, 2*F] */
    float *cos_t, *sin_t; /* [T, rot/2] */
    float *Q;             /* [Hq, T, hd] */
    float *scores;        /* per worker [VW_ATTN_TILE, cap_past + T] */
    float *gdn_L;         /* per worker [VW_GDN_CHUNK^2] */
    float *gdn_chunks;    /* [<= VW_GDN_WINDOW, Hv] chunk records (delta_rule.h) */
    float *kv;            /* [2, Hk, T, hd] K/V of a block (not kept) */
} cpu_scratch;

/* MLP rows per pass (the [rows, 2F] buffer); attention query rows per task;
 * delta-rule chunks prepared per pass (the chunk records' memory). */
enum { VW_MLP_ROWS = 512, VW_ATTN_TILE = 128, VW_GDN_WINDOW = 8 };

/* One run of T tokens at positions pos0.. through every layer. */
typedef struct cpu_segment {
    const int32_t *ids;
    size_t T, pos0;
    float *gdn;           /* n_gdn x gdn_state floats, read and updated */
    const float *past_kv; /* n_attn x [2, Hk, past_cap, hd], or NULL */
    size_t n_past, past_cap;
    float *keep_kv; /* where to keep this segment's K/V ([2,Hk,cap,hd] per layer), or
                       NULL to use scratch->kv */
    size_t keep_cap;
} cpu_segment;

/* Leaves the final residual stream (before the final norm) in sc->h [T, H]. */
void vw_cpu_run_segment(const cpu_model *m, cpu_scratch *sc, const cpu_segment *seg);

/* §3.5: Gated DeltaNet over sc->x [T, H]; adds its output into h [T, H];
 * state: the layer's S then conv history (cpu_model.gdn_state floats). */
void vw_cpu_gdn_layer(const cpu_model *m, const gdn_w *w, cpu_scratch *sc, size_t T, float *state,
                      float *h);

#endif
