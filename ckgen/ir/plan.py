"""The target-resolved kernel plan: every decision codegen needs, already made.

A :class:`KernelPlan` is what an op's passes produce for one (KernelSpec, Target) pair, and what
:mod:`ckgen.codegen`, :mod:`ckgen.toolchain` and :mod:`ckgen.runtime` consume without knowing the op:

- ``body``: the op's own frozen plan (tiles, instructions, layouts ...), read by its templates;
- ``abi``: the C ABI (:mod:`ckgen.ir.abi`), the same on every target;
- ``launch``: threads per workgroup, the grid as a function of the runtime sizes, dynamic LDS, values the host
  entry computes from the sizes before launching, and the workspace bytes (:mod:`ckgen.ir.expr` expressions);
- ``entries``: the device kernels the generated source defines (the main one first).

A grid larger than the hardware launches (:data:`GRID_LIMITS`: 65535 workgroups along y and z) still runs: the
host entry runs it as consecutive sub-problems along that dimension's size (:func:`split_launch`, and the same
rule in ``templates/launchers.cpp.j2``), moving the pointer of every tensor with that dim by its stride.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ckgen.ir import expr as E
from ckgen.ir.abi import Abi
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target

#: CUDA and HIP launch limits on grid y and z
GRID_YZ_MAX = 65535
GRID_X_MAX = 2**31 - 1
#: workgroups one launch may have along x, y, z
GRID_LIMITS: tuple[int, int, int] = (GRID_X_MAX, GRID_YZ_MAX, GRID_YZ_MAX)


@dataclass(frozen=True)
class GridDim:
    """One grid dimension: ``ceil(size / per)`` workgroups (``size`` None: one workgroup), at most ``cap`` when
    given: ``min(ceil(size / per), cap)``, for bodies whose workgroups loop over the items past the grid (a
    grid-stride loop) and so take any grid >= 1; or, when ``expr`` is given, that expression
    (:mod:`ckgen.ir.expr`) of the sizes and the launch's values. ``split``: the op computes the workgroups along
    ``size`` independently, so a grid over the launch limit may run as consecutive sub-problems (each a slice of
    ``size``, every tensor with that dim offset to its slice); False: such a call fails with
    CKGEN_ERROR_INVALID_VALUE."""

    size: str | None = None
    per: int = 1
    split: bool = True
    expr: E.Expr | None = None
    cap: int | None = None

    def __post_init__(self) -> None:
        if self.per < 1:
            raise ValueError("GridDim.per must be >= 1")
        if self.expr is not None and self.size is not None:
            raise ValueError("GridDim: a size or an expression, not both")
        if self.cap is not None and (self.size is None or self.cap < 1):
            raise ValueError("GridDim.cap needs a size and must be >= 1")

    @property
    def expression(self) -> E.Expr:
        if self.expr is not None:
            return self.expr
        n = 1 if self.size is None else E.cdiv(self.size, self.per)
        return n if self.cap is None else E.emin(n, self.cap)

    def count(self, env: dict[str, int]) -> int:
        return E.evaluate(self.expression, env)

    def to_json(self) -> dict:
        d = {"size": self.size, "per": self.per, "split": self.split}
        if self.expr is not None:
            d["expr"] = E.to_json(self.expr)
        if self.cap is not None:
            d["cap"] = self.cap
        return d


@dataclass(frozen=True)
class Launch:
    """How the host entry launches the main entry: ``threads`` per 1-D workgroup, ``grid`` (x, y, z),
    ``lds_bytes`` of dynamic LDS (0: the kernel declares its LDS statically), and ``prelaunch``: an op
    template rendered in the host entry before the launch (e.g. a faster body tried first), or None.

    ``values``: named int64 values the host entry computes, in order, from the sizes (and earlier values)
    before it launches (e.g. a split count); grid dims, the workspace and the prelaunch template may use them
    (in C as ``<name>_v``). ``workspace``: the bytes of the ABI's workspace argument as an expression of the
    sizes and values (None: the kernel takes no workspace); exported to C callers as
    ``size_t ckgen_<kernel>_workspace_bytes(<size arguments>)``."""

    threads: int
    grid: tuple[GridDim, GridDim, GridDim]
    lds_bytes: int = 0
    prelaunch: str | None = None
    values: tuple[tuple[str, E.Expr], ...] = ()
    workspace: E.Expr | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.threads <= 1024 or len(self.grid) != 3 or self.lds_bytes < 0:
            raise ValueError("Launch: 1..1024 threads, three grid dims, lds_bytes >= 0")
        seen: set[str] = set()
        for name, _ in self.values:
            if not name.isidentifier() or name in seen:
                raise ValueError(f"Launch: value name {name!r} must be a new identifier")
            seen.add(name)

    def environment(self, sizes: dict[str, int]) -> dict[str, int]:
        """The sizes plus every value, computed in order."""
        env = dict(sizes)
        for name, e in self.values:
            env[name] = E.evaluate(e, env)
        return env

    def grid_counts(self, sizes: dict[str, int]) -> tuple[int, int, int]:
        env = self.environment(sizes)
        x, y, z = (g.count(env) for g in self.grid)
        return x, y, z

    def workspace_bytes(self, sizes: dict[str, int]) -> int:
        """Bytes of workspace a call at ``sizes`` needs (0 without a workspace)."""
        if self.workspace is None:
            return 0
        return max(0, E.evaluate(self.workspace, self.environment(sizes)))

    def to_json(self) -> dict:
        d = {"threads": self.threads, "grid": [g.to_json() for g in self.grid], "lds_bytes": self.lds_bytes,
             "prelaunch": self.prelaunch}
        if self.values:
            d["values"] = [[n, E.to_json(e)] for n, e in self.values]
        if self.workspace is not None:
            d["workspace"] = {"bytes": E.to_json(self.workspace), "formula": E.text(self.workspace)}
        return d


@dataclass(frozen=True)
class Entry:
    """A device kernel of the generated source: its symbol, workgroup size and dynamic LDS; ``variant_of``
    names the kernel whose alternative body it is, ``part_of`` the kernel whose host entry launches it too (e.g.
    a split-KV combine after the splits) or in its place for some calls (a row op's few-rows entry); both None for
    the main entry."""

    name: str
    threads: int
    lds_bytes: int
    variant_of: str | None = None
    part_of: str | None = None


@dataclass(frozen=True)
class KernelPlan:
    spec: KernelSpec
    target: Target
    body: Any           # the op's frozen plan; it has to_json()
    abi: Abi
    launch: Launch
    entries: tuple[Entry, ...]

    def __post_init__(self) -> None:
        if not self.entries or self.entries[0].name != self.spec.name:
            raise ValueError("KernelPlan: the first entry is the kernel itself")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def arch(self) -> str:
        return self.target.name

    @property
    def op(self) -> str:
        return self.spec.op

    @property
    def threads(self) -> int:
        return self.launch.threads

    def to_json(self) -> dict:
        """Canonical, complete description: the manifest entry's ``plan`` and part of cache keys."""
        return {"spec": self.spec.to_json(), "arch": self.target.name, "op": self.op, "body": self.body.to_json(),
                "abi": self.abi.to_json(), "launch": self.launch.to_json(),
                "entries": [{"name": e.name, "threads": e.threads, "lds_bytes": e.lds_bytes,
                             "variant_of": e.variant_of, "part_of": e.part_of} for e in self.entries]}


def split_axes(launch: Launch) -> list[tuple[int, GridDim]]:
    """(axis, dim) of the grid dimensions that may run as sub-problems (see :class:`GridDim`)."""
    return [(axis, g) for axis, g in enumerate(launch.grid) if g.size is not None and g.split and g.expr is None
            and (g.cap is None or g.cap > GRID_LIMITS[axis])]


def split_launch(abi: Abi, launch: Launch, values: dict, limits: tuple[int, int, int] | None = None) -> list[dict]:
    """The sub-problems a call runs as: argument values by ABI name (tensors as integer addresses, sizes, strides),
    ``[values]`` when the grid fits ``limits`` (default :data:`GRID_LIMITS`). A too-large dimension is cut into
    slices of ``limit * per`` along its size; each tensor with that dim moves by ``offset * stride * bytes``."""
    limits = limits or GRID_LIMITS
    for axis, g in split_axes(launch):
        total = values[g.size]
        step = limits[axis] * g.per
        if g.count(values) <= limits[axis]:
            continue
        out: list[dict] = []
        for off in range(0, total, step):
            sub = dict(values, **{g.size: min(step, total - off)})
            for t in abi.tensors:
                for d, st in zip(t.dims, t.strides, strict=True):
                    if d == g.size and sub.get(t.name):
                        sub[t.name] += off * (values[st] if isinstance(st, str) else 1) * t.dtype.bytes
            out += split_launch(abi, launch, sub, limits)
        return out
    return [values]
