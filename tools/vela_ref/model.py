"""model.py — the bundle's backbone and heads in PyTorch FP32.

Backbone: transformers' Qwen3_5TextModel loaded exactly as
tools/make_backbone_goldens.py loads it (BF16 weights upcast, eager attention,
torch fallbacks). A tree is run the simplest faithful way: for every block,
`prefix + block` as ONE causal sequence (mathematically the tree semantics of
executor.h: the block sees the whole prefix and itself, at positions
n_prefix + j). Heads: the independent torch CandidateHead / SpanHeadV2 of
tools/make_head_goldens.py (docs/spec/answers.md §3, §5).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file

TOOLS = Path(__file__).resolve().parent.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

import make_backbone_goldens  # noqa: E402  (tools/ recipes double as modules)
import make_head_goldens  # noqa: E402


class Model:
    def __init__(self, bundle: Path):
        self.backbone, cfg = make_backbone_goldens.load_model(bundle)
        self.hidden = cfg["hidden_size"]
        index = json.loads((bundle / "model.safetensors.index.json").read_text())
        t = {}
        for shard in sorted(set(index["weight_map"].values())):
            for k, v in load_file(str(bundle / shard)).items():
                if not k.startswith("backbone."):
                    t[k] = v.to(torch.float32)
        broad = bundle / "broad_head.safetensors"
        if broad.exists():
            t.update({k: v.to(torch.float32) for k, v in load_file(str(broad)).items()})
        self.tensors = t

    @torch.no_grad()
    def block_rows(self, prefix: list[int], ids: list[int]) -> torch.Tensor:
        """Final-normed hidden rows of the block tokens, (len(ids), H) FP32."""
        seq = torch.tensor([list(prefix) + list(ids)], dtype=torch.long)
        hs = self.backbone(input_ids=seq, use_cache=False).last_hidden_state[0]
        return hs[len(prefix):].to(torch.float32)

    @torch.no_grad()
    def candidate_logits(self, rows: torch.Tensor, option_ends: list[int], query: int,
                         is_set: bool) -> torch.Tensor:
        return make_head_goldens.candidate_logits(self.tensors, rows[option_ends], rows[query],
                                                  is_set)

    @torch.no_grad()
    def span_logits(self, head: str, rows: torch.Tensor, label_ranges: list[list[int]],
                    word_positions: list[int]) -> torch.Tensor:
        """(W, L) FP32 word x label logits of one span block."""
        prefix = "span_broad." if head == "broad" else "span2."
        if not word_positions:
            return torch.zeros((0, len(label_ranges)), dtype=torch.float32)
        starts = [r[0] for r in label_ranges]
        ends = [r[1] for r in label_ranges]
        return make_head_goldens.span_logits(self.tensors, prefix, rows, starts, ends,
                                             word_positions)
