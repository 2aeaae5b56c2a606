"""CK's XDL GEMM instance tuples (tests/data/ck_gemm_instances.json, from tools/ck_instances.py) as ckgen kernels.

:func:`ck_instances` loads the tuples; :func:`dsl` writes one as a ckgen kernel for an arch:
tile = MPerBlock x NPerBlock x KPerBlock, waves from the XDL counts, instr = MPerXDL x NPerXDL x K with K
the widest single-block instruction of that M x N for the dtype on the arch whose K divides the tile's K
(None when there is none: the tuple is then not expressible); the layouts, A/B/C dtypes and everything
else (vector widths, LDS buffers = 2, prefetch) are ckgen's defaults. :func:`sample` is the deterministic
spread the default test suite compiles.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ckgen.ir.types import DType
from ckgen.targets import get_target

ROOT = Path(__file__).resolve().parents[1]
CK_INSTANCES = ROOT / "tests" / "data" / "ck_gemm_instances.json"
ACC = {"f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"}


@lru_cache(maxsize=1)
def ck_document() -> dict:
    return json.loads(CK_INSTANCES.read_text())


def ck_instances() -> list[dict]:
    return ck_document()["instances"]


def name_of(t: dict) -> str:
    tile = "x".join(map(str, t["tile"]))
    return (f"ck_{t['dtype']}_{t['a_layout'][0]}{t['b_layout'][0]}_{tile}_w{t['waves'][0]}x{t['waves'][1]}"
            f"_x{t['xdl'][0]}")


def instruction(t: dict, arch: str) -> tuple[int, int, int] | None:
    dt, acc = DType(t["dtype"]), DType(ACC[t["dtype"]])
    m, n = t["xdl"]
    fits = [i for i in get_target(arch).instructions_for(dt, dt, acc) if (i.m, i.n) == (m, n) and t["tile"][2] % i.k == 0]
    return max(fits, key=lambda i: i.k).shape if fits else None


def dsl(t: dict, arch: str) -> str | None:
    """One ``kernel`` block for ``arch``, or None when no instruction of the arch fits the tuple."""
    instr = instruction(t, arch)
    if instr is None:
        return None
    return (f"kernel {name_of(t)} {{\n  A = {t['dtype']} {t['a_layout']}\n  B = {t['dtype']} {t['b_layout']}\n"
            f"  C = {t['c_dtype']} {t['c_layout']}\n  acc = {ACC[t['dtype']]}\n"
            f"  tile = {'x'.join(map(str, t['tile']))}\n  waves = {t['waves'][0]}x{t['waves'][1]}\n"
            f"  instr = {'x'.join(map(str, instr))}\n  arch = [{arch}]\n}}\n")


#: tuples the default suite always compiles: the ones that used to fail or spill
MUST = ({"tile": [256, 256, 32], "dtype": "f16"}, {"tile": [256, 256, 32], "dtype": "bf16"},
        {"tile": [16, 16, 128]}, {"tile": [128, 144, 64]}, {"tile": [128, 256, 64], "dtype": "i8"})


def sample(tuples: list[dict], per_group: int = 1) -> list[dict]:
    """A deterministic spread: for every (dtype, layouts, XDL size) the tile with the most elements per thread
    (the most register pressure; ``per_group = 2`` adds the smallest), plus every tuple matching :data:`MUST`."""
    groups: dict[tuple, list[dict]] = {}
    for t in tuples:
        groups.setdefault((t["dtype"], t["a_layout"], t["b_layout"], tuple(t["xdl"])), []).append(t)
    chosen: dict[str, dict] = {}
    for key in sorted(groups):
        g = sorted(groups[key], key=lambda t: (t["tile"][0] * t["tile"][1] / t["block"], t["tile"], t["block"]))
        for t in (g[-1], g[0])[:per_group]:
            chosen[name_of(t)] = t
    for want in MUST:
        for t in tuples:
            if all(t[k] == v for k, v in want.items()):
                chosen[name_of(t)] = t
    return sorted(chosen.values(), key=name_of)
