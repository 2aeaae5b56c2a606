"""The emulator's MFMA builtins against AMD's matrix instruction calculator (tests/data/mfma_layouts.json).

For every (arch, instruction) of the targets table that the reference covers: fill each lane's A, B and
C registers from the reference layout with known random matrices, run the emulated builtin for one
wave, and check every lane's D items against A.B + C computed in numpy (values are chosen so that the
result is exact in the accumulator type, so equality is required). One compile per arch, with that
arch's builtins only (CKGEN_EMU_ARCH_RESTRICT), so the compile also proves availability.
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
from pathlib import Path

import numpy as np
import pytest

from ckgen.backends import emu
from ckgen.errors import BuildError
from ckgen.ir.types import DType
from ckgen.targets import amd, get_target
from tests.reference import mfma_layouts

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "cases" / "mfma_harness.cpp"
ARCHS = ("gfx908", "gfx90a", "gfx942", "gfx950")

pytestmark = pytest.mark.skipif(not any(__import__("shutil").which(c) for c in emu.HOST_CXX_CANDIDATES),
                                reason="no host clang++")


def _instructions(arch: str):
    t = get_target(arch)
    return t, list(t.instructions) + list(amd.XF32_INSTRUCTIONS.get(arch, ()))


def _reference(arch: str, mnemonic: str) -> dict | None:
    for e in mfma_layouts()["instructions"]:
        if e["arch"] == arch and (e["name"] == mnemonic or mnemonic in (e.get("aliases") or [])):
            return e
    return None


CASES = [(arch, i.mnemonic) for arch in ARCHS for i in _instructions(arch)[1] if _reference(arch, i.mnemonic)]
UNCOVERED = [(arch, i.mnemonic) for arch in ARCHS for i in _instructions(arch)[1] if not _reference(arch, i.mnemonic)]


@pytest.fixture(scope="module")
def harness_libs(tmp_path_factory) -> dict[str, emu.EmuLibrary]:
    out = tmp_path_factory.mktemp("mfma")
    jobs = {}
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for arch in ARCHS:
            target, instrs = _instructions(arch)
            inc = out / f"{arch}_cases.inc"
            inc.write_text("".join(f"CKGEN_CASE({b})\n" for b in sorted({i.builtin for i in instrs})))
            jobs[arch] = pool.submit(emu.build_shared, [HARNESS], out / f"libmfma_{arch}.so", target,
                                     [f'-DCKGEN_CASES_INC="{inc}"', "-O1"])
        return {arch: emu.EmuLibrary(f.result()) for arch, f in jobs.items()}


# ---------------------------------------------------------------- element encodings
def _fp8_value(byte: int, bf8: bool, ocp: bool) -> float:
    sign = -1.0 if byte & 0x80 else 1.0
    eb, mb = (5, 2) if bf8 else (4, 3)
    e, m = (byte >> mb) & ((1 << eb) - 1), byte & ((1 << mb) - 1)
    bias = (15 if bf8 else 7) if ocp else (16 if bf8 else 8)
    if not ocp and byte == 0x80:
        return float("nan")
    if ocp and ((bf8 and e == 31) or (not bf8 and e == 15 and m == 7)):
        return float("nan") if m else sign * float("inf")
    mag = m * 2.0 ** (1 - bias - mb) if e == 0 else (m + (1 << mb)) * 2.0 ** (e - bias - mb)
    return sign * mag


def _encode(values: np.ndarray, dt: DType, ocp: bool) -> np.ndarray:
    if dt == DType.F16:
        return values.astype(np.float16)
    if dt == DType.BF16:
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dt == DType.F32:
        return values.astype(np.float32)
    if dt == DType.F64:
        return values.astype(np.float64)
    if dt == DType.I8:
        return values.astype(np.int8)
    table = {}
    for byte in range(256):
        v = _fp8_value(byte, dt == DType.BF8, ocp)
        if np.isfinite(v) and v not in table:
            table[v] = byte
    return np.vectorize(lambda v: table[float(v)])(values).astype(np.uint8)


def _random(rng, shape, dt: DType) -> np.ndarray:
    """Values exact in every input type and whose products and sums are exact in the accumulator."""
    if dt == DType.I8:
        return rng.integers(-128, 128, size=shape).astype(np.float64)
    if dt in (DType.FP8, DType.BF8):
        return rng.choice(np.array([0, .25, .5, .75, 1, 1.25, 1.5, 1.75, 2]), size=shape) * rng.choice([-1, 1], size=shape)
    return rng.integers(-16, 17, size=shape) / 8.0


def _acc_np(dt: DType):
    return {DType.F32: np.float32, DType.I32: np.int32, DType.F64: np.float64}[dt]


@pytest.mark.parametrize(("arch", "mnemonic"), CASES, ids=[f"{a}-{m}" for a, m in CASES])
def test_mfma_matches_reference_layout(harness_libs, arch, mnemonic):
    target, instrs = _instructions(arch)
    ins = next(i for i in instrs if i.mnemonic == mnemonic)
    ref = _reference(arch, mnemonic)
    assert (ref["m"], ref["n"], ref["k"], ref["blocks"]) == (ins.m, ins.n, ins.k, ins.blocks)
    ocp = amd.FEATURE_FP8_OCP in target.features
    lib = harness_libs[arch]
    fn = lib.lib.run_case
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.POINTER(ctypes.c_int)]
    fn.restype = ctypes.c_int
    sizes = (ctypes.c_int * 3)()
    assert fn(ins.builtin.encode(), None, None, None, None, sizes) == 0, f"{ins.builtin} missing from harness"

    rng = np.random.default_rng(abs(hash((arch, mnemonic))) % 2**32)
    nb, m, n, k = ins.blocks, ins.m, ins.n, ins.k
    A = _random(rng, (nb, m, k), ins.a_dtype)
    B = _random(rng, (nb, k, n), ins.b_dtype)
    acc_t = _acc_np(ins.acc_dtype)
    C = (rng.integers(-1000, 1000, size=(nb, m, n)) if ins.acc_dtype == DType.I32
         else rng.integers(-64, 65, size=(nb, m, n)) / 8.0)
    if ins.acc_dtype == DType.I32:
        D = (np.einsum("bik,bkj->bij", A.astype(np.int64), B.astype(np.int64)) + C).astype(np.int32)
    else:
        D = np.einsum("bik,bkj->bij", A, B) + C

    ipa, ipb, ipc = len(ref["a_items"]), len(ref["b_items"]), len(ref["c_items"])
    ea, eb = _encode(A, ins.a_dtype, ocp), _encode(B, ins.b_dtype, ocp)
    a_reg = np.zeros((64, ipa), ea.dtype)
    b_reg = np.zeros((64, ipb), eb.dtype)
    c_reg = np.zeros((64, ipc), acc_t)
    ra, rb, rc = (np.array(ref[x]) for x in ("a", "b", "c"))
    a_reg[ra[:, 3], ra[:, 4]] = ea[ra[:, 2], ra[:, 0], ra[:, 1]]
    b_reg[rb[:, 3], rb[:, 4]] = eb[rb[:, 2], rb[:, 0], rb[:, 1]]
    c_reg[rc[:, 3], rc[:, 4]] = C[rc[:, 2], rc[:, 0], rc[:, 1]].astype(acc_t)
    expect = np.zeros((64, ipc), acc_t)
    expect[rc[:, 3], rc[:, 4]] = D[rc[:, 2], rc[:, 0], rc[:, 1]].astype(acc_t)
    assert [a_reg[0].nbytes, b_reg[0].nbytes, c_reg[0].nbytes] == list(sizes), "operand sizes"

    d_reg = np.full((64, ipc), -12345, acc_t)
    lib.clear_buffers()
    for arr, nm in ((a_reg, "a"), (b_reg, "b"), (c_reg, "c"), (d_reg, "d")):
        lib.register(arr, nm)
    st = fn(ins.builtin.encode(), a_reg.ctypes.data, b_reg.ctypes.data, c_reg.ctypes.data, d_reg.ctypes.data, sizes)
    lib.check_status(st, ins.builtin)
    bad = np.argwhere(d_reg != expect)
    assert bad.size == 0, (f"{arch} {mnemonic}: {len(bad)} of {d_reg.size} D items differ; first lane/item "
                           f"{bad[0].tolist()}: got {d_reg[tuple(bad[0])]}, want {expect[tuple(bad[0])]}")


def test_reference_coverage_recorded():
    """Every gfx908/90a/942 instruction of the table is covered; gfx950 has no reference data."""
    assert len(CASES) >= 79
    assert all(arch == "gfx950" for arch, _ in UNCOVERED), UNCOVERED
    print(f"\nmatched against the reference: {len(CASES)} (arch, instruction) pairs")
    print("not covered by the reference (gfx950):", ", ".join(m for _, m in UNCOVERED))


def test_arch_restriction_rejects_missing_instruction(tmp_path):
    """A kernel using an instruction its arch lacks fails to build, as for the real target."""
    src = tmp_path / "k.cpp"
    src.write_text('#include "ckgen/platform.h"\n'
                   "ckgen::int4_t f(long a, long b, ckgen::int4_t c) {\n"
                   "  return __builtin_amdgcn_mfma_i32_16x16x32_i8(a, b, c, 0, 0, 0);\n}\n")
    emu.build_shared([src], tmp_path / "ok.so", get_target("gfx942"))
    with pytest.raises(BuildError) as ei:
        emu.build_shared([src], tmp_path / "bad.so", get_target("gfx90a"))
    assert "mfma_i32_16x16x32_i8" in ei.value.log
