"""fp8 GEMM with per-tensor and per-row / per-column scaling (issue 26).

Rung 2: the emulator runs the generated kernels for gfx942 (FNUZ) and gfx950 (OCP) against the float64 reference,
which decodes the fp8 codes exactly (the fp8 rounding of the inputs is the inputs themselves: random fp8 codes) and
applies alpha * scale_a * scale_b before beta, bias and the activation; shapes include M = 1, K not a multiple of the
tile's K, K = 0 and edge tiles; outputs poisoned before each call. Scales are read at every launch (a graph replays
with new ones): changing the scale arrays in place changes the next call's result accordingly.
Rung 1: the same kernels compile for gfx942 (clang-19) and gfx950 (clang-22) with the planned fp8 MFMA in the main
loop and no spills or scratch; nvcc builds the OCP ones for sm_90 (mma.sync e4m3 / e5m2 in the PTX, no spills),
block-scaled ones included (the mma.sync body folds them per K block), and the Hopper body's fp8 entries (wgmma
m64nNk32 e4m3 / e5m2 in the PTX, no spills; which kernels get that body: test_tma_body.py).
16-bit kernels take the tensor / row / col scalings too (SCALED16): rung 2 on the emulator against float64, and on
sm_90 the Hopper body's scaled bf16 entries (wgmma m64nNk16, not serialized, no spills, C stored by TMA).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from ckgen import config, driver
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import poison
from ckgen.lower import plan_kernel
from ckgen.runtime.api import Kernel
from ckgen.targets import get_target
from tests.ops.gemm.helpers import assert_refused, check_against_float64, emu_kernels, scaled_inputs

# name -> (arch, body, main-loop MFMA)
CONFIGS = {
    "f8_tensor_942": ("gfx942", "A = e4m3fnuz row\nB = e4m3fnuz col\nC = bf16 row\ntile = 64x64x64\nwaves = 2x2\n"
                                "scale_a = tensor\nscale_b = tensor", "v_mfma_f32_32x32x16_fp8_fp8"),
    "f8_rowcol_mixed_942": ("gfx942", "A = e4m3fnuz col\nB = e5m2fnuz row\nC = f32 col\ntile = 32x64x64\nwaves = 1x2\n"
                                      "instr = 16x16x32\nscale_a = row\nscale_b = col\nepilogue = bias(col) -> relu",
                            "v_mfma_f32_16x16x32_fp8_bf8"),
    "f8_row_splitk_950": ("gfx950", "A = e4m3fn row\nB = e4m3fn col\nC = f16 row\ntile = 32x64x64\nwaves = 1x2\n"
                                    "scale_a = row\nschedule = splitk", "v_mfma_f32_32x32x16_fp8_fp8"),
    "f8_col_beta_950": ("gfx950", "A = e5m2 row\nB = e4m3fn row\nC = f32 row\nalpha = 0.5\nbeta = 0.25\n"
                                  "tile = 64x64x64\nwaves = 2x2\nscale_b = col", "v_mfma_f32_32x32x16_bf8_fp8"),
    "f8_plain_950": ("gfx950", "A = e5m2 row\nB = e5m2 col\nC = bf16 row\ntile = 128x64x64\nwaves = 2x2",
                     "v_mfma_f32_32x32x16_bf8_bf8"),
    # block scales (A 1 x 128, B 128 x 128) folded per K block in registers
    "f8_block_942": ("gfx942", "A = e4m3fnuz row\nB = e4m3fnuz col\nC = bf16 row\ntile = 64x64x64\nwaves = 2x2\n"
                               "scale_a = block(128)\nscale_b = block(128)", "v_mfma_f32_32x32x16_fp8_fp8"),
    "f8_block_k128_mixed_950": ("gfx950", "A = e4m3fn col\nB = e5m2 row\nC = f32 row\ntile = 128x128x128\nwaves = 2x2\n"
                                          "lds_buffers = 1\nscale_a = block(128)\nscale_b = block(128)\n"
                                          "epilogue = bias(col)", "v_mfma_f32_32x32x16_fp8_bf8"),
    "f8_block_k32_942": ("gfx942", "A = e5m2fnuz row\nB = e5m2fnuz col\nC = f16 row\ntile = 32x32x32\nwaves = 1x1\n"
                                   "instr = 16x16x32\nscale_a = block(128)\nscale_b = block(128)",
                         "v_mfma_f32_16x16x32_bf8_bf8"),
    # block scales with the K range split (K tiles of one block: each piece starts on a whole block)
    "f8_block_splitk_942": ("gfx942", "A = e4m3fnuz row\nB = e4m3fnuz col\nC = bf16 row\ntile = 32x64x128\n"
                                      "waves = 1x2\nscale_a = block(128)\nscale_b = block(128)\nschedule = splitk(3)",
                            "v_mfma_f32_32x32x16_fp8_fp8"),
    "f8_block_streamk_950": ("gfx950", "A = e4m3fn row\nB = e4m3fn col\nC = f32 row\ntile = 32x32x128\nwaves = 1x1\n"
                                       "scale_a = block(128)\nscale_b = block(128)\nepilogue = bias(col)\n"
                                       "schedule = streamk", "v_mfma_f32_32x32x16_fp8_fp8"),
    "f8_batched_942": ("gfx942", "A = e4m3fnuz row\nB = e4m3fnuz col\nC = bf16 row\ntile = 64x64x64\nwaves = 2x2\n"
                                 "batched = true\nscale_a = tensor\nscale_b = tensor", "v_mfma_f32_32x32x16_fp8_fp8"),
}
SHAPES = [(1, 70, 130), (1, 1, 1), (67, 33, 200), (130, 97, 77), (17, 9, 0), (5, 200, 1031), (40, 300, 384)]
# 16-bit kernels take the same scalings (e.g. an RMSNorm's per-row 1/rms folded into the next GEMM as scale_a = row),
# plain, with a chain and gated (name -> (arch, body)); on sm_90 the Hopper body takes them too (test_tma_body.py)
SCALED16 = {
    "s16_rowcol_942": ("gfx942", "A = bf16 row\nB = bf16 col\nC = bf16 row\ntile = 64x64x32\nwaves = 2x2\n"
                                 "scale_a = row\nscale_b = col\nepilogue = bias(col) -> relu"),
    "s16_tensor_col_90a": ("gfx90a", "A = f16 col\nB = f16 row\nC = f32 row\ntile = 32x32x16\nwaves = 1x1\n"
                                     "scale_a = tensor\nscale_b = col"),
    "s16_glu_row_950": ("gfx950", "A = bf16 row\nB = bf16 col\nC = bf16 row\ntile = 32x64x32\nwaves = 1x1\n"
                                  "scale_a = row\nscale_b = tensor\nepilogue = swiglu"),
}
SHAPES16 = [(77, 200, 72), (1, 9, 16), (65, 33, 19), (40, 70, 0)]


def _source(name: str) -> str:
    arch, body = (CONFIGS.get(name) or SCALED16[name])[:2]
    return f"target {arch}\nkernel {name} {{\n" + "\n".join("  " + line for line in body.splitlines()) + "\n}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (c[0], _source(n)) for n, c in (CONFIGS | SCALED16).items()})


def _sizes(gemm: Kernel, m: int, n: int, k: int) -> dict:
    sizes = {"M": m, "N": n, "K": k}
    if gemm.plan.spec.params.gemm.block_scaled:
        sizes |= {"kb": -(-k // 128), "nb": -(-n // 128)}
    return sizes


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
@pytest.mark.parametrize("name", [n for n in CONFIGS if "batched" not in n])
def test_emu_against_float64(kernels, name, shape):
    sizes = _sizes(kernels[name], *shape)
    check_against_float64(kernels[name], scaled_inputs(kernels[name], sizes, seed=sum(shape) + 7 * shape[0]), sizes)


@pytest.mark.parametrize("shape", SHAPES16, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES16])
@pytest.mark.parametrize("name", SCALED16)
def test_emu_scaled_16bit_against_float64(kernels, name, shape):
    """bf16 / f16 with positive random scales over two decades (a gated kernel's N: C's columns, B has 2N)."""
    sizes = _sizes(kernels[name], *shape)
    ops = scaled_inputs(kernels[name], sizes, seed=sum(shape))
    assert ops["scale_a"] is not None and ops["scale_b"] is not None
    check_against_float64(kernels[name], ops, sizes)


@pytest.mark.parametrize("batch", [1, 3])
def test_emu_batched_shares_the_scales(kernels, batch):
    sizes = {"M": 40, "N": 70, "K": 99, "batch": batch}
    check_against_float64(kernels["f8_batched_942"], scaled_inputs(kernels["f8_batched_942"], sizes, seed=batch), sizes)


def test_scales_are_read_at_every_launch(kernels):
    """Same arrays, scales changed in place: the next call uses the new values (what a graph replay relies on)."""
    gemm = kernels["f8_rowcol_mixed_942"]
    sizes = {"M": 50, "N": 40, "K": 64}
    ops = scaled_inputs(gemm, sizes, seed=3)
    first = gemm(**ops).copy()
    ops["scale_a"] *= 2.0
    ops["scale_b"][...] = ops["scale_b"][::-1].copy()
    poison(ops["C"])
    check_against_float64(gemm, ops, sizes)
    assert not np.allclose(first, ops["C"])


def test_scale_of_the_wrong_length_is_refused(kernels):
    gemm = kernels["f8_rowcol_mixed_942"]
    ops = scaled_inputs(gemm, {"M": 8, "N": 8, "K": 32}, seed=1)
    ops["scale_a"] = np.ones(9, np.float32)
    with pytest.raises(CkgenError, match="scale_a"):
        gemm(**ops)
    ops["scale_a"] = np.ones(8, np.float64)
    with pytest.raises(CkgenError, match="scale_a"):
        gemm(**ops)


def test_block_scales_of_the_wrong_shape_are_refused(kernels):
    gemm = kernels["f8_block_942"]
    sizes = _sizes(gemm, 16, 200, 300)                      # kb = 3, nb = 2
    ops = scaled_inputs(gemm, sizes, seed=2)
    short = dict(ops, scale_a=np.ones((16, 2), np.float32))  # K blocks: 2 for K = 300 (scale_b has 3)
    with pytest.raises(CkgenError, match="their kb differ"):
        gemm(**short)
    short = dict(ops, scale_a=np.ones((16, 2), np.float32), scale_b=np.ones((2, 2), np.float32))
    with pytest.raises(CkgenError, match=r"kb = 2 must be ceil\(K / 128\) = 3"):
        gemm(**short)
    wrong_b = dict(ops, scale_b=np.ones((1, 3), np.float32))  # N blocks: 1 for N = 200
    with pytest.raises(CkgenError, match="scale_b|nb"):
        gemm(**wrong_b)


def test_host_entry_checks_the_block_counts(kernels):
    """A C caller passing kb != ceil(K / 128) gets CKGEN_ERROR_INVALID_VALUE; nothing is written."""
    gemm = kernels["f8_block_942"]
    a = np.zeros((16, 300), np.uint8)
    b = np.asfortranarray(np.zeros((300, 200), np.uint8))
    c = np.full((16, 200), 0xFFFF, np.uint16)
    sa, sb = np.ones((16, 3), np.float32), np.ones((2, 3), np.float32)
    ptr = [x.ctypes.data for x in (a, b, c)]
    args = [*ptr, None, sa.ctypes.data, sb.ctypes.data, 16, 200, 300, 2, 2, 300, 300, 200, 3, 3, None]
    assert gemm.handle.entry(*args) == 1
    args[10] = 1                           # nb = 1 for N = 200
    args[9] = 3
    assert gemm.handle.entry(*args) == 1
    assert (c == 0xFFFF).all()


@pytest.mark.parametrize("arch,body,param,legal", [
    ("gfx942", "scale_a = block(128) scale_b = col tile = 64x64x64", "scale_b", "block(128)"),
    ("gfx942", "scale_a = tensor scale_b = block(128) tile = 64x64x64", "scale_a", "block(128)"),
    ("gfx942", "scale_a = block(128) scale_b = block(128) tile = 64x64x256", "tile", "dividing 128"),
    ("gfx942", "scale_a = block(128) scale_b = block(128) tile = 64x64x64 schedule = splitk", "schedule",
     "a K tile of 128"),
    ("gfx942", "scale_a = block(128) scale_b = block(128) tile = 64x64x64 batched = true", "batched", "false"),
    ("sm_90", "scale_a = block(128) scale_b = col tile = 64x64x64", "scale_b", "block(128)"),
    ("sm_90", "scale_a = block(128) scale_b = block(128) tile = 64x64x64 schedule = splitk", "schedule", "tile"),
])
def test_block_scale_refusals(arch, body, param, legal):
    enc = "e4m3fn" if arch == "sm_90" else "e4m3fnuz"
    assert_refused(arch, f"A = {enc} row B = {enc} col C = f32 row waves = 2x2 {body}", param, legal)


def test_block_scale_spelling():
    with pytest.raises(CkgenError, match=r"block\(64\)") as ei:
        load_text("kernel k { A = e4m3fnuz row B = e4m3fnuz col C = f32 row tile = 64x64x64 waves = 1x1 "
                  "scale_a = block(64) scale_b = block(128) }", "v.ck", ("gfx942",))
    assert "block(128)" in ei.value.render()


def test_scales_need_f32_accumulation():
    (s,) = load_text("kernel k { A = i8 row B = i8 col C = i32 row tile = 64x64x64 waves = 1x1 scale_a = tensor }",
                     "v.ck", ("gfx942",))
    with pytest.raises(CkgenError, match="scale_a = tensor") as ei:
        plan_kernel(s, get_target("gfx942"))
    assert "legal" in ei.value.render()


def test_unknown_scale_kind_is_refused():
    with pytest.raises(CkgenError, match="scale_b = row") as ei:
        load_text("kernel k { A = e4m3fnuz row B = e4m3fnuz col C = f32 row tile = 64x64x64 waves = 1x1 "
                  "scale_b = row }", "v.ck", ("gfx942",))
    assert "tensor, col, block(128)" in ei.value.render()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("CKGEN_CACHE_DIR", str(tmp_path_factory.mktemp("fp8cache")))
    config.reload()
    yield
    mp.undo()
    config.reload()


@pytest.mark.parametrize("arch,clang", [("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_rung1_fp8_mfma_no_spills(cache, tmp_path, arch, clang):
    if shutil.which(clang) is None:
        pytest.fail(f"{clang} is missing (tools/install.sh installs it)")
    names = [n for n, c in CONFIGS.items() if c[0] == arch]
    src = tmp_path / "fp8.ck"
    src.write_text("".join(_source(n).split("\n", 1)[1] for n in names))
    (lib,) = driver.compile_files([src], (arch,), tmp_path / "out", jobs=2)
    for name in names:
        res = lib.resources[(name, arch)]
        assert res["mfma"].get(CONFIGS[name][2], 0) > 0 and res["mfma_in_main_loop"] > 0, (name, res["mfma"])
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, (name, res)


NV_SPEC = """
target sm_90
kernel s90_f8_tensor { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x64x64 waves = 2x2
                      scale_a = tensor scale_b = tensor }
kernel s90_f8_rowcol { A = e5m2 col B = e5m2 row C = f16 col tile = 64x64x64 waves = 2x2 scale_a = row scale_b = col
                      epilogue = bias(col) }
kernel s90_f8_block { A = e4m3fn col B = e4m3fn row C = bf16 row tile = 64x64x64 waves = 2x2
                      scale_a = block(128) scale_b = block(128) }
kernel h8_tensor { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x192x128 waves = 2x4 lds_buffers = 4
                   scale_a = tensor scale_b = tensor }
kernel h8_rowcol { A = e5m2 row B = e5m2 col C = f32 row tile = 64x128x128 waves = 1x4 lds_buffers = 4
                   scale_a = row scale_b = col epilogue = bias(col) }
kernel h8_block { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x128 waves = 2x4 lds_buffers = 4
                  scale_a = block(128) scale_b = block(128) }
kernel h8_bmm { A = e4m3fn row B = e4m3fn col C = f16 row tile = 64x128x128 waves = 2x2 lds_buffers = 4
                scale_a = row batched = true }
kernel h8_splitk { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x128x128 waves = 1x4 lds_buffers = 4
                   scale_a = tensor scale_b = tensor schedule = splitk }
kernel h8_streamk { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x256x128 waves = 2x4 lds_buffers = 4
                    scale_a = row scale_b = col epilogue = bias(col) schedule = streamk }
kernel h8_block_splitk { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x64x128 waves = 1x4 lds_buffers = 4
                         scale_a = block(128) scale_b = block(128) schedule = splitk }
"""


def test_nvcc_builds_scaled_fp8_for_sm90(cache):
    """The mma.sync kernels (s90_*) issue mma.sync e4m3 / e5m2 without spills; each h8_* kernel's Hopper entry
    (`_tma`; split-K and stream-K ones too) issues the planned wgmma m64nNk32 (e4m3 / e5m2) and neither spills nor
    uses a stack, and a block-scaled one of 128 rows has its two consumer warpgroups take turns (named barriers 2
    and 3). Their mma.sync entries build beside them; several spill, as the 16-bit 128x256 one does: they serve
    only operands the Hopper body cannot take."""
    from ckgen.backends.nvidia import compiler as nv

    plans = [plan_kernel(s, get_target("sm_90")) for s in load_text(NV_SPEC)]
    lib = nv.build_cuda_library("nvfp8", plans)
    reports = {r.name: r for r in nv.analyze(lib, plans)}
    ptx = (lib.entry / "nvfp8_sm_90.ptx").read_text()
    # block scales on 128 rows: the two consumer warpgroups take turns (named barriers 2 and 3); on 64 rows, one
    for name, turns in (("h8_block_tma", True), ("h8_block_splitk_tma", False)):
        body = re.split(r"\.entry ", ptx[ptx.index(f".entry {name}("):])[1]
        assert ("bar.arrive 2, 256;" in body and "bar.sync 3, 256;" in body) == turns, name
    mma = "mma.sync.aligned.m16n8k32.row.col.f32.{0}.{0}.f32"
    wgmma = "wgmma.mma_async.sync.aligned.m64n{0}k32.f32.{1}.{1}"
    want = {"s90_f8_tensor": mma.format("e4m3"), "s90_f8_rowcol": mma.format("e5m2"),
            "s90_f8_block": mma.format("e4m3"),  # (block scales folded per K block)
            "h8_tensor_tma": wgmma.format(192, "e4m3"), "h8_rowcol_tma": wgmma.format(128, "e5m2"),
            "h8_block_tma": wgmma.format(128, "e4m3"), "h8_bmm_tma": wgmma.format(128, "e4m3"),
            "h8_splitk_tma": wgmma.format(128, "e4m3"), "h8_streamk_tma": wgmma.format(256, "e4m3"),
            "h8_block_splitk_tma": wgmma.format(64, "e4m3"),  # (the narrow tile: half a block of B's scales)
            "h8_rowcol": mma.format("e5m2")}
    for name, instr in want.items():
        r = reports[name]
        assert dict(r.ptx_tensor).get(instr, 0) > 0, (name, r.ptx_tensor)
        assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
        assert (r.tma_body_of is not None) == name.endswith("_tma")


NV16_SPEC = """
target sm_90
kernel h16_row_col { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
                     scale_a = row scale_b = col }
kernel h16_glu { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
                 scale_a = row scale_b = tensor gate = halves epilogue = swiglu }
kernel h16_splitk { A = bf16 row B = bf16 col C = bf16 row tile = 128x192x64 waves = 2x4 lds_buffers = 4
                    scale_a = row schedule = splitk(atomic) }
"""


def test_nvcc_builds_scaled_16bit_hopper_entries(cache):
    """Scaled bf16 kernels on the Hopper body (the scales in its epilogue; its widest tiles, 128x256 and 128x192,
    where registers are tightest): each `_tma` entry issues the planned wgmma m64nNk16 bf16, which ptxas does not
    serialize (C7514), without spills or stack, and stores C by TMA (the overlapped TMA-store epilogue is kept)."""
    from ckgen.backends.nvidia import compiler as nv

    plans = [plan_kernel(s, get_target("sm_90")) for s in load_text(NV16_SPEC)]
    assert all(p.body.tma is not None for p in plans), [p.body.why for p in plans]
    lib = nv.build_cuda_library("nvs16", plans)
    reports = {r.name: r for r in nv.analyze(lib, plans)}
    ptx = (lib.entry / "nvs16_sm_90.ptx").read_text()
    for p in plans:
        r = reports[f"{p.name}_tma"]
        instr = f"wgmma.mma_async.sync.aligned.m64n{p.spec.params.config.tile[1]}k16.f32.bf16.bf16"
        assert dict(r.ptx_tensor).get(instr, 0) > 0, (r.name, r.ptx_tensor)
        assert r.spill_stores == r.spill_loads == r.stack_bytes == 0 and not r.wgmma_serialized, r
        body = re.split(r"\.entry ", ptx[ptx.index(f".entry {r.name}("):])[1]  # (to the next entry)
        assert "cp.async.bulk.tensor.3d.global.shared::cta" in body, r.name
        if p.name == "h16_glu":  # the row scale read once per row of a thread's two (epi::RowBound), not per output
            assert len(re.findall(r"\bld(?:\.global)?(?:\.nc)?\.f32\b", body)) <= 3, r.name
