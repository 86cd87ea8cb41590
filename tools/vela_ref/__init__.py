"""vela_ref — an independent Python reference of the Vela 2.0 answer path.

Written from docs/spec/answers.md §3–§8 and docs/contract.md for
tools/make_answer_goldens.py (and bench/score.sh); never imported by the C
build. Modules:
  answers.py   calibration (float64), span decoding (float32 rules), the
               System One envelope in the runtime family's key order;
  model.py     the tiny bundle's backbone (transformers Qwen3.5, FP32) run as
               trees, and the heads (torch FP32, tools/make_head_goldens.py);
  pipeline.py  request bytes -> plan (tools/make_plan_goldens.py) -> model ->
               answers -> envelope or rejection, with stage timings.
"""
