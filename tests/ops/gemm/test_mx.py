"""MX (OCP microscaling) fp8 GEMM: ``scale_a = mx(32)`` with ``scale_b = mx(32)`` on gfx950 (issue 26).

C = sum over 32-K blocks kb of 2^(sa[m, kb] - 127) * 2^(sb[n, kb] - 127) * (A[m, kb] . B[kb, n]), the E8M0 scales
applied by the block-scaled MFMA (v_mfma_scale_f32_32x32x64_f8f6f4; its layout: tests/data/mfma_scale_layouts.json).

Rung 2: the emulator runs the generated kernels against the float64 reference (fp8 codes decoded exactly, random
E8M0 scales 120..134) at awkward sizes: M = 1, K = 100 (not a multiple of 32 or of the tile's K: the last block is
partial, zero filled), ragged N, K = 0; outputs poisoned before each call. Bad scale arrays are refused naming them.
Rung 1: the kernels compile for gfx950 with clang-22, the scaled MFMA in the main loop, no spills or scratch.
Refusals: every illegal combination names its parameter and the legal values.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ckgen import config, driver
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.lower import plan_kernel
from ckgen.runtime.api import Kernel
from ckgen.targets import get_target
from ckgen.targets.amd import MX_INSTRUCTIONS
from tests.ops.gemm.helpers import check_against_float64, emu_kernels, needs_clang

MX = "scale_a = mx(32)\nscale_b = mx(32)"
CONFIGS = {
    "mx_e4m3": "A = e4m3fn row\nB = e4m3fn col\nC = bf16 row\ntile = 64x64x64\nwaves = 2x2\n" + MX,
    # e5m2 x e4m3fn, col-major A, row-major B, two fragments per wave in N, K tile of two instructions, one LDS
    # buffer, alpha / beta / bias
    "mx_mixed": "A = e5m2 col\nB = e4m3fn row\nC = f32 row\ntile = 32x128x128\nwaves = 1x2\nlds_buffers = 1\n"
                "alpha = 0.5\nbeta = 0.25\nepilogue = bias(col)\n" + MX,
}
SHAPES = [(1, 70, 100), (1, 1, 1), (67, 33, 200), (17, 9, 0), (40, 97, 77)]


def _source(name: str) -> str:
    return f"target gfx950\nkernel {name} {{\n" + "\n".join("  " + x for x in CONFIGS[name].splitlines()) + "\n}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: ("gfx950", _source(n)) for n in CONFIGS})


def _inputs(gemm: Kernel, sizes: dict, seed: int) -> dict:
    return get_op("gemm").random_inputs(gemm.plan, sizes, np.random.default_rng(seed))


@needs_clang
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_emu_against_float64(kernels, name, shape):
    m, n, k = shape
    sizes = {"M": m, "N": n, "K": k, "kb": -(-k // 32)}
    ops = _inputs(kernels[name], sizes, seed=sum(shape) + 7 * m)
    assert ops["scale_a"].dtype == np.uint8 and ops["scale_a"].shape == (m, -(-k // 32))
    assert ops["scale_b"].shape == (n, -(-k // 32))
    check_against_float64(kernels[name], ops, sizes)


@needs_clang
def test_scales_matter_per_block(kernels):
    """One K block's scale of one row changed: that row changes by the factor on that block's part only."""
    gemm = kernels["mx_e4m3"]
    sizes = {"M": 3, "N": 40, "K": 100, "kb": 4}
    ops = _inputs(gemm, sizes, seed=5)
    ops["scale_a"][1, 3] += 2    # the partial last block (K 96..99), row 1
    check_against_float64(gemm, ops, sizes)


@needs_clang
def test_nan_scale_poisons_its_row_only(kernels):
    """E8M0 0xFF is NaN: row 2's C is NaN, every other row still matches the reference."""
    gemm = kernels["mx_e4m3"]
    sizes = {"M": 5, "N": 33, "K": 100, "kb": 4}
    ops = _inputs(gemm, sizes, seed=9)
    ops["scale_a"][2, 1] = 0xFF
    before = {k: (v.copy() if v is not None else None) for k, v in ops.items()}
    out = to_float64(gemm(**ops), DType.BF16)
    ref = get_op("gemm").reference(gemm.plan, before, sizes)["C"]
    assert np.isnan(out[2]).all() and np.isnan(ref[2]).all()
    keep = [0, 1, 3, 4]
    assert relative_error(out[keep], ref[keep]) <= get_op("gemm").tolerance(gemm.plan, "C")


@needs_clang
def test_bad_scale_arrays_are_refused(kernels):
    gemm = kernels["mx_e4m3"]
    sizes = {"M": 8, "N": 8, "K": 64, "kb": 2}
    for name, bad in (("scale_a", np.full((8, 2), 127.0, np.float32)),     # f32, not E8M0 bytes
                      ("scale_a", np.full((8, 3), 127, np.uint8)),         # 3 K blocks for K = 64
                      ("scale_b", np.full((7, 2), 127, np.uint8)),         # 7 rows for N = 8
                      ("scale_b", np.full(16, 127, np.uint8))):            # not N x kb
        ops = _inputs(gemm, sizes, seed=1)
        ops[name] = bad
        with pytest.raises(CkgenError, match=name):
            gemm(**ops)


def _plan(arch: str, body: str):
    waves = "" if "waves" in body else " waves = 2x2"
    (spec,) = load_text(f"kernel k {{ {body}{waves} }}", "v.ck", (arch,))
    return plan_kernel(spec, get_target(arch))


E4, FNUZ = "A = e4m3fn row B = e4m3fn col C = bf16 row", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row"
MXS = "scale_a = mx(32) scale_b = mx(32)"
F4 = "A = e2m1fn_x2 row B = e2m1fn_x2 col C = bf16 row"


@pytest.mark.parametrize(("arch", "body", "param", "words"), [
    ("gfx942", f"{FNUZ} tile = 64x64x64 {MXS}", "scale_a", "mx scales need gfx950's scaled MFMA"),
    ("gfx90a", f"A = f16 row B = f16 col C = f16 row tile = 64x64x64 {MXS}", "scale_a", "need gfx950"),
    ("gfx908", f"A = f16 row B = f16 col C = f16 row tile = 64x64x64 {MXS}", "scale_a", "need gfx950"),
    ("gfx942", f"{FNUZ} tile = 64x64x32 {MXS}", "scale_a", "mx(32) on gfx950, sm_90"),
    ("sm_90", f"{E4} tile = 64x64x64 {MXS}", "tile", "a K tile of 32 on sm_90"),
    ("sm_90", f"A = e4m3fn row B = e5m2 col C = bf16 row tile = 64x64x32 {MXS}", "B", "e4m3fn"),
    ("sm_90", f"{E4} tile = 64x64x32 schedule = splitk {MXS}", "schedule", "tile"),
    ("gfx950", f"A = f16 row B = f16 col C = f16 row tile = 64x64x64 {MXS}", "A", "e4m3fn, e5m2"),
    ("gfx950", f"{FNUZ} tile = 64x64x64 {MXS}", "A", "e4m3fn"),
    ("gfx950", f"{E4} tile = 64x64x64 scale_a = mx(32) scale_b = block(128)", "scale_b", "mx(32)"),
    ("gfx950", f"{E4} tile = 64x64x64 scale_a = mx(32)", "scale_b", "mx(32)"),
    ("gfx950", f"{E4} tile = 64x64x64 scale_a = row scale_b = mx(32)", "scale_a", "mx(32)"),
    ("gfx950", f"{E4} tile = 64x64x32 {MXS}", "tile", "K a multiple of 64"),
    ("gfx950", f"{E4} tile = 32x32x64 waves = 2x2 {MXS}", "tile", "multiples of 32"),
    ("gfx950", f"{E4} tile = 64x64x64 instr = 16x16x32 {MXS}", "instr", "32x32x64"),
    ("gfx950", f"{E4} tile = 256x128x128 {MXS}", "tile", "at most 64x64"),
    ("gfx950", f"{E4} tile = 64x64x64 schedule = splitk {MXS}", "schedule", "tile"),
    ("gfx950", f"{E4} tile = 64x64x64 batched = true {MXS}", "batched", "false"),
    # fp4 pairs (tests/ops/gemm/test_mxfp4.py)
    ("gfx942", f"{F4} tile = 64x64x64 {MXS}", "A", "need the block-scaled MFMA"),
    ("sm_90", f"{F4} tile = 64x64x64 {MXS}", "A", "sm_90 has none"),
    ("gfx950", f"A = e2m1fn_x2 row B = e4m3fn col C = bf16 row tile = 64x64x64 {MXS}", "B", "e2m1fn_x2"),
    ("gfx950", f"A = e4m3fn row B = e2m1fn_x2 col C = bf16 row tile = 64x64x64 {MXS}", "A", "mixed fp4 / fp8"),
    ("gfx950", f"A = e2m1fn_x2 col B = e2m1fn_x2 col C = bf16 row tile = 64x64x64 {MXS}", "A", "e2m1fn_x2 row"),
    ("gfx950", f"A = e2m1fn_x2 row B = e2m1fn_x2 row C = bf16 row tile = 64x64x64 {MXS}", "B", "e2m1fn_x2 col"),
    ("gfx950", f"{F4} tile = 64x64x64", "scale_a", "mx(32)"),
    ("gfx950", f"{F4} tile = 64x64x64 scale_a = mx(32) scale_b = col", "scale_b", "mx(32)"),
    ("gfx950", f"A = e2m1fn_x2 row B = e2m1fn_x2 col C = i8 row tile = 64x64x64 {MXS}", "C", "f16, bf16, f32"),
    ("gfx950", f"{F4} acc = i32 tile = 64x64x64 {MXS}", "acc", "f32"),
    ("gfx950", f"{F4} tile = 64x64x32 {MXS}", "tile", "K a multiple of 64"),
    ("gfx950", f"{F4} tile = 64x64x64 schedule = splitk {MXS}", "schedule", "tile"),
])
def test_mx_refusals(arch, body, param, words):
    with pytest.raises(CkgenError) as ei:
        _plan(arch, body)
    assert ei.value.param == param, ei.value.render()
    assert words in ei.value.render(), ei.value.render()


def test_mx_spelling():
    with pytest.raises(CkgenError) as ei:
        load_text(f"kernel k {{ {E4} tile = 64x64x64 waves = 2x2 scale_a = mx(16) scale_b = mx(32) }}", "v.ck", ("gfx950",))
    assert "mx(32)" in ei.value.render() and "block(128)" in ei.value.render()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CKGEN_CACHE_DIR", str(tmp_path_factory.mktemp("mxcache")))
    config.reload()
    yield
    mp.undo()
    config.reload()


def test_rung1_scaled_mfma_no_spills(cache, tmp_path):
    if shutil.which("clang++-22") is None:
        pytest.fail("clang++-22 is missing (tools/install.sh installs it)")
    (ins,) = MX_INSTRUCTIONS["gfx950"]
    src = tmp_path / "mx.ck"
    # (mx_wide: the largest wave tile mx allows, 64x64, with a 256-deep K tile: the most registers of an mx kernel)
    src.write_text("target gfx950\n" + "".join(_source(n).split("\n", 1)[1] for n in CONFIGS)
                   + "kernel mx_wide { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x256 waves = 2x2 "
                   + MX.replace("\n", " ") + " }\n")
    (lib,) = driver.compile_files([src], ("gfx950",), tmp_path / "out", jobs=2)
    for name in [*CONFIGS, "mx_wide"]:
        res = lib.resources[(name, "gfx950")]
        assert res["mfma"].get(ins.mnemonic, 0) > 0 and res["mfma_in_main_loop"] > 0, (name, res["mfma"])
        assert set(res["mfma"]) == {ins.mnemonic}, (name, res["mfma"])
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, (name, res)


NV_SPEC = """
target sm_90
kernel s90_mx { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x64x32 waves = 2x2 scale_a = mx(32) scale_b = mx(32) }
kernel s90_mx_e5 { A = e5m2 col B = e5m2 row C = f32 row tile = 64x64x32 waves = 2x2 scale_a = mx(32)
                   scale_b = mx(32) epilogue = bias(col) -> relu }
"""


def test_nvcc_builds_the_portable_mx_fold_for_sm90(cache):
    """sm_90 (no block-scaled MFMA): the mma.sync body folds the E8M0 scales per 32-K block; nvcc builds it issuing
    mma.sync e4m3 / e5m2, without spills or stack (rung 1 for NVIDIA; the GPU run is tests/runtime/test_nvidia_mx.py)."""
    from ckgen.backends.nvidia import compiler as nv

    try:
        nv.find_nvcc()
    except CkgenError as exc:
        pytest.skip(str(exc))
    plans = [plan_kernel(s, get_target("sm_90")) for s in load_text(NV_SPEC)]
    assert all(p.body.tma is None for p in plans)   # (the Hopper body takes no mx kernel)
    reports = {r.name: r for r in nv.analyze(nv.build_cuda_library("nvmx", plans), plans)}
    mma = "mma.sync.aligned.m16n8k32.row.col.f32.{0}.{0}.f32"
    for name, instr in (("s90_mx", mma.format("e4m3")), ("s90_mx_e5", mma.format("e5m2"))):
        r = reports[name]
        assert dict(r.ptx_tensor).get(instr, 0) > 0, (name, r.ptx_tensor)
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
