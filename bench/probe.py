"""Run one kernel a few times on the GPU, for a profiler to read (device only).

  python bench/probe.py bmm SHAPE KERNEL        e.g. bmm 64x1024x1024x128 bmm_bf16_t128_256_64_w24_s4
  python bench/probe.py bmm SHAPE torch         torch.bmm on that shape; prints the names of the kernels it runs
  python bench/probe.py rowops SHAPE KERNEL     e.g. rowops 4096x32768 layernorm_s32768_t512x2r1 (bench/rowops_nv.ck)
  python bench/probe.py gemm SHAPE KERNEL       e.g. gemm 512x4096x14336 lin_tile128x128x64_schedulestreamk (a member of
                                                bench/dispatch_nv.ck's family: A M x K row-major, B = W^T of W [N, K];
                                                torch: torch.mm of the same operands)
  python bench/probe.py gemm SHAPE FILE.ck@NAME the same for kernel NAME of FILE.ck (N: B's columns; a gated kernel
                                                writes N / 2; a residual one gets a random R)

Wrap it in `ncu --clock-control none -k regex:NAME ...` to read one launch's counters (bench/device_run.sh stage
`probe`). Inputs are random; nothing is checked here (bench/bmm.py and bench/rowops.py check and time).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

REPEAT = 3


def bmm(shape: str, kernel: str) -> None:
    B, M, N, K = (int(v) for v in shape.split("x"))
    a = torch.randn(B, M, K, device="cuda").to(torch.bfloat16)
    b = torch.randn(B, K, N, device="cuda").to(torch.bfloat16)
    c = torch.empty(B, M, N, device="cuda", dtype=torch.bfloat16)
    if kernel == "torch":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(REPEAT):
                torch.bmm(a, b, out=c)
            torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
        print(f"torch.bmm {shape}: " + "; ".join(names))
        return
    import bmm as bench_bmm

    from ckgen.runtime.api import jit

    run = bench_bmm.raw_call(jit(bench_bmm.SPEC_ARG, kernel=kernel, target="sm_90"), a, b, c)
    for _ in range(REPEAT):
        run()
    torch.cuda.synchronize()


def rowops(shape: str, kernel: str) -> None:
    import rowops as bench_rowops

    rows, cols = (int(v) for v in shape.split("x"))
    kern = bench_rowops.library()[kernel]
    x = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
    t = {"x": x, "y": torch.empty_like(x), "residual": torch.randn_like(x), "s_out": torch.empty_like(x),
         "weight": torch.rand(cols, device="cuda").to(torch.bfloat16),
         "bias": torch.rand(cols, device="cuda").to(torch.bfloat16)}
    run = bench_rowops.raw_call(kern, {k: v for k, v in t.items() if k in bench_rowops.kern_args(kern)})
    for _ in range(REPEAT):
        run()
    torch.cuda.synchronize()


def gemm(shape: str, kernel: str) -> None:
    from ckgen.runtime.api import jit

    M, N, K = (int(v) for v in shape.split("x"))
    a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    w = torch.randn(N, K, device="cuda").to(torch.bfloat16)
    named = {}
    if kernel == "torch":
        k = torch.mm
    else:
        spec, _, name = kernel.rpartition("@")
        k = jit(spec or "bench/dispatch_nv.ck", kernel=name, target="sm_90")  # (the prepared call keeps its workspace)
        g = k.plan.spec.params.gemm
        if g.residual:
            named["residual"] = torch.randn(M, N // 2 if g.gated else N, device="cuda").to(torch.bfloat16)
    for _ in range(REPEAT):
        k(a, w.t(), **named)
    torch.cuda.synchronize()


PROBES = {"bmm": bmm, "rowops": rowops, "gemm": gemm}


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in PROBES:
        print(__doc__, file=sys.stderr)
        return 2
    os.chdir(HERE.parent)
    PROBES[argv[0]](argv[1], argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
