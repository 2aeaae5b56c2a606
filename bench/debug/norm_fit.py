"""The decoder layer's RMS norms at its widths (issue 28): examples/llama_layer.ck plans them for max_cols = 8192, so
at 4096 / 3584 columns every row takes the masked path of a tile twice the row. Times, by CUDA-graph replay in
interleaved rounds, the norm (y and rstd) and the rstd-only norm planned for 8192, for 8184 (the same tile, whole
vectors) and for 4096 (a tile of the row's size), beside a copy of x, at the layer's token counts.

  python bench/debug/norm_fit.py [--shapes 2048x4096,8192x4096,2048x3584,8192x3584]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from nvh import jit_file, time_graphs_interleaved_ms  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="2048x4096,8192x4096,2048x3584,8192x3584")
    a = ap.parse_args()
    ks = jit_file("bench/debug/norm_fit_nv.ck")
    print(f"device: {torch.cuda.get_device_name(0)}")
    for shape in a.shapes.split(","):
        m, n = (int(v) for v in shape.split("x"))
        x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        sides = {"copy": lambda x=x, y=y: y.copy_(x)}
        for name, k in ks.items():
            if "_norm_" in name:
                sides[name] = lambda k=k, x=x, w=w: k(x, w, eps=1e-5)
            else:
                sides[name] = lambda k=k, x=x: k(x, eps=1e-5)
        with torch.no_grad():
            t = time_graphs_interleaved_ms(sides, rounds=15, inner=10)
        mb = m * n * 2 / 1e6
        print(f"{m}x{n} (x: {mb:.1f} MB): copy {t['copy'] * 1e3:.1f} us ({2 * mb / t['copy'] / 1e3:.2f} TB/s)")
        for name in ks:
            moved = 2 * mb if "_norm_" in name else mb
            print(f"  {name:>14}: {t[name] * 1e3:7.1f} us  {moved / t[name] / 1e3:5.2f} TB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
