"""The Hopper body's part of GEMM planning (``device/gemm_sm90_tma.h``): which kernels get it beside their portable
body on targets with wgmma and TMA, with how many pipeline stages, and why an fp8 or scaled kernel does not. One
pass of :data:`ckgen.ops.gemm.plan.PASSES` (:func:`plan_tma_body`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ckgen.ir.types import DType, Layout
from ckgen.ops.gemm.body import TmaBodyPlan
from ckgen.ops.gemm.spec import GATE_BLOCKS, gate_run, resolve_schedule
from ckgen.targets.nvidia import FEATURE_TMA, FEATURE_WGMMA

if TYPE_CHECKING:
    from ckgen.ops.gemm.plan import GemmDraft

#: the Hopper body (device/gemm_sm90_tma.h): its dtypes, its tiles (one consumer warpgroup of 4 warps per 64 rows,
#: each issuing wgmma m64nNk16 with N = the tile's columns, over 64-deep K tiles; it adds a producer warpgroup). Two
#: tiles take neither a gated nor a rotary epilogue (their runs of gate / up columns and rotated pairs need 128 or 256
#: columns): 64x64, for few rows of A, where 128 columns leave SMs without a tile, and 128x192, for widths that tiles
#: of 192 columns fill in whole waves where 128 and 256 leave the last one part empty (4608 = 24 x 192)
TMA_BODY_DTYPES = (DType.F16, DType.BF16)
TMA_BODY_TILES = ((128, 256, 64), (128, 192, 64), (128, 128, 64), (64, 256, 64), (64, 128, 64), (64, 64, 64))
TMA_EPILOGUE_N = (128, 256)  # the tile widths that take gated and rotary epilogues
#: its fp8 kernels (OCP e4m3 / e5m2: wgmma m64nNk32, both operands K-major) and their tiles: K = 128 fp8 elements,
#: one 128-byte swizzled row of shared memory, and one 128-K block of block scales
TMA_BODY_FP8_DTYPES = (DType.E4M3FN, DType.E5M2)
TMA_BODY_FP8_PTX = {DType.E4M3FN: "e4m3", DType.E5M2: "e5m2"}  # (their wgmma type names)
TMA_BODY_FP8_TILES = ((128, 256, 128), (128, 192, 128), (128, 128, 128), (64, 256, 128), (64, 128, 128),
                      (64, 64, 128))
#: the fp8 tile widths that take block(128) scales: one 128-column block of B's scales per tile (gemm_sm90_block_scales.h)
TMA_BLOCK_SCALE_N = (64, 128)
TMA_BODY_WARPS_PER_64_ROWS = 4
TMA_BODY_MAX_STAGES = 8
#: the cluster size ``cluster = auto`` gives the kernels that can take one (:func:`_cluster`): none, since clusters of
#: two ran at 0.94-0.99x the same kernels without on every shape of the Mistral-7B decision set of
#: bench/gemm_cluster.py (H100, bench/runs/2026-12-05b_h100_cluster.txt)
TMA_AUTO_CLUSTER = 1


def _width_refusal(d: GemmDraft) -> str | None:
    """Why a tile of 64 or 192 columns does not take this kernel on the Hopper body (None: no reason): gated and
    rotary epilogues take tiles of :data:`TMA_EPILOGUE_N` columns."""
    g, n = d.g, d.cfg.tile[1]
    if n not in TMA_EPILOGUE_N and (g.gated or g.rope is not None):
        return (f"its {n}-column tile takes no gated or rotary epilogue (gate / up runs and rotated pairs need "
                f"{' or '.join(map(str, TMA_EPILOGUE_N))} columns)")
    return None


def _fp8_tma_refusal(d: GemmDraft) -> str | None:
    """Why the Hopper body does not take this fp8 kernel (None: it does, the common tile rules permitting). (Block
    scales keep two accumulator sets per thread: estimate_registers already refuses them on tiles of 256 columns;
    192 would cross a 128-column block of B's scales: the body takes 128 or 64, as it asserts.)"""
    g, cfg = d.g, d.cfg
    tiles = ", ".join("x".join(map(str, x)) for x in TMA_BODY_FP8_TILES)
    if g.a.layout != Layout.ROW or g.b.layout != Layout.COL:
        return (f"fp8 wgmma reads both operands K-major: A row and B col (nn.Linear's weight as is); this kernel has "
                f"A {g.a.layout.value}, B {g.b.layout.value}")
    if cfg.tile not in TMA_BODY_FP8_TILES:
        return f"its fp8 tiles are {tiles} (K = 128 fp8 elements: one 128-byte swizzled row)"
    if g.mode == "masked":
        return "fp8 kernels take it in mode = grouped, not masked, so far"
    if g.gated or g.residual:
        return "fp8 kernels take it without the gated and residual epilogues (16-bit kernels only, so far)"
    if g.block_scaled and cfg.tile[1] not in TMA_BLOCK_SCALE_N:
        return (f"block(128) scales fold per 128-column block of B: tiles of "
                f"{' or '.join(map(str, TMA_BLOCK_SCALE_N))} columns")
    return _width_refusal(d)


def _scaled16_tma_refusal(d: GemmDraft) -> str | None:
    """Why the Hopper body does not take this scaled 16-bit kernel (None: it does, the common tile rules
    permitting). Tensor / row scales of A and tensor / col scales of B are applied in its epilogue (epi::value, as
    for fp8; split-K / stream-K: to the sum of the parts); block scales are folded per K block by its fp8 path
    only. A grouped kernel's scales move per group (epi::for_group), as on the portable body."""
    if d.g.block_scaled:
        return "it folds block scales for fp8 kernels only"
    return None


def _cluster(d: GemmDraft) -> int:
    """The Hopper body's cluster size along M: ``cluster``, or for ``auto`` :data:`TMA_AUTO_CLUSTER` where the
    kernel can take a cluster (else 1). Clusters pair M-adjacent tiles of the tile schedule (device/gemm_sm90_tma.h:
    each CTA loads half of the B tile and multicasts it to both), so a split-K / stream-K schedule, a grouped walk or
    block scales (whose fold waits for each K tile) take none."""
    g = d.g
    why = ("a split-K / stream-K schedule" if resolve_schedule(d.cfg, g).uses_workspace else
           f"mode = {g.mode}" if g.grouped else "block(128) scales" if g.block_scaled else None)
    if d.cfg.cluster == 0:
        return 1 if why else TMA_AUTO_CLUSTER
    if d.cfg.cluster > 1 and why:
        raise d.fail("cluster", d.cfg.cluster, "1 or auto",
                     f"the Hopper body's clusters pair tiles of the tile schedule, dense, without block scales; this "
                     f"kernel has {why}")
    return d.cfg.cluster


def plan_tma_body(d: GemmDraft) -> None:
    """:func:`_plan_tma_body`; a kernel that asks for a cluster must get the Hopper body (only it has clusters)."""
    _plan_tma_body(d)
    if d.cfg.cluster > 1 and d.tma is None:
        raise d.fail("cluster", d.cfg.cluster, "1 or auto",
                     f"thread-block clusters are the Hopper body's (TMA + wgmma), which this kernel does not get on "
                     f"{d.target.name}")


def _plan_tma_body(d: GemmDraft) -> None:
    """On targets with wgmma and TMA, kernels of one of the Hopper body's tiles, with 4 warps per 64 rows (and
    ``lds_buffers >= 2``) also get that body, with as many pipeline stages as fit in shared memory beside its
    epilogue staging; the portable body stays the fallback for operands it cannot take (chosen at run time by
    the host entry). 16-bit kernels take it in any layout, with tensor / row scales of A and tensor / col scales
    of B (applied in its epilogue) on one block per C tile (:func:`_scaled16_tma_refusal`); fp8 ones (with any
    scaling) with A row-major and B column-major on the fp8 tiles (:func:`_fp8_tma_refusal`). Whether a scaled or
    fp8 kernel gets it, and why not, goes to ``d.why`` (``ckgen explain --kernel``); unscaled 16-bit kernels add
    nothing there (their plans and cache keys stay as they were)."""
    g, cfg, t = d.g, d.cfg, d.target
    if not {FEATURE_WGMMA, FEATURE_TMA} <= t.features:
        return
    warps = cfg.waves[0] * cfg.waves[1]
    shape_ok = warps == TMA_BODY_WARPS_PER_64_ROWS * cfg.tile[0] // 64 and cfg.lds_buffers >= 2
    if g.a.dtype in TMA_BODY_FP8_DTYPES:
        why = _fp8_tma_refusal(d) or (None if shape_ok else
                                      "it takes 4 warps per 64 rows of the tile and lds_buffers >= 2 (stages)")
        if why is not None:
            d.why += (f"no Hopper (TMA + wgmma) body: {why}; the mma.sync body runs it",)
            return
    elif g.a.dtype not in TMA_BODY_DTYPES or cfg.tile not in TMA_BODY_TILES or not shape_ok:
        return
    elif _width_refusal(d) is not None:
        return  # (the mma.sync body runs it; unscaled 16-bit kernels add nothing to d.why)
    elif g.scaled and (why := _scaled16_tma_refusal(d)) is not None:
        d.why += (f"no Hopper (TMA + wgmma) body: {why}; the mma.sync body runs it",)
        return
    # a stage: the A and B tiles plus its "full" and "empty" mbarriers; 1024 bytes of alignment slack; the
    # epilogue's staging per consumer warp: 16-bit row-major C goes out by TMA stores from N / 64 boxes of
    # 16 x 64 (2 KiB each, 1024-byte aligned), other C through 16 rows x (128 + 16) bytes (kEpiWarpBytes)
    tile_bytes = (cfg.tile[0] * g.a.dtype.bytes + cfg.tile[1] * g.b.dtype.bytes) * cfg.tile[2]
    # (gemm_sm90_tma.h kTmaStoreC, grouped kernels too: a warp whose rows run past its group's stores them itself
    # from the same boxes; a residual is copied into them)
    out_n = cfg.tile[1] // 2 if g.gated else cfg.tile[1]
    tma_store = g.c.dtype.bytes == 2 and g.c.layout == Layout.ROW
    per_warp = out_n // 64 * 2048 if tma_store else 16 * (128 + 16)
    if g.gated and g.b.layout == Layout.ROW and gate_run(g, cfg.tile[1]) % 64:
        legal = [f"interleaved({b})" for b in GATE_BLOCKS if b >= 64]
        raise d.fail("gate", g.gate_text, ", ".join(["halves", *legal]) + " (or B col-major)",
                     "the Hopper body loads row-major B in boxes of 64 columns: each must be whole gate or up "
                     "columns (a smaller block would leave this kernel on the slower mma.sync body)")

    def smem(stages: int) -> int:
        bars_end = stages * (tile_bytes + 16)
        epi_offset = -(-bars_end // 1024) * 1024 if tma_store else bars_end
        return 1024 + epi_offset + warps * per_warp

    stages = max((n for n in range(2, TMA_BODY_MAX_STAGES + 1) if smem(n) <= t.lds_bytes), default=0)
    if stages:
        d.tma = TmaBodyPlan(threads=warps * t.wave_size + 128, stages=stages, smem_bytes=smem(stages),
                            cluster=_cluster(d))
        if g.a.dtype.fp8 is not None or g.scaled:  # (unscaled 16-bit plans keep their JSON and cache keys)
            a, b = (TMA_BODY_FP8_PTX.get(x.dtype, x.dtype.value) for x in (g.a, g.b))
            k = 32 // g.a.dtype.bytes
            scales = "" if g.a.dtype.fp8 is not None else \
                f"; scales A {g.scale_a or 'none'}, B {g.scale_b or 'none'} in its epilogue"
            d.why += (f"Hopper body (TMA + wgmma m64n{cfg.tile[1]}k{k}.f32.{a}.{b}, {stages} stages of "
                      f"{tile_bytes} bytes, {warps // 4} consumer warpgroup(s){scales}); the mma.sync body serves "
                      "operands it cannot take (unaligned, not sm_90)",)
