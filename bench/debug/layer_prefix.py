"""Where a composed layer's time goes beyond its steps' (issue 28): the folded-norm layer at 1x8192 tokens ran 6.304 ms
against a sum of 5.940 for its steps alone (H200, 2026-12-06), while the unfolded one ran 6.196.

  python bench/debug/layer_prefix.py [--configs llama3-8b] [--shapes 1x8192,1x2048]

For each configuration and shape, every prefix steps[:k] (k = 1 .. all) of four layers is captured as a CUDA graph
and replayed, all graphs in interleaved rounds (bench/nvh.py): the unfolded layer, the folded one, and the two with
one norm folded (``fold_in``: the first norm folded into qkv, the post-attention norm not; ``fold_post``: the other
way round). A prefix's increment over the one before is what its last step costs inside the layer, printed beside
that step timed alone (its graph replayed on its own, as bench/model.py's breakdown does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from model import _example  # noqa: E402
from nvh import time_graphs_interleaved_ms  # noqa: E402


def layers(ex, ks, cfg, w, batch: int, seq: int, rope) -> dict:
    """name -> steps of the four layers (the folded steps read the folded weights, the others the given ones)."""
    plain = ex.steps(ks, cfg, w, batch, seq, rope)
    folded = ex.steps(ks, cfg, w.fold(), batch, seq, rope)
    return {"unfolded": plain, "folded": folded, "fold_in": folded[:2] + plain[2:],
            "fold_post": plain[:5] + folded[5:]}


def run(ex, ks, cfg_name: str, batch: int, seq: int) -> None:
    cfg = ex.CONFIGS[cfg_name]
    w = ex.Weights.random(cfg, 0, "cuda")
    x = torch.randn(batch * seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    rope = ex.rope_inputs(cfg, batch, seq, "cuda")
    sides = layers(ex, ks, cfg, w, batch, seq, rope)
    fns = {}
    for name, st in sides.items():
        env = ex.run_steps(st, x)
        for k in range(1, len(st) + 1):  # the prefixes, each on a fresh environment of its own
            fns[(name, "prefix", k)] = lambda st=st[:k]: ex.run_steps(st, x)
        for i, (_, fn) in enumerate(st):  # each step alone, on the whole layer's intermediates
            fns[(name, "alone", i)] = lambda fn=fn, env=env: fn(env)
    with torch.no_grad():
        t = time_graphs_interleaved_ms(fns, warmup=2, rounds=9, inner=3)
    print(f"\n{cfg_name} {batch}x{seq} (device ms; prefix: steps[:k] as one graph; +: its increment; alone: the "
          "step's graph on its own)")
    for name, st in sides.items():
        prev = 0.0
        cells = []
        for k, (step, _) in enumerate(st, 1):
            p = t[(name, "prefix", k)]
            cells.append(f"{step} +{p - prev:.3f} ({t[(name, 'alone', k - 1)]:.3f})")
            prev = p
        alone = sum(t[(name, "alone", i)] for i in range(len(st)))
        print(f"  {name:>9}: layer {prev:.3f}, steps alone {alone:.3f} | " + "  ".join(cells))


def main() -> int:
    ex = _example()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="llama3-8b")
    ap.add_argument("--shapes", default="1x8192,1x2048")
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    ks = ex.kernels("sm_90")
    for cfg_name in a.configs.split(","):
        for shape in a.shapes.split(","):
            b, s = (int(v) for v in shape.split("x"))
            run(ex, ks, cfg_name, b, s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
