"""The row ops' plan for one target (:class:`RowPlan`, the ``body`` of their KernelPlan).

Every field is a decision of the passes in :mod:`ckgen.ops.rowops.plan`; the kernel template renders them into
the body's ``Cfg`` (``device/rowops_forward.h`` states the contract) and decides nothing itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RowPlan:
    header: str                 # the device header (device/rowops_entry.h)
    impl: str                   # the device entry the kernel calls (one per op)
    kind: str                   # softmax | log_softmax | layernorm | rmsnorm
    vec: int                    # elements per vector access
    threads_per_row: int        # a power of two
    waves_per_row: int          # threads_per_row / wave size, 1 when a row takes part of a wave
    rows_per_workgroup: int
    threads: int                # threads_per_row * rows_per_workgroup, whole waves
    reg_vecs: int               # vectors per thread and tile
    tile_cols: int              # threads_per_row * reg_vecs * vec
    looped: bool                # false: cols <= tile_cols (max_cols), the row read once
    max_cols: int | None        # the host entry's bound on cols (None: any)
    lds_bytes: int              # the cross-wave reduction's scratch and the row cache (LDS)
    registers_estimate: int     # 32-bit registers per thread, estimated
    wave_size: int
    cache_tiles: int = 0        # row_in = shared: tiles of a row kept in shared memory (0: none)
    workgroups_per_cu: int = 0  # > 0: the kernel's registers bounded for that many workgroups per CU / SM
    weight_vecs: int = 0        # weight and bias vectors loaded at once (0: the whole tile, before it)
    whole_vectors: bool = False  # a partial tile of a row of whole aligned vectors takes the fast path, predicated
    split: int = 0              # > 0: split rows, at most this many workgroups (slices of one tile) per row
    few_groups: int = 0         # > 0: grids of at most this many workgroups launch <name>_few (whole-tile weights)
    weight_ahead: bool = False  # the next weight vector asked for before this one's y is stored (Cfg::kWeightAhead)
    why: tuple[str, ...] = ()   # the planner's reasons, in words (`ckgen explain --kernel`)

    def __post_init__(self) -> None:
        if self.tile_cols != self.threads_per_row * self.reg_vecs * self.vec:
            raise ValueError("RowPlan: tile_cols != threads_per_row * reg_vecs * vec")
        if self.threads != self.threads_per_row * self.rows_per_workgroup or self.threads % self.wave_size:
            raise ValueError("RowPlan: threads must be threads_per_row * rows_per_workgroup, whole waves")
        if not self.looped and (self.max_cols is None or self.max_cols > self.tile_cols * max(1, self.split)):
            raise ValueError("RowPlan: a single-pass kernel's tile (a split one's kSplit tiles) holds max_cols")
        if self.split and (self.looped or self.rows_per_workgroup != 1 or self.cache_tiles):
            raise ValueError("RowPlan: split rows take one single-pass tile of one row per workgroup")
        if self.cache_tiles and (not self.looped or self.max_cols is None
                                 or self.max_cols > self.cache_tiles * self.tile_cols):
            raise ValueError("RowPlan: the row cache is looped and holds max_cols")
        if self.weight_vecs and (self.weight_vecs > self.reg_vecs or self.reg_vecs % self.weight_vecs):
            raise ValueError("RowPlan: weight_vecs divides reg_vecs")
        if self.few_groups and not (self.weight_vecs and self.weight_vecs < self.reg_vecs):
            raise ValueError("RowPlan: a few-rows entry only beside weights read in batches")
        if self.weight_ahead and not (self.weight_vecs and self.weight_vecs < self.reg_vecs):
            raise ValueError("RowPlan: weight_ahead only beside weights read in batches")
        if self.workgroups_per_cu < 0:
            raise ValueError("RowPlan: workgroups_per_cu >= 0")

    def to_json(self) -> dict:
        d = asdict(self)
        for key in ("split", "few_groups", "weight_ahead"):  # (absent when 0: the plans of other kernels as they were)
            if not d[key]:
                del d[key]
        return d
