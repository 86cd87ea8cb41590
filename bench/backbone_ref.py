#!/usr/bin/env python3
"""backbone_ref.py — the transformers + torch CPU reference for bench/backbone.sh.

  backbone_ref.py --bundle DIR --tokens N[,N...] --threads T [--reps R] [--seed S]

Loads the bundle's backbone into Qwen3_5TextModel in FP32 (default attention
implementation, torch fallbacks for the delta rule and conv), runs each
N-token random sequence once to warm up and then R times under no_grad, and
prints one JSON line per length like bench_backbone:
  {"impl":"torch","tokens":N,"threads":T,"seconds":best,"tokens_per_s":...,
   "load_s":...,"peak_rss_bytes":...,"linear_gflop":...,"gemm_gflops":...}
linear_gflop counts the decoder layers' nn.Linear weights (2 N x each);
gemm_gflops is torch's rate on the largest projection alone (N x F x H, the
MLP's gate), the best of at least R calls and 3 s of calls after one untimed
call, right after the forward, as bench_backbone measures its own.
"""
import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import load_file


def load(bundle):
    cfg = json.loads((bundle / "config.json").read_text())["backbone_config"]
    hf = {k: v for k, v in cfg.items() if k not in ("model_type", "dtype")}
    conf = transformers.Qwen3_5TextConfig(**hf)
    with torch.device("meta"):
        model = transformers.Qwen3_5TextModel(conf)
    index = bundle / "model.safetensors.index.json"
    shards = sorted(set(json.loads(index.read_text())["weight_map"].values())) \
        if index.exists() else ["model.safetensors"]
    state = {}
    for shard in shards:
        for k, v in load_file(str(bundle / shard)).items():
            if k.startswith("backbone."):
                state[k[len("backbone."):]] = v.to(torch.float32)
    model.load_state_dict(state, strict=True, assign=True)
    model.rotary_emb = transformers.models.qwen3_5.modeling_qwen3_5.Qwen3_5TextRotaryEmbedding(conf)
    return model.eval(), cfg


def proj_floats(model):
    return sum(m.weight.numel() for m in model.layers.modules()
               if isinstance(m, torch.nn.Linear))


def gemm_rate(n, f, h, reps):
    x = torch.rand(n, h) - 0.5
    w = (torch.rand(f, h) - 0.5) * 0.05
    best, r, start = 1e30, -1, time.perf_counter()
    while r < reps or time.perf_counter() - start < 3.0:
        t = time.perf_counter()
        torch.nn.functional.linear(x, w)
        if r >= 0:
            best = min(best, time.perf_counter() - t)
        r += 1
    return 2.0 * n * f * h / best / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--tokens", default="1024")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    t0 = time.perf_counter()
    model, cfg = load(Path(a.bundle))
    load_s = time.perf_counter() - t0
    rng = np.random.default_rng(a.seed)
    for n in [int(x) for x in a.tokens.split(",")]:
        ids = torch.from_numpy(rng.integers(0, cfg["vocab_size"], size=(1, n)))
        best = 1e30
        with torch.no_grad():
            model(input_ids=ids[:, :64], use_cache=False)  # warm-up (allocator, kernels)
            for _ in range(a.reps):
                t = time.perf_counter()
                model(input_ids=ids, use_cache=False)
                best = min(best, time.perf_counter() - t)
            gemm = gemm_rate(n, cfg["intermediate_size"], cfg["hidden_size"], a.reps)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps({"impl": "torch", "tokens": n, "threads": a.threads,
                          "seconds": round(best, 4), "tokens_per_s": round(n / best, 2),
                          "load_s": round(load_s, 3), "peak_rss_bytes": rss,
                          "linear_gflop": round(2.0 * n * proj_floats(model) / 1e9, 2),
                          "gemm_gflops": round(gemm, 2),
                          "torch": torch.__version__,
                          "transformers": transformers.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
