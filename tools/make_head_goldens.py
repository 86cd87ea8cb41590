#!/usr/bin/env python3
"""Golden logits for core/answers/heads.c: CandidateHead and SpanHeadV2 in PyTorch FP32.

An independent PyTorch implementation written from docs/spec/answers.md §3 and §5
(not the reference runtime's modules): seeded random weights under the
packages' tensor names at hidden 64 (d 256, 64 label slots), random hidden rows,
and the logits the heads give. Writes

  fixtures/heads/heads_h64.bin   magic b"VWHG", uint32 version, then float32 LE data
  fixtures/heads/heads_h64.json  sidecar: recipe, package versions, tensor table
                                 (name -> shape, offset in floats), cases

Run from the repository root with the pinned venv:
  .venv/bin/python tools/make_head_goldens.py
The output is deterministic (fixed seed, CPU, one thread).
"""

from __future__ import annotations

import json
import math
import platform
import struct
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

SEED = 20260612
HIDDEN, D, SLOTS = 64, 256, 64
MAGIC, VERSION = b"VWHG", 1
OUT = Path("fixtures/heads")
EPS = 1e-5  # PyTorch LayerNorm default


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(x - mean) / sqrt(biased var + eps) * w + b over the last axis (spec §3 step 1)."""
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def gelu(x: torch.Tensor) -> torch.Tensor:
    """Exact (erf) GELU."""
    return F.gelu(x, approximate="none")


def candidate_logits(t: dict[str, torch.Tensor], cands: torch.Tensor, query: torch.Tensor,
                     is_set: bool) -> torch.Tensor:
    """Spec §3: bilinear <K c, Q q>/sqrt(d) + w . GELU(Mc c + b + Mq q) (+ set_bias)."""
    c = layer_norm(cands, t["head.candidate_norm.weight"], t["head.candidate_norm.bias"])
    q = layer_norm(query, t["head.query_norm.weight"], t["head.query_norm.bias"])
    kc = c @ t["head.key.weight"].T                       # (m, d)
    qq = q @ t["head.query.weight"].T                     # (d,)
    bil = (kc * qq).sum(-1) / math.sqrt(D)
    pre = (c @ t["head.candidate_mlp.weight"].T + t["head.candidate_mlp.bias"]
           + q @ t["head.query_mlp.weight"].T)            # (m, d)
    z = (gelu(pre) @ t["head.scalar.weight"].T).squeeze(-1) + bil
    if is_set:
        z = z + t["set_bias"]
    return z


def span_logits(t: dict[str, torch.Tensor], p: str, rows: torch.Tensor, starts: list[int],
                ends: list[int], words: list[int]) -> torch.Tensor:
    """Spec §5: label = mean of its closed row range; words LN + centring; labels LN + slot
    (clamped) + centring when >= 2; bilinear + MLP. The `o` readout is never used."""
    labels = torch.stack([rows[s:e + 1].mean(0) for s, e in zip(starts, ends)])
    x = layer_norm(rows[words], t[p + "wn.weight"], t[p + "wn.bias"])
    x = x - x.mean(0, keepdim=True)
    slots = torch.clamp(torch.arange(len(starts)), max=t[p + "slot.weight"].shape[0] - 1)
    a = layer_norm(labels, t[p + "ln.weight"], t[p + "ln.bias"]) + t[p + "slot.weight"][slots]
    if len(starts) >= 2:
        a = a - a.mean(0, keepdim=True)
    bil = (x @ t[p + "K.weight"].T) @ (a @ t[p + "Q.weight"].T).T / math.sqrt(D)
    mx = x @ t[p + "M.weight"].T + t[p + "M.bias"]        # (W, d)
    na = a @ t[p + "N.weight"].T                          # (L, d)
    mlp = (gelu(mx[:, None, :] + na[None, :, :]) @ t[p + "v.weight"].T).squeeze(-1)
    return bil + mlp


def weights(g: torch.Generator) -> dict[str, torch.Tensor]:
    def randn(*shape: int, std: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float32) * std

    lin = 1.0 / math.sqrt(HIDDEN)
    t = {}
    for name in ("candidate_norm", "query_norm"):
        t[f"head.{name}.weight"] = 1.0 + randn(HIDDEN, std=0.1)
        t[f"head.{name}.bias"] = randn(HIDDEN, std=0.1)
    for name in ("key", "query", "candidate_mlp", "query_mlp"):
        t[f"head.{name}.weight"] = randn(D, HIDDEN, std=lin)
    t["head.candidate_mlp.bias"] = randn(D, std=0.1)
    t["head.scalar.weight"] = randn(1, D, std=1.0 / math.sqrt(D))
    t["set_bias"] = torch.tensor(0.3, dtype=torch.float32)  # 0-d, as the reference fixture
    p = "span2."
    for name in ("wn", "ln"):
        t[f"{p}{name}.weight"] = 1.0 + randn(HIDDEN, std=0.1)
        t[f"{p}{name}.bias"] = randn(HIDDEN, std=0.1)
    t[p + "slot.weight"] = randn(SLOTS, HIDDEN, std=0.5)
    for name in ("K", "Q", "N", "M"):
        t[f"{p}{name}.weight"] = randn(D, HIDDEN, std=lin)
    t[p + "M.bias"] = randn(D, std=0.1)
    t[p + "v.weight"] = randn(1, D, std=1.0 / math.sqrt(D))
    t[p + "o.weight"] = randn(1, HIDDEN, std=lin)  # shipped, never read
    t[p + "o.bias"] = randn(1, std=0.1)
    return t


def main() -> None:
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(SEED)
    t = weights(g)

    def rows(n: int) -> torch.Tensor:
        # Final-normed hidden rows: roughly unit RMS with a per-channel offset.
        return torch.randn(n, HIDDEN, generator=g) * 1.5 + 0.3

    cand_cases, span_cases = [], []
    for name, m, is_set in (("choice4", 4, False), ("set3", 3, True), ("single1", 1, False)):
        c, q = rows(m), rows(1)[0]
        t[f"case.{name}.cands"], t[f"case.{name}.query"] = c, q
        t[f"case.{name}.expected"] = candidate_logits(t, c, q, is_set)
        cand_cases.append({"name": name, "m": m, "is_set": is_set})

    def span_case(name: str, n_rows: int, starts: list[int], ends: list[int], words: list[int]):
        r = rows(n_rows)
        t[f"case.{name}.rows"] = r
        t[f"case.{name}.expected"] = span_logits(t, "span2.", r, starts, ends, words)
        span_cases.append({"name": name, "n_rows": n_rows, "starts": starts, "ends": ends,
                           "words": words})

    span_case("labels3", 48, [2, 7, 8], [6, 7, 15], [20, 22, 25, 27, 30, 33, 40])
    span_case("label1", 30, [3], [9], [12, 15, 18, 21, 27])
    # 70 labels > 64 slots: slots 63.. are shared (index clamped at 63).
    starts70 = [2 * i for i in range(70)]
    span_case("labels70", 160, starts70, [s + 1 for s in starts70], [141, 145, 150, 151, 155, 159])
    span_case("word1", 20, [0, 4], [3, 9], [15])

    names = list(t)
    data, table, offset = [], {}, 0
    for n in names:
        arr = t[n].detach().contiguous().to(torch.float32).numpy()
        table[n] = {"shape": list(arr.shape), "offset": offset}
        data.append(arr.reshape(-1))
        offset += arr.size
    flat = np.concatenate(data).astype("<f4")
    OUT.mkdir(parents=True, exist_ok=True)
    binary = OUT / "heads_h64.bin"
    binary.write_bytes(MAGIC + struct.pack("<I", VERSION) + flat.tobytes())
    sidecar = {
        "format": "vw-head-goldens",
        "version": VERSION,
        "recipe": "tools/make_head_goldens.py",
        "spec": "docs/spec/answers.md §3 CandidateHead, §5 SpanHeadV2 (FP32)",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "numpy": np.__version__},
        "seed": SEED,
        "hidden": HIDDEN, "d": D, "slots": SLOTS,
        "binary": binary.name, "data_offset_bytes": 8, "n_floats": int(flat.size),
        "tensors": table,
        "candidate_cases": cand_cases,
        "span_cases": span_cases,
    }
    (OUT / "heads_h64.json").write_text(json.dumps(sidecar, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {binary} ({binary.stat().st_size} bytes, {flat.size} floats) and "
          f"{OUT / 'heads_h64.json'}: {len(cand_cases)} candidate cases, "
          f"{len(span_cases)} span cases (torch {torch.__version__}, seed {SEED})",
          file=sys.stdout)


if __name__ == "__main__":
    main()
