"""What the user asked for: the target-independent description of one kernel.

The frontend builds these from the DSL; the lowering passes turn one ``KernelSpec`` plus one
target into a :class:`ckgen.ir.plan.KernelPlan`. Every class is frozen and checks its own
invariants in ``__post_init__`` (structural ones only; target legality is the passes' job).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ckgen.errors import SourceSpan
from ckgen.ir.types import DType, Layout

EPILOGUE_KINDS = ("bias", "relu", "gelu", "silu")
BIAS_AXES = ("row", "col")


@dataclass(frozen=True)
class TensorSpec:
    dtype: DType
    layout: Layout

    def to_json(self) -> dict:
        return {"dtype": self.dtype.value, "layout": self.layout.value}


@dataclass(frozen=True)
class EpilogueOp:
    """One step of the epilogue chain. ``bias`` has an ``axis``: ``row`` (one value per row
    of C, length M) or ``col`` (one per column, length N)."""

    kind: str
    axis: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EPILOGUE_KINDS:
            raise ValueError(f"unknown epilogue op {self.kind}")
        if (self.kind == "bias") != (self.axis is not None):
            raise ValueError("bias takes an axis, other ops none")
        if self.axis is not None and self.axis not in BIAS_AXES:
            raise ValueError(f"bias axis {self.axis}")

    @property
    def text(self) -> str:
        return f"bias({self.axis})" if self.axis else self.kind

    def to_json(self) -> dict:
        return {"kind": self.kind, "axis": self.axis}


@dataclass(frozen=True)
class GemmSpec:
    """``C = epilogue(alpha * A @ B + beta * C)``, cast to C's dtype. A is MxK, B is KxN."""

    a: TensorSpec
    b: TensorSpec
    c: TensorSpec
    acc: DType
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: tuple[EpilogueOp, ...] = ()

    def __post_init__(self) -> None:
        if sum(1 for op in self.epilogue if op.kind == "bias") > 1:
            raise ValueError("at most one bias in the epilogue")

    @property
    def has_bias(self) -> bool:
        return any(op.kind == "bias" for op in self.epilogue)

    @property
    def bias_axis(self) -> str | None:
        return next((op.axis for op in self.epilogue if op.kind == "bias"), None)

    def to_json(self) -> dict:
        return {"op": "gemm", "a": self.a.to_json(), "b": self.b.to_json(), "c": self.c.to_json(),
                "acc": self.acc.value, "alpha": self.alpha, "beta": self.beta,
                "epilogue": [op.to_json() for op in self.epilogue]}


@dataclass(frozen=True)
class TileConfig:
    """Workgroup tile, waves, matrix instruction (``None``: choose the best legal one),
    pipeline and vector widths (``None``: choose)."""

    tile: tuple[int, int, int]
    waves: tuple[int, int]
    instr: tuple[int, int, int] | None = None
    lds_buffers: int = 2
    prefetch: int = 1
    vec_a: int | None = None
    vec_b: int | None = None
    vec_c: int | None = None

    def __post_init__(self) -> None:
        if len(self.tile) != 3 or len(self.waves) != 2:
            raise ValueError("tile is MxNxK, waves is MxN")
        if self.instr is not None and len(self.instr) != 3:
            raise ValueError("instr is MxNxK")

    def to_json(self) -> dict:
        return {"tile": list(self.tile), "waves": list(self.waves),
                "instr": list(self.instr) if self.instr else None, "lds_buffers": self.lds_buffers,
                "prefetch": self.prefetch, "vec_a": self.vec_a, "vec_b": self.vec_b, "vec_c": self.vec_c}


@dataclass(frozen=True)
class KernelSpec:
    """One named kernel from a .ck file. ``spans`` maps parameter names (``tile``, ``A`` ...)
    to where they were written, so later errors can point at the source."""

    name: str
    arches: tuple[str, ...]
    gemm: GemmSpec
    config: TileConfig
    source: str = "<string>"
    family: str | None = None
    spans: tuple[tuple[str, SourceSpan], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"kernel name {self.name!r} is not an identifier")

    def span(self, param: str) -> SourceSpan | None:
        for key, sp in self.spans:
            if key == param:
                return sp
        for key, sp in self.spans:
            if key == "kernel":
                return sp
        return None

    def to_json(self) -> dict:
        """Canonical description (for manifests and cache keys): no spans, no paths."""
        return {"name": self.name, "arches": list(self.arches), "gemm": self.gemm.to_json(),
                "config": self.config.to_json(), "family": self.family}
