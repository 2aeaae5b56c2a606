"""The calibrated register estimate (ckgen/ops/gemm/registers.py): within 20% of the compiler's arch VGPRs + AGPRs
on every non-spilling kernel of the committed calibration sweep (tests/data/register_calibration.json, from
tools/calibrate_registers.py) and on kernels compiled now; ``check`` refuses, with the numbers, what spills."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.errors import ToolchainError, ValidationError
from ckgen.frontend import load_text
from ckgen.lower.pipeline import plan_kernel
from ckgen.ops.gemm import registers as R
from ckgen.targets import get_target

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "register_calibration.json"
BOUND = 0.20


def _rows() -> list[dict]:
    return json.loads(DATA.read_text())["rows"]


def _plan(body: str, arch: str, name: str = "k"):
    return plan_kernel(load_text(f"target {arch}\nkernel {name} {{ {body} }}\n", "calib.ck")[0], arch)


def _spills(c: dict) -> bool:
    return bool(c["vgpr_spills"] or c["sgpr_spills"] or c["scratch_bytes"])


def test_the_sweep_covers_examples_ck_and_every_arch():
    rows = _rows()
    compiled = [r for r in rows if "compiler" in r]
    assert len(compiled) >= 300
    assert {r["arch"] for r in compiled} == {"gfx908", "gfx90a", "gfx942", "gfx950"}
    assert sum(r["name"].startswith("ck_") for r in compiled) >= 250
    assert {"gemm_f16_nt", "gemm_i8", "sgemm_nn", "gemm_f16_256x128"} <= {r["name"] for r in compiled}


def test_estimate_is_within_20_percent_of_the_committed_compiler_figures():
    worst, errors = 0.0, []
    for r in _rows():
        c = r.get("compiler")
        if not c or _spills(c):
            continue
        plan = _plan(r["body"], r["arch"], r["name"])     # features from the current planner, not the file
        got = plan.body.registers.total
        want = c["vgprs"] + c["agprs"]
        err = abs(got - want) / want
        worst = max(worst, err)
        if err > BOUND:
            errors.append((r["name"], r["arch"], got, want))
    assert not errors, errors
    assert worst > 0.02  # a real comparison: the model does not reproduce every kernel exactly


def test_nothing_accepted_in_the_sweep_spilled():
    """Over the whole sweep (examples on every arch, all CK tuples on gfx942, a sample elsewhere): what check
    accepts compiles without spills, and every refusal names its parameter."""
    for r in _rows():
        if "compiler" in r:
            assert not _spills(r["compiler"]), (r["name"], r["arch"], r["compiler"])
        else:
            assert "tile" in r["rejected"], r


FRESH = [("gfx942", "A = f16 col B = f16 row C = f16 row tile = 128x64x32 waves = 2x2 epilogue = bias(row) -> gelu"),
         ("gfx90a", "A = i8 row B = i8 row C = i32 row tile = 64x128x64 waves = 2x2"),
         ("gfx950", "A = bf16 row B = bf16 col C = f32 col tile = 128x128x64 waves = 2x2 beta = 1.0"),
         ("gfx908", "A = f32 col B = f32 col C = f32 row tile = 64x64x16 waves = 2x2 instr = 32x32x2")]


def test_estimate_is_within_20_percent_on_fresh_compiles():
    from ckgen.backends.amd.llvm import find_toolchain

    plans = []
    for arch, body in FRESH:
        try:
            find_toolchain(get_target(arch))
        except ToolchainError:
            continue
        plans.append(_plan(body, arch, f"fresh_{arch}"))
    if not plans:
        pytest.skip("no AMD toolchain")
    for arch in sorted({p.arch for p in plans}):
        mine = [p for p in plans if p.arch == arch]
        with tempfile.TemporaryDirectory() as tmp:
            reports = amd_compiler.compile_plans(f"fresh_{arch}", mine, Path(tmp), 2).reports
        for p in mine:
            r = reports[(p.name, arch)]
            want = r.vgprs + r.agprs
            assert abs(p.body.registers.total - want) <= BOUND * want, (p.name, p.body.registers.total, want)
            assert r.vgpr_spills == r.sgpr_spills == r.scratch_bytes == 0


def test_check_refuses_what_would_spill_with_the_numbers():
    # 512 accumulators per lane (2x1 waves of 4x8 32x32 tiles): clang-22 spills 1345 VGPRs (1648 bytes of scratch)
    with pytest.raises(ValidationError) as e:
        _plan("A = f16 row B = f16 col C = f16 row tile = 256x256x32 waves = 2x1 instr = 32x32x8", "gfx942")
    err = e.value
    assert err.param == "tile" and err.value == "256x256x32"
    assert "512 accumulators" in err.message and "budget of 512" in err.message and "256 accumulators" in err.message
    assert "waves = 2x2" in err.legal and "tile = 256x128x32" in err.legal
    # the suggestions are themselves accepted
    for body in ("tile = 256x128x32 waves = 2x1", "tile = 256x256x32 waves = 2x2", "tile = 256x256x32 waves = 4x1"):
        plan = _plan(f"A = f16 row B = f16 col C = f16 row {body} instr = 32x32x8", "gfx942")
        assert plan.body.registers.accumulators <= R.budget(plan.target).accumulators


def test_budgets_follow_the_register_files():
    assert R.budget(get_target("gfx942")) == R.RegisterBudget(total=512, accumulators=256, arch=256, unified=True)
    assert R.budget(get_target("gfx908")) == R.RegisterBudget(total=512, accumulators=256, arch=256, unified=False)


LARGE_ACC = [(f"ck_{dt}_r{b[0]}_256", f"A = {dt} row B = {dt} {b} C = {dt} row acc = f32 tile = 256x256x32 waves = 2x2 "
           "instr = 32x32x8") for dt in ("f16", "bf16") for b in ("col", "row")] + [
    # 240 accumulators, a non-power-of-two tile: clang-22 spilled 289 VGPRs before the accumulators were pinned
    ("f16_cr_320x192", "A = f16 col B = f16 row C = f16 row tile = 320x192x32 waves = 2x2 instr = 32x32x8 "
                       "epilogue = bias(row) -> gelu")]


@pytest.mark.parametrize("clang", ["clang++-22", "clang++-19"])
def test_large_accumulator_tiles_compile_without_spills(tmp_path, monkeypatch, clang):
    """Rung 1 for CK's CShuffleV2 256x256x32 f16/bf16 tuples (A row, B col or row) on gfx942: 256 accumulators per
    lane, which check accepts, pinned in the AGPR file (pin_agpr) and read out by the epilogue: the code object
    holds the planned v_mfma_f32_32x32x8 in its main loop, 256 AGPRs, a few arch VGPRs and no spill; the same for a
    320x192x32 tile (240 accumulators)."""
    import shutil

    from ckgen import config

    path = shutil.which(clang)
    if path is None:
        pytest.skip(f"{clang} is not installed (tools/install.sh installs it)")
    monkeypatch.setenv("CKGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CKGEN_CLANG", path)
    config.reload()
    try:
        plans = [_plan(body, "gfx942", name) for name, body in LARGE_ACC]
        result = amd_compiler.compile_plans("ck256", plans, tmp_path / "out", 2)
    finally:
        monkeypatch.undo()
        config.reload()
    assert result.toolchains["gfx942"].major == int(clang.rsplit("-", 1)[1])
    for p in plans:
        assert p.body.registers.accumulators == (240 if "320x192" in p.name else 256)
        r = result.reports[(p.name, "gfx942")]
        want = "v_mfma_f32_32x32x8_bf16" if "bf16" in p.name else "v_mfma_f32_32x32x8_f16"
        per_tile = p.body.repeats[0] * p.body.repeats[1] * 32 // 8     # 64 (4x4 per wave), 60 (5x3)
        assert dict(r.mfma).get(want, 0) > 0 and r.mfma_in_main_loop > 0 and r.mfma_in_main_loop % per_tile == 0, r
        assert r.agprs == p.body.registers.accumulators and r.vgprs < 200 and r.lds_bytes == 65536, r
        assert r.vgpr_spills == r.sgpr_spills == r.scratch_bytes == 0, r
        est, got = p.body.registers.total, r.vgprs + r.agprs
        assert abs(est - got) <= BOUND * got, (p.name, est, got)
