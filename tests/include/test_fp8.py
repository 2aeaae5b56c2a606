"""ckgen/blocks/fp8.h: the four fp8 encodings against the float64 reference of tests/include/fp8_ref.py.

Rung 2 (the emulator platform: host clang++ with the emu defines of gfx942 and of gfx950): every one of the 256
codes of each format decodes to the reference value (bit-exact, NaN codes to NaN, e5m2's infinities to inf), every
finite code survives from_float(to_float(code)), and from_float gives the reference code for ~9000 floats: ties
between neighbours (both parities), subnormals and the halfway points below the smallest one, values past the
largest finite one (saturation), +-inf, NaNs, -0, random bit patterns and scaled normals. The reference's table
facts (maxima, smallest subnormals) are checked against the published figures.

Rung 1: a kernel converting every format both ways, compiled for gfx942 (FNUZ native) and gfx950 (OCP native) with
the target's define from ckgen.targets.device_defines: the native encodings use v_cvt_pk_{fp8,bf8}_f32 and
v_cvt_f32_{fp8,bf8}; nvcc builds the same kernel for sm_90 (cuda_fp8.h for the OCP types).
"""

from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pytest

from ckgen.backends.emu import emu_defines
from ckgen.resources import include_flags
from ckgen.targets import device_defines, get_target
from tests.include import fp8_ref

FORMATS = ("e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz")

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "ckgen/platform.h"
#include "ckgen/blocks/fp8.h"
using namespace ckgen;
template <class T> static void table() {
  for (unsigned c = 0; c < 256; ++c) {
    const float f = to_float(fp8_from_bits<T>(c));
    printf("%08x %02x ", float_bits(f), fp8_bits(from_float<T>(f)));
  }
  printf("\n");
}
int main() {
  table<fp8_e4m3fn>(); table<fp8_e5m2>(); table<fp8_e4m3fnuz>(); table<fp8_e5m2fnuz>();
  unsigned u;
  while (scanf("%x", &u) == 1) {
    const float f = bits_float(u);
    printf("%02x %02x %02x %02x\n", fp8_bits(from_float<fp8_e4m3fn>(f)), fp8_bits(from_float<fp8_e5m2>(f)),
           fp8_bits(from_float<fp8_e4m3fnuz>(f)), fp8_bits(from_float<fp8_e5m2fnuz>(f)));
  }
  return 0;
}
"""

KERNEL = r"""
#include "ckgen/platform.h"
#include "ckgen/blocks/fp8.h"
using namespace ckgen;
template <class T> CKGEN_DEVICE float round_trip(float x) { return to_float(from_float<T>(x)); }
CKGEN_GLOBAL void fp8_cvt(const float* x, float* y) {
  const float v = x[thread_id()];
  y[thread_id()] = round_trip<fp8_e4m3fn>(v) + round_trip<fp8_e5m2>(v) * 2.0f + round_trip<fp8_e4m3fnuz>(v) * 3.0f +
                   round_trip<fp8_e5m2fnuz>(v) * 4.0f;
}
"""


def _clang(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing (tools/install.sh installs it)")
    return path


def _inputs() -> np.ndarray:
    """float32 values (as float64) probing every rounding case of every format."""
    rng = np.random.default_rng(26)
    xs = [0.0, -0.0, math.inf, -math.inf, 1.0, -1.0, 1e-30, -1e-30, 3.4e38, -3.4e38, 1e-45, -1e-45]
    for fmt in FORMATS:
        vals = fp8_ref.decode(fmt)
        fin = np.sort(np.unique(np.abs(vals[np.isfinite(vals)])))
        mids = (fin[1:] + fin[:-1]) / 2                       # exact ties between neighbours
        ulp = np.spacing(mids.astype(np.float32)).astype(np.float64)
        mx, sub = fp8_ref.MAX[fmt], fp8_ref.MIN_SUBNORMAL[fmt]
        xs += [*fin, *mids, *(mids + ulp), *(mids - ulp), *-mids, *(fin * 1.0000001)]
        xs += [sub / 2, sub / 2 * (1 + 2 ** -20), sub / 2 * (1 - 2 ** -20), sub * 1.5, sub * 0.25, -sub / 2,
               mx, mx * 1.03, mx * 1.0625, mx * 1.2, mx * 4, -mx * 1.2, mx * 2 ** 20]
    xs += list(rng.normal(0, 1, 1500) * 2.0 ** rng.integers(-20, 20, 1500))
    bits = rng.integers(0, 2 ** 32, 3000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([np.asarray(xs, dtype=np.float32), bits.view(np.float32),
                        np.array([np.nan, -np.nan], dtype=np.float32),
                        np.array([0x7FC00001, 0xFF800001, 0x7F800001], dtype=np.uint32).view(np.float32)])
    return x


@pytest.fixture(scope="module", params=["gfx942", "gfx950"])
def emu_program(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"fp8_{request.param}")
    (d / "t.cpp").write_text(PROGRAM)
    subprocess.run([_clang("clang++-19"), "-std=c++17", "-O2", "-pthread", "-Wall", "-Werror", "-Wno-psabi",
                    *include_flags(), *emu_defines(get_target(request.param)), str(d / "t.cpp"), "-o", str(d / "t")],
                   check=True, capture_output=True, text=True)
    x = _inputs()
    inp = "\n".join(f"{int(b):08x}" for b in x.view(np.uint32)) + "\n"
    out = subprocess.run([str(d / "t")], input=inp, check=True, capture_output=True, text=True).stdout.splitlines()
    return x, out[:4], [line.split() for line in out[4:]]


def test_reference_table_facts() -> None:
    for fmt in FORMATS:
        v = fp8_ref.decode(fmt)
        fin = v[np.isfinite(v)]
        assert fin.max() == fp8_ref.MAX[fmt] and fin.min() == -fp8_ref.MAX[fmt]
        assert np.abs(fin[fin != 0]).min() == fp8_ref.MIN_SUBNORMAL[fmt]
        nan_codes = [c for c in range(256) if math.isnan(v[c])]
        if fmt.endswith("fnuz"):
            assert nan_codes == [0x80] and not np.isinf(v).any()
        elif fmt == "e4m3fn":
            assert nan_codes == [0x7F, 0xFF] and not np.isinf(v).any() and math.copysign(1, v[0x80]) < 0
        else:
            assert len(nan_codes) == 6 and v[0x7C] == math.inf and v[0xFC] == -math.inf


@pytest.mark.parametrize("k", range(4), ids=FORMATS)
def test_all_codes_decode_and_round_trip(emu_program, k) -> None:
    fmt = FORMATS[k]
    words = emu_program[1][k].split()
    got_bits = np.array([int(w, 16) for w in words[0::2]], dtype=np.uint32)
    back = np.array([int(w, 16) for w in words[1::2]])
    got = got_bits.view(np.float32).astype(np.float64)
    ref = fp8_ref.decode(fmt)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], ref[~nan])
    assert np.array_equal(np.signbit(got[~nan]), np.signbit(ref[~nan]))   # -0 (OCP) stays -0
    codes, fin = np.arange(256), np.isfinite(ref)
    assert np.array_equal(back[fin], codes[fin]), "from_float(to_float(code)) != code"
    assert (back[nan] == fp8_ref.NAN_CODE[fmt]).all()
    assert (back[np.isinf(ref)] == fp8_ref.encode(fmt, ref[np.isinf(ref)])).all()   # inf saturates


@pytest.mark.parametrize("k", range(4), ids=FORMATS)
def test_from_float_matches_reference(emu_program, k) -> None:
    x, _, rows = emu_program
    fmt = FORMATS[k]
    got = np.array([int(r[k], 16) for r in rows], dtype=np.uint8)
    with np.errstate(invalid="ignore"):
        want = fp8_ref.encode(fmt, x.astype(np.float64))
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(x.view(np.uint32)[i]), hex(got[i]), hex(want[i])) for i in bad[:8]]
    # saturation and the FNUZ zero, spelled out
    mx = fp8_ref.encode(fmt, np.array([fp8_ref.MAX[fmt]]))[0]
    assert (got[np.isinf(x) & (x > 0)] == mx).all() and (got[np.isinf(x) & (x < 0)] == (mx | 0x80)).all()
    if fmt.endswith("fnuz"):
        assert (got[(x == 0)] == 0).all()


@pytest.mark.parametrize(("arch", "clang"), [("gfx942", "clang++-19"), ("gfx950", "clang++-22")])
def test_amd_native_conversions(tmp_path, arch, clang) -> None:
    (tmp_path / "k.hip").write_text(KERNEL)
    defines = [f"-D{d}" for d in device_defines(get_target(arch))]
    asm = subprocess.run([_clang(clang), "-x", "hip", f"--offload-arch={arch}", "-nogpuinc", "-nogpulib",
                          "--offload-device-only", "-O2", "-std=c++17", *include_flags(), *defines, "-S", "-o", "-",
                          str(tmp_path / "k.hip")], check=True, capture_output=True, text=True).stdout
    for mnemonic in ("v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32", "v_cvt_f32_fp8", "v_cvt_f32_bf8"):
        assert mnemonic in asm, f"{arch}: no {mnemonic}"
    assert ".private_segment_fixed_size: 0" in asm


def test_device_defines_follow_the_table() -> None:
    assert device_defines(get_target("gfx942")) == ("CKGEN_FP8_NATIVE_FNUZ",)
    assert device_defines(get_target("gfx950")) == ("CKGEN_FP8_NATIVE_OCP",)
    assert device_defines(get_target("sm_90")) == ("CKGEN_FP8_NATIVE_OCP",)
    assert device_defines(get_target("gfx90a")) == ()


def test_nvcc_builds_conversions(tmp_path) -> None:
    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    (tmp_path / "k.cu").write_text(KERNEL)
    subprocess.run([nvcc, "-std=c++17", "-O2", "-arch=sm_90a", *include_flags(), "-c", str(tmp_path / "k.cu"),
                    "-o", str(tmp_path / "k.o")], check=True, capture_output=True, text=True)
