#!/usr/bin/env bash
# bench/tokenizer.sh — tokenizer throughput, C (core/tokenizer/tokenizer.h) vs HF `tokenizers`.
#   bench/tokenizer.sh [TOKENIZER.json]   (default fixtures/tokenizers/qwen3/tokenizer.json)
#   env: BUILD (default build), MB (corpus size, default 10), PY (default .venv/bin/python)
# Builds a deterministic multilingual corpus of >= MB megabytes (the golden strings plus
# text from the goldens recipe's seeded generators; no downloads) into
# $BUILD/bench/tokenizer_corpus.jsonl, then encodes it single-threaded, one string per
# call, with bench_tokenizer and with bench/tokenizer_ref.py (RAYON_NUM_THREADS=1,
# TOKENIZERS_PARALLELISM=false, no encode_batch), checks both count the same tokens,
# and prints both lines and the speed ratio. Then it measures the load time of a synthetic
# Qwen3.5-sized tokenizer.json (250k entries) with both.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MB=${MB:-10}
PY=${PY:-.venv/bin/python}
TOK=${1:-fixtures/tokenizers/qwen3/tokenizer.json}
CORPUS=$BUILD/bench/tokenizer_corpus.jsonl
mkdir -p "$BUILD/bench"
[[ -f $BUILD/build.ninja ]] || cmake -S . -B "$BUILD" -G Ninja >/dev/null
cmake --build "$BUILD" --target bench_tokenizer >/dev/null

"$PY" - "$CORPUS" "$MB" <<'PYEOF'
import json, random, sys
sys.path.insert(0, "tools")
import make_tokenizer_goldens as g  # seeded generators of the goldens recipe

out, target = sys.argv[1], int(sys.argv[2]) * 1_000_000
rng = random.Random(20260503)
lines = [json.loads(l) for l in open("fixtures/tokenizers/strings.jsonl", encoding="utf-8")]
size = sum(len(s.encode()) for s in lines)
kinds = [lambda: " ".join(g.sentence(rng) for _ in range(rng.randint(5, 40))),
         lambda: " ".join(g.sentence(rng, "en") for _ in range(rng.randint(5, 40))),
         lambda: "\n".join(g.code_like(rng) for _ in range(rng.randint(2, 12))),
         lambda: g.soup(rng, rng.randint(50, 400)),
         lambda: g.with_added(rng, g.QWEN3_ADDED)]
weights = [5, 3, 1, 1, 1]
while size < target:
    s = rng.choices(kinds, weights)[0]()
    lines.append(s)
    size += len(s.encode())
with open(out, "w", encoding="utf-8") as f:
    for s in lines:
        f.write(json.dumps(s, ensure_ascii=False) + "\n")
print(f"corpus {out}: {len(lines)} strings, {size / 1e6:.1f} MB", file=sys.stderr)
PYEOF

c=$("$BUILD/bench_tokenizer" "$TOK" "$CORPUS")
hf=$(RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false "$PY" bench/tokenizer_ref.py "$TOK" "$CORPUS")
echo "$c"
echo "$hf"
field() { sed -n "s/.*$2=\([^ ]*\).*/\1/p" <<<"$1"; }
if [[ $(field "$c" tokens) != $(field "$hf" tokens) ]]; then
  echo "token counts differ: C $(field "$c" tokens), HF $(field "$hf" tokens)" >&2
  exit 1
fi
awk -v a="$(field "$c" MB_per_s)" -v b="$(field "$hf" MB_per_s)" \
  'BEGIN { printf "ratio C/HF = %.2fx (MB/s, single thread)\n", a / b }'

# Load time of a Qwen3.5-sized file (248,044 BPE tokens, 247,787 merges, 33 added
# tokens): synthetic, seeded, built from qwen35-mini's settings; never committed.
BIG=$BUILD/bench/tokenizer_250k.json
"$PY" - "$BIG" <<'PYEOF'
import json, random, sys
sys.path.insert(0, "tools")
from tokenizers import pre_tokenizers
d = json.load(open("fixtures/tokenizers/qwen35-mini/tokenizer.json", encoding="utf-8"))
rng = random.Random(20260504)
vocab = sorted(pre_tokenizers.ByteLevel.alphabet())
seen, merges = set(vocab), []
while len(vocab) < 248044:
    a = vocab[int(len(vocab) * rng.random() ** 3)]
    b = vocab[int(len(vocab) * rng.random() ** 3)]
    if a + b not in seen and len(a + b) <= 16:
        seen.add(a + b)
        vocab.append(a + b)
        merges.append([a, b])
d["model"]["vocab"] = {t: i for i, t in enumerate(vocab)}
d["model"]["merges"] = merges
d["added_tokens"] = [dict(t, id=248044 + i) for i, t in enumerate(
    [dict(d["added_tokens"][0], content=f"<|extra_{k}|>") for k in range(33)])]
json.dump(d, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False)
print(f"{sys.argv[1]}: {len(vocab)} tokens, {len(merges)} merges", file=sys.stderr)
PYEOF
head -n 100 "$CORPUS" > "$BUILD/bench/tokenizer_corpus_100.jsonl"
echo "250k-entry file, load only:"
"$BUILD/bench_tokenizer" "$BIG" "$BUILD/bench/tokenizer_corpus_100.jsonl" | grep -o 'impl=c.*load_s=[^ ]*'
RAYON_NUM_THREADS=1 "$PY" bench/tokenizer_ref.py "$BIG" "$BUILD/bench/tokenizer_corpus_100.jsonl" |
  grep -o 'impl=hf.*load_s=[^ ]*'
