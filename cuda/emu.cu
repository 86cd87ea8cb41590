// emu.cu — the CPU emulator behind cuda_emu.h: fibers for threads (a 12-line
// x86-64 stack switch, or ucontext under ASan or on other CPUs),
// warp- and block-level barriers, shuffles, mma.sync, ldmatrix, cp.async,
// stream capture, and the CUDA runtime entry points cuda/ calls but events
// (emu_rt.cu, with the cuBLAS subset), implemented on host memory. Compiled
// only in the standalone VW_CUDA_EMU build (cuda/CMakeLists.txt excludes it
// from the real one). See cuda_emu.h for what is and is not modelled.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <new>
#include <time.h>
#include <unordered_map>
#include <vector>

#include "cuda_emu.h"
#include "ops_cuda.h"

// Fiber switch. The hand-written one saves the callee-saved registers and the
// stack pointer, no signal mask syscall (ucontext's), which makes barrier-heavy
// kernels ~20x faster; ASan builds keep ucontext, which ASan knows about.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define VW_EMU_ASM_SWITCH 1
extern "C" void vw_emu_swap(void **save_sp, void *load_sp);
__asm__(".text\n.globl vw_emu_swap\n.type vw_emu_swap,@function\nvw_emu_swap:\n"
        "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
        "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
        "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n"
        ".size vw_emu_swap, .-vw_emu_swap\n");
#endif

namespace {

enum fstate { RUN, WAIT_BLOCK, WAIT_WARP, DONE };
} // namespace

// A captured graph and an instance of it: the nodes in capture order.
struct CUgraph_st {
    std::vector<std::function<void()>> nodes;
    bool invalid = false;
};
struct CUgraphExec_st {
    std::vector<std::function<void()>> nodes;
};

namespace {
constexpr size_t STACK_BYTES = 512 * 1024;

// One lane's deposit for a warp collective (mma.sync, ldmatrix): which
// instruction, the lane's count of collectives (all lanes must be at the same
// one), its A/B registers (mma) or row address (ldmatrix), and what the
// ldmatrix loaded for it.
struct mma_slot {
    int kind;
    unsigned seq;
    uint32_t a[4], b[2];
    const void *addr;
    uint32_t out[4];
};
// ldmatrix's kinds in the slots (after the MMA kinds): x1, x2, x4, +4 for .trans.
constexpr int LDSM_KIND = 16;

// A cp.async copy not yet landed: where, what (read at the issue), how many
// bytes, and its group (-1: not committed yet).
struct cp_pending {
    unsigned char *dst;
    unsigned char data[16];
    int bytes;
    long group;
};

struct emulator {
    dim3 grid, block;
    uint3 bidx;
    int n = 0, cur = 0;
    std::vector<ucontext_t> ctx; // ucontext fibers
    std::vector<void *> sp;      // stack pointers of asm-switched fibers
    void *sched_sp = nullptr;
    std::vector<int> state, parity;
    std::vector<char *> stacks;
    std::vector<uint64_t> xch[2];       // shuffle slots, double-buffered by parity
    std::vector<mma_slot> mxch[2];      // mma.sync / ldmatrix slots, same parity as the shuffles
    std::vector<unsigned> mma_seq;      // collectives each thread of the block has issued
    std::vector<unsigned> ldsm_done[2]; // per warp: 1 + seq of the ldmatrix whose loads are done
    std::vector<std::vector<cp_pending>> cpq; // per thread: cp.async copies in flight
    std::vector<long> cp_groups;              // per thread: groups committed so far
    std::vector<unsigned char> dyn;
    ucontext_t sched;
    void (*body)(void *) = nullptr;
    void *arg = nullptr;
    bool mma_truncate = false;                   // VW_CUDA_EMU_MMA=truncate: the hardware-like sum
    std::unordered_map<const void *, int> optin; // kernels' MaxDynamicSharedMemorySize
    CUgraph_st *capture = nullptr;               // the graph being captured
    bool replaying = false;                      // running a graph's nodes
    vw_cuda_emu_calls calls = {};                // runtime and cuBLAS calls (ops_cuda.h)
    bool plain = false;                          // threads run as plain calls (no barrier allowed)
    bool saw_barrier = false;                    // block 0 of this launch reached a barrier
    ~emulator() {
        for (char *st : stacks)
            free(st);
    }
};

emulator E;

[[noreturn]] void die(const char *what) {
    fprintf(stderr, "cuda emulator: %s (block %u,%u,%u, thread %d)\n", what, E.bidx.x, E.bidx.y,
            E.bidx.z, E.cur);
    abort();
}

void thread_exit_checks() {
    if (!E.cpq[E.cur].empty())
        die("cp.async: the thread ended with copies not waited for (cp.async.wait_group)");
}

void thread_start(int i) {
    E.cpq[i].clear();
    E.cp_groups[i] = 0;
}

void trampoline() {
    E.body(E.arg);
    thread_exit_checks();
    E.state[E.cur] = DONE; // returning resumes E.sched (uc_link)
}

#ifdef VW_EMU_ASM_SWITCH
[[noreturn]] void asm_entry() {
    trampoline();
    vw_emu_swap(&E.sp[E.cur], E.sched_sp);
    __builtin_unreachable();
}
#endif

// Prepares fiber i to start the kernel body on its own stack.
void fiber_init(int i) {
#ifdef VW_EMU_ASM_SWITCH
    uint64_t *sp = (uint64_t *)(E.stacks[i] + STACK_BYTES); // 16-byte aligned top
    *--sp = 0;                                              // asm_entry's return slot
    *--sp = (uint64_t)(uintptr_t)asm_entry;                 // where `ret` lands
    for (int r = 0; r < 6; r++)
        *--sp = 0; // r15 r14 r13 r12 rbx rbp
    E.sp[i] = sp;
#else
    getcontext(&E.ctx[i]);
    E.ctx[i].uc_stack.ss_sp = E.stacks[i];
    E.ctx[i].uc_stack.ss_size = STACK_BYTES;
    E.ctx[i].uc_link = &E.sched;
    makecontext(&E.ctx[i], trampoline, 0);
#endif
}

void to_fiber(int i) {
#ifdef VW_EMU_ASM_SWITCH
    vw_emu_swap(&E.sched_sp, E.sp[i]);
#else
    swapcontext(&E.sched, &E.ctx[i]);
#endif
}

void to_scheduler(int me) {
#ifdef VW_EMU_ASM_SWITCH
    vw_emu_swap(&E.sp[me], E.sched_sp);
#else
    swapcontext(&E.ctx[me], &E.sched);
#endif
}

void wait(int st) {
    if (E.plain)
        die("barrier in a block run without fibers: block 0 of this launch had none");
    E.saw_barrier = true;
    const int me = E.cur;
    E.state[me] = st;
    to_scheduler(me);
}

// Runs the lanes of warp w until each waits at __syncthreads or is done,
// releasing warp barriers whenever all live lanes have reached one.
void run_warp(int w) {
    const int lo = w * 32, hi = lo + 32 < E.n ? lo + 32 : E.n;
    for (;;) {
        for (int i = lo; i < hi; i++)
            if (E.state[i] == RUN) {
                E.cur = i;
                to_fiber(i);
            }
        int live = 0, at_warp = 0;
        for (int i = lo; i < hi; i++) {
            live += E.state[i] != DONE;
            at_warp += E.state[i] == WAIT_WARP;
        }
        if (!at_warp)
            return;
        if (at_warp != hi - lo) {
            E.cur = lo;
            die(at_warp != live ? "warp split between a warp barrier and __syncthreads"
                                : "a lane exited while its warp waits at a warp barrier/shuffle");
        }
        for (int i = lo; i < hi; i++)
            E.state[i] = RUN;
    }
}

void run_block() {
    for (int i = 0; i < E.n; i++) {
        if (!E.stacks[i] && !(E.stacks[i] = (char *)aligned_alloc(64, STACK_BYTES)))
            die("out of memory for fiber stacks");
        fiber_init(i);
        E.state[i] = RUN, E.parity[i] = 0, E.mma_seq[i] = 0;
        E.mxch[0][i].kind = E.mxch[1][i].kind = 0; // no deposit from an earlier block
        thread_start(i);
    }
    for (int w = 0; w < (E.n + 31) / 32; w++)
        E.ldsm_done[0][w] = E.ldsm_done[1][w] = 0;
    memset(E.dyn.data(), 0xff, E.dyn.size());
    for (;;) {
        for (int w = 0; w * 32 < E.n; w++)
            run_warp(w);
        bool live = false;
        for (int i = 0; i < E.n; i++)
            if (E.state[i] == WAIT_BLOCK)
                E.state[i] = RUN, live = true;
        if (!live)
            return;
    }
}

template <typename T> T shuffle(T v, int src_lane) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "slot size");
    const int me = E.cur, p = E.parity[me];
    E.parity[me] ^= 1;
    memcpy(&E.xch[p][me], &v, sizeof v);
    wait(WAIT_WARP);
    // Every lane wrote its slot before the barrier released (run_warp checks
    // that all 32 arrived); the source may have exited since, its value stays.
    const int src = (me & ~31) + (src_lane & 31);
    if (src >= E.n)
        die("shuffle reads a lane outside the block");
    T r;
    memcpy(&r, &E.xch[p][src], sizeof r);
    return r;
}

// Where element (r, k) of A and (k, n) of B live — lane, register, and for
// BF16 the half (0: low 16 bits) — for g = lane >> 2, t = lane & 3. Written
// from the PTX ISA's fragment tables (mma.m16n8k8 .tf32, mma.m16n8k16 .bf16),
// as the inverse of the forward maps in mma.cuh, so the mma_layouts test
// compares two independent transcriptions (and the GPU compares both to the
// hardware):
//   TF32 m16n8k8:  a[i] = A[g + 8(i&1)][t + 4(i>>1)],  b[i] = B[t + 4i][g]
//   BF16, F16 m16n8k16: a[i] = A[g + 8(i&1)][2t + 8(i>>1) + h], b[i] = B[2t + 8i + h][g]
//   both:          c[i] = C[g + 8(i>>1)][2t + (i&1)]
struct frag_pos {
    int lane, reg, half;
};
frag_pos a_pos(int kind, int r, int k) {
    if (kind == VW_EMU_MMA_TF32_M16N8K8)
        return {(r % 8) * 4 + k % 4, r / 8 + 2 * (k / 4), 0};
    return {(r % 8) * 4 + (k % 8) / 2, r / 8 + 2 * (k / 8), k % 2};
}
frag_pos b_pos(int kind, int k, int n) {
    if (kind == VW_EMU_MMA_TF32_M16N8K8)
        return {n * 4 + k % 4, k / 4, 0};
    return {n * 4 + (k % 8) / 2, k / 8, k % 2};
}
// IEEE binary16 bits as a double (exact): sign, 5-bit exponent (bias 15), 10
// fraction bits; subnormals, infinities and NaN as the format defines them.
double f16_value(uint16_t h) {
    const int e = h >> 10 & 31, f = h & 1023;
    const double v = e == 0    ? ldexp(f, -24)
                     : e == 31 ? (f ? NAN : INFINITY)
                               : ldexp(1024 + f, e - 25);
    return h & 0x8000 ? -v : v;
}

// The operand value of a register (half): TF32 keeps the top 19 bits, BF16 is
// the top half of an FP32, F16 a binary16. Exact in double, and so is any
// product of two.
double operand(int kind, uint32_t w, int half) {
    if (kind == VW_EMU_MMA_F16_M16N8K16)
        return f16_value((uint16_t)(half ? w >> 16 : w & 0xffffu));
    const uint32_t u = kind == VW_EMU_MMA_TF32_M16N8K8 ? w & 0xffffe000u
                       : half                          ? w & 0xffff0000u
                                                       : w << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// The sum of an MMA's k products and C as Fasi et al. (2021) model the tensor
// cores' FP32 accumulation: every addend truncated toward zero to 24 bits
// below the largest one's leading bit, the exact sum of those, truncated to
// FP32. Pessimistic for newer GPUs (they may keep more bits); for checking
// that a kernel's tolerances hold where the hardware is less exact than
// round-to-nearest.
float truncated_sum(const double *x, int n) {
    int emax = INT32_MIN;
    for (int i = 0; i < n; i++) {
        int e;
        if (x[i] != 0.0 && (frexp(x[i], &e), e > emax))
            emax = e;
    }
    if (emax == INT32_MIN)
        return 0.0f; // every addend zero
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += ldexp(trunc(ldexp(x[i], 24 - emax)), emax - 24); // exact: few bits
    float f = (float)sum;
    if (fabs((double)f) > fabs(sum)) // rounded away from zero: step back one ulp
        f = nextafterf(f, 0.0f);
    return f;
}

} // namespace

void vw_emu_mma(int kind, float d[4], const uint32_t a[4], const uint32_t b[2]) {
    const int me = E.cur, p = E.parity[me], base = me & ~31;
    if (kind != VW_EMU_MMA_TF32_M16N8K8 && kind != VW_EMU_MMA_BF16_M16N8K16 &&
        kind != VW_EMU_MMA_F16_M16N8K16)
        die("mma.sync: unknown kind");
    if (base + 32 > E.n)
        die("mma.sync in a warp of fewer than 32 threads");
    E.parity[me] ^= 1;
    mma_slot &mine = E.mxch[p][me];
    mine.kind = kind, mine.seq = E.mma_seq[me]++;
    memcpy(mine.a, a, sizeof mine.a);
    memcpy(mine.b, b, sizeof mine.b);
    wait(WAIT_WARP); // .aligned: all 32 lanes deposit before any reads
    const mma_slot *s = &E.mxch[p][base];
    for (int l = 0; l < 32; l++)
        if (s[l].kind != kind || s[l].seq != mine.seq)
            die("mma.sync: the lanes of a warp are at different mma instructions");
    const int g = (me & 31) >> 2, t = me & 3, K = kind == VW_EMU_MMA_TF32_M16N8K8 ? 8 : 16;
    for (int i = 0; i < 4; i++) {
        const int r = g + 8 * (i >> 1), n = 2 * t + (i & 1);
        double x[17]; // the k products, then C
        for (int k = 0; k < K; k++) {
            const frag_pos pa = a_pos(kind, r, k), pb = b_pos(kind, k, n);
            x[k] = operand(kind, s[pa.lane].a[pa.reg], pa.half) *
                   operand(kind, s[pb.lane].b[pb.reg], pb.half);
        }
        x[K] = d[i];
        if (E.mma_truncate) {
            d[i] = truncated_sum(x, K + 1);
            continue;
        }
        double acc = 0.0;
        for (int k = 0; k <= K; k++)
            acc += x[k];
        d[i] = (float)acc;
    }
}

void vw_emu_ldmatrix(int n, int trans, uint32_t *r, const void *row) {
    const int me = E.cur, p = E.parity[me], base = me & ~31, w = me / 32;
    if (n != 1 && n != 2 && n != 4)
        die("ldmatrix: .x1, .x2 or .x4");
    if (base + 32 > E.n)
        die("ldmatrix in a warp of fewer than 32 threads");
    const int kind = LDSM_KIND + (n >> 1) + (trans ? 4 : 0);
    E.parity[me] ^= 1;
    mma_slot &mine = E.mxch[p][me];
    mine.kind = kind, mine.seq = E.mma_seq[me]++, mine.addr = row;
    wait(WAIT_WARP); // .aligned: every lane's address before any load
    mma_slot *s = &E.mxch[p][base];
    if (E.ldsm_done[p][w] != mine.seq + 1) { // the first lane back loads for all 32
        for (int l = 0; l < 32; l++)
            if (s[l].kind != kind || s[l].seq != mine.seq)
                die("ldmatrix: the lanes of a warp are at different instructions");
        for (int l = 0; l < 8 * n; l++)
            if (!s[l].addr || (uintptr_t)s[l].addr % 16)
                die("ldmatrix: a row address is not 16-byte aligned");
        for (int l = 0; l < 32; l++) {
            const int g = l >> 2, t = l & 3;
            for (int i = 0; i < n; i++) {
                const unsigned char *m = nullptr;
                uint16_t lo, hi;
                if (!trans) { // row g, 16-bit columns 2t, 2t + 1
                    m = (const unsigned char *)s[8 * i + g].addr + 4 * t;
                    memcpy(&lo, m, 2), memcpy(&hi, m + 2, 2);
                } else { // rows 2t, 2t + 1, column g
                    memcpy(&lo, (const unsigned char *)s[8 * i + 2 * t].addr + 2 * g, 2);
                    memcpy(&hi, (const unsigned char *)s[8 * i + 2 * t + 1].addr + 2 * g, 2);
                }
                s[l].out[i] = (uint32_t)lo | (uint32_t)hi << 16;
            }
        }
        E.ldsm_done[p][w] = mine.seq + 1;
    }
    memcpy(r, mine.out, (size_t)n * sizeof *r);
}

void vw_emu_cp_async(void *dst, const void *src, int cp_bytes, int src_bytes, int cg) {
    if (cg ? cp_bytes != 16 : cp_bytes != 4 && cp_bytes != 8 && cp_bytes != 16)
        die("cp.async: .ca copies 4, 8 or 16 bytes, .cg 16");
    if (src_bytes < 0 || src_bytes > cp_bytes)
        die("cp.async: src-size outside 0 .. cp-size");
    if (!dst || (uintptr_t)dst % cp_bytes || (src_bytes && (!src || (uintptr_t)src % cp_bytes)))
        die("cp.async: an address not aligned to the copy size");
    cp_pending c = {(unsigned char *)dst, {}, cp_bytes, -1};
    if (src_bytes)
        memcpy(c.data, src, (size_t)src_bytes); // the rest stays zero (zero-fill)
    memset(dst, 0xff, (size_t)cp_bytes);        // NaN until the covering wait
    E.cpq[E.cur].push_back(c);
}

void vw_emu_cp_async_commit(void) {
    const long g = E.cp_groups[E.cur]++; // an empty group counts too, as in the PTX ISA
    for (cp_pending &c : E.cpq[E.cur])
        if (c.group < 0)
            c.group = g;
}

void vw_emu_cp_async_wait(int n) {
    if (n < 0) {
        vw_emu_cp_async_commit();
        n = 0;
    }
    std::vector<cp_pending> &q = E.cpq[E.cur];
    const long done_below = E.cp_groups[E.cur] - n; // groups [0, done_below) complete
    size_t keep = 0;
    for (size_t i = 0; i < q.size(); i++) {
        if (q[i].group >= 0 && q[i].group < done_below)
            memcpy(q[i].dst, q[i].data, (size_t)q[i].bytes);
        else
            q[keep++] = q[i];
    }
    q.resize(keep);
}

uint3 vw_emu_thread_idx(void) {
    const unsigned i = (unsigned)E.cur, bx = E.block.x, by = E.block.y;
    return uint3{i % bx, i / bx % by, i / (bx * by)};
}
uint3 vw_emu_block_idx(void) {
    return E.bidx;
}
dim3 vw_emu_block_dim(void) {
    return E.block;
}
dim3 vw_emu_grid_dim(void) {
    return E.grid;
}
void __syncthreads(void) {
    wait(WAIT_BLOCK);
}
void __syncwarp(unsigned) {
    wait(WAIT_WARP);
}
float __shfl_xor_sync(unsigned, float v, int m) {
    return shuffle(v, (E.cur & 31) ^ m);
}
double __shfl_xor_sync(unsigned, double v, int m) {
    return shuffle(v, (E.cur & 31) ^ m);
}
float __shfl_sync(unsigned, float v, int src) {
    return shuffle(v, src);
}
double __shfl_sync(unsigned, double v, int src) {
    return shuffle(v, src);
}
void *vw_emu_dyn_smem(void) {
    return E.dyn.data();
}

void vw_emu_run_grid(const void *fn, dim3 grid, dim3 block, size_t smem, void (*body)(void *),
                     void *ctx) {
    E.grid = grid, E.block = block, E.body = body, E.arg = ctx;
    E.n = (int)(block.x * block.y * block.z);
    E.calls.kernels += !E.replaying;
    if (E.n < 1 || E.n > 1024 || smem > 232448)
        die("bad launch configuration");
    if (smem > 48 * 1024) {
        auto o = E.optin.find(fn);
        if (o == E.optin.end() || (size_t)o->second < smem) {
            fprintf(stderr,
                    "cuda emulator: a launch with %zu bytes of dynamic shared memory, the kernel "
                    "opted into %d (cudaFuncSetAttribute)\n",
                    smem, o == E.optin.end() ? 48 * 1024 : o->second);
            abort();
        }
    }
    if ((int)E.ctx.size() < E.n) {
        E.ctx.resize(E.n), E.sp.resize(E.n), E.state.resize(E.n), E.parity.resize(E.n);
        E.stacks.resize(E.n, nullptr), E.xch[0].resize(E.n), E.xch[1].resize(E.n);
        E.mxch[0].resize(E.n), E.mxch[1].resize(E.n), E.mma_seq.resize(E.n);
        E.ldsm_done[0].resize((E.n + 31) / 32), E.ldsm_done[1].resize((E.n + 31) / 32);
        E.cpq.resize(E.n), E.cp_groups.resize(E.n);
    }
    E.dyn.assign(smem ? smem : 1, 0xff);
    const char *mm = getenv("VW_CUDA_EMU_MMA");
    E.mma_truncate = mm && !strcmp(mm, "truncate");
    // Block 0 runs on fibers. A launch whose block 0 never reached a barrier or
    // shuffle runs its other blocks as plain calls, thread after thread (1000x
    // faster for elementwise kernels); a barrier there is reported, not missed.
    E.plain = false, E.saw_barrier = false;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                E.bidx = uint3{x, y, z};
                if (!E.plain) {
                    run_block();
                    E.plain = !E.saw_barrier;
                    continue;
                }
                memset(E.dyn.data(), 0xff, E.dyn.size());
                for (E.cur = 0; E.cur < E.n; E.cur++) {
                    thread_start(E.cur);
                    body(ctx);
                    thread_exit_checks();
                }
            }
    E.plain = false;
}

// ---- CUDA runtime subset --------------------------------------------------

extern "C" void vw_cuda_emu_calls_read(vw_cuda_emu_calls *c) {
    *c = E.calls;
}
vw_cuda_emu_calls *vw_emu_calls(void) {
    return &E.calls;
}

// ---- graphs: stream capture and replay -------------------------------------

bool vw_emu_capturing(void) {
    return E.capture != nullptr;
}
void vw_emu_capture(std::function<void()> node) {
    E.calls.captured++;
    E.capture->nodes.push_back(std::move(node));
}
bool vw_emu_capture_breaks(void) {
    if (!E.capture)
        return false;
    E.capture->invalid = true;
    return true;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t, enum cudaStreamCaptureMode) {
    if (E.capture)
        return cudaErrorIllegalState;
    E.capture = new (std::nothrow) CUgraph_st;
    return E.capture ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *g) {
    if (!E.capture)
        return cudaErrorIllegalState;
    CUgraph_st *c = E.capture;
    E.capture = nullptr;
    if (c->invalid) {
        delete c;
        *g = nullptr;
        return cudaErrorStreamCaptureInvalidated;
    }
    *g = c;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, enum cudaStreamCaptureStatus *s) {
    *s = E.capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n) {
    if (nodes)
        return cudaErrorNotSupported; // the count only
    *n = g->nodes.size();
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long) {
    *e = new (std::nothrow) CUgraphExec_st{g->nodes};
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    E.calls.graph_launches++;
    E.replaying = true;
    for (auto &node : e->nodes)
        node();
    E.replaying = false;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    delete e;
    return cudaSuccess;
}

static char emu_stream_tag;

cudaError_t cudaMalloc(void **p, size_t n) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    const size_t sz = (n + 255) / 256 * 256;
    *p = aligned_alloc(256, sz ? sz : 256);
    if (!*p)
        return cudaErrorMemoryAllocation;
    memset(*p, 0xff, sz); // fresh device memory reads as NaN
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
    *p = malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *p) {
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    E.calls.copies++;
    memcpy(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind, cudaStream_t) {
    E.calls.copies += !E.capture;
    if (E.capture) // a copy node: the source is read at each replay
        vw_emu_capture([d, s, n]() { memcpy(d, s, n); });
    else
        memcpy(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *d, int v, size_t n) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    E.calls.copies++;
    memset(d, v, n);
    return cudaSuccess;
}
// Fake devices for the device-selection paths (worker/service/device.c):
// VW_CUDA_EMU_DEVICES=N devices (default 1; "0" exercises the no-GPU paths),
// each VW_CUDA_EMU_MEM_MB of memory (default 81920), all of it free.
static size_t emu_mem_bytes(void) {
    const char *e = getenv("VW_CUDA_EMU_MEM_MB");
    return (e ? (size_t)strtoull(e, nullptr, 10) : (size_t)81920) << 20;
}
static thread_local int emu_current_device;
cudaError_t cudaGetDeviceCount(int *n) {
    const char *e = getenv("VW_CUDA_EMU_DEVICES");
    *n = e ? atoi(e) : 1;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
    int n = 0;
    cudaGetDeviceCount(&n);
    if (d < 0 || d >= n)
        return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "vela CPU emulator");
    p->major = 9, p->minor = 0;
    p->totalGlobalMem = emu_mem_bytes();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) {
    int n = 0;
    cudaGetDeviceCount(&n);
    if (d < 0 || d >= n)
        return cudaErrorInvalidDevice;
    emu_current_device = d;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
    E.calls.attrs++;
    *d = emu_current_device;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b) {
    *free_b = *total_b = emu_mem_bytes();
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int) {
    E.calls.attrs++;
    *v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? 232448 : 0; // sm_90
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *fn, enum cudaFuncAttribute a, int v) {
    E.calls.attrs++;
    if (a == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (v < 0 || v > 232448)
            return cudaErrorInvalidValue;
        E.optin[fn] = v;
    }
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = (cudaStream_t)(void *)&emu_stream_tag;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) {
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    E.calls.syncs++;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
    if (vw_emu_capture_breaks())
        return cudaErrorStreamCaptureUnsupported;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}
const char *cudaGetErrorName(cudaError_t e) {
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}
const char *cudaGetErrorString(cudaError_t e) {
    return e == cudaSuccess ? "no error" : "error in the CPU emulator";
}
