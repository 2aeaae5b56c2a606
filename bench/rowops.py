"""Row ops on the GPU at the row widths of open models: ckgen's kernels against the device copy, torch eager and
torch.compile, every side timed as device time by CUDA-graph replay (nvh.time_graph_ms: the median of 20 replays of
a graph of 10 calls, per call; no host launch path, no torch.compile guards), bf16.

  python bench/rowops.py [--quick] [--kinds hidden,intermediate,vocab,decode] [--ops softmax,layernorm,...]
                         [--shapes 4096x2304,...] [--widths 2880,5632,...] [--candidates] [--before] [--no-compile]
                         [--part K/N] [--json OUT]

Shapes (bench/rowops_shapes.py, from bench/shapes/hidden_sizes.txt: 44 open models' hidden, intermediate and
vocabulary sizes, each with its source model): every hidden and intermediate width at the rows that make >= 64 MiB
of traffic, with softmax (scale 0.7), layernorm (weight and bias), rmsnorm (weight) and addrmsnorm (s = x +
residual, written, then RMS norm with weight); every vocabulary width at 1024 rows with softmax; decode rows (1,
16, 64) at every hidden width. ``--quick``: a subset (5 hidden, 3 intermediate, 2 vocabulary widths, 2 decode
shapes); ``--shapes``: those rows x cols instead (with the planned kernel of that width where
bench/rowops_widths_nv.ck has one); ``--widths``: columns of models not in the shapes file instead, each with all
four ops at the rows of >= 64 MiB of traffic (kind ``given``), its kernels planned the same way (max_cols alone) into
a library of their own (bench/_build/rowops_given_nv.ck, built here when not prebuilt): widths a planner rule was not
fitted on.

ckgen's figure of record at a width is ckgen's planned kernel for it (bench/rowops_widths_nv.ck: max_cols = the
width and nothing else given, so threads, vectors, rows per workgroup and pipeline are the planner's choice);
``--candidates`` also times the hand-picked kernels of bench/rowops_nv.ck that take the shape (shown, not of
record); ``--before`` the planned kernels the newest weight rule changed as they were planned before it (the
weight-ahead rule, else the weighted single pass: rowops_shapes.before; shown, not of record).

Each kernel is checked against a float64 reference on 64 sampled rows (outputs poisoned with NaN first;
s exactly x + residual rounded), then timed through its C entry point. GB/s counts the bytes the op must move: x
read and y written (4 bytes per element), plus the residual read and s written for addrmsnorm (8); weight and
bias (one row) are left out. Copy: ``y.copy_(x)`` of the same matrix (read + write), timed per shape. torch.compile
compiles each op once per shape (dynamic=False; the first call, not timed). The summary counts, at >= 64 MiB of
traffic, the (op, shape) pairs at >= 90% of copy (vocabulary >= 85%) and >= 1.0x torch.compile (issue 23's
acceptance), and decode shapes' device time against 4 us.
"""

from __future__ import annotations

import argparse
import importlib
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
import rowops_shapes as RS  # noqa: E402
from nvh import raw_call, time_graph_ms  # noqa: E402

WIDTHS_SPEC = RS.SPEC_FILE            # the planned kernels, one per op and width
CANDIDATES_SPEC = HERE / "rowops_nv.ck"  # hand-picked candidates at the widths of issue 11 (--candidates)
OPS = RS.OPS
PCT_COPY, PCT_VOCAB, VS_COMPILE, DECODE_US = 90.0, 85.0, 1.0, 4.0   # issue 23's acceptance
ACCEPT_BYTES = 64 << 20
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



def library(spec: Path, variant=None) -> dict:
    """Every kernel of ``spec`` planned for sm_90, built by ckgen's toolchain into ONE library (cached;
    bench/nv_prebuild.py builds it ahead, from the same relative path: the same cache key), each behind the JIT's
    callable (the cuda backend's binding and launch); name -> Kernel. ``variant``: plans -> other plans (with
    names of their own) built instead, into a library named after it."""
    from ckgen import driver
    from ckgen.backends.nvidia.compiler import build_cuda_library
    from ckgen.backends.nvidia.driver import CudaBackend, CudaKernel
    from ckgen.runtime.api import Kernel

    arg = os.path.relpath(spec, HERE.parent)
    plans = driver.plan(driver.load([arg], ("sm_90",)), ("sm_90",))[spec.stem]
    stem = spec.stem
    if variant is not None:
        plans, stem = variant(plans), f"{spec.stem}_{variant.__name__}"
    path = build_cuda_library(stem, plans).library

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


def plan_note(kern) -> str:
    b = kern.plan.body
    kind = ("row cache" if b.cache_tiles else "looped" if b.looped else
            "bounded" if b.workgroups_per_cu and not b.cache_tiles else "single")
    return f"{kind} {b.threads_per_row}x{b.reg_vecs}x{b.rows_per_workgroup}"


def operands(rows: int, cols: int, op: str) -> dict:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(rows * 7 + cols)
    x = torch.randn(rows, cols, generator=gen, device="cuda").to(BF)
    t = {"x": x, "y": torch.empty_like(x)}
    if op == "addrmsnorm":
        t |= {"residual": torch.randn(rows, cols, generator=gen, device="cuda").to(BF), "s_out": torch.empty_like(x)}
    if op != "softmax":
        t["weight"] = (torch.rand(cols, generator=gen, device="cuda") + 0.5).to(BF)
    if op == "layernorm":
        t["bias"] = (torch.rand(cols, generator=gen, device="cuda") - 0.5).to(BF)
    return t


def time_kernel(kern, op: str, t: dict, cols: int) -> tuple[float | None, str | None]:
    """(device ms per call, None) after a correct check, or (None, why)."""
    why = check(kern, op, t, cols)
    if why:
        return None, why
    try:
        return time_graph_ms(raw_call(kern, **{k: v for k, v in t.items() if k in kern_args(kern)})), None
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return None, f"{type(exc).__name__}: {exc}"


def torch_args(t: dict):
    return t["x"], t.get("residual"), t.get("weight"), t.get("bias")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="a subset of the widths (bench/rowops_shapes.py QUICK)")
    ap.add_argument("--kinds", default="hidden,intermediate,vocab,decode", help="which kinds of width")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--shapes", help="rows x cols instead of the shapes file, e.g. 4096x2304,1024x128256")
    ap.add_argument("--widths", help="columns not in the shapes file, e.g. 2880,5632 (kind given; kernels built here)")
    ap.add_argument("--candidates", action="store_true", help="also time bench/rowops_nv.ck's hand-picked kernels")
    ap.add_argument("--before", action="store_true", help="also time each planned kernel the newest weight "
                    "rule changed as it was before it (rung 3 A/B of that rule)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--part", default="1/1", help="K/N: every N-th shape from the K-th (split a long run)")
    a = ap.parse_args(argv)
    os.chdir(HERE.parent)
    ops = [o for o in a.ops.split(",") if o]
    try:
        given = RS.parse_widths(a.widths) if a.widths else []
    except ValueError as exc:
        ap.error(str(exc))
    if given:
        todo = RS.given_shapes(given)
    elif a.shapes:
        todo = [RS.Shape("given", int(r), int(c), RS.OPS, ()) for r, c in (s.split("x") for s in a.shapes.split(",") if s)]
    else:
        todo = RS.shapes(RS.read(), a.quick, tuple(k for k in a.kinds.split(",") if k))
    part, nparts = (int(v) for v in a.part.split("/"))
    todo = todo[part - 1::nparts]
    t0 = time.perf_counter()
    spec = RS.write_given(given) if given else WIDTHS_SPEC
    planned = library(spec)
    cands = {n: k for n, k in library(CANDIDATES_SPEC).items() if n.split("_")[0] in ops} if a.candidates else {}
    olds = library(spec, RS.before) if a.before else {}
    print(f"{torch.cuda.get_device_name()}: {len(planned)} planned + {len(cands) + len(olds)} candidate ckgen kernels "
          f"loaded in "
          f"{time.perf_counter() - t0:.1f} s; {len(todo)} shapes", flush=True)
    compiled = {}
    # each (op, shape) compiles once: raise dynamo's per-function recompile limit (8 by default; past it the
    # compiled function would fall back to eager without a word)
    if not a.no_compile:
        cfg = importlib.import_module("torch._dynamo").config
        for knob in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                     "accumulated_recompile_limit"):
            if hasattr(cfg, knob):
                setattr(cfg, knob, max(getattr(cfg, knob), 4096))
    rows_out = []
    for sh in todo:
        rows, cols = sh.rows, sh.cols
        x = torch.randn(rows, cols, device="cuda").to(BF)
        y = torch.empty_like(x)
        copy_ms = time_graph_ms(lambda x=x, y=y: y.copy_(x))
        copy_gbs = 2 * x.numel() * 2 / copy_ms / 1e6
        del x, y
        models = ", ".join(sh.models[:3]) + (f" +{len(sh.models) - 3}" if len(sh.models) > 3 else "")
        print(f"\n{sh.kind} {rows}x{cols} bf16 ({models}): copy {copy_ms * 1e3:.1f} us = {copy_gbs:.0f} GB/s",
              flush=True)
        for op in [o for o in sh.ops if o in ops]:
            t = operands(rows, cols, op)
            nbytes = rows * cols * 2 * (4 if op == "addrmsnorm" else 2)
            name = RS.kernel_name(op, cols)
            ms, why, note = None, "no planned kernel of this width in bench/rowops_widths_nv.ck", None
            if name in planned and takes(planned[name], cols):
                ms, why = time_kernel(planned[name], op, t, cols)
                note = plan_note(planned[name])
            cand = {}
            if name + "_before" in olds:
                cms, cwhy = time_kernel(olds[name + "_before"], op, t, cols)
                cand[name + "_before"] = cms if cms else cwhy
            for cname, kern in cands.items():
                if cname.startswith(op + "_") and takes(kern, cols):
                    cms, cwhy = time_kernel(kern, op, t, cols)
                    cand[cname] = cms if cms else cwhy
            f = TORCH_OPS[op]
            args = torch_args(t)
            eager = time_graph_ms(lambda f=f, args=args: f(*args))
            comp = None
            if not a.no_compile:
                try:  # one compiled function per op; each shape compiles once (its first call, not timed)
                    cf = compiled.setdefault(op, torch.compile(f, dynamic=False))
                    cf(*args)
                    comp = time_graph_ms(lambda cf=cf, args=args: cf(*args))
                except Exception as exc:  # noqa: BLE001 - report and go on
                    print(f"   torch.compile failed: {type(exc).__name__}: {exc}", flush=True)
            gbs = (lambda v, n=nbytes: n / v / 1e6 if v else None)  # noqa: E731
            row = {"kind": sh.kind, "rows": rows, "cols": cols, "op": op, "models": list(sh.models), "kernel": name,
                   "plan": note, "ms": ms, "error": why, "bytes": nbytes, "gbs": gbs(ms), "copy_ms": copy_ms,
                   "copy_gbs": copy_gbs, "pct_copy": 100 * gbs(ms) / copy_gbs if ms else None, "eager_ms": eager,
                   "compile_ms": comp, "vs_compile": comp / ms if comp and ms else None,
                   "vs_eager": eager / ms if ms else None, "candidates": cand}
            rows_out.append(row)
            if ms:
                cmp = f"  torch.compile {comp * 1e3:8.1f} us ({comp / ms:.2f}x)" if comp else ""
                print(f"  {op:10s} {ms * 1e3:8.1f} us {gbs(ms):6.0f} GB/s = {row['pct_copy']:5.1f}% of copy [{note}]"
                      f"  eager {eager * 1e3:8.1f} us ({eager / ms:.2f}x){cmp}", flush=True)
            else:
                print(f"  {op:10s} ckgen WRONG or missing: {why}", flush=True)
            for cname, v in sorted(cand.items(), key=lambda kv: kv[1] if isinstance(kv[1], float) else 1e9):
                shown = f"{v * 1e3:8.1f} us {100 * gbs(v) / copy_gbs:5.1f}% of copy" if isinstance(v, float) else v
                print(f"      candidate {cname:32s} {shown}", flush=True)
            del t
    print_table(rows_out)
    ok = summarize(rows_out)
    if a.json:
        Path(a.json).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows_out}, indent=1))
    return 0 if ok else 1


def print_table(rows_out: list[dict]) -> None:
    print(f"\n{'kind':12s} {'shape':13s} {'op':10s} | {'ckgen us':>9s} {'%copy':>6s} | {'eager':>6s} {'compile':>7s}"
          f" | {'x eager':>7s} {'x compile':>9s} | plan")
    for r in rows_out:
        shape = f"{r['rows']}x{r['cols']}"
        pct = f"{r['pct_copy']:6.1f}" if r["pct_copy"] else f"{'-':>6s}"
        ck = f"{r['ms'] * 1e3:9.1f}" if r["ms"] else f"{'WRONG':>9s}"
        e = 100 * r["bytes"] / r["eager_ms"] / 1e6 / r["copy_gbs"]
        c = f"{100 * r['bytes'] / r['compile_ms'] / 1e6 / r['copy_gbs']:6.1f}%" if r["compile_ms"] else f"{'-':>7s}"
        print(f"{r['kind']:12s} {shape:13s} {r['op']:10s} | {ck} {pct} | {e:5.1f}% {c} | {(r['vs_eager'] or 0):6.2f}x "
              f"{(r['vs_compile'] or 0):8.2f}x | {r['plan'] or ''}")


def summarize(rows_out: list[dict]) -> bool:
    """Issue 23's acceptance over the rows measured: True when every (op, shape) meets it."""
    big = [r for r in rows_out if r["bytes"] >= ACCEPT_BYTES and r["kind"] != "decode"]
    decode = [r for r in rows_out if r["kind"] == "decode"]
    bad = []
    for r in big:
        need = PCT_VOCAB if r["kind"] == "vocab" else PCT_COPY
        if not r["ms"] or r["pct_copy"] < need or (r["vs_compile"] is not None and r["vs_compile"] < VS_COMPILE):
            bad.append(r)
    bad += [r for r in decode if not r["ms"] or r["ms"] * 1e3 > DECODE_US]
    pct = [r["pct_copy"] for r in big if r["pct_copy"]]
    vs = [r["vs_compile"] for r in big if r["vs_compile"]]
    print(f"\n{len(big)} (op, shape) pairs at >= 64 MiB: {sum(p >= PCT_COPY for p in pct)} at >= {PCT_COPY:.0f}% of "
          f"copy (min {min(pct, default=0):.1f}%, median {float(np.median(pct)) if pct else 0:.1f}%); "
          f"{sum(v >= VS_COMPILE for v in vs)}/{len(vs)} at >= {VS_COMPILE:.1f}x torch.compile (geomean "
          f"{float(np.exp(np.mean(np.log(vs)))) if vs else 0:.2f}x); {len(decode)} decode pairs, "
          f"{sum(1 for r in decode if r['ms'] and r['ms'] * 1e3 <= DECODE_US)} within {DECODE_US:.0f} us")
    for r in bad:
        what = (f"{r['pct_copy']:.1f}% of copy, {(r['vs_compile'] or 0):.2f}x compile" if r["ms"] and r["kind"] != "decode"
                else f"{r['ms'] * 1e3:.1f} us" if r["ms"] else f"no result: {r['error']}")
        print(f"  below: {r['kind']} {r['rows']}x{r['cols']} {r['op']}: {what} [{r['plan']}]")
    return not bad


if __name__ == "__main__":
    sys.exit(main())
