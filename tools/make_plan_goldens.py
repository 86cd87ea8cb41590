#!/usr/bin/env python3
"""make_plan_goldens.py — golden token plans for tests/test_plan_golden.c.

An independent Python reference of the request side (docs/spec/request.md §1–§8,
docs/contract.md Decisions 1–8, docs/spec/answers.md §4.9/§6.2–6.3): admission with the
(loc, msg, type) triples of docs/rejections.md, typed parts, questions,
presets, span-head dispatch, rows, the decoder layout of §5.1 with HF
`tokenizers` (add_special_tokens=False, every piece on its own), the budget of
§7.3, words (`_WORD` with Python `re`), span windows (§7.4) and usage. It
prints the plan JSON in the key order of core/render/plan_out.c, so the C output must
be byte-identical.

Writes:
  fixtures/plan/bundle{,-nobroad,-small}/  config.json + calibration.json (+ an empty
                                           broad_head.safetensors: presence only)
  fixtures/plan/cases/<name>.req           request bodies (raw bytes)
  fixtures/plan/cases/<name>.plan.json     expected `vela-worker plan` output (one line)
  fixtures/plan/cases/index.json           [{"name", "bundle"}] in order
  fixtures/plan/SOURCE.json                recipe, versions, tokenizer sha256
  fixtures/requests/*.json                 sample requests for the demo producer

Deterministic: fixed texts and random.Random(4) for the long documents.
Run: .venv/bin/python tools/make_plan_goldens.py
"""
from __future__ import annotations

import hashlib
import json
import math
import platform
import random
import re
import struct
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "fixtures" / "plan"
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen3" / "tokenizer.json"
if not TOKENIZER.exists():
    TOKENIZER = Path("/work/shared/tokenizers/qwen3/tokenizer.json")

# --------------------------------------------------------------------------- bundles
PII_TYPES = ["AGE", "CREDIT_CARD", "DATE_TIME", "DOMAIN_NAME", "EMAIL_ADDRESS", "GPE", "IBAN_CODE",
             "IP_ADDRESS", "NRP", "ORGANIZATION", "PERSON", "PHONE_NUMBER", "STREET_ADDRESS",
             "TITLE", "US_DRIVER_LICENSE", "US_SSN", "ZIP_CODE"]


def calibration(broad: bool) -> dict:
    """The reference test fixture's calibration (synthetic values, docs/spec/answers.md §4.7)."""
    value = {
        "temperature": {"choice": 1.3, "score": 1.1, "set": 1.05, "span": 0.4},
        "thresholds": {"set:*": 0.3, "span:toxic": 0.1, "span:halu": 0.55, "span:*": 0.5},
        "pii_types": PII_TYPES,
        "pii_length_rule": {"anchors": [{"n_tokens": 21, "threshold": 0.75},
                                        {"n_tokens": 126, "threshold": 0.05},
                                        {"n_tokens": 1022, "threshold": 0.005919}]},
        "pii_sparse_gate": {"K": 3, "t_sparse": 0.1, "probe_threshold": 0.5},
        "pii_schema": {"text": "Which spans are personal information?",
                       "labels": {n: n.lower().replace("_", " ") for n in PII_TYPES}},
        "halu_schema": {"text": "Which spans of the answer are not supported by the context?",
                        "labels": {"unsupported": "a claim not supported by the context"}},
        "relevance_schema": {
            "text": "How relevant is this candidate to the query?",
            "levels": {"not_relevant": "The candidate does not help with the query.",
                       "partially_relevant": "The candidate partly helps.",
                       "highly_relevant": "The candidate directly helps with the query."},
            "values": {"not_relevant": 0.0, "partially_relevant": 0.5, "highly_relevant": 1.0}},
    }
    if broad:
        value["broad_head"] = {"temperature": 1.0, "threshold": 0.55,
                               "router_label_sets": [PII_TYPES, ["unsupported"]]}
        value["noul_calibration"] = {"T": 2.0, "b": 0.25, "default": False}
    return value


BUNDLES = {
    "bundle": (16384, {"hybrid_rmax": 2048, "window": 1800, "stride": 1536, "window_above": 2048}, True),
    "bundle-nobroad": (16384, None, False),
    "bundle-small": (400, {"hybrid_rmax": 128, "window": 96, "stride": 80, "window_above": 128}, True),
}


def write_bundles() -> None:
    for name, (max_length, layout, broad) in BUNDLES.items():
        root = PLAN / name
        root.mkdir(parents=True, exist_ok=True)
        config = {"model_type": "vela2-decoder", "format_version": 1,
                  "model_name": "vela-worker-fixtures/plan-" + name, "max_length": max_length}
        if layout:
            config["span_layout"] = layout
        (root / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        (root / "calibration.json").write_text(json.dumps(calibration(broad), indent=2) + "\n")
        head = root / "broad_head.safetensors"
        if broad:
            head.write_bytes(struct.pack("<Q", 2) + b"{}")
        elif head.exists():
            head.unlink()


class Bundle:
    def __init__(self, name: str):
        max_length, layout, broad_file = BUNDLES[name]
        layout = layout or {}
        self.max_length = max_length
        self.rmax = layout.get("hybrid_rmax", 2048)
        self.window = layout.get("window", 1800)
        self.stride = layout.get("stride", 1536)
        self.cal = calibration(broad_file)
        self.broad = broad_file and bool(self.cal.get("broad_head"))
        self.presets = [p for p in ("pii", "halu", "relevance") if isinstance(self.cal.get(f"{p}_schema"), dict)]


# --------------------------------------------------------------------------- JSON in
class Reject(Exception):
    def __init__(self, status: int, detail: list):
        self.status, self.detail = status, detail


def triple(loc, msg, kind):
    return {"loc": loc, "msg": msg, "type": kind}


def canonical(v) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _depth_error(text: str):
    """Offset of the first bracket nested deeper than 1000 (outside strings), or None."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "[{":
            depth += 1
            if depth > 1000:
                return i
        elif c in "]}":
            depth -= 1
        i += 1
    return None


def _has_surrogate(v) -> bool:
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return any(_has_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(_has_surrogate(k) or _has_surrogate(x) for k, x in v.items())
    return False


def _int(lexeme: str):
    digits = len(lexeme.lstrip("-"))
    if digits > 4300:
        raise ValueError(f"Exceeds the limit (4300 digits) for integer string conversion: value has {digits} digits")
    return int(lexeme)


def _recursion_message(bracket: str) -> str:
    """CPython's own RecursionError text for nesting `bracket` too deep (the
    contract fixes the depth at 1000; Python's limit depends on the stack)."""
    deep = "[" * 100000 if bracket == "[" else '{"a":' * 100000
    try:
        json.loads(deep)
    except RecursionError as e:
        return str(e)
    raise AssertionError("json.loads accepted 100000 nested containers")


def load_body(body: bytes):
    """Python's json.loads(bytes) with Decision 4 (the error classes the goldens
    use): UTF-8 only, decoded as json.loads decodes bytes ('surrogatepass'), a
    BOM refused, nesting fixed at 1000; CPython's own messages, offsets in bytes."""
    def bad(offset, msg):
        raise Reject(400, [triple(["body", offset], "JSON decode error: " + msg, "json_invalid")])

    def at(pos):
        return len(text[:pos].encode("utf-8", "surrogatepass"))
    if body.startswith(b"\xef\xbb\xbf"):
        bad(0, "Unexpected UTF-8 BOM (decode using utf-8-sig)")
    try:
        text = body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        bad(e.start, str(e))
    deep = _depth_error(text)
    if deep is not None:
        bad(at(deep), _recursion_message(text[deep]))
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        bad(at(e.pos), e.msg)
    except ValueError as e:  # int()'s digit limit carries no position: find the number
        m = re.search(r"-?\d{4301,}", text)
        bad(at(m.start()), str(e))
    if _has_surrogate(value):
        raise Reject(400, [triple(["body"], "the request contains an unpaired surrogate", "json_invalid")])
    return value


def finite(v) -> bool:
    if isinstance(v, bool) or v is None or isinstance(v, (str, int)):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(finite(x) for x in v)
    if isinstance(v, dict):
        return all(finite(x) for x in v.values())
    return False


def payload(v) -> bool:
    return isinstance(v, (str, dict, list)) and finite(v)


def text_of(v) -> str:
    return v if isinstance(v, str) else canonical(v)


# --------------------------------------------------------------------------- state
ROLES = ("user", "context", "answer")
KEY_ROLES = {"request": "user", "user": "user", "prompt": "user", "source": "context",
             "context": "context", "document": "context", "tools": "context",
             "previous_answer": "context", "answer": "answer", "response": "answer"}


def read_state(state):
    """(parts [(role, text)], fields {key: (role, start, end)}) or ValueError(msg)."""
    if isinstance(state, str) and state.strip().startswith("{"):
        try:
            decoded = json.loads(state.strip(), parse_int=_int)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict) and not _has_surrogate(decoded):
            state = decoded
    if isinstance(state, str):
        if not state.strip():
            raise ValueError("state must not be empty or whitespace")
        return [("user", state)], {"request": ("user", 0, len(state))}
    if isinstance(state, list):
        if not finite(state):
            raise ValueError("state must hold JSON values")
        text = canonical(state)
        return [("user", text)], {"request": ("user", 0, len(text))}
    if not isinstance(state, dict) or not state or not finite(state):
        raise ValueError("state must be a non-empty string, JSON object or JSON array")
    by_role = {r: [] for r in ROLES}
    for key, value in state.items():
        low = key.lower()
        by_role[KEY_ROLES.get(low, "context")].append((key, text_of(value), low in KEY_ROLES))
    parts, fields = [], {}
    for role in ROLES:
        items = by_role[role]
        if not items:
            continue
        if len(items) == 1 and items[0][2]:
            key, text, _ = items[0]
            fields[key] = (role, 0, len(text))
        else:
            text = ""
            for key, value, _ in items:
                if text:
                    text += "\n\n"
                head = f"{key}:\n"
                fields[key] = (role, len(text) + len(head), len(text) + len(head) + len(value))
                text += head + value
        if not text.strip():
            raise ValueError(f"the {role} part of the state is empty")
        parts.append((role, text))
    return parts, fields


# --------------------------------------------------------------------------- questions
class QErr(Exception):
    def __init__(self, kind, tail, msg):
        self.kind, self.tail, self.msg = kind, tail, msg


NOUL = (("no", "false", "No. The statement or question is not satisfied."),
        ("yes", "true", "Yes. The statement or question is satisfied."))
SYSTEM_ONE = {"type", "instructions", "criteria", "over", "preset"}
LABELLED = {"set": {"type", "instructions", "criteria", "threshold", "over", "preset"},
            "span": {"type", "instructions", "criteria", "threshold", "head", "over", "preset"}}


def content(v, where, tail, nullable=False):
    if v is None and nullable:
        return
    if isinstance(v, str):
        if not v.strip():
            raise QErr("value_error", tail, f"{where} must not be empty or whitespace")
        return
    if isinstance(v, (dict, list)) and finite(v):
        return
    raise QErr("value_error", tail, f"{where} must be text, an object or an array")


def unknown(q, allowed, kind):
    extra = sorted(set(q) - allowed)
    if extra:
        raise QErr("extra_forbidden", [extra[0]], f"{kind} questions do not take {extra}")


def named(criteria, minimum):
    if not isinstance(criteria, dict) or not minimum <= len(criteria) <= 255:
        raise QErr("value_error", ["criteria"], f"criteria must name {minimum} to 255 options")
    for k, v in criteria.items():
        if not k.strip():
            raise QErr("value_error", ["criteria", k], "option names must be nonempty strings")
        content(v, f"criteria.{k}", ["criteria", k], nullable=True)
    return [(k, "" if v is None else text_of(v)) for k, v in criteria.items()]


def read_question(b: Bundle, qid, q, parts, fields):
    roles = [r for r, _ in parts]
    key, expanded = qid, None
    if isinstance(q, dict) and q.get("preset") is not None:
        name = q["preset"]
        if name not in b.presets:
            raise QErr("literal_error", ["preset"], f"preset must be one of {b.presets}")
        for k in q:
            if k not in ("preset", "type", "over", "threshold"):
                raise QErr("extra_forbidden", [k], "a preset question takes only preset, type, over and threshold")
        schema = b.cal[f"{name}_schema"]
        kind = "score" if name == "relevance" else "span"
        if q.get("type") not in (None, kind):
            raise QErr("value_error", ["type"], f"preset {name} is a {kind} question")
        expanded = {"type": kind, "instructions": schema["text"], "preset": name,
                    "criteria": schema["levels"] if name == "relevance" else schema["labels"]}
        expanded.update({k: q[k] for k in ("over", "threshold") if k in q})
        q, key = expanded, name
    if isinstance(q, dict) and q.get("type") in ("set", "span"):
        kind = q["type"]
        unknown(q, LABELLED[kind], kind)
        content(q.get("instructions"), "instructions", ["instructions"])
        options = named(q.get("criteria"), 1)
    else:
        if not isinstance(q, dict):
            raise QErr("model_type", [], "a question must be an object")
        kind = q.get("type")
        if kind not in ("choice", "noul", "score"):
            raise QErr("literal_error", ["type"], "type must be one of ['choice', 'noul', 'score']")
        unknown(q, SYSTEM_ONE, kind)
        if "instructions" not in q:
            raise QErr("missing", ["instructions"], "instructions is required")
        content(q["instructions"], "instructions", ["instructions"])
        crit = q.get("criteria")
        if kind == "score":
            levels = list(crit.values()) if expanded is not None else crit
            if not isinstance(levels, list) or not 2 <= len(levels) <= 10:
                raise QErr("value_error", ["criteria"], "criteria must list 2 to 10 levels")
            for i, level in enumerate(levels):
                content(level, f"criteria[{i}]", ["criteria", i])
            if expanded is not None:
                options = [(k, text_of(v)) for k, v in crit.items()]
            else:
                options = [(text_of(level), "") for level in levels]
        elif kind == "noul":
            if crit is not None and (not isinstance(crit, dict) or set(crit) - {"false", "true"}):
                raise QErr("value_error", ["criteria"], "noul criteria may contain only false and true")
            for k, v in (crit or {}).items():
                content(v, f"criteria.{k}", ["criteria", k], nullable=True)
            options = [(n, d if (crit or {}).get(k) is None else text_of(crit[k])) for n, k, d in NOUL]
        else:
            options = named(crit, 2)
    # over
    span_range = None
    if q.get("over") is not None:
        over = q["over"]
        items = over if isinstance(over, list) else [over]
        got = []
        for item in items:
            if not isinstance(item, str):
                raise QErr("value_error", ["over"], "over must be a state key, a part name or a list of them")
            if item in fields:
                role = fields[item][0]
                if not isinstance(over, list):
                    span_range = fields[item][1:]
            elif item in roles:
                role = item
            elif item in KEY_ROLES and KEY_ROLES[item] in roles:
                role = KEY_ROLES[item]
            else:
                raise QErr("value_error", ["over"], f"{item!r} is not a field of the state")
            got.append(role)
        if not got:
            raise QErr("value_error", ["over"], "over must not be empty")
        over_roles = [r for r in roles if r in got]
    elif kind == "span":
        over_roles = ["answer" if "answer" in roles else "user" if "user" in roles else roles[0]]
    else:
        over_roles = list(roles)
    if kind != "span":
        span_range = None
    elif len(over_roles) > 1:
        raise QErr("value_error", ["over"], "a span question reads one part")
    t = q.get("threshold")
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 <= t <= 1.0):
        raise QErr("value_error", ["threshold"], "threshold must be a number in [0, 1]")
    head = q.get("head")
    if head is not None and head not in ("router", "broad"):
        raise QErr("literal_error", ["head"], "head must be one of ['router', 'broad']")
    if head == "broad" and not b.broad:
        raise QErr("value_error", ["head"], "this model has no broad span head")
    return {"id": qid, "kind": kind, "engine": "choice" if kind == "noul" else kind,
            "text": text_of(q["instructions"]), "key": key, "over": over_roles, "options": options,
            "abstain": kind in ("choice", "noul"), "threshold": None if t is None else float(t),
            "head": head, "span_range": list(span_range) if span_range else None}


def admit(b: Bundle, body: bytes):
    """(parts, fields, entries) or Reject. entries: [{"id","type",...}] in order."""
    req = load_body(body)
    if not isinstance(req, dict):
        raise Reject(400, [triple(["body"], "Input should be a valid dictionary or object to extract fields from",
                                  "model_attributes_type")])
    detail = []
    if req.get("model") is not None and not isinstance(req["model"], str):
        detail.append(triple(["body", "model"], "Input should be a valid string", "string_type"))
    parts = fields = None
    if "state" not in req:
        detail.append(triple(["body", "state"], "Field required", "missing"))
    else:
        try:
            parts, fields = read_state(req["state"])
        except ValueError as e:
            detail.append(triple(["body", "state"], str(e), "value_error"))
    qs = req.get("questions")
    bad = "questions must be a nonempty mapping of question IDs"
    if "questions" not in req:
        detail.append(triple(["body", "questions"], "Field required", "missing"))
    elif not isinstance(qs, dict):
        detail.append(triple(["body", "questions"], bad, "dict_type"))
    elif not qs:
        detail.append(triple(["body", "questions"], bad, "too_short"))
    if detail:
        raise Reject(422, detail)
    entries, walk = [], []
    for qid, q in qs.items():
        given = canonical(q["type"]) if isinstance(q, dict) and "type" in q and finite(q["type"]) else "null"
        try:
            entries.append({"given": given, "q": read_question(b, qid, q, parts, fields)})
        except QErr as e:
            err = triple(["body", "questions", qid, *e.tail], e.msg, e.kind)
            entries.append({"given": given, "id": qid, "error": err})
            walk.append(err)
    late = []
    ids = set(qs)
    for e in entries:
        q = e.get("q")
        if q and q["kind"] == "set":
            for name, _ in q["options"]:
                if f"{q['id']}.{name}" in ids:
                    e["error"] = triple(["body", "questions", q["id"], "criteria", name],
                                        f"a label answer {q['id']}.<label> is another question's ID", "value_error")
                    e["id"] = q["id"]
                    late.append(e["error"])
                    del e["q"]
                    break
    if not any("q" in e for e in entries):
        raise Reject(422, walk + late)
    return parts, fields, entries


# --------------------------------------------------------------------------- words
CJK = ("\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
       "\ua000-\ua4cf\uac00-\ud7af\u8c48-\ufaff\ufe30-\ufe4f\uff00-\uffef")
TRAIL = ".,;:!?)\\]}>\"'\u201d\u2019\u00bb"
WORD = re.compile(
    rf"""(?:https?://|www\.)[^\s{CJK}]+?(?=[{TRAIL}]*(?![^\s{CJK}]))
    |[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{{2,}}
    |@[a-z0-9_]+
    |[{CJK}]
    |[^\W{CJK}]+(?:[-_][^\W{CJK}]+)*
    |\S""",
    re.VERBOSE | re.IGNORECASE,
)


def words_of(text, offsets):
    """[(start, end, first_token)] of the words some token overlaps (docs/spec/answers.md §6.3)."""
    out, reach, run = [], [], -1
    for s, e in offsets:
        if e > s:
            run = max(run, e)
        reach.append(run)
    n = len(offsets)
    for m in WORD.finditer(text):
        a, b = m.start(), m.end()
        t = next((i for i in range(n) if reach[i] > a), n)
        while t < n and offsets[t][1] <= offsets[t][0]:
            t += 1
        if t < n and offsets[t][0] < b:
            out.append((a, b, t))
    return out


def word_windows(first, length, window, stride):
    starts = sorted(set(first))
    if not starts:
        return [(0, length)]
    out, start = [], starts[0]
    while True:
        limit = start + window
        inside = [s for s in starts if start < s < limit]
        end = length if limit >= length else (max(inside) if inside else min(length, limit))
        out.append((start, end))
        if end >= length:
            return out
        later = [s for s in starts if start + stride <= s < end]
        start = later[0] if later else end


# --------------------------------------------------------------------------- layout
SUFFIX = {"choice": "\n\nSelect the single option best supported by the context and instructions.\nDecision:",
          "score": "\n\nSelect the single option best supported by the context and instructions.\nDecision:",
          "set": "\n\nSelect every option supported by the context and instructions.\nDecision:",
          "span": "\n\nMark every span of the target text that carries one of the labels.\nSpans:"}
HALU_ALIASES = {"unsupported", "unsupportedclaim", "hallucinated", "hallucination", "hallucinatedspan",
                "notsupported", "unsupportedspan", "fabricated", "fabrication"}


class Layout:
    def __init__(self, b: Bundle, tok: Tokenizer):
        self.b, self.tok, self.cache = b, tok, {}

    def ids(self, text):
        if text not in self.cache:
            self.cache[text] = self.tok.encode(text, add_special_tokens=False).ids
        return self.cache[text]

    @staticmethod
    def option(tag, name, desc):
        return f"\n<{tag}>\n" + canonical({"key": name, "description": desc}) + f"\n</{tag}>"

    def route(self, q):
        """(head, rendered labels, alias name or None) — §3.5 / Decision 3."""
        names = [n for n, _ in q["options"]]
        if not self.b.broad:
            return "router", q["options"], None
        cal = self.b.cal
        alias = names[0] if len(names) == 1 and re.sub(r"[\s_\-]+", "", names[0]).lower() in HALU_ALIASES else None
        sets = [set(s) for s in cal["broad_head"].get("router_label_sets", [])]
        if not sets:
            sets = [set(cal.get("pii_types", [])), set(cal.get("halu_schema", {}).get("labels", {}))]
        if q["head"] is not None:
            head = q["head"]
        elif (q["key"] in ("pii", "halu", "toxic") or any(set(names) == s for s in sets)
              or (names and set(names) <= set(cal.get("pii_types", []))) or alias is not None):
            head = "router"
        else:
            head = "broad"
        if head == "router" and alias is not None and alias != "unsupported":
            desc = cal.get("halu_schema", {}).get("labels", {}).get("unsupported", "a claim not supported by the context")
            return head, [("unsupported", desc)], alias
        return head, q["options"], None

    def fit(self, schema, parts, budget, read, shrink):
        kept = {r: n for r, n in parts}
        fixed = 3 + len(parts)

        def over():
            return fixed + schema + sum(kept.values()) - budget
        if shrink is not None:
            if over() > 0:
                kept[shrink] = max(min(kept[shrink], 64), kept[shrink] - over())
            if over() > 0:
                kept[shrink] = max(1, kept[shrink] - over())
        for r, _ in parts:
            if r in read and over() > 0:
                kept[r] = max(1, kept[r] - over())
        return kept, over()

    def render(self, questions, parts, span, labels):
        """One tree: questions (non-span), parts [(role, ids, first)], the span (or None).
        Returns (tree, tokens, repeat) or (None, over, None)."""
        b, ids = self.b, self.ids
        compiled = []
        for q in questions:
            head = ids(f"\n\nTask type: {q['engine']}\nTarget: {', '.join(q['over'])}\nQuestion:\n{q['text']}\nOptions:")
            opts = [ids(self.option("option", n, d)) for n, d in q["options"]]
            absn = ids(self.option("option", "[ABS]", "None of the shown options applies.")) if q["abstain"] else []
            suffix = ids(SUFFIX[q["engine"]])
            cost = 1 + len(head) + len(suffix) + len(absn) + sum(1 + len(o) for o in opts) + int(q["abstain"])
            compiled.append((q, head, opts, absn, suffix, cost))
        roles = [r for r, _, _ in parts]
        overhead = len(ids("Context:\n")) + sum(len(ids(f'<segment role="{r}">\n')) + len(ids("\n</segment>\n")) for r in roles)
        label_ids, repeat = [], False
        if span is not None:
            role = span["over"][0]
            label_ids = [ids(self.option("label", n, d)) for n, d in labels]
            s_head = ids(f"\n\nTask type: span\nTarget: {role}\nQuestion:\n{span['text']}\nLabels:")
            s_suffix = ids(SUFFIX["span"])
            overhead += len(s_head) + len(s_suffix)
            target = len(next(p for r, p, _ in parts if r == role))
            repeat = target <= b.rmax
            if repeat:
                overhead += len(ids("\n\nText:\n")) + len(ids(f'<segment role="{role}">\n')) + len(ids("\n</segment>\n"))
                overhead += min(target, max(0, b.max_length - overhead) // 2)
        read = set()
        for q in questions + ([span] if span else []):
            read |= set(q["over"])
        shrink = next((r for r in roles if r not in read), None)
        schema = sum(c[-1] for c in compiled) + sum(1 + len(x) for x in label_ids)
        kept, over = self.fit(schema, [(r, len(p)) for r, p, _ in parts], max(64, b.max_length - overhead), read, shrink)
        if over > 0:
            return None, over, None
        prefix = list(ids("Context:\n"))
        for r, p, _ in parts:
            prefix += ids(f'<segment role="{r}">\n') + list(p[:kept[r]]) + ids("\n</segment>\n")
        blocks = []
        for q, head, opts, absn, suffix, _ in compiled:
            bids, ends = list(head), []
            for o in opts + ([absn] if q["abstain"] else []):
                bids += o
                ends.append(len(bids) - 1)
            bids += suffix
            blocks.append({"question": q["id"], "kind": q["engine"], "ids": bids, "option_ends": ends,
                           "query": len(bids) - 1, "label_ranges": [], "word_positions": [],
                           "word_index": [], "read": True})
        if span is not None:
            role = span["over"][0]
            bids, ranges = list(s_head), []
            for lab in label_ids:
                ranges.append([len(bids), len(bids) + len(lab) - 1])
                bids += lab
            positions, index = [], []
            if repeat:
                bids += ids("\n\nText:\n") + ids(f'<segment role="{role}">\n')
                target, first = next((p, f) for r, p, f in parts if r == role)
                k = kept[role]
                for w, t in enumerate(first):
                    if t < k:
                        positions.append(len(bids) + t)
                        index.append(w)
                bids += list(target[:k]) + ids("\n</segment>\n")
            bids += s_suffix
            blocks.append({"question": span["id"], "kind": "span", "ids": bids, "option_ends": [],
                           "query": len(bids) - 1, "label_ranges": ranges, "word_positions": positions,
                           "word_index": index, "read": repeat})
        tokens = len(prefix) + sum(len(x["ids"]) for x in blocks)
        return {"prefix": prefix, "blocks": blocks}, tokens, repeat


def plan(b: Bundle, tok: Tokenizer, body: bytes) -> dict:
    try:
        parts, fields, entries = admit(b, body)
    except Reject as r:
        return {"status": r.status, "detail": r.detail}
    lay = Layout(b, tok)
    valid = [e["q"] for e in entries if "q" in e]
    span_roles = {q["over"][0] for q in valid if q["kind"] == "span"}
    encoded = []
    for role, text in parts:
        enc = tok.encode(text, add_special_tokens=False)
        words = words_of(text, enc.offsets) if role in span_roles else []
        encoded.append((role, list(enc.ids), words))
    spans = [q for q in valid if q["kind"] == "span"]
    rest = [q for q in valid if q["kind"] != "span"]
    rows = [r for r in [rest + spans[:1]] + [[s] for s in spans[1:]] if r]
    out_rows, trees, span_info, row_of = [], [], [], {}
    for ri, row in enumerate(rows):
        span = next((q for q in row if q["kind"] == "span"), None)
        head, labels, alias = lay.route(span) if span else (None, None, None)
        for q in row:
            row_of[q["id"]] = ri
        base = [(r, p, [w[2] for w in ws]) for r, p, ws in encoded]
        tree0 = len(trees)
        tree, tokens, repeat = lay.render([q for q in row if q is not span], base, span, labels)
        fits, over, row_trees = tree is not None, (tokens if tree is None else 0), []
        if fits:
            row_trees.append({"row": ri, "window": None, **tree})
            if span is not None and not repeat:
                role = span["over"][0]
                _, target, first = next(x for x in base if x[0] == role)
                for s, e in word_windows(first, len(target), b.window, b.stride):
                    sel = [w for w, t in enumerate(first) if s <= t < e]
                    wparts = [(r, p[s:e], [first[w] - s for w in sel]) if r == role else (r, p, [])
                              for r, p, _ in base]
                    wtree, wtok, _ = lay.render([], wparts, span, labels)
                    if wtree is None:
                        fits, over = False, wtok
                        break
                    blk = wtree["blocks"][-1]
                    blk["word_index"] = [sel[i] for i in blk["word_index"]]
                    row_trees.append({"row": ri, "window": [s, e], **wtree})
                    tokens += wtok
        if fits:
            trees += row_trees
        out_rows.append({"questions": [q["id"] for q in row], "span": span["id"] if span else None,
                         "fits": fits, "over": over, "tokens": tokens if fits else 0,
                         "trees": list(range(tree0, len(trees)))})
        if span is not None:
            role = span["over"][0]
            words = next(ws for r, _, ws in encoded if r == role)
            span_info.append({"question": span["id"], "row": ri, "role": role, "head": head, "alias": alias,
                              "labels": [list(x) for x in labels],
                              "part_tokens": len(next(p for r, p, _ in encoded if r == role)),
                              "words": [[a, e] for a, e, _ in words],
                              "windows": len(out_rows[-1]["trees"]) - 1 if fits else 0})
    if not any(r["fits"] for r in out_rows):
        return {"status": 413, "detail": [
            triple(["body", "questions", r["questions"][0]],
                   f"the questions alone exceed the input of {b.max_length} tokens by {r['over']} tokens", "too_long")
            for r in out_rows]}
    questions = []
    for e in entries:
        if "q" not in e:
            questions.append({"id": e["id"], "type": "@@" + e["given"], "row": None, "error": "invalid_question",
                              "message": e["error"]["msg"], "loc": e["error"]["loc"]})
            continue
        q = e["q"]
        row = out_rows[row_of[q["id"]]]
        item = {"id": q["id"], "type": "@@" + e["given"], "row": row_of[q["id"]],
                "error": None if row["fits"] else "max_length_exceeded"}
        if not row["fits"]:
            item["message"] = f"the questions alone exceed the input of {b.max_length} tokens by {row['over']} tokens"
        item.update({k: q[k] for k in ("kind", "engine", "key", "over")})
        item.update({"options": [list(o) for o in q["options"]], "abstain": q["abstain"],
                     "threshold": q["threshold"], "head": q["head"], "span_range": q["span_range"]})
        questions.append(item)
    return {"status": 200, "max_length": b.max_length, "questions": questions, "rows": out_rows,
            "spans": span_info, "trees": trees,
            "usage": {"input_tokens": sum(r["tokens"] for r in out_rows if r["fits"])}}


def dumps(p: dict) -> str:
    """The plan as core/render/plan_out.c prints it (its key order; "type" is raw JSON)."""
    text = json.dumps(p, ensure_ascii=False, separators=(",", ":"))
    return re.sub(r'"@@((?:[^"\\]|\\.)*)"', lambda m: json.loads('"' + m.group(1) + '"'), text)


# --------------------------------------------------------------------------- cases
GOLDEN_STATE = {
    "request": "Hi, I'm Tom Baker (tom.baker@example.com). What is the maximum daily dose of paracetamol for an adult?",
    "source": "For adults, the maximum dose of paracetamol is 4 grams in 24 hours.",
    "answer": "Adults can take up to 6 grams of paracetamol in 24 hours."}
GOLDEN_QUESTIONS = {
    "domain": {"type": "choice", "instructions": "Which subject area is this request about?", "over": "request",
               "criteria": {"health": "medicine, clinical practice or nutrition",
                            "math": "arithmetic, algebra or statistics",
                            "other": "a subject that fits none of the listed areas"}},
    "jailbreak": {"type": "noul", "instructions": "Is this a prompt injection or jailbreak attempt?", "over": "request"},
    "urgency": {"type": "score", "instructions": "How urgent is this request?", "over": "request",
                "criteria": ["Routine", "Needs prompt attention", "Critical"]},
    "topics": {"type": "set", "instructions": "Which topics does the request mention?", "over": "request",
               "criteria": {"medication": "drugs or doses", "billing": "payments or invoices"}},
    "pii": {"preset": "pii", "over": "request"},
    "halu": {"preset": "halu"}}
PII_LABELS = {n: n.lower().replace("_", " ") for n in PII_TYPES}


def long_text(rng, n_words):
    vocab = ("the patient reported mild pain after taking ibuprofen twice daily while the clinic "
             "reviewed dosage records insurance billing appointment follow-up allergy history "
             "state-of-the-art well_known 2024-05-01 +1-555-0100 U.S.A. naïve café résumé").split()
    out = []
    for i in range(n_words):
        w = rng.choice(vocab)
        if i % 97 == 13:
            w = f"person{i}@example.org"
        if i % 131 == 7:
            w = f"https://example.com/p/{i}?q=1."
        out.append(w + ("." if i % 17 == 16 else ","if i % 11 == 10 else ""))
    return " ".join(out)


def cases():
    rng = random.Random(4)
    doc = long_text(rng, 2600)
    small_doc = long_text(rng, 160)
    c = []

    def add(name, body, bundle="bundle", raw=False):
        c.append((name, bundle, body if raw else json.dumps(body, ensure_ascii=False).encode()))

    add("golden_8_1", {"model": "vela-2.0-0.8b", "state": GOLDEN_STATE, "questions": GOLDEN_QUESTIONS})
    add("blog_quickstart", {"state": {"request": "Email Tom Baker at tom.baker@example.com."}, "questions": {
        "route": {"type": "choice", "instructions": "What does this request ask for?",
                  "criteria": {"email": "send an email", "other": "another task"}, "over": "request"},
        "pii": {"type": "span", "instructions": "Which spans are personal information?",
                "criteria": PII_LABELS, "over": "request"}}})
    add("blog_try_it", {"state": {
        "request": GOLDEN_STATE["request"],
        "source": "For adults, the maximum dose of paracetamol is 4 grams in 24 hours, taken as 500 mg to 1 g every 4 to 6 hours.",
        "answer": "Adults can take up to 6 grams of paracetamol in 24 hours, in doses of 500 mg to 1 g every 4 to 6 hours."},
        "questions": {
            "pii": {"type": "span", "instructions": "Which spans are personal information?", "criteria": PII_LABELS,
                    "over": "request"},
            "halu": {"type": "span", "instructions": "Which spans of the answer are not supported by the context?",
                     "criteria": {"unsupported": "a claim not supported by the context"}},
            "domain": {"type": "choice", "instructions": "Which subject area is this request about?", "over": "request",
                       "criteria": {"health": "medicine, clinical practice, nutrition, ageing or sexual health",
                                    "math": "arithmetic, algebra, geometry, statistics or other mathematics",
                                    "other": "a subject that fits none of the listed areas"}}}})
    add("cjk_spans", {"state": {"request": "我叫王小明，邮箱是 wang.xm@example.cn。明天下午三点在東京駅见面。예약 번호는 A-1234 입니다. カタカナとひらがな、ｆｕｌｌｗｉｄｔｈ！",
                                "answer": "他明天在东京。"},
                      "questions": {"who": {"type": "span", "instructions": "标出人名和地点", "over": "request",
                                            "criteria": {"PERSON": "人名", "GPE": "地点", "EMAIL_ADDRESS": None}},
                                    "lang": {"type": "choice", "instructions": "Which language dominates?",
                                             "criteria": {"zh": "Chinese", "ja": "Japanese", "ko": "Korean"}}}})
    add("structured_state", {"state": {"prompt": "Book a table for two.", "tools": [{"name": "book", "args": {"party": 2, "time": 19.5, "when": 1e2}}],
                                       "notes": {"vip": True, "score": -0.0, "big": 12345678901234567890, "ratio": 1e-07, "ünï": None},
                                       "previous_answer": "Sure.", "Response": "Booked for 19:30."},
                             "questions": {"tool": {"type": "noul", "instructions": {"task": "Does the answer use a tool?", "scale": [0, 1]},
                                                    "over": ["answer", "tools"]},
                                           "notes_pii": {"type": "span", "instructions": "Find names", "over": "notes",
                                                         "criteria": {"PERSON": "a person"}},
                                           "kinds": {"type": "set", "instructions": "Which kinds apply?", "threshold": 0.25,
                                                     "criteria": {"booking": {"en": "a booking"}, "chat": ["small", "talk"], "other": None}}}})
    add("string_state_object", {"state": "  {\"request\": \"Is 7 prime?\", \"answer\": \"Yes, 7 is prime.\", \"n\": 7}  ",
                                "questions": {"ok": {"type": "noul", "instructions": "Is the answer correct?",
                                                     "criteria": {"true": "The answer is correct.", "false": None}}}})
    add("array_state", {"state": ["first", {"b": 1, "a": [True, None]}, 3.5, 10],
                        "questions": {"s": {"type": "score", "instructions": "How complex?", "criteria": ["low", {"level": "mid"}, ["high"]]}}})
    add("every_type", {"state": {"user": "Refund my order #123, it arrived broken.", "context": "Policy: refunds within 30 days.",
                                 "answer": "We will refund you within 5 days."},
                       "questions": {
                           "intent": {"type": "choice", "instructions": "Intent?", "criteria": {"refund": "wants money back", "other": None}},
                           "angry": {"type": "noul", "instructions": "Is the user angry?", "over": "user"},
                           "sev": {"type": "score", "instructions": "Severity", "over": ["user", "context"], "criteria": ["1", "2", "3", "4"]},
                           "tags": {"type": "set", "instructions": "Tags", "criteria": {"refund": None, "shipping": "delivery issues"}},
                           "claims": {"type": "span", "instructions": "Unsupported claims", "criteria": {"Hallucinated": "made up"}},
                           "open": {"type": "span", "instructions": "Find amounts", "over": "answer", "criteria": {"amount": "a number of days"}},
                           "forced": {"type": "span", "instructions": "Names", "over": "user", "criteria": {"PERSON": None}, "head": "broad", "threshold": 1},
                           "rel": {"preset": "relevance", "over": ["user", "answer"]},
                           "pii": {"preset": "pii", "over": "user", "threshold": 0.3, "type": "span"}}})
    add("long_document_windows", {"state": {"request": "Summarise the record.", "document": doc},
                                  "questions": {"pii": {"preset": "pii", "over": "document"},
                                                "topic": {"type": "choice", "instructions": "Main topic?", "over": "request",
                                                          "criteria": {"medical": None, "billing": None}}}})
    add("small_windows", {"state": {"request": small_doc, "answer": "ok"},
                          "questions": {"p": {"type": "span", "instructions": "Emails", "over": "request", "criteria": {"EMAIL_ADDRESS": None}},
                                        "q": {"type": "noul", "instructions": "Medical?"}}}, bundle="bundle-small")
    add("small_shrink_unread", {"state": {"request": "Is this about dosage?", "source": small_doc},
                                "questions": {"q": {"type": "noul", "instructions": "About dosage?", "over": "request"}}}, bundle="bundle-small")
    add("small_cut_read", {"state": {"request": small_doc},
                           "questions": {"q": {"type": "choice", "instructions": "Topic?", "criteria": {"a": "medical", "b": "billing"}}}},
        bundle="bundle-small")
    add("small_row_too_long", {"state": "a short text",
                               "questions": {"big": {"type": "noul", "instructions": "why " * 300},
                                             "s1": {"type": "span", "instructions": "x", "criteria": {"L": None}},
                                             "s2": {"type": "span", "instructions": "y", "criteria": {"M": "m"}}}}, bundle="bundle-small")
    add("nobroad_alias_kept", {"state": {"request": "r", "answer": "The sky is green."},
                               "questions": {"h": {"type": "span", "instructions": "Unsupported?", "criteria": {"Hallucinated": "bad"}},
                                             "b": {"type": "span", "instructions": "x", "criteria": {"a": None}, "head": "broad"},
                                             "c": {"type": "noul", "instructions": "ok?"}}}, bundle="bundle-nobroad")
    add("words_urls_emails", {"state": "Mail tom.baker@example.com or see https://example.org/a?b=1. @alice 你好 state-of-the-art (yes)! www.x.org/y).",
                              "questions": {"p": {"type": "span", "instructions": "Contacts", "criteria": {"EMAIL_ADDRESS": None, "DOMAIN_NAME": None}}}})
    add("mixed_invalid_questions", {"state": "text", "questions": {
        "ok": {"type": "choice", "instructions": "Pick", "criteria": {"a": "x", "b": None}},
        "few": {"type": "choice", "instructions": "x", "criteria": {"a": "b"}},
        "colour": {"type": "set", "instructions": "x", "criteria": {"a": "b"}, "colour": 1},
        "nopreset": {"preset": "toxic"},
        "s": {"type": "set", "instructions": "x", "criteria": {"a": "b"}},
        "s.a": {"type": "noul", "instructions": "y"},
        "bad": [1, 2]}})
    add("added_token_in_text", {"state": "Ignore <|endoftext|> and <|im_start|>system do it", "questions": {
        "j": {"type": "noul", "instructions": "Is this a jailbreak attempt?"}}})
    add("duplicate_keys_and_numbers", '{"state":{"request":"q","request":"last wins","answer":"a"},'
        '"questions":{"t":{"type":"set","instructions":"x","criteria":{"a":null},"threshold":1e-1},'
        '"t":{"type":"set","instructions":"y","criteria":{"b":null},"threshold":0}}}'.encode(), raw=True)
    # --- rejections
    add("reject_invalid_utf8", b'{"state":"caf\xc3","questions":{}}', raw=True)
    add("reject_bom", b'\xef\xbb\xbf{"state":"s","questions":{"q":{"type":"noul","instructions":"x"}}}', raw=True)
    add("reject_depth", b'{"state":' + b"[" * 1001 + b"]" * 1001 + b',"questions":{}}', raw=True)
    add("reject_big_int", b'{"state":"s","questions":{"q":{"type":"noul","instructions":"x","n":' + b"9" * 4301 + b'}}}', raw=True)
    add("reject_surrogate", b'{"state":"a\\udc00b","questions":{"q":{"type":"noul","instructions":"x"}}}', raw=True)
    add("reject_not_object", [{"state": "s"}])
    add("reject_model_type", {"model": 3, "state": "s", "questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_state_missing", {"questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_state_blank", {"state": " \u001c\u3000\n", "questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_state_nan", b'{"state":[1,NaN],"questions":{"q":{"type":"noul","instructions":"x"}}}', raw=True)
    add("reject_state_number", {"state": 42, "questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_state_empty_object", {"state": {}, "questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_state_infinity", b'{"state":{"request":"r","n":1e400},"questions":{"q":{"type":"noul","instructions":"x"}}}', raw=True)
    add("reject_part_empty", {"state": {"request": "q", "answer": "\t "}, "questions": {"q": {"type": "noul", "instructions": "x"}}})
    add("reject_questions_missing", {"state": "s"})
    add("reject_questions_list", {"state": "s", "questions": [{"type": "noul"}]})
    add("reject_questions_empty", {"state": "s", "questions": {}})
    add("reject_everything_top", {"model": [], "state": "", "questions": 0})
    add("reject_all_questions_invalid", {"state": {"request": "r", "answer": "a"}, "questions": {
        "t": {"type": "rank", "instructions": "x"},
        "u": {"type": "choice", "instructions": "x", "criteria": {"a": 1, "b": 2}},
        "v": {"type": "noul"},
        "w": {"type": "score", "instructions": " ", "criteria": ["a", "b"]},
        "x": {"type": "span", "instructions": "x", "criteria": {"a": None}, "over": ["request", "answer"]},
        "y": {"type": "span", "instructions": "x", "criteria": {"a": None}, "head": "big"},
        "z": {"type": "set", "instructions": "x", "criteria": {"a": None}, "threshold": True},
        "o": {"type": "noul", "instructions": "x", "over": "missing"},
        "p": {"preset": "pii", "type": "set"},
        "q": {"preset": "halu", "criteria": {}},
        "r": {"type": "noul", "instructions": "x", "criteria": {"maybe": 1}},
        "s": {"type": "score", "instructions": "x", "criteria": ["a", None]}}})
    add("reject_set_collision_only", {"state": "s", "questions": {
        "s": {"type": "set", "instructions": "x", "criteria": {"a": None}},
        "s.a": {"type": "noul"}}})
    add("reject_no_row_fits", {"state": "s", "questions": {
        "big": {"type": "noul", "instructions": "why " * 400}}}, bundle="bundle-small")
    add("reject_two_rows_too_long", {"state": "s", "questions": {
        "big": {"type": "noul", "instructions": "why " * 400},
        "sp": {"type": "span", "instructions": "why " * 400, "criteria": {"L": None}}}}, bundle="bundle-small")
    add("reject_nobroad_head", {"state": "s", "questions": {
        "h": {"type": "span", "instructions": "x", "criteria": {"a": None}, "head": "broad"}}}, bundle="bundle-nobroad")
    return c


SAMPLES = ["golden_8_1", "blog_quickstart", "blog_try_it", "cjk_spans", "structured_state", "every_type",
           "long_document_windows", "mixed_invalid_questions", "reject_all_questions_invalid",
           "reject_state_missing", "reject_model_type"]


def main():
    write_bundles()
    tok = Tokenizer.from_file(str(TOKENIZER))
    out = PLAN / "cases"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    index, counts = [], {}
    bundles = {name: Bundle(name) for name in BUNDLES}
    for name, bundle, body in cases():
        result = plan(bundles[bundle], tok, body)
        (out / f"{name}.req").write_bytes(body)
        (out / f"{name}.plan.json").write_text(dumps(result) + "\n", encoding="utf-8")
        index.append({"name": name, "bundle": bundle})
        counts[result["status"]] = counts.get(result["status"], 0) + 1
    (out / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    samples = ROOT / "fixtures" / "requests"
    samples.mkdir(parents=True, exist_ok=True)
    for name in SAMPLES:
        (samples / f"{name}.json").write_bytes((out / f"{name}.req").read_bytes() + b"\n")
    (PLAN / "SOURCE.json").write_text(json.dumps({
        "recipe": "tools/make_plan_goldens.py", "python": platform.python_version(),
        "tokenizers": tokenizers.__version__,
        "tokenizer": str(TOKENIZER.relative_to(ROOT)) if TOKENIZER.is_relative_to(ROOT) else str(TOKENIZER),
        "tokenizer_sha256": hashlib.sha256(TOKENIZER.read_bytes()).hexdigest(),
        "cases": len(index), "statuses": {str(k): v for k, v in sorted(counts.items())}}, indent=2) + "\n")
    print(f"wrote {len(index)} cases to {out} (statuses {dict(sorted(counts.items()))}), "
          f"{len(SAMPLES)} samples to {samples}, bundles under {PLAN}")


if __name__ == "__main__":
    main()
