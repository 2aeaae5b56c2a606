"""ckgen::MfmaLayout (blocks/mfma.h) against AMD's matrix instruction calculator data.

A host program instantiates ckgen::MfmaLayout for every single-block dense instruction in
shared/reference/mfma_layouts.json and prints, for every element of A, B and C, the lane and item the
header's formulas give, plus the inverse maps the kernel uses to address its LDS fragments. The test
compares those with the JSON, entry by entry.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ckgen.resources import include_flags

ROOT = Path(__file__).resolve().parents[2]


def _reference() -> Path | None:
    p = ROOT / "tests" / "data" / "mfma_layouts.json"  # committed copy of ../shared/reference (tests/reference.py)
    return p if p.is_file() else None


REF = _reference()


def _entries() -> list[dict]:
    if REF is None:
        return []
    data = json.loads(REF.read_text())
    return [e for e in data["instructions"] if e["blocks"] == 1 and e["wave_size"] == 64]


def _group(e: dict) -> int:
    return 1 if e["c_type"] == "FP64" else 4


PROGRAM = r"""
#include <stdio.h>
#include "ckgen/blocks/mfma.h"
template <int M, int N, int K, int G>
void dump(const char* tag) {
  using L = ckgen::MfmaLayout<M, N, K, G>;
  for (int i = 0; i < M; ++i) for (int k = 0; k < K; ++k)
    printf("%s A %d %d %d %d\n", tag, i, k, L::a_lane(i, k), L::a_item(i, k));
  for (int k = 0; k < K; ++k) for (int j = 0; j < N; ++j)
    printf("%s B %d %d %d %d\n", tag, k, j, L::b_lane(k, j), L::b_item(k, j));
  for (int l = 0; l < 64; ++l) for (int r = 0; r < L::kCItems; ++r)
    printf("%s C %d %d %d %d\n", tag, L::c_row(r, l), L::c_col(r, l), l, r);
  for (int l = 0; l < 64; ++l)
    printf("%s I %d %d %d %d\n", tag, L::a_row(l), L::a_k0(l), L::b_col(l), L::b_k0(l));
}
int main() {
%BODY%
  return 0;
}
"""


@pytest.fixture(scope="module")
def dumped(tmp_path_factory) -> dict[str, dict]:
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if REF is None or clang is None:
        pytest.skip("reference data or clang++ missing")
    shapes = sorted({(e["m"], e["n"], e["k"], _group(e)) for e in _entries()})
    body = "\n".join(f'  dump<{m}, {n}, {k}, {g}>("{m}x{n}x{k}g{g}");' for m, n, k, g in shapes)
    d = tmp_path_factory.mktemp("layout")
    (d / "l.cpp").write_text(PROGRAM.replace("%BODY%", body))
    subprocess.run([clang, "-std=c++17", "-O1", *include_flags(), str(d / "l.cpp"), "-o", str(d / "l")],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(d / "l")], check=True, capture_output=True, text=True).stdout
    res: dict[str, dict] = {}
    for line in out.splitlines():
        tag, kind, *v = line.split()
        t = res.setdefault(tag, {"A": set(), "B": set(), "C": set(), "I": []})
        if kind == "I":
            t["I"].append(tuple(map(int, v)))
        else:
            t[kind].add(tuple(map(int, v)))
    return res


ENTRIES = _entries()


@pytest.mark.skipif(REF is None, reason="shared/reference/mfma_layouts.json not found")
def test_reference_has_single_block_entries() -> None:
    assert len(ENTRIES) >= 30
    assert {e["arch"] for e in ENTRIES} == {"gfx908", "gfx90a", "gfx942"}


@pytest.mark.parametrize("e", ENTRIES, ids=[f'{e["arch"]}-{e["name"]}' for e in ENTRIES])
def test_layout_matches_reference(dumped, e: dict) -> None:
    got = dumped[f'{e["m"]}x{e["n"]}x{e["k"]}g{_group(e)}']
    want_a = {(i, k, lane, item) for i, k, _b, lane, item in e["a"]}
    want_b = {(k, j, lane, item) for k, j, _b, lane, item in e["b"]}
    want_c = {(i, j, lane, item) for i, j, _b, lane, item in e["c"]}
    assert got["A"] == want_a
    assert got["B"] == want_b
    assert got["C"] == want_c
    # inverse maps: lane l's items 0..n-1 are A(a_row, a_k0 + item) and B(b_k0 + item, b_col)
    a_items, b_items = len(e["a_items"]), len(e["b_items"])
    a_at = {(lane, item): (i, k) for i, k, lane, item in want_a}
    b_at = {(lane, item): (k, j) for k, j, lane, item in want_b}
    for lane, (a_row, a_k0, b_col, b_k0) in enumerate(got["I"]):
        for it in range(a_items):
            assert a_at[(lane, it)] == (a_row, a_k0 + it)
        for it in range(b_items):
            assert b_at[(lane, it)] == (b_k0 + it, b_col)
