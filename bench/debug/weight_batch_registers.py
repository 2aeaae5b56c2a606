"""Rung 1 (no GPU): sm_90a registers, spills and workgroups per SM of the planner's single-pass row-op kernels as
planned against the same tile with weight and bias held for the whole tile and no register bound (the plan before
WEIGHTED_SINGLE_PASS_REGISTERS, ckgen/ops/rowops/registers.py), at every row width of bench/shapes/hidden_sizes.txt.

    PYTHONPATH=. python3 bench/debug/weight_batch_registers.py [--kinds ln,rms,addln,fp8rms,...] [--widths 4096,...]

Each kernel is planned by ckgen for sm_90 from its row alone (max_cols), then built twice: as planned, and as
bench/rowops_shapes.py's before() restores it (the plan without the rule: the same generated source as before it).
Kernels the rule leaves alone (looped, split, row-cached, register-bounded lines, one vector per thread, quantized y)
are listed as such.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rowops_shapes  # noqa: E402  (bench/)

#: kind -> the DSL of its kernel (x bf16), {w}: max_cols
KINDS = {
    "ln": "op = layernorm x = bf16 max_cols = {w}",
    "rms": "op = rmsnorm x = bf16 eps = 1e-6 max_cols = {w}",
    "addln": "op = layernorm x = bf16 residual = true max_cols = {w}",
    "addrms": "op = rmsnorm x = bf16 residual = true eps = 1e-6 max_cols = {w}",
    "fp8rms": "op = rmsnorm x = bf16 y = e4m3fn eps = 1e-6 max_cols = {w}",
    "fp8addrms": "op = rmsnorm x = bf16 residual = true y = e4m3fn eps = 1e-6 max_cols = {w}",
    "grprms": "op = rmsnorm x = bf16 y = e4m3fn quant = group(128) eps = 1e-6 max_cols = {w}",
    "grpaddrms": "op = rmsnorm x = bf16 residual = true y = e4m3fn quant = group(128) eps = 1e-6 max_cols = {w}",
    "grpln": "op = layernorm x = bf16 y = e4m3fn quant = group(128) max_cols = {w}",
    "i8ln": "op = layernorm x = bf16 y = i8 max_cols = {w}",
    "f16ln32": "op = layernorm x = f16 weight = f32 max_cols = {w}",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="ln,rms,addln,addrms,f16ln32")
    ap.add_argument("--widths", default="", help="comma-separated row widths (default: the hidden-size list's)")
    args = ap.parse_args()
    from ckgen.backends.nvidia.compiler import analyze, build_cuda_library
    from ckgen.runtime.api import plan_for

    ws = [int(w) for w in args.widths.split(",") if w] or _list_widths()
    kinds = args.kinds.split(",")
    lines = ["target sm_90"]
    for k in kinds:
        for w in ws:
            lines.append(f"kernel {k}_{w} {{ {KINDS[k].format(w=w)} }}")
    src = Path(tempfile.mkdtemp()) / "weight_batch.ck"
    src.write_text("\n".join(lines) + "\n")
    plans, shown = [], []
    for k in kinds:
        for w in ws:
            p = plan_for(str(src), f"{k}_{w}", "nvidia", "sm_90")
            b, old = p.body, rowops_shapes.before([p])
            tile = f"{b.threads_per_row}x{b.reg_vecs}x{b.rows_per_workgroup}"
            if not old:
                print(f"{k:10s} {w:6d} {tile:10s} left alone (looped, split, a bounded line, one vector, quantized)")
                continue
            plans += [*old, p]
            shown.append((k, w, tile, b.workgroups_per_cu))
    lib = build_cuda_library("weight_batch_registers", plans)
    rep = {r.name: r for r in analyze(lib, plans)}
    print(f"{'kind':10s} {'width':>6s} {'tile':10s} {'bound':>5s} | before: regs spill WG/SM |"
          " planned: regs spill WG/SM")
    for k, w, tile, bound in shown:
        a, o = rep[f"{k}_{w}_before"], rep[f"{k}_{w}"]
        print(f"{k:10s} {w:6d} {tile:10s} {bound:5d} | {a.registers:12d} {a.spill_stores:5d} {a.blocks_per_sm:5d} |"
              f" {o.registers:13d} {o.spill_stores:5d} {o.blocks_per_sm:5d}")
    return 0


def _list_widths() -> list[int]:
    text = (Path(__file__).resolve().parents[1] / "shapes" / "hidden_sizes.txt").read_text()
    found = {int(f[1]) for f in (ln.split("#", 1)[0].split() for ln in text.splitlines())
             if len(f) >= 2 and f[0] in ("hidden", "intermediate") and f[1].isdigit()}
    return sorted(w for w in found if w <= 32768)


if __name__ == "__main__":
    sys.exit(main())
