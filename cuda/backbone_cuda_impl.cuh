/* backbone_cuda_impl.cuh — internal to the CUDA executor: backbone_cuda.cu
 * (weights, arena, lifetime) and backbone_cuda_fwd.cu (plan + forward).
 * Not a public contract.
 *
 * Shapes: the widths of vw_qwen35_dims (core/model/qwen35_config.h): H hidden,
 * F ffn, Hq/Hk attention heads of hd, Hv/Hkl DeltaNet heads of dv/dk,
 * kd = Hkl*dk, vd = Hv*dv, cd = 2*kd + vd conv channels, K conv taps. R = max_tokens (rows of a
 * call), NT = max_trees. "WT" marks a matrix stored BF16 in BF16 mode and
 * FP32 in FP32 mode; every vector is FP32.
 */
#ifndef VW_BACKBONE_CUDA_IMPL_CUH
#define VW_BACKBONE_CUDA_IMPL_CUH

#include "backbone_cuda.h"
#include "heads_cuda.cuh"
#include "kernels.cuh"

typedef struct cu_gdn_w {
    void *in;       /* WT [cd + vd + 2*Hv, H]: rows qkv | z | b | a */
    float *conv;    /* [cd, K] */
    float *dt_bias; /* [Hv] */
    float *A;       /* [Hv] = -exp(A_log) */
    float *norm;    /* [dv] plain weight */
    void *out;      /* WT [H, vd] */
} cu_gdn_w;

typedef struct cu_attn_w {
    void *in;               /* WT [Hq*2*hd + 2*Hk*hd, H]: q/gate per head | k | v */
    float *q_norm, *k_norm; /* [hd], 1 + w */
    void *o;                /* WT [H, Hq*hd] */
} cu_attn_w;

typedef struct cu_layer_w {
    int full;                   /* 1: attention, 0: DeltaNet */
    float *in_norm, *post_norm; /* [H], 1 + w */
    void *mlp_in;               /* WT [2F, H]: gate | up */
    void *down;                 /* WT [H, F] */
    cu_gdn_w g;
    cu_attn_w a;
} cu_layer_w;

/* Per-call metadata, int32, laid out by capacity R (host: pinned; device:
 * arena): ids [R], row_seg [R], out_rows [R], segs [R] x vw_cuda_seg, items
 * [VW_ATT_ITEM_INTS R] (attention parts and split items), chunks [2R]
 * (delta-rule chunks). */
typedef struct cu_meta {
    int32_t *ids, *row_seg, *out_rows, *items, *chunks;
    vw_cuda_seg *segs;
} cu_meta;

/* Per-class timing marks of one forward (vw_backbone_cuda_profile): event i
 * opens a span of class cls[i] that event i+1 closes. */
typedef struct cu_prof {
    int on;
    size_t n, cap;
    int last; /* class of the open span, -1 before the first mark */
    cudaEvent_t *ev;
    int *cls;
} cu_prof;

/* One forward call's packed batch. Segments: prefixes [0, n_trees) (tree t's
 * prefix is segment t, DeltaNet state slot t), then blocks in tree order. */
typedef struct cu_plan {
    size_t rows, n_trees, n_segs, n_out, n_items, n_split, n_chunks;
} cu_plan;

/* The executor's CUDA graphs (backbone_cuda_graph.cu): one instance per
 * forward shape (cu_plan's counts), least recently used replaced. */
typedef struct cu_graph_slot {
    cu_plan shape;
    cudaGraphExec_t exec; /* NULL: free */
    size_t nodes;
    uint64_t used;
} cu_graph_slot;
typedef struct cu_graphs {
    cu_graph_slot slot[VW_CUDA_GRAPHS];
    uint64_t tick;
    int off;               /* a capture failed: direct launches from then on */
    vw_cuda_launches last; /* the last forward's */
} cu_graphs;

typedef struct cu_model {
    vw_qwen35_config c;
    vw_cuda_opts opts;                  /* resolved (no zeros) */
    vw_qwen35_dims d;                   /* the widths (model/qwen35_config.h) */
    size_t big_w, mix_w, core_w, xbf_w; /* per-row widths of the arena buffers */
    size_t wt_size;                     /* bytes per matrix element: 2 (BF16) or 4 */
    int attn_tc;       /* attention on tensor cores (planes from attn_prep, split-KV) */
    float attn_qk_max; /* bound on |q|, |k| from the q/k norms (vw_cu_attn.qk_max) */

    cudaStream_t stream;
    cudaEvent_t done;     /* recorded at the end of a forward; the caller waits on it */
    cudaStream_t copy;    /* the heads' table upload, while the forward still runs */
    cudaEvent_t uploaded; /* recorded on copy after it; stream waits for it */
    vw_cuda_heads *heads; /* the readout heads (NULL: the package has none, or host_heads) */
    cu_prof *prof;        /* per-class timing (vw_backbone_cuda_profile) */
    cu_graphs *graphs;    /* the forward's graphs; NULL with opts.no_graphs */
    cublasHandle_t blas;
    vw_cu_gemm gemm;

    void *weights; /* device, owns every weight */
    void *embed;   /* WT [vocab, H] */
    float *final_norm;
    cu_layer_w *layers; /* host array [n_layers] */

    void *arena;          /* device, owns every activation */
    float *h, *x, *delta; /* [R, H] residual stream, normed rows, mixer/MLP output */
    float *big;           /* [R, big_w] stacked projections, then MLP gate|up */
    float *mix;           /* [R, mix_w] conv output (DeltaNet) or Q|K, or the Q|K|V planes
                             (attention) */
    float *core;          /* [R, core_w] token-mixer output */
    float *gb;            /* [2, R, Hv] g then beta */
    float *pstate;        /* [NT, Hv, dk, dv] prefixes' final DeltaNet states (one layer) */
    float *gdn_ws;        /* delta-rule scratch, vw_cu_gdn_ws_floats(R, Hv, dk, dv), and
                             attention's split-KV scratch (vw_cu_attn_ws_floats) */
    float *cos_t, *sin_t; /* [R, rot/2] RoPE tables for positions 0 .. R-1 */
    void *blas_ws;
    size_t blas_ws_bytes;
    cu_meta dmeta; /* device */
    cu_meta hmeta; /* pinned host */
    void *hmeta_base;
} cu_model;

/* backbone_cuda_fwd.cu: opens a span of class k when profiling is on and the
 * class changes (k = VW_CUK_COUNT closes the last one). */
void vw_cu_mark(const cu_model *m, int k);

/* Enqueues a planned forward on m->stream: the metadata uploads, the layers,
 * the gather (backbone_cuda_fwd.cu). */
typedef vw_status (*cu_enqueue_fn)(const cu_model *m, const cu_plan *p, vw_err *err);

/* backbone_cuda_graph.cu: runs enqueue(m, p) through the graph kept for p's
 * shape, or captures a new one (into the least recently used slot) and
 * launches it; a capture the runtime refuses turns graphs off for m and
 * enqueues directly. Records g->last. */
vw_status vw_cu_graph_forward(const cu_model *m, cu_graphs *g, const cu_plan *p,
                              cu_enqueue_fn enqueue, vw_err *err);
void vw_cu_graphs_free(cu_graphs *g);

/* backbone_cuda_fwd.cu: the executor's forward slot. */
vw_status vw_cu_forward(vw_executor *ex, const vw_tree *trees, size_t n_trees, float *rows,
                        vw_err *err);
/* backbone_cuda_fwd.cu: the heads slot (executor.h "Heads"), over the rows the
 * forward gathered into delta, in buffers the forward is done with. */
vw_status vw_cu_heads_op(vw_executor *ex, const vw_head_job *job, vw_err *err);

#endif
