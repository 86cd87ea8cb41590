"""pipeline.py — request bytes -> envelope or rejection, the reference way.

plan: tools/make_plan_goldens.py (an independent Python reference of
admission, render, budget and windows, byte-identical to `vela-worker plan`
on its goldens) with this bundle's config, calibration and tokenizer;
backbone + heads: model.py; answers + envelope: answers.py. Windowed spans
average the windows' FP32 logits per word in float64 (uncovered words -30.0)
before temperature and sigmoid (docs/spec/answers.md §7.1).
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from . import answers as A
from .model import Model

TOOLS = Path(__file__).resolve().parent.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))
import make_plan_goldens as mpg  # noqa: E402

UNCOVERED = -30.0
STAGES = ("plan", "backbone", "heads", "answers", "json")


def dumps(value) -> str:
    """The runtime's serialisation: compact, UTF-8, no NaN, float repr (§8.5)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def block_key(prefix: list[int], ids: list[int]) -> str:
    """SHA-256 (hex) of the int32 LE ids of prefix, -1, block: names one executed block."""
    return hashlib.sha256(np.asarray(list(prefix) + [-1] + list(ids), dtype="<i4")
                          .tobytes()).hexdigest()


def record_rows(recorder: dict, prefix: list[int], block: dict, rows) -> None:
    """Keeps the hidden rows the heads read from one block (its readouts: option ends and
    query, or every label-range row and the word positions), for a replay executor."""
    if block["kind"] != "span":
        idx = list(block["option_ends"]) + [block["query"]]
    else:
        idx = [i for a, b in block["label_ranges"] for i in range(a, b + 1)]
        idx += list(block["word_positions"])
    idx = sorted(set(idx))
    recorder[block_key(prefix, block["ids"])] = (idx, rows[idx].numpy().astype("<f4"))


class Reference:
    """One bundle directory, loaded for scoring."""

    def __init__(self, bundle: Path, model: Model | None = None):
        cfg = json.loads((bundle / "config.json").read_text())
        cal = json.loads((bundle / "calibration.json").read_text())
        layout = cfg.get("span_layout") or {}
        b = mpg.Bundle.__new__(mpg.Bundle)  # the recipe's Bundle, filled from this package
        b.max_length = cfg["max_length"]
        b.rmax = layout.get("hybrid_rmax", 2048)
        b.window = layout.get("window", 1800)
        b.stride = layout.get("stride", 1536)
        b.cal = cal
        b.broad = (bundle / "broad_head.safetensors").exists() and bool(cal.get("broad_head"))
        b.presets = [p for p in ("pii", "halu", "relevance")
                     if isinstance(cal.get(f"{p}_schema"), dict)]
        self.bundle = b
        self.cal = A.Calibration(cal, b.broad)
        self.tok = Tokenizer.from_file(str(bundle / "tokenizer.json"))
        self.model = model or Model(bundle)
        self.timing = dict.fromkeys(STAGES, 0.0)
        self.margins = False  # True: score() fills trace (make_answer_goldens)
        self.trace: list[float] | None = None  # span stability of the last score()
        self.recorder: dict | None = None  # block key -> (readouts, rows): see record_rows

    def _tick(self, stage: str, t0: float) -> float:
        t1 = time.perf_counter()
        self.timing[stage] += t1 - t0
        return t1

    def score(self, body: bytes) -> dict:
        """The envelope (status 200) or {"status", "detail"} for a rejection."""
        self.trace = [] if self.margins else None
        t = time.perf_counter()
        plan = mpg.plan(self.bundle, self.tok, body)
        if plan["status"] != 200:
            self._tick("plan", t)
            return {"status": plan["status"], "detail": plan["detail"]}
        request = mpg.load_body(body)
        parts, _ = mpg.read_state(request["state"])
        t = self._tick("plan", t)
        rows = self._run_trees(plan)
        t = self._tick("backbone", t)
        logits = self._heads(plan, rows)
        t = self._tick("heads", t)
        env = self._envelope(plan, request, dict(parts), logits)
        t = self._tick("answers", t)
        self._last_json = dumps(env)
        self._tick("json", t)
        return env

    def _run_trees(self, plan: dict) -> dict:
        """{(tree, block): rows} for every executed (read) block."""
        out = {}
        for ti, tree in enumerate(plan["trees"]):
            for bi, block in enumerate(tree["blocks"]):
                if block["read"]:
                    out[ti, bi] = self.model.block_rows(tree["prefix"], block["ids"])
                    if self.recorder is not None:
                        record_rows(self.recorder, tree["prefix"], block, out[ti, bi])
        return out

    def _heads(self, plan: dict, rows: dict) -> dict:
        """{qid: float32 logits} (non-span) / {qid: (float64 W x L, word offsets)} (span)."""
        spans = {s["question"]: s for s in plan["spans"]}
        kinds = {q["id"]: q.get("kind") for q in plan["questions"]}
        out, windows = {}, {}
        for (ti, bi), r in rows.items():
            tree = plan["trees"][ti]
            block = tree["blocks"][bi]
            qid = block["question"]
            if block["kind"] != "span":
                z = self.model.candidate_logits(r, block["option_ends"], block["query"],
                                                kinds[qid] == "set")
                out[qid] = z.numpy().astype(np.float32)
                continue
            z = self.model.span_logits(spans[qid]["head"], r, block["label_ranges"],
                                       block["word_positions"]).numpy().astype(np.float32)
            if tree["window"] is None:
                words = [spans[qid]["words"][i] for i in block["word_index"]]
                out[qid] = (z.astype(np.float64), words)
            else:
                windows.setdefault(qid, []).append((block["word_index"], z))
        for qid, wins in windows.items():
            words = spans[qid]["words"]
            n_labels = len(spans[qid]["labels"])
            total = np.zeros((len(words), n_labels), dtype=np.float64)
            count = np.zeros(len(words), dtype=np.int64)
            for index, z in wins:  # window order; float64 sums of the FP32 logits
                for k, w in enumerate(index):
                    total[w] += z[k].astype(np.float64)
                    count[w] += 1
            mean = np.full((len(words), n_labels), UNCOVERED, dtype=np.float64)
            seen = count > 0
            mean[seen] = total[seen] / count[seen][:, None]
            out[qid] = (mean, words)
        return out

    def _legend(self, request: dict, q: dict):
        """Score legend: the level texts (the relevance preset's levels are its descriptions)."""
        raw = request["questions"][q["id"]]
        if isinstance(raw, dict) and raw.get("preset") == "relevance":
            levels = self.cal.raw["relevance_schema"]["levels"].values()
            return [v if isinstance(v, str) else mpg.canonical(v) for v in levels]
        return None

    def _envelope(self, plan: dict, request: dict, texts: dict, logits: dict) -> dict:
        answers, sections = {}, {"spans": {}, "span_heads": {}, "sets": {}, "thresholds": {}}
        spans = {s["question"]: s for s in plan["spans"]}
        for q in plan["questions"]:
            qid = q["id"]
            if q["error"] == "invalid_question":
                answers[qid] = {"type": json.loads(q["type"][2:]), "error": "invalid_question",
                                "message": q["message"], "loc": q["loc"]}
            elif q["error"] is not None:
                answers[qid] = {"type": q["kind"], "error": q["error"]}
            elif q["kind"] == "set":
                views, entry, theta = A.answer_set(self.cal, q, logits[qid])
                if entry is None:
                    answers[qid] = views
                    continue
                answers.update(views)
                sections["sets"][qid] = entry
                sections["thresholds"][qid] = theta
            elif q["kind"] == "span":
                sp = spans[qid]
                z, words = logits[qid]
                view, found, theta, head = A.answer_span(self.cal, q, sp, texts[sp["role"]], z,
                                                          words, self.trace)
                answers[qid] = view
                if found is None:
                    continue
                sections["spans"][qid] = found
                sections["thresholds"][qid] = theta
                if self.bundle.broad:
                    sections["span_heads"][qid] = head
            else:
                answers[qid] = A.answer_candidates(self.cal, q, logits[qid],
                                                   self._legend(request, q))
        env = {"answers": answers, "usage": {"input_tokens": plan["usage"]["input_tokens"],
                                             "output_tokens": 0}}
        for key in ("spans", "span_heads", "sets", "thresholds"):
            if sections[key]:
                env[key] = sections[key]
        return env
