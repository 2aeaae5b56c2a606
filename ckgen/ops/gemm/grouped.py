"""The GEMM's grouped and masked modes (mixture of experts): the planning pass and the persistent grid.

``mode = grouped | masked`` (:mod:`ckgen.ops.gemm.abi` has the layouts) runs every group's tiles in one
persistent launch: ``device/gemm_grouped.h`` walks them (``device/gemm_group_walk.h``), calling the platform's
portable body per tile; on sm_90 the Hopper body (``device/gemm_sm90_tma.h``) walks them the same way. The grid
is at most :func:`workers` workgroups (the target's CUs times the workgroups one CU holds by LDS, at most
:data:`CTAS_PER_CU`), never more than the bound on the call's tiles (``abi.grouped_tiles_expr``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ops.gemm.body import Body

#: persistent workgroups per CU at most (fewer when the LDS of one does not fit that many times)
CTAS_PER_CU = 4
#: the entry per mode: header in device/, function
ENTRIES = {"grouped": "ckgen::gemm_grouped::grouped", "masked": "ckgen::gemm_grouped::masked"}
HEADER = "gemm_grouped.h"


@dataclass(frozen=True)
class GroupPlan:
    """A grouped or masked kernel: its mode and the most workgroups of its persistent grid."""

    mode: str
    workers: int

    def __post_init__(self) -> None:
        if self.mode not in ENTRIES or self.workers < 1:
            raise ValueError("GroupPlan: mode grouped or masked, workers >= 1")

    def to_json(self) -> dict:
        return {"mode": self.mode, "workers": self.workers}


def workers(target, lds_bytes: int) -> int:
    per_cu = max(1, min(CTAS_PER_CU, target.lds_bytes_per_cu // max(1, lds_bytes)))
    return target.cus * per_cu


#: the scalings a grouped kernel takes, per operand (``torch._scaled_grouped_mm``'s: A per tensor or per row, B per
#: group or per group and column)
GROUPED_SCALES = {"scale_a": ("tensor", "row"), "scale_b": ("tensor", "col")}


def plan_groups(d) -> None:
    """Grouped / masked kernels: the tile schedule only (the grouped walk is their schedule; ``auto`` means it),
    a persistent grid sized to the target; the Hopper body (planned by plan_tma_body, without TMA stores of C)
    walks the same groups. Scales (:data:`GROUPED_SCALES`) on ``mode = grouped`` only."""
    g, cfg = d.g, d.cfg
    if not g.grouped:
        return
    if cfg.schedule.kind not in ("tile", "auto"):
        raise d.fail("schedule", cfg.schedule.text, "tile or auto (the groups' tiles are one persistent schedule)",
                     f"split-K and stream-K are not implemented for mode = {g.mode}")
    for param, legal in GROUPED_SCALES.items():
        kind = getattr(g, param)
        if kind is None:
            continue
        if g.mode == "masked":
            raise d.fail(param, kind, "none", "scales are offered for mode = grouped, not masked, so far")
        if kind not in legal:
            raise d.fail(param, kind, ", ".join(legal), f"a grouped kernel takes {param} per "
                         + ("tensor or per row of A" if param == "scale_a" else "group (tensor) or per group and column"))
    d.grouping = GroupPlan(g.mode, workers(d.target, d.lds.total_bytes))


def body_of(grouping: GroupPlan, max_lds_buffers: int) -> Body:
    return Body(HEADER, ENTRIES[grouping.mode], max_lds_buffers=max_lds_buffers)
