/* test_cuda_forward.c — the CUDA executor against the CPU reference backend on
 * the tiny bundle (fixtures/tiny-vela), with the same trees:
 *  - FP32 mode (cuBLAS pedantic and the fixed-order GEMM): every readout row
 *    within 1e-3 of the CPU backend's (max |diff| printed);
 *  - BF16 mode: the worst drift against the CPU is printed; the test fails only
 *    on non-finite rows or a relative RMS error above 0.2 (a broken layout gives
 *    O(1); the CPU emulator measures 0.05 here); the acceptance criterion for serving is on head
 * outputs, not on hidden rows: probabilities within 0.02 of the CPU FP32 path
 * (docs/spec/backbone.md §6.3, §6.4), checked once the heads consume GPU rows;
 *  - tree batching: with batch_invariant, a batch of trees gives each tree's
 *    rows bit for bit as that tree run alone; the same comparison is printed
 *    (not asserted) for cuBLAS FP32 and BF16, whose GEMMs may pick other
 *    kernels for other shapes (docs/spec/backbone.md §6.2);
 *  - limits: a batch over max_tokens/max_trees is VW_ETRANSIENT and leaves the
 *    executor usable; malformed trees are VW_EINVAL; bad options are refused;
 *  - real widths: the 4B and 9B slices (core/model/random_bundle.h: full
 *    width, a DeltaNet and a full-attention layer; 16 query heads of 256 over
 *    4 KV heads, 32 DeltaNet value heads over 16 key heads), FP32 and BF16X2
 *    against the CPU backend at the same 1e-3 bar, on a short tree.
 * Skipped (cr_skip_test) without a CUDA device or a CUDA build.
 */
#include <criterion/criterion.h>

#ifdef VW_HAVE_CUDA
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backbone_cpu.h"
#include "backbone_cuda.h"
#include "model/bundle.h"
#include "ops_cuda.h"
#include "vw_cuda.h"
#include "vw_test.h"

static vw_bundle *bundle;

static void need_gpu(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
    char *dir = vw_test_path("fixtures/tiny-vela");
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &bundle, &err), VW_OK, "%s", err.msg);
    free(dir);
}

static void done(void) {
    vw_bundle_free(bundle);
    bundle = NULL;
}

/* The trees: prefix lengths across chunk (64) and conv (K-1 = 3) edges, blocks
 * of 1..70 tokens, readouts anywhere, a tree without blocks. */
enum { N_TREES = 4, MAX_BLOCKS = 3 };
typedef struct fixture {
    vw_tree trees[N_TREES];
    vw_block blocks[N_TREES][MAX_BLOCKS];
    int32_t *ids; /* all token ids, owned */
} fixture;

static const size_t pre_len[N_TREES] = {150, 1, 64, 2};
static const size_t blk_len[N_TREES][MAX_BLOCKS] = {{1, 40, 70}, {5, 2, 0}, {0}, {3, 0, 0}};
static const int32_t ro_pre[N_TREES][4] = {{0, 63, 64, 149}, {0}, {63}, {1, 0}};
static const size_t n_ro_pre[N_TREES] = {4, 1, 1, 2};
static const int32_t ro_blk[3][3] = {{0, 39, 20}, {69, 64, 0}, {4, 1, 2}};

static void fixture_make(fixture *f, int32_t vocab) {
    size_t total = 0;
    for (int t = 0; t < N_TREES; t++) {
        total += pre_len[t];
        for (int b = 0; b < MAX_BLOCKS; b++)
            total += blk_len[t][b];
    }
    f->ids = malloc(total * sizeof *f->ids);
    cr_assert(f->ids);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < total; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        f->ids[i] = (int32_t)((s >> 33) % (uint64_t)vocab);
    }
    int32_t *p = f->ids;
    for (int t = 0; t < N_TREES; t++) {
        vw_tree *tr = &f->trees[t];
        *tr = (vw_tree){.prefix = p,
                        .n_prefix = pre_len[t],
                        .prefix_readouts = ro_pre[t],
                        .n_prefix_readouts = n_ro_pre[t],
                        .blocks = f->blocks[t]};
        p += pre_len[t];
        for (int b = 0; b < MAX_BLOCKS && blk_len[t][b]; b++) {
            const size_t n = blk_len[t][b];
            /* readouts valid for the block's length: the fixed lists, clamped */
            const int32_t *ro = n >= 70   ? ro_blk[1]
                                : n >= 40 ? ro_blk[0]
                                : n >= 5  ? ro_blk[2]
                                          : ro_pre[1];
            f->blocks[t][b] = (vw_block){.ids = p, .n_ids = n, .readouts = ro, .n_readouts = 3};
            if (n < 5)
                f->blocks[t][b].n_readouts = 1;
            p += n;
            tr->n_blocks++;
        }
    }
}

static float *run(vw_executor *ex, const vw_tree *trees, size_t n) {
    size_t rows = vw_trees_readout_count(trees, n);
    float *out = malloc(rows * ex->hidden * sizeof *out);
    cr_assert(out);
    vw_err err = {0};
    vw_status st = vw_executor_forward(ex, trees, n, out, &err);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), err.msg, err.where);
    return out;
}

static vw_executor *cuda_exec(vw_cuda_precision prec, int invariant, size_t max_tokens) {
    vw_cuda_opts o = {
        .max_tokens = max_tokens, .max_trees = 8, .precision = prec, .batch_invariant = invariant};
    vw_executor *ex = NULL;
    vw_err err = {0};
    vw_status st = vw_backbone_cuda_new(bundle, &o, &ex, &err);
    cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), err.msg, err.where);
    return ex;
}

typedef struct drift {
    double max_abs, rel_rms;
    size_t nonfinite;
} drift;

static drift compare(const float *got, const float *ref, size_t n) {
    drift d = {0, 0, 0};
    double se = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) {
            d.nonfinite++;
            continue;
        }
        double e = fabs((double)got[i] - ref[i]);
        d.max_abs = e > d.max_abs ? e : d.max_abs;
        se += e * e, sr += (double)ref[i] * ref[i];
    }
    d.rel_rms = sr > 0 ? sqrt(se / sr) : 0;
    return d;
}

Test(cuda_forward, fp32_matches_cpu, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *cpu = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_backbone_cpu_new(bundle, &cpu, &err), VW_OK, "%s", err.msg);
    const size_t n = vw_trees_readout_count(f.trees, N_TREES) * cpu->hidden;
    float *ref = run(cpu, f.trees, N_TREES);
    for (int inv = 0; inv <= 1; inv++) {
        vw_executor *gpu = cuda_exec(VW_CUDA_FP32, inv, 1024);
        float *got = run(gpu, f.trees, N_TREES);
        drift d = compare(got, ref, n);
        fprintf(stderr, "fp32 (%s GEMM) vs CPU: %zu values, max|diff| %.3g, rel RMS %.3g\n",
                inv ? "fixed-order" : "cuBLAS", n, d.max_abs, d.rel_rms);
        cr_expect_eq(d.nonfinite, 0, "non-finite rows");
        cr_expect(d.max_abs <= 1e-3, "fp32 %s: max |diff| %.3g > 1e-3", inv ? "fixed" : "cublas",
                  d.max_abs);
        free(got);
        vw_executor_free(gpu);
    }
    free(ref);
    vw_executor_free(cpu);
    free(f.ids);
}

/* The tiny fixture's trees on CUDA at `prec` (cuBLAS) against the CPU backend;
 * the drift is printed under `label`. */
static drift vs_cpu(vw_cuda_precision prec, const char *label) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *cpu = NULL, *gpu = cuda_exec(prec, 0, 1024);
    vw_err err = {0};
    cr_assert_eq(vw_backbone_cpu_new(bundle, &cpu, &err), VW_OK, "%s", err.msg);
    const size_t n = vw_trees_readout_count(f.trees, N_TREES) * cpu->hidden;
    float *ref = run(cpu, f.trees, N_TREES), *got = run(gpu, f.trees, N_TREES);
    drift d = compare(got, ref, n);
    fprintf(stderr, "%s vs CPU fp32: %zu values, worst |diff| %.3g, rel RMS %.3g\n", label, n,
            d.max_abs, d.rel_rms);
    free(ref), free(got);
    vw_executor_free(cpu);
    vw_executor_free(gpu);
    free(f.ids);
    return d;
}

Test(cuda_forward, bf16_drift, .init = need_gpu, .fini = done) {
    drift d = vs_cpu(VW_CUDA_BF16, "bf16");
    cr_expect_eq(d.nonfinite, 0, "non-finite rows");
    cr_expect(d.rel_rms < 0.2, "bf16 relative RMS error %.3g >= 0.2", d.rel_rms);
}

/* BF16X2 (BF16 weights, split GEMM inputs) is held to the FP32 mode's bar. */
Test(cuda_forward, bf16x2_parity, .init = need_gpu, .fini = done) {
    drift d = vs_cpu(VW_CUDA_BF16X2, "bf16x2");
    cr_expect_eq(d.nonfinite, 0, "non-finite rows");
    cr_expect_leq(d.max_abs, 1e-3, "bf16x2 max |diff| %.3g > 1e-3", d.max_abs);
}

/* Split-KV through the executor: attention's items cut into parts of one
 * 64-key tile (vw_cuda_opts.attn_split_tiles; the default rule splits only
 * items longer than these trees' 5 tiles), merged by the combine pass, held to
 * the same bar, and not bit-equal to the unsplit run (the parts ran). */
Test(cuda_forward, bf16x2_split_kv, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *cpu = NULL, *whole = cuda_exec(VW_CUDA_BF16X2, 0, 1024), *split = NULL;
    vw_cuda_opts o = {
        .max_tokens = 1024, .max_trees = 8, .precision = VW_CUDA_BF16X2, .attn_split_tiles = 1};
    vw_err err = {0};
    cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &split, &err), VW_OK, "%s", err.msg);
    cr_assert_eq(vw_backbone_cpu_new(bundle, &cpu, &err), VW_OK, "%s", err.msg);
    const size_t n = vw_trees_readout_count(f.trees, N_TREES) * cpu->hidden;
    float *ref = run(cpu, f.trees, N_TREES), *a = run(whole, f.trees, N_TREES),
          *b = run(split, f.trees, N_TREES);
    drift d = compare(b, ref, n), dw = compare(b, a, n);
    fprintf(stderr,
            "bf16x2 split-KV vs CPU fp32: %zu values, worst |diff| %.3g, rel RMS %.3g; vs "
            "unsplit %.3g\n",
            n, d.max_abs, d.rel_rms, dw.max_abs);
    cr_expect_eq(d.nonfinite, 0, "non-finite rows");
    cr_expect_leq(d.max_abs, 1e-3, "bf16x2 split-KV max |diff| %.3g > 1e-3", d.max_abs);
    cr_expect(memcmp(a, b, n * sizeof *a) != 0, "split-KV repeats the unsplit rows bit for bit");
    free(ref), free(a), free(b);
    vw_executor_free(cpu), vw_executor_free(whole), vw_executor_free(split);
    free(f.ids);
}

/* Runs each tree alone and compares with its rows in the batch run. Returns
 * the largest |diff| (0 when bit-identical). */
static double batch_vs_alone(vw_executor *ex, const fixture *f) {
    float *all = run(ex, f->trees, N_TREES);
    size_t off = 0;
    double worst = 0;
    for (int t = 0; t < N_TREES; t++) {
        const size_t n = vw_trees_readout_count(&f->trees[t], 1) * ex->hidden;
        float *one = run(ex, &f->trees[t], 1);
        if (memcmp(one, all + off, n * sizeof *one)) {
            drift d = compare(one, all + off, n);
            worst = d.max_abs > worst ? d.max_abs : worst;
            if (worst == 0) /* equal values, different bits (-0 vs 0): still count it */
                worst = 1e-30;
        }
        off += n;
        free(one);
    }
    free(all);
    return worst;
}

Test(cuda_forward, tree_batching_bit_exact, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *inv = cuda_exec(VW_CUDA_FP32, 1, 1024);
    double w = batch_vs_alone(inv, &f);
    fprintf(stderr, "batch vs alone, fp32 fixed-order GEMM: max|diff| %.3g\n", w);
    cr_expect(w == 0, "fp32 batch_invariant: batched rows differ from one-at-a-time (%.3g)", w);
    vw_executor_free(inv);
    vw_executor *cub = cuda_exec(VW_CUDA_FP32, 0, 1024), *bf = cuda_exec(VW_CUDA_BF16, 0, 1024);
    fprintf(stderr, "batch vs alone, fp32 cuBLAS (informational): max|diff| %.3g\n",
            batch_vs_alone(cub, &f));
    fprintf(stderr, "batch vs alone, bf16 cuBLAS (informational): max|diff| %.3g\n",
            batch_vs_alone(bf, &f));
    vw_executor_free(cub);
    vw_executor_free(bf);
    free(f.ids);
}

/* The per-class split (bench_gpu's "kernels" line): every class of the
 * tiny backbone (DeltaNet and attention layers) gets time, the classes sum to
 * the total, the rows are those of an unprofiled forward, both wait modes
 * give the same rows, and a non-CUDA executor is refused. */
Test(cuda_forward, profile_split_and_wait_modes, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *ex = cuda_exec(VW_CUDA_BF16X2, 0, 1024);
    vw_err err = {0};
    double ms[VW_CUK_COUNT], total = -1;
    cr_expect_eq(vw_backbone_cuda_profile_read(ex, ms, &total, &err), VW_EINVAL, "nothing yet");
    float *plain = run(ex, f.trees, N_TREES);
    cr_assert_eq(vw_backbone_cuda_profile(ex, 1, &err), VW_OK, "%s", err.msg);
    float *timed = run(ex, f.trees, N_TREES);
    cr_assert_eq(vw_backbone_cuda_profile_read(ex, ms, &total, &err), VW_OK, "%s", err.msg);
    double sum = 0;
    for (int k = 0; k < VW_CUK_COUNT; k++) {
        fprintf(stderr, "profile %s %.3f ms\n", vw_cuda_kclass_name((vw_cuda_kclass)k), ms[k]);
        cr_expect_gt(ms[k], 0, "class %s got no time", vw_cuda_kclass_name((vw_cuda_kclass)k));
        sum += ms[k];
    }
    cr_expect(fabs(sum - total) <= 1e-6 * total, "classes %.6f vs total %.6f", sum, total);
    size_t n = vw_trees_readout_count(f.trees, N_TREES) * ex->hidden;
    cr_expect(!memcmp(plain, timed, n * sizeof *plain), "profiling changed the rows");
    vw_cuda_opts o = {
        .max_tokens = 1024, .max_trees = 8, .precision = VW_CUDA_BF16X2, .spin_wait = 1};
    vw_executor *spin = NULL;
    cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &spin, &err), VW_OK, "%s", err.msg);
    float *spun = run(spin, f.trees, N_TREES);
    cr_expect(!memcmp(plain, spun, n * sizeof *plain), "spin and block waits differ");
    vw_executor *cpu = NULL;
    cr_assert_eq(vw_backbone_cpu_new(bundle, &cpu, &err), VW_OK);
    cr_expect_eq(vw_backbone_cuda_profile(cpu, 1, &err), VW_EINVAL);
    vw_executor_free(cpu);
    vw_executor_free(spin);
    vw_executor_free(ex);
    free(plain);
    free(timed);
    free(spun);
    free(f.ids);
}

#ifdef VW_CUDA_EMU
/* What a forward asks of the driver (the emulator's tally of host calls,
 * ops_cuda.h), per kind. */
static vw_cuda_emu_calls calls_of(vw_executor *ex, const vw_tree *trees, size_t n) {
    vw_cuda_emu_calls a, b;
    vw_cuda_emu_calls_read(&a);
    free(run(ex, trees, n));
    vw_cuda_emu_calls_read(&b);
    return (vw_cuda_emu_calls){b.kernels - a.kernels,
                               b.gemms - a.gemms,
                               b.copies - a.copies,
                               b.attrs - a.attrs,
                               b.events - a.events,
                               b.syncs - a.syncs,
                               b.graph_launches - a.graph_launches,
                               b.captured - a.captured};
}

/* Calls that submit or configure work: launched and captured kernels, GEMMs
 * and copies, opt-in calls, event records, graph launches. */
static size_t host_launch_calls(const vw_cuda_emu_calls *c) {
    return c->kernels + c->gemms + c->copies + c->attrs + c->events + c->graph_launches +
           c->captured;
}

static void print_calls(const char *what, const vw_cuda_emu_calls *c) {
    fprintf(stderr,
            "launches per forward, %s: %zu host launch calls (kernels %zu, GEMMs %zu, copies %zu, "
            "opt-in calls %zu, event records %zu, graph launches %zu, captured %zu; waits %zu)\n",
            what, host_launch_calls(c), c->kernels, c->gemms, c->copies, c->attrs, c->events,
            c->graph_launches, c->captured, c->syncs);
}

/* Batch 1 (a prefix and three blocks), bf16x2 and bf16: launched directly
 * (no_graphs) a forward makes no shared-memory opt-in calls (the executor
 * opts its kernels in once, at creation); with graphs the first forward is
 * captured (the same work, recorded) and launched as one graph, and the same
 * shape again is one graph launch, which vw_backbone_cuda_launches reports
 * with the captured node count. */
Test(cuda_forward, launches_per_forward, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    const vw_tree *one = &f.trees[0];
    const int layers = vw_bundle_backbone_config(bundle)->n_layers;
    for (int p = 0; p < 2; p++) {
        const vw_cuda_precision prec = p ? VW_CUDA_BF16 : VW_CUDA_BF16X2;
        vw_cuda_opts o = {.max_tokens = 1024, .max_trees = 8, .precision = prec, .no_graphs = 1};
        vw_executor *direct = NULL, *graphs = NULL;
        vw_err err = {0};
        cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &direct, &err), VW_OK, "%s", err.msg);
        o.no_graphs = 0;
        cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &graphs, &err), VW_OK, "%s", err.msg);
        char what[128];
        const char *pn = p ? "bf16" : "bf16x2";
        const vw_cuda_emu_calls d = calls_of(direct, one, 1);
        snprintf(what, sizeof what, "%s, batch 1, tiny bundle (%d layers), direct", pn, layers);
        print_calls(what, &d);
        cr_expect_eq(d.attrs, 0, "%s: %zu shared-memory opt-in calls in a forward", what, d.attrs);
        cr_expect_gt(d.kernels, 0, "%s: no kernel launched", what);
        cr_expect_eq(d.captured + d.graph_launches, 0, "%s: a graph", what);
        const vw_cuda_emu_calls c1 = calls_of(graphs, one, 1);
        vw_cuda_launches l1, l2;
        cr_assert_eq(vw_backbone_cuda_launches(graphs, &l1, &err), VW_OK);
        snprintf(what, sizeof what, "%s, batch 1, graph captured (%zu nodes)", pn, l1.nodes);
        print_calls(what, &c1);
        const vw_cuda_emu_calls c2 = calls_of(graphs, one, 1);
        cr_assert_eq(vw_backbone_cuda_launches(graphs, &l2, &err), VW_OK);
        snprintf(what, sizeof what, "%s, batch 1, graph replayed", pn);
        print_calls(what, &c2);
        cr_expect(l1.graph == 1 && l2.graph == 2, "%s: graph %d then %d", pn, l1.graph, l2.graph);
        cr_expect_eq(l1.nodes, c1.captured, "%s: %zu nodes, %zu captured", pn, l1.nodes,
                     c1.captured);
        cr_expect_eq(c1.captured, d.kernels + d.gemms + d.copies - 1,
                     "%s: the graph holds the direct forward's work (less the rows' copy back)",
                     pn);
        cr_expect(c1.kernels + c1.gemms + c1.copies == 1 && c1.graph_launches == 1,
                  "%s: the captured forward launches one graph (and copies its rows back)", pn);
        cr_expect(c2.captured == 0 && c2.graph_launches == 1, "%s: replay", pn);
        cr_expect_leq(host_launch_calls(&c2), 150, "%s: %zu host launch calls", pn,
                      host_launch_calls(&c2));
        vw_executor_free(direct);
        vw_executor_free(graphs);
    }
    free(f.ids);
}
#endif

/* Graphs change no bit: the same trees through a kept graph, a new capture and
 * direct launches give the same rows; with more shapes than VW_CUDA_GRAPHS
 * the least recently used is captured again (a wrong replay of another
 * shape's graph would give other rows). */
Test(cuda_forward, graphs_bit_exact, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_cuda_opts o = {.max_tokens = 1024, .max_trees = 8, .precision = VW_CUDA_BF16X2};
    vw_executor *g = NULL, *d = NULL;
    vw_err err = {0};
    cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &g, &err), VW_OK, "%s", err.msg);
    o.no_graphs = 1;
    cr_assert_eq(vw_backbone_cuda_new(bundle, &o, &d, &err), VW_OK, "%s", err.msg);
    /* shapes: all four trees, then each alone, then all again (5 > 4 kept) */
    const struct {
        size_t first, n;
        int graph; /* expected: 1 captured, 2 replayed */
    } seq[] = {{0, N_TREES, 1}, {0, 1, 1}, {1, 1, 1},       {2, 1, 1}, {0, 1, 2},
               {3, 1, 1},       {0, 1, 2}, {0, N_TREES, 1}, {3, 1, 2}};
    for (size_t i = 0; i < sizeof seq / sizeof *seq; i++) {
        const vw_tree *t = &f.trees[seq[i].first];
        const size_t n = vw_trees_readout_count(t, seq[i].n) * g->hidden;
        float *a = run(g, t, seq[i].n), *b = run(d, t, seq[i].n);
        vw_cuda_launches l;
        cr_assert_eq(vw_backbone_cuda_launches(g, &l, &err), VW_OK);
        cr_expect_eq(l.graph, seq[i].graph, "step %zu: graph %d, want %d", i, l.graph,
                     seq[i].graph);
        cr_expect(!memcmp(a, b, n * sizeof *a), "step %zu: graph and direct rows differ", i);
        free(a), free(b);
    }
    vw_executor_free(g);
    vw_executor_free(d);
    free(f.ids);
}

Test(cuda_forward, limits_and_errors, .init = need_gpu, .fini = done) {
    fixture f;
    fixture_make(&f, vw_bundle_backbone_config(bundle)->vocab);
    vw_executor *ex = cuda_exec(VW_CUDA_FP32, 1, 160); /* tree 0 alone is 261 tokens */
    float *rows = malloc(64 * ex->hidden * sizeof *rows);
    vw_err err = {0};
    cr_expect_eq(vw_executor_forward(ex, f.trees, 1, rows, &err), VW_ETRANSIENT);
    cr_expect_str_eq(err.type, "batch_too_large");
    free(run(ex, &f.trees[1], 3)); /* 77 tokens: still fits and works after the refusal */
    vw_tree many[9];
    for (int i = 0; i < 9; i++)
        many[i] = f.trees[1];
    cr_expect_eq(vw_executor_forward(ex, many, 9, rows, &err), VW_ETRANSIENT, "9 trees > 8");
    vw_tree bad = f.trees[2];
    int32_t bad_ids[1] = {vw_bundle_backbone_config(bundle)->vocab};
    bad.prefix = bad_ids, bad.n_prefix = 1, bad.n_prefix_readouts = 0;
    cr_expect_eq(vw_executor_forward(ex, &bad, 1, rows, &err), VW_EINVAL);
    cr_expect_eq(vw_executor_forward(ex, f.trees, 0, rows, &err), VW_EINVAL);
    vw_executor_free(ex);
    vw_cuda_opts o = {.precision = VW_CUDA_BF16, .batch_invariant = 1};
    vw_executor *no = NULL;
    cr_expect_eq(vw_backbone_cuda_new(bundle, &o, &no, &err), VW_EINVAL);
    cr_expect_null(no);
    free(rows);
    free(f.ids);
}

/* ---- real widths: the 4B and 9B slices --------------------------------------- */

static void need_device(void) {
    if (vw_cuda_device_count(NULL, 0) == 0)
        cr_skip_test("no CUDA device");
}

/* One tree kept short for the CPU emulator: a 66-token prefix (one delta-rule
 * chunk of 64 and the start of the next) and two blocks, readouts at both
 * chunk edges. FP32 and BF16X2 against the CPU backend, 1e-3 as on the tiny
 * bundle; the drift is printed. */
static void slice_vs_cpu(const char *shape) {
    char *dir = vw_test_slice_bundle(shape);
    cr_assert_not_null(dir, "writing the %s package failed", shape);
    vw_err err = {0};
    cr_assert_eq(vw_bundle_open(dir, &bundle, &err), VW_OK, "%s", err.msg);
    const vw_qwen35_config *c = vw_bundle_backbone_config(bundle);
    cr_assert(c->lin_v_heads == 2 * c->lin_k_heads && c->head_dim == 256 && c->n_heads == 16,
              "%s: not the grouped real-width shape", shape);
    int32_t ids[73];
    uint64_t s = 0x243f6a8885a308d3ull;
    for (size_t i = 0; i < 73; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)c->vocab);
    }
    static const int32_t ro_pre[] = {0, 63, 64, 65}, ro_a[] = {0, 4}, ro_b[] = {1};
    vw_block bl[2] = {{ids + 66, 5, ro_a, 2}, {ids + 71, 2, ro_b, 1}};
    vw_tree t = {ids, 66, ro_pre, 4, bl, 2};
    vw_executor *cpu = NULL;
    cr_assert_eq(vw_backbone_cpu_new(bundle, &cpu, &err), VW_OK, "%s", err.msg);
    const size_t n = vw_trees_readout_count(&t, 1) * cpu->hidden;
    float *ref = run(cpu, &t, 1);
    vw_executor_free(cpu);
    static const vw_cuda_precision precs[] = {VW_CUDA_FP32, VW_CUDA_BF16X2};
    for (size_t p = 0; p < 2; p++) {
        vw_cuda_opts o = {.max_tokens = 128, .max_trees = 2, .precision = precs[p]};
        vw_executor *gpu = NULL;
        vw_status st = vw_backbone_cuda_new(bundle, &o, &gpu, &err);
        cr_assert_eq(st, VW_OK, "%s: %s (%s)", vw_status_name(st), err.msg, err.where);
        float *got = run(gpu, &t, 1);
        drift d = compare(got, ref, n);
        fprintf(stderr, "%s %s vs CPU: %zu values, max|diff| %.3g, rel RMS %.3g\n", shape,
                vw_cuda_precision_name(precs[p]), n, d.max_abs, d.rel_rms);
        cr_expect_eq(d.nonfinite, 0, "%s: non-finite rows", shape);
        cr_expect_leq(d.max_abs, 1e-3, "%s %s: max |diff| %.3g > 1e-3", shape,
                      vw_cuda_precision_name(precs[p]), d.max_abs);
        free(got);
        vw_executor_free(gpu);
    }
    free(ref);
    free(dir);
}

Test(cuda_forward, slice_4b_matches_cpu, .init = need_device, .fini = done) {
    slice_vs_cpu("4b-slice");
}

Test(cuda_forward, slice_9b_matches_cpu, .init = need_device, .fini = done) {
    slice_vs_cpu("9b-slice");
}

#else
Test(cuda_forward, built_without_cuda) {
    cr_skip_test("built without CUDA");
}
#endif
