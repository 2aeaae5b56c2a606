"""ckgen::blk::SwizzledTile (blocks/lds_layout.h) is the C++ twin of LdsOperandLayout.offset (ckgen/lower/lds.py):
a host program prints every offset of planned tiles and the header's xor_step identity; both must match."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ckgen.frontend import load_text
from ckgen.lower.pipeline import plan_kernel
from ckgen.resources import include_flags

CONFIGS = [("gfx942", "A = f16 row B = f16 row C = f16 row tile = 128x64x32 waves = 2x2"),
           ("gfx942", "A = i8 col B = i8 col C = i32 row tile = 64x128x64 waves = 2x2"),
           ("gfx90a", "A = f32 col B = f32 row C = f32 row tile = 64x64x16 waves = 2x2 instr = 16x16x4"),
           ("gfx950", "A = bf16 row B = bf16 col C = f32 row tile = 128x128x64 waves = 2x2")]

PROGRAM = r"""
#include <stdio.h>
#include "ckgen/blocks/lds_layout.h"
template <int R, int TK, int G, int N, unsigned long long T>
void dump(const char* tag) {
  using L = ckgen::blk::SwizzledTile<R, TK, G, N, T>;
  for (int r = 0; r < R; ++r) for (int k = 0; k < TK; ++k) printf("%s %d %d %d\n", tag, r, k, L::offset(r, k));
  // offset(r + dr, k + dk) == offset(r, k) ^ xor_step(dr, dk) for power-of-two steps above r's and k's bits
  int bad = 0;
  for (int dr = 16; dr < R; dr *= 2) for (int r = 0; r < 16; ++r) for (int k = 0; k < TK; ++k)
    bad += L::offset(r + dr, k) != (L::offset(r, k) ^ L::xor_step(dr, 0));
  for (int dk = G; dk < TK; dk *= 2) for (int r = 0; r < R; ++r) for (int k = 0; k < dk; ++k)
    bad += L::offset(r, k + dk) != (L::offset(r, k) ^ L::xor_step(0, dk));
  printf("%s bad %d\n", tag, bad);
}
int main() {
%BODY%
  return 0;
}
"""


def _layouts():
    out = []
    for arch, body in CONFIGS:
        plan = plan_kernel(load_text(f"target {arch}\nkernel k {{ {body} }}\n", "t.ck")[0], arch)
        out += [plan.body.lds.a, plan.body.lds.b]
    return out


def test_header_matches_python(tmp_path):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++")
    lays = _layouts()
    assert any(any(lay.table) for lay in lays) and any(not lay.mn_lanes == 1 for lay in lays)
    body = "\n".join(f'  dump<{x.rows}, {x.tile_k}, {x.granule}, {x.low_bits}, {x.packed_table:#x}ull>("t{i}");'
                     for i, x in enumerate(lays))
    (tmp_path / "l.cpp").write_text(PROGRAM.replace("%BODY%", body))
    subprocess.run([clang, "-std=c++17", "-O1", *include_flags(), str(tmp_path / "l.cpp"), "-o", str(tmp_path / "l")],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(tmp_path / "l")], check=True, capture_output=True, text=True).stdout
    got: dict[str, dict] = {}
    for line in out.splitlines():
        tag, *v = line.split()
        if v[0] == "bad":
            assert v[1] == "0", f"{tag}: xor_step identity broken"
            continue
        got.setdefault(tag, {})[(int(v[0]), int(v[1]))] = int(v[2])
    for i, lay in enumerate(lays):
        want = {(r, k): lay.offset(r, k) for r in range(lay.rows) for k in range(lay.tile_k)}
        assert got[f"t{i}"] == want, f"layout {i} ({lay}) differs"
