#!/usr/bin/env python3
"""make_slice_goldens.py — reference hidden states of the 4B- and 9B-width slices.

The slices are core/model/random_bundle.c's "4b-slice" and "9b-slice" packages
(full 4B / 9B width: hidden 2,560 / 4,096, SwiGLU 9,216 / 12,288, 16 query heads
of 256 over 4 KV heads, Gated DeltaNet 16 key heads / 32 value heads of 128; one
DeltaNet layer then one full-attention layer; the tiny bundle's vocabulary).
They are 0.45 / 0.9 GB, so they are not committed: this recipe has the C writer
produce them (bench_bundle, the same bytes the tests write, seed 20261204 =
tests/support/vw_test.h VW_TEST_SLICE_SEED), loads each into transformers'
Qwen3_5TextModel in FP32 (BF16 weights upcast exactly, A_log F32), eager
attention, torch fallbacks for the gated delta rule and the causal conv, and
records final-normed hidden states (last_hidden_state) of seeded token
sequences: lengths 2 and 70 (70 crosses the 64-row delta-rule chunk), a few
rows of each (a whole 70 x 4,096 block would be 1.1 MB).

Writes fixtures/backbone/slice-<size>.bin (little-endian):
  magic "VWSLGLD1", u32 version = 1, u32 n_cases, u32 hidden, then per case
  u32 T, T x i32 ids, u32 n_rows, n_rows x i32 row indices, n_rows x hidden f32;
and fixtures/backbone/slices.json: recipe, seed, versions, and per slice the
SHA-256 of the package's model.safetensors (the test refuses to compare against
a package whose weights differ: the writer changed, regenerate). Deterministic.

  .venv/bin/python tools/make_slice_goldens.py [--build build] [--dir /tmp/vw-slices]
"""
import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import safetensors
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_backbone_goldens import load_model  # noqa: E402  (the tiny goldens' loader)

RECIPE = "tools/make_slice_goldens.py"
SEED = 20261204  # the package's seed (tests/support/vw_test.h VW_TEST_SLICE_SEED)
IDS_SEED = 4321
SLICES = ["4b-slice", "9b-slice"]
CASES = [(2, [0, 1]), (70, [0, 31, 63, 64, 69])]


def main():
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(root / "build"), help="build folder with bench_bundle")
    ap.add_argument("--dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "vw-slices"),
                    help="where the packages are written (the tests' default)")
    args = ap.parse_args()
    out = root / "fixtures" / "backbone"
    out.mkdir(parents=True, exist_ok=True)
    os.makedirs(args.dir, exist_ok=True)
    torch.manual_seed(0)
    side = {
        "recipe": RECIPE, "package_seed": SEED, "ids_seed": IDS_SEED,
        "cases": [{"T": T, "rows": rows} for T, rows in CASES],
        "reference": "transformers Qwen3_5TextModel, float32, attn_implementation=eager, "
                     "torch_chunk_gated_delta_rule + torch causal conv (no FLA), "
                     "last_hidden_state (final RMSNorm applied)",
        "ids": "numpy default_rng(ids_seed).integers(0, vocab_size) per case, in order",
        "writer": "core/model/random_bundle.c via bench_bundle --shape <slice> --seed package_seed",
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__,
                     "safetensors": safetensors.__version__, "numpy": np.__version__},
        "slices": {},
    }
    for shape in SLICES:
        bundle = Path(args.dir) / f"{shape}-{SEED}"
        subprocess.run([str(Path(args.build) / "bench_bundle"), "--shape", shape, "--out",
                        str(bundle), "--seed", str(SEED), "--template",
                        str(root / "fixtures" / "tiny-vela")], check=True)
        manifest = json.loads((bundle / "MODEL_MANIFEST.json").read_text())
        model, cfg = load_model(bundle)
        hidden = cfg["hidden_size"]
        gen = np.random.default_rng(IDS_SEED)
        blob = bytearray(b"VWSLGLD1" + struct.pack("<III", 1, len(CASES), hidden))
        stats = []
        with torch.no_grad():
            for T, rows in CASES:
                ids = gen.integers(0, cfg["vocab_size"], size=T, dtype=np.int64)
                hs = model(input_ids=torch.from_numpy(ids)[None],
                           use_cache=False).last_hidden_state[0].numpy()
                sel = hs[rows].astype("<f4")
                blob += struct.pack("<I", T) + ids.astype("<i4").tobytes()
                blob += struct.pack("<I", len(rows)) + np.array(rows, "<i4").tobytes()
                blob += sel.tobytes()
                stats.append({"T": T, "max_abs": float(np.abs(sel).max())})
        name = f"slice-{shape.split('-')[0]}.bin"
        (out / name).write_bytes(bytes(blob))
        side["slices"][shape] = {
            "golden": f"fixtures/backbone/{name}", "hidden": hidden,
            "layers": cfg["num_hidden_layers"], "layer_types": cfg["layer_types"],
            "model_safetensors_sha256": manifest["files_sha256"]["model.safetensors"],
            "stats": stats,
        }
        del model
    (out / "slices.json").write_text(json.dumps(side, indent=2, sort_keys=True) + "\n")
    for shape in SLICES:
        name = side["slices"][shape]["golden"]
        data = (root / name).read_bytes()
        print(f"{RECIPE}: wrote {name} {len(data)} B sha256 {hashlib.sha256(data).hexdigest()}")
        for s in side["slices"][shape]["stats"]:
            print(f"  {shape} T={s['T']:3d} max|h|={s['max_abs']:.4f}")
    print(f"{RECIPE}: wrote fixtures/backbone/slices.json")


if __name__ == "__main__":
    main()
