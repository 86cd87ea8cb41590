#!/usr/bin/env python3
"""Python json.loads error vectors for tests/test_record_in.c.

Writes fixtures/json_errors/cases.jsonl, one case per line:
  {"hex": <request value bytes in hex>, "kind": "ok"|"syntax"|"surrogate",
   "object": <top level is an object>, "offset": <byte offset or null>,
   "msg": <Python's message or null>}
and a sidecar fixtures/json_errors/SOURCE.json naming this recipe and the
Python version. The rules are the worker's (docs/contract.md Decision 4,
docs/worker.md): a UTF-8 BOM is refused with json.loads(str)'s message; bytes
are decoded as UTF-8 with errors='surrogatepass' (what json.loads(bytes) does
for UTF-8); a surrogate left in any string after parsing is "surrogate".
Offsets are bytes (Python's code point position re-encoded); for the
4,300-digit integer limit Python gives no position (offset null).
Nesting-depth cases are not here: CPython's limit depends on the caller's
stack, the contract fixes 1,000 (tested in C directly).
Deterministic: random.Random(20260502).
"""
import json
import platform
import random
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "json_errors"

HAND = [
    b"", b" ", b"\t\n", b"{}", b"[]", b"{", b"[", b"}", b"]", b"null", b"nul", b"true",
    b"tru", b"false", b"fals", b"NaN", b"Na", b"Infinity", b"Infinit", b"-Infinity",
    b"-Inf", b"-", b"-x", b"0", b"01", b"-0", b"1.", b"1.5", b"1.e5", b"1e", b"1e+",
    b"1e5", b"1E-5", b"[1.]", b"[1,]", b"[1 2]", b"[,1]", b'{"a":1,}', b'{"a" 1}',
    b'{"a":}', b"{1:2}", b'{"a":1 "b":2}', b'{"a"', b'{"a":', b'{"a":1', b"[1", b'"abc',
    b'"abc\\', b'"\\"', b'"\\x"', b'"\\u"', b'"\\u12"', b'"\\u12', b'"\\u0041', b'"\\u0041"',
    b'"\\uZZZZ"', b'"\\ud800"', b'"\\udc00"', b'"\\ud800\\udc00"', b'"\\ud800\\u0041"',
    b'"\\ud800\\uZZ00"', b'"\\ud800\\ud800"', b'"\\ud800\\udc0"', b'"\\ud83d\\ude00x"',
    b'"a\x01"', b'"a\x1f"', b'"a\x7f"', b'"tab\there"', b"  {}  ", b"{} x", b"[] []",
    b"\xef\xbb\xbf{}", b"\xff", b"{\"a\":\"\xff\"}", b"\xc0\x80", b"\xc2", b"\xc2A",
    b"\xe4\xb8", b"\xe4\xb8A", b"\xe4A", b"\xe0\x80\x80", b"\xe0\xa0", b"\xed\xa0\x80",
    b'"\xed\xa0\x80"', b'"\xed\xa0"', b'"\xed\xa0A"', b'"\xed\xb0\x80"', b"\xf0\x90\x80",
    b"\xf0\x90\x80\x80", b'"\xf0\x9f\x98\x80"', b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80", b"\xf0\x90A", b"\xf0\x90\x80A", b'"caf\xc3\xa9" x',
    b'{"\xc3\xa9":1,,}', b'["\xe2\x82\xac", 1e400, -1e400, 1E400]', b"[NaN, Infinity]",
    b"1" * 4300, b"1" * 4301, b"-" + b"1" * 4301, b"1" * 4301 + b".5", b"1" * 4301 + b"e1",
    b"[" + b"1" * 5000 + b", x]", b'{"a": 1, "a": 2}', b'{"state": "x", "questions": {}}',
    b"\x00", b"{\x00}", b'"\\\x00"', b'"\\/"', b'"\\b\\f\\n\\r\\t"', b"[1,\n2\n,3]",
    b"\"\xe2\x82\xac\\u20\"", b"\"\\u20\xe2\x82\xac\"", b'"\\ud800\\u\xc3\xa9"',
    b'"\\ud800\xc3\xa9\xc3\xa9\xc3\xa9"',
]

SEEDS = [
    b'{"state": "the sky is blue", "questions": {"q1": {"type": "choice", "choices": ["a", "b"]}}}',
    b'{"model": "vela", "state": {"user": "hi \xc3\xa9\xe2\x82\xac", "n": [1, 2.5, -3e2]}, "questions": {}}',
    b'[1, "two", {"three": [true, false, null]}, "\\u00e9\\ud83d\\ude00"]',
    b'{"a": {"b": {"c": [[], {}, "x\\ny"]}}, "d": -0.0, "e": 1E+5}',
]
ALPHABET = b'{}[]:,"\\ \n0123456789-+.eEnulltruefalsNaIfiyxu\x01\x1f\xc3\xa9\xe2\x82\xac\xed\xa0\x80\xff\xf0'


def mutate(rng, b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.3 and b:
            del b[rng.randrange(len(b))]
        elif op < 0.6:
            b.insert(rng.randrange(len(b) + 1), rng.choice(ALPHABET))
        elif op < 0.85 and b:
            b[rng.randrange(len(b))] = rng.choice(ALPHABET)
        elif b:
            b = b[: rng.randrange(len(b))]
    return bytes(b)


def has_surrogate(v):
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, list):
        return any(has_surrogate(x) for x in v)
    if isinstance(v, dict):
        return any(has_surrogate(k) or has_surrogate(x) for k, x in v.items())
    return False


def expect(b):
    if b.startswith(b"\xef\xbb\xbf"):
        return dict(kind="syntax", object=False, offset=0,
                    msg="Unexpected UTF-8 BOM (decode using utf-8-sig)")
    try:
        s = b.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        return dict(kind="syntax", object=False, offset=e.start, msg=str(e))
    try:
        v = json.loads(s)
    except json.JSONDecodeError as e:
        off = len(s[: e.pos].encode("utf-8", "surrogatepass"))
        return dict(kind="syntax", object=False, offset=off, msg=e.msg)
    except ValueError as e:  # the int digit limit
        return dict(kind="syntax", object=False, offset=None, msg=str(e))
    if has_surrogate(v):
        return dict(kind="surrogate", object=False, offset=None, msg=None)
    return dict(kind="ok", object=isinstance(v, dict), offset=None, msg=None)


def main():
    assert sys.version_info[:2] == (3, 11), "the vectors are CPython 3.11's"
    rng = random.Random(20260502)
    cases, seen = [], set()
    for b in HAND + SEEDS + [mutate(rng, rng.choice(SEEDS)) for _ in range(3000)]:
        if b in seen:
            continue
        seen.add(b)
        cases.append(dict(hex=b.hex(), **expect(b)))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "cases.jsonl", "w") as f:
        for c in cases:
            f.write(json.dumps(c, sort_keys=True) + "\n")
    src = {"recipe": "tools/make_json_error_vectors.py", "python": platform.python_version(),
           "implementation": platform.python_implementation(), "seed": 20260502,
           "cases": len(cases)}
    (OUT / "SOURCE.json").write_text(json.dumps(src, indent=2, sort_keys=True) + "\n")
    kinds = {}
    for c in cases:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    print(f"wrote {OUT / 'cases.jsonl'}: {len(cases)} cases {kinds}")
    print(f"wrote {OUT / 'SOURCE.json'}")


if __name__ == "__main__":
    main()
