"""The stream-K partition (``StreamK::seg_raw`` of ckgen/ops/gemm/device/gemm_work.h), built for the host and
enumerated for every worker over many (tiles, K tiles, workers): every K iteration of every tile is computed by
exactly one segment; a tile's contributors agree on their count, and the slots its finisher reads are theirs in K
order; each worker first takes whole tiles w, w + P, ... (the tile schedule's order), and only the last R < P tiles
are split, along K into S = min(kt, P / R) equal parts that start at the same K tile in every split tile, at most
one part per worker (its slot 2w + 1)"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ckgen.resources import include_flags

CASE = Path(__file__).resolve().parent / "cases" / "stream_k_segments.cpp"
FIELDS = ("tile", "kt0", "kt1", "count", "slot", "slot0", "slot_base", "slot_step", "reads")


@pytest.fixture(scope="module")
def segments(tmp_path_factory):
    clang = shutil.which("clang++-19") or shutil.which("clang++")
    if clang is None:
        pytest.skip("no host clang++")
    so = tmp_path_factory.mktemp("streamk") / "streamk.so"
    r = subprocess.run([clang, "-x", "c++", "-std=c++17", "-O1", "-DCKGEN_PLATFORM_EMU", "-shared", "-fPIC",
                        "-pthread", *include_flags(), str(CASE), "-o", str(so)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    fn = ctypes.CDLL(str(so)).stream_k_segments
    fn.argtypes = [ctypes.c_int] * 4 + [ctypes.c_void_p, ctypes.c_int]

    def of(tiles: int, kt: int, P: int, w: int) -> list[dict]:
        buf = np.zeros(9 * 64, np.int32)
        n = fn(tiles, kt, P, w, buf.ctypes.data, 64)
        assert n <= 64
        return [dict(zip(FIELDS, map(int, buf[9 * i:9 * i + 9]), strict=True)) for i in range(n)]
    return of


CASES = [(1, 1, 1), (5, 7, 3), (7, 3, 8), (132, 64, 132), (263, 64, 132), (264, 64, 132), (265, 16, 132),
         (512, 64, 132), (441, 3, 220), (660, 3, 220), (80, 40, 132), (1000, 1, 264), (37, 100, 264)]


@pytest.mark.parametrize("tiles,kt,P", CASES, ids=[f"t{t}_k{k}_p{p}" for t, k, p in CASES])
def test_every_iteration_once_and_the_fix_up_agrees(segments, tiles, kt, P):
    P = min(P, tiles * kt)  # (the launch never has more workers than iterations)
    covered = np.zeros((tiles, kt), np.int32)
    per_tile: dict[int, list[tuple[int, dict]]] = {}
    for w in range(P):
        segs = segments(tiles, kt, P, w)
        whole = tiles // P
        rest = tiles - whole * P
        S = min(kt, P // rest) if rest else 0
        for j, g in enumerate(segs):
            assert 0 <= g["tile"] < tiles and 0 <= g["kt0"] < g["kt1"] <= kt, (w, j, g)
            covered[g["tile"], g["kt0"]:g["kt1"]] += 1
            per_tile.setdefault(g["tile"], []).append((w, g))
            if j < whole:  # the data-parallel waves: whole tiles w, w + P, ...
                assert (g["tile"], g["kt0"], g["kt1"], g["count"]) == (w + j * P, 0, kt, 1), (w, j, g)
            else:  # the worker's part of a split tile: every split tile cut at the same K tiles
                assert j == whole and g["tile"] >= whole * P and g["count"] == S, (w, j, g)
                start = [i * (kt // S) + min(i, kt % S) for i in (w % S, w % S + 1)]  # Even(kt, S)
                assert [g["kt0"], g["kt1"]] == start, (w, j, g)
        assert len(segs) == whole + (1 if w < rest * S else 0), (w, segs)
        shared = [g for g in segs if g["count"] > 1]
        assert len(shared) <= 1 and all(g["slot"] == 2 * w + 1 for g in shared)
    assert (covered == 1).all(), "a K iteration computed twice or never"
    for t, contrib in per_tile.items():
        contrib.sort(key=lambda x: x[1]["kt0"])
        count = contrib[0][1]["count"]
        assert all(g["count"] == count == g["reads"] for _, g in contrib) and count == len(contrib), (t, contrib)
        if count > 1:
            g0 = contrib[0][1]
            slot_of = [g0["slot0"] if i == 0 else g0["slot_base"] + i * g0["slot_step"] for i in range(count)]
            assert slot_of == [g["slot"] for _, g in contrib], (t, contrib)
