"""The pre-compile register estimate of the AMD GEMM body, calibrated against the compiler.

Contract:

- :func:`register_features` turns a plan-to-be (spec, target, instruction, vector widths, LDS layouts) into
  per-lane counts of 32-bit registers the body's parts hold (:data:`FEATURES`): ``acc`` accumulators,
  ``frag`` one K step's A/B fragments, ``stage`` the global->LDS staging registers of one K tile,
  ``stage_pf`` the same when they stay live across the MFMAs (prefetch), ``loads`` global vector loads
  per thread (address arithmetic), ``transpose`` elements moved through registers for MN-contiguous
  operands, ``epi`` epilogue operations per C item, ``one``; on separate VGPR/AGPR files (gfx908)
  ``acc_separate`` (the accumulators again) and ``separate`` (1) let that file layout differ.
- :func:`estimate` is ``round(sum(COEFFS[f] * features[f]))``: arch VGPRs + AGPRs as ``ckgen report``
  counts them. ``COEFFS`` were fitted by ``tools/calibrate_registers.py`` (minimizing the largest relative
  error) on ``tests/data/register_calibration.json``: the shipped examples on every AMD arch and a sample
  of composable_kernel's XDL instance tuples, each compiled by the clang ckgen finds first (clang-22 here;
  the file records the version per arch). ``tests/lower/test_registers.py`` holds every non-spilling row of
  that file and a few fresh compiles to 20% (the fit's largest error is 17.4%).
- :func:`budget` is what the target can hold: the VGPR file of a lane (unified on gfx90a+: arch VGPRs and
  AGPRs together) and an accumulator limit, the AGPR file (256 per lane). More than 128 accumulators are
  pinned there by the body (``pin_agpr`` of ckgen/blocks/mfma.h): left to the compiler, its VGPR-form MFMAs
  spilled such configurations (CK's 256x256x32 tuples on 2x2 waves: 48 VGPRs with clang-22, 402 with
  clang-19; 320x192x32 with 240 accumulators: up to 289); pinned, they compile without spills with both.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.types import Layout

FEATURES = ("acc", "frag", "stage", "stage_pf", "loads", "transpose", "epi", "one", "acc_separate", "separate")

#: fitted by tools/calibrate_registers.py (see the module docstring); units: registers per feature unit
COEFFS: dict[str, float] = {"acc": 1.168, "frag": 0.583, "stage": 1.126, "stage_pf": 0.427, "loads": 2.374, "transpose": 0.196, "epi": 0.106, "one": 19.213, "acc_separate": 0.0, "separate": 0.0}


@dataclass(frozen=True)
class RegisterBudget:
    total: int          # registers per lane the file holds for one wave (arch VGPRs + AGPRs)
    accumulators: int   # at most this many accumulator registers per lane
    arch: int           # arch VGPRs a wave may address (the non-accumulator part on separate files)
    unified: bool


def _units_per_thread(rows: int, tk: int, vec: int, k_contig: bool, mn_piece: int, threads: int) -> tuple[int, int]:
    """(units per thread, global loads per unit) of ckgen/blocks/tile_loader.h."""
    units = rows * tk // vec if k_contig else (rows // vec) * (tk // mn_piece)
    return -(-units // threads), (1 if k_contig else mn_piece)


def register_features(params, target, instr, vec: tuple[int, int, int], lds) -> dict[str, int]:
    """Per-lane register counts of the parts of the MFMA body (see the module docstring)."""

    g, cfg, lanes = params.gemm, params.config, target.wave_size
    (tm, tn, tk), (wm, wn) = cfg.tile, cfg.waves
    threads = wm * wn * lanes
    rep_m, rep_n = tm // wm // instr.m, tn // wn // instr.n
    stage = loads = transpose = 0
    for rows, dt, k_contig, v, lay in ((tm, g.a.dtype, g.a.layout == Layout.ROW, vec[0], lds.a),
                                       (tn, g.b.dtype, g.b.layout == Layout.COL, vec[1], lds.b)):
        per, n_loads = _units_per_thread(rows, tk, v, k_contig, lay.mn_piece, threads)
        stage += per * n_loads * -(-(v * dt.bytes) // 4)
        loads += per * n_loads
        if not k_contig:
            transpose += per * n_loads * v
    epi = len(g.epilogue) + (1 if g.beta != 0 else 0) + (1 if g.alpha != 1.0 else 0)
    return {"acc": rep_m * rep_n * instr.c_regs, "frag": rep_m * instr.a_regs + rep_n * instr.b_regs,
            "stage": stage, "stage_pf": stage if cfg.prefetch else 0, "loads": loads, "transpose": transpose,
            "epi": epi * instr.c_items(lanes), "one": 1,
            "acc_separate": 0 if target.unified_vgpr_file else rep_m * rep_n * instr.c_regs,
            "separate": 0 if target.unified_vgpr_file else 1}


def estimate(features: dict[str, int], coeffs: dict[str, float] | None = None) -> int:
    c = COEFFS if coeffs is None else coeffs
    return int(round(sum(c[f] * features[f] for f in FEATURES)))


def budget(target) -> RegisterBudget:
    if target.unified_vgpr_file:
        return RegisterBudget(total=target.vgprs_per_simd_lane, accumulators=target.agprs, arch=target.vgprs,
                              unified=True)
    return RegisterBudget(total=target.vgprs + target.agprs, accumulators=target.agprs, arch=target.vgprs,
                          unified=False)


def smaller_tiles_hint(params, target, instr, b: RegisterBudget) -> str:
    """The legal values to name when a tile is refused: at most ``b.accumulators`` accumulators per lane, and
    the nearest tiles (halved M or N) or wave grids (doubled, within 1024 threads) that get there."""
    cfg = params.config
    (tm, tn, tk), (wm, wn) = cfg.tile, cfg.waves
    lanes = target.wave_size
    regs_per_item = instr.c_regs // instr.c_items(lanes)   # 1 for 32-bit accumulators, 2 for f64

    def acc(m: int, n: int, a: int, c: int) -> int:
        return (m // a) * (n // c) // lanes * regs_per_item

    options = []
    for m, n, a, c in ((tm // 2, tn, wm, wn), (tm, tn // 2, wm, wn), (tm, tn, wm * 2, wn), (tm, tn, wm, wn * 2)):
        if m >= a * instr.m and n >= c * instr.n and m % (a * instr.m) == 0 and n % (c * instr.n) == 0 \
                and a * c * lanes <= 1024 and acc(m, n, a, c) <= b.accumulators:
            text = f"tile = {m}x{n}x{tk}" if (a, c) == (wm, wn) else f"waves = {a}x{c}"
            if text not in options:
                options.append(text)
    hint = f"at most {b.accumulators} accumulator registers per lane (tile M x N / (waves x 64)) and a smaller total"
    return hint + (f": e.g. {' or '.join(options)}" if options else "")
