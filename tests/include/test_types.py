"""types.h conversions on the host (the same code runs on amdgcn and in the emulator).

bf16: from_float must equal round-to-nearest-even of the float32 bit pattern (computed here with
numpy integer arithmetic), keep NaN a NaN and inf an inf; to_float must be exact. int8/int32:
round to nearest even, saturate, NaN -> 0. f16: matches numpy's float32 -> float16 cast. pack2<T>(lo, hi): the
two from_float results in one word, lo in bits 0..15 (the host path; NVIDIA devices use cvt.rn.*x2, which the GPU
tests check through every 16-bit GEMM, row-op and attention output).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ckgen.resources import include_flags

PROGRAM = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "ckgen/types.h"
int main() {
  uint32_t u;
  while (scanf("%x", &u) == 1) {
    float f; memcpy(&f, &u, 4);
    ckgen::bf16 b = ckgen::from_float<ckgen::bf16>(f);
    float back = ckgen::to_float(b); uint32_t ub; memcpy(&ub, &back, 4);
    ckgen::f16 h = ckgen::from_float<ckgen::f16>(f); uint16_t uh; memcpy(&uh, &h, 2);
    printf("%04x %08x %04x %d %d %08x %08x\n", b.bits, ub, uh, (int)ckgen::from_float< ::int8_t>(f),
           (int)ckgen::from_float< ::int32_t>(f), ckgen::pack2<ckgen::bf16>(f, 1.5f),
           ckgen::pack2<ckgen::f16>(-2.0f, f));
  }
  printf("sat %d %d %d %d\n", (int)ckgen::saturate_int< ::int8_t>(300), (int)ckgen::saturate_int< ::int8_t>(-300),
         (int)ckgen::saturate_int< ::int32_t>(1LL << 40), (int)ckgen::saturate_int< ::int32_t>(-(1LL << 40)));
  return 0;
}
"""


@pytest.fixture(scope="module")
def converter(tmp_path_factory):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("clang++ missing")
    d = tmp_path_factory.mktemp("types")
    (d / "t.cpp").write_text(PROGRAM)
    subprocess.run([clang, "-std=c++17", "-O2", "-Wall", "-Werror", *include_flags(), str(d / "t.cpp"),
                    "-o", str(d / "t")], check=True, capture_output=True, text=True)

    def run(bits: np.ndarray) -> tuple[list[list[str]], list[str]]:
        inp = "\n".join(f"{int(b):08x}" for b in bits) + "\n"
        out = subprocess.run([str(d / "t")], input=inp, check=True, capture_output=True, text=True).stdout
        lines = [ln.split() for ln in out.splitlines()]
        return lines[:-1], lines[-1]
    return run


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(7)
    special = np.array([0x00000000, 0x80000000, 0x3f800000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001,
                        0x7f800001, 0x3f808000, 0x3f818000, 0x3f80c000, 0x7f7fffff, 0x00000001, 0x807fffff,
                        0x42fe0000, 0x43000000, 0xc3010000, 0x4effffff, 0x4f000000, 0xcf000000, 0xcf000001,
                        0x3f000000, 0x3fc00000, 0x40200000, 0xbf000000], dtype=np.uint32)
    rand = rng.integers(0, 2**32, size=3000, dtype=np.uint64).astype(np.uint32)
    small = rng.normal(0, 200, size=1000).astype(np.float32).view(np.uint32)
    halves = (rng.integers(-600, 600, size=200) / 2).astype(np.float32).view(np.uint32)  # .5 ties
    return np.concatenate([special, rand, small, halves])


def test_conversions(converter) -> None:
    bits = _inputs()
    rows, sat = converter(bits)
    assert len(rows) == len(bits)
    f = bits.view(np.float32)
    nan = np.isnan(f)
    # reference bf16: round to nearest even on the bit pattern
    rne = ((bits.astype(np.uint64) + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    with np.errstate(over="ignore", invalid="ignore"):
        h_ref = f.astype(np.float16).view(np.uint16)
        r = np.rint(f.astype(np.float64))
        i8_ref = np.where(nan, 0, np.clip(np.nan_to_num(r), -128, 127)).astype(np.int64)
        i32_ref = np.where(nan, 0, np.clip(np.nan_to_num(r, posinf=2**31, neginf=-2**31), -2**31, 2**31 - 1))
    for n, (b, back, h, i8, i32, pb, ph) in enumerate(rows):
        bb = int(b, 16)
        assert int(pb, 16) == (0x3FC0 << 16 | bb), f"pack2<bf16>({f[n]!r}, 1.5) = {pb}"  # bf16(1.5) = 0x3fc0
        assert int(ph, 16) == (int(h, 16) << 16 | 0xC000), f"pack2<f16>(-2, {f[n]!r}) = {ph}"  # f16(-2) = 0xc000
        if nan[n]:
            assert (bb & 0x7F80) == 0x7F80 and (bb & 0x7F) != 0, f"NaN lost: {bits[n]:08x} -> {bb:04x}"
            assert (bb >> 15) == (int(bits[n]) >> 31)
            assert (int(h, 16) & 0x7C00) == 0x7C00 and (int(h, 16) & 0x3FF) != 0
        else:
            assert bb == int(rne[n]), f"bf16({bits[n]:08x}) = {bb:04x}, want {int(rne[n]):04x}"
            assert int(h, 16) == int(h_ref[n]), f"f16({f[n]!r})"
        assert int(back, 16) == bb << 16, "to_float(bf16) must be exact"
        assert int(i8) == int(i8_ref[n]), f"int8({f[n]!r})"
        assert int(i32) == int(i32_ref[n]), f"int32({f[n]!r})"
    assert sat == ["sat", "127", "-128", "2147483647", "-2147483648"]


def test_types_header_compiles_with_nvcc(tmp_path: Path) -> None:
    """types.h is shared with the NVIDIA backend: it must build under nvcc (no ext_vector_type there)."""
    nvcc = shutil.which("nvcc") or (Path("/usr/local/bin/nvcc") if Path("/usr/local/bin/nvcc").exists() else None)
    if nvcc is None:
        pytest.skip("nvcc not installed")
    src = tmp_path / "t.cu"
    src.write_text(r"""
#include "ckgen/types.h"
__global__ void k(float* o, const ckgen::bf16* b, const ckgen::f16* h) {
  o[0] = ckgen::to_float(b[0]) + ckgen::to_float(h[0]);
  o[1] = ckgen::to_float(ckgen::from_float<ckgen::bf16>(o[2]));
  o[3] = (float)ckgen::from_float< ::int8_t>(o[4]) + (float)ckgen::saturate_int< ::int32_t>(7LL);
  ckgen::vec<ckgen::f16, 8> v = *reinterpret_cast<const ckgen::vec<ckgen::f16, 8>*>(h);
  o[5] = ckgen::to_float(v.v[3]);
  reinterpret_cast<uint32_t*>(o)[6] = ckgen::pack2<ckgen::bf16>(o[7], o[8]) ^ ckgen::pack2<ckgen::f16>(o[9], o[10]);
}
""")
    r = subprocess.run([str(nvcc), "-arch=sm_90", *include_flags(), "-c", str(src), "-o", str(tmp_path / "t.o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
