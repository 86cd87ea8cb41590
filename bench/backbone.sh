#!/usr/bin/env bash
# bench/backbone.sh — CPU backbone prefill: vela-worker (C, OpenBLAS) beside
# transformers + torch (FP32, CPU) on a random Qwen3.5-0.8B-shaped bundle, same
# thread count, in the same run. Prints tokens/s, the C/torch ratio (target
# >= 1.0x) and peak RSS against the FP32 weight bytes (target <= 1.3x).
#   bench/backbone.sh [TOKENS=1024,4096] [THREADS=$(nproc)]
# Env: VW_BENCH_BUNDLE (default /tmp/vela-0.8b-random; generated when absent
# with tools/make_tiny_bundle.py --shape 0.8b), VW_BENCH_BUILD (default build-bench),
# VW_BENCH_BIN (an already built bench_backbone: skips the build).
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-1024,4096}
threads=${2:-$(nproc)}
bundle=${VW_BENCH_BUNDLE:-/tmp/vela-0.8b-random}
build=${VW_BENCH_BUILD:-build-bench}
py=${VW_PYTHON:-.venv/bin/python}

if [[ ! -f "$bundle/MODEL_MANIFEST.json" ]]; then
  echo "== generating a random 0.8B-shaped bundle in $bundle (about 1.5 GB, not committed)"
  "$py" tools/make_tiny_bundle.py --shape 0.8b --out "$bundle" | head -1
fi
bin=${VW_BENCH_BIN:-}
if [[ -z "$bin" ]]; then
  echo "== building bench_backbone in $build"
  # The project's default build type (RelWithDebInfo, -O2), CPU only.
  cmake -S . -B "$build" -G Ninja -DVW_CUDA=OFF >/dev/null
  if ! log=$(cmake --build "$build" --target bench_backbone -j "$threads" 2>&1); then
    echo "$log" | tail -20
    echo "bench/backbone.sh: build failed" >&2
    exit 1
  fi
  bin=$build/bench_backbone
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "== C (OpenBLAS, $threads threads): tokens $tokens"
OPENBLAS_NUM_THREADS=$threads "$bin" --bundle "$bundle" --tokens "$tokens" \
  | tee -a "$out"
echo "== transformers + torch CPU FP32 ($threads threads): tokens $tokens"
OMP_NUM_THREADS=$threads "$py" bench/backbone_ref.py --bundle "$bundle" --tokens "$tokens" \
  --threads "$threads" | tee -a "$out"

"$py" - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
c = {r["tokens"]: r for r in rows if r["impl"] == "c"}
t = {r["tokens"]: r for r in rows if r["impl"] == "torch"}
print("== summary")
for n in sorted(c):
    w = c[n]["weights_fp32_bytes"]
    line = (f"tokens {n:5d}: C {c[n]['tokens_per_s']:8.1f} tok/s"
            f"  peak RSS {c[n]['peak_rss_bytes'] / 2**30:.2f} GiB"
            f" = {c[n]['peak_rss_bytes'] / w:.2f}x FP32 weights ({w / 2**30:.2f} GiB)")
    if n in t:
        line += (f" | torch {t[n]['tokens_per_s']:8.1f} tok/s"
                 f" (peak RSS {t[n]['peak_rss_bytes'] / 2**30:.2f} GiB)"
                 f" | ratio C/torch {c[n]['tokens_per_s'] / t[n]['tokens_per_s']:.2f}x")
    print(line)
PY
