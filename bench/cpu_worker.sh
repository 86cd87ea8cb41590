#!/usr/bin/env bash
# bench/cpu_worker.sh — the worker on the CPU device against `vela-worker score
# --jsonl` on the same requests, in the same run (docs/performance.md "CPU
# thread model"):
#   score   N copies of REQUEST through `vela-worker score --device cpu --jsonl`
#           (one process, no Kafka, batches of 16 requests): requests/s =
#           (N - 1) / (wall of N - wall of 1), so start-up and the first call
#           do not count;
#   worker  the same N records preloaded into a topic of `vela-worker broker`
#           (the mock cluster), then `vela-worker run` with model.device cpu
#           and batching.max_requests 16 (the same executor calls): its
#           admission threads plan the waiting records and its processing
#           threads finish batches while the executor runs the next one;
#           requests/s = bench_pipe measure's mid rate (the 10th to 90th
#           percentile of the results' timestamps: the steady state).
# ROUNDS rounds alternate the two. Prints every round, the medians with their
# spread and worker/score (target >= 0.9x).
#   bench/cpu_worker.sh [N=160] [ROUNDS=3]
# Env: BENCH_BUNDLE (default fixtures/tiny-vela; the 0.8B-shaped
# /tmp/vela-0.8b-random works with a small N), BENCH_REQUEST (default
# fixtures/requests/blog_quickstart.json), BENCH_CPU_THREADS (model.cpu_threads
# and score's pool; default 0: each one's own default), VW_BENCH_BUILD
# (default build-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-160}
ROUNDS=${2:-3}
build=${VW_BENCH_BUILD:-build-bench}
bundle=$(realpath -m "${BENCH_BUNDLE:-fixtures/tiny-vela}") # the config is in a temporary directory
request=${BENCH_REQUEST:-fixtures/requests/blog_quickstart.json}
threads=${BENCH_CPU_THREADS:-0}
tmp=$(mktemp -d /tmp/vw-bench-cpu-XXXXXX)
cleanup() {
  kill $(cat "$tmp/pids" 2>/dev/null) 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== building vela-worker and bench_pipe in $build"
cmake -S . -B "$build" -G Ninja -DVW_CUDA=OFF >/dev/null
cmake --build "$build" --target vela-worker bench_pipe -j 2 >/dev/null
bin=$build/vela-worker
pipe=$build/bench_pipe
req=$(tr -d '\n' <"$request")
for i in $(seq "$N"); do echo "$req"; done >"$tmp/n.jsonl"
echo "$req" >"$tmp/1.jsonl"

topics=""
for r in $(seq "$ROUNDS"); do topics+="${topics:+,}in$r:4,out$r:4"; done
"$bin" broker --topics "$topics,dlq:1" --bootstrap-file "$tmp/boot" >"$tmp/broker.out" \
  2>"$tmp/broker.log" &
echo $! >>"$tmp/pids"
for _ in $(seq 100); do [[ -s $tmp/boot ]] && break; sleep 0.1; done
B=$(cat "$tmp/boot")
cat >"$tmp/worker.yaml" <<YAML
kafka:
  bootstrap.servers: "$B"
  consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000, fetch.wait.max.ms: 10}
  producer: {linger.ms: 5}
topics: {dlq: dlq}
model: {bundle: "$bundle", device: cpu, cpu_threads: $threads}
batching: {max_requests: 16}
metrics: {listen: ""}
log: {level: warn}
YAML

score_args=(score --bundle "$bundle" --device cpu --jsonl)
[[ $threads == 0 ]] || export VELA_MODEL_CPU_THREADS=$threads
wall() { # seconds of `vela-worker score --jsonl` over FILE
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" "${score_args[@]}" <"$1" >"$tmp/score.out" 2>"$tmp/score.log"
  t1=$(date +%s.%N)
  [[ $(grep -c '^{' "$tmp/score.out") -ge $(wc -l <"$1") ]] ||
    { echo "bench/cpu_worker.sh: score answered less than it read" >&2; exit 1; }
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}'
}

declare -a s_rate w_rate
echo "== $N x $(basename "$request") on $bundle, $ROUNDS rounds" \
  "(load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq "$ROUNDS"); do
  w1=$(wall "$tmp/1.jsonl")
  wn=$(wall "$tmp/n.jsonl")
  s_rate[$r]=$(awk -v n="$N" -v a="$w1" -v b="$wn" 'BEGIN {printf "%.2f", (n - 1) / (b - a)}')
  "$pipe" load "$B" "in$r" "$N" 0 "$req" >/dev/null
  VELA_KAFKA_GROUP_ID=g$r VELA_TOPICS_INPUT=in$r VELA_TOPICS_RESULTS=out$r \
    "$bin" run --config "$tmp/worker.yaml" 2>"$tmp/w$r.log" &
  wp=$!
  echo "$wp" >>"$tmp/pids"
  "$pipe" measure "$B" "in$r" "out$r" "$N" 900 >"$tmp/m$r" &
  mp=$!
  while kill -0 "$mp" 2>/dev/null; do # a worker that stopped answers nothing: say why
    if ! kill -0 "$wp" 2>/dev/null; then
      kill "$mp"
      echo "bench/cpu_worker.sh: the worker exited; its log:" >&2
      tail -5 "$tmp/w$r.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  wait "$mp"
  line=$(cat "$tmp/m$r")
  kill -TERM "$wp" && wait "$wp" || true
  w_rate[$r]=$(sed -n 's/.* mid_exact=\([0-9.]*\).*/\1/p' <<<"$line")
  printf "round %d: score %s req/s (1 request %.2f s, %d requests %.2f s) | worker %s req/s (%s)\n" \
    "$r" "${s_rate[$r]}" "$w1" "$N" "$wn" "${w_rate[$r]}" "$line"
done
echo "== load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%s\n" "${s_rate[@]}" >"$tmp/s"
printf "%s\n" "${w_rate[@]}" >"$tmp/w"
paste "$tmp/w" "$tmp/s" | awk '
  { w[NR] = $1; s[NR] = $2; r[NR] = ($2 > 0) ? $1 / $2 : 0 }
  function med(a, n,   i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return (n % 2) ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
  function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
  function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
  END {
    n = NR
    printf "score --jsonl: median %.2f req/s (%.2f-%.2f)\n", med(s, n), lo(s, n), hi(s, n)
    printf "worker, cpu:   median %.2f req/s (%.2f-%.2f)\n", med(w, n), lo(w, n), hi(w, n)
    m = med(r, n)
    printf "worker/score:  %.2fx (round by round %.2f-%.2f; target >= 0.9x: %s)\n", m, lo(r, n),
      hi(r, n), (m >= 0.9) ? "OK" : "BELOW TARGET" }'
