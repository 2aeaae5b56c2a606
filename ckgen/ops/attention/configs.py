"""Known-good configurations of the attention bodies: what the planner uses for every parameter a kernel
leaves out. Keyed by the target's platform and the head dim; no arch names (the instruction is chosen from the
target's table by shape, the LDS depth by the target's capacity).

Where they come from:

* NVIDIA (``cuda``; sm_90 and sm_80): the best configurations of the first H200 measurement
  (bench/runs/2026-12-03_attention_probe.txt, bf16, against SDPA flash / cuDNN): d128 ``m128w4n64s2q``
  (FlashAttention-2's shape: 4 warps x 32 query rows, 64-key tiles, 2 stages, Q re-read from shared memory;
  0.97-1.02x flash), d64 ``m128w4n64s2r`` (Q in registers; 0.96x on the non-causal case, within 0.1% of the
  best on the causal one). d256: 8 warps x 16 rows, 32-key tiles, 1 stage (the registers of O: 128 per thread).
* AMD (``amd``; gfx90a, gfx942, gfx950): the configurations of the hand-written cases that compile without
  spills for every arch (tests/ops/attention): 4 waves, 128 queries, 32x32 instructions (the widest K of the
  target: 32x32x8 on CDNA2/3, 32x32x16 on CDNA4), keys per tile 64 (d64) or 32 (d128), at least 2 waves per
  SIMD (256 registers: no AGPR copies around the rescale of O) where the LDS lets 2 run (gfx950's 160 KiB; on
  64 KiB two buffers leave room for one, and the planner drops the hint to 1 rather than ask for what cannot
  run); d256 64 queries with 16x16 instructions. Two LDS buffers where they fit (all but d256 in 64 KiB), else
  one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownGood:
    """One configuration; ``instr_m`` is the query extent of the instruction on AMD (its K is the widest the
    target has for that shape); ``lds_buffers`` the preferred depth (fewer when the target's LDS is smaller)."""

    tile: tuple[int, int]
    waves: int
    lds_buffers: int
    q_in_regs: bool
    instr_m: int
    waves_per_eu: int = 1
    kv_barriers: int = 2


#: (platform, head_dim) -> configuration
TABLE: dict[tuple[str, int], KnownGood] = {
    ("cuda", 64): KnownGood((128, 64), 4, 2, True, 16),
    ("cuda", 128): KnownGood((128, 64), 4, 2, False, 16),
    ("cuda", 256): KnownGood((128, 32), 8, 1, False, 16),
    ("amd", 64): KnownGood((128, 64), 4, 2, True, 32, 2),
    ("amd", 128): KnownGood((128, 32), 4, 2, True, 32, 2),
    ("amd", 256): KnownGood((64, 32), 4, 2, True, 16, 2),
}


def known_good(platform: str, head_dim: int) -> KnownGood:
    return TABLE[(platform, head_dim)]


@dataclass(frozen=True)
class WgmmaKnownGood:
    """The Hopper body's tile (queries x keys: 64 queries per consumer warpgroup) and K/V stages per head dim, and
    the most queries a tile of that head dim may have (at 256 a consumer warpgroup holds O, 64 x 256 f32, in 128
    registers, which three warpgroups' 160 each leave no room around: ptxas refuses 192 x 64), and its grid
    (``wgmma_grid``: persistent, or one block per query tile)."""

    tile: tuple[int, int]
    stages: int
    max_queries: int = 192
    grid: str = "persistent"


#: head_dim -> the Hopper body's configuration (FlashAttention-3's forward shapes on the H100: d128 128 x 128 with
#: 2 consumer warpgroups, d64 192 x 128 with 3), to be replaced by the H200 measurements of bench/attention.py
WGMMA_TABLE: dict[int, WgmmaKnownGood] = {
    64: WgmmaKnownGood((192, 128), 2, grid="tiles"),
    128: WgmmaKnownGood((128, 128), 2),
    256: WgmmaKnownGood((128, 64), 2, max_queries=128),
}
