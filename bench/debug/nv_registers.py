"""Registers, spills and blocks per SM of kernels built for sm_90 with the local nvcc (rung 1: ptxas's report, no
GPU needed), e.g. to compare two forms of a device header.

    PYTHONPATH=. python3 bench/debug/nv_registers.py SPEC.ck KERNEL [KERNEL ...]
"""

from __future__ import annotations

import sys


def main() -> int:
    from ckgen.backends.nvidia.compiler import analyze, build_cuda_library, format_table
    from ckgen.runtime.api import plan_for

    src, names = sys.argv[1], sys.argv[2:]
    plans = [plan_for(src, n, "nvidia", "sm_90") for n in names]
    lib = build_cuda_library("nv_registers_" + "_".join(n[:12] for n in names)[:60], plans)
    print(format_table(analyze(lib, plans)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
