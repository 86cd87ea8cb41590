#!/usr/bin/env bash
# bench/eval.sh — `vela-worker eval` over a synthetic replay of N records (default
# 1,000,000): results, a baseline replay of the same ids and labels for 90% of them,
# every question type (choice, noul, score, a 3-label set fanned out, a span
# question with 0-3 spans). Prints the wall time, records/s and peak RSS of
#   eval --results A --labels L                (metrics)
#   eval --results A --labels L --baseline B   (metrics + A/B + --top 10)
# at N/10 and N records. The peak RSS over the binary's floor (`vela-worker --help`),
# per record, is what grows with the input: the id index and one AUROC pair per
# labelled Noul; an envelope never stays beyond its line.
# beside two references on the same results file:
#   wc -l                       reading the bytes, nothing parsed (the I/O floor);
#   python3 json.loads per line  the stdlib parse alone, no join, no metric.
#   bench/eval.sh [N]     env: BUILD (default build-eval), DIR (the generated files,
#                         default /tmp/vela-eval-bench; reused when N matches)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
BUILD=${BUILD:-build-eval}
DIR=${DIR:-/tmp/vela-eval-bench}
[[ -f $BUILD/build.ninja ]] || cmake -S . -B "$BUILD" -G Ninja >/dev/null
cmake --build "$BUILD" --target vela-worker >/dev/null
bin=$BUILD/vela-worker
mkdir -p "$DIR"

if [[ "$(cat "$DIR/N" 2>/dev/null)" != "$N" ]]; then
  echo "== generating $N records into $DIR (python3 stdlib, seeded)"
  python3 - "$DIR" "$N" <<'PYEOF'
import json, random, sys
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20260720)
PII = ["PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER"]
def env(r):
    p = [r.random() + 0.01 for _ in range(3)]; s = sum(p); p = [x / s for x in p]
    pick = ["refund", "shipping", "other"][p.index(max(p))]
    q = r.random()
    lv = [r.random() for _ in range(4)]; s = sum(lv); lv = [x / s for x in lv]
    tags = [r.random() for _ in range(3)]
    spans = []
    for _ in range(r.randint(0, 3)):
        a = r.randint(0, 200); b = a + r.randint(1, 12)
        spans.append({"label": r.choice(PII), "start": a, "end": b, "text": "x" * (b - a),
                      "probability": r.random()})
    ans = {"intent": {"type": "choice", "choice": pick, "confidence": max(p) - min(p),
                      "probabilities": dict(zip(["refund", "shipping", "other"], p)),
                      "abstain_probability": r.random() / 5},
           "angry": {"type": "noul", "noul": q},
           "sev": {"type": "score", "score": sum(i * x for i, x in enumerate(lv)),
                   "confidence": max(lv), "legend": {str(i): str(i + 1) for i in range(4)},
                   "probabilities": {str(i): x for i, x in enumerate(lv)}}}
    for k, v in zip(["a", "b", "c"], tags):
        ans["tags." + k] = {"type": "noul", "noul": v}
    ans["pii"] = {"type": "noul", "noul": max([s["probability"] for s in spans], default=0.0)}
    e = {"answers": ans, "usage": {"input_tokens": r.randint(100, 2000), "output_tokens": 0},
         "spans": {"pii": spans}, "span_heads": {"pii": "router"},
         "sets": {"tags": {"selected": [k for k, v in zip("abc", tags) if v > 0.5],
                           "probabilities": dict(zip("abc", tags))}},
         "thresholds": {"pii": 0.5, "tags": 0.5}}
    return e, pick, q, spans
with open(f"{d}/a.jsonl", "w") as fa, open(f"{d}/b.jsonl", "w") as fb, \
        open(f"{d}/labels.jsonl", "w") as fl:
    for i in range(n):
        rid = f"req-{i:08d}"
        src = f"requests:{i % 8}:{i // 8}"
        for f in (fa, fb):
            e, pick, q, spans = env(rng)
            f.write(json.dumps({"source": src, "request_id": rid, "vela_status": 200,
                                "value": dict({"request_id": rid}, **e)},
                               separators=(",", ":")) + "\n")
            if f is fa:
                keep = (pick, q, spans)
        if i % 10:
            pick, q, spans = keep
            lab = {"intent": pick if rng.random() < 0.7 else "other",
                   "angry": rng.random() < q, "sev": rng.randint(0, 3),
                   "tags": [k for k in "abc" if rng.random() < 0.4],
                   "pii": [{"start": s["start"], "end": s["end"], "label": s["label"]}
                           for s in spans if rng.random() < 0.7]}
            fl.write(json.dumps({"request_id": rid, "labels": lab}, separators=(",", ":")) + "\n")
PYEOF
  echo "$N" >"$DIR/N"
fi
for f in a b labels; do
  head -n $((N / 10)) "$DIR/$f.jsonl" >"$DIR/$f.small.jsonl"
done

# run LABEL N FLOOR_KIB CMD...: wall seconds and peak RSS of CMD (stdout discarded), and
# the RSS above FLOOR_KIB per record.
run() {
  local label=$1 n=$2 floor=$3
  shift 3
  /usr/bin/time -f "%e %M" -o "$DIR/time" "$@" >/dev/null 2>"$DIR/stderr" ||
    { cat "$DIR/stderr" >&2; exit 1; }
  read -r secs kib <"$DIR/time"
  awk -v l="$label" -v n="$n" -v s="$secs" -v k="$kib" -v f="$floor" 'BEGIN {
    printf "%-40s %8d rec %7.2f s %9.0f rec/s  peak RSS %6.1f MiB, %5.1f MiB over floor (%3.0f B/rec)\n",
           l, n, s, (s > 0 ? n / s : 0), k / 1024, (k - f) / 1024, (k - f) * 1024 / n }'
}

# The binary's own floor: vela-worker links cuBLAS when built with CUDA, whose
# libraries' relocations alone are ~220 MiB of RSS before main() runs.
/usr/bin/time -f "%M" -o "$DIR/time" "$bin" --help >/dev/null
floor=$(cat "$DIR/time")
echo "== floor: \`vela-worker --help\` peak RSS $((floor / 1024)) MiB"
bytes=$(stat -c %s "$DIR/a.jsonl")
echo "== results file: $N records, $((bytes / 1000000)) MB ($((bytes / N)) B/record); labels for 90%"
for size in small full; do
  if [[ $size == small ]]; then n=$((N / 10)); sfx=.small; else n=$N; sfx=; fi
  A=$DIR/a$sfx.jsonl B=$DIR/b$sfx.jsonl L=$DIR/labels$sfx.jsonl
  run "eval --labels" "$n" "$floor" "$bin" eval --results "$A" --labels "$L" --json
  run "eval --labels --baseline --top 10" "$n" "$floor" "$bin" eval --results "$A" \
    --labels "$L" --baseline "$B" --top 10 --json
done
echo "== references on the $N-record results file"
run "wc -l (read only)" "$N" 0 wc -l "$DIR/a.jsonl"
run "python3 json.loads per line (parse only)" "$N" 0 python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    json.loads(line)' "$DIR/a.jsonl"
