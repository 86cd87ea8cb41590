#!/usr/bin/env python3
"""tokenizer_ref.py — the HF `tokenizers` side of bench/tokenizer.sh.

    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \\
        python bench/tokenizer_ref.py TOKENIZER.json CORPUS.jsonl [--no-added-tokens]

Loads the tokenizer (timed), then encodes every corpus string once, one
encode(s, add_special_tokens=False) call per string (no encode_batch), in file order,
and prints the same key=value line as bench_tokenizer. --no-added-tokens encodes with a
copy of the tokenizer whose added_tokens list is empty (as the goldens do).
"""
import json
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Tokenizer  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: tokenizer_ref.py TOKENIZER.json CORPUS.jsonl [--no-added-tokens]")
    with open(sys.argv[2], encoding="utf-8") as f:
        strings = [json.loads(line) for line in f]
    nbytes = sum(len(s.encode("utf-8")) for s in strings)
    t0 = time.perf_counter()
    tok = Tokenizer.from_file(sys.argv[1])
    t1 = time.perf_counter()
    if len(sys.argv) > 3 and sys.argv[3] == "--no-added-tokens":
        d = json.loads(tok.to_str())
        d["added_tokens"] = []
        tok = Tokenizer.from_str(json.dumps(d))
        t1 = time.perf_counter()  # load time stays the plain from_file
    tokens = 0
    t2 = time.perf_counter()
    for s in strings:
        tokens += len(tok.encode(s, add_special_tokens=False).ids)
    t3 = time.perf_counter()
    enc = t3 - t2
    print(f"impl=hf strings={len(strings)} bytes={nbytes} tokens={tokens} load_s={t1 - t0:.3f} "
          f"encode_s={enc:.3f} MB_per_s={nbytes / 1e6 / enc:.2f} tokens_per_s={tokens / enc:.0f}")


if __name__ == "__main__":
    main()
