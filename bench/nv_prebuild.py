"""Build, ahead of a device run, every NVIDIA kernel the device run needs, into the cache at
CKGEN_CACHE_DIR (carried to the device so that nothing is compiled there when the nvcc versions match):
the kernels of bench/gemm_nv.ck, bench/bmm_nv.ck, bench/attention_nv.ck, bench/dispatch_nv.ck, bench/layer_nv.ck,
bench/elementwise_nv.ck, bench/moe_nv.ck, bench/moe_fp8_nv.ck, bench/fp8_nv.ck, bench/fp8_dispatch_nv.ck, bench/quant_nv.ck,
bench/gemm_fused_nv.ck, bench/debug/norm_fit_nv.ck, bench/debug/streamk_nv.ck, bench/debug/small_m_nv.ck,
bench/layer_cluster_nv.ck, bench/skinny_nv.ck (one
library per kernel, as their benchmarks JIT them) and
bench/overhead.py's row ops, of the GPU tests tests/runtime/test_nvidia_*.py (their SPEC texts), examples/moe_layer.py's (bench/moe_layer.py), examples/llama_layer.ck's
(bench/model.py) and the two examples/rowops.ck kernels
``bench/device_run.sh rowops`` runs with ``ckgen run``; and
whole files as one library each: bench/dispatch_nv.ck (the object ckgen compile --tuning links its generated
dispatcher with: only that small host file is compiled on the device), bench/rowops_widths_nv.ck (the planned
kernel of every op and model width bench/rowops.py times; and, as a second library, those plans before the weighted
single-pass rule, its --before), bench/rowops_nv.ck (its --candidates), bench/debug/split_heldout_nv.ck,
split_tiles_nv.ck and split_validate_nv.ck (bench/debug/split_clusters.py --spec), as bench/rowops.py loads them.
With ROWOPS_WIDTHS set (W,W,...), also bench/_build/rowops_given_nv.ck for those widths and its --before library
(bench/rowops.py --widths $ROWOPS_WIDTHS; bench/_build travels in bench/carry_bundle.sh's bundle).

  CKGEN_CACHE_DIR=.nvcache python bench/nv_prebuild.py [-j 2] [--only REGEX] [--list]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import rowops_shapes  # noqa: E402


def main() -> int:
    from ckgen.backends.nvidia.compiler import build_cuda_library
    from ckgen.runtime.api import plan_for

    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--only", help="only jobs whose kernel name or source file matches this regex")
    ap.add_argument("--list", action="store_true", help="print the jobs --only selects (label, kernel) and build none")
    args = ap.parse_args()
    # (source, kernel name or None for the whole file as one library, label); the long whole-file builds first
    jobs: list = [(lib, None, lib) for lib in ("bench/rowops_widths_nv.ck", "bench/dispatch_nv.ck", "bench/rowops_nv.ck",
                                              "bench/debug/split_heldout_nv.ck", "bench/debug/split_tiles_nv.ck",
                                              "bench/debug/split_validate_nv.ck")]
    jobs.append(("bench/rowops_widths_nv.ck", None, "bench/rowops_widths_nv.ck before"))  # bench/rowops.py --before
    if os.environ.get("ROWOPS_WIDTHS"):  # bench/rowops.py --widths $ROWOPS_WIDTHS (and its --before)
        given = rowops_shapes.write_given(rowops_shapes.parse_widths(os.environ["ROWOPS_WIDTHS"]))
        given = str(given.relative_to(ROOT))
        jobs[:0] = [(given, None, given), (given, None, given + " before")]
    from ckgen import driver
    from ckgen.frontend import load_file, load_text

    for path in sorted((ROOT / "tests" / "runtime").glob("test_nvidia_*.py")):  # every GPU test with a SPEC text
        found = re.search(r'^SPEC = """(.*?)"""', path.read_text(), flags=re.S | re.M)
        if found is None:
            continue
        test = str(path.relative_to(ROOT))
        spec_text = found.group(1)
        jobs += [(spec_text, s.name, test) for s in load_text(spec_text)]
    os.chdir(ROOT)
    for bench in ("bench/gemm_nv.ck", "bench/bmm_nv.ck", "bench/attention_nv.ck", "bench/dispatch_nv.ck",
                  "bench/layer_nv.ck", "bench/elementwise_nv.ck", "bench/moe_nv.ck", "bench/moe_fp8_nv.ck", "bench/fp8_nv.ck",
                  "bench/decode_nv.ck", "bench/quant_nv.ck", "bench/fp8_dispatch_nv.ck",
                  "bench/gemm_fused_nv.ck", "bench/gemm_cluster_nv.ck", "bench/debug/norm_fit_nv.ck",
                  "bench/debug/streamk_nv.ck", "bench/debug/small_m_nv.ck", "bench/layer_cluster_nv.ck", "bench/skinny_nv.ck"):
        for s in load_file(bench):  # relative, as the benchmarks pass them (the path is part of the generated sources)
            jobs.append((bench, s.name, bench))
    jobs += [("examples/rowops.ck", k, "examples/rowops.ck") for k in ("layernorm_bf16", "add_rmsnorm_bf16_i8")]
    # bench/overhead.py's row ops, one library per kernel as it JITs them
    jobs += [("bench/rowops_nv.ck", f"{op}_c1024_t32x4r8", "bench/overhead.py") for op in ("softmax", "layernorm", "rmsnorm")]
    import importlib.util  # examples/moe_layer.py's kernels (bench/moe_layer.py), as its kernels() JITs them

    spec = importlib.util.spec_from_file_location("moe_layer", ROOT / "examples" / "moe_layer.py")
    moe_layer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(moe_layer)
    for config in moe_layer.CONFIGS:
        text = moe_layer.spec_text(config, "sm_90")
        jobs += [(text, n, f"examples/moe_layer.py {config}") for n in moe_layer.names("sm_90")]
    # examples/llama_layer.ck's sm_90 kernels and family members (bench/model.py), by the absolute path
    # examples/llama_layer.py passes
    llama = str(ROOT / "examples" / "llama_layer.ck")
    jobs += [(llama, s.name, "examples/llama_layer.ck") for s in load_file(llama) if "sm_90" in s.arches]
    if args.only:
        jobs = [j for j in jobs if re.search(args.only, j[1] or "") or re.search(args.only, j[2])]
    if args.list:  # (what a PREBUILD regex selects, before a device call spends time on it)
        for _, name, label in jobs:
            print(f"{label:40s} {name or '(the whole file)'}")
        print(f"{len(jobs)} libraries")
        return 0

    def one(job):
        src, name, label = job
        t0 = time.perf_counter()
        if name is None:  # the whole file as one library (`ckgen compile FILE --arch sm_90`, rowops.library)
            plans, stem = driver.plan(driver.load([src], ("sm_90",)), ("sm_90",))[Path(src).stem], Path(src).stem
            if label.endswith(" before"):  # its plans before the weighted single-pass rule (rowops.library)
                plans, stem = rowops_shapes.before(plans), f"{stem}_{rowops_shapes.before.__name__}"
            lib = build_cuda_library(stem, plans)
            return f"{src} ({len(plans)} kernels)", time.perf_counter() - t0, lib, plans
        plan = plan_for(src, name, "nvidia", "sm_90")
        lib = build_cuda_library(plan.name, [plan])
        return name, time.perf_counter() - t0, lib, [plan]

    with ThreadPoolExecutor(args.j) as ex:
        for name, dt, lib, plans in ex.map(one, jobs):
            print(f"{name:40s} {dt:6.1f} s  {lib.library.stat().st_size / 1e6:.1f} MB{stack(lib, plans)}", flush=True)
    return 0


def stack(lib, plans) -> str:
    """', stack: entry (N B spilled, M B frame[, wgmmas serialized]), ...' for the library's entries that ptxas gave
    a stack frame or whose wgmmas it serialized (its C75xx note; `ckgen report`'s figures), else ''. The tests check
    their own kernels; this shows the benchmarks' (a Hopper GEMM's mma.sync fallback spills at 255 registers:
    unaligned operands only)."""
    from ckgen.backends.nvidia.compiler import analyze

    bad = [f"{r.name} ({r.spill_stores} B spilled, {r.stack_bytes} B frame"
           f"{', wgmmas serialized' if r.wgmma_serialized else ''})"
           for r in analyze(lib, plans) if r.spill_stores or r.stack_bytes or r.wgmma_serialized]
    return f", stack: {', '.join(bad)}" if bad else ""

if __name__ == "__main__":
    raise SystemExit(main())
