#!/usr/bin/env bash
# bench/pipeline.sh — vela-worker's record pipeline beside a raw librdkafka
# consume -> produce pipe (bench/bench_pipe.c), on the same `vela-worker broker`
# (librdkafka 2.0.2 mock cluster) in the same run, with trivially rejected
# records ("x": 400 json_invalid, so no model time is involved).
#
#   1. throughput, ROUNDS rounds: each pipeline is started, joined and warmed
#      (500 records), then N records are produced as fast as possible. Rate =
#      the middle 80 % of the results over their CreateTime span (bench_pipe
#      measure "mid": the steady state, without the first fetch and the tail);
#      CPU = the pipeline process's CPU time (all threads, from
#      /proc/PID/task/*/schedstat) from the end of the warm-up until every
#      result was read back, per record: the figure that varies least on a
#      shared machine. Each round runs three pipelines in turn on fresh topics:
#        worker   vela-worker run (test-echo config: every record rejected by
#                 the worker-level checks, the result record of the contract)
#        pipe     bench_pipe pipe: one record per input, the key and a 14-byte
#                 constant value, no headers
#        shaped   bench_pipe pipe with BENCH_PIPE_SHAPED=1: the worker's record
#                 shape (its four headers, a 210-byte value) at the least CPU
#        kcat     kcat -G (group member) | kcat -P: the other raw pipe the issue
#                 names; keys and values as read, no headers; CPU of both
#                 processes (kcat -P holds its last partial read until more
#                 input comes: 2,000 unmeasured filler records follow the N)
#      and with BENCH_DECOMPOSE=1 two more, to split the shape's cost:
#        headers  the four headers with the pipe's 14-byte value
#        value    the 210-byte value without headers
#   2. latency: M records produced open-loop at RATE/s into a running, warmed
#      pipeline; p50/p99 of (result CreateTime - request CreateTime), worker
#      and pipe.
#   3. the model path (tiny bundle, CPU): see below.
# Prints every round, the medians and the ratios worker/pipe and
# worker/shaped, of the rate (target >= 0.9x the raw pipe) and of the CPU per
# record (pipe / worker: >= 1 means the worker needs less).
#   bench/pipeline.sh [N=40000] [RATE=2000] [M=4000] [ROUNDS=3]
# N stays within the mock's retention: it keeps ~17,000 of the worker's result
# records per partition and drops older ones, which measure (reading the results
# after the run) would then miss.
# Env: VW_BENCH_BUILD (default build-bench), BENCH_FETCH_WAIT_MS (10) and
# BENCH_LINGER_MS (5) apply to all pipelines; BENCH_MAX_IN_FLIGHT (100000:
# the pipe has no bound, so neither has the worker by default).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-40000}
RATE=${2:-2000}
M=${3:-4000}
ROUNDS=${4:-3}
build=${VW_BENCH_BUILD:-build-bench}
export BENCH_FETCH_WAIT_MS=${BENCH_FETCH_WAIT_MS:-10} BENCH_LINGER_MS=${BENCH_LINGER_MS:-5}
# Neither pipeline uses BLAS; an idle OpenBLAS pool must not spin on the cores.
export OPENBLAS_NUM_THREADS=1
command -v kcat >/dev/null || { echo "bench/pipeline.sh: kcat is needed (scripts/deps)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/vw-bench-pipe-XXXXXX)
# Every pipeline's pid goes to $tmp/pids: they are started inside $(...)
# subshells, whose variables the EXIT trap would not see.
cleanup() {
  kill $(cat "$tmp/pids" 2>/dev/null) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== building vela-worker and bench_pipe in $build"
cmake -S . -B "$build" -G Ninja >/dev/null
cmake --build "$build" --target vela-worker bench_pipe -j 2 >/dev/null
bin=$build/vela-worker
pipe=$build/bench_pipe

topics=dlq:1,lw:4,lrw:4,lp:4,lrp:4,mi:4,mo:4,mli:4,mlo:4
for r in $(seq "$ROUNDS"); do
  for k in w p s k ${BENCH_DECOMPOSE:+h v}; do topics+=",i$k$r:4,o$k$r:4"; done
done
"$bin" broker --topics "$topics" --bootstrap-file "$tmp/boot" >"$tmp/broker.out" \
  2>"$tmp/broker.log" &
echo $! >>"$tmp/pids"
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

# CPU time (ns) of every thread of the processes PID..., from the scheduler.
cpu_ns() {
  local sum=0 a f p
  for p in "$@"; do
    for f in /proc/"$p"/task/*/schedstat; do
      read -r a _ <"$f" 2>/dev/null && sum=$((sum + a))
    done
  done
  echo "$sum"
}

# start KIND IN OUT: a pipeline in the background (pids in $sp), joined and warm.
start() {
  sp=
  case $1 in
    w)
      VELA_KAFKA_GROUP_ID=g$2 VELA_TOPICS_INPUT=$2 VELA_TOPICS_RESULTS=$3 \
        "$bin" run --config "$tmp/worker.yaml" 2>"$tmp/w$2.log" &
      ;;
    p | s | h | v)
      BENCH_PIPE_SHAPED=$(case $1 in p) echo 0 ;; s) echo 1 ;; h) echo 2 ;; v) echo 3 ;; esac) \
        "$pipe" pipe "$B" "$2" "$3" g$2 1000000000 &
      ;;
    k)
      rm -f "$tmp/fifo$2" && mkfifo "$tmp/fifo$2"
      kcat -P -b "$B" -t "$3" -K '|' -X linger.ms="$BENCH_LINGER_MS" \
        -X queue.buffering.max.messages=1000000 <"$tmp/fifo$2" 2>"$tmp/kp$2.log" &
      sp=$!
      kcat -b "$B" -G "g$2" "$2" -K '|' -q -u -X fetch.wait.max.ms="$BENCH_FETCH_WAIT_MS" \
        -X session.timeout.ms=6000 -X heartbeat.interval.ms=1000 -X auto.offset.reset=earliest \
        >"$tmp/fifo$2" 2>"$tmp/kc$2.log" &
      ;;
  esac
  sp="$! $sp"
  echo $sp >>"$tmp/pids"
  sleep 5 # the first group join takes 3 s on the mock, the first produce ~1 s
  "$pipe" load "$B" "$2" 500 500 x w >/dev/null
  sleep 2
}

# throughput KIND ROUND: N records as fast as possible into a running, warm
# pipeline; prints the measure line and the pipeline's CPU per record.
throughput() {
  local in=i$1$2 out=o$1$2
  start "$1" "$in" "$out"
  local c0 c1 line n=$N
  c0=$(cpu_ns $sp)
  "$pipe" load "$B" "$in" "$N" 0 x >/dev/null
  if [[ $1 == k ]]; then
    # kcat -P sends the last part of what it read only when more input (or
    # EOF) comes: 2,000 filler records (keys f…, not measured) push the tail
    # through; they are counted in the CPU per record.
    "$pipe" load "$B" "$in" 2000 0 x f >/dev/null
    n=$((N + 2000))
  fi
  line=$("$pipe" measure "$B" "$in" "$out" "$N" 180)
  c1=$(cpu_ns $sp)
  kill -TERM $sp 2>/dev/null; wait $sp || true
  echo "$line cpu_us=$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / n / 1e3}')"
}

declare -A mid cpu
echo "== throughput: $N records into a running pipeline, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  for k in w p s k ${BENCH_DECOMPOSE:+h v}; do
    line=$(throughput "$k" "$r")
    mid[$k$r]=$(field mid "$line")
    cpu[$k$r]=$(field cpu_us "$line")
    printf "round %d %-7s %s\n" "$r" "$(case $k in w) echo worker ;; p) echo pipe ;; s) echo shaped ;; k) echo kcat ;; h) echo headers ;; v) echo value ;; esac)" "$line"
  done
done

# latency KIND IN OUT: M records at RATE/s into a running, warm pipeline.
latency() {
  start "$1" "$2" "$3"
  "$pipe" load "$B" "$2" "$M" "$RATE" x >/dev/null
  "$pipe" measure "$B" "$2" "$3" "$M" 60
  kill -TERM $sp 2>/dev/null; wait $sp || true
}
echo "== latency: $M records at $RATE/s"
lw=$(latency w lw lrw)
lp=$(latency p lp lrp)
echo "worker: $lw"
echo "pipe:   $lp"

# 3. The model path: the tiny bundle on the CPU (1 BLAS thread), requests
#    fixtures/requests/blog_quickstart.json. Throughput: MODEL_N preloaded
#    (mid rate as above); latency: MODEL_M at MODEL_RATE/s, open loop.
MODEL_N=${BENCH_MODEL_N:-60} MODEL_M=${BENCH_MODEL_M:-40} MODEL_RATE=${BENCH_MODEL_RATE:-2}
req=$(tr -d '\n' <fixtures/requests/blog_quickstart.json)
sed -e "s|model: {device: test-echo}|model: {bundle: \"$PWD/fixtures/tiny-vela\", device: cpu}|" \
  -e 's/max_in_flight: [0-9]*/max_in_flight: 1024/' "$tmp/worker.yaml" >"$tmp/model.yaml"
model_run() { # IN OUT COUNT RATE
  VELA_KAFKA_GROUP_ID=g$1 VELA_TOPICS_INPUT=$1 VELA_TOPICS_RESULTS=$2 \
    "$bin" run --config "$tmp/model.yaml" 2>"$tmp/m$1.log" &
  local p=$!
  echo "$p" >>"$tmp/pids"
  if [[ $4 == 0 ]]; then
    "$pipe" measure "$B" "$1" "$2" "$3" 300
  else
    sleep 5
    "$pipe" load "$B" "$1" 5 5 "$req" w >/dev/null
    sleep 3
    "$pipe" load "$B" "$1" "$3" "$4" "$req" >/dev/null
    "$pipe" measure "$B" "$1" "$2" "$3" 300
  fi
  kill -TERM "$p" && wait "$p"
}
echo "== model path: tiny bundle, CPU, blog_quickstart.json"
"$pipe" load "$B" mi "$MODEL_N" 0 "$req" >/dev/null
mt=$(model_run mi mo "$MODEL_N" 0)
ml=$(model_run mli mlo "$MODEL_M" "$MODEL_RATE")
echo "throughput ($MODEL_N preloaded): $mt"
echo "latency ($MODEL_M at $MODEL_RATE/s): $ml"

median() { printf "%s\n" "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
col() { # KIND ARRAY: the values of one pipeline over the rounds
  local -n a=$2
  for r in $(seq "$ROUNDS"); do echo "${a[$1$r]}"; done
}
mw=$(median $(col w mid)) mp=$(median $(col p mid)) ms=$(median $(col s mid))
cw=$(median $(col w cpu)) cp=$(median $(col p cpu)) cs=$(median $(col s cpu))
mk=$(median $(col k mid)) ck=$(median $(col k cpu))
echo
printf "%-40s %11s %10s %7s %7s\n" "median of $ROUNDS rounds" "records/s" "CPU us/rec" \
  "p50 ms" "p99 ms"
printf "%-40s %11s %10s %7s %7s\n" "vela-worker (rejections)" "$mw" "$cw" \
  "$(field p50_ms "$lw")" "$(field p99_ms "$lw")"
printf "%-40s %11s %10s %7s %7s\n" "raw pipe, bare records (bench_pipe)" "$mp" "$cp" \
  "$(field p50_ms "$lp")" "$(field p99_ms "$lp")"
printf "%-40s %11s %10s\n" "raw pipe, the worker's record shape" "$ms" "$cs"
printf "%-40s %11s %10s\n" "kcat pipe (kcat -G | kcat -P)" "$mk" "$ck"
if [[ -n ${BENCH_DECOMPOSE:-} ]]; then
  printf "%-40s %11s %10s\n" "raw pipe, the four headers only" "$(median $(col h mid))" \
    "$(median $(col h cpu))"
  printf "%-40s %11s %10s\n" "raw pipe, the 210-byte value only" "$(median $(col v mid))" \
    "$(median $(col v cpu))"
fi
printf "%-40s %11s %10s %7s %7s\n" "vela-worker, tiny bundle on the CPU" "$(field mid "$mt")" "" \
  "$(field p50_ms "$ml")" "$(field p99_ms "$ml")"
awk -v w="$mw" -v p="$mp" -v s="$ms" -v k="$mk" -v cw="$cw" -v cp="$cp" -v cs="$cs" \
  -v ck="$ck" 'BEGIN {
    r = w / p; v = (r >= 0.9) ? "OK" : "BELOW TARGET"
    printf "worker/pipe: rate %.2fx (target >= 0.9x: %s), CPU per record %.2fx\n", r, v, cp / cw
    printf "worker/shaped pipe: rate %.2fx, CPU per record %.2fx\n", w / s, cs / cw
    r = w / k; v = (r >= 0.9) ? "OK" : "BELOW TARGET"
    printf "worker/kcat pipe: rate %.2fx (target >= 0.9x: %s), CPU per record %.2fx\n", r, v, ck / cw }'
echo "(mock broker: librdkafka 2.0.2 rdkafka_mock, 1 broker, 4 partitions," \
  "fetch.wait.max.ms=$BENCH_FETCH_WAIT_MS, linger.ms=$BENCH_LINGER_MS)"
