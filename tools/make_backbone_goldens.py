#!/usr/bin/env python3
"""make_backbone_goldens.py — reference hidden states of the tiny bundle's backbone.

Loads fixtures/tiny-vela (tools/make_tiny_bundle.py) into transformers'
Qwen3_5TextModel in FP32 (BF16 weights upcast exactly, A_log F32), eager
attention, torch fallbacks for the gated delta rule and the causal conv (no
FLA / hub kernels), and records the final-normed hidden states
(last_hidden_state) for seeded random token sequences of lengths
1, 2, 63, 64, 65, 127, 300 and 700 (chunk boundaries of the 64-row delta rule
on both sides).

Writes fixtures/backbone/goldens.bin (little-endian):
  magic "VWBBGLD1", u32 version = 1, u32 n_cases, u32 hidden, then per case
  u32 T, T x i32 ids, T x hidden x f32 rows;
and fixtures/backbone/goldens.json (recipe, seed, versions, bundle digests,
lengths). Deterministic; prints what it wrote.
"""
import hashlib
import json
import struct
import sys
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from safetensors.torch import load_file

RECIPE = "tools/make_backbone_goldens.py"
SEED = 1234
LENGTHS = [1, 2, 63, 64, 65, 127, 300, 700]


def load_model(bundle):
    cfg = json.loads((bundle / "config.json").read_text())["backbone_config"]
    hf = {k: v for k, v in cfg.items() if k not in ("model_type", "dtype")}
    conf = transformers.Qwen3_5TextConfig(**hf)
    conf._attn_implementation = "eager"
    model = transformers.Qwen3_5TextModel(conf).to(torch.float32).eval()
    index = bundle / "model.safetensors.index.json"  # else one model.safetensors
    shards = (set(json.loads(index.read_text())["weight_map"].values()) if index.exists()
              else {"model.safetensors"})
    state = {}
    for shard in sorted(shards):
        for k, v in load_file(str(bundle / shard)).items():
            if k.startswith("backbone."):
                state[k[len("backbone."):]] = v.to(torch.float32)
    model.load_state_dict(state, strict=True)
    return model, cfg


def main():
    root = Path(__file__).resolve().parent.parent
    bundle = root / "fixtures" / "tiny-vela"
    out = root / "fixtures" / "backbone"
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model, cfg = load_model(bundle)
    gen = np.random.default_rng(SEED)
    hidden = cfg["hidden_size"]
    blob = bytearray(b"VWBBGLD1" + struct.pack("<III", 1, len(LENGTHS), hidden))
    stats = []
    with torch.no_grad():
        for T in LENGTHS:
            ids = gen.integers(0, cfg["vocab_size"], size=T, dtype=np.int64)
            hs = model(input_ids=torch.from_numpy(ids)[None], use_cache=False).last_hidden_state
            rows = hs[0].to(torch.float32).numpy()
            blob += struct.pack("<I", T) + ids.astype("<i4").tobytes() + rows.astype("<f4").tobytes()
            stats.append({"T": T, "max_abs": float(np.abs(rows).max())})
    (out / "goldens.bin").write_bytes(bytes(blob))
    digests = {}
    for line in (bundle / "SHA256SUMS").read_text().splitlines():
        d, name = line.split(None, 1)
        digests[name.strip()] = d
    side = {
        "recipe": RECIPE, "seed": SEED, "lengths": LENGTHS, "hidden": hidden,
        "reference": "transformers Qwen3_5TextModel, float32, attn_implementation=eager, "
                     "torch_chunk_gated_delta_rule + torch causal conv (no FLA), "
                     "last_hidden_state (final RMSNorm applied)",
        "ids": "numpy default_rng(seed).integers(0, vocab_size) per length, in order",
        "bundle": "fixtures/tiny-vela", "bundle_sha256": digests,
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__,
                     "safetensors": safetensors.__version__, "numpy": np.__version__},
        "stats": stats,
    }
    (out / "goldens.json").write_text(json.dumps(side, indent=2, sort_keys=True) + "\n")
    for name in ("goldens.bin", "goldens.json"):
        data = (out / name).read_bytes()
        print(f"{RECIPE}: wrote fixtures/backbone/{name} {len(data)} B "
              f"sha256 {hashlib.sha256(data).hexdigest()}")
    for s in stats:
        print(f"  T={s['T']:4d} max|h|={s['max_abs']:.4f}")


if __name__ == "__main__":
    main()
