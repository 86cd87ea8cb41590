#!/usr/bin/env python3
"""ref_bf16_drift.py — how far the reference itself moves in BF16, on the tiny goldens.

The CUDA executor's serving bar (tests/test_cuda_heads.c) compares its BF16
probabilities with the CPU FP32 engine. This recipe measures the same quantity
for the reference runtime's own BF16 path, so a drift seen on the tiny random
bundle can be read against what the reference does on the same cases:

  - fp32: tools/vela_ref with the transformers backbone in FP32 (the goldens);
  - bf16: the same pipeline with the backbone cast to torch.bfloat16, as the
    reference serves (weights and activations BF16; heads stay FP32, the hidden
    rows upcast), so the only change is the backbone's precision.

Every answered tiny case of fixtures/answers/cases.jsonl (the set
test_cuda_heads walks) is scored both ways and the envelopes are walked
together exactly as the C test walks them: the worst |diff| over the keys
"probability", "probabilities", "confidence", "abstain_probability", where it
was seen, and the number of decisions that differ (strings, booleans, keys,
list lengths, spans found on one side only: span lists are matched by start,
end and label; other numbers are not compared).

Cua-S1's contract (docs/spec/backbone.md §6.3, S1-CU) bounds a native BF16
runtime by 2 x (BF16-reference vs FP32-reference difference) + 0.01; the
printed `s1cu_bound` is that figure for these cases.

Run: .venv/bin/python tools/ref_bf16_drift.py [--max-tokens N] [--json OUT]
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from pathlib import Path

import torch

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))

from vela_ref.model import Model  # noqa: E402
from vela_ref.pipeline import Reference  # noqa: E402

PROB_KEYS = {"probability", "probabilities", "confidence", "abstain_probability"}


def is_span_list(v: list) -> bool:
    return bool(v) and isinstance(v[0], dict) and {"start", "end", "label"} <= v[0].keys()


def span_key(s: dict) -> tuple:
    return (s["start"], s["end"], s["label"])


class Walk:
    def __init__(self) -> None:
        self.worst = 0.0
        self.where = "-"
        self.probs = 0
        self.flips: list[str] = []

    def compare_spans(self, a: list, b: list, path: str) -> None:
        """As test_cuda_heads: spans matched by (start, end, label) in document order; a
        span of one list only is one differing decision."""
        used = [False] * len(b)
        start = 0
        for i, x in enumerate(a):
            j = start
            while j < len(b) and (used[j] or span_key(b[j]) != span_key(x)):
                j += 1
            if j < len(b):
                used[j] = True
                start = j + 1
                self.compare(x, b[j], f"{path}/{i}", False)
            else:
                self.flips.append(f"{path}/{i}: span only in fp32")
        self.flips += [f"{path}/bf16:{j}: span only in bf16" for j in range(len(b)) if not used[j]]

    def compare(self, a, b, path: str, prob: bool) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                self.flips.append(f"{path}: different keys")
                return
            for k in a:
                self.compare(a[k], b[k], f"{path}/{k}", prob or k in PROB_KEYS)
            return
        if isinstance(a, list) and isinstance(b, list):
            if is_span_list(a) or is_span_list(b):
                self.compare_spans(a, b, path)
                return
            if len(a) != len(b):
                self.flips.append(f"{path}: different lengths")
                return
            for i, (x, y) in enumerate(zip(a, b)):
                self.compare(x, y, f"{path}/{i}", prob)
            return
        numeric = isinstance(a, (int, float)) and not isinstance(a, bool)
        if numeric and isinstance(b, (int, float)) and not isinstance(b, bool):
            if not prob:  # as test_cuda_heads: other numbers are not decisions
                return
            self.probs += 1
            d = abs(float(a) - float(b))
            if d > self.worst:
                self.worst, self.where = d, path
            return
        if a != b:
            self.flips.append(f"{path}: differs")


def body(row: dict) -> bytes:
    return row["body"].encode() if "body" in row else base64.b64decode(row["body_b64"])


def plan_tokens(ref: Reference, raw: bytes) -> int:
    import make_plan_goldens as mpg

    plan = mpg.plan(ref.bundle, ref.tok, raw)
    return sum(len(t["prefix"]) + sum(len(b["ids"]) for b in t["blocks"])
               for t in plan.get("trees", []))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-tokens", type=int, default=0, help="skip larger plans (0: all)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    bundle = ROOT / "fixtures" / "tiny-vela"
    fp32 = Reference(bundle)
    m16 = Model(bundle)
    m16.backbone = m16.backbone.to(torch.bfloat16)
    bf16 = Reference(bundle, model=m16)
    rows = [json.loads(line) for line in (ROOT / "fixtures/answers/cases.jsonl").open()]
    walk = Walk()
    ran = 0
    t0 = time.perf_counter()
    per_case = []
    for row in rows:
        if row["status"] != 200 or row["bundle"] != "tiny":
            continue
        raw = body(row)
        if args.max_tokens and plan_tokens(fp32, raw) > args.max_tokens:
            continue
        a, b = fp32.score(raw), bf16.score(raw)
        case = Walk()
        case.compare(a, b, row["name"], False)
        walk.compare(a, b, row["name"], False)
        per_case.append({"name": row["name"], "worst": case.worst, "flips": len(case.flips)})
        ran += 1
    out = {
        "cases": ran,
        "probabilities": walk.probs,
        "worst": walk.worst,
        "where": walk.where,
        "differing_decisions": len(walk.flips),
        "first": walk.flips[0] if walk.flips else None,
        "s1cu_bound": 2 * walk.worst + 0.01,
        "per_case": per_case,
        "torch": torch.__version__,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    print(f"reference bf16 vs fp32: {ran} cases, {walk.probs} probabilities, worst |diff| "
          f"{walk.worst:.3g} at {walk.where}; {len(walk.flips)} differing decisions"
          + (f", first: {walk.flips[0]}" if walk.flips else ""))
    print(f"S1-CU bound for a native BF16 runtime on these cases: 2 x {walk.worst:.3g} + 0.01 = "
          f"{out['s1cu_bound']:.3g}")
    for c in per_case:
        print(f"  {c['name']:<40} worst {c['worst']:.3g}  differing {c['flips']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
