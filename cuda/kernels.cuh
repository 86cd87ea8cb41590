/* kernels.cuh — launchers of the CUDA backbone's kernels on device buffers.
 * Internal to cuda/: the executor (backbone_cuda*.cu) and the per-op API
 * (ops_cuda.cu) call them; ops_cuda.h documents each op's math, and each
 * kernel file names the CPU reference function it mirrors. It includes only
 * the request path's types (seg.h, precision.h, model/delta_rule.h), never
 * the test API.
 *
 * Every pointer is a device pointer; every launcher enqueues on `s`, checks
 * the launch (cudaGetLastError) and returns VW_OK or VW_ECUDA / VW_EUNSUPPORTED
 * with the kernel named. Rows are independent unless a sequence table
 * (vw_cuda_seg) says otherwise, and no kernel's per-row result depends on the
 * other rows of the batch (fixed reduction orders), so packing trees never
 * changes a tree's numbers. Thread-safety: launchers hold no state.
 */
#ifndef VW_KERNELS_CUH
#define VW_KERNELS_CUH

#include "cuda_common.cuh"
#include "model/delta_rule.h"
#include "precision.h"
#include "seg.h"
#include "vw_status.h"

/* ---- shared memory ---------------------------------------------------------- */

/* A kernel that launches with dynamic shared memory: the function, its bytes
 * at the widths asked, and its name as the SASS shows it (scripts/sass-report).
 * Kernels above the default 48 KiB must be opted in before they launch:
 * vw_cu_attn_supported and vw_cu_gdn_supported do it for every kernel of
 * these tables, once, at executor creation (and before each per-op call of
 * ops_cuda.h); the launchers themselves make no runtime calls but the launch. */
typedef struct vw_cu_kernel_smem {
    const void *fn;
    size_t bytes;
    const char *name;
} vw_cu_kernel_smem;
enum { VW_CU_SMEM_ROWS = 8 }; /* room for either table */

/* Attention's kernels at head_dim hd with `group` query heads per KV head
 * (attention_k; attention_tc_k where it takes hd); the delta rule's at dk, dv
 * (the SIMT kernels; the tensor-core ones where they take the shape). Return
 * the rows written to t[VW_CU_SMEM_ROWS]. */
size_t vw_cu_attn_smem_table(size_t hd, size_t group, vw_cu_kernel_smem *t);
size_t vw_cu_gdn_smem_table(size_t dk, size_t dv, vw_cu_kernel_smem *t);

/* ---- gemm.cu ------------------------------------------------------------ */

typedef struct vw_cu_gemm {
    cublasHandle_t blas;
    cudaStream_t stream;
    vw_cuda_precision prec;
    int invariant;         /* FP32: in-house fixed-order kernel instead of cuBLAS */
    __nv_bfloat16 *xbf;    /* BF16, BF16X2: the rounded input's hi plane, xbf_cap elements */
    __nv_bfloat16 *xbf_lo; /* BF16X2: its lo plane, xbf_cap elements (NULL otherwise) */
    size_t xbf_cap;
} vw_cu_gemm;

/* A GEMM input rounded to BF16 planes, dense [rows, K]: hi = bf16(x) and, for
 * BF16X2, lo = bf16(x - hi) (NULL otherwise); both NULL in FP32 mode. A
 * producing kernel that is given planes writes them beside its FP32 output —
 * the cast fused into the producer (norms, SwiGLU) — and
 * vw_cu_linear_planes consumes them. */
typedef struct vw_cu_planes {
    __nv_bfloat16 *hi, *lo;
} vw_cu_planes;

/* The planes of g's scratch for its precision (both NULL for FP32). */
vw_cu_planes vw_cu_gemm_planes(const vw_cu_gemm *g);

/* Y[T,N] (ld ldy) (+)= X[T,K] (ld ldx) W[N,K]^T; W is BF16 in BF16 and BF16X2
 * modes, FP32 otherwise; Y is FP32. The BF16 modes round X into g's planes
 * first (one kernel for both). */
vw_status vw_cu_linear(const vw_cu_gemm *g, const float *X, size_t ldx, const void *W, float *Y,
                       size_t ldy, size_t T, size_t N, size_t K, int accumulate, vw_err *err);
/* The same where X's producer already wrote g's planes (vw_cu_gemm_planes,
 * dense [T, K]): the BF16 modes read only them, FP32 reads X. */
vw_status vw_cu_linear_planes(const vw_cu_gemm *g, const float *X, size_t ldx, const void *W,
                              float *Y, size_t ldy, size_t T, size_t N, size_t K, int accumulate,
                              vw_err *err);

/* ---- elementwise.cu ------------------------------------------------------ */

vw_status vw_cu_embed(const void *E, int bf16, const int32_t *ids, size_t rows, size_t H, float *h,
                      cudaStream_t s, vw_err *err);
/* p's planes of x [rows, cols] (ld ldx): hi rounded to nearest even and, when
 * p.lo, the remainder x - float(hi) so rounded; dense [rows, cols]. */
vw_status vw_cu_cast_bf16(const float *x, size_t ldx, size_t rows, size_t cols, vw_cu_planes p,
                          cudaStream_t s, vw_err *err);
/* x: pre-conv rows (ld ldx), w [C, K]; row_seg[r] = index into segs; y [rows, C]. */
vw_status vw_cu_conv_silu(const float *x, size_t ldx, const float *w, size_t C, size_t K,
                          const vw_cuda_seg *segs, const int32_t *row_seg, size_t rows, float *y,
                          cudaStream_t s, vw_err *err);
/* In place on x (ld ld): q heads at columns [0, Hk*dk), k heads after them. */
vw_status vw_cu_l2norm_qk(float *x, size_t ld, size_t rows, size_t Hk, size_t dk, float eps,
                          float qscale, cudaStream_t s, vw_err *err);
/* ba (ld ld): b at columns [0, Hv), a at [Hv, 2Hv). g, beta: [rows, Hv]. */
vw_status vw_cu_gates(const float *ba, size_t ld, const float *A, const float *dt_bias, size_t rows,
                      size_t Hv, float *g, float *beta, cudaStream_t s, vw_err *err);
/* Gated DeltaNet's inputs in one launch (gdn_layer steps 2-3, 5-7): the causal
 * conv + SiLU of vw_cu_conv_silu over the C = 2 Hk dk + vd channels at x (ld
 * ldx) into y (ld C), the L2 norm of vw_cu_l2norm_qk on y's q and k heads,
 * and the gates of vw_cu_gates from b | a at ba (ld ldba) — each value
 * computed as those three kernels compute it, in the same order. */
typedef struct vw_cu_gdn_in {
    const float *x;
    size_t ldx;
    const float *w; /* [C, K] conv taps */
    size_t K;
    const vw_cuda_seg *segs;
    const int32_t *row_seg;
    size_t rows, Hk, dk, vd;
    float eps, qscale;
    float *y;
    const float *ba; /* b at columns [0, Hv), a at [Hv, 2Hv) */
    size_t ldba;
    const float *A, *dt_bias;
    size_t Hv;
    float *g, *beta; /* [rows, Hv] */
} vw_cu_gdn_in;
vw_status vw_cu_gdn_inputs(const vw_cu_gdn_in *a, cudaStream_t s, vw_err *err);

/* In place on gu [rows, 2F]; the products also into p (dense [rows, F]) when
 * p.hi (the down projection's input). */
vw_status vw_cu_swiglu(float *gu, size_t rows, size_t F, vw_cu_planes p, cudaStream_t s,
                       vw_err *err);
/* out[i, :] = x[idx[i], :], rows of H floats. */
vw_status vw_cu_gather_rows(const float *x, size_t H, const int32_t *idx, size_t n, float *out,
                            cudaStream_t s, vw_err *err);

/* ---- norm.cu ------------------------------------------------------------- */

/* h += delta (delta may be NULL); y = rmsnorm(h) * w; h, delta, y [rows, D];
 * y also into p (dense [rows, D]) when p.hi (the next projection's input). */
vw_status vw_cu_add_rmsnorm(float *h, const float *delta, const float *w, float eps, size_t rows,
                            size_t D, float *y, vw_cu_planes p, cudaStream_t s, vw_err *err);
/* In place on o (ld ldo, Hv heads of dv): o = rmsnorm(o) * w * silu(z); z (ld
 * ldz); o also into p (dense [rows, Hv dv]) when p.hi. */
vw_status vw_cu_gated_rmsnorm(float *o, size_t ldo, const float *z, size_t ldz, const float *w,
                              float eps, size_t rows, size_t Hv, size_t dv, vw_cu_planes p,
                              cudaStream_t s, vw_err *err);

typedef struct vw_cu_attn_prep {
    const float
        *proj; /* q head h at proj + r*ldp + h*2*hd; k head g at proj + r*ldp + Hq*2*hd + g*hd */
    size_t ldp;
    const float *q_norm, *k_norm; /* [hd], 1 + weight */
    float eps;
    const float *cos_t, *sin_t; /* [positions, rot/2] (vw_rope_tables) */
    size_t rot;
    const vw_cuda_seg *segs;
    const int32_t *row_seg;
    size_t rows, Hq, Hk, hd;
    float *Q, *K; /* [rows, Hq, hd], [rows, Hk, hd] (FP32 out: Qh == NULL) */
    /* Planes out instead (the tensor-core attention's operands, vw_cu_attn):
     * Qh [rows, Hq, 2, hd] and Kh [rows, Hk, 2, hd] FP16 hi/lo of the same
     * values, and Vb [rows, Hk, 2, hd] BF16 hi/lo of V (kv head g at
     * V + r*ldv + g*hd), which needs neither norm nor RoPE. */
    __half *Qh, *Kh;
    __nv_bfloat16 *Vb;
    const float *V;
    size_t ldv;
} vw_cu_attn_prep;

vw_status vw_cu_attn_prep_run(const vw_cu_attn_prep *a, cudaStream_t s, vw_err *err);

/* ---- attention.cu, attention_tc.cu ------------------------------------------ */

enum {
    VW_ATT_BR = 16,       /* query rows per work item */
    VW_ATT_BK = 64,       /* keys per tile of the tensor-core kernel */
    VW_ATT_MAX_PARTS = 3, /* split-KV: parts per item at most */
    VW_ATT_ENTRY = 4,     /* ints per entry of the items table: seg, row, part, parts */
    VW_ATT_ITEM_INTS = VW_ATT_ENTRY * (VW_ATT_MAX_PARTS + 1), /* room per row */
};

typedef struct vw_cu_attn {
    const float *Q; /* [rows, Hq, hd] (FP32 kernel) */
    const float *K; /* [rows, Hk, hd] (FP32 kernel) */
    const float *V; /* kv head g at V + r*ldv + g*hd (FP32 kernel) */
    size_t ldv;
    /* The tensor-core kernel's operands, split once by their producer
     * (vw_cu_attn_prep, or vw_cu_attn_planes): Qh [rows, Hq, 2, hd] and Kh
     * [rows, Hk, 2, hd] FP16 hi/lo, Vb [rows, Hk, 2, hd] BF16 hi/lo. */
    const __half *Qh, *Kh;
    const __nv_bfloat16 *Vb;
    float qk_max;   /* a bound on |Q|, |K| (FP16 range: the tensor-core kernel needs < 2^15) */
    const float *G; /* gate of head h at G + r*ldg + h*gstride; NULL: no gate */
    size_t ldg, gstride;
    float *O; /* head h at O + r*ldo + h*hd */
    size_t ldo;
    size_t Hq, Hk, hd;
    size_t rows; /* rows of the packed batch (the split-KV scratch is laid out for them) */
    const vw_cuda_seg *segs;
    const int32_t *items; /* n_items entries {segment, first row, part, parts} (VW_ATT_ENTRY
                             ints; vw_cu_attn_items), then n_split entries {segment, first row,
                             0, parts}: the items split into parts */
    size_t n_items, n_split;
    float *ws; /* split-KV scratch, vw_cu_attn_ws_floats(rows, Hq, hd) floats (n_split > 0) */
    vw_cuda_precision prec; /* FP32: the SIMT kernel; BF16, BF16X2: tensor cores where taken */
} vw_cu_attn;

/* FP32, or a call the tensor-core kernel does not take: attention_k (FP32
 * SIMT, attention.cu; every item one part); otherwise vw_cu_attention_tc. */
vw_status vw_cu_attention(const vw_cu_attn *a, cudaStream_t s, vw_err *err);
/* The flash-style tensor-core kernel (attention_tc.cu: FP16x3 Q Kᵀ, BF16x3 P V,
 * 64-key tiles, GQA packed), then, when items were split, the combine kernel;
 * VW_EUNSUPPORTED for calls it does not take. */
vw_status vw_cu_attention_tc(const vw_cu_attn *a, cudaStream_t s, vw_err *err);
/* Whether the tensor-core kernel takes this call: BF16 or BF16X2, head_dim
 * 32, 64, 128 or 256, Hq % Hk == 0, qk_max < 2^15, Qh, Kh, Vb 16-byte
 * aligned. Nothing in it depends on the batch, so a caller may ask before
 * producing the operands (the planes, or FP32 Q/K for attention_k). */
int vw_cu_attn_tc_takes(const vw_cu_attn *a);
/* The tensor-core kernel's row of vw_cu_attn_smem_table for hd at `group`
 * heads per KV head (fn NULL: a width it does not take); with group = 0, at 4
 * heads per block, the most it uses (what the opt-in asks). */
vw_cu_kernel_smem vw_cu_attn_tc_smem(size_t hd, size_t group);
/* The planes of vw_cu_attn from FP32 Q [rows, Hq, hd], K, V [rows, Hk, hd]
 * (dense), for callers whose operands come from elsewhere (ops_cuda.h). */
vw_status vw_cu_attn_planes(const float *Q, const float *K, const float *V, size_t rows, size_t Hq,
                            size_t Hk, size_t hd, __half *Qh, __half *Kh, __nv_bfloat16 *Vb,
                            cudaStream_t s, vw_err *err);
/* The work items of segs[0..n_segs): for each segment, tiles of VW_ATT_BR
 * rows. With split_tiles > 0, an item whose keys span T > split_tiles tiles
 * of VW_ATT_BK runs as min(VW_ATT_MAX_PARTS, ceil(T / split_tiles)) parts of
 * as equal tile counts as can be (the first parts one longer), which a
 * combine pass merges; the rule depends on the item alone, so a tree's numbers
 * never depend on its batch. Writes the parts, longest first (ties by segment,
 * row, part), then the split items (segment, row order); returns the parts'
 * count and sets *n_split. items has room for VW_ATT_ITEM_INTS * rows ints. */
size_t vw_cu_attn_items(const vw_cuda_seg *segs, size_t n_segs, int split_tiles, int32_t *items,
                        size_t *n_split);
/* The executor's split rule for a call of `rows` rows: tiles per part, or 0
 * (no split) where the call has blocks enough to fill the GPU without it. */
int vw_cu_attn_split_tiles(size_t rows);
/* Split-KV scratch floats for `rows` rows: the partial outputs of parts 1 and
 * 2 (part 0's go to O) and every part's running max and sum. */
size_t vw_cu_attn_ws_floats(size_t rows, size_t Hq, size_t hd);

/* ---- delta_rule.cu ------------------------------------------------------- */

/* One state pass: the sequences segs[0, n_segs) walk their chunks in order,
 * starting from init (by seg.state; NULL or state < 0: zeros) and leaving
 * their final state in final (by seg.state; NULL: not kept). */
typedef struct vw_cu_gdn_pass {
    const vw_cuda_seg *segs;
    size_t n_segs;
    const float *init; /* [slots, Hv, dk, dv] */
    float *final;      /* [slots, Hv, dk, dv] */
} vw_cu_gdn_pass;

typedef struct vw_cu_gdn {
    const float *q, *k, *v; /* q̂ (scaled), k̂ normalised; head layout as vw_gdn_io */
    size_t ldq, ldk, ldv;
    const float *g, *beta; /* [rows, Hv] */
    float *out;            /* head h at out + r*ldo + h*dv */
    size_t ldo;
    size_t Hk, Hv, dk, dv;
    size_t rows;           /* rows of the packed batch (the scratch is laid out for them) */
    const int32_t *chunks; /* n_chunks (first row, rows) pairs: every chunk of every
                              sequence of both passes (vw_cu_gdn_chunks) */
    size_t n_chunks;
    float *ws;              /* scratch, vw_cu_gdn_ws_floats(rows, Hv, dk, dv) floats
                               (W', U' then V_new, q̂/k̂ planes, chunk states, c:
                               delta_rule_common.cuh ws_split) */
    vw_cu_gdn_pass pass[2]; /* state passes, in this order: a pass may start from the
                               final states the previous one wrote (prefixes, then blocks) */
    vw_cuda_precision prec; /* FP32: the SIMT kernels; BF16, BF16X2: tensor cores where
                               taken (set it: zero is BF16) */
} vw_cu_gdn;

/* The chunked delta rule: a prep kernel over all chunks, the state kernel per
 * pass, the output kernel over all chunks. FP32, or a shape the tensor-core
 * kernels do not take: gdn_prep_k, gdn_state_k, gdn_out_k (FP32 SIMT,
 * delta_rule.cu); otherwise gdn_prep_tc_k, gdn_state_tc_k, gdn_out_tc_k
 * (BF16x3 products on operands split once into planes, delta_rule_tc.cu and
 * delta_rule_tc_state.cu: BF16 or BF16X2, dk a multiple of 32 up to 128, dv
 * a multiple of 32 up to 256, 16-byte aligned operands). Every output row of
 * the chunks is written. */
vw_status vw_cu_gdn_run(const vw_cu_gdn *a, cudaStream_t s, vw_err *err);
/* The first kernel only: fills the scratch's c, W' and U' (tests; W' is planes
 * rows, planes.cuh, where the tensor-core kernels ran: vw_cu_gdn_tc_takes). */
vw_status vw_cu_gdn_prep(const vw_cu_gdn *a, cudaStream_t s, vw_err *err);
/* The tensor-core kernels (delta_rule_tc.cu, delta_rule_tc_state.cu), which
 * vw_cu_gdn_run and vw_cu_gdn_prep dispatch to. vw_cu_gdn_tc_takes: whether
 * they take this call — BF16 or BF16X2; dk and dv multiples of 32, dk <= 128,
 * dv <= 256; q, k, v, out, ws 16-byte aligned and ldq, ldk, ldv, ldo multiples
 * of 4 (nothing that depends on the batch). Then _prep, _state (pass
 * a->pass[pass], any number of sequences) and _out launch its kernels, in that
 * order; _smem_table lists them with their shared memory at dk, dv (none for
 * a shape they do not take). */
int vw_cu_gdn_tc_takes(const vw_cu_gdn *a);
vw_status vw_cu_gdn_tc_prep(const vw_cu_gdn *a, cudaStream_t s, vw_err *err);
vw_status vw_cu_gdn_tc_state(const vw_cu_gdn *a, int pass, cudaStream_t s, vw_err *err);
vw_status vw_cu_gdn_tc_out(const vw_cu_gdn *a, cudaStream_t s, vw_err *err);
size_t vw_cu_gdn_tc_smem_table(size_t dk, size_t dv, vw_cu_kernel_smem *t);
size_t vw_cu_gdn_tc_state_smem_table(size_t dk, vw_cu_kernel_smem *t);
/* Host: n values of planes rows (a copy of W' after the tensor-core prep) back
 * to FP32 in place. */
void vw_cu_gdn_tc_planes_to_f32(float *x, size_t n);
/* Float offsets of the scratch's W', U' (then V_new) and c (tests read them). */
void vw_cu_gdn_ws_at(size_t rows, size_t Hv, size_t dk, size_t dv, size_t *w, size_t *u, size_t *c);
/* Scratch floats for `rows` rows: rows * Hv * (1 + 3 dk + dv) + (rows / 64 + 1)
 * * Hv * dk * dv + rows (delta_rule_common.cuh ws_split). */
size_t vw_cu_gdn_ws_floats(size_t rows, size_t Hv, size_t dk, size_t dv);
/* The chunks (VW_GDN_CHUNK rows from each sequence's start) of segs[0..n_segs)
 * as (first row, rows) pairs. Returns the count (<= total rows); chunks has
 * room for 2*rows ints. */
size_t vw_cu_gdn_chunks(const vw_cuda_seg *segs, size_t n_segs, int32_t *chunks);
/* VW_OK when the device can run the delta rule (both kernel sets) / attention
 * kernels at these sizes (shared memory, head widths), having opted every
 * kernel of their tables into its shared memory on the current device; else
 * VW_EUNSUPPORTED naming the limit. */
vw_status vw_cu_gdn_supported(size_t dk, size_t dv, vw_err *err);
vw_status vw_cu_attn_supported(size_t hd, vw_err *err);

#endif
