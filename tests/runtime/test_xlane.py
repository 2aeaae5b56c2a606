"""Cross-lane primitives: the emulated gfx9 builtins against the ISA, the platform's shfl_xor / readlane and
ckgen/blocks/reduce.h on the emulator, and their code on the real chips (rung 1) and under nvcc.

* tests/runtime/cases/xlane_probe.cpp drives __builtin_amdgcn_update_dpp / mov_dpp / ds_swizzle / readlane
  with a table of run-time controls through one emulator build; expected lanes come from ``isa_*`` below,
  written from the ISA's wording (row = 16 lanes, bank = 4 lanes of a row; bound_ctrl; masks), plus a few
  literal rows. Unsupported or non-uniform controls must be emulation faults that name the control.
* tests/runtime/cases/xlane_kernels.hip (every platform): shfl_xor<m> for every mask, the run-time mask,
  readlane, group/wave all-reduce (Sum, Max, a two-float state) for every width, MultiWave over groups of
  1, 2 and 4 waves with repeated calls (LDS ping-pong under the emulator's race detector).
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ckgen.resources import include_flags

CASES = Path(__file__).resolve().parent / "cases"
W = 64
UNDEF = -1  # mov_dpp's undefined old value as the emulator writes it (0xFFFFFFFF)


# ------------------------------------------------------------------------------------------ ISA model
def isa_dpp_source(ctrl: int, lane: int) -> int | None:
    """The lane read by `lane` under dpp_ctrl (GFX9 DPP_CTRL), None when the control names no lane."""
    row, i = lane // 16, lane % 16
    if ctrl <= 0xFF:                                  # quad_perm: 2 bits per lane of the quad
        return lane - lane % 4 + (ctrl >> (2 * (lane % 4))) % 4
    kind, n = ctrl & 0x1F0, ctrl & 0xF
    if kind == 0x100:                                 # row_shl:n  lane i of a row reads lane i + n of the row
        return lane + n if i + n <= 15 else None
    if kind == 0x110:                                 # row_shr:n  reads lane i - n
        return lane - n if i - n >= 0 else None
    if kind == 0x120:                                 # row_ror:n  reads lane (i - n) mod 16
        return 16 * row + (i - n) % 16
    return {0x140: 16 * row + 15 - i,                 # row_mirror
            0x141: 16 * row + 8 * (i // 8) + 7 - i % 8,   # row_half_mirror
            0x142: 16 * row - 1 if row > 0 else None,  # row_bcast:15: lane 15 of the previous row
            0x143: 31 if row >= 2 else None}[ctrl]    # row_bcast:31: lane 31 to rows 2 and 3


def isa_dpp(old, src, ctrl, row_mask, bank_mask, bound_ctrl, lanes=W, has_old=True):
    out = []
    for lane in range(lanes):
        keep = old[lane] if has_old else UNDEF
        if not (row_mask >> (lane // 16)) & 1 or not (bank_mask >> (lane // 4 % 4)) & 1:
            out.append(keep)                          # lane not written
            continue
        s = isa_dpp_source(ctrl, lane)
        if s is None or s >= lanes:                   # invalid source: 0 with bound_ctrl, else not written
            out.append(0 if bound_ctrl else keep)
        else:
            out.append(src[s])
    return out


def isa_swizzle(src, offset, lanes=W):
    out = []
    for lane in range(lanes):
        if offset & 0x8000:                           # QDMode: offset[7:0] is a quad_perm
            s = lane - lane % 4 + (offset >> (2 * (lane % 4))) % 4
        else:                                         # BitMode inside 32 lanes
            a, o, x = offset & 31, (offset >> 5) & 31, (offset >> 10) & 31
            s = (lane & 32) | (((lane & 31) & a) | o) ^ x
        out.append(src[s] if s < lanes else 0)
    return out


def test_isa_model_literal_rows() -> None:
    """The model against rows written out by hand from the ISA text."""
    lanes = list(range(W))
    assert isa_dpp(lanes, lanes, 0xB1, 0xF, 0xF, True)[:8] == [1, 0, 3, 2, 5, 4, 7, 6]          # quad_perm 1,0,3,2
    assert isa_dpp(lanes, lanes, 0x111, 0xF, 0xF, True)[:18] == [0, *range(15), 0, 16]             # row_shr:1, bc
    assert isa_dpp(lanes, lanes, 0x111, 0xF, 0xF, False)[15:18] == [14, 16, 16]                   # old kept
    assert isa_dpp(lanes, lanes, 0x141, 0xF, 0xF, True)[:16] == [*range(7, -1, -1), *range(15, 7, -1)]
    assert isa_dpp(lanes, lanes, 0x143, 0xC, 0xF, False)[30:34] == [30, 31, 31, 31]               # row_bcast:31
    assert isa_swizzle(lanes, 0x1F | (4 << 10))[:8] == [4, 5, 6, 7, 0, 1, 2, 3]                     # xor 4
    assert isa_swizzle(lanes, 0x10)[:4] == [0, 0, 0, 0] and isa_swizzle(lanes, 0x10)[56] == 48     # and 0x10


# ------------------------------------------------------------------------------------------ builds
@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    so = tmp_path_factory.mktemp("xlane") / "xlane.so"
    r = subprocess.run([clang, "-x", "c++", "-std=c++17", "-O1", "-Wno-psabi", "-DCKGEN_PLATFORM_EMU", "-shared",
                        "-fPIC", "-pthread", *include_flags(), f"-I{CASES}", str(CASES / "xlane_probe.cpp"),
                        "-o", str(so)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(so))
    lib.ckgen_emu_last_fault.restype = ctypes.c_char_p
    lib.ckgen_emu_register_buffer.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    assert lib.ckgen_emu_wave_size() == W
    return lib


def register(lib, *arrays):
    lib.ckgen_emu_clear_buffers()
    for i, a in enumerate(arrays):
        lib.ckgen_emu_register_buffer(a.ctypes.data, a.nbytes, f"buf{i}".encode())


def probe(lib, entries, lanes=W, seed=0):
    """Run table entries (kind, a, b, c, d); returns (status, fault, src, out)."""
    table = np.array(entries, dtype=np.int32).reshape(-1, 5)
    src = np.random.default_rng(seed).integers(-2**31, 2**31 - 1, size=(len(table), W), dtype=np.int64).astype(np.int32)
    out = np.full((len(table), W), 0x5A5A5A5A, dtype=np.int32)
    register(lib, table, src, out)
    p = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
    rc = lib.run_probe(p(table), len(table), p(src), p(out), lanes)
    return rc, lib.ckgen_emu_last_fault().decode(), src, out


DPP_CTRLS = [0x00, 0xE4, 0xB1, 0x4E, 0x1B, 0x93, 0x39, 0xFF, 0x101, 0x104, 0x10F, 0x111, 0x113, 0x11F, 0x121, 0x128,
             0x12F, 0x140, 0x141, 0x142, 0x143]
MASKS = [(0xF, 0xF, 1), (0xF, 0xF, 0), (0x5, 0xF, 0), (0xF, 0xA, 1), (0xA, 0x3, 0), (0xC, 0xF, 1)]


@pytest.mark.parametrize("lanes", [W, 40], ids=["wave64", "partial_wave_40"])
def test_dpp_table(emu, lanes) -> None:
    entries = [(kind, c, rm, bm, bc) for c in DPP_CTRLS for (rm, bm, bc) in MASKS for kind in (0, 1)]
    rc, fault, src, out = probe(emu, entries, lanes)
    assert rc == 0, fault
    old = [1000 + lane for lane in range(W)]
    for (kind, c, rm, bm, bc), s, o in zip(entries, src, out, strict=True):
        want = isa_dpp(old, list(s), c, rm, bm, bc, lanes, has_old=kind == 0)
        assert list(o[:lanes]) == want, f"{'update' if kind == 0 else 'mov'}_dpp ctrl {c:#x} rm {rm:#x} bm {bm:#x} bc {bc}"


SWIZZLES = [0x1F | (x << 10) for x in (1, 2, 3, 4, 7, 8, 15, 16, 31)] + \
    [0x10, 0x0F | (16 << 5), 0x1C | (3 << 5), 0x15 | (6 << 5) | (9 << 10), 0x8000 | 0x1B, 0x8000 | 0xB1, 0xFFFF, 0]


@pytest.mark.parametrize("lanes", [W, 40], ids=["wave64", "partial_wave_40"])
def test_swizzle_and_readlane_table(emu, lanes) -> None:
    entries = [(2, off, 0, 0, 0) for off in SWIZZLES] + [(3, ln, 0, 0, 0) for ln in (0, 5, 31, lanes - 1)]
    rc, fault, src, out = probe(emu, entries, lanes)
    assert rc == 0, fault
    for (kind, a, *_), s, o in zip(entries, src, out, strict=True):
        want = isa_swizzle(list(s), a, lanes) if kind == 2 else [s[a]] * lanes
        assert list(o[:lanes]) == want, f"{'ds_swizzle' if kind == 2 else 'readlane'} {a:#x}"


@pytest.mark.parametrize("entry,lanes,message", [
    ((0, 0x130, 0xF, 0xF, 0), W, "dpp_ctrl 0x130 (wave_shl:1) is not emulated"),
    ((1, 0x13C, 0xF, 0xF, 1), W, "dpp_ctrl 0x13c (wave_ror:1) is not emulated"),
    ((0, 0x155, 0xF, 0xF, 0), W, "dpp_ctrl 0x155 (row_newbcast:5) is not emulated"),
    ((0, 0x100, 0xF, 0xF, 0), W, "dpp_ctrl 0x100 (an invalid encoding) is not emulated"),
    ((0, 0x120, 0xF, 0xF, 0), W, "dpp_ctrl 0x120 (an invalid encoding)"),
    ((0, 0xB1, 0x1F, 0xF, 0), W, "row_mask 0x1f / bank_mask 0xf: each is a 4-bit immediate"),
    ((4, 0x101, 0xF, 0xF, 0), W, "the DPP controls are immediates, but lane"),
    ((2, 0x10000, 0, 0, 0), W, "ds_swizzle: offset 0x10000 is not a 16-bit immediate"),
    ((6, 0x10, 0, 0, 0), W, "ds_swizzle: the offset is an immediate"),
    ((5, 3, 0, 0, 0), W, "readlane: the lane index must be the same in every lane"),
    ((3, 50, 0, 0, 0), 40, "readlane: lane 50 does not exist in this wave of 40 lanes"),
    ((3, 64, 0, 0, 0), W, "readlane: lane 64 does not exist"),
], ids=lambda v: v if isinstance(v, int) else None)
def test_unsupported_controls_are_faults(emu, entry, lanes, message) -> None:
    rc, fault, *_ = probe(emu, [entry], lanes)
    assert rc == 6, f"status {rc}, fault {fault!r}"
    assert message in fault, fault
    assert "kernel 'xlane_probe'" in fault


# ------------------------------------------------------------------------------------------ platform API
def test_shfl_xor_every_mask_and_readlane(emu) -> None:
    v = np.arange(W, dtype=np.float32) * 3 + 1
    out = np.zeros((2 * W, W), dtype=np.float32)
    out_i = np.zeros((W - 1, W), dtype=np.int32)
    register(emu, v, out, out_i)
    rc = emu.run_shfl(ctypes.c_void_p(v.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_void_p(out_i.ctypes.data))
    assert rc == 0, emu.ckgen_emu_last_fault().decode()
    lanes = np.arange(W)
    for m in range(1, W):
        assert np.array_equal(out[m - 1], v[lanes ^ m]), f"shfl_xor<{m}> (float)"
        assert np.array_equal(out_i[m - 1], v[lanes ^ m].astype(np.int32)), f"shfl_xor<{m}> (int)"
        assert np.array_equal(out[W - 1 + m - 1], v[lanes ^ m]), f"shfl_xor(v, {m})"
    assert np.all(out[2 * W - 2] == v[5]) and np.all(out[2 * W - 1] == v[W - 1])


def test_reductions(emu) -> None:
    n = 4 * W
    rng = np.random.default_rng(1)
    v = rng.integers(-1000, 1000, size=n).astype(np.float32)    # integer values: every sum is exact
    widths = [1 << k for k in range(7)]
    rows = 2 * len(widths) + 9 + 4
    out = np.full((rows, n), np.nan, dtype=np.float32)
    register(emu, v, out)
    rc = emu.run_reduce(ctypes.c_void_p(v.ctypes.data), ctypes.c_void_p(out.ctypes.data))
    assert rc == 0, emu.ckgen_emu_last_fault().decode()

    def grouped(width, fn, x=v):
        return np.repeat(fn(x.reshape(-1, width), axis=1), width)
    k = 0
    for wd in widths:
        assert np.array_equal(out[k], grouped(wd, np.sum)), f"group_allreduce<{wd}, Sum>"
        assert np.array_equal(out[k + 1], grouped(wd, np.max)), f"group_allreduce<{wd}, Max>"
        k += 2
    for g in (1, 2, 4):
        for fn, x, what in ((np.sum, v, "Sum"), (np.max, v, "Max"), (np.sum, 2 * v, "Sum(2v)")):
            assert np.array_equal(out[k], grouped(g * W, fn, x)), f"MultiWave<4, {g}> {what}"
            k += 1
    assert np.array_equal(out[k], grouped(W, np.sum)) and np.array_equal(out[k + 1], grouped(W, np.max))
    assert np.array_equal(out[k + 2], grouped(n, np.sum)) and np.array_equal(out[k + 3], grouped(n, np.max))


# ------------------------------------------------------------------------------------------ rung 1 and nvcc
XLANE_EXPECT = {  # mnemonic/modifier -> what produces it in xlane_kernels.hip
    "quad_perm:[1,0,3,2]": "shfl_xor<1>, reduce step 1", "quad_perm:[2,3,0,1]": "shfl_xor<2>, reduce step 2",
    "quad_perm:[3,2,1,0]": "shfl_xor<3>", "row_half_mirror": "shfl_xor<7>, reduce step 4",
    "row_mirror": "shfl_xor<15>, reduce step 8", "ds_swizzle_b32": "shfl_xor<4, 5, ..., 31>, reduce step 16",
    "ds_bpermute_b32": "shfl_xor<32..63>, run-time masks", "v_readlane_b32": "readlane, reduce step 32",
}


@pytest.mark.parametrize("arch,major", [("gfx942", 19), ("gfx90a", 19), ("gfx950", 22)])
def test_xlane_code_on_the_chips(tmp_path, arch, major) -> None:
    clang, objdump, readelf = (shutil.which(f"{t}-{major}") for t in ("clang++", "llvm-objdump", "llvm-readelf"))
    assert clang and objdump and readelf, f"clang++-{major} / llvm-objdump-{major} / llvm-readelf-{major} missing"
    obj = tmp_path / "x.o"
    r = subprocess.run([clang, "-x", "hip", f"--offload-arch={arch}", "--offload-device-only", "--no-gpu-bundle-output",
                        "-nogpuinc", "-nogpulib", "-O3", "-std=c++17", *include_flags(), "-c",
                        str(CASES / "xlane_kernels.hip"), "-o", str(obj)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dis = subprocess.run([objdump, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    for want, why in XLANE_EXPECT.items():
        assert want in dis, f"{want} ({why}) missing for {arch}"
    notes = subprocess.run([readelf, "--notes", str(obj)], capture_output=True, text=True, check=True).stdout
    assert re.findall(r"\.private_segment_fixed_size:\s+(\d+)", notes) == ["0", "0"], "scratch"
    assert set(re.findall(r"\.vgpr_spill_count:\s+(\d+)", notes)) == {"0"}


def test_xlane_code_under_nvcc(tmp_path) -> None:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    assert Path(nvcc).exists(), "nvcc missing"
    r = subprocess.run([nvcc, "-std=c++17", "-O3", "-x", "cu", "--expt-relaxed-constexpr", "-Xptxas", "-v",
                        "-gencode=arch=compute_90a,code=sm_90a", *include_flags(), "-ptx",
                        str(CASES / "xlane_kernels.hip"), "-o", str(tmp_path / "x.ptx")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ptx = (tmp_path / "x.ptx").read_text()
    assert "shfl.sync.bfly.b32" in ptx and "shfl.sync.idx.b32" in ptx
