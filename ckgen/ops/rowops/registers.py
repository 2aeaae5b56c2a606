"""The row ops' register cost model: how many 32-bit vector registers (and, on wave64, scalar registers) a tile
costs, and the budgets the planner picks within.

Contract: every function here is pure and depends only on the kernel's row description (dtypes, residual, kind,
quantized output), the tile (``vec``, ``reg_vecs``, ``threads_per_row``, looped) and the wave size, never on one
target's register file: so every target of one wave size gets the same estimate, and the planner
(:mod:`ckgen.ops.rowops.plan`) the same rows, workgroup and grid on all of them. :func:`register_budget` is the one
per-target figure (a planned kernel checked against the target it is compiled for). The constants are fitted to
what the compilers allocate (see each one's comment); changing one changes plans, and the golden code
(tests/codegen/test_golden.py) says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.target import Target
from ckgen.ops.rowops.spec import RowOpSpec

#: the register estimate per wave size: (base, + a residual or looped rows, + both, + int8 y) per element held,
#: plus the kind's cost per element (kinds.py RowKind.reg_cost), fitted (mostly from above) to what nvcc 13 (sm_90a) and clang 19 (gfx942) allocate for bf16 / f32
#: kernels of 8 to 64 elements per thread: e.g. sm_90 softmax 80 registers at 32 elements, 154 at 64, looped 124
#: at 32, residual + looped RMS norm 108 at 32; gfx942 layer norm 184 VGPRs at 32 (``ckgen report``;
#: tests/ops/rowops/test_rowops_compile.py checks every test kernel for spills).
REG_MODEL: dict[int, tuple[float, float, float, float]] = {
    32: (24.0, 1.0, 0.35, 0.2),
    64: (48.0, 1.2, 0.3, 0.2),
}
#: per wave size: rows of at least this many waves cost this many registers more (gfx942: a softmax row of 16
#: waves with 16 elements per thread spills at 128 VGPRs, one of 8 waves with 32 elements takes 104)
REG_WIDE_ROW: dict[int, tuple[int, int]] = {32: (64, 0), 64: (16, 48)}
#: per wave size: (most registers per thread, registers per CU / SM) the planner stays within
PLAN_REGISTERS: dict[int, tuple[int, int]] = {32: (255, 65536), 64: (256, 131072)}
#: per wave size, the registers per thread a single pass (not looped, split or cached) of two or more vectors per
#: thread, with a weight or bias and no y quantized per row, takes when it reads weight and bias one vector at a
#: time as its outputs are computed (the body's kWeightBatch = 1) rather than the whole tile's before them; None: it
#: keeps the whole tile. The planner estimates such a kernel at this many. One whose whole-tile estimate leaves no
#: room for two workgroups per SM (512 x 3-4 tiles of layer norm and of the residual norms: ptxas took them to 80-126
#: registers, one workgroup) is compiled for file / (threads * this) workgroups (CKGEN_LAUNCH_BOUNDS_MIN); the rest
#: are left to ptxas, which keeps them at 37-64 (given any bound, it fills it: 38 -> 55 at RMS norm 4096).
#: sm_90a, nvcc 13, the planner's tiles at every width of bench/shapes/hidden_sizes.txt
#: (bench/debug/weight_batch_registers.py, bench/runs/2026-12-04_weight_batch_registers.txt): 155 kernels of the
#: norms, more workgroups per SM in 107 and fewer in none (layer norm at 11008 columns 115 -> 60 registers, 2 -> 4
#: workgroups of 256); with 1 x 128 group scales 93 kernels, more in 54, fewer in none. Those rows ran at 62-87% of
#: copy with two workgroups or fewer (bench/runs/2026-12-04_rowops_quick_widths.txt). Per-row scales keep the whole
#: tile (the amax pass would read the weights again; ptxas spilled 4 bytes at RMS norm with fp8 y at 3584, 7168).
#: gfx942 (clang 19) allocates layer norm the same VGPRs either way (100 / 98 at 11008): wave64 keeps its plans.
WEIGHTED_SINGLE_PASS_REGISTERS: dict[int, int | None] = {32: 64, 64: None}


@dataclass(frozen=True)
class AheadRule:
    """Which weighted single passes (weights a vector at a time) ask for the next vector's weight and bias before
    they store this vector's y (plan_weight_ahead, Cfg::kWeightAhead)."""
    rows: int                 # at least this many rows per workgroup
    vecs: tuple[int, int]     # vectors per thread, fewest and most


#: the weight-ahead rule per wave size (None: no such kernels). Fitted on sm_90a layer norm at 4864 and 6912
#: columns (128 threads x 5 and x 7 vectors, two rows: +1.6-1.9 points of copy in three runs, no spill); rows of
#: one workgroup gained nothing (256 x 6-7, 512 x 5-6) or lost where ptxas spilled (512 x 8: -1.4); H100,
#: bench/runs/2026-12-06f_h100_weights_probe*.txt and ..._g_..._tree_shift.txt. First planned for any tile of two
#: or more rows and at most 7 vectors: on the 43 other kernels of bench/rowops_widths_nv.ck it took, 1.0085x by
#: geomean at hidden widths and 1.0002x at intermediate ones (the rule against the same plan without it,
#: bench/runs/2026-12-06g_h100_rowops_ahead_*.txt). By vectors per thread, in that run and the next
#: (..._h_h100_rowops_bound_hi.json): 2-4 vectors 0.988 / 0.989 (layer norm), 0.988 / 0.997 (RMS norm), 1.003 /
#: 1.002 (add + RMS norm); 5-7 vectors 1.020 / 1.024, 1.003 / 1.022, 1.008 / 1.008. Narrowed to 5-7 vectors, then
#: judged on 13 widths of models outside the shapes file (bench/rowops.py --widths,
#: bench/runs/2026-12-06h_h100_rowops_heldout.json): 5-7 vectors layer norm 1.012 (4 of 4 faster), RMS norm
#: 0.990; 2-4 vectors, now left out, layer norm 0.990, RMS norm 0.997, add + RMS norm 1.005. Its kernels are
#: bounded for the weighted single pass's registers (plan_weight_ahead). Wave64: not measured (None).
WEIGHT_AHEAD: dict[int, AheadRule | None] = {32: AheadRule(rows=2, vecs=(5, 7)), 64: None}
#: wave64 (gfx9): the scalar registers the planner keeps a kernel within (.sgpr_count, special registers included;
#: 102 are addressable): every vector of a tile needs addresses, so many vectors over many tensors spill SGPRs
#: (gfx90a: a looped residual + int8 RMS norm of 128 threads x 4 vectors spills 3). Estimate: base + per vector
#: (the first 4, then the rest) + residual + int8 + looped + looped over several waves, plus the kind's
#: RowKind.sgpr_extra (layer norm 16), fitted to
#: clang 19's counts for the test kernels (sgpr_estimate); a planning preference, not a refusal.
SGPR_MODEL = (30, 12, 8, 12, 8, 4, 12)
SGPR_PLAN_LIMIT = 108
#: wave64: scalar registers a residual together with a quantized y (int8 / fp8, per row or per group) costs over
#: SGPR_MODEL in a row of one wave (clang 22, gfx942: a looped residual RMS norm with int8 or e4m3fnuz y of 64
#: threads x 4 vectors, estimated 102, spilled 15 SGPRs; x 2 vectors with the whole-vector path, estimated 94,
#: spilled 4; rows of two waves, 128 x 2, estimated 106 with the whole-vector path, spill none)
RES_QUANT_SGPR = 24
#: wave64: scalar registers per-group scales (quant = group(G)) cost over SGPR_MODEL (clang 22, gfx950: an RMS norm
#: with group scales, 256 threads x 4 vectors and the whole-vector path, estimated 106, spilled 24 SGPRs; without
#: the whole-vector path, none)
QUANT_GROUP_SGPR = 12
#: wave64: scalar registers the whole-vector path (Cfg::kWholeVectors) costs over SGPR_MODEL's estimate (gfx942,
#: clang 19: a layer norm of 5 vectors per thread, estimated 102, spilled 6 SGPRs with it and none without;
#: gfx90a, clang 22: a looped residual RMS norm of 4 vectors, estimated 94, spilled 1)
WHOLE_SGPR = 16
#: wave64: scalar registers split rows (the ticket loop, the workspace's pointers: split.choose) cost over
#: SGPR_MODEL's estimate (gfx942, clang 19, masked tails: softmax 512 x 4 100 against 78, residual RMS norm 106
#: against 90, residual layer norm 512 x 2 103 against 82; 512 x 4 of it, estimated 106, spilled 6)
SPLIT_SGPR = 16


def estimate_registers(row: RowOpSpec, vec: int, reg_vecs: int, looped: bool, wave_size: int,
                       threads_per_row: int = 1) -> int:
    """32-bit registers per thread, estimated from :data:`REG_MODEL`: a base plus a cost per element a thread holds
    in a tile (``reg_vecs * vec``), by op, residual or looped rows, and int8 output; plus :data:`REG_WIDE_ROW`."""
    base, one, both, quant = REG_MODEL[wave_size]
    res = row.residual is not None
    k = row.row_kind.reg_cost[wave_size] + one * (res or looped) + both * (res and looped) + quant * row.quantized
    waves, extra = REG_WIDE_ROW[wave_size]
    return int(base + k * reg_vecs * vec + 0.5) + (extra if threads_per_row >= waves * wave_size else 0)


def register_budget(target: Target, threads: int) -> int:
    """Registers a thread may use with ``threads`` per workgroup: the per-thread limit, and the register file of
    one CU / SM shared by one workgroup."""
    waves = -(-threads // target.wave_size)
    per_cu = target.vgprs_per_simd_lane * target.simds_per_cu * target.wave_size
    return min(target.vgprs, per_cu // (waves * target.wave_size))


def planning_budget(wave_size: int, threads: int) -> int:
    """The register budget the planner picks within, the same for every target of one wave size: NVIDIA's 64 K
    registers per SM (at most 255 per thread), AMD's 512-entry VGPR files of gfx90a and later (at most 256 per
    thread). gfx908's smaller file may refuse a planned kernel by name (check_registers)."""
    most, file = PLAN_REGISTERS[wave_size]
    return min(most, file // threads)


def sgpr_estimate(row: RowOpSpec, reg_vecs: int, looped: bool, multi_wave: bool) -> int:
    """Scalar registers of a wave64 kernel, estimated from :data:`SGPR_MODEL`."""
    base, first, rest, res, quant, loop, loop_waves = SGPR_MODEL
    return (base + first * min(reg_vecs, 4) + rest * max(reg_vecs - 4, 0) + res * (row.residual is not None)
            + quant * row.quantized + row.row_kind.sgpr_extra + loop * looped + loop_waves * (looped and multi_wave)
            + RES_QUANT_SGPR * (row.residual is not None and row.quantized and not multi_wave)
            + QUANT_GROUP_SGPR * bool(row.quant_group))
