#!/usr/bin/env python3
"""Goldens for tests/test_eval.c (`vela-worker eval`, docs/eval.md).

Writes into fixtures/eval/:
  results.jsonl, baseline.jsonl  two replay files (worker/sink.c write_line
                                 shape) of the same seeded synthetic records:
                                 envelopes with choice, noul, score, set (fanned
                                 out Nouls + sets.<qid>) and span questions,
                                 per-question errors, rejections, dead letters,
                                 duplicate ids, bad lines, ids on one side only;
  labels.jsonl                   labels for most of them, with a few that do not
                                 fit (wrong type, not an option, unknown qid),
                                 duplicates, ids without a result and bad lines;
  expected.json                  what `vela-worker eval --results results.jsonl
                                 --baseline baseline.jsonl --labels labels.jsonl
                                 --json --top 12` must give:
                                   accuracy, macro/micro F1, per-label P/R/F1,
                                   ROC AUC, Brier, confusion, MAE, RMSE from
                                   scikit-learn; ECE, reliability bins, exact
                                   and overlap span metrics and the A/B figures
                                   written out below (characters as Python sets,
                                   independent of the C interval arithmetic);
  demo_labels.jsonl              hand-written labels for fixtures/requests/*.json
                                 (scripts/demo; request id = file name);
  SOURCE.json                    this recipe, its seed and versions.
Deterministic: random.Random(SEED).

  .venv/bin/python tools/make_eval_goldens.py
"""
import json
import math
import platform
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import sklearn
from sklearn.metrics import (accuracy_score, brier_score_loss, confusion_matrix, f1_score,
                             mean_absolute_error, precision_recall_fscore_support,
                             roc_auc_score, root_mean_squared_error)
from sklearn.preprocessing import MultiLabelBinarizer

SEED = 20260720
N = 120
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "eval"
INTENT = ["refund", "shipping", "other"]
LANG = ["en", "de", "fr", "ja"]
TAGS = ["refund", "shipping", "damage", "other"]
PII = ["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER"]
TOP = 12


def dumps(o):
    return json.dumps(o, ensure_ascii=False, separators=(",", ":"))


# ---- synthetic envelopes --------------------------------------------------------

def softmax_probs(rng, labels, skew):
    w = [rng.random() ** 2 for _ in labels]
    w[skew] += rng.random()
    s = sum(w)
    return {k: v / s for k, v in zip(labels, w)}


def noul_p(rng):
    r = rng.random()
    if r < 0.08:
        return 0.5  # the boundary: counts as yes
    if r < 0.12:
        return rng.choice([0.0, 1.0])
    p = rng.random()
    return round(p, 2) if rng.random() < 0.5 else p  # rounded values make ties


def spans(rng, text_len=80, k=None):
    out = []
    for _ in range(rng.randint(0, 4) if k is None else k):
        s = rng.randint(0, text_len - 2)
        e = rng.randint(s + 1, min(text_len, s + 12))
        out.append({"label": rng.choice(PII), "start": s, "end": e, "text": "x" * (e - s),
                    "probability": rng.random()})
    return out


def envelope(rng, i, drift=None):
    """One 200 envelope; `drift` (another envelope) makes a perturbed copy of it."""
    if drift is None:
        a = {}
        pi = softmax_probs(rng, INTENT, rng.randrange(3))
        a["intent"] = {"type": "choice", "choice": max(pi, key=pi.get), "confidence": 0.3,
                       "probabilities": pi, "abstain_probability": 0.1}
        pl = softmax_probs(rng, LANG, rng.randrange(3))
        a["lang"] = {"type": "choice", "choice": max(pl, key=pl.get), "confidence": 0.2,
                     "probabilities": pl, "abstain_probability": 0.1}
        a["angry"] = {"type": "noul", "noul": noul_p(rng)}
        ps = softmax_probs(rng, ["0", "1", "2", "3"], rng.randrange(4))
        a["sev"] = {"type": "score", "score": sum(int(k) * v for k, v in ps.items()),
                    "confidence": 0.4, "legend": {k: k for k in ps}, "probabilities": ps}
        tp = {t: rng.random() for t in TAGS}
        for t in TAGS:
            a["tags." + t] = {"type": "noul", "noul": tp[t]}
        sp = spans(rng)
        a["pii"] = {"type": "noul", "noul": max([s["probability"] for s in sp], default=0.0)}
        env = {"answers": a, "usage": {"input_tokens": 100 + i, "output_tokens": 0},
               "spans": {"pii": sp}, "span_heads": {"pii": "router"},
               "sets": {"tags": {"selected": [t for t in TAGS if tp[t] > 0.5],
                                 "probabilities": tp}},
               "thresholds": {"pii": 0.5, "tags": 0.5}}
        # Per-question errors, as the engine writes them.
        if i % 23 == 5:
            env["answers"]["angry"] = {"type": "noul", "error": "max_length_exceeded"}
        if i % 29 == 7:
            for t in TAGS:
                del env["answers"]["tags." + t]
            env["answers"]["tags"] = {"type": "set", "error": "invalid_question",
                                      "message": "m", "loc": ["body", "questions", "tags"]}
            del env["sets"]
            env["thresholds"].pop("tags")
        if i % 31 == 3:
            env["answers"]["pii"] = {"type": "span", "error": "max_length_exceeded"}
            del env["spans"], env["span_heads"]
            env["thresholds"].pop("pii")
        return env
    env = json.loads(json.dumps(drift))
    a = env["answers"]
    for q in ("intent", "lang"):
        if "error" in a[q]:
            continue
        p = {k: max(1e-6, v + rng.uniform(-0.25, 0.25)) for k, v in a[q]["probabilities"].items()}
        s = sum(p.values())
        a[q]["probabilities"] = {k: v / s for k, v in p.items()}
        a[q]["choice"] = max(a[q]["probabilities"], key=a[q]["probabilities"].get)
    if "error" not in a["angry"]:
        a["angry"]["noul"] = min(1.0, max(0.0, a["angry"]["noul"] + rng.uniform(-0.3, 0.3)))
    a["sev"]["score"] = min(3.0, max(0.0, a["sev"]["score"] + rng.uniform(-0.8, 0.8)))
    if "sets" in env:
        tp = env["sets"]["tags"]["probabilities"]
        for t in TAGS:
            if rng.random() < 0.3:
                tp[t] = rng.random()
            a["tags." + t]["noul"] = tp[t]
        env["sets"]["tags"]["selected"] = [t for t in TAGS if tp[t] > 0.5]
    if "spans" in env and rng.random() < 0.4:
        env["spans"]["pii"] = spans(rng)
    return env


def rejection():
    return {"status": 422, "detail": [{"loc": ["body", "state"], "msg": "Field required",
                                       "type": "missing"}]}


def line(rid, status, value, off):
    value = dict({"request_id": rid, "source": {"topic": "requests", "partition": 0,
                                               "offset": off, "timestamp": None}}, **value)
    return dumps({"source": f"requests:0:{off}", "request_id": rid, "vela_status": status,
                  "value": value})


def dead(rid, off, kind="poison"):
    return dumps({"source": f"requests:0:{off}", "request_id": rid, "dead_letter": kind})


def make_label(rng, env):
    """Labels for a 200 envelope, mostly agreeing with its answers."""
    a, lab = env["answers"], {}
    if rng.random() < 0.9:
        lab["intent"] = a["intent"]["choice"] if rng.random() < 0.6 else rng.choice(INTENT)
    if rng.random() < 0.8:
        lab["lang"] = a["lang"]["choice"] if rng.random() < 0.5 else rng.choice(LANG[:3])
    if rng.random() < 0.9:
        p = a["angry"].get("noul", rng.random())
        lab["angry"] = (rng.random() < p) if rng.random() < 0.8 else (rng.random() < 0.5)
    if rng.random() < 0.85:
        lab["sev"] = rng.randrange(4) if rng.random() < 0.7 else round(rng.uniform(0, 3), 1)
    if rng.random() < 0.85:
        sel = env.get("sets", {}).get("tags", {}).get("selected", [])
        lab["tags"] = [t for t in TAGS if (t in sel) != (rng.random() < 0.25)]
    if rng.random() < 0.85:
        pred = env.get("spans", {}).get("pii", [])
        gold = [{"start": s["start"], "end": s["end"], "label": s["label"]}
                for s in pred if rng.random() < 0.6]
        for s in spans(rng, k=rng.randint(0, 2)):
            if rng.random() < 0.5 and gold:  # a shifted copy: overlaps, not exact
                g = dict(rng.choice(gold))
                g["end"] = g["end"] + 1
                gold.append(g)
            else:
                gold.append({"start": s["start"], "end": s["end"], "label": s["label"]})
        lab["pii"] = gold
    return lab


def build(rng):
    """Lines of the three files, and the records as eval must read them."""
    res, base, labs = [], [], []
    for i in range(N):
        rid = f"r{i:04d}"
        kind = "dead" if i % 37 == 11 else "rej" if i % 19 == 4 else "ok"
        env = envelope(rng, i) if kind == "ok" else None
        if kind == "dead":
            res.append(dead(rid, i))
        elif kind == "rej":
            res.append(line(rid, 422, rejection(), i))
        else:
            res.append(line(rid, 200, env, i))
        # The baseline: the same record, perturbed; a few status changes, a few missing.
        if i % 41 == 9:
            pass  # only in results
        elif kind == "ok" and i % 17 == 2:
            base.append(line(rid, 422, rejection(), i))
        elif kind == "rej" and i % 3 == 0:
            base.append(line(rid, 200, envelope(rng, i), i))
        elif kind == "ok":
            base.append(line(rid, 200, envelope(rng, i, drift=env), i))
        else:
            base.append(res[-1])
        if kind == "ok" and i % 11 != 6:
            labs.append(dumps({"request_id": rid, "labels": make_label(rng, env)}))
        elif kind == "rej" and i % 2 == 0:
            labs.append(dumps({"request_id": rid, "labels": {"intent": "refund"}}))
    # Duplicates (the first line is used), bad lines, one-sided ids.
    res.insert(20, line("r0003", 200, envelope(rng, 3), 3))
    res.insert(50, '{"request_id": "broken", "vela_status": 200, "value": {')
    res.insert(70, '{"request_id": "r9999", "vela_status": 200, "value": {"answers": 7}}')
    res.append(line("r0100", 200, envelope(rng, 100), 100))
    base.append(line("b-only-1", 200, envelope(rng, 1000), 1000))
    base.append(line("b-only-2", 422, rejection(), 1001))
    base.insert(10, base[3])
    base.insert(30, "not json")
    labs.insert(5, labs[2])
    labs.insert(15, "{]")
    labs.append(dumps({"request_id": "no-such-result", "labels": {"intent": "refund"}}))
    labs.append(dumps({"labels": {"intent": "refund"}}))
    # Labels that do not fit their question: counted, not used. Each goes to a
    # labels line whose record answered that question (else it would not count).
    answered = {}
    for ln in res:
        try:
            o = json.loads(ln)
            if o.get("vela_status") == 200 and o["request_id"] not in answered:
                answered[o["request_id"]] = questions("200", o["value"])
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    j = 30
    for qid, bad in [("intent", 3), ("intent", "billing"), ("angry", "yes"), ("sev", "2"),
                     ("tags", "refund"), ("tags", ["nope"]), ("tags", ["refund", "refund"]),
                     ("pii", [{"start": 5, "end": 2, "label": "PERSON"}]),
                     ("pii", [{"start": 1, "end": 2}]), ("nosuchq", True)]:
        while True:
            j += 1
            row = json.loads(labs[j]) if labs[j].startswith("{\"request_id") else None
            qs = answered.get(row["request_id"]) if row else None
            if qs is not None and (qid == "nosuchq" or (qid in qs and qs[qid][1] is not None)):
                break
        row["labels"][qid] = bad
        labs[j] = dumps(row)
    return res, base, labs


# ---- reading back, as docs/eval.md defines it --------------------------------------

def read_replay(lines):
    """First occurrence per id of each parseable record; counts like eval's."""
    recs, counts = {}, {"lines": 0, "records": 0, "duplicates": 0, "bad_lines": 0, "status": {}}
    order = []
    for ln in lines:
        counts["lines"] += 1
        try:
            o = json.loads(ln)
            assert isinstance(o, dict) and isinstance(o.get("request_id"), str)
            if "dead_letter" in o:
                status = "dead_letter:" + o["dead_letter"]
            else:
                assert isinstance(o["vela_status"], int) and isinstance(o["value"], dict)
                status = str(o["vela_status"])
                if o["vela_status"] == 200:
                    assert isinstance(o["value"]["answers"], dict)
        except (ValueError, AssertionError, KeyError, TypeError):
            counts["bad_lines"] += 1
            continue
        if o["request_id"] in recs:
            counts["duplicates"] += 1
            continue
        counts["records"] += 1
        counts["status"][status] = counts["status"].get(status, 0) + 1
        recs[o["request_id"]] = (status, o.get("value"))
        order.append(o["request_id"])
    return recs, order, counts


def questions(status, env):
    """qid -> (type, answer or None for an error), in envelope order (set at its first
    fanned-out key)."""
    out = {}
    if status != "200":
        return out
    sets, sp = env.get("sets", {}), env.get("spans", {})
    for k, a in env["answers"].items():
        if "error" in a:
            out[k] = (a.get("type"), None)
        elif k in sp:
            out[k] = ("span", sp[k])
        elif any(k.startswith(s + ".") and k[len(s) + 1:] in v["probabilities"]
                 for s, v in sets.items()):
            s = next(s for s in sets if k.startswith(s + "."))
            out.setdefault(s, ("set", sets[s]))
        else:
            out[k] = (a["type"], a)
    return out


def label_ok(qtype, ans, v):
    if qtype == "choice":
        return isinstance(v, str) and v in ans["probabilities"]
    if qtype == "noul":
        return isinstance(v, bool)
    if qtype == "score":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if qtype == "set":
        return (isinstance(v, list) and all(isinstance(x, str) for x in v)
                and all(x in ans["probabilities"] for x in v) and len(set(v)) == len(v))
    return isinstance(v, list) and all(
        isinstance(s, dict) and isinstance(s.get("start"), int) and isinstance(s.get("end"), int)
        and not isinstance(s.get("start"), bool) and isinstance(s.get("label"), str)
        and 0 <= s["start"] <= s["end"] for s in v)


def ece(conf, correct):
    """15 equal-width bins, bin = min(floor(15 c), 14); with the bins themselves."""
    n = [0] * 15
    cs = [0.0] * 15
    ok = [0] * 15
    for c, r in zip(conf, correct):
        b = min(int(c * 15), 14)
        n[b] += 1
        cs[b] += c
        ok[b] += r
    total = sum(n)
    e = sum(n[b] / total * abs(ok[b] / n[b] - cs[b] / n[b]) for b in range(15) if n[b]) \
        if total else None
    bins = [{"n": n[b], "confidence": cs[b] / n[b] if n[b] else None,
             "accuracy": ok[b] / n[b] if n[b] else None} for b in range(15)]
    return e, bins


def nan_none(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def choice_metrics(pairs):
    y = [g for g, _, _ in pairs]
    p = [a["choice"] for _, a, _ in pairs]
    labels = sorted(set(y) | set(p))
    cm = confusion_matrix(y, p, labels=labels)
    conf = [max(a["probabilities"].values()) for _, a, _ in pairs]
    e, bins = ece(conf, [g == a["choice"] for g, a, _ in pairs])
    return {"accuracy": accuracy_score(y, p), "macro_f1": f1_score(y, p, average="macro"),
            "ece": e, "reliability": bins,
            "confusion": {labels[i]: {labels[j]: int(cm[i][j]) for j in range(len(labels))
                                      if cm[i][j]} for i in range(len(labels))}}


def noul_metrics(pairs):
    y = np.array([bool(g) for g, _, _ in pairs])
    p = np.array([a["noul"] for _, a, _ in pairs])
    conf = [max(x, 1 - x) for x in p]
    e, bins = ece(conf, [(x >= 0.5) == g for x, g in zip(p, y)])
    return {"auroc": roc_auc_score(y, p) if len(set(y)) == 2 else None,
            "accuracy": accuracy_score(y, p >= 0.5), "brier": brier_score_loss(y, p),
            "ece": e, "reliability": bins}


def score_metrics(pairs):
    y = [float(g) for g, _, _ in pairs]
    s = [a["score"] for _, a, _ in pairs]
    return {"mae": mean_absolute_error(y, s), "rmse": root_mean_squared_error(y, s)}


def set_metrics(pairs):
    gold = [g for g, _, _ in pairs]
    pred = [a["selected"] for _, a, _ in pairs]
    seen = sorted(set(x for g in gold for x in g) | set(x for p in pred for x in p))
    mlb = MultiLabelBinarizer(classes=seen)
    yt, yp = mlb.fit_transform(gold), mlb.transform(pred)
    pr, rc, f, sup = precision_recall_fscore_support(yt, yp, average=None, zero_division=np.nan)
    return {"micro_f1": f1_score(yt, yp, average="micro"),
            "macro_f1": f1_score(yt, yp, average="macro"),
            "per_label": {seen[i]: {"precision": nan_none(pr[i]), "recall": nan_none(rc[i]),
                                    "f1": nan_none(f[i]), "support": int(sup[i])}
                          for i in range(len(seen))}}


def prf(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None
    return p, r, f


def span_metrics(pairs):
    """Exact: (start, end, label) sets per record, micro; overlap: per record and label,
    the characters covered (Python sets of code point indices), micro."""
    tp = fp = fn = 0
    per = {}
    ci = cp = cg = 0
    for gold, pred, _ in pairs:
        g = {(s["start"], s["end"], s["label"]) for s in gold}
        p = {(s["start"], s["end"], s["label"]) for s in pred}
        tp += len(g & p)
        fp += len(p - g)
        fn += len(g - p)
        for lab in {t[2] for t in g | p}:
            c = per.setdefault(lab, [0, 0, 0])
            c[0] += len({t for t in g & p if t[2] == lab})
            c[1] += len({t for t in p - g if t[2] == lab})
            c[2] += len({t for t in g - p if t[2] == lab})
            gc = set().union(*[range(s, e) for s, e, lb in g if lb == lab])
            pc = set().union(*[range(s, e) for s, e, lb in p if lb == lab])
            ci += len(gc & pc)
            cp += len(pc)
            cg += len(gc)
    p, r, f = prf(tp, fp, fn)
    op, orc, of = prf(ci, cp - ci, cg - ci)
    out = {"precision": p, "recall": r, "f1": f, "overlap_precision": op,
           "overlap_recall": orc, "overlap_f1": of, "per_label": {}}
    for lab, (a, b, c) in sorted(per.items()):
        x, y, z = prf(a, b, c)
        out["per_label"][lab] = {"precision": x, "recall": y, "f1": z, "support": a + c}
    return out


METRICS = {"choice": choice_metrics, "noul": noul_metrics, "score": score_metrics,
           "set": set_metrics, "span": span_metrics}


def round_half_up(x):
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def compare_answers(t, a, b):
    """(agree, |delta| or None)."""
    if t == "choice":
        pick = a["choice"]
        return pick == b["choice"], abs(a["probabilities"][pick] - b["probabilities"].get(pick, 0.0))
    if t == "noul":
        return (a["noul"] >= 0.5) == (b["noul"] >= 0.5), abs(a["noul"] - b["noul"])
    if t == "score":
        return round_half_up(a["score"]) == round_half_up(b["score"]), abs(a["score"] - b["score"])
    if t == "set":
        return set(a["selected"]) == set(b["selected"]), None
    key = lambda s: (s["start"], s["end"], s["label"])  # noqa: E731
    return {key(s) for s in a} == {key(s) for s in b}, None


def expected(res, base, labs):
    A, order, ca = read_replay(res)
    B, _, cb = read_replay(base)
    L, lc = {}, {"lines": 0, "records": 0, "duplicates": 0, "bad_lines": 0}
    for ln in labs:
        lc["lines"] += 1
        try:
            o = json.loads(ln)
            assert isinstance(o.get("request_id"), str) and isinstance(o.get("labels"), dict)
        except (ValueError, AssertionError, AttributeError):
            lc["bad_lines"] += 1
            continue
        if o["request_id"] in L:
            lc["duplicates"] += 1
            continue
        lc["records"] += 1
        L[o["request_id"]] = o["labels"]
    qtypes, pairs, counts = {}, {}, {}
    bad_labels = unknown = 0
    for rid in order:
        status, env = A[rid]
        qs = questions(status, env)
        for q, (t, ans) in qs.items():
            qtypes.setdefault(q, t)
            c = counts.setdefault(q, {"n": 0, "errors": 0, "answered": 0})
            if ans is None:
                c["errors"] += 1
            else:
                c["answered"] += 1
        if rid not in L or status != "200":
            continue
        for q, v in L[rid].items():
            if q not in qs:
                unknown += 1
                continue
            t, ans = qs[q]
            if ans is None:
                continue
            if not label_ok(t, ans, v):
                bad_labels += 1
                continue
            pairs.setdefault(q, []).append((v, ans, rid))
            counts[q]["n"] += 1
    out_q = {}
    for q, t in qtypes.items():
        o = {"type": t, **counts[q]}
        if q in pairs:
            o.update(METRICS[t](pairs[q]))
        out_q[q] = o
    # A/B
    cmp = {q: {"n": 0, "agree": 0, "deltas": []} for q in qtypes}
    changes, status_changed = [], 0
    for seq, rid in enumerate(order, 1):
        if rid not in B:
            continue
        sa, ea = A[rid]
        sb, eb = B[rid]
        ch = sa != sb
        status_changed += ch
        qa, qb = questions(sa, ea), questions(sb, eb)
        dis, md = [], None
        for q, (t, a) in qa.items():
            if q not in qb or a is None or qb[q][1] is None or qb[q][0] != t:
                continue
            agree, d = compare_answers(t, a, qb[q][1])
            c = cmp[q]
            c["n"] += 1
            c["agree"] += agree
            if d is not None:
                c["deltas"].append(d)
                md = d if md is None or d > md else md
            if not agree:
                dis.append(q)
        if ch or dis or (md or 0) > 0:
            changes.append((ch, len(dis), -1.0 if md is None else md, -seq, rid, sa, sb, dis, md))
    changes.sort(reverse=True)
    top = [{"request_id": c[4], "status": {"results": c[5], "baseline": c[6]},
            "disagreements": c[1], "changed": ",".join(c[7]), "max_abs_delta": c[8]}
           for c in changes[:TOP]]
    compare = {q: {"n": c["n"], "agreement": c["agree"] / c["n"] if c["n"] else None,
                   "mean_abs_delta": sum(c["deltas"]) / len(c["deltas"]) if c["deltas"] else None}
               for q, c in cmp.items()}
    compare["status_changed"] = status_changed
    in_both = sum(1 for r in order if r in B)
    records = {
        "results": ca, "baseline": cb,
        "labels": dict(lc, bad_labels=bad_labels, unknown_qids=unknown),
        "joined": {"labelled": sum(1 for r in order if r in L),
                   "unlabelled": sum(1 for r in order if r not in L),
                   "labels_without_result": sum(1 for r in L if r not in A),
                   "in_both": in_both, "only_in_results": len(order) - in_both,
                   "only_in_baseline": sum(1 for r in B if r not in A)}}
    total_problems = (ca["bad_lines"] + ca["duplicates"] + cb["bad_lines"] + cb["duplicates"]
                      + lc["bad_lines"] + lc["duplicates"] + bad_labels + unknown)
    return {"records": records, "questions": out_q, "compare": compare, "top": top,
            "problems_total": total_problems}


# ---- demo labels ------------------------------------------------------------------------

DEMO = [
    {"request_id": "blog_quickstart", "labels": {
        "pii": [{"start": 6, "end": 15, "label": "PERSON"},
                {"start": 19, "end": 40, "label": "EMAIL_ADDRESS"}]}},
    {"request_id": "blog_try_it", "labels": {"domain": "health"}},
    {"request_id": "every_type", "labels": {
        "intent": "refund", "angry": True, "sev": 2, "tags": ["refund"],
        "claims": [{"start": 19, "end": 33, "label": "Hallucinated"}]}},
    {"request_id": "golden_8_1", "labels": {
        "domain": "health", "jailbreak": False, "urgency": 1, "topics": ["medication"]}},
    {"request_id": "structured_state", "labels": {"tool": True}},
]


def main():
    rng = random.Random(SEED)
    res, base, labs = build(rng)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in (("results", res), ("baseline", base), ("labels", labs)):
        (OUT / f"{name}.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    exp = expected(res, base, labs)
    (OUT / "expected.json").write_text(json.dumps(exp, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    (OUT / "demo_labels.jsonl").write_text("".join(dumps(r) + "\n" for r in DEMO),
                                           encoding="utf-8")
    (OUT / "SOURCE.json").write_text(json.dumps({
        "recipe": "tools/make_eval_goldens.py", "seed": SEED, "records": N, "top": TOP,
        "versions": {"python": platform.python_version(), "scikit-learn": sklearn.__version__,
                     "numpy": np.__version__},
        "reference": "scikit-learn metrics (accuracy_score, f1_score macro/micro, "
                     "precision_recall_fscore_support, roc_auc_score, brier_score_loss, "
                     "confusion_matrix, mean_absolute_error, root_mean_squared_error); ECE, "
                     "reliability bins, span exact/overlap and A/B written out in this recipe",
        "command": "vela-worker eval --results results.jsonl --baseline baseline.jsonl "
                   "--labels labels.jsonl --json --top 12"}, indent=1) + "\n", encoding="utf-8")
    nq = sum(1 for q in exp["questions"].values() if q["n"])
    print(f"wrote {OUT}: {len(res)} result lines, {len(base)} baseline lines, {len(labs)} "
          f"labels lines; {nq} questions with labelled answers")


if __name__ == "__main__":
    main()
