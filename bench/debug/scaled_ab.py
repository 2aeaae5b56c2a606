"""A/B on the H200: the Llama-3-8B projections of examples/llama_layer.ck with and without the row scale of the
folded norms (``scale_a = row``), through their families, timed in interleaved CUDA-graph rounds at 2048 and 8192
tokens. Why the folded-norm layer lost 1-1.6% at 8192 tokens (bench/runs/2026-12-04_model_fold_norms.txt).

  python bench/debug/scaled_ab.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from nvh import time_graphs_interleaved_ms  # noqa: E402

import ckgen  # noqa: E402

CK = str(Path(__file__).resolve().parents[2] / "examples" / "llama_layer.ck")
PAIRS = (("qkv", "llama_qkv", "llama_qkv_rs", 6144, 4096), ("gate_up", "llama_gate_up", "llama_gate_up_rs", 28672, 4096))


def _sides(kp, ks, a, b, r) -> dict:
    sides = {"plain": lambda: kp(a, b), "scaled": lambda: ks(a, b, r)}
    for f in sides.values():
        f()  # (the first, fully checked call outside the capture)
    return sides


def main() -> int:
    print(f"device: {torch.cuda.get_device_name(0)}")
    for m in (2048, 8192):
        for name, plain, scaled, n, k in PAIRS:
            kp, ks = (ckgen.jit(CK, kernel=x, target="sm_90") for x in (plain, scaled))
            x = torch.randn(m, k, device="cuda").to(torch.bfloat16)
            w = (torch.randn(n, k, device="cuda") / k ** 0.5).to(torch.bfloat16)
            r = torch.rand(m, device="cuda") + 0.5
            t = time_graphs_interleaved_ms(_sides(kp, ks, x, w.T, r), rounds=21, inner=5)
            flops = 2 * m * n * k
            print(f"{name:8} M={m:5}: plain {t['plain']:.4f} ms ({flops / t['plain'] / 1e9:.0f} TFLOP/s), scaled "
                  f"{t['scaled']:.4f} ms ({flops / t['scaled'] / 1e9:.0f}); scaled / plain {t['scaled'] / t['plain']:.4f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
