#!/usr/bin/env bash
# bench/pipeline.sh — vela-worker's record pipeline beside a raw librdkafka
# consume -> produce pipe (bench/bench_pipe.c), on the same `vela-worker broker`
# (librdkafka 2.0.2 mock cluster) in the same run, with trivially rejected
# records ("x": 400 json_invalid, so no model time is involved).
#   1. throughput: N records preloaded, then drained; records/s over the result
#      timestamps (first to last result).
#   2. latency: M records produced open-loop at RATE/s after a warm-up;
#      p50/p99 of (result CreateTime - request CreateTime).
# Prints both rows and the worker/pipe throughput ratio (target >= 0.9x).
#   bench/pipeline.sh [N=20000] [RATE=2000] [M=4000]
# Env: VW_BENCH_BUILD (default build-bench), BENCH_FETCH_WAIT_MS (10) and
# BENCH_LINGER_MS (5) apply to both pipelines.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000}
RATE=${2:-2000}
M=${3:-4000}
build=${VW_BENCH_BUILD:-build-bench}
export BENCH_FETCH_WAIT_MS=${BENCH_FETCH_WAIT_MS:-10} BENCH_LINGER_MS=${BENCH_LINGER_MS:-5}
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

"$bin" broker --topics tw:4,rw:4,tp:4,rp:4,lw:4,lrw:4,lp:4,lrp:4,dlq:1 \
  --bootstrap-file "$tmp/boot" >"$tmp/broker.out" 2>"$tmp/broker.log" &
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
limits: {max_in_flight: 10000}
metrics: {listen: ""}
log: {level: warn}
YAML

# start_worker GROUP IN OUT LOG: the worker in the background (pid in $wpid).
start_worker() {
  VELA_KAFKA_GROUP_ID=$1 VELA_TOPICS_INPUT=$2 VELA_TOPICS_RESULTS=$3 \
    "$bin" run --config "$tmp/worker.yaml" 2>"$4" &
  wpid=$!
  pids+=("$wpid")
}
stop_worker() { kill -TERM "$wpid"; wait "$wpid"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

echo "== throughput: $N records preloaded, then drained"
"$pipe" load "$B" tw "$N" 0 x
"$pipe" load "$B" tp "$N" 0 x
start_worker bench-w tw rw "$tmp/w1.log"
w1=$("$pipe" measure "$B" tw rw "$N" 180)
stop_worker
"$pipe" pipe "$B" tp rp bench-p "$N"
p1=$("$pipe" measure "$B" tp rp "$N" 60)
echo "worker: $w1"
echo "pipe:   $p1"

echo "== latency: $M records at $RATE/s after 500 warm-up records"
start_worker bench-lw lw lrw "$tmp/w2.log"
"$pipe" load "$B" lw 500 500 x w >/dev/null
sleep 2
"$pipe" load "$B" lw "$M" "$RATE" x
w2=$("$pipe" measure "$B" lw lrw "$M" 60)
stop_worker
"$pipe" pipe "$B" lp lrp bench-lp $((M + 500)) &
ppid=$!
pids+=("$ppid")
"$pipe" load "$B" lp 500 500 x w >/dev/null
sleep 2
"$pipe" load "$B" lp "$M" "$RATE" x
wait "$ppid"
p2=$("$pipe" measure "$B" lp lrp "$M" 60)
echo "worker: $w2"
echo "pipe:   $p2"

echo
printf "%-34s %12s %10s %10s\n" "" "records/s" "p50 ms" "p99 ms"
printf "%-34s %12s %10s %10s\n" "vela-worker (rejections)" "$(field rate "$w1")" \
  "$(field p50_ms "$w2")" "$(field p99_ms "$w2")"
printf "%-34s %12s %10s %10s\n" "raw librdkafka pipe (bench_pipe)" "$(field rate "$p1")" \
  "$(field p50_ms "$p2")" "$(field p99_ms "$p2")"
awk -v w="$(field rate "$w1")" -v p="$(field rate "$p1")" \
  'BEGIN { r = w / p; printf "throughput ratio worker/pipe: %.2fx (target >= 0.9x) %s\n", r, r >= 0.9 ? "OK" : "BELOW TARGET" }'
echo "(mock broker: librdkafka 2.0.2 rdkafka_mock, 1 broker, 4 partitions, fetch.wait.max.ms=$BENCH_FETCH_WAIT_MS, linger.ms=$BENCH_LINGER_MS)"
