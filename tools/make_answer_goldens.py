#!/usr/bin/env python3
"""make_answer_goldens.py — end-to-end answer goldens for tests/test_engine.c.

An independent Python reference of the whole answer path (tools/vela_ref/):
request bytes -> plan (tools/make_plan_goldens.py, the Python reference of
admission / render / budget / windows) -> backbone (transformers Qwen3.5 text
model from the bundle's weights, FP32, each block run as `prefix + block`) ->
heads (torch FP32, tools/make_head_goldens.py) -> calibration and span decoding
(docs/spec/answers.md §4, §6; float64, float32 decoder comparisons) -> the System
One envelope (§8, the runtime family's key order) or the rejection record.

Bundles: fixtures/tiny-vela, and fixtures/answers/tiny-small = the same files
with a small budget (max_length 512; span_layout hybrid_rmax 128, window 96,
stride 80) for truncation, windows, max_length_exceeded and 413 at a low cost.
Worker-level checks (record size, Python json.loads errors) come first, as in
the worker (worker/record_in.h): a case may carry "max_request_bytes".

Writes:
  fixtures/answers/tiny-small/        the small-budget copy (manifest recomputed)
  fixtures/answers/cases.jsonl        {"name", "bundle", "body" | "body_b64",
                                       ["max_request_bytes"], "status", "expected"}
                                       expected = envelope (200) or
                                       {"status", "detail"} (400/413/422)
  fixtures/answers/hidden.bin         the reference's hidden rows at every readout of
                                      every executed block (little-endian): magic
                                      "VWAHID01", u32 version 1, u32 hidden, u32 n;
                                      per block: 64 hex chars (vela_ref.pipeline
                                      block_key), u32 k, k x u32 block-relative
                                      index, k x hidden x f32. tests/test_engine.c
                                      replays them through an executor to check
                                      heads + answers + envelope at 1e-6 on the
                                      reference's own hidden states.
  fixtures/answers/SOURCE.json        recipe, versions, bundle digests, per-case
                                      decision margins, the jsonschema cross-check

Also: --bench --bundle DIR --requests FILE [--reps N] times this pipeline on a
JSONL of requests (bench/score.sh prints it beside bench_score).
Deterministic: fixed texts, random.Random(SEED) for long documents, torch on
one thread. Run: .venv/bin/python tools/make_answer_goldens.py
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import platform
import random
import shutil
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from vela_ref import answers as A  # noqa: E402
from vela_ref.pipeline import Reference, dumps  # noqa: E402

RECIPE = "tools/make_answer_goldens.py"
SEED = 20260706
OUT = ROOT / "fixtures" / "answers"
TINY = ROOT / "fixtures" / "tiny-vela"
SMALL = OUT / "tiny-small"
BUNDLES = {"tiny": TINY, "small": SMALL}
SMALL_CONFIG = {"max_length": 512,
                "span_layout": {"hybrid_rmax": 128, "window": 96, "stride": 80, "window_above": 128}}
MAX_REQUEST_BYTES = 1 << 20  # the worker's default limit is larger than any case

# --------------------------------------------------------------------------- texts
REQUEST = ("Hi, I'm Tom Baker (tom.baker@example.com). What is the maximum daily dose of "
           "paracetamol for an adult?")
SOURCE = "For adults, the maximum dose of paracetamol is 4 grams in 24 hours."
ANSWER = "Adults can take up to 6 grams of paracetamol in 24 hours."
GOLDEN_STATE = {"request": REQUEST, "source": SOURCE, "answer": ANSWER}
DOMAIN = {"type": "choice", "instructions": "Which subject area is this request about?",
          "over": "request",
          "criteria": {"health": "medicine, clinical practice or nutrition",
                       "math": "arithmetic, algebra or statistics",
                       "other": "a subject that fits none of the listed areas"}}
GOLDEN_QUESTIONS = {
    "domain": DOMAIN,
    "jailbreak": {"type": "noul", "instructions": "Is this a prompt injection or jailbreak attempt?",
                  "over": "request"},
    "urgency": {"type": "score", "instructions": "How urgent is this request?", "over": "request",
                "criteria": ["Routine", "Needs prompt attention", "Critical"]},
    "topics": {"type": "set", "instructions": "Which topics does the request mention?",
               "over": "request",
               "criteria": {"medication": "drugs or doses", "billing": "payments or invoices"}},
    "pii": {"preset": "pii", "over": "request"},
    "halu": {"preset": "halu"},
}
FILLER = ("the patient asked about the maximum daily dose and the doctor said four grams "
          "in hours while the city office sent an email to tom.baker@example.com about "
          "the visit today call +1 415-555-0123 or see https://example.org/dose for more "
          "information from the national group of the state school and the young children "
          "found the answer after the long night in New York with Ann and Dr. Smith").split()


def document(rng: random.Random, words: int) -> str:
    """A deterministic pseudo-document of `words` words with sentence breaks."""
    out = []
    for i in range(words):
        w = rng.choice(FILLER)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out) + "."


def q_choice(over=None, **crit):
    q = {"type": "choice", "instructions": "Which option fits best?",
         "criteria": crit or {"yes": "it does", "no": "it does not"}}
    if over is not None:
        q["over"] = over
    return q


def q_span(labels, **extra):
    return {"type": "span", "instructions": "Which spans carry a label?", "criteria": labels,
            **extra}


def cases(rng: random.Random) -> list[dict]:
    """(name, bundle, body bytes[, max_request_bytes]) of every case, in order."""
    c = []

    def add(name, req, bundle="tiny", raw=None, **kw):
        body = raw if raw is not None else json.dumps(req, ensure_ascii=False).encode()
        c.append({"name": name, "bundle": bundle, "body": body, **kw})

    add("golden", {"state": GOLDEN_STATE, "questions": GOLDEN_QUESTIONS})
    add("golden_reordered", {"state": {"answer": ANSWER, "request": REQUEST, "source": SOURCE},
                             "questions": {"halu": {"preset": "halu"}, "domain": DOMAIN}})
    add("choice_string_state", {"state": "Is the dose of four grams safe for an adult patient?",
                                "questions": {"route": q_choice(
                                    dose="a question about a dose", visit="a visit request",
                                    other=None)}})
    add("choice_object_descriptions", {"state": {"prompt": "Book a visit for today.",
                                                 "tools": ["calendar", "email"]},
                                       "questions": {"act": {
                                           "type": "choice", "instructions": {"task": "route",
                                                                              "scale": [1, 2]},
                                           "criteria": {"book": {"verb": "book", "n": 1},
                                                        "mail": ["send", "email"],
                                                        "none": "nothing"}}}})
    add("noul_criteria", {"state": {"request": REQUEST, "answer": ANSWER},
                          "questions": {
                              "unsafe": {"type": "noul", "instructions": "Is the answer unsafe?",
                                         "over": "answer",
                                         "criteria": {"false": "The answer is safe.",
                                                      "true": "The answer exceeds the maximum dose."}},
                              "asks": {"type": "noul", "instructions": "Does the user ask a question?",
                                       "criteria": {"true": "Yes, a question.", "false": None}}}})
    add("score_object_levels", {"state": REQUEST, "questions": {"level": {
        "type": "score", "instructions": "How detailed is the request?",
        "criteria": [{"name": "low"}, {"name": "high", "weight": 2}, "in between", ["a", 1]]}}})
    add("score_ten_levels", {"state": {"user": REQUEST, "context": SOURCE}, "questions": {"r": {
        "type": "score", "instructions": "Rate the request from 0 to 9.", "over": ["user", "context"],
        "criteria": [str(i) for i in range(10)]}}})
    add("relevance_preset", {"state": {"request": "maximum paracetamol dose", "document": SOURCE},
                             "questions": {"rel": {"preset": "relevance"}}})
    add("set_given_threshold", {"state": GOLDEN_STATE, "questions": {
        "topics": {"type": "set", "instructions": "Which topics appear?", "threshold": 0.5,
                   "criteria": {"medication": "drugs or doses", "billing": "payments",
                                "travel": "trips", "food": None}},
        "none": {"type": "set", "instructions": "Which topics appear?", "threshold": 1,
                 "criteria": {"medication": "drugs"}},
        "all": {"type": "set", "instructions": "Which topics appear?", "threshold": 0,
                "criteria": {"medication": "drugs", "billing": "payments"}}}})
    add("set_calibration_key", {"state": REQUEST, "questions": {
        "r_cats": {"type": "set", "instructions": "Which categories?",
                   "criteria": {"health": "health", "money": "money", "law": "law"}}}})
    add("span_pii_labels_subset", {"state": {"request": REQUEST + " Thanks!"}, "questions": {
        "names": q_span({"PERSON": "a person's name", "EMAIL_ADDRESS": "an e-mail address"})}})
    add("span_broad_head", {"state": GOLDEN_STATE, "questions": {
        "places": q_span({"city": "a city name", "drug": "a medicine"}, over="source"),
        "explicit": q_span({"PERSON": "a name"}, over="request", head="broad")}})
    add("span_router_explicit", {"state": GOLDEN_STATE, "questions": {
        "dose": q_span({"amount": "an amount of a drug"}, over="answer", head="router")}})
    add("span_alias_hallucinated", {"state": GOLDEN_STATE, "questions": {
        "claims": q_span({"Hallucinated": "a claim the source does not support"})}})
    add("span_halu_given_threshold", {"state": GOLDEN_STATE, "questions": {
        "halu": {"preset": "halu", "threshold": 0.25},
        "toxic": q_span({"insult": "an insult"}, over="answer", head="router")}})
    add("span_clip_shared_part", {"state": {
        "source": SOURCE, "notes": "Call Ann Lee at +1 415-555-0123 or ann.lee@example.com.",
        "question": "Is 6 grams too much?"}, "questions": {
        "pii": {"preset": "pii", "over": "notes"},
        "contacts": q_span({"PHONE_NUMBER": "a phone", "EMAIL_ADDRESS": "an e-mail"},
                           over="notes", threshold=0.3)}})
    add("span_clip_user_keys", {"state": {
        "request": "Email tom.baker@example.com today.", "prompt": "Tom Baker asks for a visit."},
        "questions": {"who": q_span({"PERSON": "a name"}, over="prompt", threshold=0.6)}})
    add("state_array", {"state": ["Tom Baker", {"email": "tom.baker@example.com", "age": 42}],
                        "questions": {"pii": {"preset": "pii"}, "kind": q_choice()}})
    add("state_json_string", {"state": json.dumps({"request": REQUEST, "answer": ANSWER}),
                              "questions": {"halu": {"preset": "halu"}}})
    add("unicode_text", {"state": {"request": "Café déjà vu à São Paulo — Zürich 東京 你好, "
                                              "mail ana@exämple.com or visit www.example.org/ok)."},
                         "questions": {"pii": {"preset": "pii"},
                                       "lang": q_choice(en="English", pt="Portuguese")}})
    add("urls_and_handles", {"state": "See https://example.org/a?b=1. or (www.example.com/x). "
                                      "Ping @alice_1 and U.S.A. at +1-555-0100!",
                             "questions": {"links": q_span({"URL": "a web address",
                                                            "HANDLE": "a user handle"}),
                                           "pii": {"preset": "pii", "threshold": 0.5}}})
    add("three_span_rows", {"state": GOLDEN_STATE, "questions": {
        "pii": {"preset": "pii", "over": "request"}, "halu": {"preset": "halu"},
        "amounts": q_span({"amount": "a quantity"}, over="source"),
        "domain": DOMAIN}})
    add("invalid_mixed", {"state": GOLDEN_STATE, "questions": {
        "ok": DOMAIN,
        "extra": {"type": "choice", "instructions": "x", "criteria": {"a": "1", "b": "2"},
                  "colour": "red"},
        "badtype": {"type": "ranking", "instructions": "x"},
        "notobj": ["choice"],
        "noinstr": {"type": "noul"},
        "badover": {"type": "noul", "instructions": "x", "over": "nowhere"},
        "twoparts": q_span({"A": "a"}, over=["user", "context"]),
        "badthr": {"type": "set", "instructions": "x", "criteria": {"a": "1"}, "threshold": 1.5},
        "badhead": q_span({"A": "a"}, head="middle"),
        "onelevel": {"type": "score", "instructions": "x", "criteria": ["only"]},
        "blank": {"type": "choice", "instructions": "   ", "criteria": {"a": "1", "b": "2"}},
        "s": {"type": "set", "instructions": "x", "criteria": {"a": "1", "b": "2"}},
        "s.b": {"type": "noul", "instructions": "Is b there?"},
        "preset_bad": {"preset": "toxic"},
        "span_ok": q_span({"PERSON": "a name"}, over="request")}})
    add("duplicate_keys", None, raw=(
        b'{"state": "Tom Baker asks about a dose.", "questions": {"q": {"type": "choice", '
        b'"instructions": "first", "criteria": {"a": "1", "b": "2"}}, "r": {"type": "noul", '
        b'"instructions": "Is it a question?"}, "q": {"type": "noul", "instructions": "last"}}, '
        b'"state": "Tom Baker asks about the maximum dose."}'))
    long_answer = document(rng, 1300)
    add("long_span_windows", {"state": {"request": REQUEST, "answer": long_answer},
                              "questions": {"pii": {"preset": "pii", "over": "answer"},
                                            "domain": DOMAIN}})
    # Small budget (fixtures/answers/tiny-small: max_length 512, hybrid_rmax 128).
    add("small_shrink_unread", {"state": {"request": REQUEST, "source": document(rng, 400)},
                                "questions": {"domain": DOMAIN}}, bundle="small")
    add("small_cut_read", {"state": document(rng, 500),
                           "questions": {"asks": {"type": "noul", "instructions": "A question?"},
                                         "level": {"type": "score", "instructions": "How long?",
                                                   "criteria": ["short", "long"]}}},
        bundle="small")
    add("small_windows", {"state": {"request": REQUEST, "answer": document(rng, 160)},
                          "questions": {"pii": {"preset": "pii", "over": "answer"},
                                        "halu": q_span({"unsupported": "a claim"}, threshold=0.7)}},
        bundle="small")
    big = {f"opt{i}": f"option number {i} of the long list" for i in range(40)}
    add("small_row_too_long", {"state": GOLDEN_STATE, "questions": {
        "many": {"type": "choice", "instructions": "Pick one.", "criteria": big},
        "first_span": q_span({"PERSON": "a name"}, over="request"),
        "second_span": q_span({"EMAIL_ADDRESS": "an e-mail"}, over="request"),
        "jailbreak": {"type": "noul", "instructions": "Jailbreak?"}}}, bundle="small")
    add("small_413", {"state": REQUEST, "questions": {
        "many": {"type": "choice", "instructions": "Pick one.", "criteria": big}}}, bundle="small")
    # Rejections.
    add("reject_missing_state", {"questions": {"domain": DOMAIN}})
    add("reject_blank_state_bad_questions", {"state": "   ", "questions": []})
    add("reject_empty_questions", {"state": REQUEST, "questions": {}})
    add("reject_nan_state", None, raw=b'{"state": {"request": NaN}, "questions": {"q": '
                                      b'{"type": "noul", "instructions": "x"}}}')
    add("reject_all_invalid", {"state": REQUEST, "questions": {
        "a": {"type": "choice", "instructions": "x", "criteria": {"only": "1"}},
        "b": {"type": "nope"}}})
    add("reject_model_type", {"model": 7, "state": REQUEST, "questions": {"q": q_choice()}})
    add("reject_json_truncated", None, raw=b'{"state": "hi", "questions": {')
    add("reject_not_object", None, raw=b'["state", "questions"]')
    add("reject_invalid_utf8", None, raw=b'{"state": "caf\xe9", "questions": {}}')
    add("reject_surrogate", None, raw=b'{"state": "x\\ud800", "questions": {}}')
    add("reject_record_too_large", {"state": REQUEST, "questions": {"q": q_choice()}},
        max_request_bytes=64)
    return c


# --------------------------------------------------------------------------- references
def _surrogates(v) -> bool:
    if isinstance(v, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in v)
    if isinstance(v, list):
        return any(_surrogates(x) for x in v)
    if isinstance(v, dict):
        return any(_surrogates(k) or _surrogates(x) for k, x in v.items())
    return False


def worker_check(body: bytes, limit: int):
    """The worker's record checks (worker/record_in.h, docs/contract.md Decision 4):
    size, then Python's json.loads(bytes) (UTF-8 with surrogatepass; the error
    offset in bytes), unpaired surrogates, a top-level object. None = admitted."""
    def reject(status, loc, msg, kind):
        return {"status": status, "detail": [{"loc": loc, "msg": msg, "type": kind}]}
    if len(body) > limit:
        return reject(413, ["body"], f"Data should have at most {limit} bytes", "too_long")
    if body.startswith(b"\xef\xbb\xbf"):
        return reject(400, ["body", 0], "JSON decode error: Unexpected UTF-8 BOM (decode using "
                      "utf-8-sig)", "json_invalid")
    try:
        text = body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        return reject(400, ["body", e.start], f"JSON decode error: {e}", "json_invalid")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        offset = len(text[:e.pos].encode("utf-8", "surrogatepass"))
        return reject(400, ["body", offset], f"JSON decode error: {e.msg}", "json_invalid")
    if _surrogates(value):
        return reject(400, ["body"], "the request contains an unpaired surrogate", "json_invalid")
    if not isinstance(value, dict):
        return reject(400, ["body"], "Input should be a valid dictionary or object to extract "
                      "fields from", "model_attributes_type")
    return None


def margins(env: dict, ref: Reference) -> float:
    """Smallest logit-space distance of a decision from flipping: set labels vs their
    threshold, choice top two; span questions add inf, or 0.0 when their threshold
    or spans change under 1e-4 logit noise (answers.span_stability via
    Reference.trace). C and reference logits differ by ~1e-5, so >= 1e-3 is safe."""
    out = [math.inf] + list(ref.trace or [])
    for qid, s in (env.get("sets") or {}).items():
        th = env["thresholds"][qid]
        if 0.0 < th < 1.0:
            out += [abs(A.logit(p) - A.logit(th)) for p in s["probabilities"].values()]
    for qid, a in env["answers"].items():
        if a.get("type") == "choice" and "probabilities" in a:
            p = sorted(a["probabilities"].values(), reverse=True)
            if len(p) > 1:
                out.append(math.log(p[0]) - math.log(p[1]))
    return min(out)


def make_small_bundle() -> None:
    if SMALL.exists():
        shutil.rmtree(SMALL)
    SMALL.mkdir(parents=True)
    for f in sorted(TINY.iterdir()):
        if f.name not in ("config.json", "MODEL_MANIFEST.json", "SHA256SUMS"):
            shutil.copyfile(f, SMALL / f.name)
    cfg = json.loads((TINY / "config.json").read_text())
    cfg.update(SMALL_CONFIG)
    cfg["model_name"] = cfg["model_name"] + "-small-budget"
    (SMALL / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    names = sorted(p.name for p in SMALL.iterdir())
    digests = {n: hashlib.sha256((SMALL / n).read_bytes()).hexdigest() for n in names}
    manifest = json.loads((TINY / "MODEL_MANIFEST.json").read_text())
    manifest["files_sha256"] = digests
    manifest["generator"]["derived"] = {"recipe": RECIPE, "from": "fixtures/tiny-vela",
                                        "config": SMALL_CONFIG}
    (SMALL / "MODEL_MANIFEST.json").write_text(json.dumps(manifest, indent=2, sort_keys=True)
                                               + "\n")
    digests["MODEL_MANIFEST.json"] = hashlib.sha256((SMALL / "MODEL_MANIFEST.json")
                                                    .read_bytes()).hexdigest()
    (SMALL / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in sorted(digests.items())))


def versions() -> dict:
    import make_plan_goldens as mpg
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__, "numpy": np.__version__,
            "plan_recipe_sha256": hashlib.sha256(Path(mpg.__file__).read_bytes()).hexdigest()}


def schema_check(rows: list[dict]) -> dict:
    """Cross-check schemas/ and the goldens with Python `jsonschema` (when installed)."""
    try:
        import jsonschema
    except ImportError:
        return {"skipped": "jsonschema is not installed"}
    schemas = {n: json.loads((ROOT / "schemas" / f"{n}.schema.json").read_text())
               for n in ("request", "envelope", "rejection")}
    v = {}
    for n, s in schemas.items():
        jsonschema.Draft202012Validator.check_schema(s)
        v[n] = jsonschema.Draft202012Validator(s)
    counts = {"envelopes": 0, "rejections": 0, "requests_valid": 0, "requests_invalid": 0}
    source = {"topic": "requests", "partition": 0, "offset": 0, "timestamp": None}
    for i, r in enumerate(rows):
        wrapped = {"request_id": r["name"], "source": {**source, "offset": i},
                   **r["expected"]}
        name = "envelope" if r["status"] == 200 else "rejection"
        errors = list(v[name].iter_errors(wrapped))
        assert not errors, f"{r['name']}: {errors[0].message}"
        counts[name + "s"] += 1
        verdict = request_verdict(r)
        if verdict is not None:
            ok = v["request"].is_valid(json.loads(body_bytes(r)))
            assert ok == verdict, f"{r['name']}: request schema says {ok}, expected {verdict}"
            counts["requests_valid" if ok else "requests_invalid"] += 1
    from importlib.metadata import version
    return {"jsonschema": version("jsonschema"), **counts}


STRUCTURAL = {"missing", "dict_type", "too_short", "string_type", "model_type", "literal_error",
              "extra_forbidden"}


def request_verdict(row: dict):
    """True: must validate against request.schema.json; False: must not; None: not judged.
    Judged: 200 with every question answered without invalid_question (valid), and 422
    whose triples are all structural (invalid). The test in C applies the same rule."""
    if row["status"] == 200:
        bad = any(a.get("error") == "invalid_question" for a in row["expected"]["answers"].values())
        return None if bad else True
    if row["status"] == 422:
        return False if all(d["type"] in STRUCTURAL for d in row["expected"]["detail"]) else None
    return None


def body_bytes(row: dict) -> bytes:
    return row["body"].encode() if "body" in row else base64.b64decode(row["body_b64"])


def write_goldens() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    make_small_bundle()
    rng = random.Random(SEED)
    refs = {}
    recorder: dict = {}
    rows, notes = [], []
    t_all = time.perf_counter()
    for case in cases(rng):
        limit = case.get("max_request_bytes", MAX_REQUEST_BYTES)
        expected = worker_check(case["body"], limit)
        ref = None
        if expected is None:
            if case["bundle"] not in refs:
                shared = next(iter(refs.values())).model if refs else None
                refs[case["bundle"]] = Reference(BUNDLES[case["bundle"]], shared)
                refs[case["bundle"]].recorder = recorder
                refs[case["bundle"]].margins = True
            ref = refs[case["bundle"]]
            expected = ref.score(case["body"])
        status = expected["status"] if "status" in expected else 200
        row = {"name": case["name"], "bundle": case["bundle"]}
        try:
            row["body"] = case["body"].decode("utf-8")
        except UnicodeDecodeError:
            row["body_b64"] = base64.b64encode(case["body"]).decode()
        if "max_request_bytes" in case:
            row["max_request_bytes"] = case["max_request_bytes"]
        row.update({"status": status, "expected": expected})
        rows.append(row)
        m = margins(expected, ref) if status == 200 else None
        notes.append({"name": case["name"], "status": status,
                      "margin": m if m is not None and math.isfinite(m) else None,
                      "input_tokens": expected["usage"]["input_tokens"] if status == 200 else None})
        if m is not None and m < 1e-3:
            raise SystemExit(f"{RECIPE}: case {case['name']} is fragile (margin {m:.3g}): "
                             "a decision sits within C-vs-reference noise; change its input")
        print(f"  {case['name']:34s} {case['bundle']:5s} status {status}"
              + (f" tokens {expected['usage']['input_tokens']:5d} margin {m:.3g}"
                 if status == 200 else f" {expected['detail'][0]['type']}"))
    elapsed = time.perf_counter() - t_all
    with open(OUT / "cases.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            f.write(dumps(row) + "\n")
    write_hidden(recorder)
    check = schema_check(rows)
    digests = {name: {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                      for p in sorted(path.iterdir())} for name, path in BUNDLES.items()}
    side = {"recipe": RECIPE, "seed": SEED, "versions": versions(),
            "reference": "tools/vela_ref (plan: tools/make_plan_goldens.py; backbone: "
                         "transformers Qwen3_5TextModel FP32 eager, prefix+block per block; "
                         "heads: tools/make_head_goldens.py torch FP32; answers: float64 "
                         "NumPy, float32 span decoder)",
            "bundles": {"tiny": "fixtures/tiny-vela", "small": "fixtures/answers/tiny-small"},
            "small_config": SMALL_CONFIG, "bundle_sha256": digests,
            "cases": notes, "jsonschema_check": check}
    (OUT / "SOURCE.json").write_text(json.dumps(side, indent=1, ensure_ascii=False) + "\n")
    for name in ("cases.jsonl", "hidden.bin", "SOURCE.json"):
        data = (OUT / name).read_bytes()
        print(f"{RECIPE}: wrote fixtures/answers/{name} {len(data)} B "
              f"sha256 {hashlib.sha256(data).hexdigest()}")
    print(f"  {len(rows)} cases ({sum(r['status'] == 200 for r in rows)} envelopes) in "
          f"{elapsed:.1f} s; jsonschema: {check}")
    print(f"  wrote fixtures/answers/tiny-small/ ({len(digests['small'])} files)")


def write_hidden(recorder: dict) -> None:
    hidden = next(iter(recorder.values()))[1].shape[1]
    blob = bytearray(b"VWAHID01" + struct.pack("<III", 1, hidden, len(recorder)))
    for key in sorted(recorder):
        idx, rows = recorder[key]
        blob += key.encode() + struct.pack("<I", len(idx))
        blob += np.asarray(idx, dtype="<u4").tobytes() + rows.tobytes()
    (OUT / "hidden.bin").write_bytes(bytes(blob))


# --------------------------------------------------------------------------- bench
def bench(bundle: Path, requests: Path, reps: int, threads: int) -> None:
    """Per-request latency of the reference pipeline; one JSON line on stdout."""
    torch.set_num_threads(threads)
    ref = Reference(bundle)
    bodies = [line.encode() for line in requests.read_text(encoding="utf-8").splitlines()
              if line.strip()]
    ref.score(bodies[0])  # warm-up (first-call allocations)
    ref.timing = dict.fromkeys(ref.timing, 0.0)
    lat = []
    t0 = time.perf_counter()
    for _ in range(reps):
        for b in bodies:
            t = time.perf_counter()
            ref.score(b)
            lat.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    lat.sort()
    total = sum(ref.timing.values()) or 1.0
    print(json.dumps({"impl": "python-reference", "bundle": str(bundle), "requests": len(lat),
                      "threads": threads, "req_per_s": len(lat) / wall,
                      "p50_ms": 1e3 * statistics.median(lat),
                      "p99_ms": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
                      "share": {k: v / total for k, v in ref.timing.items()}}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--bundle", type=Path)
    ap.add_argument("--requests", type=Path)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.bench:
        if not args.bundle or not args.requests:
            ap.error("--bench needs --bundle and --requests")
        bench(args.bundle, args.requests, args.reps, args.threads)
    else:
        write_goldens()


if __name__ == "__main__":
    main()
