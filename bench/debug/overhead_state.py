"""Does the process's state move host time per call? (issue 22: bench/overhead.py timed a ckgen GEMM call at
8.2 us where bench/overhead_profile.py timed the same call at 5.7 us in the same session, and torch.mm at 19.8
against 13.5 us.) A diagnostic, not a figure of record.

Times ``torch.mm`` and ``torch.empty`` on tiny bf16 operands, and the ckgen GEMM call of bench/overhead_profile.py
once it exists, at each stage of building up bench/overhead.py's state: torch alone; ckgen imported; one JIT
kernel; every callable of bench/overhead.py's cases(); then the same with the garbage collector off; then after
one call of every case. Medians of host time per call (bench/overhead.py's host_us).

    python3 bench/debug/overhead_state.py [--calls 5000]
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from overhead import GEMM, cases, host_us  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args()
    a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16).t()
    g = None

    def row(stage: str) -> None:
        mm = host_us(lambda: torch.mm(a, b), args.calls, 200)
        em = host_us(lambda: torch.empty((128, 128), dtype=torch.bfloat16, device="cuda"), args.calls, 200)
        ck = host_us(lambda: g(a, b), args.calls, 200) if g is not None else float("nan")
        print(f"{stage:44} {mm:9.2f} {em:9.2f} {ck:9.2f}   (gc objects {len(gc.get_objects())})", flush=True)

    print(f"{'stage':44} {'torch.mm':>9} {'empty':>9} {'ckgen mm':>9}")
    row("torch only")
    from ckgen.runtime.api import jit

    row("ckgen imported")
    g = jit(str(HERE / GEMM[0]), kernel=GEMM[1], target="sm_90")
    row("one JIT kernel")
    every = cases()
    row("every overhead.py callable")
    gc.disable()
    row("  the same, gc off")
    gc.enable()
    for _name, obj, a_, kw, ref in every:
        obj(*a_, **kw)
        ref()
    torch.cuda.synchronize()
    row("after one call of every case")
    gc.freeze()
    row("  the same, gc.freeze()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
