"""The C ABI of a kernel, declared once per op as data.

An op's ``abi(spec)`` returns an :class:`Abi`: the kernel's arguments in order. Everything that passes
arguments is generated from, or driven by, this one declaration:

- the C header's prototype and the ``extern "C"`` host entry (``templates/launchers.cpp.j2``): argument
  checks, casts, the launch;
- the device entry's parameter list (``templates/kernel.hip.j2``);
- the Python callable (:mod:`ckgen.runtime.api`): which arrays it takes, how sizes are inferred from their
  shapes, how strides are read from their strides, which outputs it allocates; the emulator, CUDA and HIP
  runtimes and the ctypes argument types;
- the manifest (``abi`` of each kernel).

Argument kinds and their C types (host entry / device entry):

========== ======================= ==================== =================================================
kind       host (``int64_t`` ...)  device               meaning
========== ======================= ==================== =================================================
tensor     ``const void*``/``void*`` ``const T*``/``T*`` device memory of ``dtype``; ``dims`` name its
                                                        logical shape (outermost first), ``strides`` the
                                                        stride argument (or the literal 1) of each dim
size       ``int64_t``             ``int``              a runtime extent, ``0 <= v <= INT32_MAX``
stride     ``int64_t``             ``long long``        elements between consecutive items of one dim
scalar     ``float``               ``float``            a runtime value
workspace  ``void*``               ``void*``            device scratch memory the op's schedule needs; its
                                                        size is the plan's ``launch.workspace`` bytes
                                                        (an expression of the sizes, exported to C as
                                                        ``size_t ckgen_<kernel>_workspace_bytes(sizes)``);
                                                        zero-filled before its first use, and every call
                                                        leaves it zero-filled (so one buffer serves every
                                                        call, one call at a time); NULL when that size is 0
========== ======================= ==================== =================================================

Every entry ends with ``void* stream`` (not listed) and returns a ckgen status code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ckgen.ir.types import DType

INT32_MAX = 2**31 - 1


class ArgKind(Enum):
    TENSOR = "tensor"
    SIZE = "size"
    STRIDE = "stride"
    SCALAR = "scalar"
    WORKSPACE = "workspace"


@dataclass(frozen=True)
class Arg:
    """One argument. Tensors: ``dtype``, ``role`` (in | out | inout), ``dims`` (size names or fixed ints),
    ``strides`` (a stride argument's name or the int 1 for the contiguous dim, one per dim), ``broadcast``
    (dims that an array may leave out: their stride is then 0), ``unused`` (always NULL for this kernel, kept
    so that every kernel of the op has one signature), ``optional`` (may be NULL). Strides: ``at_least`` names
    sizes whose product (at least 1) bounds the stride from below; empty means ``>= 0``. Sizes and scalars may
    have a ``default`` (what the Python callable and ``ckgen run`` use when nothing else determines them)."""

    name: str
    kind: ArgKind
    doc: str = ""
    dtype: DType | None = None
    role: str = "in"
    dims: tuple[str | int, ...] = ()
    strides: tuple[str | int, ...] = ()
    broadcast: tuple[str, ...] = ()
    unused: bool = False
    optional: bool = False
    at_least: tuple[str, ...] = ()
    default: int | float | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"ABI argument name {self.name!r} is not an identifier")
        if self.kind == ArgKind.TENSOR:
            if self.dtype is None or self.role not in ("in", "out", "inout"):
                raise ValueError(f"tensor {self.name}: needs a dtype and a role in/out/inout")
            if len(self.dims) != len(self.strides) or not self.dims:
                raise ValueError(f"tensor {self.name}: one stride per dim")
            if not set(self.broadcast) <= set(self.dims):
                raise ValueError(f"tensor {self.name}: broadcast dims must be dims")
        elif self.dims or self.strides or self.broadcast:
            raise ValueError(f"{self.kind.value} {self.name}: only tensors have dims and strides")

    @property
    def is_tensor(self) -> bool:
        return self.kind == ArgKind.TENSOR

    @property
    def writes(self) -> bool:
        return self.role in ("out", "inout")

    @property
    def host_ctype(self) -> str:
        """The C type of the host entry's parameter."""
        if self.kind == ArgKind.TENSOR:
            return "void*" if self.writes else "const void*"
        return {ArgKind.SIZE: "int64_t", ArgKind.STRIDE: "int64_t", ArgKind.SCALAR: "float",
                ArgKind.WORKSPACE: "void*"}[self.kind]

    @property
    def device_ctype(self) -> str:
        """The C++ type of the device entry's parameter (and of the launcher's local copy)."""
        if self.kind == ArgKind.TENSOR:
            return f"{self.dtype.cpp}*" if self.writes else f"const {self.dtype.cpp}*"
        return {ArgKind.SIZE: "int", ArgKind.STRIDE: "long long", ArgKind.SCALAR: "float",
                ArgKind.WORKSPACE: "void*"}[self.kind]

    def to_json(self) -> dict:
        d: dict = {"name": self.name, "kind": self.kind.value, "ctype": self.host_ctype}
        if self.doc:
            d["doc"] = self.doc
        if self.kind == ArgKind.TENSOR:
            d.update(dtype=self.dtype.value, role=self.role, dims=list(self.dims), strides=list(self.strides),
                     broadcast=list(self.broadcast), unused=self.unused, optional=self.optional)
        if self.kind == ArgKind.STRIDE:
            d["at_least"] = list(self.at_least)
        if self.default is not None:
            d["default"] = self.default
        return d


@dataclass(frozen=True)
class Abi:
    """A kernel's arguments in order (then ``void* stream``). ``empty_if``: sizes any of which being 0 makes
    the call a no-op that returns success before touching memory. At most one argument is a workspace (its
    bytes are the plan's ``launch.workspace``)."""

    args: tuple[Arg, ...]
    empty_if: tuple[str, ...] = ()
    doc: str = ""
    _by_name: dict = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        names = [a.name for a in self.args]
        if len(set(names)) != len(names) or "stream" in names:
            raise ValueError(f"ABI argument names must be unique and not 'stream': {names}")
        object.__setattr__(self, "_by_name", {a.name: a for a in self.args})
        sizes = {a.name for a in self.args if a.kind == ArgKind.SIZE}
        strides = {a.name for a in self.args if a.kind == ArgKind.STRIDE}
        for a in self.args:
            for d in a.dims:
                if isinstance(d, str) and d not in sizes:
                    raise ValueError(f"tensor {a.name}: dim {d} is not a size argument")
            for s in a.strides:
                if isinstance(s, str) and s not in strides:
                    raise ValueError(f"tensor {a.name}: stride {s} is not a stride argument")
                if isinstance(s, int) and s != 1:
                    raise ValueError(f"tensor {a.name}: a literal stride must be 1")
            if not set(a.at_least) <= sizes:
                raise ValueError(f"stride {a.name}: at_least must name sizes")
        if not set(self.empty_if) <= sizes:
            raise ValueError("empty_if must name sizes")
        if len(self.of(ArgKind.WORKSPACE)) > 1:
            raise ValueError("an ABI has at most one workspace argument")

    def __getitem__(self, name: str) -> Arg:
        return self._by_name[name]

    def of(self, kind: ArgKind) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kind == kind)

    @property
    def tensors(self) -> tuple[Arg, ...]:
        return self.of(ArgKind.TENSOR)

    @property
    def sizes(self) -> tuple[Arg, ...]:
        return self.of(ArgKind.SIZE)

    @property
    def workspace(self) -> Arg | None:
        """The workspace argument, if the kernel takes one."""
        ws = self.of(ArgKind.WORKSPACE)
        return ws[0] if ws else None

    def without_workspace(self) -> Abi:
        """The same ABI with no workspace argument (what kernels that can replace each other share)."""
        return Abi(tuple(a for a in self.args if a.kind != ArgKind.WORKSPACE), self.empty_if, self.doc)

    def prototype(self, symbol: str) -> str:
        """The C prototype of the host entry ``symbol``."""
        params = ", ".join(f"{a.host_ctype} {a.name}" for a in self.args)
        return f"int {symbol}({params}, void* stream)"

    def to_json(self) -> list[dict]:
        return [a.to_json() for a in self.args]
