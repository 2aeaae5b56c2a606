"""Split-K, stream-K and small-M schedules (issue 13).

Rung 2: the emulator against the float64 reference on edge shapes, outputs poisoned, every workspace left
zero-filled after the call (the ABI's contract), deterministic modes bitwise reproducible with workgroups
running in parallel; the C entry refuses a missing workspace; ckgen_<kernel>_workspace_bytes agrees with
Python. Rung 1: the scheduled kernels compile for gfx90a / gfx942 / gfx950 with the planned MFMAs in the main
loop, no spills, no scratch, an SGPR count that runs. Planner: every refusal names the parameter and what is
legal.
"""

from __future__ import annotations

import ctypes
import shutil

import numpy as np
import pytest

from ckgen import driver
from ckgen.errors import CkgenError, RuntimeFailure, SpecError, ValidationError
from ckgen.frontend import load_text
from ckgen.ir.arrays import to_float64
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.lower import plan_kernel
from ckgen.runtime.api import Kernel
from tests.ops.gemm.helpers import assert_entries_clean, emu_kernels, needs_clang, sm90_library

# name -> (arch, body): small tiles so that the edge shapes have several tiles, splits and stream-K segments
KERNELS = {
    "sk3_f16_gelu": ("gfx942", "A = f16 row B = f16 col C = f16 col tile = 32x32x16 waves = 1x1 "
                               "epilogue = bias(col) -> gelu schedule = splitk(3)"),
    "skauto_i8": ("gfx90a", "A = i8 col B = i8 row C = i32 row tile = 16x32x32 waves = 1x2 schedule = auto"),
    "skatomic_bf16": ("gfx942", "A = bf16 row B = bf16 row C = f32 row beta = 0.5 tile = 32x32x16 waves = 1x1 "
                                "schedule = splitk(4, atomic)"),
    "stk_f32": ("gfx950", "A = f32 col B = f32 col C = f32 row alpha = 2.0 tile = 32x32x8 waves = 1x1 "
                          "epilogue = bias(row) -> relu schedule = streamk"),
    # 220 stream-K workers: shapes of two waves of tiles or more take whole tiles before sharing the last ones
    "stk_waves_f16": ("gfx90a", "A = f16 row B = f16 col C = f16 row tile = 32x32x8 waves = 1x1 "
                                "schedule = streamk"),
}
SHAPES = [(1, 1, 1), (37, 70, 45), (70, 33, 300), (5, 100, 7), (16, 16, 0)]
DETERMINISTIC = ("sk3_f16_gelu", "skauto_i8", "stk_f32")
#: (M, N, K) of stk_waves_f16 with 220 workers: 441 tiles (220 whole, 221 shared: some tiles split over two
#: workers), 660 tiles (440 whole, then exactly one tile per worker: no fix-up), 230 tiles (one wave: all shared)


def _source(name: str) -> str:
    arch, body = KERNELS[name]
    return f"target {arch}\nkernel {name} {{ {body} }}\n"


@pytest.fixture(scope="module")
def kernels() -> dict[str, Kernel]:
    return emu_kernels({n: (KERNELS[n][0], _source(n)) for n in KERNELS})


def _run(k: Kernel, M: int, N: int, K: int, seed: int):
    op = get_op("gemm")
    sizes = {"M": M, "N": N, "K": K}
    arrays = op.random_inputs(k.plan, sizes, np.random.default_rng(seed))
    before = {n: (v.copy() if v is not None else None) for n, v in arrays.items()}
    ws = np.zeros(max(1, k.workspace_bytes(**sizes)), np.uint8)
    out = k(**arrays, workspace=ws)
    return out, op.reference(k.plan, before, sizes)["C"], ws


@needs_clang
@pytest.mark.parametrize("name", list(KERNELS))
def test_numerics_and_clean_workspace(kernels, name):
    k = kernels[name]
    tol = get_op("gemm").tolerance(k.plan, "C")
    for M, N, K in SHAPES:
        out, ref, ws = _run(k, M, N, K, seed=M + N + K)
        err = relative_error(to_float64(out, k.plan.abi["C"].dtype), ref)
        assert err <= tol, f"{name} {M}x{N}x{K}: relative error {err:.3e} > {tol:.1e}"
        assert not ws.any(), f"{name} {M}x{N}x{K}: the workspace is not zero-filled after the call"


@needs_clang
@pytest.mark.parametrize("shape", [(672, 672, 24), (960, 704, 20), (320, 736, 41)])
def test_stream_k_whole_tiles_then_shared(kernels, shape):
    """Stream-K with two waves of tiles or more: each worker's whole tiles (w, w + P, ...) before its share of the
    last tiles' K iterations; right, and the workspace left zero-filled."""
    k = kernels["stk_waves_f16"]
    assert k.plan.body.schedule.workers == 220
    out, ref, ws = _run(k, *shape, seed=sum(shape))
    err = relative_error(to_float64(out, k.plan.abi["C"].dtype), ref)
    assert err <= get_op("gemm").tolerance(k.plan, "C"), (shape, err)
    assert not ws.any()


@needs_clang
@pytest.mark.parametrize("name", DETERMINISTIC)
def test_deterministic_modes_reproduce_bitwise(kernels, name):
    """Workgroups run on two OS threads, so the last contributor of a tile changes from run to run; the sum
    order does not."""
    k = kernels[name]
    k.handle.library.set_threads(2)
    try:
        outs = [_run(k, 70, 33, 300, seed=5)[0] for _ in range(3)]
    finally:
        k.handle.library.set_threads(0)
    bits = [np.ascontiguousarray(o).view(np.uint8) for o in outs]
    assert all(np.array_equal(bits[0], b) for b in bits[1:])


@needs_clang
def test_workspace_contract_at_the_c_entry(kernels):
    k = kernels["sk3_f16_gelu"]
    lib = k.handle.library.lib
    size = lib.ckgen_sk3_f16_gelu_workspace_bytes
    size.argtypes = [ctypes.c_int64] * 3
    size.restype = ctypes.c_size_t
    rng = np.random.default_rng(0)
    for M, N, K in [(1, 1, 1), (0, 5, 5), *[tuple(int(x) for x in rng.integers(0, 5000, 3)) for _ in range(20)]]:
        assert size(M, N, K) == k.workspace_bytes(M=M, N=N, K=K), (M, N, K)
    assert size(-1, 4, 4) == 0
    # no workspace where one is needed: CKGEN_ERROR_INVALID_VALUE, nothing launched
    a = np.ones((8, 8), np.float16)
    b = np.asfortranarray(np.ones((8, 8), np.float16))
    c = np.asfortranarray(np.zeros((8, 8), np.float16))
    bias = np.zeros(8, np.float16)
    st = k.handle.entry(a.ctypes.data, b.ctypes.data, c.ctypes.data, bias.ctypes.data, 8, 8, 8, 8, 8, 8, None, None)
    assert st == 1
    with pytest.raises(RuntimeFailure, match="workspace holds 4 bytes"):
        k(a, b, bias, C=c, workspace=np.zeros(4, np.uint8))


@needs_clang
def test_python_callable_allocates_the_workspace(kernels):
    k = kernels["stk_f32"]
    a = np.asfortranarray(np.random.default_rng(1).uniform(-1, 1, (40, 20)).astype(np.float32))
    b = np.asfortranarray(np.random.default_rng(2).uniform(-1, 1, (20, 50)).astype(np.float32))
    bias = np.zeros(40, np.float32)
    c = k(a, b, bias)
    assert np.allclose(c, np.maximum(2.0 * (a.astype(np.float64) @ b), 0.0), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------------------------ planner
def _plan(body: str, arch: str = "gfx942"):
    (s,) = load_text(f"kernel k {{ {body} }}", "t.ck", (arch,))
    return plan_kernel(s, arch)


BASE = "A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2"


@pytest.mark.parametrize("value,match", [
    ("splitk(1)", "split count 1 is out of range"), ("splitk(65)", "out of range"),
    ("splitk(4, fast)", "takes a split count"), ("streamk(2)", "takes no arguments"),
    ("splitK", "did you mean 'splitk'"), ("128", "expected a schedule"),
])
def test_bad_schedule_values_name_what_is_legal(value, match):
    with pytest.raises(SpecError, match=match) as ei:
        _plan(f"{BASE} schedule = {value}")
    assert "legal" in ei.value.render() and "t.ck:1:" in ei.value.render()


@pytest.mark.parametrize("body,match", [
    ("A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 batched = true schedule = streamk",
     "not implemented for batched"),
    ("A = i8 row B = i8 col C = i32 row tile = 64x64x64 waves = 2x2 schedule = splitk(atomic)",
     "atomic split-K adds float"),
    # 64 KiB of double-buffered tiles leave no room for the scheduled entry's 16-byte ticket (clang refused 65552)
    ("A = f16 row B = f16 col C = f16 row tile = 256x256x32 waves = 2x2 instr = 32x32x8 schedule = streamk",
     "needs 65552 bytes of LDS"),
])
def test_planner_refusals(body, match):
    with pytest.raises(ValidationError, match=match) as ei:
        _plan(body)
    assert ei.value.param == "schedule" and ei.value.legal


def test_auto_picks_split_k_for_small_m_tiles_only():
    small = _plan("A = f16 row B = f16 col C = f16 row tile = 16x64x64 waves = 1x4 schedule = auto")
    big = _plan("A = f16 row B = f16 col C = f16 row tile = 128x64x32 waves = 2x2 schedule = auto")
    assert small.body.schedule.kind == "splitk" and small.abi.workspace is not None
    assert big.body.schedule is None and big.abi.workspace is None
    assert _plan(BASE).abi.prototype("f") == big.abi.prototype("f")  # default (tile): the ABI is unchanged


def test_split_counts_fill_one_wave():
    p = _plan("A = bf16 row B = bf16 col C = bf16 row tile = 16x128x64 waves = 1x4 lds_buffers = 6 "
              "schedule = splitk", "sm_90")
    env = p.launch.environment({"M": 16, "N": 4096, "K": 4096})
    assert env["splits"] * 32 <= p.body.schedule.target_ctas < (env["splits"] + 1) * 32   # 32 tiles
    assert p.launch.environment({"M": 16, "N": 4096, "K": 128})["splits"] == 1            # too few K tiles
    assert p.launch.environment({"M": 8192, "N": 8192, "K": 4096})["splits"] == 1         # tiles fill the GPU
    fixed = _plan(f"{BASE} schedule = splitk(8)")
    assert fixed.launch.grid_counts({"M": 64, "N": 64, "K": 64})[2] == 2                  # clamped to K tiles


# ------------------------------------------------------------------------------------------------ rung 1
SCHED_CK = """
kernel r_sk   { A = f16 row  B = f16 col  C = f16 row  tile = 128x128x32 waves = 2x2 schedule = splitk(4)
                epilogue = bias(col) -> gelu }
kernel r_at   { A = bf16 row B = bf16 col C = bf16 row tile = 64x64x32 waves = 2x2 schedule = splitk(atomic) }
kernel r_stk  { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x32 waves = 2x2 schedule = streamk }
kernel r_dec  { A = bf16 row B = bf16 col C = bf16 row tile = 16x64x64 waves = 1x4 schedule = auto }
"""


@pytest.mark.parametrize("arch,clang", [("gfx90a", "clang++-19"), ("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_schedules_compile_with_their_mfma_and_no_spills(tmp_path, arch, clang):
    if shutil.which(clang) is None:
        pytest.skip(f"{clang} is not installed")
    src = tmp_path / "sched.ck"
    src.write_text(SCHED_CK)
    (lib,) = driver.compile_files([src], (arch,), tmp_path / "out", jobs=2)
    plans = {p.name: p for p in lib.plans}
    for name, p in plans.items():
        res = lib.resources[(name, arch)]
        b = p.body
        per_tile = b.repeats[0] * b.repeats[1] * p.spec.params.config.tile[2] // b.instr.k
        assert res["mfma"].get(b.instr.mnemonic, 0) > 0, (name, res["mfma"])
        assert res["mfma_in_main_loop"] > 0 and res["mfma_in_main_loop"] % per_tile == 0, (name, res)
        assert res["vgpr_spills"] == res["sgpr_spills"] == res["scratch_bytes"] == 0, (name, res)
        assert res["waves_per_simd"] >= 1, (name, res)
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    assert '"symbol": "ckgen_r_sk_workspace_bytes"' in manifest
    header = (tmp_path / "out" / "sched.h").read_text()
    assert "size_t ckgen_r_stk_workspace_bytes(int64_t M, int64_t N, int64_t K);" in header


def test_examples_have_split_k_and_stream_k():
    from pathlib import Path

    from ckgen.frontend import load_file

    root = Path(__file__).resolve().parents[3]
    kinds = set()
    for path in (root / "examples").glob("*.ck"):
        kinds |= {s.params.config.schedule.kind for s in load_file(path) if s.op == "gemm"}
    assert {"splitk", "streamk"} <= kinds


def test_bad_value_is_a_ckgen_error():
    with pytest.raises(CkgenError):
        _plan(f"{BASE} schedule = [splitk]")


# ------------------------------------------------------------------------------------------------ NVIDIA build
NV_CK = """
target sm_90
kernel nvs_hopper_sk { A = bf16 row B = bf16 col C = bf16 row tile = 128x256x64 waves = 2x4 lds_buffers = 4
                       schedule = splitk(atomic) }
family nvs_fam { A = bf16 row B = bf16 col C = bf16 row tile = 16x128x64 waves = 1x4 lds_buffers = 6
                 schedule in [tile, splitk, streamk] }
"""


def test_nvidia_build_of_schedules_and_a_dispatcher(tmp_path):
    """nvcc (sm_90): the Hopper body's split-K entry (wgmma) and the small-M members compile without spills; the
    dispatcher is compiled on its own and linked with the kernels' object; its choice runs without a GPU."""
    from ckgen.dispatch.table import choose

    lib = sm90_library(tmp_path, "nvs", NV_CK, dispatch=True)
    assert_entries_clean(lib, hopper=False)
    hopper = lib.resources[("nvs_hopper_sk", "sm_90")]["tma_body"]
    assert hopper["entry"] == "nvs_hopper_sk_tma"
    assert any(k.startswith("wgmma.mma_async") for k, _ in hopper["ptx_tensor"])
    (table,) = lib.dispatchers
    so = ctypes.CDLL(str(lib.library))
    so.ckgen_nvs_fam_choice.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int]
    for s in [(1, 4096, 4096), (16, 128, 64), (5000, 5000, 100)]:
        for ws in (0, 1):
            assert so.ckgen_nvs_fam_choice(*s, ws) == choose(table, s, bool(ws)).index
    assert "int ckgen_nvs_fam(" in (tmp_path / "out" / "nvs.h").read_text()


def test_nvidia_atomic_split_k_slots_add_with_atomics():
    """The mma.sync body's atomic split-K partial sums reach their slot through f32 atomic adds (the shared-memory
    staged epilogue, which stores plainly, is off for them: with it, concurrent splits overwrote each other on the
    H200, relative error 0.93 at M = 1); the plain split-K kernel keeps the staged epilogue's 16-byte stores."""
    import re

    from ckgen.backends.nvidia import compiler as nvidia

    try:
        nvidia.find_nvcc()
    except CkgenError as exc:
        pytest.skip(str(exc))
    src = """target sm_90
kernel dec_atomic { A = bf16 row B = bf16 col C = bf16 row tile = 16x128x64 waves = 1x4 lds_buffers = 6
                       schedule = splitk(atomic) }
kernel dec_plain { A = bf16 row B = bf16 col C = bf16 row tile = 16x128x64 waves = 1x4 lds_buffers = 6
                schedule = splitk }
"""
    plans = [plan_kernel(s, "sm_90") for s in load_text(src, "dec.ck")]
    lib = nvidia.build_cuda_library("dec", plans)
    ptx = (lib.entry / "dec_sm_90.ptx").read_text()

    def body(name: str) -> str:
        return re.search(rf"\.entry {name}\(.*?\n}}", ptx, re.S).group(0)

    add = re.compile(r"\b(?:red|atom)\.global(?:\.\w+)*\.add\.f32")
    assert len(add.findall(body("dec_atomic"))) >= 16
    assert not add.findall(body("dec_plain")) and "st.global.v4" in body("dec_plain")
