#!/usr/bin/env python3
"""Word-unit vectors for tests/test_words.c: Python `re` (IGNORECASE) runs the
release's `_WORD` pattern (docs/spec/request.md §6.4, docs/contract.md Decision 7)
over fixed and seeded random texts. Writes fixtures/words/words.jsonl
({"text": str, "words": [[start, end], ...]} code points) and SOURCE.json.
Deterministic: random.Random(7)."""
import json
import platform
import random
import re
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "words"

# The one copy of the pattern: the plan recipe's (its module imports tokenizers).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_plan_goldens import CJK, WORD  # noqa: E402

FIXED = [
    "state-of-the-art, well_known (yes)!",
    "Mail tom.baker@example.com or see https://example.org/a?b=1. @alice 你好",
    "Hi, I'm Tom Baker (tom.baker@example.com). What is the maximum daily dose of paracetamol for an adult?",
    "see www.example.com/x). and HTTPS://Ex.org/ok!!! then http://",
    "\u13a0\u13a1abc\u0261x \u1c88 \u1d79\u1d8e \uab70 한국어 テスト ｆｕｌｌ",
    "\u0130stanbul \u0131i \u017fs K@K.KK user@\u212aelvin.c\u017f a.b@c.de",
    "caf\u00e9 e\u0301t\u00e9 \u0915\u093f x\u0300y 12\u00bd \u2163 a_-b a-_b -a- __x__",
    "\u001cA\u001dB\u001eC\u001fD\u0085E\u00a0F\u2028G\u3000H\u200bI",
    "www.\u4e2d\u6587 http://a\u4e2d https://\u201d\u2019 www.a\u00bb\u00bb",
    "x@y.z x@y.zz ..@..a.bc @_ @ @@a a@b@c.de",
    "\u0000nul\u0000 tab\there\nnew\rline",
]

ALPHABET = (list("abcXYZ019 ._-%+@/:?=!,;()[]{}<>\"'") + ["http://", "https://", "www.", "HTTP://",
            "\u00e9", "\u0301", "\u4e2d", "\u3042", "\uac00", "\u8c48", "\ufaff", "\uff21", "\u13a0",
            "\u0261", "\u0130", "\u0131", "\u017f", "\u212a", "\u201d", "\u00bb", "\u2019", "\u3000",
            "\u001c", "\u00a0", "\n", "\t", "\u0660", "\u00bd", "\u2163", "\U0001f600", "\U00020000"])


def main():
    rng = random.Random(7)
    texts = list(FIXED)
    for _ in range(400):
        texts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "words.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            words = [[m.start(), m.end()] for m in WORD.finditer(t)]
            f.write(json.dumps({"text": t, "words": words}, ensure_ascii=False) + "\n")
    extras = [c for c in range(0x110000)
              if not any(a <= c <= b for a, b in [(0x2e80, 0x2fff), (0x3000, 0x303f), (0x3040, 0x30ff), (0x3100, 0x31ff),
                                                  (0x3400, 0x4dbf), (0x4e00, 0x9fff), (0xa000, 0xa4cf), (0xac00, 0xd7af),
                                                  (0x8c48, 0xfaff), (0xfe30, 0xfe4f), (0xff00, 0xffef)])
              and not (0xd800 <= c <= 0xdfff) and re.fullmatch(rf"[{CJK}]", chr(c), re.IGNORECASE)]
    (OUT / "SOURCE.json").write_text(json.dumps({
        "recipe": "tools/make_words_vectors.py", "python": platform.python_version(),
        "unicode": unicodedata.unidata_version, "texts": len(texts),
        "cjk_ignorecase_extras": [f"{c:04X}" for c in extras]}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT / 'words.jsonl'} ({len(texts)} texts); {len(extras)} IGNORECASE CJK extras")


if __name__ == "__main__":
    main()
