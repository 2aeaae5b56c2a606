#!/usr/bin/env python3
"""Calibrate the pre-compile register estimate (ckgen/ops/gemm/registers.py) against the compiler.

Compiles a sweep through ckgen's own build (cached): every kernel of examples/*.ck on every AMD arch whose
clang is installed, and the composable_kernel XDL tuples of tests/data/ck_gemm_instances.json (all of them
for gfx942, the sample of tests/ck_sample.py for the other arches). For each kernel it records the DSL,
the arch and what the code object says (arch VGPRs, AGPRs, SGPRs, spills, scratch), writes
tests/data/register_calibration.json, then fits ``COEFFS`` of ckgen/ops/gemm/registers.py to the non-spilling
rows by minimizing the largest relative error of arch VGPRs + AGPRs (a linear program; needs scipy) and
prints them with the resulting error. Paste the printed dict into registers.py (``--write`` does it).

    python tools/calibrate_registers.py [--fit-only | --only TEXT] [--write] [-j 2]

``--only TEXT`` compiles only the sweep's kernels whose name contains TEXT and replaces their rows in the
committed file, keeping the others (for a change that leaves every other kernel's device code as it was).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ckgen import driver  # noqa: E402
from ckgen.backends.amd import compiler as amd_compiler  # noqa: E402
from ckgen.errors import CkgenError, ToolchainError  # noqa: E402
from ckgen.frontend import load_text  # noqa: E402
from ckgen.lower.pipeline import plan_kernel  # noqa: E402
from ckgen.ops.gemm import registers as R  # noqa: E402
from ckgen.targets import amd_targets  # noqa: E402
from tests.ck_sample import ck_instances, dsl, sample  # noqa: E402

DATA = ROOT / "tests" / "data" / "register_calibration.json"
REGISTERS_PY = ROOT / "ckgen" / "ops" / "gemm" / "registers.py"


def kernel_body(text: str) -> str:
    """The parameter lines of a one-kernel DSL text (no name, no arch)."""
    inner = text[text.index("{") + 1:text.rindex("}")]
    return " ".join(line.strip() for line in inner.splitlines() if line.strip() and not line.strip().startswith("arch"))


def plan_of(body: str, arch: str, name: str = "k"):
    return plan_kernel(load_text(f"target {arch}\nkernel {name} {{ {body} }}\n", "calib.ck")[0], arch)


def sweep(arches: list[str]) -> list[tuple[str, str, str]]:
    """(name, arch, kernel body) to compile."""
    out = []
    for ex in sorted((ROOT / "examples").glob("*.ck")):
        for spec in (s for s in driver.load([ex])[ex.stem] if s.op == "gemm"):
            for arch in arches:
                out.append((spec.name, arch, _spec_body(spec)))
    for arch in arches:
        chosen = ck_instances() if arch == "gfx942" else sample(ck_instances())
        for t in chosen:
            text = dsl(t, arch)
            if text is not None:
                out.append((text.split()[1], arch, kernel_body(text)))
    return out


def _spec_body(spec) -> str:
    g, c = spec.params.gemm, spec.params.config
    parts = [f"A = {g.a.dtype.value} {g.a.layout.value}", f"B = {g.b.dtype.value} {g.b.layout.value}",
             f"C = {g.c.dtype.value} {g.c.layout.value}", f"acc = {g.acc.value}", f"alpha = {g.alpha}",
             f"beta = {g.beta}", f"tile = {'x'.join(map(str, c.tile))}", f"waves = {c.waves[0]}x{c.waves[1]}",
             f"lds_buffers = {c.lds_buffers}", f"prefetch = {c.prefetch}"]
    if c.instr:
        parts.append(f"instr = {'x'.join(map(str, c.instr))}")
    for v in ("vec_a", "vec_b", "vec_c"):
        if getattr(c, v) is not None:
            parts.append(f"{v} = {getattr(c, v)}")
    if g.epilogue:
        parts.append("epilogue = " + " -> ".join(op.text for op in g.epilogue))
    return " ".join(parts)


def compile_rows(items, jobs: int) -> tuple[list[dict], dict[str, str]]:
    """Rows (DSL, arch, compiler figures or the refusal) and the clang version per arch."""
    rows: list[dict] = []
    toolchains: dict[str, str] = {}
    by_arch: dict[str, list] = {}
    for name, arch, body in items:
        try:
            plan = plan_of(body, arch, name)
        except CkgenError as exc:
            rows.append({"name": name, "arch": arch, "body": body, "rejected": exc.message})
            continue
        by_arch.setdefault(arch, []).append((name, body, plan))
    for arch, entries in by_arch.items():
        seen: dict[str, tuple] = {}
        for name, body, plan in entries:
            seen.setdefault(name, (name, body, plan))
        entries = list(seen.values())
        with tempfile.TemporaryDirectory() as tmp:
            result = amd_compiler.compile_plans(f"calib_{arch}", [p for _, _, p in entries], Path(tmp), jobs)
        for name, body, plan in entries:
            r = result.reports[(plan.name, arch)]
            rows.append({"name": name, "arch": arch, "body": body,
                         "compiler": {"vgprs": r.vgprs, "agprs": r.agprs, "vgpr_file": r.vgpr_file, "sgprs": r.sgprs,
                                      "vgpr_spills": r.vgpr_spills, "sgpr_spills": r.sgpr_spills,
                                      "scratch_bytes": r.scratch_bytes, "waves_per_simd": r.waves_per_simd}})
        toolchains[arch] = result.toolchains[arch].version
    return rows, toolchains


def usable(row: dict) -> bool:
    c = row.get("compiler")
    return bool(c) and c["vgpr_spills"] == c["sgpr_spills"] == c["scratch_bytes"] == 0


def fit(rows: list[dict]) -> tuple[dict[str, float], float]:
    import numpy as np
    from scipy.optimize import linprog

    data = [(R.register_features(*_plan_inputs(r)), r["compiler"]["vgprs"] + r["compiler"]["agprs"])
            for r in rows if usable(r)]
    X = np.array([[f[k] for k in R.FEATURES] for f, _ in data], dtype=float)
    y = np.array([t for _, t in data], dtype=float)
    n = len(R.FEATURES)
    # minimize t subject to |X c - y| <= t y, c >= 0
    c_obj = np.zeros(n + 1)
    c_obj[-1] = 1.0
    a_ub = np.vstack([np.hstack([X, -y[:, None]]), np.hstack([-X, -y[:, None]])])
    b_ub = np.concatenate([y, -y])
    res = linprog(c_obj, A_ub=a_ub, b_ub=b_ub, bounds=[(0, None)] * (n + 1), method="highs")
    if not res.success:
        raise SystemExit(f"fit failed: {res.message}")
    coeffs = {k: round(float(v), 3) for k, v in zip(R.FEATURES, res.x[:n], strict=True)}
    worst = max(abs(R.estimate(f, coeffs) - t) / t for f, t in data)
    return coeffs, worst


def _plan_inputs(row: dict):
    """(spec, target, instruction, vectors, LDS plan) by the pipeline's passes up to the register check (the
    check itself uses the coefficients being fitted)."""
    from ckgen.ops.gemm.plan import PASSES, GemmDraft, estimate_registers
    from ckgen.targets import get_target

    spec = load_text(f"target {row['arch']}\nkernel k {{ {row['body']} }}\n", "calib.ck")[0]
    d = GemmDraft(spec, get_target(row["arch"]))
    for step in PASSES[:PASSES.index(estimate_registers)]:
        step(d)
    return d.spec.params, d.target, d.instr, d.vec, d.lds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit-only", action="store_true", help="refit the committed data, compile nothing")
    ap.add_argument("--write", action="store_true", help="write the fitted COEFFS into ckgen/ops/gemm/registers.py")
    ap.add_argument("--only", metavar="TEXT", help="recompile only the kernels whose name contains TEXT")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if args.fit_only:
        rows = json.loads(DATA.read_text())["rows"]
    else:
        from ckgen.backends.amd.llvm import find_toolchain

        arches = []
        for t in amd_targets():
            try:
                find_toolchain(t)
                arches.append(t.name)
            except ToolchainError:
                print(f"skipping {t.name}: no toolchain", file=sys.stderr)
        items = sweep(arches)
        if args.only:
            items = [it for it in items if args.only in it[0]]
        rows, toolchains = compile_rows(items, args.jobs)
        if args.only:
            old = json.loads(DATA.read_text())
            fresh = {(r["name"], r["arch"]): r for r in rows}
            rows = [fresh.pop((r["name"], r["arch"]), r) for r in old["rows"]] + list(fresh.values())
            toolchains = {**old["toolchains"], **toolchains}
        head = json.dumps({"note": "compiler figures of the calibration sweep (tools/calibrate_registers.py)",
                           "toolchains": toolchains}, sort_keys=True)[:-1]
        body = ",\n ".join(json.dumps(r, sort_keys=True) for r in rows)
        DATA.write_text(head + ', "rows": [\n ' + body + "\n]}\n")   # one kernel per line
    coeffs, worst = fit(rows)
    print(f"COEFFS = {coeffs!r}")
    print(f"largest relative error over {sum(usable(r) for r in rows)} non-spilling kernels: {worst:.1%}")
    if args.write:
        text = REGISTERS_PY.read_text()
        body = json.dumps(coeffs)
        text = re.sub(r"COEFFS: dict\[str, float\] = \{[^}]*\}", f"COEFFS: dict[str, float] = {body}", text, flags=re.S)
        REGISTERS_PY.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
