#!/usr/bin/env python3
"""Canonical JSON and float repr vectors for tests/test_canonical_json.c.

Writes fixtures/canonical/floats.tsv (IEEE-754 bits in hex, Python repr) and
fixtures/canonical/docs.jsonl ({"in": JSON text, "out": canonical JSON}), with
a sidecar fixtures/canonical/SOURCE.json naming this recipe and the Python
version. Deterministic: random.Random(20260417).
Canonical = json.dumps(v, ensure_ascii=False, sort_keys=True,
separators=(",", ":"), allow_nan=False) (docs/spec/request.md §1.3).
"""
import json
import math
import platform
import random
import struct
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "canonical"


def canonical(v):
    return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def floats(rng):
    vals = [1e-07, 1e20, 100.0, 1e16, 1e15, 0.1, 0.3, -0.0, 0.0, 5e-324, 1.7976931348623157e308,
            2.2250738585072014e-308, 1 / 3, 1e-4, 1e-5, 1.5e300, 1e22, 1e23, 123.456, -2.5e-5,
            0.1 + 0.2, 9.999999999999999e15, 1e-4 - 1e-20, 2.0 ** 63, 2.0 ** -1074 * 3]
    vals += [2.0 ** e for e in range(-1074, 1024, 7)]
    while len(vals) < 4000:
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(x):
            vals.append(x)
    for _ in range(2000):  # short decimals, the common case in requests
        vals.append(float(f"{rng.randint(-99999, 99999)}e{rng.randint(-30, 30)}"))
    return vals


DOCS = [
    '{"b":1,"a":[true,false,null],"c":{"z":"é","y":"\\u0001\\n\\t\\"\\\\/"}}',
    '[100, 100.0, 1e2, -0, -0.0, 1E+2, 12345678901234567890123456789]',
    '{"\\ud83d\\ude00":1,"\\uffff":2,"é":3,"z":4,"Z":5,"":6}',
    '{"a":1,"a":2,"b":{"a":3,"a":[4]}}',
    '"\\u007f\\u2028\\u2029\\u0000 \\u001f"',
    '[0.5e-10, 3.14159, 6.02214076e23, 1e-7, 123e-2]',
    '{"nested":[[[{"k":[1,{"j":2.5}]}]]]}',
    '["\\b\\f\\r", "tab\\there", "日本語", "\\ud800\\udc00"]',
]


def main():
    rng = random.Random(20260417)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "floats.tsv", "w", encoding="utf-8") as f:
        for x in floats(rng):
            f.write(f"{struct.unpack('<Q', struct.pack('<d', x))[0]:016x}\t{x!r}\n")
    with open(OUT / "docs.jsonl", "w", encoding="utf-8") as f:
        for text in DOCS:
            f.write(json.dumps({"in": text, "out": canonical(json.loads(text))}, ensure_ascii=False) + "\n")
    (OUT / "SOURCE.json").write_text(json.dumps({
        "recipe": "tools/make_canonical_vectors.py",
        "python": platform.python_version(),
        "files": ["floats.tsv", "docs.jsonl"],
    }, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT/'floats.tsv'} ({len(open(OUT/'floats.tsv').readlines())} floats)")
    print(f"wrote {OUT/'docs.jsonl'} ({len(DOCS)} documents)")


if __name__ == "__main__":
    main()
