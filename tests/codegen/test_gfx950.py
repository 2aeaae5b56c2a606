"""gfx950 (CDNA4): its double-rate 16-bit MFMAs (32x32x16, 16x16x32 for f16 and bf16) are what ckgen picks
when a gfx950 kernel names no instruction; the code object holds them (rung 1) and the emulator computes
the right numbers with them (rung 2)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.backends.amd import compiler as amd_compiler
from ckgen.errors import ToolchainError
from ckgen.frontend import load_text
from ckgen.lower.pipeline import plan_kernel
from ckgen.runtime import api, run
from ckgen.targets import get_target

# name -> (body, the mnemonic the planner must choose without an instr line)
KERNELS = {
    "g950_f16_32": ("A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2", "v_mfma_f32_32x32x16_f16"),
    "g950_bf16_32": ("A = bf16 col B = bf16 row C = bf16 row tile = 64x128x32 waves = 1x2 epilogue = silu",
                     "v_mfma_f32_32x32x16_bf16"),
    "g950_f16_16": ("A = f16 row B = f16 row C = f32 row tile = 64x64x64 waves = 4x2", "v_mfma_f32_16x16x32_f16"),
    "g950_bf16_16": ("A = bf16 row B = bf16 col C = bf16 col tile = 32x64x32 waves = 2x2 beta = 0.5",
                     "v_mfma_f32_16x16x32_bf16"),
}


def _plan(name: str):
    body = KERNELS[name][0]
    return plan_kernel(load_text(f"target gfx950\nkernel {name} {{ {body} }}\n", "g950.ck")[0], "gfx950")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_cdna4_shapes_are_the_default(name):
    plan = _plan(name)
    assert plan.body.instr.mnemonic == KERNELS[name][1]
    assert plan.body.instr.k == (16 if plan.body.instr.m == 32 else 32)


def test_a_k16_tile_falls_back_to_the_cdna3_shape():
    """16x16x32 needs tile K % 32: a 16-deep tile with 16-wide wave tiles takes 16x16x16."""
    plan = plan_kernel(load_text("target gfx950\nkernel k { A = f16 row B = f16 col C = f16 row tile = 32x32x16 "
                                 "waves = 2x2 }\n", "x.ck")[0], "gfx950")
    assert plan.body.instr.shape == (16, 16, 16)


@pytest.fixture(scope="module")
def reports():
    try:
        from ckgen.backends.amd.llvm import find_toolchain

        find_toolchain(get_target("gfx950"))
    except ToolchainError as exc:
        pytest.skip(f"no gfx950 toolchain: {exc.message}")
    plans = [_plan(n) for n in sorted(KERNELS)]
    with tempfile.TemporaryDirectory() as tmp:
        return amd_compiler.compile_plans("g950", plans, Path(tmp), 2).reports


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_code_object_holds_them(reports, name):
    r = reports[(name, "gfx950")]
    want = KERNELS[name][1]
    assert r.mfma and {m for m, _ in r.mfma} == {want}, r.mfma
    assert r.mfma_in_main_loop > 0
    assert r.vgpr_spills == r.sgpr_spills == r.scratch_bytes == 0


@pytest.fixture(scope="module")
def emulated():
    if not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES):
        pytest.skip("no host clang++")
    return api.emu_kernels([_plan(n) for n in sorted(KERNELS)], "g950")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_emulator_computes_them(emulated, name):
    kernel = emulated[name]
    plan = kernel.plan
    tile = plan.spec.params.config.tile
    for m, n, k in ((1, 1, 1), (67, 45, 91), (2 * tile[0], tile[1], 96)):
        sizes = run.resolve_sizes(plan, {"m": m, "n": n, "k": k})
        results, _ = run.check_call(kernel, sizes, np.random.default_rng(m + n + k))
        assert all(err <= tol for _, err, tol in results), (name, m, n, k, results)
