"""The emulator's gfx950 block-scaled MFMA (v_mfma_scale_f32_32x32x64_f8f6f4, fp8 operands) against the published
lane layout (tests/data/mfma_scale_layouts.json, made by tools/gen_mfma_scale_layout.py from AMD's ROCm blog and
triton's scale layout; sources in that script).

Each lane's A, B, C registers and scale words are filled from the JSON rows with known random matrices and E8M0
scales, one wave runs the emulated builtin, and every D item must equal C + sum_kb 2^(sa-127) 2^(sb-127) A_kb.B_kb
computed in numpy (values chosen so that the result is exact in f32). Both fp8 formats and every op_sel byte.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.ir.types import DType
from ckgen.targets import amd, get_target
from tests.runtime.test_emu_mfma import _encode, _fp8_value

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HARNESS = HERE / "cases" / "mfma_scale_harness.cpp"
LAYOUT = ROOT / "tests" / "data" / "mfma_scale_layouts.json"

pytestmark = pytest.mark.skipif(not any(__import__("shutil").which(c) for c in emu.HOST_CXX_CANDIDATES),
                                reason="no host clang++")


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> emu.EmuLibrary:
    out = tmp_path_factory.mktemp("mfma_scale")
    path = emu.build_shared([HARNESS], out / "libmfma_scale.so", get_target("gfx950"), ["-O1"])
    lib = emu.EmuLibrary(path)
    fn = lib.lib.run_scaled
    fn.argtypes = [ctypes.c_void_p] * 6 + [ctypes.c_int] * 4
    fn.restype = ctypes.c_int
    return lib


def _ref() -> dict:
    (e,) = json.loads(LAYOUT.read_text())["instructions"]
    return e


def test_layout_data_is_current_and_the_table_matches_it():
    import subprocess
    import sys
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_mfma_scale_layout.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    e = _ref()
    (ins,) = amd.MX_INSTRUCTIONS["gfx950"]
    assert (ins.mnemonic, ins.m, ins.n, ins.k) == (e["name"], e["m"], e["n"], e["k"])
    assert (ins.a_regs * 4, ins.b_regs * 4, ins.c_regs) == (e["a_items"], e["b_items"], e["c_items"])
    assert amd.MX_BLOCK_K == e["block_k"]
    # every (lane, item) holds exactly one element, every element is held once
    for key, items in (("a", e["a_items"]), ("b", e["b_items"]), ("c", e["c_items"])):
        rows = np.array(e[key])
        assert len({(r[2], r[3]) for r in rows}) == 64 * items == len({(r[0], r[1]) for r in rows})


@pytest.mark.parametrize(("fmt_a", "fmt_b", "sel_a", "sel_b"),
                         [(0, 0, 0, 0), (1, 0, 1, 2), (0, 1, 3, 0), (1, 1, 2, 3)])
def test_scaled_mfma_matches_reference_layout(lib, fmt_a, fmt_b, sel_a, sel_b):
    e = _ref()
    rng = np.random.default_rng(1000 + 8 * fmt_a + 4 * fmt_b + sel_a + sel_b)
    m, n, k = e["m"], e["n"], e["k"]
    vals = np.array([0, .25, .5, .75, 1, 1.25, 1.5, 1.75, 2])
    A = rng.choice(vals, size=(m, k)) * rng.choice([-1, 1], size=(m, k))
    B = rng.choice(vals, size=(k, n)) * rng.choice([-1, 1], size=(k, n))
    C = rng.integers(-64, 65, size=(m, n)) / 8.0
    SA = rng.integers(124, 131, size=(m, 2))   # E8M0 exponents: scales 2^-3 .. 2^3
    SB = rng.integers(124, 131, size=(2, n))
    D = C.copy()
    for kb in range(2):
        ks = slice(32 * kb, 32 * kb + 32)
        D += (2.0 ** (SA[:, kb:kb + 1] - 127)) * (2.0 ** (SB[kb:kb + 1, :] - 127)) * (A[:, ks] @ B[ks, :])
    ea = _encode(A, DType.BF8 if fmt_a else DType.FP8, ocp=True)
    eb = _encode(B, DType.BF8 if fmt_b else DType.FP8, ocp=True)
    assert np.array_equal(np.vectorize(lambda v: _fp8_value(int(v), bool(fmt_a), True))(ea), A)

    a_reg = np.zeros((64, 32), np.uint8)
    b_reg = np.zeros((64, 32), np.uint8)
    c_reg = np.zeros((64, 16), np.float32)
    expect = np.zeros((64, 16), np.float32)
    ra, rb, rc = (np.array(e[x]) for x in ("a", "b", "c"))
    a_reg[ra[:, 2], ra[:, 3]] = ea[ra[:, 0], ra[:, 1]]
    b_reg[rb[:, 2], rb[:, 3]] = eb[rb[:, 0], rb[:, 1]]
    c_reg[rc[:, 2], rc[:, 3]] = C[rc[:, 0], rc[:, 1]]
    expect[rc[:, 2], rc[:, 3]] = D[rc[:, 0], rc[:, 1]]
    # scale words: the lane's byte at op_sel, other bytes hold junk that must be ignored
    sa_w = rng.integers(0, 255, size=(64, 4)).astype(np.uint8)
    sb_w = rng.integers(0, 255, size=(64, 4)).astype(np.uint8)
    for i, kb, lane in e["scale_a"]:
        sa_w[lane, sel_a] = SA[i, kb]
    for kb, j, lane in e["scale_b"]:
        sb_w[lane, sel_b] = SB[kb, j]
    d_reg = np.full((64, 16), -12345, np.float32)
    lib.clear_buffers()
    for arr, nm in ((a_reg, "a"), (b_reg, "b"), (c_reg, "c"), (sa_w, "sa"), (sb_w, "sb"), (d_reg, "d")):
        lib.register(arr, nm)
    st = lib.lib.run_scaled(a_reg.ctypes.data, b_reg.ctypes.data, c_reg.ctypes.data, sa_w.ctypes.data,
                            sb_w.ctypes.data, d_reg.ctypes.data, fmt_a, fmt_b, sel_a, sel_b)
    lib.check_status(st, "mfma_scale")
    bad = np.argwhere(d_reg != expect)
    assert bad.size == 0, (f"{len(bad)} of {d_reg.size} D items differ; first lane/item {bad[0].tolist()}: "
                           f"got {d_reg[tuple(bad[0])]}, want {expect[tuple(bad[0])]}")


def test_nan_scale_and_bad_format(lib):
    a = np.zeros((64, 8), np.int32)
    c = np.ones((64, 16), np.float32)
    s_nan = np.full(64, 0xFF, np.int32)
    s_one = np.full(64, 127, np.int32)
    d = np.zeros((64, 16), np.float32)
    lib.clear_buffers()
    for arr, nm in ((a, "a"), (c, "c"), (s_nan, "sn"), (s_one, "so"), (d, "d")):
        lib.register(arr, nm)
    lib.check_status(lib.lib.run_scaled(a.ctypes.data, a.ctypes.data, c.ctypes.data, s_nan.ctypes.data,
                                        s_one.ctypes.data, d.ctypes.data, 0, 0, 0, 0), "nan")
    assert np.isnan(d).all()
    st = lib.lib.run_scaled(a.ctypes.data, a.ctypes.data, c.ctypes.data, s_one.ctypes.data, s_one.ctypes.data,
                            d.ctypes.data, 4, 0, 0, 0)
    assert st != 0 and "only fp8" in lib.last_fault()
