#!/usr/bin/env python3
"""make_tokenizer_goldens.py — tokenizer fixtures and goldens for tests/test_tokenizer.c.

Writes, under fixtures/tokenizers/:
  qwen3/tokenizer.json, LICENSE, SOURCE.md   committed; copied again from
                                             /work/shared/tokenizers/qwen3 where it exists
  qwen35-mini/tokenizer.json                 a byte-level BPE trained here (BpeTrainer,
                                             seeded corpus, vocab 3000) with the Qwen3.5
                                             split regex (the one with \\p{M}), NFC,
                                             ByteLevel and added tokens that exercise
                                             special/normalized/lstrip/rstrip/single_word
  strings.jsonl                              the test strings, one JSON string per line
                                             (hand-picked cases + seeded generated text)
  <tok>/goldens.jsonl                        HF `tokenizers` encode(s, add_special_tokens=
                                             False) per string: {"ids":[..],"offsets":
                                             [[s,e],..]} (the `vela-worker tokenize
                                             --offsets` format, so the CLI diffs too)
  <tok>/goldens_no_added.jsonl               the same with every added token removed from
                                             the tokenizer (VW_TOK_NO_ADDED_TOKENS)
  variants/variants.json + variants/<v>.jsonl  qwen35-mini with one field replaced (other
                                             Split behaviours, invert, String patterns,
                                             ByteLevel prefix space + GPT-2 regex, no
                                             normalizer, ignore_merges): the patch, the
                                             string indices, and the goldens (the subset:
                                             hand-picked strings + every 25th generated)
  goldens.json                               sidecar: recipe, versions, sha256, counts

No-added-tokens reasoning: `tokenizers`' own switch (encode_special_tokens /
split_special_tokens) only stops matching tokens with special=True; non-special added
tokens such as <think> would still be matched. "Treat added-token strings as plain text"
means the text goes through normalizer, pre-tokenizer and BPE like any other text, which
is exactly what a copy of tokenizer.json with "added_tokens": [] does (none of these
strings is a single BPE vocab entry that the model could reach another way).

Deterministic: seeded RNG, single-threaded training (RAYON_NUM_THREADS=1).
Run: .venv/bin/python tools/make_tokenizer_goldens.py
"""
import hashlib
import json
import os
import random
import shutil
import sys
import unicodedata
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models  # noqa: E402
from tokenizers import normalizers, pre_tokenizers, processors, trainers  # noqa: E402

RECIPE = "tools/make_tokenizer_goldens.py"
SEED = 20260502
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "tokenizers"
SHARED_QWEN3 = Path("/work/shared/tokenizers/qwen3")

# docs/spec/backbone.md §5: the Qwen3.5 split regex (letters absorb \p{M}).
QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# ---- text material (written for this recipe; no downloads) -------------------------

WORDS = {
    "en": "the of and to in is you that it he was for on are as with his they I at be this "
    "have from or one had by word but not what all were we when your can said there use an "
    "each which she do how their if will up other about out many then them these so some her "
    "would make like him into time has look two more write go see number no way could people "
    "my than first water been call who oil its now find long down day did get come made may "
    "part over new sound take only little work know place year live me back give most very "
    "after thing our just name good sentence man think say great where help through much "
    "before line right too mean old any same tell boy follow came want show also around form "
    "three small set put end does another well large must big even such because turn here why "
    "ask went men read need land different home us move try kind hand picture again change off "
    "play spell air away animal house point page letter mother answer found study still learn "
    "should America world tokenizer worker Kafka request decision calibrated answer".split(),
    "fr": "le la les un une des et est dans pour que qui sur avec pas plus être avoir fait "
    "très où été déjà français château garçon élève fenêtre hôpital naïve cœur Noël "
    "aujourd'hui qu'il c'est l'homme".split(),
    "de": "der die das und ist nicht ein eine zu mit sich auf für über schön Straße Mädchen "
    "Größe Fußball Tschüss Übung Äpfel Öl grüßen weiß".split(),
    "es": "el la los las de y en que por con una para es año niño señor mañana corazón "
    "canción pingüino ¿Qué ¡Hola! está también".split(),
    "vi": "Tiếng Việt là ngôn ngữ của người Việt và là ngôn ngữ chính thức tại Việt Nam "
    "xin chào cảm ơn rất nhiều Hà Nội thành phố Hồ Chí Minh đường phở".split(),
    "ru": "и в не на я быть он с что а по это она этот к но они мы как из у который то за "
    "свой весь год от так о для ты же все тот мочь вы человек такой его сказать только или "
    "ещё бы себя один как уже до время если сам когда другой Москва привет".split(),
    "el": "και το η της του να σε με για από που είναι δεν θα στο τα οι αλλά Ελλάδα "
    "καλημέρα ευχαριστώ γλώσσα άνθρωπος ψυχή".split(),
    "ar": "في من على إلى أن هذا التي الذي مع كان عن ما لا هو هي كل بين العربية "
    "مرحبا شكرا كتاب مدرسة السلام عليكم اللغة".split(),
    "he": "של את על זה לא הוא היא עם כל אני מה גם שלום תודה ספר עברית".split(),
    "hi": "और का की के में है यह से को पर एक हैं था नहीं भी कि नमस्ते धन्यवाद भारत हिन्दी "
    "भाषा किताब विद्यालय".split(),
    "bn": "আমি তুমি সে এবং কিন্তু বাংলা ভাষা ধন্যবাদ নমস্কার".split(),
    "ta": "நான் நீ அவன் மற்றும் தமிழ் மொழி வணக்கம் நன்றி".split(),
    "th": "ผม คุณ เขา และ แต่ ภาษาไทย สวัสดี ขอบคุณ ประเทศไทย".split(),
    "zh": "我 你 他 她 的 是 在 了 不 和 有 大 这 主 中 人 上 为 们 地 个 用 工 时 要 动 国 "
    "产 以 我们 中国 你好 谢谢 世界 学习 电脑 语言 北京 上海 分词器 模型".split(),
    "ja": "私 あなた 彼 これ それ の は が を に で と も 日本語 こんにちは ありがとう "
    "東京 カタカナ ひらがな 漢字 トークナイザー ラーメン".split(),
    "ko": "나 너 그 이 그리고 하지만 한국어 안녕하세요 감사합니다 서울 사랑 학교".split(),
    "tr": "ve bir bu da için ile çok ama İstanbul Türkçe teşekkürler ığdır şimdi".split(),
    "pl": "i w nie na się że z do to jest Polska dziękuję źdźbło zażółć gęślą jaźń".split(),
}

CODE = [
    'def f(x):\n    return x * 2\n',
    "for (int i = 0; i < n; i++) { sum += a[i]; }",
    'if err != nil {\n\treturn fmt.Errorf("bad: %w", err)\n}',
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;",
    "const x = arr.map((v) => v ** 2).filter(Boolean);",
    "#include <stdio.h>\nint main(void) { puts(\"hi\"); }",
    "fn main() { let v: Vec<u8> = vec![1, 2, 3]; println!(\"{:?}\", v); }",
    "x = {'a': 1, \"b\": [1, 2.5, -3e10], 'c': None}",
    "<div class=\"row\"><a href=\"/x?y=1&z=2\">link</a></div>",
    "$ ./configure --prefix=/usr && make -j8 && sudo make install",
]

URLS = [
    "https://example.com/path/to/page?query=1&lang=en#section",
    "http://localhost:8080/api/v1/items/42",
    "www.wikipedia.org/wiki/Unicode_equivalence",
    "mailto:someone@example.org",
    "ftp://files.example.net/pub/file-1.2.3.tar.gz",
]

WHITESPACE = [" ", "  ", "\t", "\n", "\r\n", "\r", "\n\n", "\u00a0", "\u3000", "\u2028",
              "\u2029", "\u000b", "\u000c", "\u0085", "\u1680", "\u2002", "\u2009", "\u200a",
              "\u202f", "\u205f", "\u180e", "\u200b", " \n", "\t\t", "   \n  "]

EMOJI = ["😀", "😂", "🥲", "👍", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🇫🇷", "🇯🇵", "1️⃣",
         "❤️", "☺️", "🧑‍🤝‍🧑", "🐈‍⬛", "🤷‍♀️", "🙏🏻", "✨", "🔥", "🦀"]

MARKS = ([chr(c) for c in range(0x300, 0x370)] + [chr(c) for c in range(0x591, 0x5C8)] +
         [chr(c) for c in range(0x64B, 0x660)] + ["\u093c", "\u094d", "\u0951", "\u0952"] +
         [chr(c) for c in range(0x1DC0, 0x1E00)] + [chr(c) for c in range(0x20D0, 0x20F1)] +
         [chr(c) for c in range(0xFE20, 0xFE30)] + ["\u302a", "\u302b", "\u3099", "\u309a",
                                                      "\u0f71", "\u0f72", "\u0f74", "\u0e48"])

# Script ranges for random code point soup (assigned, long-stable blocks).
RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x530, 0x58F),
          (0x5D0, 0x5EA), (0x620, 0x64A), (0x660, 0x669), (0x900, 0x97F), (0x980, 0x9FF),
          (0xB80, 0xBFF), (0xE01, 0xE5B), (0x10A0, 0x10FF), (0x1100, 0x11FF), (0x1E00, 0x1EFF),
          (0x2000, 0x206F), (0x2070, 0x209C), (0x20A0, 0x20C0), (0x2100, 0x218B),
          (0x2190, 0x23FF), (0x2460, 0x24FF), (0x2500, 0x27BF), (0x3000, 0x303F),
          (0x3041, 0x3096), (0x30A0, 0x30FF), (0x3130, 0x318E), (0x4E00, 0x9FFF),
          (0xAC00, 0xD7A3), (0xF900, 0xFAD9), (0xFB00, 0xFB4F), (0xFE30, 0xFE4F),
          (0xFF01, 0xFFEE), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF)]

# Characters assigned in Unicode 10-16: letters, digits, marks and symbols whose classes
# HF's Oniguruma and normalizer tables know differently from PCRE2 / utf8proc.
RANGES_NEW = [(0x0870, 0x089F), (0x1AB0, 0x1ACE), (0x1C89, 0x1C8A), (0x1DF6, 0x1DFF),
              (0xA7C0, 0xA7DC), (0x105C0, 0x105F3), (0x10D40, 0x10D8F), (0x10EC2, 0x10EFF),
              (0x11380, 0x113D8), (0x11F00, 0x11F5A), (0x16D40, 0x16D79), (0x1CC00, 0x1CCF9),
              (0x1D2C0, 0x1D2D3), (0x1E030, 0x1E08F), (0x1E4D0, 0x1E4F9), (0x1E5D0, 0x1E5FF),
              (0x1FA70, 0x1FAF8), (0x2EBF0, 0x2EE5D), (0x30000, 0x3134A), (0x31350, 0x323AF),
              (0x0C3C, 0x0C3C), (0x0D3B, 0x0D3C), (0x11938, 0x11943)]


def wide_soup(rng):
    """Any code points (all planes, unassigned and private use included) and new ones."""
    out = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.35:
            lo, hi = rng.choice(RANGES_NEW)
            out.append(chr(rng.randint(lo, hi)))
        elif r < 0.55:
            c = rng.randint(0, 0x10FFFF)
            out.append(chr(c) if not 0xD800 <= c < 0xE000 else "x")
        elif r < 0.7:
            out.append(rng.choice(MARKS))
        elif r < 0.8:
            out.append(rng.choice(WHITESPACE))
        else:
            out.append(rng.choice("abcXYZ019 '.-"))
    return "".join(out)


QWEN3_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
               "<|vision_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
               "<|file_sep|>", "<think>", "</think>", "<tool_response>"]
MINI_ADDED_TEXT = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>",
                   "[MASK]", "<w>", "Café", "Cafe\u0301", "hello", "Hello", "été",
                   "e\u0301te\u0301", "<L>", "<R>", "<|im_", "im_end|>", "<<|im_end|>>"]


def mini_added_tokens():
    """Added tokens of qwen35-mini beyond the trainer's special tokens."""
    return [
        AddedToken("<think>", special=False, normalized=False),
        AddedToken("</think>", special=False, normalized=False),
        AddedToken("[MASK]", special=True, normalized=False, lstrip=True, rstrip=True),
        AddedToken("<w>", special=False, normalized=False, single_word=True),
        AddedToken("Café", special=False, normalized=True),
        AddedToken("e\u0301te\u0301", special=False, normalized=True),  # NFC "été"
        AddedToken("hello", special=False, normalized=True, single_word=True),
        AddedToken("<L>", special=False, normalized=False, lstrip=True),
        AddedToken("<R>", special=False, normalized=False, rstrip=True),
    ]


# ---- generators ------------------------------------------------------------------

def sentence(rng, lang=None, n=None):
    lang = lang or rng.choice(sorted(WORDS))
    words = WORDS[lang]
    n = n or rng.randint(1, 18)
    sep = "" if lang in ("zh", "ja", "th") and rng.random() < 0.6 else " "
    out = sep.join(rng.choice(words) for _ in range(n))
    if rng.random() < 0.5:
        out += rng.choice([".", "!", "?", "。", "！", "؟", "।", ",", ":", ";", "…"])
    if rng.random() < 0.3:
        out = out[:1].upper() + out[1:]
    return out


def soup(rng, n=None):
    n = n or rng.randint(1, 40)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.12:
            out.append(rng.choice(WHITESPACE))
        elif r < 0.2:
            out.append(rng.choice(MARKS))
        else:
            lo, hi = rng.choice(RANGES)
            out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def mark_salad(rng):
    base = rng.choice("aeiouAEOUnNcCsSyYzZkKgGhHwWxX" + "αεηιουωΑΕΗΙΟΥΩ" + "аеиоуАЕИОУ" +
                      "אבג" + "ابت" + "कखग" + "가나다" + "ᄀᄁᄂ" + "あかさ")
    return base + "".join(rng.choice(MARKS) for _ in range(rng.randint(1, 5)))


def code_like(rng):
    r = rng.random()
    if r < 0.4:
        return rng.choice(CODE)
    if r < 0.6:
        return rng.choice(URLS)
    if r < 0.8:
        obj = {sentence(rng, "en", 1): rng.choice([rng.randint(-99999, 99999), rng.random(),
                                                   sentence(rng), None, True, [1, "x"]])
               for _ in range(rng.randint(1, 4))}
        return json.dumps(obj, ensure_ascii=rng.random() < 0.3)
    ident = "_".join(sentence(rng, "en", 1) for _ in range(rng.randint(1, 3)))
    return f"{ident}({rng.randint(0, 10**rng.randint(1, 12))}, \"{sentence(rng)}\")"


def numbers(rng):
    parts = [str(rng.randint(0, 10**rng.randint(1, 15))), "３．１４１５", "１２３４５", "٣٤٥",
             "१२३", "৪৫৬", "½", "²³", "Ⅻ", "1,234,567.89", "-0.5e-10", "0x1F", "١٢٣٤"]
    return " ".join(rng.choice(parts) for _ in range(rng.randint(1, 5)))


def contractions(rng):
    subj = ["I", "you", "YOU", "he", "She", "it", "IT", "we", "they", "THEY", "x", "don", "can"]
    tails = ["'s", "'S", "'t", "'T", "'re", "'RE", "'Re", "'ve", "'VE", "'m", "'M", "'ll",
             "'LL", "'lL", "'d", "'D", "'ſ", "'ſa", "'K", "'xyz", "’s", "'"]
    return " ".join(rng.choice(subj) + rng.choice(tails) + rng.choice(["", " ok", "a", "!"])
                    for _ in range(rng.randint(1, 6)))


def with_added(rng, pool):
    parts = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.45:
            parts.append(rng.choice(pool))
        elif r < 0.65:
            parts.append(rng.choice(WHITESPACE))
        else:
            parts.append(sentence(rng, n=rng.randint(1, 4)))
    return "".join(parts)


def generated(rng, count):
    kinds = [sentence, sentence, sentence, soup, soup, wide_soup, mark_salad, code_like, numbers,
             contractions,
             lambda r: unicodedata.normalize("NFD", sentence(r)),
             lambda r: unicodedata.normalize("NFD", soup(r)),
             lambda r: "".join(r.choice(EMOJI) + r.choice(["", " ", "\u200d", "x"])
                               for _ in range(r.randint(1, 6))),
             lambda r: "".join(r.choice(WHITESPACE) + sentence(r, n=r.randint(0, 3))
                               for _ in range(r.randint(1, 6))),
             lambda r: with_added(r, QWEN3_ADDED + MINI_ADDED_TEXT),
             lambda r: " ".join(sentence(r) for _ in range(r.randint(2, 8)))]
    return [rng.choice(kinds)(rng) for _ in range(count)]


def hand_picked():
    cases = [
        "", " ", "  ", "a", "Hello world", "Hello  world", " Hello", "Hello ", "Hello\n",
        "\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n ", "\t", "a\tb", "a\u00a0b", "a\u3000b",
        "a\u2028b", "a\u2029b", "a\u0085b", "a\u180eb", "a\u200bb", "a\u000bb\u000cc",
        "line1\r\nline2\rline3\nline4", "trailing spaces   ", "   leading", "a   \n   b",
        "I'm", "I'M", "you're", "YOU'RE", "he's", "HE'S", "we've", "WE'VE", "it'll", "IT'LL",
        "she'd", "SHE'D", "don't", "DON'T", "x'ſa", "x'Sa", "x'\u212ala", "'s", "''s",
        "12345", "1234567890123", "１２３４５", "３．１４", "٣٤٥", "१२३", "v1.2.3", "3.14159",
        "e\u0301", "e\u0301x", "é", "a\u0301\u0323b", "e\u0316\u0301", "x\u0344\u0323",
        "\u0344x", "\uf900", "\u0958", "\u1100\u1161\u11a8", "\uac00\u11a8", "\u0301abc",
        "\u0301\u0301", "a\u0308\u0304", "ḗ", unicodedata.normalize("NFD", "Tiếng Việt"),
        unicodedata.normalize("NFD", "한국어 안녕하세요"), unicodedata.normalize("NFD", "Ωμέγα"),
        "café", "cafe\u0301", "Cafe\u0301", "Café", "naïve", "ﬁnance", "ǆ", "Å", "Å",
        "你好，世界！", "日本語のテキストです。", "한국어 텍스트", "مرحبا بالعالم",
        "שלום עולם", "नमस्ते दुनिया", "Привет, мир!", "Γειά σου Κόσμε", "สวัสดีชาวโลก",
        "😀", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "👍🏽", "1️⃣", "🏳️‍🌈", "a😀b", "😀😀😀",
        "https://example.com/a?b=1&c=2#d", '{"key": [1, 2, {"x": null}], "y": "z"}',
        "def f(x):\n    return x\n", "\t\tindented\n\t\tcode", "<|endoftext|>",
        "<|endoftext|><|endoftext|>", "a<|im_start|>b", "<|im_start|>user\nHello<|im_end|>\n",
        "<|im_end", "<|im_end|", "<<|im_end|>>", "text <think>reasoning</think> answer",
        "<tool_call>{}</tool_call>", "<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>",
        " [MASK] ", "a [MASK] b", "a[MASK]b", "[MASK][MASK]", "  [MASK]  x", "<w>", "a<w>b",
        " <w> ", "x <w>y", "é<w>", "<w>_", "hello", "hello world", "helloworld", "ahello",
        "Cafe\u0301 au lait", "Café crème", "Xcafé", "été", "e\u0301te\u0301", "l'e\u0301te\u0301",
        "<L>", "  <L>", "a  <L>b", "<R>  x", "a<R>\n\nb", "<L><R>", "<R> <L>", "\u00a0<L>",
        "a" * 300, "ab" * 200, " " * 100 + "x", "\n" * 50, "x" + "\u0301" * 40,
        "1" * 100, "😀" * 30, "你" * 200,
    ]
    return cases


def long_strings(rng):
    return [
        " ".join(sentence(rng) for _ in range(600)),
        "\n".join(code_like(rng) for _ in range(150)),
        "".join(soup(rng) for _ in range(120)),
        unicodedata.normalize("NFD", " ".join(sentence(rng, "vi") for _ in range(200))),
    ]


def training_corpus(rng):
    lines = []
    for _ in range(30000):
        r = rng.random()
        if r < 0.75:
            lines.append(" ".join(sentence(rng) for _ in range(rng.randint(1, 4))))
        elif r < 0.85:
            lines.append(code_like(rng))
        elif r < 0.95:
            lines.append(numbers(rng) + " " + contractions(rng))
        else:
            lines.append(soup(rng))
    return lines


# ---- outputs ---------------------------------------------------------------------

def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes) sha256 {sha256(path)}")


def train_mini(rng):
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000, min_frequency=2, show_progress=False,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_corpus(rng), trainer)
    tok.add_tokens(mini_added_tokens())
    return tok


def encode_lines(tok, strings):
    lines = []
    for s in strings:
        e = tok.encode(s, add_special_tokens=False)
        lines.append(json.dumps({"ids": e.ids, "offsets": [list(o) for o in e.offsets]},
                                separators=(",", ":")))
    return "\n".join(lines) + "\n"


def bl(prefix=False, regex=False):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": False,
            "use_regex": regex}


def split(pattern, behavior, invert=False, literal=False):
    return {"type": "Split", "pattern": {"String" if literal else "Regex": pattern},
            "behavior": behavior, "invert": invert}


def seq(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


# name -> fields of qwen35-mini's tokenizer.json to replace ("model.x" = a model field).
VARIANTS = {
    "removed_ws_prefix": {"pre_tokenizer": seq(split(r"\s+", "Removed"), bl(prefix=True))},
    "merged_prev_punct": {"pre_tokenizer": seq(split(r"\p{P}", "MergedWithPrevious"), bl())},
    "merged_next_punct": {"pre_tokenizer": seq(split(r"\p{P}", "MergedWithNext"), bl())},
    "contiguous_digits_ws": {"pre_tokenizer": seq(split(r"\d+|\s+", "Contiguous"), bl())},
    "inverted_letters": {"pre_tokenizer": seq(split(r"\p{L}+", "Isolated", invert=True), bl())},
    "string_space_next": {"pre_tokenizer": seq(split(" ", "MergedWithNext", literal=True), bl())},
    "empty_matches": {"pre_tokenizer": seq(split(r"[a-z]*", "MergedWithPrevious"), bl())},
    "gpt2_bytelevel": {"pre_tokenizer": bl(prefix=True, regex=True)},
    "bytelevel_only": {"pre_tokenizer": bl()},
    "no_normalizer": {"normalizer": None},
    "ignore_merges": {"model.ignore_merges": True},
}


def variant_json(base, patch):
    d = json.loads(base)
    for k, v in patch.items():
        if k.startswith("model."):
            d["model"][k[len("model."):]] = v
        else:
            d[k] = v
    return json.dumps(d)


def write_variants(mini_json, strings, n_hand):
    idx = list(range(n_hand)) + [i for i in range(n_hand, len(strings) - 4) if i % 25 == 0]
    vdir = OUT / "variants"
    files = {}
    for name, patch in VARIANTS.items():
        tok = Tokenizer.from_str(variant_json(mini_json, patch))
        path = vdir / f"{name}.jsonl"
        write(path, encode_lines(tok, [strings[i] for i in idx]))
        files[f"variants/{name}.jsonl"] = sha256(path)
    write(vdir / "variants.json", json.dumps({
        "base": "qwen35-mini/tokenizer.json", "string_indices": idx,
        "variants": VARIANTS}, indent=1) + "\n")
    return files


def without_added(tok):
    d = json.loads(tok.to_str())
    d["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(d))


def main():
    rng = random.Random(SEED)
    qdir, mdir = OUT / "qwen3", OUT / "qwen35-mini"
    qdir.mkdir(parents=True, exist_ok=True)
    # The Qwen3 tokenizer is committed under fixtures/ (its SOURCE.md names
    # where it came from); it is copied again only where that source exists.
    if SHARED_QWEN3.is_dir():
        for name in ("tokenizer.json", "LICENSE"):
            shutil.copyfile(SHARED_QWEN3 / name, qdir / name)
            print(f"copied {qdir.relative_to(ROOT) / name} sha256 {sha256(qdir / name)}")
        write(qdir / "SOURCE.md", (SHARED_QWEN3 / "SOURCE.md").read_text() +
              f"\nCopied from {SHARED_QWEN3} by {RECIPE} (test fixture).\n")

    mini = train_mini(rng)
    write(mdir / "tokenizer.json", mini.to_str(pretty=True) + "\n")

    hand = hand_picked()
    strings = hand + generated(rng, 2100) + long_strings(rng)
    write(OUT / "strings.jsonl",
          "\n".join(json.dumps(s, ensure_ascii=False) for s in strings) + "\n")

    files = {}
    for name, tok in (("qwen3", Tokenizer.from_file(str(qdir / "tokenizer.json"))),
                      ("qwen35-mini", Tokenizer.from_file(str(mdir / "tokenizer.json")))):
        for suffix, t in (("", tok), ("_no_added", without_added(tok))):
            path = OUT / name / f"goldens{suffix}.jsonl"
            write(path, encode_lines(t, strings))
            files[f"{name}/goldens{suffix}.jsonl"] = sha256(path)
    files.update(write_variants((mdir / "tokenizer.json").read_text(), strings, len(hand)))
    meta = {
        "recipe": RECIPE, "seed": SEED, "strings": len(strings),
        "encode": "Tokenizer.encode(s, add_special_tokens=False); ids and offsets "
                  "(code points of the original string)",
        "no_added": "a copy of the tokenizer with added_tokens = []",
        "versions": {"python": sys.version.split()[0], "tokenizers": tokenizers.__version__,
                     "unicodedata": unicodedata.unidata_version},
        "sha256": {"strings.jsonl": sha256(OUT / "strings.jsonl"),
                   "qwen3/tokenizer.json": sha256(qdir / "tokenizer.json"),
                   "qwen35-mini/tokenizer.json": sha256(mdir / "tokenizer.json"), **files},
    }
    write(OUT / "goldens.json", json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
