#!/usr/bin/env bash
# bench/eos.sh — the price of delivery.mode exactly_once, measured beside
# at_least_once on one broker and one executor (docs/performance.md "Exactly
# once"): the real path `vela-worker run` with the simulated H200 executor
# (VW_BENCH_EXECUTOR=sim, core/model/synthetic.h) on golden-like requests
# (bench/ceiling_mix.txt), loaded and read back by bench_ceiling (its reader
# uses librdkafka's default isolation.level, read_committed: a result counts
# when a read_committed consumer can see it).
#
#   1. each mode at saturation (default batching: max_wait_ms 5, 64 requests):
#      requests/s;
#   2. each mode at ~10 % of at_least_once's saturation rate: p50/p99 latency
#      and the host's added latency (minus the device time per call), the
#      transaction's own time (txn_commit_seconds) and records per transaction;
#   3. exactly_once at the same rate for batching.max_wait_ms in $EOS_WAITS:
#      what a longer wait trades (records per transaction, latency).
#
#   bench/eos.sh [--mock] [--count N] [--seconds S] [--out FILE]
# The broker: a one-node Apache Kafka (scripts/kafka, needs $VW_KAFKA or the
# cache scripts/kafka fetch fills) unless --mock (librdkafka's mock cluster:
# it shows a transaction's records before its commit, so there the latency
# of exactly_once is understated; docs/kafka-notes.md §1.3).
# env: VW_BENCH_BUILD (default: a Release build in build-ceiling, kept up to
#      date), EOS_WAITS (default "0 5 20 50"), CEILING_SIM (sim parameters).
set -euo pipefail
cd "$(dirname "$0")/.."
mock=0 count=3000 seconds=20 out=""
while (($#)); do
  case $1 in
    --mock) mock=1; shift ;;
    --count) count=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: bench/eos.sh [--mock] [--count N] [--seconds S] [--out FILE]" >&2; exit 2 ;;
  esac
done
build=${VW_BENCH_BUILD:-build-ceiling}
bin=$build/vela-worker
work=$(mktemp -d)
out=${out:-$work/eos.jsonl}
: >"$out"
pids=()
kafka_dir=""
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ -n $kafka_dir ]] && scripts/kafka stop "$kafka_dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -z ${VW_BENCH_BUILD:-} ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target vela-worker bench_ceiling bench_bundle >/dev/null
fi
mix=$work/mix.jsonl
while read -r name weight; do
  [[ -z $name || $name == \#* ]] && continue
  line=$(tr -d '\n' <"fixtures/requests/$name.json")
  for ((i = 0; i < weight; i++)); do printf '%s\n' "$line"; done
done <bench/ceiling_mix.txt >"$mix"
bundle=${VW_CEILING_BUNDLE:-/tmp/vw-ceiling-ceiling}
"$build/bench_bundle" --shape ceiling --out "$bundle" >&2

waits=${EOS_WAITS:-0 5 20 50}
runs=(at_least_once exactly_once)
for w in $waits; do runs+=("w$w"); done
spec=""
for r in "${runs[@]}"; do spec+="$r-req:4,$r-res:4,$r-dlq:1,"; done
spec=${spec%,}
if ((mock)); then
  broker="librdkafka's mock cluster ($("$bin" version | sed -n 's/^librdkafka: //p'))"
  "$bin" broker --topics "$spec" --bootstrap-file "$work/bootstrap" >"$work/broker.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [[ -s $work/bootstrap ]] && break; sleep 0.1; done
  bs=$(cat "$work/bootstrap")
  fetch_wait=1 # the mock answers a fetch only after this wait
else
  broker="Apache Kafka $(scripts/kafka version), one node"
  kafka_dir=$work/kafka
  bs=$(scripts/kafka start 1 "$kafka_dir" | sed -n 's/^bootstrap //p')
  scripts/kafka topics "$kafka_dir" "$spec" >/dev/null 2>&1
  fetch_wait=100 # a real broker answers as records arrive
fi

metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k {print $2}'; }

start_worker() { # run-name mode max_wait_ms port
  cat >"$work/$1.yaml" <<EOF
kafka:
  bootstrap.servers: "$bs"
  group.id: eos-bench-$1
  consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000, fetch.wait.max.ms: $fetch_wait}
  producer: {linger.ms: 0}
topics: {input: $1-req, results: $1-res, dlq: $1-dlq}
model: {bundle: $bundle, device: auto}
batching: {max_wait_ms: $3}
limits: {max_in_flight: 4096}
delivery: {mode: $2, worker_id: bench}
metrics: {listen: "127.0.0.1:$4", stats_interval_ms: 5000}
log: {level: warn}
EOF
  VW_BENCH_EXECUTOR=${CEILING_SIM:-sim} OPENBLAS_NUM_THREADS=1 "$bin" run --config "$work/$1.yaml" \
    2>"$work/$1.log" &
  wpid=$!
  pids+=("$wpid")
  for _ in $(seq 1200); do
    [[ $(metric "$4" vela_worker_ready 2>/dev/null) == 1 ]] && return 0
    kill -0 "$wpid" 2>/dev/null || break
    sleep 0.1
  done
  echo "eos: the worker did not become ready; log:" >&2
  cat "$work/$1.log" >&2
  return 1
}
stop_worker() { kill -TERM "$wpid"; wait "$wpid" || true; }

load() { # run-name label count rate
  "$build/bench_ceiling" --bootstrap "$bs" --requests "$mix" --topic "$1-req" \
    --results "$1-res" --count "$3" --rate "$4" --label "$2" --timeout-s 600
}

# One load with the worker's counters around it (device time, transactions,
# batches): one JSON object with the host's added latency.
measured() { # run-name label count rate port mode max_wait
  local names=(exec_seconds_sum exec_seconds_count txn_commit_seconds_sum
    txn_commit_seconds_count batches_total) a=() b=() res
  for n in "${names[@]}"; do a+=("$(metric "$5" "vela_worker_$n")"); done
  res=$(load "$1" "$2" "$3" "$4")
  for n in "${names[@]}"; do b+=("$(metric "$5" "vela_worker_$n")"); done
  python3 - "$res" "$6" "$7" "${a[@]}" "${b[@]}" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); r["mode"] = sys.argv[2]; r["max_wait_ms"] = int(sys.argv[3])
a = [float(x or 0) for x in sys.argv[4:9]]; b = [float(x or 0) for x in sys.argv[9:14]]
d = [y - x for x, y in zip(a, b)]
calls = max(1.0, d[1])
r["device_ms_per_call"] = round(1e3 * d[0] / calls, 2)
r["host_added_p50_ms"] = round(r["p50_ms"] - r["device_ms_per_call"], 2)
r["host_added_p99_ms"] = round(r["p99_ms"] - r["device_ms_per_call"], 2)
r["batches"] = int(d[4]); r["transactions"] = int(d[3])
r["txn_ms_mean"] = round(1e3 * d[2] / d[3], 2) if d[3] else None
r["records_per_txn"] = round(r["received"] / d[3], 2) if d[3] else None
r["records_per_batch"] = round(r["received"] / d[4], 2) if d[4] else None
print(json.dumps(r))
PY
}

port=19480
# 1 + 2: both modes, default batching.
for mode in at_least_once exactly_once; do
  port=$((port + 1))
  start_worker "$mode" "$mode" 5 "$port"
  load "$mode" warmup 300 0 >/dev/null
  measured "$mode" "${mode}_saturation" "$count" 0 "$port" "$mode" 5 >>"$out"
  if [[ $mode == at_least_once ]]; then
    rate=$(python3 -c "import json,sys; print(max(1.0, round(0.1 * json.loads(sys.argv[1])['req_per_s'], 1)))" \
      "$(tail -n 1 "$out")")
  fi
  n_low=$(python3 -c "print(max(100, int(float('$rate') * $seconds)))")
  measured "$mode" "${mode}_10pct" "$n_low" "$rate" "$port" "$mode" 5 >>"$out"
  stop_worker
done
# 3: exactly_once's batching.max_wait_ms at the same rate.
for w in $waits; do
  port=$((port + 1))
  start_worker "w$w" exactly_once "$w" "$port"
  load "w$w" warmup 300 0 >/dev/null
  measured "w$w" "exactly_once_wait$w" "$n_low" "$rate" "$port" exactly_once "$w" >>"$out"
  stop_worker
done

python3 - "$out" "$broker" "$(nproc)" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {r["label"]: r for r in rows}
print(f"exactly_once against at_least_once: {sys.argv[2]}, simulated H200 executor, "
      f"{sys.argv[3]} cores")
a, e = by["at_least_once_saturation"], by["exactly_once_saturation"]
print(f"  saturation (default batching)  at_least_once {a['req_per_s']:.0f} req/s, "
      f"exactly_once {e['req_per_s']:.0f} req/s: {e['req_per_s'] / a['req_per_s']:.2f}x "
      f"(target >= 0.80); {e['records_per_txn']} records per transaction")
a, e = by["at_least_once_10pct"], by["exactly_once_10pct"]
print(f"  ~10 % load ({a['rate_asked']:.1f} req/s)  p50/p99 ms: at_least_once {a['p50_ms']:.1f}/"
      f"{a['p99_ms']:.1f}, exactly_once {e['p50_ms']:.1f}/{e['p99_ms']:.1f}")
print(f"    host added p50/p99 ms: at_least_once {a['host_added_p50_ms']:.1f}/"
      f"{a['host_added_p99_ms']:.1f}, exactly_once {e['host_added_p50_ms']:.1f}/"
      f"{e['host_added_p99_ms']:.1f}: p50 {e['host_added_p50_ms'] / max(0.01, a['host_added_p50_ms']):.2f}x "
      f"(target <= 2x)")
print(f"    exactly_once: {e['transactions']} transactions for {e['batches']} batches, "
      f"{e['txn_ms_mean']} ms each (flush, offsets, commit)")
print("  exactly_once, batching.max_wait_ms at the same rate:")
print(f"    {'wait ms':>8} {'p50 ms':>8} {'p99 ms':>8} {'txn ms':>8} {'rec/txn':>8} {'rec/batch':>9}")
for r in rows:
    if r["label"].startswith("exactly_once_wait"):
        print(f"    {r['max_wait_ms']:>8} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
              f"{r['txn_ms_mean'] or 0:>8.1f} {r['records_per_txn'] or 0:>8.2f} "
              f"{r['records_per_batch'] or 0:>9.2f}")
PY
echo "rows: $out" >&2
[[ $out == "$work/eos.jsonl" ]] && cat "$out" >&2
exit 0
