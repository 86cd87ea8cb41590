#!/usr/bin/env bash
# bench/pipeline.sh — vela-worker's record pipeline beside a raw librdkafka
# consume -> produce pipe (bench/bench_pipe.c), on the same `vela-worker broker`
# (librdkafka 2.0.2 mock cluster) in the same run, with trivially rejected
# records ("x": 400 json_invalid, so no model time is involved).
#
#   1. throughput, ROUNDS rounds: N records are loaded into an input topic
#      first (the loader is not running during the measurement), then the
#      pipeline starts and turns them into N results. Rate = the middle 80 % of
#      the results over their CreateTime span (bench_pipe measure "mid": the
#      steady state, without the group join and the first produce). Each round
#      runs three pipelines in turn on fresh topics:
#        worker   vela-worker run (test-echo config: every record rejected by
#                 the worker-level checks, the result record of the contract)
#        pipe     bench_pipe pipe: one record per input, the key and a 14-byte
#                 constant value, no headers
#        shaped   bench_pipe pipe with BENCH_PIPE_SHAPED=1: the worker's record
#                 shape (its four headers, a 210-byte value) at the least CPU
#   2. latency: M records produced open-loop at RATE/s into a running, warmed
#      pipeline; p50/p99 of (result CreateTime - request CreateTime), worker
#      and pipe.
# Prints every round, the medians and the ratios worker/pipe and
# worker/shaped (target >= 0.9x the raw pipe).
#   bench/pipeline.sh [N=100000] [RATE=2000] [M=4000] [ROUNDS=3]
# Env: VW_BENCH_BUILD (default build-bench), BENCH_FETCH_WAIT_MS (10) and
# BENCH_LINGER_MS (5) apply to all pipelines; BENCH_MAX_IN_FLIGHT (100000:
# the pipe has no bound, so neither has the worker by default).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
RATE=${2:-2000}
M=${3:-4000}
ROUNDS=${4:-3}
build=${VW_BENCH_BUILD:-build-bench}
export BENCH_FETCH_WAIT_MS=${BENCH_FETCH_WAIT_MS:-10} BENCH_LINGER_MS=${BENCH_LINGER_MS:-5}
# Neither pipeline uses BLAS; an idle OpenBLAS pool must not spin on the cores.
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d /tmp/vw-bench-pipe-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

echo "== building vela-worker and bench_pipe in $build"
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" --target vela-worker bench_pipe -j 2 >/dev/null
bin=$build/vela-worker
pipe=$build/bench_pipe

topics=dlq:1,lw:4,lrw:4,lp:4,lrp:4
for r in $(seq "$ROUNDS"); do
  for k in w p s; do topics+=",i$k$r:4,o$k$r:4"; done
done
"$bin" broker --topics "$topics" --bootstrap-file "$tmp/boot" >"$tmp/broker.out" \
  2>"$tmp/broker.log" &
pids+=($!)
for _ in $(seq 100); do [[ -s $tmp/boot ]] && break; sleep 0.1; done
B=$(cat "$tmp/boot")
cat >"$tmp/worker.yaml" <<YAML
kafka:
  bootstrap.servers: "$B"
  consumer:
    session.timeout.ms: 6000
    heartbeat.interval.ms: 1000
    fetch.wait.max.ms: $BENCH_FETCH_WAIT_MS
  producer:
    linger.ms: $BENCH_LINGER_MS
    queue.buffering.max.messages: 1000000
topics: {dlq: dlq}
model: {device: test-echo}
limits: {max_in_flight: ${BENCH_MAX_IN_FLIGHT:-100000}}
metrics: {listen: ""}
log: {level: warn}
YAML

field() { sed -n "s/.*[ ^]$1=\([0-9.]*\).*/\1/p" <<<" $2"; }

# throughput KIND ROUND: loads N records, runs one pipeline over them, prints
# the measure line.
throughput() {
  local kind=$1 r=$2 in=i$1$2 out=o$1$2
  "$pipe" load "$B" "$in" "$N" 0 x >/dev/null
  case $kind in
    w)
      VELA_KAFKA_GROUP_ID=g$in VELA_TOPICS_INPUT=$in VELA_TOPICS_RESULTS=$out \
        "$bin" run --config "$tmp/worker.yaml" 2>"$tmp/w$r.log" &
      local wp=$!
      pids+=("$wp")
      "$pipe" measure "$B" "$in" "$out" "$N" 180
      kill -TERM "$wp" && wait "$wp"
      ;;
    p | s)
      BENCH_PIPE_SHAPED=$([[ $kind == s ]] && echo 1 || echo 0) \
        "$pipe" pipe "$B" "$in" "$out" g$in "$N" &
      local pp=$!
      pids+=("$pp")
      "$pipe" measure "$B" "$in" "$out" "$N" 180
      wait "$pp"
      ;;
  esac
}

declare -A mid
echo "== throughput: $N preloaded records, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  for k in w p s; do
    line=$(throughput "$k" "$r")
    mid[$k$r]=$(field mid "$line")
    printf "round %d %-7s %s\n" "$r" "$(case $k in w) echo worker ;; p) echo pipe ;; s) echo shaped ;; esac)" "$line"
  done
done

# latency IN OUT GROUP KIND: M records at RATE/s into a running, warmed pipeline.
latency() {
  local in=$1 out=$2 kind=$3 p
  if [[ $kind == w ]]; then
    VELA_KAFKA_GROUP_ID=g$in VELA_TOPICS_INPUT=$in VELA_TOPICS_RESULTS=$out \
      "$bin" run --config "$tmp/worker.yaml" 2>"$tmp/wl.log" &
  else
    "$pipe" pipe "$B" "$in" "$out" g$in $((M + 500)) &
  fi
  p=$!
  pids+=("$p")
  sleep 5 # the first group join takes 3 s on the mock, the first produce ~1 s
  "$pipe" load "$B" "$in" 500 500 x w >/dev/null
  sleep 2
  "$pipe" load "$B" "$in" "$M" "$RATE" x >/dev/null
  "$pipe" measure "$B" "$in" "$out" "$M" 60
  if [[ $kind == w ]]; then kill -TERM "$p"; fi
  wait "$p"
}
echo "== latency: $M records at $RATE/s"
lw=$(latency lw lrw w)
lp=$(latency lp lrp p)
echo "worker: $lw"
echo "pipe:   $lp"

median() { printf "%s\n" "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ws=() ps=() ss=()
for r in $(seq "$ROUNDS"); do
  ws+=("${mid[w$r]}")
  ps+=("${mid[p$r]}")
  ss+=("${mid[s$r]}")
done
mw=$(median "${ws[@]}") mp=$(median "${ps[@]}") ms=$(median "${ss[@]}")
echo
printf "%-44s %14s %8s %8s\n" "median of $ROUNDS rounds" "records/s" "p50 ms" "p99 ms"
printf "%-44s %14s %8s %8s\n" "vela-worker (rejections)" "$mw" "$(field p50_ms "$lw")" \
  "$(field p99_ms "$lw")"
printf "%-44s %14s %8s %8s\n" "raw pipe, bare records (bench_pipe)" "$mp" "$(field p50_ms "$lp")" \
  "$(field p99_ms "$lp")"
printf "%-44s %14s\n" "raw pipe, the worker's record shape" "$ms"
awk -v w="$mw" -v p="$mp" -v s="$ms" 'BEGIN {
    r = w / p; v = (r >= 0.9) ? "OK" : "BELOW TARGET"
    printf "worker/pipe %.2fx (target >= 0.9x: %s), worker/shaped pipe %.2fx\n", r, v, w / s }'
echo "(mock broker: librdkafka 2.0.2 rdkafka_mock, 1 broker, 4 partitions," \
  "fetch.wait.max.ms=$BENCH_FETCH_WAIT_MS, linger.ms=$BENCH_LINGER_MS)"
