#!/usr/bin/env bash
# bench/pipeline.sh — vela-worker's record pipeline beside a raw librdkafka
# consume -> produce pipe (bench/bench_pipe.c), on the same `vela-worker broker`
# (librdkafka 2.0.2 mock cluster) in the same run, with trivially rejected
# records ("x": 400 json_invalid, so no model time is involved). Both pipelines
# are started, joined and warmed up (500 records) before anything is measured.
#   1. burst: N records produced as fast as possible; rate = N over the
#      makespan (first request CreateTime to last result CreateTime); drain = N
#      over the span of the results alone (what the pipeline itself can do
#      once the input is there).
#   2. latency: M records produced open-loop at RATE/s; p50/p99 of (result
#      CreateTime - request CreateTime).
# Prints both pipelines and the worker/pipe ratio of the burst rate (target
# >= 0.9x) and of the drain rate.
#   bench/pipeline.sh [N=20000] [RATE=2000] [M=4000]
# Env: VW_BENCH_BUILD (default build-bench), BENCH_FETCH_WAIT_MS (10) and
# BENCH_LINGER_MS (5) apply to both pipelines; BENCH_MAX_IN_FLIGHT (100000:
# the pipe has no bound, so neither has the worker by default).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-20000}
RATE=${2:-2000}
M=${3:-4000}
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

"$bin" broker --topics bw:4,brw:4,bp:4,brp:4,lw:4,lrw:4,lp:4,lrp:4,dlq:1 \
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
limits: {max_in_flight: ${BENCH_MAX_IN_FLIGHT:-100000}}
metrics: {listen: ""}
log: {level: warn}
YAML

# start_worker GROUP IN OUT LOG: the worker in the background, joined and warm.
start_worker() {
  VELA_KAFKA_GROUP_ID=$1 VELA_TOPICS_INPUT=$2 VELA_TOPICS_RESULTS=$3 \
    "$bin" run --config "$tmp/worker.yaml" 2>"$4" &
  wpid=$!
  pids+=("$wpid")
  warm "$2"
}
# start_pipe GROUP IN OUT COUNT: the raw pipe in the background, joined and warm.
start_pipe() {
  "$pipe" pipe "$B" "$2" "$3" "$1" $(($4 + 500)) &
  ppid=$!
  pids+=("$ppid")
  warm "$2"
}
# warm TOPIC: the first group join takes 3 s on the mock, the first produce ~1 s.
warm() {
  sleep 5
  "$pipe" load "$B" "$1" 500 500 x w >/dev/null
  sleep 2
}
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

echo "== burst: $N records produced as fast as possible"
start_worker bench-bw bw brw "$tmp/w1.log"
"$pipe" load "$B" bw "$N" 0 x
w1=$("$pipe" measure "$B" bw brw "$N" 180)
kill -TERM "$wpid" && wait "$wpid"
start_pipe bench-bp bp brp "$N"
"$pipe" load "$B" bp "$N" 0 x
wait "$ppid"
p1=$("$pipe" measure "$B" bp brp "$N" 60)
echo "worker: $w1"
echo "pipe:   $p1"

echo "== latency: $M records at $RATE/s"
start_worker bench-lw lw lrw "$tmp/w2.log"
"$pipe" load "$B" lw "$M" "$RATE" x
w2=$("$pipe" measure "$B" lw lrw "$M" 60)
kill -TERM "$wpid" && wait "$wpid"
start_pipe bench-lp lp lrp "$M"
"$pipe" load "$B" lp "$M" "$RATE" x
wait "$ppid"
p2=$("$pipe" measure "$B" lp lrp "$M" 60)
echo "worker: $w2"
echo "pipe:   $p2"

echo
printf "%-34s %12s %12s %8s %8s\n" "" "burst rec/s" "drain rec/s" "p50 ms" "p99 ms"
printf "%-34s %12s %12s %8s %8s\n" "vela-worker (rejections)" "$(field rate "$w1")" \
  "$(field drain "$w1")" "$(field p50_ms "$w2")" "$(field p99_ms "$w2")"
printf "%-34s %12s %12s %8s %8s\n" "raw librdkafka pipe (bench_pipe)" "$(field rate "$p1")" \
  "$(field drain "$p1")" "$(field p50_ms "$p2")" "$(field p99_ms "$p2")"
awk -v w="$(field rate "$w1")" -v p="$(field rate "$p1")" -v wd="$(field drain "$w1")" \
  -v pd="$(field drain "$p1")" 'BEGIN {
    r = w / p; v = (r >= 0.9) ? "OK" : "BELOW TARGET"
    printf "worker/pipe: burst %.2fx (target >= 0.9x: %s), drain %.2fx\n", r, v, wd / pd }'
echo "(mock broker: librdkafka 2.0.2 rdkafka_mock, 1 broker, 4 partitions," \
  "fetch.wait.max.ms=$BENCH_FETCH_WAIT_MS, linger.ms=$BENCH_LINGER_MS)"
