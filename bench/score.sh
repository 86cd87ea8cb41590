#!/usr/bin/env bash
# bench/score.sh — end-to-end scoring on the CPU backend: bench_score (C engine:
# plan -> backbone -> heads -> answers -> envelope JSON) beside the Python
# reference pipeline (tools/make_answer_goldens.py --bench: the plan recipe,
# transformers FP32, torch heads, NumPy answers) on the same requests, same
# thread count. Prints req/s, p50/p99 latency (one request at a time), the share
# of time per stage, and the C/Python ratios.
#   bench/score.sh [THREADS=1]
# Requests: the tiny bundle's answered goldens (fixtures/answers/cases.jsonl,
# 25 requests, 120 to 9,730 tokens); on the 0.8B-shaped random bundle, the
# first VW_BENCH_08B_N (default 2) of them, once (seconds each on CPU).
# Env: VW_BENCH_BUNDLE (0.8B-shaped bundle, default /tmp/vela-0.8b-random,
# generated when absent with tools/make_tiny_bundle.py --shape 0.8b; never
# commit it), VW_BENCH_SKIP_08B=1, VW_BENCH_REPS (tiny, default 3),
# VW_BENCH_BUILD (default build-bench), VW_BENCH_BIN (a built bench_score).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-1}
bundle=${VW_BENCH_BUNDLE:-/tmp/vela-0.8b-random}
build=${VW_BENCH_BUILD:-build-bench}
reps=${VW_BENCH_REPS:-3}
n08=${VW_BENCH_08B_N:-2}
py=${VW_PYTHON:-.venv/bin/python}

bin=${VW_BENCH_BIN:-}
if [[ -z "$bin" ]]; then
  echo "== building bench_score in $build"
  cmake -S . -B "$build" -G Ninja -DVW_CUDA=OFF >/dev/null
  if ! log=$(cmake --build "$build" --target bench_score -j "$threads" 2>&1); then
    echo "$log" | tail -20
    echo "bench/score.sh: build failed" >&2
    exit 1
  fi
  bin=$build/bench_score
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp/tiny.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for line in open("fixtures/answers/cases.jsonl", encoding="utf-8"):
        row = json.loads(line)
        if row["bundle"] == "tiny" and row["status"] == 200 and "body" in row:
            out.write(row["body"] + "\n")
EOF

# run LABEL BUNDLE REQUESTS REPS: both implementations, JSON lines into $tmp/LABEL.*
run() {
  local label=$1 dir=$2 reqs=$3 r=$4
  echo "== $label: C engine ($threads pool threads, single-threaded OpenBLAS)"
  "$bin" --bundle "$dir" --requests "$reqs" --reps "$r" --threads "$threads" \
    --label "$label" | tee "$tmp/$label.c"
  echo "== $label: Python reference (torch $threads threads)"
  OMP_NUM_THREADS=$threads "$py" tools/make_answer_goldens.py --bench --bundle "$dir" \
    --requests "$reqs" --reps "$r" --threads "$threads" 2>/dev/null | tee "$tmp/$label.py"
  "$py" - "$tmp/$label.c" "$tmp/$label.py" <<'EOF'
import json, sys
c = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
p = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
share = lambda s: ", ".join(f"{k} {100 * v:.1f}%" for k, v in s.items())
print(f"   {c['label']}: C {c['req_per_s']:.3g} req/s (p50 {c['p50_ms']:.4g} ms, p99 "
      f"{c['p99_ms']:.4g} ms) | Python {p['req_per_s']:.3g} req/s (p50 {p['p50_ms']:.4g} ms, "
      f"p99 {p['p99_ms']:.4g} ms)")
print(f"   ratio C/Python: throughput {c['req_per_s'] / p['req_per_s']:.2f}x, "
      f"p50 latency {p['p50_ms'] / c['p50_ms']:.2f}x lower, p99 {p['p99_ms'] / c['p99_ms']:.2f}x lower")
print(f"   C share: {share(c['share'])}")
print(f"   Python share: {share(p['share'])}")
EOF
}

run tiny fixtures/tiny-vela "$tmp/tiny.jsonl" "$reps"

if [[ "${VW_BENCH_SKIP_08B:-0}" != 1 ]]; then
  if [[ ! -f "$bundle/MODEL_MANIFEST.json" ]]; then
    echo "== generating a random 0.8B-shaped bundle in $bundle (about 1.5 GB, not committed)"
    "$py" tools/make_tiny_bundle.py --shape 0.8b --out "$bundle" | head -1
  fi
  head -n "$n08" "$tmp/tiny.jsonl" > "$tmp/08b.jsonl"
  run 0.8b "$bundle" "$tmp/08b.jsonl" 1
fi
