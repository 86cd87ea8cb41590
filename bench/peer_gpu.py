#!/usr/bin/env python3
"""peer_gpu.py — the GPU peer of bench_gpu: HF transformers' Qwen3.5 text model
of the same shape, with flash-linear-attention's kernels when importable, on the
same token counts and the same GPU.

  peer_gpu.py --config BUNDLE/config.json [--tokens 2845] [--batches 1,8,64]
              [--reps 5] [--warmup 2] [--budget-s 90] [--dtype bf16] [--device cuda]

The backbone configuration is the bundle's `backbone_config` (the one bench_gpu
runs: its random 0.8B bundle, or any other); weights are random (speed only).
Batch B is B sequences of --tokens tokens each (random ids), run as
`model(input_ids, use_cache=False)` under no_grad, timed with CUDA
synchronisation: the mean of --reps runs after --warmup. One JSON line on
stdout:
  {"event":"peer","impl":"transformers+fla"|"transformers",...,
   "batches":[{"batch":B,"tokens":B*T,"ms":...,"tokens_per_s":...},...]}
Exit 0 measured, 77 when torch sees no CUDA device (nothing measured), 1 error.
--device cpu rehearses the script where there is no GPU (scripts/gpu-check's
rehearsal, on the tiny bundle): its times are not a peer's.
--budget-s stops starting new batch sizes past that many seconds.
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--tokens", type=int, default=2845)
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=90.0)
    ap.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--seed", type=int, default=20260601)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    a = ap.parse_args()
    t_start = time.monotonic()

    import torch
    import transformers

    out = {"event": "peer", "torch": torch.__version__, "transformers": transformers.__version__}
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        out["skipped"] = "torch sees no CUDA device"
        print(json.dumps(out))
        return 77
    try:
        import fla  # noqa: F401  (flash-linear-attention: the delta-rule kernels)

        out["fla"] = getattr(fla, "__version__", True)
    except Exception as e:  # ImportError, or triton finding no GPU driver (a CPU rehearsal)
        out["fla"] = False
        out["fla_error"] = f"{type(e).__name__}: {e}"
    out["impl"] = "transformers+fla" if out["fla"] else "transformers"
    try:
        import causal_conv1d  # noqa: F401

        out["causal_conv1d"] = True
    except ImportError:
        out["causal_conv1d"] = False

    with open(a.config) as f:
        cfg = json.load(f)["backbone_config"]
    hf = {k: v for k, v in cfg.items() if k not in ("model_type", "dtype")}
    conf = transformers.Qwen3_5TextConfig(**hf)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with torch.device(dev):
        model = transformers.Qwen3_5TextModel(conf).to(dtype).eval()
    out.update({"device": torch.cuda.get_device_name(0) if cuda else "cpu (rehearsal)",
                "dtype": a.dtype,
                "hidden": conf.hidden_size, "layers": conf.num_hidden_layers,
                "attention": getattr(model.config, "_attn_implementation", None),
                "tokens_per_sequence": a.tokens, "batches": []})
    for b in (int(x) for x in a.batches.split(",") if x):
        if time.monotonic() - t_start > a.budget_s:
            out["budget_exhausted"] = True
            break
        ids = torch.randint(0, conf.vocab_size, (b, a.tokens), device=dev)
        try:
            with torch.no_grad():
                for _ in range(a.warmup):
                    model(input_ids=ids, use_cache=False)
                sync()
                t0 = time.monotonic()
                for _ in range(a.reps):
                    model(input_ids=ids, use_cache=False)
                sync()
                s = (time.monotonic() - t0) / a.reps
        except torch.OutOfMemoryError as e:
            out["batches"].append({"batch": b, "tokens": b * a.tokens, "error": "out of memory"})
            print(f"peer_gpu: batch {b}: {e}", file=sys.stderr)
            break
        out["batches"].append({"batch": b, "tokens": b * a.tokens, "ms": round(s * 1e3, 3),
                               "tokens_per_s": round(b * a.tokens / s)})
        del ids
        if cuda:
            torch.cuda.empty_cache()
    out["seconds"] = round(time.monotonic() - t_start, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
