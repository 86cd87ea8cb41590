// delta_rule.cu — the chunked gated delta rule (chunk 64) on the GPU, FP32
// throughout (docs/spec/backbone.md §4.1; CPU reference: vw_gdn_chunked and
// chunk_head in core/model/delta_rule.c, which this follows step by step).
//
// Work split: one thread block per (sequence, 32-wide slice of value columns,
// value head). Value columns of the state evolve independently (S[:, j] only
// meets k, beta, g and v[j]), so a block keeps its S slice [dk x 32] in
// shared memory for the whole sequence and walks the chunks in order:
//   c = cumsum(g)                      one thread, sequential, as the CPU
//   L = strict_lower(beta K K^T Γ), P = (Q K^T) Γ, Γ_ij = exp(c_i - c_j)
//   U = beta V, W = beta e^c K; (I + L) U' = U, (I + L) W' = W (forward subst.)
//   V_new = U' - W' S;  O = (Q e^c) S + P V_new
//   S = e^{c_last} S + (K e^{c_last - c})^T V_new
// K·Kᵀ, Q·Kᵀ, the inverse and the state stay FP32 (docs/spec/backbone.md §4.4: lower
// precision there flipped decisions in system1-omni). Every dot product is a
// plain loop in index order, so results do not depend on the launch or on
// the other sequences of the batch. The W' solve is redone by every column
// slice of a head: redundant work, bought for 4x more blocks at batch 1.
#include "kernels.cuh"

namespace {

constexpr int CH = VW_GDN_CHUNK, VS = 32, GDN_THREADS = 256;

// Shared-memory floats for key width dk (see the carve-up in the kernel).
size_t gdn_smem_floats(size_t dk) {
    return dk * VS + 4 * CH + 2 * CH * CH + CH * VS + CH * dk + 2 * CH * (dk + 1);
}

struct chunk_smem {
    float *S, *c, *bet, *ec, *kds, *L, *P, *U, *W, *Kc, *Qc;
    size_t lds; // row stride of Kc/Qc: dk + 1 keeps column reads conflict-free
};

__device__ chunk_smem carve(float *sm, size_t dk) {
    chunk_smem m;
    m.S = sm;             // [dk][VS] state slice
    m.c = m.S + dk * VS;  // [CH] cumulative log-decay
    m.bet = m.c + CH;     // [CH] beta
    m.ec = m.bet + CH;    // [CH] e^{c_i}
    m.kds = m.ec + CH;    // [CH] e^{c_last - c_i}
    m.L = m.kds + CH;     // [CH][CH]
    m.P = m.L + CH * CH;  // [CH][CH]
    m.U = m.P + CH * CH;  // [CH][VS]: U, then U', then V_new
    m.W = m.U + CH * VS;  // [CH][dk]: W, then W'
    m.Kc = m.W + CH * dk; // [CH][dk+1] k̂ rows of the chunk
    m.lds = dk + 1;
    m.Qc = m.Kc + CH * m.lds; // [CH][dk+1] q̂ rows of the chunk
    return m;
}

// Stage the chunk's q̂/k̂ rows, beta and c = cumsum(g); rows >= n are zero.
__device__ void load_chunk(const vw_cu_gdn &a, const chunk_smem &m, size_t r0, int n, size_t h,
                           size_t kh) {
    const size_t dk = a.dk;
    for (size_t idx = threadIdx.x; idx < CH * dk; idx += blockDim.x) {
        const size_t i = idx / dk, d = idx % dk;
        const bool in = (int)i < n;
        m.Kc[i * m.lds + d] = in ? a.k[(r0 + i) * a.ldk + kh * dk + d] : 0.0f;
        m.Qc[i * m.lds + d] = in ? a.q[(r0 + i) * a.ldq + kh * dk + d] : 0.0f;
    }
    if (threadIdx.x < CH)
        m.bet[threadIdx.x] = (int)threadIdx.x < n ? a.beta[(r0 + threadIdx.x) * a.Hv + h] : 0.0f;
    if (threadIdx.x == 0) {
        float acc = 0.0f;
        for (int i = 0; i < CH; i++) {
            if (i < n)
                acc += a.g[(r0 + i) * a.Hv + h];
            m.c[i] = acc; // rows past n repeat c_last: they are never read as real rows
        }
    }
}

// L, P, U = beta V (slice), W = beta e^c K.
__device__ void build_chunk(const vw_cu_gdn &a, const chunk_smem &m, size_t r0, int n, size_t h,
                            size_t j0, size_t cols) {
    const size_t dk = a.dk;
    for (size_t idx = threadIdx.x; idx < CH * CH; idx += blockDim.x) {
        const int i = (int)(idx / CH), j = (int)(idx % CH);
        float l = 0.0f, p = 0.0f;
        if (i < n && j <= i) {
            float kk = 0.0f, qk = 0.0f;
            for (size_t d = 0; d < dk; d++) {
                kk += m.Kc[i * m.lds + d] * m.Kc[j * m.lds + d];
                qk += m.Qc[i * m.lds + d] * m.Kc[j * m.lds + d];
            }
            const float decay = expf(m.c[i] - m.c[j]); // <= 1: a difference, never e^c e^-c
            l = j < i ? m.bet[i] * kk * decay : 0.0f;
            p = qk * decay;
        }
        m.L[idx] = l;
        m.P[idx] = p;
    }
    for (size_t idx = threadIdx.x; idx < CH * VS; idx += blockDim.x) {
        const size_t i = idx / VS, jc = idx % VS;
        m.U[idx] = ((int)i < n && jc < cols) ? m.bet[i] * a.v[(r0 + i) * a.ldv + h * a.dv + j0 + jc]
                                             : 0.0f;
    }
    for (size_t idx = threadIdx.x; idx < CH * dk; idx += blockDim.x) {
        const size_t i = idx / dk, d = idx % dk;
        m.W[idx] = m.bet[i] * m.ec[i] * m.Kc[i * m.lds + d]; // zero rows stay zero
    }
}

// (I + L) X = B by forward substitution, one thread per column of U | W.
__device__ void solve_chunk(const chunk_smem &m, int n, size_t dk) {
    for (size_t col = threadIdx.x; col < VS + dk; col += blockDim.x) {
        float *X = col < VS ? m.U + col : m.W + (col - VS);
        const size_t ld = col < VS ? VS : dk;
        for (int i = 1; i < n; i++) {
            float acc = X[i * ld];
            for (int k = 0; k < i; k++)
                acc -= m.L[i * CH + k] * X[k * ld];
            X[i * ld] = acc;
        }
    }
}

__global__ void __launch_bounds__(GDN_THREADS) gdn_chunked_k(vw_cu_gdn a) {
    VW_DYN_SMEM(float, sm);
    const size_t dk = a.dk, dv = a.dv, h = blockIdx.z, j0 = (size_t)blockIdx.y * VS;
    const size_t cols = dv - j0 < (size_t)VS ? dv - j0 : VS, kh = h / (a.Hv / a.Hk);
    const vw_cuda_seg sg = a.segs[blockIdx.x];
    const chunk_smem m = carve(sm, dk);
    const float *S0 =
        (a.init && sg.state >= 0) ? a.init + ((size_t)sg.state * a.Hv + h) * dk * dv : nullptr;
    for (size_t idx = threadIdx.x; idx < dk * VS; idx += blockDim.x) {
        const size_t d = idx / VS, jc = idx % VS;
        m.S[idx] = (S0 && jc < cols) ? S0[d * dv + j0 + jc] : 0.0f;
    }
    for (int t0 = 0; t0 < sg.len; t0 += CH) {
        const int n = sg.len - t0 < CH ? sg.len - t0 : CH;
        const size_t r0 = (size_t)sg.start + t0;
        __syncthreads(); // previous chunk (or the state load) done
        load_chunk(a, m, r0, n, h, kh);
        __syncthreads();
        if (threadIdx.x < CH) {
            m.ec[threadIdx.x] = expf(m.c[threadIdx.x]);
            m.kds[threadIdx.x] = expf(m.c[n - 1] - m.c[threadIdx.x]);
        }
        __syncthreads();
        build_chunk(a, m, r0, n, h, j0, cols);
        __syncthreads();
        solve_chunk(m, n, dk);
        __syncthreads();
        for (size_t idx = threadIdx.x; idx < (size_t)n * VS; idx += blockDim.x) {
            const size_t i = idx / VS, jc = idx % VS; // V_new = U' - W' S
            float ws = 0.0f;
            for (size_t d = 0; d < dk; d++)
                ws += m.W[i * dk + d] * m.S[d * VS + jc];
            m.U[idx] -= ws;
        }
        __syncthreads();
        for (size_t idx = threadIdx.x; idx < (size_t)n * VS; idx += blockDim.x) {
            const size_t i = idx / VS, jc = idx % VS; // O = (Q e^c) S + P V_new
            if (jc >= cols)
                continue;
            float qs = 0.0f, pv = 0.0f;
            for (size_t d = 0; d < dk; d++)
                qs += m.Qc[i * m.lds + d] * m.ec[i] * m.S[d * VS + jc];
            for (size_t k = 0; k <= i; k++)
                pv += m.P[i * CH + k] * m.U[k * VS + jc];
            a.out[(r0 + i) * a.ldo + h * dv + j0 + jc] = qs + pv;
        }
        __syncthreads();
        const float el = m.ec[n - 1];
        for (size_t idx = threadIdx.x; idx < dk * VS; idx += blockDim.x) {
            const size_t d = idx / VS, jc = idx % VS; // S = e^{c_last} S + Kdᵀ V_new
            float acc = m.S[idx] * el;
            for (int i = 0; i < n; i++)
                acc += m.Kc[i * m.lds + d] * m.kds[i] * m.U[i * VS + jc];
            m.S[idx] = acc;
        }
    }
    if (a.final && sg.state >= 0) { // each thread stores the S entries it wrote
        float *Sf = a.final + ((size_t)sg.state * a.Hv + h) * dk * dv;
        for (size_t idx = threadIdx.x; idx < dk * VS; idx += blockDim.x) {
            const size_t d = idx / VS, jc = idx % VS;
            if (jc < cols)
                Sf[d * dv + j0 + jc] = m.S[idx];
        }
    }
}

} // namespace

vw_status vw_cu_gdn_supported(size_t dk, size_t dv, vw_err *err) {
    if (!dk || !dv)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape", "delta rule: dk %zu, dv %zu", dk, dv);
    return vw_cuda_smem_optin((const void *)gdn_chunked_k, gdn_smem_floats(dk) * sizeof(float),
                              "gdn_chunked_k", err);
}

vw_status vw_cu_gdn_run(const vw_cu_gdn *a, cudaStream_t s, vw_err *err) {
    if (!a->n_segs)
        return VW_OK;
    if (a->Hk == 0 || a->Hv % a->Hk || a->n_segs > 0x7fffffffu || a->Hv > 65535)
        return VW_FAIL(err, VW_EUNSUPPORTED, "bad_shape",
                       "delta rule: Hv %zu over Hk %zu, %zu seqs", a->Hv, a->Hk, a->n_segs);
    const size_t bytes = gdn_smem_floats(a->dk) * sizeof(float);
    vw_status st = vw_cuda_smem_optin((const void *)gdn_chunked_k, bytes, "gdn_chunked_k", err);
    if (st != VW_OK)
        return st;
    dim3 grid((unsigned)a->n_segs, vw_blocks_for(a->dv, VS), (unsigned)a->Hv);
    return VW_LAUNCH(err, gdn_chunked_k, grid, GDN_THREADS, bytes, s, *a);
}
