"""The row ops' tile tables and the choosers that read them (the passes are in :mod:`ckgen.ops.rowops.plan`).

Tables are per wave size, so that every target of one wave size gets the same tile; each chooser takes the pass
draft (``plan.RowDraft``: the spec, target, ``vec`` and any split chosen so far) and returns a tile
``(threads_per_row, reg_vecs)`` or None where none fits the register estimate's planning budget
(:mod:`ckgen.ops.rowops.registers`). :func:`choose_cached` writes its tile into the draft; it and
:func:`single_pass` add their reasons to ``d.why``; the others only read the draft.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ckgen.ops.rowops.registers import (
    SGPR_PLAN_LIMIT,
    SPLIT_SGPR,
    estimate_registers,
    planning_budget,
    sgpr_estimate,
)

if TYPE_CHECKING:
    from ckgen.ops.rowops.plan import RowDraft

MAX_THREADS = 1024           # workgroup limit (both vendors)
MAX_REG_VECS = 16            # what reg_vecs may say
PLAN_REG_VECS = 8            # the most the planner gives a single-pass row before it loops
WORKGROUP_THREADS = 256      # the planner's workgroup size when rows are short
#: single-pass rows, per wave size: (vectors per row up to, threads_per_row, reg_vecs); the first line that
#: holds the row wins, then reg_vecs shrinks to the fewest that hold it. A vector is 16 bytes of x (8 bf16).
#: Rows shorter than a wave share waves; long rows take several waves (LDS reduction). NVIDIA warp32: the
#: shapes of bench/rowops.py's sm_90 candidates (a warp per row up to 1024 bf16 columns, 4 vectors per thread;
#: 16384 columns at most: 1024 threads have 64 registers each, too few for 4 vectors); AMD wave64: the same
#: per-thread work, up to 1024 threads. A line whose estimate exceeds the planning budget doubles its threads
#: (halving reg_vecs) until it fits, else the row is looped.
SINGLE_PASS: dict[int, tuple[tuple[int, int, int], ...]] = {
    32: ((4, 1, 4), (8, 2, 4), (16, 4, 4), (32, 8, 4), (64, 16, 4), (128, 32, 4), (256, 64, 4), (512, 128, 4),
         (1024, 256, 4), (2048, 512, 4)),
    64: ((4, 1, 4), (8, 2, 4), (16, 4, 4), (32, 8, 4), (64, 16, 4), (128, 32, 4), (256, 64, 4), (512, 128, 4),
         (1024, 256, 4), (2048, 512, 4), (4096, 512, 8)),
}
#: register-bounded single-pass rows, per wave size: (vectors per row up to, threads_per_row, reg_vecs, workgroups
#: per CU / SM, weight_vecs). A single pass of such a tile, of an op with no residual and no int8 output, is compiled
#: for that many workgroups per SM (CKGEN_LAUNCH_BOUNDS_MIN: CUDA's __launch_bounds__(threads, m), 64 registers at
#: 512 x 2; unbounded, ptxas gives it 79-127 and one workgroup per SM) and reads weight and bias weight_vecs
#: vectors at a time instead of a whole tile's before it (the body's kWeightBatch). With no shared memory beside
#: it, the L1 keeps weight and bias across rows. A residual (s beside x) or int8 output (the amax pass) spills
#: hundreds of bytes at 64 registers: those keep the row cache.
BOUNDED_SINGLE_PASS: dict[int, tuple[tuple[int, int, int, int, int], ...]] = {32: ((4096, 512, 8, 2, 2),), 64: ()}
#: The kinds with RowKind.bounded (kinds.py) get a BOUNDED_SINGLE_PASS row by default, where no SINGLE_PASS line
#: holds it. H200, 4096 x 32768 bf16 (bench/runs/2026-12-03_register_rows.txt, % of a device copy): layer norm 92.5
#: against the row cache's 88.4, RMS norm 95.7 against 94.7; softmax 95.2 against 96.7 keeps the row cache.
#: looped rows, per wave size: (threads_per_row, reg_vecs) with no bound on cols (one wave per row, tiles of
#: 4 vectors per thread), and for rows longer than one single-pass tile (max_cols given)
LOOPED: dict[int, tuple[int, int]] = {32: (32, 4), 64: (64, 4)}
#: the fitted single pass (fitted_tile): the most vectors per thread it gives a row, and the step in which it counts
#: idle vector slots of a tile as equal (a tile within 4 % of the row is as good as an exact one; beyond, fewer
#: idle threads win over the preferred vectors per thread)
FIT_REG_VECS = 12
FIT_WASTE_STEP = 0.04
#: the workgroups per CU / SM whose registers a fitted tile must leave room for (the register estimate within the
#: planning budget of that many workgroups): with one, nothing overlaps a workgroup's reductions and stores
FIT_GROUPS = 2
LOOPED_LONG: dict[int, tuple[int, int]] = {32: (512, 4), 64: (512, 4)}
#: row_in = shared (the row cache, device/rowops_rowcache.h): the planner picks it by default, per wave size, when
#: the workgroup's cache takes at most this many bytes (the same choice on every target of one wave size: sm_80 and
#: sm_90 hold at least two such workgroups per SM; gfx90a / gfx942 two per CU). Its tiles are LOOPED_LONG's with
#: reg_vecs halved until two workgroups fit the register file (the rest of the latency is the other workgroup's).
PLAN_ROW_LDS: dict[int, int] = {32: 96 * 1024, 64: 32 * 1024}
#: per wave size, whether the cached tile is sized with the looped register model (True) or the single-pass one:
#: a cached tile is read back from shared memory, not held across passes, and on sm_90 ptxas gives 512 threads x 2
#: vectors 56 (softmax, layer norm), 40 (RMS norm), 64 (add + RMS norm) registers where the looped model says 74 /
#: 69 / 61 / 66, so two workgroups of 512 x 2 fit: the fastest tile measured at 4096 x 32768 for all four ops
#: (bench/runs/2026-12-03_rowcache_dispatch_attention.txt). wave64 keeps the looped model (not calibrated there).
CACHE_LOOPED_MODEL: dict[int, bool] = {32: False, 64: True}
CACHE_GROUPS = 2
#: per wave size, whether a row-cache kernel is compiled for CACHE_GROUPS workgroups per CU / SM
#: (CKGEN_LAUNCH_BOUNDS_MIN). NVIDIA: without the bound ptxas may take more than the 64 registers two 512-thread
#: workgroups have (sm_90a, nvcc 13: add + RMS norm, 512 x 2, 66 registers, one workgroup per SM); AMD takes no
#: such bound (platform_amd.h).
CACHE_BOUNDED: dict[int, bool] = {32: True, 64: False}
#: y = none (rstd only) looped kernels, per wave size: (threads from, workgroups per CU / SM) they are compiled for
#: (CKGEN_LAUNCH_BOUNDS_MIN; 0: unbounded). Unbounded, nvcc 13 gives the sm_90a add + RMS norm rstd kernel of
#: 512 x 4 94 registers (one workgroup per SM); bounded for two, 64 and no spills (test_rowops_rstd.py). AMD takes
#: no such bound (platform_amd.h).
NONE_LOOPED_BOUND: dict[int, tuple[int, int] | None] = {32: (512, 2), 64: None}


def pow2ceil(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fits_budget(d: RowDraft, t: int, r: int, looped: bool, groups: int = 1) -> bool:
    """The register estimate (and wave64's SGPR estimate) of ``t`` threads x ``r`` vectors per row fits the
    planning budget of ``groups`` workgroups per CU / SM."""
    w = d.target.wave_size
    threads = max(t, WORKGROUP_THREADS) * groups
    if w == 64 and sgpr_estimate(d.row, r, looped, t > w) + SPLIT_SGPR * bool(d.split) > SGPR_PLAN_LIMIT:
        return False
    return estimate_registers(d.row, d.vec, r, looped, w, t) <= planning_budget(w, threads)


def single_pass(d: RowDraft, n: int) -> tuple[int, int] | None:
    """(threads_per_row, reg_vecs) holding a row of ``n`` vectors in one tile, or None."""
    t, r = d.cfg.threads_per_row, d.cfg.reg_vecs
    if t is not None and r is not None:
        return (t, r) if t * r >= n else None
    if t is not None:
        r = ceil_div(n, t)
        return (t, r) if r <= PLAN_REG_VECS else None
    if r is not None:
        t = pow2ceil(ceil_div(n, r))
        return (t, r) if t <= MAX_THREADS else None
    for groups in (FIT_GROUPS, 1):
        fitted = fitted_tile(d, n, groups) if d.cfg.max_cols % d.vec == 0 else None
        if fitted is not None:
            t, r = fitted
            d.why.append(f"fitted to max_cols = {d.cfg.max_cols} ({n} vectors of {d.vec}): {t} threads x {r} vectors "
                         f"hold {t * r} vectors, {100 * (1 - n / (t * r)):.1f}% idle: the fewest in steps of "
                         f"{FIT_WASTE_STEP:.0%}, then vectors per thread nearest {table_line(d, n)[2]}, then the fewest "
                         f"threads, among the tiles with registers for {groups} workgroup(s) per CU / SM")
            return fitted
    found = from_table(d, n)
    if found is not None:
        why = "max_cols is not a whole number of vectors" if d.cfg.max_cols % d.vec else "no fitted tile fits"
        d.why.append(f"the table's tile for {n} vectors of {d.vec} ({why}): {found[0]} threads x {found[1]} vectors")
    return found


def table_line(d: RowDraft, n: int) -> tuple[int, int, int] | None:
    """The first :data:`SINGLE_PASS` line holding ``n`` vectors, or None."""
    return next((ln for ln in SINGLE_PASS[d.target.wave_size] if n <= ln[0]), None)


def fitted_tile(d: RowDraft, n: int, groups: int) -> tuple[int, int] | None:
    """(threads_per_row, reg_vecs) of the tile fitted to a row of ``n`` whole vectors (max_cols a multiple of
    vec), or None where no :data:`SINGLE_PASS` line holds ``n``. The line's threads t0 and vectors r0 are what the
    table was measured with at powers of two. Candidates: every power of two t up to 2 * t0 with r = ceil(n / t)
    vectors, r at most :data:`FIT_REG_VECS` (``groups`` = :data:`FIT_GROUPS`) or r0 (``groups`` = 1: a tile that
    leaves one workgroup per CU / SM its registers holds no more than the table's), whose register estimate fits
    the planning budget of ``groups`` workgroups. The planner takes the one with (1) the fewest idle vector slots
    (1 - n / (t * r)) in steps of :data:`FIT_WASTE_STEP`, (2) r nearest r0 (the memory parallelism measured best),
    (3) the fewest threads. A tile of exactly max_cols takes the fast path (every access a vector, weight and bias
    in flight together); a wider one the whole-vector path (the same, with a predicate per vector:
    RowGroup::by_kind, plan_whole_vectors) at the cost of its idle threads."""
    line = table_line(d, n)
    if line is None:
        return None
    _, t0, r0 = line
    best, best_key = None, None
    t = 1
    while t <= min(MAX_THREADS, 2 * t0):
        r = ceil_div(n, t)
        if r <= (FIT_REG_VECS if groups > 1 else r0) and fits_budget(d, t, r, False, groups):
            key = (int((1 - n / (t * r)) / FIT_WASTE_STEP), abs(math.log2(r / r0)), t)
            if best_key is None or key < best_key:
                best, best_key = (t, r), key
        t *= 2
    return best


def from_table(d: RowDraft, n: int) -> tuple[int, int] | None:
    """The first :data:`SINGLE_PASS` line holding ``n`` vectors, its threads doubled (reg_vecs halved) until the
    register estimate fits the planning budget; None when none does."""
    for limit, t, r in SINGLE_PASS[d.target.wave_size]:
        if n > limit:
            continue
        while t <= MAX_THREADS:
            r = max(1, min(r, ceil_div(n, t)))
            if fits_budget(d, t, r, False):
                return t, r
            t, r = t * 2, max(1, ceil_div(r, 2))  # still holding n (3 vectors of 32 threads: 2 of 64, not 1)
        return None
    return None


def bounded_line(d: RowDraft, n: int) -> tuple[int, int, int, int, int] | None:
    """The BOUNDED_SINGLE_PASS line for a row of ``n`` vectors, fitted to it: its reg_vecs cut to the fewest that
    hold ``n`` (a row of 17920 bf16 columns: 5 vectors per thread, not 8), and weights read one vector at a time
    unless the tile is the line's own and exactly max_cols (the batch was measured there; batches of 2 with the
    whole-vector path spill at 64 registers: sm_90a, nvcc 13, 6 and 8 vectors); threads_per_row and reg_vecs as the
    kernel gives them, if it does. None: none holds it, or the op has a residual or int8 output."""
    if d.row.residual is not None or d.row.quantized:
        return None
    cfg = d.cfg
    for limit, t, r, groups, wv in BOUNDED_SINGLE_PASS[d.target.wave_size]:
        fit = cfg.reg_vecs or ceil_div(n, t)
        if n <= limit and cfg.threads_per_row in (None, t) and fit <= r:
            exact = cfg.max_cols is not None and cfg.max_cols == t * fit * d.vec
            batch = wv if fit == r and exact else (1 if fit > 1 else 0)
            return limit, t, fit, groups, batch
    return None


def split_tile(d: RowDraft, per: int) -> tuple[int, int] | None:
    """(threads, reg_vecs) of a slice of ``per`` vectors (split rows: split.choose): as given, else fitted (or the
    table's), whole waves; None where none fits the register budget."""
    cfg, w = d.cfg, d.target.wave_size
    if cfg.threads_per_row is not None or cfg.reg_vecs is not None:
        t = cfg.threads_per_row or max(w, pow2ceil(ceil_div(per, cfg.reg_vecs)))
        found = (t, cfg.reg_vecs or ceil_div(per, t))
    else:
        found = fitted_tile(d, per, FIT_GROUPS) or from_table(d, per)
        if found is not None and found[0] < w:  # a short slice: one wave (a workgroup holds one row)
            found = (w, ceil_div(per, w))
    return found if found is not None and w <= found[0] <= MAX_THREADS else None


def choose_cached(d: RowDraft, n: int | None) -> None:
    """row_in = shared: looped tiles (threads_per_row and reg_vecs as given, else LOOPED_LONG's, reg_vecs halved
    until CACHE_GROUPS workgroups fit the planning budget) and as many of them as max_cols takes."""
    cfg, w = d.cfg, d.target.wave_size
    if n is None:
        raise d.fail("row_in", "shared", "registers, or shared with max_cols = <the longest row>",
                     "the row cache is sized for the longest row: it needs max_cols")
    if cfg.looped is False:
        raise d.fail("looped", "false", "true (or leave it out) with row_in = shared",
                     "the row cache walks the row in tiles (looped); looped = false holds it in registers")
    t, r = LOOPED_LONG[w]
    t = cfg.threads_per_row or min(t, max(w, pow2ceil(ceil_div(n, r))))
    r = cfg.reg_vecs or r
    while cfg.reg_vecs is None and r > 1 and not fits_budget(d, t, r, CACHE_LOOPED_MODEL[w], CACHE_GROUPS):
        r //= 2
    d.threads_per_row, d.reg_vecs, d.looped = t, r, True
    d.rows_per_workgroup = cfg.rows_per_workgroup or max(1, ceil_div(w, t))
    d.cache_tiles = ceil_div(cfg.max_cols, d.tile_cols)
    if cfg.row_in == "shared":
        d.why.append(f"row_in = shared: the row cache, {d.cache_tiles} tiles of {t} threads x {r} vectors")


def slot_bytes(d: RowDraft) -> int:
    """Bytes of one thread's vector of v in the row cache (v: the residual's dtype with a residual, else x's)."""
    return ceil_div(d.vec * d.row.res_dtype.bytes, 4) * 4


def cache_bytes(d: RowDraft) -> int:
    return d.cache_tiles * d.reg_vecs * d.threads * slot_bytes(d)
