"""Split rows: a row longer than one workgroup holds in registers, cut into slices of one single-pass tile, one
workgroup per slice, so that x is read from global memory once (device/rowops_pipeline_split.h states the body's
contract: the slices' partial states exchanged through a global workspace, combined in slice order).

Whether a kernel splits its rows, and into at most how many workgroups (:func:`split_of`: the Cfg's ``kSplit``),
depends on the kernel's description only, never on the target: it decides the ABI (a ``workspace`` argument), which
every target of a library shares. By default a row is split when ``max_cols`` rows of ``v`` take more than
:data:`SPLIT_ROW_BYTES` (more than any target's row cache holds: the planner would loop and read the row twice),
into ``ceil(vectors / SLICE_VECS)`` slices (at most :data:`DEFAULT_MAX_SPLIT`; more, up to :data:`MAX_SPLIT`, where
no tile of the target holds such a slice); the kernel may say ``split = N`` (2 .. MAX_SPLIT: at most N workgroups per row) or ``split = 1`` (never). The planner (``plan.py``, ``_choose_split``)
fits one tile to a slice of ``ceil(vectors / kSplit)`` vectors; a call splits a row of ``cols`` into
``ceil(cols / tile)`` slices (at most kSplit).
"""

from __future__ import annotations

from ckgen.ir import expr as E
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.spec import KernelSpec

#: rows of v (max_cols x the bytes of v) longer than this are split by default: NVIDIA's row cache planning limit
#: (plan.PLAN_ROW_LDS, the larger of the two wave sizes'), so that no target would keep the row in shared memory
SPLIT_ROW_BYTES = 96 * 1024
#: vectors of one slice the default split aims at: the single-pass tables' 512 threads x 4 vectors line
SLICE_VECS = 2048
#: most slices the default split starts from (a row that needs more keeps the looped plan)
DEFAULT_MAX_SPLIT = 16
#: most workgroups of one row: ``split`` may say up to this many, and the planner raises a default split up to
#: it where no tile of the target holds a slice within its register budget (wave64: a residual layer norm's slice
#: of 2000 vectors spills SGPRs in one tile, 1000 do not)
MAX_SPLIT = 32
#: the grid of a split-row launch: min(rows * slices, SPLIT_GRID_CAP) workgroups taking tickets (any grid >= 1)
SPLIT_GRID_CAP = 65536
#: the workspace's head (the ticket queue), device/rowops_pipeline_split.h kSplitHeadBytes
HEAD_BYTES = 256
#: the host-side template that launches a split-row kernel (the emulator: kSplit workgroups at once)
PRELAUNCH = "rowops/split_launch.cpp.j2"


def _vectors(spec: KernelSpec) -> int | None:
    cfg, row = spec.params.config, spec.params.row
    if cfg.max_cols is None:
        return None
    vec = cfg.vec or max(1, 16 // row.x.bytes)
    return -(-cfg.max_cols // vec)


def default_split(spec: KernelSpec) -> int:
    """The split the planner gives a kernel that does not say ``split`` (0: none): rows of more than
    SPLIT_ROW_BYTES of v, the rest of the cut left to the planner, no int8 output."""
    cfg, row = spec.params.config, spec.params.row
    n = _vectors(spec)
    planned = (cfg.looped is None and cfg.row_in is None and cfg.threads_per_row is None and cfg.reg_vecs is None
               and cfg.rows_per_workgroup is None)
    if n is None or not planned or row.quantized or cfg.max_cols * row.res_dtype.bytes <= SPLIT_ROW_BYTES:
        return 0
    slices = -(-n // SLICE_VECS)
    return slices if 2 <= slices <= DEFAULT_MAX_SPLIT else 0


def split_of(spec: KernelSpec) -> int:
    """kSplit: the most workgroups a row of the kernel takes (0: rows are not split). ``split = 1``: 0;
    ``split = N``: N (its legality is the planner's: _choose_split); else :func:`default_split`."""
    given = spec.params.config.split
    if given is not None:
        return 0 if given == 1 else given
    return default_split(spec)


def workspace_expr(split: int, state_floats: int) -> E.Expr:
    """Workspace bytes: the head, an int counter per row (16-byte padded), kSplit partial states per row."""
    return E.add(HEAD_BYTES, E.align(E.mul("rows", 4), 16), E.mul("rows", split * state_floats * 4))


def launch(threads: int, tile_cols: int, split: int, state_floats: int) -> Launch:
    """min(rows * ceil(cols / tile_cols), SPLIT_GRID_CAP) workgroups of ``threads``, the workspace, and the
    emulator's co-resident launch (PRELAUNCH)."""
    grid = E.emin(E.mul("rows", E.cdiv("cols", tile_cols)), SPLIT_GRID_CAP)
    return Launch(threads=threads, grid=(GridDim(expr=grid), GridDim(), GridDim()), prelaunch=PRELAUNCH,
                  workspace=workspace_expr(split, state_floats))
