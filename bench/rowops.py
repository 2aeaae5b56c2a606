"""Row ops on the GPU: ckgen's generated kernels (bench/rowops_nv.ck planned for sm_90, one library, called
through the JIT's binding) against the device copy bandwidth, torch eager and torch.compile, all measured in one
run, bf16 (issue 11's table).

  python bench/rowops.py [--json OUT] [--no-compile] [--ops softmax,addrmsnorm] [--shapes 65536x1024,...]

Shapes (rows x cols): 32768x4096, 16384x8192, 4096x32768, 65536x1024. Ops: softmax (scale 0.7), layernorm (weight
and bias), rmsnorm (weight), addrmsnorm (s = x + residual, written, then RMS norm with weight). For each shape and
op, every kernel of bench/rowops_nv.ck that takes the shape (single-pass kernels with max_cols >= cols, looped
ones) is checked against a float64 reference on 64 sampled rows (outputs poisoned with NaN first; s exactly x +
residual rounded) and timed through its C entry point (the JIT binds the operands once); the fastest correct one
counts. GB/s counts the bytes the op must move: x read and y written (4 bytes per element), plus the residual
read and s written for addrmsnorm (8); weight and bias (one row) are left out. Copy: ``y.copy_(x)`` of the same
matrix (read + write), timed per shape in the same run. torch.compile compiles each op once per shape (the first
call, not timed); ``--no-compile`` skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import time_ms  # noqa: E402

SPEC = HERE / "rowops_nv.ck"
SPEC_ARG = os.path.relpath(SPEC, HERE.parent)  # relative, as bench/nv_prebuild.py builds it (same cache keys)
SHAPES = [(32768, 4096), (16384, 8192), (4096, 32768), (65536, 1024)]
OPS = ("softmax", "layernorm", "rmsnorm", "addrmsnorm")
SCALE, EPS = 0.7, 1e-5
BF = torch.bfloat16
CHECK_ROWS = 64
TOL = 1e-2  # bf16 y: relative norm error against float64 (rounding to bf16 dominates)


def _rms(v, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(v, (v.shape[-1],), w, EPS)
    return (v.float() * torch.rsqrt(v.float().pow(2).mean(-1, keepdim=True) + EPS)).to(BF) * w


def softmax_op(x, r, w, b):
    return torch.softmax(x * SCALE, dim=-1)


def layernorm_op(x, r, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


def rmsnorm_op(x, r, w, b):
    return _rms(x, w)


def addrmsnorm_op(x, r, w, b):
    s = x + r
    return _rms(s, w), s


#: what a torch user writes for each op (bf16 in and out), called as f(x, residual, weight, bias)
TORCH_OPS = {"softmax": softmax_op, "layernorm": layernorm_op, "rmsnorm": rmsnorm_op, "addrmsnorm": addrmsnorm_op}


def raw_call(kern, arrays: dict):
    """A zero-overhead closure over the kernel's C entry point (the JIT checked these operands once)."""
    call = kern.bind(**arrays)
    kern.backend.launch(kern.handle, call)  # the full path once
    entry = kern.handle.entry
    args = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in call.values]

    def run():
        st = entry(*args, torch.cuda.current_stream().cuda_stream or None)
        if st != 0:
            raise RuntimeError(f"{kern.name}: status {st}")
    return run


def library() -> dict:
    """Every kernel of bench/rowops_nv.ck planned for sm_90, built by ckgen's toolchain into ONE library (cached;
    bench/nv_prebuild.py builds it ahead: one library instead of one per kernel keeps the carried cache small),
    each behind the JIT's callable (the cuda backend's binding and launch); name -> Kernel."""
    from ckgen import driver
    from ckgen.backends.nvidia.compiler import build_cuda_library
    from ckgen.backends.nvidia.driver import CudaBackend, CudaKernel
    from ckgen.runtime.api import Kernel

    plans = driver.plan(driver.load([SPEC_ARG], ("sm_90",)), ("sm_90",))[SPEC.stem]
    path = build_cuda_library(SPEC.stem, plans).library

    class OneLibrary(CudaBackend):
        def build(self, plan):
            return CudaKernel(plan, path)

    backend = OneLibrary()
    return {p.name: Kernel(p, backend) for p in plans}


def takes(kern, cols: int) -> bool:
    b = kern.plan.body
    return b.max_cols is None or cols <= b.max_cols


def check(kern, op: str, t: dict, cols: int) -> str | None:
    """None when the kernel's outputs on ``t`` match float64 on sampled rows (after a poisoned run)."""
    from ckgen.ops.rowops.reference import op_values

    t["y"].fill_(float("nan"))
    if "s_out" in t:
        t["s_out"].fill_(float("nan"))
    kern(**{k: v for k, v in t.items() if k in kern_args(kern)})
    torch.cuda.synchronize()
    rows = t["x"].shape[0]
    idx = torch.linspace(0, rows - 1, CHECK_ROWS, device=t["x"].device).long().unique()
    x = t["x"][idx].double()
    if "residual" in t:
        s_want = (t["x"][idx].float() + t["residual"][idx].float()).to(BF)
        if not torch.equal(t["s_out"][idx], s_want):
            return "s_out != x + residual"
        v = s_want.double()
    else:
        v = x
    kind = "softmax" if op == "softmax" else ("layernorm" if op == "layernorm" else "rmsnorm")
    w = t["weight"].double().cpu().numpy() if "weight" in t else None
    b = t["bias"].double().cpu().numpy() if "bias" in t else None
    ref = op_values(kind, v.cpu().numpy(), w, b, SCALE, EPS)
    got = t["y"][idx].double().cpu().numpy()
    if not np.all(np.isfinite(got)):
        return f"{int((~np.isfinite(got)).sum())} unwritten outputs"
    err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return None if err <= TOL else f"relative error {err:.2e}"


def kern_args(kern) -> set[str]:
    return {a.name for a in kern.abi.tensors if not a.unused}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--shapes", default=",".join(f"{r}x{c}" for r, c in SHAPES))
    a = ap.parse_args(argv)
    os.chdir(HERE.parent)
    ops = [o for o in a.ops.split(",") if o]
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",") if s]
    t0 = time.perf_counter()
    kernels = {n: k for n, k in library().items() if n.split("_")[0] in ops}
    print(f"{torch.cuda.get_device_name()}: {len(kernels)} ckgen kernels loaded in {time.perf_counter() - t0:.1f} s",
          flush=True)
    compiled = {}
    rows_out = []
    for rows, cols in shapes:
        gen = torch.Generator(device="cuda")
        gen.manual_seed(0)
        x = torch.randn(rows, cols, generator=gen, device="cuda").to(BF)
        r = torch.randn(rows, cols, generator=gen, device=x.device).to(BF)
        w = (torch.rand(cols, generator=gen, device=x.device) + 0.5).to(BF)
        b = (torch.rand(cols, generator=gen, device=x.device) - 0.5).to(BF)
        y, s = torch.empty_like(x), torch.empty_like(x)
        copy_ms = time_ms(lambda x=x, y=y: y.copy_(x))
        copy_gbs = 2 * x.numel() * 2 / copy_ms / 1e6
        print(f"\n{rows}x{cols} bf16: copy {copy_ms:.4f} ms = {copy_gbs:.0f} GB/s (read + write)", flush=True)
        for op in ops:
            nbytes = x.numel() * 2 * (4 if op == "addrmsnorm" else 2)
            gbs = lambda ms, n=nbytes: n / ms / 1e6  # noqa: E731
            t = {"x": x, "y": y}
            if op == "addrmsnorm":
                t |= {"residual": r, "s_out": s}
            if op != "softmax":
                t["weight"] = w
            if op == "layernorm":
                t["bias"] = b
            times, failed = {}, {}
            for name, kern in kernels.items():
                if not name.startswith(op + "_") or not takes(kern, cols):
                    continue
                why = check(kern, op, t, cols)
                if why:
                    failed[name] = why
                    continue
                times[name] = time_ms(raw_call(kern, {k: v for k, v in t.items() if k in kern_args(kern)}))
            for name, why in failed.items():
                print(f"   {name}: WRONG ({why})", flush=True)
            args = (x, r, w, b)
            eager = time_ms(lambda f=TORCH_OPS[op], args=args: f(*args))
            comp = None
            if not a.no_compile:
                try:  # one compiled function per op; each shape compiles once (its first call, not timed)
                    cf = compiled.setdefault(op, torch.compile(TORCH_OPS[op], dynamic=False))
                    comp = time_ms(lambda cf=cf, args=args: cf(*args), warmup=3)
                except Exception as exc:  # noqa: BLE001 - report and go on
                    print(f"   torch.compile failed: {type(exc).__name__}: {exc}", flush=True)
            best = min(times, key=times.get) if times else None
            ms = times.get(best)
            row = {"rows": rows, "cols": cols, "op": op, "best": best, "ms": ms, "gbs": gbs(ms) if ms else None,
                   "copy_gbs": copy_gbs, "pct_copy": 100 * gbs(ms) / copy_gbs if ms else None, "eager_ms": eager,
                   "eager_gbs": gbs(eager), "compile_ms": comp, "compile_gbs": gbs(comp) if comp else None,
                   "vs_compile": comp / ms if comp and ms else None, "vs_eager": eager / ms if ms else None,
                   "all_ms": times, "failed": failed}
            rows_out.append(row)
            if ms:
                cmp = f", torch.compile {comp:.4f} ms ({comp / ms:.2f}x)" if comp else ""
                print(f"  {op:10s} {ms:.4f} ms {gbs(ms):6.0f} GB/s = {100 * gbs(ms) / copy_gbs:5.1f}% of copy "
                      f"[{best}]  eager {eager:.4f} ms ({eager / ms:.2f}x){cmp}", flush=True)
            for name, t_ms in sorted(times.items(), key=lambda kv: kv[1]):
                print(f"      {name:32s} {t_ms:.4f} ms  {100 * gbs(t_ms) / copy_gbs:5.1f}% of copy", flush=True)
    print_table(rows_out)
    if a.json:
        Path(a.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows_out}, indent=1))
    return 0 if all(r["best"] for r in rows_out) else 1


def print_table(rows_out: list[dict]) -> None:
    def cell(v, pct):
        return f"{v:7.0f} {pct:5.1f}%" if v else f"{'-':>7s} {'':6s}"

    print(f"\n{'shape':12s} {'op':10s} | {'ckgen GB/s  %copy':18s} | {'eager GB/s  %copy':18s} | "
          f"{'compile GB/s %copy':18s} | vs compile  vs eager")
    for r in rows_out:
        c = r["copy_gbs"]
        shape = f"{r['rows']}x{r['cols']}"
        print(f"{shape:12s} {r['op']:10s} | {cell(r['gbs'], 100 * (r['gbs'] or 0) / c):18s} | "
              f"{cell(r['eager_gbs'], 100 * r['eager_gbs'] / c):18s} | "
              f"{cell(r['compile_gbs'], 100 * (r['compile_gbs'] or 0) / c):18s} | "
              f"{(r['vs_compile'] or 0):9.2f}x {(r['vs_eager'] or 0):8.2f}x")


if __name__ == "__main__":
    sys.exit(main())
