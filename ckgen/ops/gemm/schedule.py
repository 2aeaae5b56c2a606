"""The GEMM's work schedules beyond one workgroup per C tile: the planning pass and the launch.

``schedule = splitk[(S[, atomic])]`` splits every C tile's K range over S workgroups (grid z); ``streamk`` runs a
persistent grid of workers that share all tiles' K iterations evenly. Both reduce partial sums through a
workspace (device/gemm_work.h documents the layout and the zero-on-entry, zero-on-exit contract); this module
states its size and the grid as :mod:`ckgen.ir.expr` expressions of M, N, K, which the host entry computes in C
and the runtimes in Python.

Split counts chosen per call (``splitk`` with no S): the largest S whose tiles x S workgroups still fit in one
wave of ``target_ctas`` (the target's CUs x the workgroups one CU holds, at most :data:`CTAS_PER_CU`), at most one
split per :data:`MIN_KTILES_PER_SPLIT` K tiles and at most :data:`~ckgen.ops.gemm.spec.MAX_SPLITS`, at least 1;
a fixed S is clamped to the K tiles. Stream-K workers: as many as the
target's CUs hold at once (by LDS, at most :data:`CTAS_PER_CU` per CU), never more than the K iterations.
"""

from __future__ import annotations

from ckgen.ir import expr as E
from ckgen.ir.plan import GridDim, Launch
from ckgen.ops.gemm.body import SchedulePlan
from ckgen.ops.gemm.spec import MAX_SPLITS, resolve_schedule

CTAS_PER_CU = 2
MIN_KTILES_PER_SPLIT = 4
COUNTER_ALIGN = 256
#: LDS the scheduled entry declares beside the body's tiles (``ticket``, four ints, in device/gemm_schedule.h)
TICKET_BYTES = 16
#: the device body's slot layout per platform (the MFMA epilogue stores runs of rows, mma.sync row pairs)
SLOT_ROW_MAJOR = {"amd": False, "cuda": True}


def plan_schedule(d) -> None:
    """Resolve ``schedule`` (``auto`` included) and plan split-K / stream-K: refuse what the bodies do not do,
    size the persistent grid."""
    sched = resolve_schedule(d.cfg, d.g)
    if not sched.uses_workspace or d.g.grouped:  # (grouped kernels: the groups' walk, ops/gemm/grouped.py)
        return
    g, t = d.g, d.target
    if g.batched:
        raise d.fail("schedule", sched.text, "tile (for batched = true)",
                     "split-K and stream-K are not implemented for batched kernels")
    if d.g.acc.bytes != 4:
        raise d.fail("schedule", sched.text, "tile", f"partial sums are 32-bit; this kernel accumulates in {g.acc.value}")
    if sched.atomic and not g.acc.is_float:
        raise d.fail("schedule", sched.text, "splitk or splitk(S) (integer sums are exact in any order)",
                     "atomic split-K adds float accumulators")
    if d.tma is None and d.lds.total_bytes + TICKET_BYTES > t.lds_bytes:  # e.g. 256x256x32 16-bit, 2 buffers
        raise d.fail("schedule", sched.text, f"a smaller tile (at most {t.lds_bytes - TICKET_BYTES} bytes of LDS; this one takes "
                     f"{d.lds.total_bytes}) or lds_buffers = 1",
                     f"needs {d.lds.total_bytes + TICKET_BYTES} bytes of LDS with the schedule's {TICKET_BYTES}-byte "
                     f"ticket, over the {t.lds_bytes}-byte limit")
    per_cu = max(1, min(CTAS_PER_CU, t.lds_bytes_per_cu // max(1, d.lds.total_bytes)))
    if d.tma is not None:  # the Hopper body: one persistent block per SM
        per_cu = 1
    workers = t.cus * per_cu
    tm, tn, _ = d.cfg.tile
    d.schedule = SchedulePlan(kind=sched.kind, splits=sched.splits, atomic=sched.atomic, workers=workers,
                              target_ctas=workers, slot_bytes=tm * tn * 4,
                              slot_row_major=SLOT_ROW_MAJOR[t.platform])


def tiles_expr(tile: tuple[int, int, int]) -> E.Expr:
    return E.mul(E.cdiv("M", tile[0]), E.cdiv("N", tile[1]))


def ktiles_expr(tile: tuple[int, int, int]) -> E.Expr:
    return E.emax(1, E.cdiv("K", tile[2]))


def splits_expr(tile: tuple[int, int, int], sp: SchedulePlan) -> E.Expr:
    kt = ktiles_expr(tile)
    if sp.splits:
        return E.emin(sp.splits, kt)
    return E.emax(1, E.emin(E.div(sp.target_ctas, E.emax(1, tiles_expr(tile))),
                            E.div(kt, MIN_KTILES_PER_SPLIT), MAX_SPLITS))


def scheduled_launch(tile: tuple[int, int, int], threads: int, sp: SchedulePlan, prelaunch: str | None) -> Launch:
    """Grid, values (``splits``, ``workers``) and workspace bytes of a split-K / stream-K kernel."""
    tiles = tiles_expr(tile)
    counters = E.align(E.mul(tiles, 4), COUNTER_ALIGN)
    if sp.kind == "splitk":
        values = (("splits", splits_expr(tile, sp)), ("workers", 0))
        grid = (GridDim("N", tile[1]), GridDim("M", tile[0]), GridDim(expr="splits"))
        slots = tiles if sp.atomic else E.mul(tiles, "splits")
    else:
        values = (("splits", 1), ("workers", E.emin(sp.workers, E.mul(tiles, ktiles_expr(tile)))))
        grid = (GridDim(expr="workers"), GridDim(), GridDim())
        slots = E.mul(2, "workers")
    return Launch(threads=threads, grid=grid, prelaunch=prelaunch, values=values,
                  workspace=E.add(counters, E.mul(slots, sp.slot_bytes)))
