"""attention_rope.h's RopeChunks (the Hopper prefill body rotates Q by 16-byte chunks with it) against RopeBatch (the
pair-by-pair rotation every body used before), on the host (the emulator's platform layer): for both styles and
full and partial rotary dims, every unit of a bf16 / f16 row rotated by chunks gives the same bits as the pairs, and
the table read 16 bytes at a time gives the same values as one float at a time. (The chunks' shared-memory
addressing is the Hopper body's and runs on the GPU: tests/runtime/test_nvidia_rope.py.)"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ckgen.resources import include_flags

PROGRAM = r"""
#include <stdio.h>
#include <cstdint>
#include <cstring>
#include "attention_rope.h"
using namespace ckgen;

alignas(16) static float g_cs[132];  // a table row and 4 floats more (registered with the emulator: read by gload)

template <class T, int kStyle, int kRot>
void check(unsigned seed, int* bad) {
  using R = attn::RopeChunks<kStyle, kRot>;
  static_assert(R::kOk, "a rotary dim that splits into units");
  constexpr int kD = 128, kHalf = kRot / 2;
  alignas(16) T row[kD], pairs[kD];
  float* cs = g_cs;
  unsigned x = seed;
  auto rnd = [&]() { x = x * 1664525u + 1013904223u; return static_cast<float>(x >> 8) / 8388608.0f - 1.0f; };
  for (int d = 0; d < kD; ++d) row[d] = pairs[d] = from_float<T>(4.0f * rnd());
  for (int i = 0; i < kRot + 4; ++i) cs[i] = rnd();
  // the pairs: RopeBatch over one row (one thread, every pair in batches of 8)
  using B = attn::RopeBatch<kStyle, kRot, kHalf, 1, 8>;
  for (int i0 = 0; i0 < kHalf; i0 += B::kStep) {
    B b;
    b.read(i0, [&](int, const float*& c) { c = cs; return true; });
    b.apply(i0, [&](int, int col) { return to_float(pairs[col]); },
            [&](int, int col, float v) { pairs[col] = from_float<T>(v); });
  }
  // the chunks, the table read wide and narrow
  for (int u = 0; u < R::kUnits; ++u) {
    float c[R::kPairs], s[R::kPairs], c1[R::kPairs], s1[R::kPairs];
    R::read(cs, u, c, s, true);
    R::read(cs, u, c1, s1, false);
    if (memcmp(c, c1, sizeof c) || memcmp(s, s1, sizeof s)) { printf("read %d\n", u); ++*bad; }
    uint32_t xw[4], yw[4];
    memcpy(xw, row + R::x_col(u), 16);
    if (R::kNeox) memcpy(yw, row + R::y_col(u), 16);
    R::template rotate<T>(xw, yw, c, s);
    memcpy(row + R::x_col(u), xw, 16);
    if (R::kNeox) memcpy(row + R::y_col(u), yw, 16);
  }
  if (memcmp(row, pairs, sizeof row)) { printf("rotate style %d rot %d\n", kStyle, kRot); ++*bad; }
}

void checks(int* bad) {  // (a kernel: the emulator's loads run inside a launch; one thread checks)
  if (thread_id() != 0) return;
  check<bf16, attn::kRopeNeox, 128>(1, bad);
  check<bf16, attn::kRopeNeox, 64>(2, bad);
  check<f16, attn::kRopeNeox, 16>(3, bad);
  check<bf16, attn::kRopeGptj, 128>(4, bad);
  check<f16, attn::kRopeGptj, 48>(5, bad);
  check<bf16, attn::kRopeGptj, 8>(6, bad);
}

int main() {
  static int bad = 0;
  ckgen_emu_register_buffer(&bad, sizeof bad, "bad");
  ckgen_emu_register_buffer(g_cs, sizeof g_cs, "cos_sin");
  const int rc = CKGEN_LAUNCH(checks, 1, 1, 1, CKGEN_EMU_WAVE_SIZE, 0, nullptr, &bad);
  printf("rc %d bad %d\n", rc, bad);
  return rc != 0 || bad != 0;
}
"""


def test_chunks_rotate_as_the_pairs(tmp_path):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++")
    (tmp_path / "r.cpp").write_text(PROGRAM)
    build = subprocess.run([clang, "-std=c++17", "-O1", "-Wall", "-Werror", "-DCKGEN_PLATFORM_EMU", *include_flags(),
                            str(tmp_path / "r.cpp"), "-o", str(tmp_path / "r")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    out = subprocess.run([str(tmp_path / "r")], capture_output=True, text=True)
    assert out.returncode == 0 and "bad 0" in out.stdout, out.stdout
