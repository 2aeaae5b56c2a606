"""Small-M GEMMs: the dispatcher's members against the same tiles with clusters of two (B multicast) and cuBLAS,
on the GPU (issue 23: the untuned dispatcher's worst shapes, 0.73-0.87x cuBLAS on the H100, lie at M = 100-1000).

Kernels: bench/debug/small_m_nv.ck (64x128, 128x128 and 64x256 tiles as bench/dispatch_nv.ck configures them, the
first two and the last also with ``cluster = 2``; split-K of 64x128, 128x128 and 128x256). Shapes: nn.Linear
layers (A M x K row-major, B = W^T with W [N, K] row-major, C row-major, bf16) given as MxNxK, by default the
held-out shapes where the dispatcher lost most. Every side is a CUDA graph of calls that rotate over enough copies
of W (nvh.rotation_copies) that each call reads its B from HBM, as a model's layers do, timed in interleaved
rounds (nvh.time_graphs_interleaved_ms); each ckgen output is checked against an fp32 reference first.

    python3 bench/debug/small_m_ab.py [--shapes 200x3584x4096,...] [--kernels REGEX] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from nvh import jit_file, raw_call, rel_err, rotation_copies, time_graphs_interleaved_ms  # noqa: E402

SPEC = "bench/debug/small_m_nv.ck"
#: the untuned dispatcher's worst held-out shapes on the H100 (bench/runs/2026-12-07g_h100_dispatch_dense2.json),
#: then one tuned Mistral-7B shape
SHAPES = "200x3584x4096,100x3584x18944,200x5120x5120,200x3072x3072,100x4608x3584,48x3584x14336,256x4096x4096"


def rotating(calls: list):
    """One callable that runs the next of ``calls`` each time (captured into a graph: the calls in turn)."""
    state = {"i": 0}

    def run():
        calls[state["i"] % len(calls)]()
        state["i"] += 1
    return run


def case(kernels: dict, M: int, N: int, K: int) -> tuple[dict, dict]:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(M * 7 + N + K)
    a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    copies = rotation_copies(N * K * 2)
    ws = [(torch.randn(N, K, device="cuda", generator=gen) * 0.05).to(torch.bfloat16) for _ in range(copies)]
    ref = (a.float() @ ws[0].float().t()).double()
    sides, errs = {}, {}
    outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
    sides["cublas"] = rotating([lambda w=w, c=c: torch.mm(a, w.t(), out=c) for w, c in zip(ws, outs, strict=True)])
    for name, k in kernels.items():
        cs = [torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        sides[name] = rotating([raw_call(k, a, w.t(), C=c) for w, c in zip(ws, cs, strict=True)])
        torch.cuda.synchronize()
        errs[name] = rel_err(cs[0], ref)
    inner = copies * max(1, 6 // copies)
    return time_graphs_interleaved_ms(sides, inner=inner), errs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--kernels", help="only the kernels matching this regex")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(HERE.parent.parent)
    kernels = jit_file(SPEC, args.kernels)
    names = list(kernels)
    print(f"device: {torch.cuda.get_device_properties(0).name}, torch {torch.__version__}; us per call, "
          "x = cuBLAS time / kernel time")
    print(f"{'M x N x K':>16} {'cuBLAS':>7} " + " ".join(f"{n:>11}" for n in names) + "  best")
    rows, ok = [], True
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        t, errs = case(kernels, M, N, K)
        bad = [n for n, e in errs.items() if not e < 1e-2]
        ok &= not bad
        best = min(names, key=lambda n: t[n])
        cells = " ".join(f"{t[n] * 1e3:5.1f} {t['cublas'] / t[n]:4.2f}x" for n in names)
        print(f"{shape:>16} {t['cublas'] * 1e3:7.1f} {cells}  {best} {t['cublas'] / t[best]:.2f}x"
              + (f"  FAIL {bad}" if bad else ""), flush=True)
        rows.append({"M": M, "N": N, "K": K, **{f"{n}_ms": v for n, v in t.items()}, "errors": errs})
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_properties(0).name, "rows": rows},
                                              indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
