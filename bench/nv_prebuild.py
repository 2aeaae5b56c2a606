"""Build, ahead of a device run, every NVIDIA kernel the device run needs, into the cache at
CKGEN_CACHE_DIR (carried to the device so that nothing is compiled there when the nvcc versions match):
the kernels of bench/gemm_nv.ck, bench/bmm_nv.ck, bench/attention_nv.ck, bench/dispatch_nv.ck and of the GPU tests
tests/runtime/test_nvidia_{cuda,schedules,attention}.py (their SPEC texts), and for the dispatch stage the members of
bench/dispatch_nv.ck together (the object ckgen compile --tuning links its generated dispatcher with: only that small
host file is compiled on the device).

  CKGEN_CACHE_DIR=.nvcache python bench/nv_prebuild.py [-j 2] [--only REGEX]
"""

from __future__ import annotations

import argparse
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    from ckgen.runtime.api import plan_for
    from ckgen.toolchain.nvidia import build_cuda_library

    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", help="only kernels whose name or source file matches this regex")
    args = ap.parse_args()
    jobs = []
    from ckgen.frontend import load_file, load_text

    for test in ("tests/runtime/test_nvidia_cuda.py", "tests/runtime/test_nvidia_schedules.py",
                 "tests/runtime/test_nvidia_attention.py"):
        test_src = (ROOT / test).read_text()
        spec_text = re.search(r'^SPEC = """(.*?)"""', test_src, flags=re.S | re.M).group(1)
        for s in load_text(spec_text):
            jobs.append((spec_text, s.name, test))
    os.chdir(ROOT)
    for bench in ("bench/gemm_nv.ck", "bench/bmm_nv.ck", "bench/attention_nv.ck", "bench/dispatch_nv.ck"):
        for s in load_file(bench):  # relative, as the benchmarks pass them (the path is part of the generated sources)
            jobs.append((bench, s.name, bench))
    if args.only:
        jobs = [j for j in jobs if re.search(args.only, j[1]) or re.search(args.only, j[2])]
    with_family = not args.only or re.search(args.only, "bench/dispatch_nv.ck")

    def one(job):
        src, name, _ = job
        t0 = time.perf_counter()
        plan = plan_for(src, name, "nvidia", "sm_90")
        lib = build_cuda_library(plan.name, [plan])
        return name, time.perf_counter() - t0, lib.library.stat().st_size

    def family() -> tuple[str, float, int]:
        from ckgen import driver

        t0 = time.perf_counter()
        plans = driver.plan(driver.load(["bench/dispatch_nv.ck"], ("sm_90",)), ("sm_90",))["dispatch_nv"]
        lib = build_cuda_library("dispatch_nv", plans)   # as `ckgen compile bench/dispatch_nv.ck --arch sm_90` does
        return "dispatch_nv (all members)", time.perf_counter() - t0, lib.library.stat().st_size

    with ThreadPoolExecutor(args.j) as ex:
        fam = ex.submit(family) if with_family else None
        for name, dt, size in ex.map(one, jobs):
            print(f"{name:40s} {dt:6.1f} s  {size / 1e6:.1f} MB", flush=True)
        if fam is not None:
            name, dt, size = fam.result()
            print(f"{name:40s} {dt:6.1f} s  {size / 1e6:.1f} MB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
