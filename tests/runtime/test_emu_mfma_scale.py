"""The emulator's gfx950 block-scaled MFMA (v_mfma_scale_f32_32x32x64_f8f6f4, fp8 and fp4 operands) against the
published lane layouts (tests/data/mfma_scale_layouts.json, made by tools/gen_mfma_scale_layout.py from AMD's ROCm
blog and triton's scale layout; sources in that script).

Each lane's A, B, C registers and scale words are filled from the JSON rows with known random matrices and E8M0
scales, one wave runs the emulated builtin, and every D item must equal C + sum_kb 2^(sa-127) 2^(sb-127) A_kb.B_kb
computed in numpy (values chosen so that the result is exact in f32). Both fp8 formats, fp4 (E2M1, every code),
every op_sel byte; fp4 mixed with fp8 must fault, and an fp4 operand's unused upper 16 bytes must not matter.
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


def _ref(fmt: str = "e4m3") -> dict:
    """The instruction record whose operand formats include `fmt` ("e4m3": the fp8 record, "e2m1": the fp4 one)."""
    (e,) = [r for r in json.loads(LAYOUT.read_text())["instructions"] if fmt in r["formats"]]
    return e


# OCP E2M1 value of each 4-bit code (sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6); code 8 is -0.
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def _scale_words(rng, e: dict, SA: np.ndarray, SB: np.ndarray, sel_a: int, sel_b: int):
    """Each lane's scale_a / scale_b word as 4 bytes: the E8M0 exponent at byte op_sel (the layout's scale rows),
    junk in the other bytes, which must be ignored."""
    sa_w = rng.integers(0, 255, size=(64, 4)).astype(np.uint8)
    sb_w = rng.integers(0, 255, size=(64, 4)).astype(np.uint8)
    for i, kb, lane in e["scale_a"]:
        sa_w[lane, sel_a] = SA[i, kb]
    for kb, j, lane in e["scale_b"]:
        sb_w[lane, sel_b] = SB[kb, j]
    return sa_w, sb_w


def _reference(A, B, C, SA, SB) -> np.ndarray:
    """D = C + sum over 32-K blocks kb of 2^(SA[:, kb] - 127) 2^(SB[kb, :] - 127) A[:, kb] @ B[kb, :]."""
    D = C.copy()
    for kb in range(2):
        ks = slice(32 * kb, 32 * kb + 32)
        D += (2.0 ** (SA[:, kb:kb + 1] - 127)) * (2.0 ** (SB[kb:kb + 1, :] - 127)) * (A[:, ks] @ B[ks, :])
    return D


def _run(lib, a_reg, b_reg, c_reg, sa_w, sb_w, fmt_a, fmt_b, sel_a, sel_b) -> tuple[int, np.ndarray]:
    """One wave of the emulated builtin on per-lane registers (a_reg/b_reg: 64 x 32 bytes, c_reg: 64 x 16 f32,
    sa_w/sb_w: 64 x 4 bytes); returns the status and D (64 x 16 f32)."""
    d_reg = np.full((64, 16), -12345, np.float32)
    lib.clear_buffers()
    for arr, nm in ((a_reg, "a"), (b_reg, "b"), (c_reg, "c"), (sa_w, "sa"), (sb_w, "sb"), (d_reg, "d")):
        lib.register(arr, nm)
    st = lib.lib.run_scaled(a_reg.ctypes.data, b_reg.ctypes.data, c_reg.ctypes.data, sa_w.ctypes.data,
                            sb_w.ctypes.data, d_reg.ctypes.data, fmt_a, fmt_b, sel_a, sel_b)
    return st, d_reg


def _assert_equal(d_reg: np.ndarray, expect: np.ndarray) -> None:
    bad = np.argwhere(d_reg != expect)
    assert bad.size == 0, (f"{len(bad)} of {d_reg.size} D items differ; first lane/item {bad[0].tolist()}: "
                           f"got {d_reg[tuple(bad[0])]}, want {expect[tuple(bad[0])]}")


def test_layout_data_is_current_and_the_table_matches_it():
    import subprocess
    import sys
    res = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_mfma_scale_layout.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    e, e4 = _ref("e4m3"), _ref("e2m1")
    (ins,) = amd.MX_INSTRUCTIONS["gfx950"]
    assert (ins.mnemonic, ins.m, ins.n, ins.k) == (e["name"], e["m"], e["n"], e["k"])
    assert (ins.a_regs * 4, ins.b_regs * 4, ins.c_regs) == (e["a_items"], e["b_items"], e["c_items"])
    assert amd.MX_BLOCK_K == e["block_k"]
    # the targets table's operand format codes (what the kernels pass) are the published ones
    kinds = {"e4m3": DType.FP8, "e5m2": DType.BF8, "e2m1": DType.E2M1FN_X2}
    assert {kinds[f]: code for r in (e, e4) for f, code in r["formats"].items()} == amd.MX_OPERAND_FORMATS
    # the fp4 record: same instruction, 32 fp4 values per lane; C/D and scales as for fp8
    assert all(e4[x] == e[x] for x in ("name", "m", "n", "k", "block_k", "c", "scale_a", "scale_b"))
    # every (lane, item) holds exactly one element, every element is held once
    for r in (e, e4):
        for key, items in (("a", r["a_items"]), ("b", r["b_items"]), ("c", r["c_items"])):
            rows = np.array(r[key])
            assert len({(x[2], x[3]) for x in rows}) == 64 * items == len({(x[0], x[1]) for x in rows})
    # fp4: a lane's values come from one 32-K block (the one its scale byte covers)
    for key, kcol in (("a", 1), ("b", 0)):
        rows = np.array(e4[key])
        assert np.array_equal(rows[:, kcol] // 32, rows[:, 2] // 32)


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
    D = _reference(A, B, C, SA, SB)
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
    sa_w, sb_w = _scale_words(rng, e, SA, SB, sel_a, sel_b)
    st, d_reg = _run(lib, a_reg, b_reg, c_reg, sa_w, sb_w, fmt_a, fmt_b, sel_a, sel_b)
    lib.check_status(st, "mfma_scale")
    _assert_equal(d_reg, expect)


def _fp4_regs(e: dict, key: str, codes: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """A lane's 32-byte fp4 operand (64 x 32 bytes) from the layout rows of `key` and the matrix of E2M1 codes:
    item q of a lane is nibble q % 2 (0 = low) of byte q // 2; bytes 16..31 are `upper` (64 x 16)."""
    rows = np.array(e[key])
    nib = np.zeros((64, 32), np.uint8)
    nib[rows[:, 2], rows[:, 3]] = codes[rows[:, 0], rows[:, 1]]
    return np.concatenate([nib[:, 0::2] | (nib[:, 1::2] << 4), upper], axis=1).astype(np.uint8)


def _fp4_case(seed: int, sel_a: int, sel_b: int) -> dict:
    """Random E2M1 codes for A and B (every code occurs, -0 and +-6 included), C and E8M0 scales chosen so that D
    is exact in f32 (|dot| <= 32 * 36 per block, scales 2^-2 .. 2^2 each, so D is a multiple of 2^-6 below 2^16);
    the registers with zero upper bytes (as the blog) and the expected D items."""
    e = _ref("e2m1")
    rng = np.random.default_rng(seed)
    m, n, k = e["m"], e["n"], e["k"]
    ca = rng.integers(0, 16, size=(m, k)).astype(np.uint8)
    cb = rng.integers(0, 16, size=(k, n)).astype(np.uint8)
    assert set(ca.ravel()) == set(cb.ravel()) == set(range(16))
    C = rng.integers(-64, 65, size=(m, n)) / 8.0
    SA = rng.integers(125, 130, size=(m, 2))
    SB = rng.integers(125, 130, size=(2, n))
    D = _reference(E2M1[ca], E2M1[cb], C, SA, SB)
    assert np.array_equal(D.astype(np.float32), D)   # exact in f32
    rc = np.array(e["c"])
    c_reg = np.zeros((64, 16), np.float32)
    expect = np.zeros((64, 16), np.float32)
    c_reg[rc[:, 2], rc[:, 3]] = C[rc[:, 0], rc[:, 1]]
    expect[rc[:, 2], rc[:, 3]] = D[rc[:, 0], rc[:, 1]]
    zero = np.zeros((64, 16), np.uint8)
    sa_w, sb_w = _scale_words(rng, e, SA, SB, sel_a, sel_b)
    return {"e": e, "rng": rng, "ca": ca, "cb": cb, "a": _fp4_regs(e, "a", ca, zero),
            "b": _fp4_regs(e, "b", cb, zero), "c": c_reg, "sa": sa_w, "sb": sb_w, "expect": expect}


@pytest.mark.parametrize(("sel_a", "sel_b"), [(0, 0), (1, 2), (2, 3), (3, 1)])
def test_scaled_mfma_fp4_matches_reference_layout(lib, sel_a, sel_b):
    t = _fp4_case(2000 + 4 * sel_a + sel_b, sel_a, sel_b)
    st, d_reg = _run(lib, t["a"], t["b"], t["c"], t["sa"], t["sb"], 4, 4, sel_a, sel_b)
    lib.check_status(st, "mfma_scale fp4")
    _assert_equal(d_reg, t["expect"])


def test_scaled_mfma_fp4_ignores_upper_operand_bytes(lib):
    t = _fp4_case(3000, 1, 2)
    junk_a = t["rng"].integers(1, 256, size=(64, 16)).astype(np.uint8)
    junk_b = t["rng"].integers(1, 256, size=(64, 16)).astype(np.uint8)
    a = _fp4_regs(t["e"], "a", t["ca"], junk_a)
    b = _fp4_regs(t["e"], "b", t["cb"], junk_b)
    assert np.array_equal(a[:, :16], t["a"][:, :16]) and (a[:, 16:] != 0).all() and (b[:, 16:] != 0).all()
    st, d_reg = _run(lib, a, b, t["c"], t["sa"], t["sb"], 4, 4, 1, 2)
    lib.check_status(st, "mfma_scale fp4, junk upper bytes")
    _assert_equal(d_reg, t["expect"])


@pytest.mark.parametrize(("fmt_a", "fmt_b"), [(4, 0), (0, 4), (4, 1), (1, 4)])
def test_scaled_mfma_fp4_mixed_with_fp8_faults(lib, fmt_a, fmt_b):
    regs = np.zeros((64, 32), np.uint8)
    c = np.zeros((64, 16), np.float32)
    s = np.full((64, 4), 127, np.uint8)
    st, _ = _run(lib, regs, regs, c, s, s, fmt_a, fmt_b, 0, 0)
    assert st != 0 and "fp4 mixed with fp8" in lib.last_fault()


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
    for fmt_a, fmt_b in ((2, 0), (0, 3), (4, 2), (5, 5)):   # fp6 / bf6 and unknown codes
        st = lib.lib.run_scaled(a.ctypes.data, a.ctypes.data, c.ctypes.data, s_one.ctypes.data, s_one.ctypes.data,
                                d.ctypes.data, fmt_a, fmt_b, 0, 0)
        assert st != 0 and "only fp8 (0 = e4m3, 1 = e5m2) and fp4" in lib.last_fault()
