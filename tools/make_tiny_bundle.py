#!/usr/bin/env python3
"""make_tiny_bundle.py — writes a Vela 2.0 decoder package with random weights.

Default: the committed test bundle fixtures/tiny-vela/ (hidden 64, 8 layers =
2 x [L,L,L,F], 4 query heads over 1 KV head (head_dim 32, rotary 8), GDN 2 key
heads / 4 value heads of width 32 so the grouped v-head -> k-head rule of
docs/spec/backbone.md §3.5 is exercised, SwiGLU 224).
`--shape 0.8b --out DIR` writes a Qwen3.5-0.8B-shaped package (hidden 1024,
24 layers, 248,320 embedding rows) for benchmarks; never commit that one.

Layout (docs/spec/answers.md §1): config.json (model_type vela2-decoder,
backbone_config, head_dim, span_head, max_length 16384, span_layout),
model.safetensors.index.json + model-0000k-of-00002.safetensors (backbone
under `backbone.`, candidate head `head.*`, `set_bias`, router span head
`span2.*`), broad_head.safetensors (`span_broad.*`), calibration.json (every
key of docs/spec/answers.md §4.1), tokenizer.json (a byte-level BPE trained here with
the Qwen3.5 split regex, NFC, and the 33 Qwen3.5 added tokens),
MODEL_MANIFEST.json (files_sha256 + provenance) and SHA256SUMS.

dtypes: backbone BF16 except linear_attn.A_log (F32), like stock Qwen3.5
checkpoints (docs/spec/backbone.md §2); heads F32. The recipe is seeded and
byte-identical on re-run. It prints every file it wrote with its SHA-256.
"""
import argparse
import hashlib
import json
import os
import random
import sys
from pathlib import Path

import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

SEED = 20260501
RECIPE = "tools/make_tiny_bundle.py"

# docs/spec/backbone.md §5 (Qwen3.5 pre-tokenizer regex).
QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# The 33 Qwen3.5 added tokens in id order (docs/spec/backbone.md §5; the audio
# names follow the public Qwen3.5/3.6 tokenizer configs). special=True ones are
# "special" in tokenizers' sense, like the released tokenizer.json.
ADDED = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", False), ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False), ("<|fim_pad|>", False), ("<|repo_name|>", False),
    ("<|file_sep|>", False), ("<tool_response>", False), ("</tool_response>", False),
    ("<think>", False), ("</think>", False), ("<|audio_start|>", True),
    ("<|audio_end|>", True), ("<tts_pad>", True), ("<tts_text_bos>", True),
    ("<tts_text_eod>", True), ("<tts_text_bos_single>", True), ("<|audio_pad|>", True),
]

PII_TYPES = [
    "AGE", "CREDIT_CARD", "DATE_TIME", "DOMAIN_NAME", "EMAIL_ADDRESS", "GPE", "IBAN_CODE",
    "IP_ADDRESS", "NRP", "ORGANIZATION", "PERSON", "PHONE_NUMBER", "STREET_ADDRESS", "TITLE",
    "US_DRIVER_LICENSE", "US_SSN", "ZIP_CODE",
]
PII_DESCRIPTIONS = {
    "AGE": "a person's age", "CREDIT_CARD": "a credit card number",
    "DATE_TIME": "a date or a time", "DOMAIN_NAME": "an internet domain name",
    "EMAIL_ADDRESS": "an e-mail address", "GPE": "a country, city or state",
    "IBAN_CODE": "an international bank account number", "IP_ADDRESS": "an IP address",
    "NRP": "a nationality, religious or political group", "ORGANIZATION": "an organization name",
    "PERSON": "a person's name", "PHONE_NUMBER": "a telephone number",
    "STREET_ADDRESS": "a street address", "TITLE": "a personal title such as Dr. or Mrs.",
    "US_DRIVER_LICENSE": "a US driver's license number",
    "US_SSN": "a US social security number", "ZIP_CODE": "a postal code",
}

SHAPES = {
    # Tiny: real head-count ratios scaled down (q = 2 x hidden as in 0.8B).
    "tiny": dict(hidden_size=64, num_hidden_layers=8, intermediate_size=224,
                 num_attention_heads=4, num_key_value_heads=1, head_dim=32,
                 linear_num_key_heads=2, linear_num_value_heads=4,
                 linear_key_head_dim=32, linear_value_head_dim=32,
                 mrope_section=[2, 1, 1], vocab_rows=None, bpe_vocab=1536),
    # Qwen3.5-0.8B (docs/spec/backbone.md §1.1).
    "0.8b": dict(hidden_size=1024, num_hidden_layers=24, intermediate_size=3584,
                 num_attention_heads=8, num_key_value_heads=2, head_dim=256,
                 linear_num_key_heads=16, linear_num_value_heads=16,
                 linear_key_head_dim=128, linear_value_head_dim=128,
                 mrope_section=[11, 11, 10], vocab_rows=248320, bpe_vocab=1536),
}
HEAD_D, HEAD_SLOTS = 256, 64  # docs/spec/answers.md §1.1: d = 256, S = 64

WORDS = """the a of and to in is was for on that with as by at from it this be are
which not or have an they one you all were we her she he can there their has more
when will would who so no if out up what about into than them only other new some
could time these two may then do first any my now such like our over man me even
most made after also did many before must through back years where much your way
well down should because each just those people how too little state good very
make world still own see men work long get here between both life being under
never day same another know while last might us great old year off come since
against go came right used take three states himself few house use during without
again place american around however home small found thought went say part once
general high upon school every don't does got united left number course war until
always away something fact though water less public put think almost hand enough
far took head yet government system better set told nothing night end why called
didn't eyes find going look asked later knew point next city business give group
toward young let room president side social given present several order national
possible rather second face per among form important often things looked early
white case become large big need four within felt along children saw best church
ever least power development light thing seemed family interest want members mind
country area others done turned although open god service certain kind problem
began different door thus help sense means whole matter perhaps itself york times
patient dose maximum daily adult grams hours visit today question answer option
context user segment label target decision select single best supported every
claim span spans personal information email address phone number street city""".split()

NON_ENGLISH = [
    "Café déjà vu, naïve coöperation, São Paulo, Zürich, Ångström.",
    "Größe Straße Übermaß — früh, schön, über.",
    "Это пример текста на русском языке для токенизатора.",
    "これは日本語のテキストです。東京、大阪、京都。",
    "这是一个中文句子，包含标点符号。北京上海。",
    "नमस्ते दुनिया, यह हिन्दी का वाक्य है।",
    "مرحبا بالعالم، هذه جملة عربية.",
    "e\u0301cole, a\u0300 la plage, n\u0303o, combining marks.",
    "Emoji 😀🎉👍 and symbols ©®™ ± × ÷ ≤ ≥ € £ ¥.",
]

TEMPLATES = [
    "Context:\n", '<segment role="user">\n', '<segment role="context">\n',
    '<segment role="answer">\n', "\n</segment>\n", "\n\nTask type: choice\nTarget: user\n",
    "\n\nTask type: set\nTarget: user, context\n", "\n\nTask type: score\nTarget: answer\n",
    "\n\nTask type: span\nTarget: user\n", "Question:\n", "\nOptions:", "\n<option>\n",
    "\n</option>", "\nLabels:", "\n<label>\n", "\n</label>", "\n\nText:\n",
    "\n\nSelect the single option best supported by the context and instructions.\nDecision:",
    "\n\nSelect every option supported by the context and instructions.\nDecision:",
    "\n\nMark every span of the target text that carries one of the labels.\nSpans:",
    '{"description":"None of the shown options applies.","key":"[ABS]"}',
    '{"description":"No. The statement or question is not satisfied.","key":"no"}',
    '{"description":"Yes. The statement or question is satisfied.","key":"yes"}',
    "Which spans are personal information?",
    "Which spans of the answer are not supported by the context?",
    "Hi, I'm Tom Baker (tom.baker@example.com). Call +1 415-555-0123 or visit https://example.org/dose.",
    "The maximum dose is 4 grams in 24 hours; IBAN DE89 3704 0044 0532 0130 00, SSN 123-45-6789.",
    "    def main():\n        return 0\n\n\tx = [1, 2, 3]\r\n",
]


def corpus(rng):
    lines = []
    for _ in range(3000):
        n = rng.randint(4, 18)
        words = [rng.choice(WORDS) for _ in range(n)]
        if rng.random() < 0.3:
            words.insert(rng.randint(0, n), str(rng.randint(0, 99999)))
        if rng.random() < 0.2:
            words[0] = words[0].capitalize()
        sep = rng.choice([". ", ", ", "! ", "? ", ".\n", ":\n", " - "])
        lines.append(" ".join(words) + sep)
    lines += TEMPLATES * 40 + NON_ENGLISH * 30
    lines += [json.dumps({"description": " ".join(rng.choice(WORDS) for _ in range(6)),
                          "key": rng.choice(WORDS)}, sort_keys=True, separators=(",", ":"))
              for _ in range(300)]
    return lines


def train_tokenizer(rng, bpe_vocab):
    tok = Tokenizer(models.BPE(byte_fallback=False, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN35_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                              use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=bpe_vocab, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[])
    tok.train_from_iterator(corpus(rng), trainer=trainer)
    for content, special in ADDED:
        tok.add_tokens([AddedToken(content, special=special, normalized=False,
                                   single_word=False, lstrip=False, rstrip=False)])
    return tok


def backbone_config(shape, vocab_rows, eos_id):
    s = SHAPES[shape]
    n = s["num_hidden_layers"]
    layer_types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]
    keys = ["hidden_size", "num_hidden_layers", "intermediate_size", "num_attention_heads",
            "num_key_value_heads", "head_dim", "linear_num_key_heads", "linear_num_value_heads",
            "linear_key_head_dim", "linear_value_head_dim"]
    cfg = {k: s[k] for k in keys}
    cfg.update({
        "model_type": "qwen3_5_text", "vocab_size": vocab_rows, "hidden_act": "silu",
        "rms_norm_eps": 1e-6, "max_position_embeddings": 262144, "tie_word_embeddings": True,
        "attention_bias": False, "attn_output_gate": True, "linear_conv_kernel_dim": 4,
        "full_attention_interval": 4, "layer_types": layer_types,
        "mamba_ssm_dtype": "float32", "dtype": "bfloat16",
        "bos_token_id": eos_id, "eos_token_id": eos_id,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0,
                            "partial_rotary_factor": 0.25, "mrope_interleaved": True,
                            "mrope_section": s["mrope_section"]},
    })
    return cfg


def backbone_shapes(cfg):
    """Tensor names and shapes, taken from transformers' own Qwen3_5TextModel."""
    hf = {k: v for k, v in cfg.items() if k not in ("model_type", "dtype")}
    conf = transformers.Qwen3_5TextConfig(**hf)
    with torch.device("meta"):
        model = transformers.Qwen3_5TextModel(conf)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def init_backbone(shapes, gen):
    """Random weights scaled so every layer changes the residual stream visibly."""
    out = {}
    for name in sorted(shapes):
        shape = shapes[name]

        def normal(std, mean=0.0):
            return torch.randn(shape, generator=gen, dtype=torch.float32) * std + mean

        if name.endswith("A_log"):
            a = torch.rand(shape, generator=gen, dtype=torch.float32) * 1.95 + 0.05
            t = torch.log(a)  # decay rates exp(A_log) in [0.05, 2]
        elif name.endswith("dt_bias"):
            t = normal(1.0, -1.0)
        elif name.endswith("linear_attn.norm.weight"):
            t = normal(0.1, 1.0)  # plain weight (init 1)
        elif name.endswith("norm.weight"):
            t = normal(0.1)  # zero-centred (1 + w)
        elif name.endswith("conv1d.weight"):
            t = normal(0.5)
        elif name == "embed_tokens.weight":
            t = normal(0.5)
        else:  # [out, in] projections
            fan_in = shape[-1]
            scale = 0.5 if name.split(".")[-2] in ("o_proj", "out_proj", "down_proj") else 1.0
            t = normal(scale / fan_in ** 0.5)
        out[name] = t
    return out


def span_head(prefix, hidden, gen):
    def n(shape, std, mean=0.0):
        return torch.randn(shape, generator=gen, dtype=torch.float32) * std + mean

    d, s, h = HEAD_D, HEAD_SLOTS, hidden
    t = {
        "wn.weight": n((h,), 0.1, 1.0), "wn.bias": n((h,), 0.1),
        "ln.weight": n((h,), 0.1, 1.0), "ln.bias": n((h,), 0.1),
        "slot.weight": n((s, h), 1.0),
        "K.weight": n((d, h), h ** -0.5), "Q.weight": n((d, h), h ** -0.5),
        "N.weight": n((d, h), h ** -0.5), "M.weight": n((d, h), h ** -0.5),
        "M.bias": n((d,), 0.1), "v.weight": n((1, d), d ** -0.5),
        "o.weight": n((1, h), h ** -0.5), "o.bias": n((1,), 0.1),
    }
    return {prefix + k: v for k, v in t.items()}


def candidate_head(hidden, gen):
    def n(shape, std, mean=0.0):
        return torch.randn(shape, generator=gen, dtype=torch.float32) * std + mean

    d, h = HEAD_D, hidden
    t = {
        "head.candidate_norm.weight": n((h,), 0.1, 1.0), "head.candidate_norm.bias": n((h,), 0.1),
        "head.query_norm.weight": n((h,), 0.1, 1.0), "head.query_norm.bias": n((h,), 0.1),
        "head.key.weight": n((d, h), h ** -0.5), "head.query.weight": n((d, h), h ** -0.5),
        "head.candidate_mlp.weight": n((d, h), h ** -0.5), "head.candidate_mlp.bias": n((d,), 0.1),
        "head.query_mlp.weight": n((d, h), h ** -0.5), "head.scalar.weight": n((1, d), d ** -0.5),
    }
    t["set_bias"] = torch.tensor(0.3, dtype=torch.float32)  # 0-d, as in the runtime fixture
    return t


def calibration():
    return {
        "temperature": {"choice": 1.3786, "score": 1.1278, "set": 1.0152, "span": 0.2927},
        "thresholds": {"set:*": 0.3, "set:r_cats": 0.5, "span:*": 0.5, "span:halu": 0.55,
                       "span:toxic": 0.1},
        "pii_types": PII_TYPES,
        "pii_length_rule": {"anchors": [{"n_tokens": 21, "threshold": 0.75},
                                        {"n_tokens": 126, "threshold": 0.05},
                                        {"n_tokens": 1022, "threshold": 0.005919}]},
        "pii_buckets": [{"name": "short", "max_tokens": 128, "threshold": 0.3},
                        {"name": "medium", "max_tokens": 1024, "threshold": 0.05},
                        {"name": "long", "max_tokens": 1000000, "threshold": 0.006}],
        "pii_sparse_gate": {"K": 3, "t_sparse": 0.1, "probe_threshold": 0.5},
        "pii_schema": {"text": "Which spans are personal information?",
                       "labels": {k: PII_DESCRIPTIONS[k] for k in PII_TYPES}},
        "halu_schema": {"text": "Which spans of the answer are not supported by the context?",
                        "labels": {"unsupported": "a claim not supported by the context"}},
        "relevance_schema": {
            "text": "How relevant is this candidate to the query?",
            "levels": {"not_relevant": "The candidate does not help with the query.",
                       "partially_relevant": "The candidate partly helps.",
                       "highly_relevant": "The candidate directly helps with the query."},
            "values": {"not_relevant": 0.0, "partially_relevant": 0.5, "highly_relevant": 1.0}},
        "broad_head": {"temperature": 1.0, "threshold": 0.55,
                       "router_label_sets": [PII_TYPES, ["unsupported"]]},
        "noul_calibration": {"T": 2.0, "b": 0.25, "default": False},
    }


def write_json(path, value):
    path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def versions():
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "safetensors": safetensors.__version__, "numpy": np.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    ap.add_argument("--out", default=None, help="output directory (default fixtures/tiny-vela)")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    out = Path(args.out) if args.out else root / "fixtures" / "tiny-vela"
    if args.shape != "tiny" and not args.out:
        ap.error("--shape other than tiny needs --out (never commit a large bundle)")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.is_file() or old.is_symlink():
            old.unlink()

    rng = random.Random(SEED)
    gen = torch.Generator().manual_seed(SEED)
    shape = SHAPES[args.shape]
    tok = train_tokenizer(rng, shape["bpe_vocab"])
    n_ids = tok.get_vocab_size(with_added_tokens=True)
    vocab_rows = shape["vocab_rows"] or (n_ids + 127) // 128 * 128  # rows >= vocab
    eos = tok.token_to_id("<|endoftext|>")
    tok.save(str(out / "tokenizer.json"))

    cfg = backbone_config(args.shape, vocab_rows, eos)
    shapes = backbone_shapes(cfg)
    weights = init_backbone(shapes, gen)
    backbone = {}
    for name, t in weights.items():
        keep_f32 = name.endswith("A_log")
        backbone["backbone." + name] = t if keep_f32 else t.to(torch.bfloat16)
    del weights
    heads = candidate_head(cfg["hidden_size"], gen)
    heads.update(span_head("span2.", cfg["hidden_size"], gen))
    broad = span_head("span_broad.", cfg["hidden_size"], gen)

    # Two shards: embedding + first half of the layers, then the rest + heads.
    half = cfg["num_hidden_layers"] // 2
    shard_names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    shards = [{}, {}]
    for name, t in backbone.items():
        parts = name.split(".")
        first = parts[1] == "embed_tokens" or (parts[1] == "layers" and int(parts[2]) < half)
        shards[0 if first else 1][name] = t
    shards[1].update(heads)
    weight_map, total = {}, 0
    for fname, tensors in zip(shard_names, shards):
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / fname),
                  metadata={"format": "pt"})
        for k, v in tensors.items():
            weight_map[k] = fname
            total += v.numel() * v.element_size()
    write_json(out / "model.safetensors.index.json",
               {"metadata": {"total_size": total}, "weight_map": weight_map})
    save_file(broad, str(out / "broad_head.safetensors"), metadata={"format": "pt"})
    del backbone, shards

    write_json(out / "config.json", {
        "architectures": ["Vela2DecoderModel"], "model_type": "vela2-decoder",
        "format_version": 1, "model_name": f"vela-worker/Vela-2.0-random-{args.shape}",
        "backbone_config": cfg, "head_dim": HEAD_D,
        "span_head": {"d": HEAD_D, "slots": HEAD_SLOTS}, "max_length": 16384,
        "span_layout": {"hybrid_rmax": 2048, "window": 1800, "stride": 1536,
                        "window_above": 2048},
        "pad_token_id": eos,
    })
    write_json(out / "calibration.json", calibration())

    names = sorted(p.name for p in out.iterdir() if p.is_file())
    digests = {n: sha256(out / n) for n in names}
    write_json(out / "MODEL_MANIFEST.json", {
        "format": "vela2-decoder-release/1", "files_sha256": digests,
        "generator": {"recipe": RECIPE, "seed": SEED, "shape": args.shape,
                      "versions": versions(),
                      "note": "random weights for tests; not a trained model"},
    })
    digests["MODEL_MANIFEST.json"] = sha256(out / "MODEL_MANIFEST.json")
    (out / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in sorted(digests.items())),
                                    encoding="utf-8")
    digests["SHA256SUMS"] = sha256(out / "SHA256SUMS")
    print(f"{RECIPE}: shape {args.shape}, {n_ids} token ids, {vocab_rows} embedding rows, "
          f"hidden {cfg['hidden_size']}, {cfg['num_hidden_layers']} layers -> {out}")
    for n, d in sorted(digests.items()):
        print(f"  wrote {n:40s} {os.path.getsize(out / n):>12d} B  sha256 {d}")


if __name__ == "__main__":
    main()
