"""Grouped and masked GEMM (mode = grouped | masked; issue 24: mixture of experts).

Rung 2: the emulator against the float64 reference with empty groups, single-row groups, very unequal groups,
rows past the last offset (left unwritten), int32 and int64 index tensors, fused epilogues (bias per group or per
row, activations, alpha / beta), both layouts; workgroups in parallel give the same bits. Bad input: offsets
not non-decreasing, past the token count, of the wrong dtype, a group count that B disagrees with: a CkgenError
naming the argument, nothing launched. Scales (mode = grouped): A per tensor or row, B per group or per group and
column, on the emulator as above. Rung 1: the grouped kernels compile for gfx90a / gfx942 / gfx950 with their
planned MFMAs in the main loop, no spills, no scratch. nvcc builds them for sm_90.
"""

from __future__ import annotations

import numpy as np
import pytest

from ckgen.errors import CkgenError, RuntimeFailure, SpecError, ValidationError
from ckgen.frontend import load_text
from ckgen.ir.arrays import poison, to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.lower import plan_kernel
from ckgen.ops.gemm.reference import group_rows
from ckgen.runtime.api import Kernel
from tests.ops.gemm.helpers import (
    RUNG1_ARCHES,
    amd_library,
    assert_entries_clean,
    emu_kernels,
    needs_clang,
    sm90_library,
)

# name -> (arch, body); small tiles so that groups span several tiles and edge tiles
KERNELS = {
    "g_f16_bias_silu": ("gfx942", "A = f16 row B = f16 row C = f16 row tile = 32x32x16 waves = 1x1 "
                                  "mode = grouped epilogue = bias(col) -> silu"),
    "g_bf16_i64_row_beta": ("gfx90a", "A = bf16 col B = bf16 col C = f32 col beta = 0.5 alpha = 0.75 "
                                      "tile = 32x32x16 waves = 1x1 mode = grouped index = i64 "
                                      "epilogue = bias(row) -> gelu"),
    "m_f16_rowbias": ("gfx950", "A = f16 row B = f16 col C = f16 row alpha = 2.0 tile = 32x32x16 waves = 1x1 "
                                "mode = masked epilogue = bias(row) -> relu"),
    "m_bf16_i64_col": ("gfx942", "A = bf16 row B = bf16 row C = bf16 row tile = 16x32x32 waves = 1x2 "
                                 "mode = masked index = i64 epilogue = bias(col)"),
    # scales as torch._scaled_grouped_mm takes them: A per row, B per group and column; A one, B one per group
    "g_fp8_rowcol": ("gfx942", "A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 32x32x32 waves = 1x1 "
                               "mode = grouped scale_a = row scale_b = col epilogue = bias(col)"),
    "g_bf16_tensor": ("gfx90a", "A = bf16 row B = bf16 row C = f32 row tile = 32x32x16 waves = 1x1 mode = grouped "
                                "index = i64 scale_a = tensor scale_b = tensor epilogue = bias(row) -> silu"),
}

# group sizes (rows per group): empty groups, single rows, very unequal groups
GROUPS = {
    "single_token": [1],
    "empty_and_one": [0, 1, 0, 0],
    "unequal": [0, 97, 1, 0, 3, 33, 0],
    "balanced": [17, 17, 17],
    "all_empty": [0, 0, 0],
    "no_groups": [],
}


def _source(name: str) -> str:
    arch, body = KERNELS[name]
    return f"target {arch}\nkernel {name} {{ {body} }}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (KERNELS[n][0], _source(n)) for n in KERNELS})


def _arrays(k: Kernel, rows: list[int], N: int, K: int, rng, extra_rows: int = 0, capacity: int | None = None):
    """Random inputs for groups of ``rows`` (grouped: M = sum + extra_rows; masked: M = capacity), C poisoned."""
    g = k.plan.spec.params.gemm
    masked = g.mode == "masked"
    M = (capacity if capacity is not None else max(rows, default=0)) if masked else sum(rows) + extra_rows
    sizes = {"M": M, "N": N, "K": K, "groups": len(rows)}
    arrays = get_op("gemm").random_inputs(k.plan, sizes, rng)
    index = np.asarray(rows) if masked else np.cumsum(rows)
    arrays["counts" if masked else "offsets"][...] = index
    if g.beta == 0:
        poison(arrays["C"])
    return arrays, sizes


def _check(k: Kernel, arrays: dict, sizes: dict, label: str) -> np.ndarray:
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    dt = k.plan.abi["C"].dtype
    out = k(**arrays)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    got = to_float64(out, dt)
    err = relative_error(got, ref)
    tol = get_op("gemm").tolerance(k.plan, "C")
    assert err <= tol, f"{label}: relative error {err:.3e} > {tol:.1e}"
    # rows no group covers are left as they were (poison or C's old values), bit for bit
    covered = np.zeros(ref.shape[:-1], bool)
    for e, (r0, r1) in enumerate(group_rows(k.plan, before)):
        if k.plan.spec.params.gemm.mode == "masked":
            covered[e, r0:r1] = True
        else:
            covered[r0:r1] = True
    c_before = np.asarray(before["C"])
    assert np.array_equal(np.asarray(out)[~covered].view(np.uint8), c_before[~covered].view(np.uint8)), label
    return out


@needs_clang
@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("case", list(GROUPS))
def test_groups_against_float64(kernels, name, case):
    k = kernels[name]
    rng = np.random.default_rng(len(case) + len(name))
    arrays, sizes = _arrays(k, GROUPS[case], 70, 45, rng)
    _check(k, arrays, sizes, f"{name} {case}")


@needs_clang
@pytest.mark.parametrize("name", list(KERNELS))
def test_edges_k0_rows_past_the_end_and_spare_capacity(kernels, name):
    k = kernels[name]
    rng = np.random.default_rng(7)
    masked = k.plan.spec.params.gemm.mode == "masked"
    # K = 0: C = epilogue(beta * C) on every covered row
    arrays, sizes = _arrays(k, [3, 0, 40], 33, 0, rng)
    _check(k, arrays, sizes, f"{name} K=0")
    # grouped: 9 rows past the last offset; masked: a capacity of 50 rows, groups of at most 40
    arrays, sizes = _arrays(k, [0, 40, 5, 1], 31, 37, rng, extra_rows=9, capacity=50 if masked else None)
    _check(k, arrays, sizes, f"{name} spare rows")


@needs_clang
def test_parallel_workgroups_reproduce_bitwise(kernels):
    """Workgroups of the persistent grid on two OS threads: each C tile has one writer, so the bits never change."""
    k = kernels["g_f16_bias_silu"]
    rng = np.random.default_rng(3)
    arrays, _ = _arrays(k, [0, 97, 1, 0, 3, 33], 70, 45, rng)
    k.handle.library.set_threads(2)
    try:
        outs = [k(**{n: (v.copy() if v is not None else None) for n, v in arrays.items()}) for _ in range(3)]
    finally:
        k.handle.library.set_threads(0)
    assert all(np.array_equal(outs[0].view(np.uint8), o.view(np.uint8)) for o in outs[1:])


@needs_clang
def test_grid_is_persistent_and_bounded(kernels):
    p = kernels["g_f16_bias_silu"].plan
    env = p.launch.environment({"M": 8192, "N": 4096, "K": 4096, "groups": 64})
    assert env["workers"] == p.body.grouping.workers   # never more than the target holds at once
    small = p.launch.environment({"M": 1, "N": 32, "K": 64, "groups": 8})
    assert small["workers"] == 9                         # at most ceil(M / 32) + groups row tiles x 1 N tile
    assert p.launch.grid_counts({"M": 1, "N": 32, "K": 64, "groups": 8}) == (9, 1, 1)


# ------------------------------------------------------------------------------------------------ bad input
def _bad_call(k: Kernel, **change):
    rng = np.random.default_rng(0)
    arrays, _ = _arrays(k, [3, 0, 5], 16, 8, rng)
    arrays.update(change)
    return arrays


@needs_clang
@pytest.mark.parametrize("offsets,match", [
    (np.array([3, 2, 8], np.int32), r"offsets\[1\] = 2 is below offsets\[0\] = 3"),
    (np.array([3, 3, 9], np.int32), r"offsets\[2\] = 9 is past M = 8"),
    (np.array([-1, 3, 8], np.int32), r"offsets\[0\] = -1"),
    (np.array([3, 3, 8], np.int64), "offsets has dtype int64, the kernel takes i32"),
    (np.array([3.0, 3.0, 8.0], np.float32), "offsets has dtype float32"),
    (np.array([3, 8], np.int32), "offsets has shape .* but B has shape .*: their groups differ|"
                                 "B has shape .* but offsets has shape .*: their groups differ"),
])
def test_bad_offsets_are_refused_before_launch(kernels, offsets, match):
    k = kernels["g_f16_bias_silu"]
    arrays = _bad_call(k, offsets=offsets)
    c = arrays["C"]
    with pytest.raises(RuntimeFailure, match=match) as ei:
        k(**arrays)
    assert isinstance(ei.value, CkgenError) and "offsets" in str(ei.value)
    assert np.isnan(c.astype(np.float64)).all(), "the kernel ran"


@needs_clang
def test_bad_counts_are_refused_before_launch(kernels):
    k = kernels["m_f16_rowbias"]
    arrays, _ = _arrays(k, [3, 0, 5], 16, 8, np.random.default_rng(0))
    arrays["counts"] = np.array([3, 9, 5], np.int32)   # capacity M = 5
    with pytest.raises(RuntimeFailure, match=r"counts\[1\] = 9: counts must lie in 0..M = 5"):
        k(**arrays)
    assert np.isnan(arrays["C"].astype(np.float64)).all()


@needs_clang
@pytest.mark.parametrize("bad", [[9, 2, 1000], [-5, 3, 40], [40, 41, 42]])
def test_malformed_device_offsets_stay_inside_the_matrices(kernels, bad):
    """Offsets the binding never read (as on a GPU, where reading them would synchronize): the device clamps them
    (each end into prev..M), so the emulator's bounds-checked accesses never fault, and the rows follow the clamped
    groups."""
    k = kernels["g_bf16_i64_row_beta"]
    arrays, sizes = _arrays(k, [9, 0, 31], 33, 20, np.random.default_rng(1))   # M = 40
    call = k.bind(**arrays)
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    arrays["offsets"][...] = bad
    k.backend.launch(k.handle, call)                      # no EmulationFault
    clamped, prev = [], 0
    for e in bad:
        prev = min(max(e, prev), sizes["M"])
        clamped.append(prev)
    before["offsets"] = np.array(clamped, np.int64)
    ref = get_op("gemm").reference(k.plan, before, sizes)["C"]
    err = relative_error(to_float64(arrays["C"], k.plan.abi["C"].dtype), ref)
    assert err <= get_op("gemm").tolerance(k.plan, "C"), (bad, err)


def _plan(body: str, arch: str = "gfx942"):
    (s,) = load_text(f"kernel k {{ {body} }}", "t.ck", (arch,))
    return plan_kernel(s, arch)


BASE = "A = bf16 row B = bf16 row C = bf16 row tile = 64x64x32 waves = 2x2"


@pytest.mark.parametrize("extra,match", [
    ("mode = grouped batched = true", "is not batched"),
    ("mode = grouped index = i8", "offsets and counts are i32 or i64"),
    ("mode = experts", "expected one of dense, grouped, masked"),
])
def test_bad_keys_name_what_is_legal(extra, match):
    with pytest.raises(SpecError, match=match) as ei:
        _plan(f"{BASE} {extra}")
    assert "legal" in ei.value.render() and "t.ck:1:" in ei.value.render()


def test_split_k_is_refused_for_grouped_kernels():
    with pytest.raises(ValidationError, match="not implemented for mode = grouped") as ei:
        _plan(f"{BASE} mode = grouped schedule = streamk")
    assert ei.value.param == "schedule"
    assert _plan(f"{BASE} mode = grouped schedule = auto").body.schedule is None


@pytest.mark.parametrize("extra,param,legal", [
    ("mode = masked scale_a = row", "scale_a", "none"),
    ("mode = grouped scale_a = block(128) scale_b = block(128)", "scale_a", "tensor, row"),
    ("mode = grouped scale_b = block(128) scale_a = block(128) tile = 64x64x128", "scale_a", "tensor, row"),
])
def test_grouped_scales_name_what_is_legal(extra, param, legal):
    body = f"A = e4m3fnuz row B = e4m3fnuz col C = bf16 row tile = 64x64x64 waves = 2x2 {extra}"
    with pytest.raises(ValidationError) as ei:
        _plan(body.replace("tile = 64x64x64 ", "") if "tile = 64x64x128" in extra else body)
    assert ei.value.param == param and legal in ei.value.render(), ei.value.render()


def test_abi_call_forms():
    g = _plan(f"{BASE} mode = grouped epilogue = bias(col)").abi
    assert [a.name for a in g.args] == ["A", "B", "C", "bias", "offsets", "M", "N", "K", "groups", "lda", "ldb",
                                        "ldc", "stride_b", "stride_bias"]
    assert g["offsets"].offsets_form == "ends" and g["B"].dims == ("groups", "K", "N")
    m = _plan(f"{BASE} mode = masked index = i64").abi
    assert m["counts"].dtype.value == "i64" and m["A"].dims == ("groups", "M", "K")
    assert "stride_c" in [a.name for a in m.args]
    s = _plan(f"{BASE} mode = grouped scale_a = row scale_b = col").abi
    assert [a.name for a in s.args] == ["A", "B", "C", "bias", "scale_a", "scale_b", "offsets", "M", "N", "K",
                                        "groups", "lda", "ldb", "ldc", "ld_scale_b", "stride_b", "stride_bias"]
    assert s["scale_a"].dims == ("M",) and s["scale_b"].dims == ("groups", "N")
    assert _plan(f"{BASE} mode = grouped scale_b = tensor").abi["scale_b"].dims == ("groups",)


# ------------------------------------------------------------------------------------------------ rung 1
RUNG1_CK = """
kernel r_g   { A = bf16 row B = bf16 row C = bf16 row tile = 128x128x32 waves = 2x2 mode = grouped
               epilogue = bias(col) -> silu }
kernel r_m   { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 mode = masked index = i64 }
kernel r_gs  { A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2 mode = grouped scale_a = row
               scale_b = col }
"""


@pytest.mark.parametrize("arch,clang", RUNG1_ARCHES)
def test_grouped_kernels_compile_with_their_mfma_and_no_spills(tmp_path, arch, clang):
    lib = amd_library(tmp_path, "grp", RUNG1_CK, arch, clang)
    for p in lib.plans:  # the main loop's MFMAs come in whole tiles' worth
        res, b = lib.resources[(p.name, arch)], p.body
        per_tile = b.repeats[0] * b.repeats[1] * p.spec.params.config.tile[2] // b.instr.k
        assert res["mfma_in_main_loop"] % per_tile == 0, (p.name, res)
    header = (tmp_path / "out" / "grp.h").read_text()
    assert "const void* offsets" in header and "int64_t groups" in header


NV_CK = """
target sm_90
kernel nvg { A = bf16 row B = bf16 row C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
             mode = grouped epilogue = bias(col) -> silu }
kernel nvm { A = bf16 row B = bf16 col C = bf16 row tile = 64x128x64 waves = 1x4 lds_buffers = 4 mode = masked }
"""
#: scaled grouped kernels the Hopper body does not take (its tiles: fp8 K = 128, four warps per 64 rows): the
#: mma.sync body per tile
NV_SCALED_CK = """
target sm_90
kernel nvgs { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
              mode = grouped scale_a = row scale_b = col epilogue = bias(col) }
kernel nvgt { A = bf16 row B = bf16 row C = f32 row tile = 64x64x32 waves = 2x2 mode = grouped scale_a = tensor
              scale_b = tensor }
"""

#: scaled grouped kernels of the Hopper body's tiles: fp8 per row / per group and column with a bias per group, bf16
#: per tensor / per group with a bias per row (f32 out)
NV_SCALED_HOPPER_CK = """
target sm_90
kernel nvhs { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x128x128 waves = 1x4 lds_buffers = 4
              mode = grouped scale_a = row scale_b = col epilogue = bias(col) }
kernel nvht { A = bf16 row B = bf16 col C = f32 row tile = 128x128x64 waves = 2x4 lds_buffers = 4
              mode = grouped scale_a = tensor scale_b = tensor epilogue = bias(row) }
"""


def test_nvidia_build_of_grouped_kernels(tmp_path):
    """nvcc (sm_90): the grouped and masked entries compile without spills: the portable one (mma.sync body per
    tile) and the Hopper one (`<name>_tma`: TMA + wgmma walking the groups), which the host entry tries first."""
    assert_entries_clean(sm90_library(tmp_path, "nvg", NV_CK))
    (tmp_path / "scaled").mkdir()
    assert_entries_clean(sm90_library(tmp_path / "scaled", "nvgs", NV_SCALED_CK), hopper=False)
    (tmp_path / "hopper").mkdir()  # (their fp8 fallback entry spills at the K tile of 128, as the dense ones do)
    assert_entries_clean(sm90_library(tmp_path / "hopper", "nvhs", NV_SCALED_HOPPER_CK), portable=False)


def test_random_inputs_are_valid_offsets():
    p = _plan(f"{BASE} mode = grouped")
    arrays = get_op("gemm").random_inputs(p, {"M": 50, "N": 8, "K": 8, "groups": 6}, np.random.default_rng(1))
    off = arrays["offsets"]
    assert off.dtype == np.int32 and off[-1] == 50 and np.all(np.diff(off) >= 0)
