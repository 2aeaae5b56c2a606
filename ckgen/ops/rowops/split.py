"""Split rows: a row longer than one workgroup holds in registers, cut into slices of one single-pass tile, one
workgroup per slice, so that x is read from global memory once (device/rowops_pipeline_split.h states the body's
contract: the slices' partial states exchanged through a global workspace, combined in slice order).

Whether a kernel splits its rows, and into at most how many workgroups (:func:`split_of`: the Cfg's ``kSplit``),
depends on the kernel's description only, never on the target: it decides the ABI (a ``workspace`` argument), which
every target of a library shares. By default a row is split when ``max_cols`` rows of ``v`` take more than
:data:`SPLIT_ROW_BYTES` (more than any target's row cache holds: the planner would loop and read the row twice),
into ``ceil(vectors / SLICE_VECS)`` slices (at most :data:`DEFAULT_MAX_SPLIT`; more, up to :data:`MAX_SPLIT`, where
no tile of the target holds such a slice); the kernel may say ``split = N`` (2 .. MAX_SPLIT: at most N workgroups
per row) or ``split = 1`` (never). The planner (``plan.py``'s choose_rows, :func:`choose`) fits one tile to a
slice of ``ceil(vectors / kSplit)`` vectors, or, for the kinds :data:`WIDE_SLICES` names, a wider slice at one
workgroup per SM (fewer slices: :func:`wide_tile`); a call splits a row of ``cols`` into ``ceil(cols / tile)``
slices (at most kSplit).
"""

from __future__ import annotations

from collections.abc import Callable

from ckgen.ir import expr as E
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.spec import KernelSpec

#: rows of v (max_cols x the bytes of v) longer than this are split by default: NVIDIA's row cache planning limit
#: (tiles.PLAN_ROW_LDS, the larger of the two wave sizes'), so that no target would keep the row in shared memory
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
#: most threads of a workgroup
MAX_THREADS = 1024
#: split-row tiles compiled for more workgroups per CU / SM than the register estimate gives (plan.bound_registers,
#: CKGEN_LAUNCH_BOUNDS_MIN), per wave size: (kind, threads, reg_vecs, workgroups). A workgroup waits for its row's
#: other slices between loading and writing its own; a second one per SM keeps loads in flight meanwhile. nvcc 13,
#: sm_90a, 512 x 4 at 64 registers: softmax, log-softmax, f32 and residual softmax without spills; layer norm spills 4
#: bytes, a residual RMS norm 8 (those keep one workgroup per SM)
SPLIT_BOUNDED: dict[int, tuple[tuple[str, int, int, int], ...]] = {
    32: (("softmax", 512, 4, 2), ("log_softmax", 512, 4, 2)),
    64: (),
}

#: wide slices, per wave size: kind -> (threads, fewest vectors, most vectors, most slices, narrow cuts kept). A
#: default split of such a kind is cut into S = ceil(n / (threads x fewest)) slices, or ceil(n / (threads x most))
#: where that passes the most, each held by threads x max(fewest, ceil(ceil(n / S) / threads)) vectors (about 127
#: registers: one workgroup per SM); a row of more vectors, or whose cut into slices of SLICE_VECS is one of the
#: narrow cuts kept, keeps slices of SLICE_VECS. nvcc 13, sm_90a, on an H100, bf16 softmax, 1024 rows
#: (bench/runs/2026-12-06e_h100_split_tiles_wide.txt, ..._wide_slices.txt): 86-95% of copy at 50304-186000 columns
#: with 3-4 or 7-8 such slices, against 56-89% with slices of 512 x 4 at two per SM; more slices ran at 50-77%; but
#: where the narrow cut is 7 or 8 slices (a cluster of 8 at run time: cluster_size_for), it ran 2-8 points ahead of
#: 5-6 wide ones (100352: 86.0 / 83.9%, 108000: 89.1 / 81.5%, 119000: 86.1 / 81.4%)
WIDE_SLICES: dict[int, dict[str, tuple[int, int, int, int, tuple[int, ...]]]] = {
    32: {"softmax": (512, 5, 6, 8, (7, 8))}, 64: {}}


def _vectors(spec: KernelSpec) -> int | None:
    cfg, row = spec.params.config, spec.params.row
    if cfg.max_cols is None:
        return None
    vec = cfg.vec or max(1, 16 // row.x.bytes)
    return -(-cfg.max_cols // vec)


def default_split(spec: KernelSpec) -> int:
    """The split the planner gives a kernel that does not say ``split`` (0: none): rows of more than
    SPLIT_ROW_BYTES of v, the rest of the cut left to the planner, no int8 output, a y (``y = none``: the looped
    plan reads the row once as well)."""
    cfg, row = spec.params.config, spec.params.row
    n = _vectors(spec)
    planned = (cfg.looped is None and cfg.row_in is None and cfg.threads_per_row is None and cfg.reg_vecs is None
               and cfg.rows_per_workgroup is None)
    if n is None or not planned or row.quantized or cfg.max_cols * row.res_dtype.bytes <= SPLIT_ROW_BYTES:
        return 0
    if not row.write_y:  # y = none: the looped plan reads the row once too
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


def wide_tile(kind: str, wave_size: int, n: int, split: int) -> tuple[int, int] | None:
    """(threads, reg_vecs) of a wide slice of a row of ``n`` vectors split at most ``split`` ways (WIDE_SLICES), or
    None where the kind has none, the row's narrow cut is one the table keeps, or the row needs more slices than
    the table's most."""
    line = WIDE_SLICES[wave_size].get(kind)
    if line is None or _cdiv(n, SLICE_VECS) in line[4]:
        return None
    threads, fewest, most, most_slices, _ = line
    slices = _cdiv(n, threads * fewest)
    if slices > most_slices:
        slices = _cdiv(n, threads * most)
    if slices > min(most_slices, split):
        return None
    return threads, max(fewest, _cdiv(_cdiv(n, slices), threads))


def bounded_groups(kind: str, wave_size: int, threads: int, reg_vecs: int) -> int:
    """The workgroups per CU / SM a split-row tile is compiled for (SPLIT_BOUNDED; 0: as the estimate gives)."""
    return next((g for k, t, r, g in SPLIT_BOUNDED[wave_size] if (k, t, r) == (kind, threads, reg_vecs)), 0)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def choose(d, n: int | None, tile_of: Callable[[object, int], tuple[int, int] | None]) -> None:
    """The planning pass of a kernel with split rows (plan.py's choose_rows, when :func:`split_of` > 0): its
    keys checked against the split, then one workgroup per slice of at most ceil(n / kSplit) of the row's ``n``
    vectors, the slice in one single-pass tile (``tile_of(d, vectors)``: (threads, reg_vecs), or None where no tile
    of whole waves fits the register budget), one row per workgroup. A default split takes more slices (up to
    MAX_SPLIT) where no tile holds one; sets ``d.split`` (the register estimates count it), the tile, ``d.why``."""
    cfg, s, w = d.cfg, split_of(d.spec), d.target.wave_size
    t_given = cfg.threads_per_row
    for key, value, bad, legal in (("max_cols", "any", n is None, "1..2147483647 (split rows are cut by max_cols)"),
                                   ("threads_per_row", t_given, t_given is not None and t_given < w,
                                    f"{w}..{MAX_THREADS} with split (whole waves: a workgroup holds one row)"),
                                   ("looped", "true", cfg.looped is True, "false, or split = 1"),
                                   ("row_in", cfg.row_in, cfg.row_in is not None, "none with split, or split = 1"),
                                   ("y", d.row.y.value, d.row.quantized, "f16, bf16 or f32 with split, or split = 1"),
                                   ("rows_per_workgroup", cfg.rows_per_workgroup, cfg.rows_per_workgroup not in
                                    (None, 1), "1 with split (a workgroup holds one slice of one row)")):
        if bad:
            raise d.fail(key, value, legal, f"split = {s}: the rows are split over workgroups")
    first, found = s, None
    most = s if cfg.split else MAX_SPLIT  # a default split: more slices if need be; a given one: that one
    if cfg.split is None and t_given is None and cfg.reg_vecs is None:
        d.split, found = s, wide_tile(d.row.row_kind.name, w, n, s)
    while found is None and s <= most:
        d.split = s
        found = tile_of(d, _cdiv(n, s))
        s += found is None
    if found is None:
        raise d.fail("split", cfg.split or first, f"a larger split (up to {MAX_SPLIT}), or split = 1",
                     f"no single-pass tile of whole waves holds a slice of {_cdiv(n, first)} vectors of {d.vec} "
                     f"within the register budget on {d.target.name}")
    if found[0] * found[1] * d.vec * s < cfg.max_cols:  # (a tile as given)
        raise d.fail("reg_vecs", found[1], f"reg_vecs >= {_cdiv(_cdiv(n, s), found[0])} (or a larger split)",
                     f"{s} slices of {found[0]} threads x {found[1]} vectors of {d.vec} hold fewer than max_cols = "
                     f"{cfg.max_cols} columns")
    (d.threads_per_row, d.reg_vecs), d.looped, d.rows_per_workgroup = found, False, 1
    how = f"split = {cfg.split}" if cfg.split else f"rows of more than {SPLIT_ROW_BYTES // 1024} KiB of v"
    cut = _cdiv(cfg.max_cols, d.tile_cols)
    wide = ", a wide slice: one workgroup per SM" if cut < s else ""
    d.why.append(f"split rows ({how}): a row of max_cols = {cfg.max_cols} is cut into {cut} slices of at most "
                 f"{_cdiv(n, cut)} vectors (kSplit {s}), one per workgroup ({d.threads_per_row} threads x "
                 f"{d.reg_vecs} vectors{wide}, tile {d.tile_cols}), each held in registers: x read once, the "
                 "slices' partial statistics exchanged (a thread-block cluster on sm_90 where one fits, else the "
                 "workspace) and combined in slice order; a call of cols takes ceil(cols / tile) slices")
