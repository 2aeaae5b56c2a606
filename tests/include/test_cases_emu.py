"""Ladder rung 2 for the hand-written cases: run each on the CPU emulator (platform_emu.h, the same
kernel body) and compare with a float64 numpy reference.

Inputs are random (never zero); C is poisoned (0xFF bytes: NaN for floats, -1 for ints) before each
run, and C's leading-dimension padding must still hold the poison afterwards. Buffers are registered
with the emulator at their exact logical extent, so any read or write outside A, B, C or bias is an
emulation fault. Shapes: 1x1x1, K = 0, edge tiles with K tails, several tiles with padded (aligned)
leading dimensions, and odd leading dimensions (unaligned: the per-element path).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from ckgen.ops.gemm.reference import activation
from ckgen.resources import include_flags
from tests.include.test_cases_compile import ALL_CASES, INCLUDE, Case

HERE = Path(__file__).resolve().parent
EMU_HEADER = INCLUDE / "ckgen" / "platform_emu.h"

NP = {"ckgen::f16": np.float16, "ckgen::bf16": np.uint16, "float": np.float32, "::int8_t": np.int8,
      "::int32_t": np.int32}
TOL = {"ckgen::f16": 3e-3, "ckgen::bf16": 2e-2, "float": 1e-5}


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def to_f64(a: np.ndarray, cpp: str) -> np.ndarray:
    return bf16_to_f64(a) if cpp == "ckgen::bf16" else a.astype(np.float64)


def random_elems(rng, cpp: str, shape) -> np.ndarray:
    if cpp == "::int8_t":
        v = rng.integers(-128, 128, size=shape)
        v[v == 0] = 1
        return v.astype(np.int8)
    if cpp == "::int32_t":
        return rng.integers(-1000, 1000, size=shape).astype(np.int32)
    x = rng.uniform(0.25, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return f64_to_bf16(x) if cpp == "ckgen::bf16" else x.astype(NP[cpp])


def epilogue_ops(case: Case) -> list[str]:
    import re
    text = case.path.read_text()
    m = re.search(r"Chain<([^>]*)>", text)
    return [s.strip().split("::")[-1] for s in m.group(1).split(",") if s.strip()]


def emu_build(case: Case, out: Path) -> Path:
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    so = out / f"{case.name}.emu.so"
    cmd = [clang, "-x", "c++", "-std=c++17", "-O1", "-Wno-psabi", "-DCKGEN_PLATFORM_EMU",
           f'-DCASE_FILE="{case.path}"', f"-DCASE={case.name}", "-shared", "-fPIC", "-pthread",
           *include_flags(), str(HERE / "emu" / "driver.cpp"), "-o", str(so)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return so


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    if not EMU_HEADER.exists():
        pytest.skip("ckgen/platform_emu.h (the emulator) has not landed")
    if not (shutil.which("clang++-19") or shutil.which("clang++")):
        pytest.skip("clang++ missing")
    out = tmp_path_factory.mktemp("emu")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futs = {c.name: pool.submit(emu_build, c, out) for c in ALL_CASES}
        res = {}
        for name, f in futs.items():
            try:
                res[name] = ctypes.CDLL(str(f.result()))
            except RuntimeError as e:
                res[name] = e
        return res


def shapes_for(case: Case) -> list[tuple[int, int, int, str]]:
    tm, tn, tk = case.const("kTileM"), case.const("kTileN"), case.const("kTileK")
    return [(1, 1, 1, "tight"), (tm + 3, tn - 5, tk + 7, "tight"), (33, 17, 0, "tight"),
            (2 * tm + 1, tn + 9, 3 * tk + 5, "odd"), (2 * tm, 2 * tn, 2 * tk, "pad8"), (tm - 1, 2 * tn + 3, tk - 1, "pad8")]


def ld_for(rows: int, cols: int, mode: str) -> int:
    """Leading dimension of a matrix with `cols` contiguous elements per line."""
    base = max(cols, 1)
    return base if mode == "tight" else base + 8 if mode == "pad8" else base + 3


class Mat:
    """A rows x cols matrix in a flat buffer, row-major (lines = rows) or col-major (lines = cols)."""

    def __init__(self, data: np.ndarray, rows: int, cols: int, row_major: bool, mode: str, poison: bool, rng, cpp):
        self.rows, self.cols, self.row_major = rows, cols, row_major
        lines, per = (rows, cols) if row_major else (cols, rows)
        self.ld = ld_for(lines, per, mode)
        self.extent = (lines - 1) * self.ld + per if lines and per else 0
        self.buf = np.empty(max(lines * self.ld, 1), dtype=NP[cpp])
        if poison:
            self.buf.view(np.uint8)[:] = 0xFF
        else:
            self.buf[:] = random_elems(rng, cpp, self.buf.shape)
        if data is not None:
            self.view()[:] = data

    def view(self) -> np.ndarray:
        lines, per = (self.rows, self.cols) if self.row_major else (self.cols, self.rows)
        v = self.buf[: lines * self.ld].reshape(lines, self.ld)[:, :per]
        return v if self.row_major else v.T

    def pad_mask(self) -> np.ndarray:
        m = np.ones(self.buf.shape, dtype=bool)
        lines, per = (self.rows, self.cols) if self.row_major else (self.cols, self.rows)
        m[: lines * self.ld].reshape(lines, self.ld)[:, :per] = False
        return m


PARAMS = [(c, s) for c in ALL_CASES for s in shapes_for(c)]


@pytest.mark.parametrize("case,shape", PARAMS, ids=[f"{c.name}-{s[0]}x{s[1]}x{s[2]}-{s[3]}" for c, s in PARAMS])
def test_case_numerics_on_emulator(libs, case: Case, shape) -> None:
    lib = libs[case.name]
    if isinstance(lib, Exception):
        pytest.fail(f"emulator build of {case.name} failed:\n{lib}")
    M, N, K, mode = shape
    ta, tb, tc = case.consts["TA"], case.consts["TB"], case.consts["TC"]
    tbias = case.consts.get("TBias", tc)
    alpha, beta = float(case.consts["kAlpha"].rstrip("f")), float(case.consts["kBeta"].rstrip("f"))
    ops = epilogue_ops(case)
    rng = np.random.default_rng(M * 1000003 + N * 1009 + K)
    A = Mat(random_elems(rng, ta, (M, K)), M, K, case.consts["kARowMajor"] == "true", mode, False, rng, ta)
    B = Mat(random_elems(rng, tb, (K, N)), K, N, case.consts["kBRowMajor"] == "true", mode, False, rng, tb)
    C = Mat(None, M, N, case.consts["kCRowMajor"] == "true", mode, beta == 0.0, rng, tc)
    c_old = C.view().copy()
    if beta != 0.0:  # keep the padding poisoned even when C is read
        keep = C.buf.copy()
        C.buf.view(np.uint8)[:] = 0xFF
        C.buf[~C.pad_mask()] = keep[~C.pad_mask()]
    before = C.buf.copy()
    bias = None
    if "BiasRow" in ops or "BiasCol" in ops:
        bias = random_elems(rng, tbias, (M if "BiasRow" in ops else N,))

    lib.ckgen_emu_clear_buffers()
    esz = {k: np.dtype(v).itemsize for k, v in NP.items()}
    for name, arr, n, cpp in (("A", A.buf, A.extent, ta), ("B", B.buf, B.extent, tb), ("C", C.buf, C.extent, tc)):
        lib.ckgen_emu_register_buffer(ctypes.c_void_p(arr.ctypes.data), ctypes.c_size_t(n * esz[cpp]), name.encode())
    if bias is not None:
        lib.ckgen_emu_register_buffer(ctypes.c_void_p(bias.ctypes.data), ctypes.c_size_t(bias.nbytes), b"bias")
    lib.ckgen_emu_last_fault.restype = ctypes.c_char_p
    p = lambda a: ctypes.c_void_p(a.ctypes.data) if a is not None else ctypes.c_void_p(0)  # noqa: E731
    rc = lib.run_case(p(A.buf), p(B.buf), p(C.buf), p(bias), M, N, K, ctypes.c_longlong(A.ld),
                      ctypes.c_longlong(B.ld), ctypes.c_longlong(C.ld))
    fault = lib.ckgen_emu_last_fault().decode()
    lib.ckgen_emu_clear_buffers()
    assert rc == 0, f"emulator status {rc}: {fault}"

    # float64 reference
    acc = to_f64(A.view(), ta) @ to_f64(B.view(), tb) if K else np.zeros((M, N))
    ref = alpha * acc + (beta * to_f64(c_old, tc) if beta != 0.0 else 0.0)
    for op in ops:
        if op == "BiasRow":
            ref = ref + to_f64(bias, tbias)[:, None]
        elif op == "BiasCol":
            ref = ref + to_f64(bias, tbias)[None, :]
        else:
            ref = activation(op.lower(), ref)
    got = C.view()
    assert np.array_equal(C.buf[C.pad_mask()].view(np.uint8), before[C.pad_mask()].view(np.uint8)), \
        "C padding written"
    if tc in ("::int8_t", "::int32_t"):
        lo, hi = (-128, 127) if tc == "::int8_t" else (-2**31, 2**31 - 1)
        want = np.clip(np.rint(ref), lo, hi).astype(np.int64)
        assert np.array_equal(got.astype(np.int64), want), f"{np.count_nonzero(got != want)} of {got.size} differ"
        return
    g = to_f64(got, tc)
    assert np.all(np.isfinite(g)), f"{np.count_nonzero(~np.isfinite(g))} unwritten/NaN elements"
    nref = np.linalg.norm(ref)
    err = np.linalg.norm(g - ref) / nref if nref > 0 else np.abs(g).max()
    assert err <= TOL[tc], f"relative error {err:.3e} > {TOL[tc]}"
