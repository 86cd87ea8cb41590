#!/usr/bin/env python3
"""Seed corpora of the fuzz targets added for issue 35 (tests/fuzz/seeds/<target>/):
small valid inputs the fuzzer mutates from. Standard library only; run from the
repository root: python3 tools/make_fuzz_seeds.py

- safetensors/: four well-formed files (F32, BF16 + F16 with metadata, a scalar with
  I64 and BOOL, an empty tensor with U8), as fuzz_safetensors.c reads a shard;
- bundle_json/: config.json NUL calibration.json of the tiny bundle, the small plan
  bundle and the small answers bundle (fuzz_bundle_json.c);
- eval/: the first lines of fixtures/eval's results NUL baseline NUL labels, results
  alone, and results with the demo labels and no baseline (fuzz_eval.c).
"""
import json
import os
import struct


def safetensors(tensors, meta=None):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def head(path, n):
    with open(path, "rb") as f:
        return b"".join(f.readlines()[:n])


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    d = "tests/fuzz/seeds/safetensors"
    write(f"{d}/f32", safetensors({"a": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4))}))
    write(f"{d}/bf16_f16", safetensors({"w": ("BF16", [3], b"\x80\x3f\x00\x40\xc0\x7f"),
                                       "h": ("F16", [2], b"\x00\x3c\x00\x7c")}, {"format": "pt"}))
    write(f"{d}/scalar_i64", safetensors({"s": ("F32", [], struct.pack("<f", 0.5)),
                                         "i": ("I64", [1], struct.pack("<q", 7)),
                                         "b": ("BOOL", [2], b"\x01\x00")}))
    write(f"{d}/empty_tensor", safetensors({"e": ("F32", [0, 4], b""), "u": ("U8", [3], b"abc")}))
    d = "tests/fuzz/seeds/bundle_json"
    for name, src in [("tiny", "fixtures/tiny-vela"), ("plan_small", "fixtures/plan/bundle-small"),
                      ("answers_small", "fixtures/answers/tiny-small")]:
        with open(f"{src}/config.json", "rb") as c, open(f"{src}/calibration.json", "rb") as k:
            write(f"{d}/{name}", c.read() + b"\0" + k.read())
    d = "tests/fuzz/seeds/eval"
    e = "fixtures/eval"
    write(f"{d}/fixtures_head", head(f"{e}/results.jsonl", 2) + b"\0" + head(f"{e}/baseline.jsonl", 2)
          + b"\0" + head(f"{e}/labels.jsonl", 6))
    write(f"{d}/results_only", head(f"{e}/results.jsonl", 2))
    with open(f"{e}/demo_labels.jsonl", "rb") as f:
        write(f"{d}/demo_labels", head(f"{e}/results.jsonl", 2) + b"\0\0" + f.read())


if __name__ == "__main__":
    main()
