#!/usr/bin/env bash
# bench/backbone.sh — CPU backbone prefill: vela-worker (C, its thread pool +
# single-threaded OpenBLAS) beside transformers + torch (FP32, CPU) on a random
# Qwen3.5-0.8B-shaped bundle, same thread count, in the same run, clean and
# contended:
#   clean   nothing else started by the bench
#   busy    one competing busy thread at normal priority (nice 0)
#   busy19  one competing busy thread at nice 19
# Each round runs every condition, C then torch, each process timing every
# length REPS times after loading and keeping the best; ROUNDS rounds interleave
# them so a disturbance of the shared machine hits both sides alike. Prints every measurement, then per
# length and condition the median tokens/s of each side with its spread
# (min-max over the rounds), the C/torch ratio (target >= 1.5x clean, >= 1.3x
# contended), and each side's contended figure against its clean one (target
# for C: no more than 10 % below), plus peak RSS against the FP32 weights.
#   bench/backbone.sh [TOKENS=512,2048] [THREADS=$(nproc)]
# Env: VW_BENCH_BUNDLE (default /tmp/vela-0.8b-random; written when absent by
# bench_bundle --shape 0.8b), VW_BENCH_BUILD (default build-bench), VW_BENCH_BIN
# (an already built bench_backbone: skips the build), BENCH_ROUNDS (3), BENCH_REPS (2),
# BENCH_CONDITIONS (clean,busy,busy19), BENCH_SIDES (c,torch), BENCH_OUT (keep
# the JSON lines there).
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${1:-512,2048}
threads=${2:-$(nproc)}
bundle=${VW_BENCH_BUNDLE:-/tmp/vela-0.8b-random}
build=${VW_BENCH_BUILD:-build-bench}
py=${VW_PYTHON:-.venv/bin/python}
rounds=${BENCH_ROUNDS:-3}
reps=${BENCH_REPS:-2}
conditions=${BENCH_CONDITIONS:-clean,busy,busy19}
sides=${BENCH_SIDES:-c,torch}

bin=${VW_BENCH_BIN:-}
if [[ -z "$bin" ]]; then
  echo "== building bench_backbone and bench_bundle in $build"
  # The project's default build type (RelWithDebInfo, -O2), CPU only.
  cmake -S . -B "$build" -G Ninja -DVW_CUDA=OFF >/dev/null
  if ! log=$(cmake --build "$build" --target bench_backbone bench_bundle -j "$threads" 2>&1); then
    echo "$log" | tail -20
    echo "bench/backbone.sh: build failed" >&2
    exit 1
  fi
  bin=$build/bench_backbone
fi
if [[ ! -f "$bundle/MODEL_MANIFEST.json" ]]; then
  echo "== writing a random 0.8B-shaped bundle in $bundle (about 1.5 GB, not committed)"
  "$(dirname "$bin")/bench_bundle" --shape 0.8b --out "$bundle"
fi

out=${BENCH_OUT:-$(mktemp)}
: >"$out"
busy_pid=
stop_busy() {
  if [[ -n $busy_pid ]]; then
    kill "$busy_pid" 2>/dev/null || true
    wait "$busy_pid" 2>/dev/null || true
    busy_pid=
  fi
}
cleanup() {
  stop_busy
  [[ -n ${BENCH_OUT:-} ]] || rm -f "$out"
}
trap cleanup EXIT

# One competing thread: a shell loop that never sleeps, at the given niceness.
start_busy() {
  nice -n "$1" bash -c 'while :; do :; done' &
  busy_pid=$!
}

# run SIDE COND ROUND: one process of SIDE timing every length; its JSON lines
# go to $out tagged with the condition and the round.
run() {
  local side=$1 cond=$2 round=$3 lines
  case $cond in
    clean) ;;
    busy) start_busy 0 ;;
    busy19) start_busy 19 ;;
    *) echo "bench/backbone.sh: unknown condition $cond" >&2; exit 2 ;;
  esac
  if [[ $side == c ]]; then
    lines=$("$bin" --bundle "$bundle" --tokens "$tokens" --threads "$threads" --reps "$reps")
  else
    lines=$(OMP_NUM_THREADS=$threads "$py" bench/backbone_ref.py --bundle "$bundle" \
      --tokens "$tokens" --threads "$threads" --reps "$reps" 2>/dev/null)
  fi
  stop_busy
  while read -r l; do
    [[ $l == "{"* ]] || continue
    l="${l%\}},\"cond\":\"$cond\",\"round\":$round}"
    echo "$l" | tee -a "$out"
  done <<<"$lines"
}

echo "== $rounds rounds x conditions $conditions x sides $sides; tokens $tokens," \
  "$threads threads each, best of $reps (load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq "$rounds"); do
  for cond in ${conditions//,/ }; do
    for side in ${sides//,/ }; do
      run "$side" "$cond" "$r"
    done
  done
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    by.setdefault((r["impl"], r["cond"], r["tokens"]), []).append(r["tokens_per_s"])
conds = [c for c in ("clean", "busy", "busy19") if any(k[1] == c for k in by)]
lengths = sorted({k[2] for k in by})
def fig(impl, cond, n):
    v = by.get((impl, cond, n))
    return (statistics.median(v), min(v), max(v), len(v)) if v else None
def rounds(cond, n):
    """(C, torch) measurement pairs of one condition and length, round by round."""
    return [(a, b) for a in rows for b in rows
            if a["impl"] == "c" and b["impl"] == "torch" and a["cond"] == b["cond"] == cond
            and a["tokens"] == b["tokens"] == n and a["round"] == b["round"]]
def show(f):
    return f"{f[0]:7.1f} ({f[1]:.1f}-{f[2]:.1f}, n={f[3]})" if f else "      -"
print("== summary: median tokens/s (min-max over rounds)")
names = {"clean": "clean", "busy": "busy nice 0", "busy19": "busy nice 19"}
for n in lengths:
    for cond in conds:
        c, t = fig("c", cond, n), fig("torch", cond, n)
        line = f"tokens {n:5d} {names[cond]:13s} C {show(c)} | torch {show(t)}"
        if c and t:
            line += f" | C/torch {c[0] / t[0]:.2f}x"
            # the ratio's spread: round by round where both sides ran
            per = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in rounds(cond, n)]
            if per:
                line += f" ({min(per):.2f}-{max(per):.2f})"
        if cond != "clean":
            for impl, f in (("C", c), ("torch", t)):
                base = fig(impl.lower(), "clean", n)
                if f and base:
                    line += f" | {impl} {100 * (f[0] / base[0] - 1):+.0f}% vs clean"
        print(line)
# The GEMM ceiling (docs/performance.md): each side's rate on the forward's
# largest projection alone, measured in the same process right after the
# forward; the forward's projections at that rate bound its tokens/s, and
# that bound over torch's tokens/s bounds the C/torch ratio on this machine.
if all("gemm_gflops" in r for r in rows):
    print("== GEMM ceiling: median GEMM GFLOP/s of each side; the forward's projections"
          " as a share of it; the C/torch ratio C would reach at its GEMM rate")
    for n in lengths:
        for cond in conds:
            line = f"tokens {n:5d} {names[cond]:13s}"
            for impl in ("c", "torch"):
                rs = [r for r in rows if r["impl"] == impl and r["cond"] == cond and r["tokens"] == n]
                if rs:
                    g = statistics.median(r["gemm_gflops"] for r in rs)
                    f = statistics.median(r["linear_gflop"] / r["seconds"] for r in rs)
                    line += f" | {'C' if impl == 'c' else impl} GEMM {g:5.1f}, forward {f:5.1f} ({100 * f / g:.0f}%)"
            cap = [a["gemm_gflops"] * n / a["linear_gflop"] / b["tokens_per_s"]
                   for a, b in rounds(cond, n)]
            if cap:
                line += f" | C/torch at most {statistics.median(cap):.2f}x ({min(cap):.2f}-{max(cap):.2f})"
            print(line)
c = [r for r in rows if r["impl"] == "c"]
if c:
    r = max(c, key=lambda r: r["peak_rss_bytes"])
    w = r["weights_fp32_bytes"]
    print(f"C peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB = {r['peak_rss_bytes'] / w:.2f}x "
          f"FP32 weights ({w / 2**30:.2f} GiB)")
t = [r for r in rows if r["impl"] == "torch"]
if t:
    print(f"torch peak RSS {max(r['peak_rss_bytes'] for r in t) / 2**30:.2f} GiB")
PY
