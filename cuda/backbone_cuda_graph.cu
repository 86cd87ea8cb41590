// backbone_cuda_graph.cu — the CUDA executor's forward as CUDA graphs (see
// backbone_cuda.h "no_graphs", docs/cuda.md "Launches"). A forward is captured
// from the executor's stream (thread-local mode: other threads' CUDA calls are
// not affected) into a graph — the metadata uploads from the pinned mirror, the
// kernels, cuBLAS's GEMMs and the gather — instantiated, and launched as one.
// Everything a node reads is at a fixed address (the arena, the pinned and
// device metadata) and every launch's grid and copy's size depends only on
// the plan's counts, so a later forward of the same counts replays the
// instance as it is: plan_fill has rewritten the pinned metadata by then (the
// forward starts by waiting for the stream), and the copies read it at replay.
#include <string.h>

#include "backbone_cuda_impl.cuh"

namespace {

bool same_shape(const cu_plan &a, const cu_plan &b) {
    return a.rows == b.rows && a.n_trees == b.n_trees && a.n_segs == b.n_segs &&
           a.n_out == b.n_out && a.n_items == b.n_items && a.n_split == b.n_split &&
           a.n_chunks == b.n_chunks;
}

// Captures enqueue(m, p) into a new instance. VW_OK with *exec NULL: the
// runtime refused the capture (graphs then go off); an error of enqueue itself
// is returned as it is.
vw_status capture(const cu_model *m, const cu_plan *p, cu_enqueue_fn enqueue, cudaGraphExec_t *exec,
                  size_t *nodes, vw_err *err) {
    *exec = nullptr, *nodes = 0;
    if (cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return VW_OK;
    }
    vw_status st = enqueue(m, p, err);
    cudaGraph_t graph = nullptr;
    const cudaError_t ce = cudaStreamEndCapture(m->stream, &graph); // always: frees the stream
    if (st != VW_OK || ce != cudaSuccess || !graph) {
        if (graph)
            cudaGraphDestroy(graph);
        cudaGetLastError();
        return st; // VW_OK: the runtime refused (*exec stays NULL)
    }
    if (cudaGraphGetNodes(graph, nullptr, nodes) != cudaSuccess ||
        cudaGraphInstantiate(exec, graph, 0) != cudaSuccess) {
        *exec = nullptr;
        cudaGetLastError();
    }
    cudaGraphDestroy(graph);
    return VW_OK;
}

} // namespace

vw_status vw_cu_graph_forward(const cu_model *m, cu_graphs *g, const cu_plan *p,
                              cu_enqueue_fn enqueue, vw_err *err) {
    g->last = vw_cuda_launches{};
    if (g->off)
        return enqueue(m, p, err);
    cu_graph_slot *hit = nullptr, *lru = &g->slot[0];
    for (cu_graph_slot &s : g->slot) {
        if (s.exec && same_shape(s.shape, *p))
            hit = &s;
        if (!s.exec || (lru->exec && s.used < lru->used))
            lru = &s;
    }
    int how = 2;
    if (!hit) {
        cudaGraphExec_t exec;
        size_t nodes;
        vw_status st = capture(m, p, enqueue, &exec, &nodes, err);
        if (st != VW_OK)
            return st;
        if (!exec) { // the runtime would not capture this forward: launch it directly
            g->off = 1;
            return enqueue(m, p, err);
        }
        if (lru->exec)
            cudaGraphExecDestroy(lru->exec);
        *lru = cu_graph_slot{*p, exec, nodes, 0};
        hit = lru, how = 1;
    }
    hit->used = ++g->tick;
    vw_status st = VW_CUDA_TRY(err, cudaGraphLaunch(hit->exec, m->stream));
    if (st == VW_OK)
        g->last = vw_cuda_launches{how, hit->nodes};
    return st;
}

void vw_cu_graphs_free(cu_graphs *g) {
    if (!g)
        return;
    for (cu_graph_slot &s : g->slot)
        if (s.exec)
            cudaGraphExecDestroy(s.exec);
    free(g);
}
