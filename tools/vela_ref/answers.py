"""answers.py — head logits -> calibrated answers -> the System One envelope.

Written from docs/spec/answers.md §4 (calibration, float64), §6 (span decoding with
its float32 comparisons and means), §7.1 (window aggregation happens in
pipeline.py) and §8 (envelope), plus docs/contract.md for the per-question
error shapes. NumPy supplies the reference's float semantics: float64 softmax /
sigmoid with NumPy's pairwise sums, float32 means, np.interp for the PII
length rule, math.fsum for the Score moments.
"""
from __future__ import annotations

import math
import re

import numpy as np

# §6.1 character classes.
CJK_RANGES = ((0x2E80, 0x2FFF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x3100, 0x31FF),
              (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA000, 0xA4CF), (0xAC00, 0xD7AF),
              (0x8C48, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF))
EDGE = set("[](){}<>\"'") | set("\u300c\u300d\u300e\u300f\u3010\u3011\u300a\u300b\u3008\u3009"
                                 "\u201c\u201d\u2018\u2019\u00ab\u00bb\u2039\u203a")
UNIT_BODY_EXCLUDED = set("])}>\"'\u300c\u300d\u300e\u300f\u201c\u201d")
UNIT_TRAIL = set(".,;:!?")
URL_TRAIL = set(".,;:!?)")
UNIT_JOINERS = set("@._-+")
URL_PREFIX_CI = re.compile(r"https?://|www\.", re.IGNORECASE)  # Python re IGNORECASE (ſ for s)
HALU_DEFAULT = "a claim not supported by the context"


def is_cjk(ch: str) -> bool:
    c = ord(ch)
    return any(lo <= c <= hi for lo, hi in CJK_RANGES)


# --------------------------------------------------------------------------- calibration
def softmax(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    e = np.exp(v - v.max())
    return e / e.sum()


def sigmoid(v) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(v, dtype=np.float64)))


class Calibration:
    """calibration.json as the answer side reads it (§4.1)."""

    def __init__(self, raw: dict, broad: bool, noul_enabled: bool | None = None):
        self.raw = raw
        self.broad = broad
        block = raw.get("noul_calibration") or {}
        self.noul_enabled = bool(block.get("default", False)) if noul_enabled is None else noul_enabled

    def temperature(self, engine_type: str) -> float:
        return float(self.raw["temperature"].get(engine_type, 1.0))

    def span_temperature(self, head: str) -> float:
        if head == "broad":
            return float(self.raw["broad_head"]["temperature"])
        return self.temperature("span")

    def set_threshold(self, key: str, given) -> float:
        if given is not None:
            return float(given)
        th = self.raw["thresholds"]
        return float(th[f"set:{key}"] if f"set:{key}" in th else th["set:*"])

    def pii_length(self, tokens: int) -> float:
        anchors = self.raw["pii_length_rule"]["anchors"]
        xs = [math.log(a["n_tokens"]) for a in anchors]
        ys = [math.log(a["threshold"]) for a in anchors]
        return float(np.exp(np.interp(np.log(max(tokens, 1)), xs, ys)))

    def span_threshold(self, key: str, labels: list[str], tokens: int, head: str):
        """(threshold, rule) before the sparse gate (§4.4, first match wins)."""
        if head == "broad":
            return float(self.raw["broad_head"]["threshold"]), "broad"
        th = self.raw["thresholds"]
        pii_types = set(self.raw.get("pii_types", []))
        if key == "pii" or (labels and set(labels) <= pii_types):
            if "pii_length_rule" in self.raw:
                return self.pii_length(tokens), "pii:length"
            for bucket in self.raw.get("pii_buckets", []):
                if tokens <= bucket["max_tokens"]:
                    return float(bucket["threshold"]), "pii:" + bucket["name"]
        if key in ("halu", "toxic"):
            return float(th[f"span:{key}"]), key
        if f"span:{key}" in th:
            return float(th[f"span:{key}"]), f"span:{key}"
        return float(th["span:*"]), "span:*"

    def sparse_gate(self, probs, words, labels, text, threshold, rule):
        """§4.6: at most K spans at the probe threshold -> t_sparse."""
        gate = self.raw.get("pii_sparse_gate")
        if not gate or gate.get("K", -1) < 0 or threshold >= gate["t_sparse"] or not len(words):
            return threshold, rule
        probe = float(gate.get("probe_threshold", 0.5))
        if len(decode(probs, words, labels, text, probe)) <= gate["K"]:
            return float(gate["t_sparse"]), rule + "+sparse"
        return threshold, rule

    def noul(self, p: float) -> float:
        block = self.raw.get("noul_calibration")
        if not self.noul_enabled or not block:
            return p
        p = min(max(p, 1e-12), 1.0 - 1e-12)
        logit = math.log(p) - math.log1p(-p)
        return 1.0 / (1.0 + math.exp(-(logit / float(block["T"]) + float(block["b"]))))


# --------------------------------------------------------------------------- units and trims
def _url_unit_end(text: str, i: int):
    """§6.4 rule 1 (lowercase prefixes only): the end of a URL unit at i, or None."""
    for prefix in ("https://", "http://", "www."):
        if text.startswith(prefix, i):
            body = i + len(prefix)
            j = body
            while j < len(text) and not (text[j].isspace() or is_cjk(text[j])
                                         or text[j] in UNIT_BODY_EXCLUDED):
                j += 1
            if j == body:
                return None
            while j - 1 > body and text[j - 1] in UNIT_TRAIL:
                j -= 1
            return j
    return None


def vote_units(text: str) -> list[tuple[int, int]]:
    """The `_UNIT` matches of text, left to right (§6.4)."""
    out, i, n = [], 0, len(text)
    while i < n:
        end = _url_unit_end(text, i)
        if end is None:
            j = i
            while j < n and ((text[j].isalnum() and not is_cjk(text[j])) or text[j] in UNIT_JOINERS):
                j += 1
            if j > i:
                end = j
            elif not text[i].isspace():
                end = i + 1
        if end is None:
            i += 1
            continue
        out.append((i, end))
        i = end
    return out


def word_units(text: str, words) -> list[int]:
    """Unit index of each word (by its first non-space char), -1 for none (§6.4)."""
    units = vote_units(text)
    starts = [a for a, _ in units]
    out = []
    for a, b in words:
        f = a
        while f < b and text[f].isspace():
            f += 1
        k = int(np.searchsorted(starts, f, side="right")) - 1
        ok = k >= 0 and f < b and f < len(text) and f < units[k][1]
        out.append(k if ok else -1)
    return out


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """§6.5 step 4."""
    while start < end and (text[start].isspace() or text[start] in EDGE):
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] in EDGE):
        end -= 1
    if not URL_PREFIX_CI.match(text, start):
        return start, end
    for k in range(start, end):
        if is_cjk(text[k]):
            end = k
            break
    while end > start and (text[end - 1] in URL_TRAIL or text[end - 1] in EDGE
                           or text[end - 1].isspace()):
        end -= 1
    return start, end


# --------------------------------------------------------------------------- decoder
def logit(p: float) -> float:
    p = min(max(p, 1e-300), 1.0)
    return math.inf if p >= 1.0 else math.log(p) - math.log1p(-p)


def decode(probs, words, labels, text, threshold) -> list[dict]:
    """§6.5: float64 P (W x L) -> [{start, end, label, probability}] in word order."""
    p32 = np.asarray(probs, dtype=np.float32)
    n = len(words)
    if n == 0:
        return []
    best = [int(np.argmax(p32[w])) for w in range(n)]
    pbest = [p32[w, best[w]] for w in range(n)]
    theta = np.float32(threshold)
    label = [best[w] if pbest[w] > theta else -1 for w in range(n)]
    if all(x < 0 for x in label):
        return []
    unit = word_units(text, words)
    w = 0
    while w < n:  # runs of equal unit ids
        stop = w
        while stop < n and unit[stop] == unit[w]:
            stop += 1
        members = [i for i in range(w, stop) if label[i] >= 0]
        if unit[w] >= 0 and members:
            if len({label[i] for i in members}) > 1:
                votes: dict[int, float] = {}
                for i in members:
                    votes[label[i]] = votes.get(label[i], 0.0) + float(pbest[i])
                top = max(votes.values())
                winner = next(k for k, v in votes.items() if v == top)
                for i in members:
                    label[i] = winner
            for i in range(members[0] + 1, members[-1]):
                if label[i] < 0:
                    label[i] = label[members[0]]
        w = stop
    spans, w = [], 0
    while w < n:
        stop = w
        while stop < n and label[stop] == label[w]:
            stop += 1
        if label[w] >= 0:
            a, b = trim(text, int(words[w][0]), int(words[stop - 1][1]))
            if b > a:
                mean = np.mean(p32[w:stop, label[w]])  # float32 pairwise mean, as NumPy
                spans.append({"start": a, "end": b, "label": labels[label[w]],
                              "probability": float(mean)})
        w = stop
    return spans


# --------------------------------------------------------------------------- answers
INVALID_MODEL_OUTPUT = {"error": "invalid_model_output"}


def answer_candidates(cal: Calibration, q: dict, z32, legend=None):
    """Choice / Noul / Score from one block's logits (float32, options then [ABS])."""
    z = np.asarray(z32, dtype=np.float64)
    names = [o[0] for o in q["options"]]
    n = len(names)
    if not np.all(np.isfinite(z)):
        return {"type": q["kind"], **INVALID_MODEL_OUTPUT}
    T = cal.temperature(q["engine"])
    p = softmax(z[:n] / T)
    if q["kind"] == "noul":
        return {"type": "noul", "noul": cal.noul(float(p[1]))}
    if q["kind"] == "choice":
        ordered = sorted((float(x) for x in p), reverse=True)
        conf = 1.0 if n == 1 else min(1.0, max(0.0, ordered[0] - ordered[1]))
        out = {"type": "choice", "choice": names[int(np.argmax(z[:n]))], "confidence": conf,
               "probabilities": {name: float(x) for name, x in zip(names, p)}}
        if q["abstain"]:
            out["abstain_probability"] = float(softmax(z / T)[-1])
        return out
    levels = [float(x) for x in p]
    mean = math.fsum(i * x for i, x in enumerate(levels))
    var = math.fsum(x * (i - mean) ** 2 for i, x in enumerate(levels))
    return {"type": "score", "score": mean,
            "confidence": min(1.0, max(0.0, 1.0 - var / ((n * n - 1) / 12))),
            "legend": {str(i): s for i, s in enumerate(legend or names)},
            "probabilities": {str(i): x for i, x in enumerate(levels)}}


def answer_set(cal: Calibration, q: dict, z32):
    """(answers entries, sets entry, threshold) or an error answer."""
    z = np.asarray(z32, dtype=np.float64)
    names = [o[0] for o in q["options"]]
    if not np.all(np.isfinite(z)):
        return {"type": "set", **INVALID_MODEL_OUTPUT}, None, None
    theta = cal.set_threshold(q["key"], q["threshold"])
    p = [float(x) for x in sigmoid(z[:len(names)] / cal.temperature("set"))]
    views = {f"{q['id']}.{name}": {"type": "noul", "noul": x} for name, x in zip(names, p)}
    entry = {"selected": [name for name, x in zip(names, p) if x > theta],
             "probabilities": dict(zip(names, p))}
    return views, entry, theta


PERTURB = 1e-4  # logit noise; C and reference logits differ by ~1e-5 at most


def span_stability(cal, q, span, text, z, words, theta, found) -> float:
    """inf when the threshold and the decoded spans (labels, boundaries) survive 8
    draws of N(0, PERTURB) logit noise, else 0.0 (a fragile case)."""
    rng = np.random.default_rng(0)
    labels = [lab[0] for lab in span["labels"]]
    key = [(s["label"], s["start"], s["end"]) for s in found]
    for _ in range(8):
        P = sigmoid((z + rng.normal(0.0, PERTURB, z.shape)) / cal.span_temperature(span["head"]))
        th = theta
        if q["threshold"] is None:
            th, rule = cal.span_threshold(q["key"], labels, span["part_tokens"], span["head"])
            if rule.startswith("pii:"):
                th, _ = cal.sparse_gate(P, words, labels, text, th, rule)
        if th != theta or [(s["label"], s["start"], s["end"])
                           for s in decode(P, words, labels, text, th)] != key:
            return 0.0
    return math.inf


def answer_span(cal: Calibration, q: dict, span: dict, text: str, logits, words, trace=None):
    """(noul view, spans, threshold, head) or (error answer, None, None, None).

    logits: float64 (W x L) word x label logits (windows already averaged);
    words: [(start, end)] code points of those W words in the part's text."""
    labels = [lab[0] for lab in span["labels"]]  # as rendered (alias -> unsupported)
    z = np.asarray(logits, dtype=np.float64).reshape(len(words), len(labels))
    P = sigmoid(z / cal.span_temperature(span["head"]))
    if not np.all(np.isfinite(P)):
        return {"type": "span", **INVALID_MODEL_OUTPUT}, None, None, None
    if q["threshold"] is not None:
        theta, rule = float(q["threshold"]), "given"
    else:
        theta, rule = cal.span_threshold(q["key"], labels, span["part_tokens"], span["head"])
    if rule.startswith("pii:"):
        theta, rule = cal.sparse_gate(P, words, labels, text, theta, rule)
    found = decode(P, words, labels, text, theta) if len(words) else []
    if trace is not None:
        trace.append(span_stability(cal, q, span, text, z, words, theta, found))
    lo, hi = q["span_range"] if q["span_range"] else (0, len(text))
    out = []
    for s in found:
        a, b = s["start"], s["end"]
        if q["span_range"]:
            a, b = trim(text, max(a, lo), min(b, hi))
            if b <= a:
                continue
        label = span["alias"] if span["alias"] and s["label"] == "unsupported" else s["label"]
        out.append({"label": label, "start": a - lo, "end": b - lo, "text": text[a:b],
                    "probability": s["probability"]})
    best = [float(P[w].max()) for w in range(len(words))
            if not q["span_range"] or (words[w][0] >= lo and words[w][1] <= hi)]
    view = {"type": "noul", "noul": max(best) if best else 0.0}
    return view, out, theta, span["head"]
