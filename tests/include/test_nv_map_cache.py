"""blocks/nv_map_cache.h (the tensor maps a host thread encoded last, reused by encode_sw128): a host program checks
that a key matches only itself (every field, the unused dims past the rank ignored), that find copies the kept map,
and that the oldest entry goes first once the cache is full."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ckgen.resources import include_flags

PROGRAM = r"""
#include <stdio.h>
#include <cstdint>
#include "ckgen/blocks/nv_map_cache.h"
using ckgen::nv::MapKey;
struct Map { unsigned long long v[16]; };
static int bad = 0;
#define CHECK(c) do { if (!(c)) { printf("failed: %s (line %d)\n", #c, __LINE__); ++bad; } } while (0)
static MapKey key(const void* base, int rank, std::uint64_t d0, std::uint64_t s0, unsigned b0, int eb) {
  std::uint64_t dims[5] = {d0, 64, 3, 9, 9}, strides[4] = {s0, 4096, 7, 7};
  std::uint32_t box[5] = {b0, 64, 1, 5, 5};
  return MapKey::of(base, rank, dims, strides, box, eb);
}
int main() {
  static char buf[64];
  const MapKey k = key(buf, 3, 128, 256, 64, 2);
  CHECK(k == key(buf, 3, 128, 256, 64, 2));
  CHECK(!(k == key(buf + 16, 3, 128, 256, 64, 2)));  // base
  CHECK(!(k == key(buf, 2, 128, 256, 64, 2)));       // rank
  CHECK(!(k == key(buf, 3, 129, 256, 64, 2)));       // a dim
  CHECK(!(k == key(buf, 3, 128, 272, 64, 2)));       // a stride
  CHECK(!(k == key(buf, 3, 128, 256, 32, 2)));       // a box
  CHECK(!(k == key(buf, 3, 128, 256, 64, 1)));       // element bytes
  {  // what lies past the rank is not part of the key
    std::uint64_t d1[5] = {128, 64, 3, 1, 2}, d2[5] = {128, 64, 3, 8, 8}, s1[4] = {256, 4096, 1, 1}, s2[4] = {256, 4096, 3, 3};
    std::uint32_t b1[5] = {64, 64, 1, 1, 1}, b2[5] = {64, 64, 1, 9, 9};
    CHECK(MapKey::of(buf, 3, d1, s1, b1, 2) == MapKey::of(buf, 3, d2, s2, b2, 2));
  }
  ckgen::nv::MapCache<Map, 3> cache;
  Map m{}, got{};
  CHECK(!cache.find(k, &got));
  for (int i = 0; i < 4; ++i) {  // four keys into three entries: the first goes
    m.v[0] = 100 + i;
    cache.put(key(buf, 3, 128 + i, 256, 64, 2), m);
  }
  CHECK(!cache.find(key(buf, 3, 128, 256, 64, 2), &got));
  for (int i = 1; i < 4; ++i) {
    got.v[0] = 0;
    CHECK(cache.find(key(buf, 3, 128 + i, 256, 64, 2), &got) && got.v[0] == 100ull + i);
  }
  printf("bad %d\n", bad);
  return bad != 0;
}
"""


def test_map_cache(tmp_path):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("no clang++")
    (tmp_path / "m.cpp").write_text(PROGRAM)
    subprocess.run([clang, "-std=c++17", "-O1", "-Wall", "-Werror", *include_flags(), str(tmp_path / "m.cpp"),
                    "-o", str(tmp_path / "m")], check=True, capture_output=True, text=True)
    out = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True)
    assert out.returncode == 0 and "bad 0" in out.stdout, out.stdout
