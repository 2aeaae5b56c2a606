"""Markdown tables (docs/performance-log.md) from the JSON that bench/gemm.py writes; needs no GPU.

  python bench/results_md.py bench/results_<date>_h200.json
"""

from __future__ import annotations

import json
import sys


def tflops(r: dict, key: str) -> float:
    ms = r.get(key)
    return 2.0 * r["M"] * r["N"] * r["K"] / (ms * 1e-3) / 1e12 if ms else 0.0


def path_of(name: str | None) -> str:
    """The body the best kernel ran on: 128x256x64 tiles take the Hopper body when aligned (all of gemm.py's
    operands are), the others mma.sync."""
    if not name:
        return "none correct"
    return "TMA + wgmma" if ("t128_256_64" in name) else "mma.sync"


def gemm_table(rows: list[dict]) -> str:
    out = ["| dtype | B | M x N x K | cuBLAS | Triton | ckgen | ck/cuBLAS | ck/Triton | best ckgen kernel (body) |",
           "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        c, t, k = tflops(r, "cublas_ms"), tflops(r, "triton_ms"), tflops(r, "ckgen_ms")
        lay = "row" if r["layout"] == "rr" else "col"
        out.append(f"| {r['dtype']} | {lay} | {r['M']}x{r['N']}x{r['K']} | {c:.0f} | {t:.0f} | {k:.0f} | "
                   f"{k / c:.2f} | {k / t:.2f} | {r['ckgen_best']} ({path_of(r['ckgen_best'])}) |")
    return "\n".join(out)


def fused_table(rows: list[dict]) -> str:
    out = ["| dtype | B | M x N x K | torch eager | torch.compile | Triton (fused) | ckgen (fused) | vs eager | vs compile |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ck = r["ckgen_ms"]
        lay = "row" if r["layout"] == "rr" else "col"
        comp = f"{r['compile_ms'] / ck:.2f}" if r["compile_ms"] else "n/a"
        out.append(f"| {r['dtype']} | {lay} | {r['M']}x{r['N']}x{r['K']} | {tflops(r, 'eager_ms'):.0f} | "
                   f"{tflops(r, 'compile_ms'):.0f} | {tflops(r, 'triton_ms'):.0f} | {tflops(r, 'ckgen_ms'):.0f} | "
                   f"{r['eager_ms'] / ck:.2f} | {comp} |")
    return "\n".join(out)


def main() -> int:
    d = json.load(open(sys.argv[1]))
    print(f"{d['device']}, {d['sms']} SMs, torch {d['torch']}, {d['date']}\n")
    print(gemm_table(d["gemm"]) + "\n")
    print(fused_table(d["fused"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
