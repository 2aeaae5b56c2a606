"""What the user asked for: one named kernel, target-independent, for any op.

The frontend builds a :class:`KernelSpec` per kernel of a .ck file. ``op`` names the op (a key of
:mod:`ckgen.ops`), ``params`` is that op's frozen description of the kernel (its dtypes, layouts, tile ...),
built and validated by the op. The lowering passes turn one KernelSpec plus one target into a
:class:`ckgen.ir.plan.KernelPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ckgen.errors import SourceSpan
from ckgen.ir.types import DType, Layout


class OpParams(Protocol):
    """An op's frozen kernel description: canonical JSON for manifests and cache keys."""

    def to_json(self) -> dict: ...


@dataclass(frozen=True)
class Value:
    """A parsed DSL value, as the frontend hands it to an op's ``build_params``. ``kind`` is one of dims, number, tensor, call, chain, list.

    dims: ``data`` is a tuple of ints; number: a float (``text`` keeps the spelling);
    tensor: (dtype_name, layout_name); call: (name, args tuple); chain: tuple of call Values;
    list: tuple of Values.
    """

    kind: str
    data: object
    span: SourceSpan
    text: str = ""


@dataclass(frozen=True)
class TensorSpec:
    """A dtype and the memory order of a matrix (the last two dims of a tensor)."""

    dtype: DType
    layout: Layout

    def to_json(self) -> dict:
        return {"dtype": self.dtype.value, "layout": self.layout.value}


@dataclass(frozen=True)
class KernelSpec:
    """One named kernel from a .ck file. ``spans`` maps parameter names (``tile``, ``A`` ...) to where they
    were written, so later errors can point at the source. ``own_arches``: the kernel names its targets itself
    (``arch = ...``) instead of taking the file's ``target`` line; a command's ``--arch`` then selects among them
    rather than replacing them (ckgen.driver.plan)."""

    name: str
    arches: tuple[str, ...]
    op: str
    params: OpParams
    source: str = "<string>"
    family: str | None = None
    spans: tuple[tuple[str, SourceSpan], ...] = field(default=(), compare=False)
    own_arches: bool = False

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"kernel name {self.name!r} is not an identifier")

    @property
    def source_name(self) -> str:
        """The spec file's name without its directory: what generated text shows (so the same spec gives the
        same sources, libraries and cache keys from any working directory, by any path)."""
        return self.source.replace("\\", "/").rsplit("/", 1)[-1]

    def span(self, param: str) -> SourceSpan | None:
        """Where ``param`` was written, else where the kernel was named."""
        for key, sp in self.spans:
            if key == param:
                return sp
        for key, sp in self.spans:
            if key == "kernel":
                return sp
        return None

    def to_json(self) -> dict:
        """Canonical description (for manifests and cache keys): no spans, no paths."""
        return {"name": self.name, "arches": list(self.arches), "op": self.op, "params": self.params.to_json(),
                "family": self.family}
