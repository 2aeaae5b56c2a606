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
size       ``int64_t``             ``int``              a runtime extent, ``0 <= v <= INT32_MAX`` (or ``at_most``)
stride     ``int64_t``             ``long long``        elements between consecutive items of one dim
scalar     ``float``               ``float``            a runtime value (``dtype`` None or f32)
scalar     ``int32_t``             ``int``              a runtime integer (``dtype`` i32; may be negative)
workspace  ``void*``               ``void*``            device scratch memory the op's schedule needs; its
                                                        size is the plan's ``launch.workspace`` bytes
                                                        (an expression of the sizes, exported to C as
                                                        ``size_t ckgen_<kernel>_workspace_bytes(sizes)``);
                                                        zero-filled before its first use, and every call
                                                        leaves it zero-filled (so one buffer serves every
                                                        call, one call at a time); NULL when that size is 0
========== ======================= ==================== =================================================

Every entry ends with ``void* stream`` (not listed) and returns a ckgen status code.

Beyond one size per dim:

- a dim may be a size plus a constant, ``"batch+1"`` (:func:`split_dim`): an offsets array of ``batch + 1``
  entries; or a size times a constant, ``"2*N"`` (:func:`dim_parts`): a matrix of twice N columns (the binding
  refuses an extent that is not a multiple); or a size divided by a constant, ``"K/2"``: packed elements (a byte
  of two fp4 values), the size a multiple of the divisor (``divides``); a stride's ``at_least`` may name such
  dims too;
- ``Abi.extents`` names dims that are not arguments: extents the binding reads from the arrays (every array
  naming one must agree) and uses to allocate outputs, but does not pass (e.g. the total token count of
  packed variable-length sequences);
- an ``offsets_of`` tensor (1-D, integer) indexes into that extent, in one of the :data:`OFFSETS_FORMS`
  (``offsets_form``): ``starts`` (cumulative lengths from 0, ``n + 1`` entries: non-decreasing, the first 0, the
  last at most the extent), ``ends`` (the cumulative end of each of ``n`` runs, as ``torch._grouped_mm``'s
  ``offs``: non-negative, non-decreasing, the last at most the extent) or ``counts`` (a length per run, each in
  0..the extent). The binding checks what it reads; the host entry cannot;
- a ``from_offsets`` size that no dim determines is, when the caller leaves it out, the largest step between
  consecutive entries of that offsets tensor (the longest sequence), read by the binding (a synchronization
  for device arrays);
- ``Abi.divides``: pairs (a, b) of sizes (a may be an int constant) with a >= 1 and b a multiple of a, checked by the host entry (unless
  ``empty_if`` makes the call a no-op) and by the binding;
- ``Abi.blocks``: triples (count, size, block) of two sizes and an int: count must be ceil(size / block) (the
  blocks of a blocked operand, e.g. K blocks of 128 for block scales), checked where ``divides`` is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum
from fractions import Fraction

from ckgen.ir import expr as E
from ckgen.ir.types import DType

INT32_MAX = 2**31 - 1
#: what the entries of an ``offsets_of`` tensor are (module docstring)
OFFSETS_FORMS = ("starts", "ends", "counts")


class ArgKind(Enum):
    TENSOR = "tensor"
    SIZE = "size"
    STRIDE = "stride"
    SCALAR = "scalar"
    WORKSPACE = "workspace"


@dataclass(frozen=True)
class Arg:
    """One argument. Tensors: ``dtype``, ``role`` (in | out | inout), ``dims`` (size names, ``size+k``, extent
    names of the Abi, or fixed ints), ``strides`` (a stride argument's name or the int 1 for the contiguous dim,
    one per dim), ``broadcast`` (dims that an array may leave out: their stride is then 0), ``unused`` (always
    NULL for this kernel, kept so that every kernel of the op has one signature), ``optional`` (may be NULL),
    ``offsets_of`` (an offsets array into that dim name, its entries as ``offsets_form`` says; see the module
    docstring). Written tensors may name in
    ``aliases`` the tensors they may share memory with, as the very same view (same address, shape and strides:
    in place, e.g. ``y`` over ``x``); any other overlap is refused by the binding. Strides: ``at_least`` names
    sizes whose product (at least 1) bounds the stride from below; empty means ``>= 0``. Sizes and scalars may
    have a ``default`` (what the Python callable and ``ckgen run`` use when nothing else determines them; an op
    may compute it from the kernel, e.g. a scale of 1/sqrt(head dim)); sizes may name the offsets tensor they
    follow from (``from_offsets``) and an upper bound ``at_most`` (the host entry returns
    ``CKGEN_ERROR_INVALID_VALUE`` above it, the binding and ``ckgen run`` refuse it by name; e.g. a kernel
    compiled for rows of at most N columns). Scalars: ``dtype`` None (f32) or i32, and ``bounds`` (lo, hi): the
    legal values, inclusive (NaN is outside), checked by the host entry and the binding. Integer inputs may have a
    ``value_range`` (lo, hi): expressions of the sizes (:mod:`ckgen.ir.expr`) bounding every entry, inclusive,
    checked by the binding when the array is on the host (numpy); the host entry cannot read device memory, so
    the kernel checks what it reads (e.g. per-sequence lengths against a cache's capacity)."""

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
    offsets_of: str | None = None
    offsets_form: str = "starts"
    from_offsets: str | None = None
    bounds: tuple[float, float] | None = None
    at_most: int | None = None
    aliases: tuple[str, ...] = ()
    value_range: tuple[E.Expr, E.Expr] | None = None

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
            if self.offsets_of is not None and (len(self.dims) != 1 or self.dtype.is_float or self.role != "in"):
                raise ValueError(f"tensor {self.name}: an offsets array is a 1-D integer input")
            if self.offsets_form not in OFFSETS_FORMS:
                raise ValueError(f"tensor {self.name}: offsets_form is one of {OFFSETS_FORMS}")
            if self.aliases and not self.writes:
                raise ValueError(f"tensor {self.name}: only written tensors declare aliases")
            if self.value_range is not None and (self.dtype.is_float or self.role != "in" or len(self.value_range) != 2):
                raise ValueError(f"tensor {self.name}: a value range (lo, hi) is for integer inputs")
        elif self.dims or self.strides or self.broadcast or self.offsets_of or self.aliases:
            raise ValueError(f"{self.kind.value} {self.name}: only tensors have dims, strides, offsets and aliases")
        if self.kind == ArgKind.SCALAR and self.dtype not in (None, DType.F32, DType.I32):
            raise ValueError(f"scalar {self.name}: dtype f32 or i32")
        if self.kind not in (ArgKind.TENSOR, ArgKind.SCALAR) and self.dtype is not None:
            raise ValueError(f"{self.kind.value} {self.name}: only tensors and scalars have a dtype")
        if self.from_offsets is not None and self.kind != ArgKind.SIZE:
            raise ValueError(f"{self.kind.value} {self.name}: only sizes follow from offsets")
        if self.bounds is not None and (self.kind != ArgKind.SCALAR or not self.bounds[0] <= self.bounds[1]):
            raise ValueError(f"{self.kind.value} {self.name}: only scalars have bounds (lo <= hi)")
        if self.at_most is not None and (self.kind != ArgKind.SIZE or not 0 <= self.at_most <= INT32_MAX):
            raise ValueError(f"{self.kind.value} {self.name}: only sizes have an upper bound, in 0..INT32_MAX")

    @property
    def is_int_scalar(self) -> bool:
        return self.kind == ArgKind.SCALAR and self.dtype == DType.I32

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
        if self.is_int_scalar:
            return "int32_t"
        return {ArgKind.SIZE: "int64_t", ArgKind.STRIDE: "int64_t", ArgKind.SCALAR: "float",
                ArgKind.WORKSPACE: "void*"}[self.kind]

    @property
    def device_ctype(self) -> str:
        """The C++ type of the device entry's parameter (and of the launcher's local copy)."""
        if self.kind == ArgKind.TENSOR:
            return f"{self.dtype.cpp}*" if self.writes else f"const {self.dtype.cpp}*"
        if self.is_int_scalar:
            return "int"
        return {ArgKind.SIZE: "int", ArgKind.STRIDE: "long long", ArgKind.SCALAR: "float",
                ArgKind.WORKSPACE: "void*"}[self.kind]

    def to_json(self) -> dict:
        d: dict = {"name": self.name, "kind": self.kind.value, "ctype": self.host_ctype}
        if self.doc:
            d["doc"] = self.doc
        if self.kind == ArgKind.TENSOR:
            d.update(dtype=self.dtype.value, role=self.role, dims=list(self.dims), strides=list(self.strides),
                     broadcast=list(self.broadcast), unused=self.unused, optional=self.optional)
            if self.offsets_of:
                d["offsets_of"] = self.offsets_of
                if self.offsets_form != "starts":
                    d["offsets_form"] = self.offsets_form
            if self.aliases:
                d["aliases"] = list(self.aliases)
            if self.value_range is not None:
                d["value_range"] = [E.to_json(e) for e in self.value_range]
        if self.is_int_scalar:
            d["dtype"] = self.dtype.value
        if self.from_offsets:
            d["from_offsets"] = self.from_offsets
        if self.bounds is not None:
            d["bounds"] = list(self.bounds)
        if self.kind == ArgKind.STRIDE:
            d["at_least"] = list(self.at_least)
        if self.at_most is not None:
            d["at_most"] = self.at_most
        if self.default is not None:
            d["default"] = self.default
        return d


def packed_dim(dim: str, dt: DType) -> str:
    """The extent of ``dim`` values of ``dt`` in storage elements: ``dim``, or ``dim/2`` for a dtype packing two
    values an element (fp4 pairs); the ABI then also needs ``divides`` (pack, dim)."""
    return dim if dt.pack == 1 else f"{dim}/{dt.pack}"


def dim_parts(d: str | int) -> tuple[str | None, int | Fraction, int]:
    """A dim's size name, multiplier and constant: ``"M"`` -> ("M", 1, 0), ``"batch+1"`` -> ("batch", 1, 1),
    ``"2*N"`` -> ("N", 2, 0), ``"K/2"`` -> ("K", Fraction(1, 2), 0), ``64`` -> (None, 0, 64). A divided dim
    holds packed elements (two fp4 values per byte): the ABI must make its size a multiple of the divisor
    (``Abi.divides``); ``extent // mult`` is then the size an extent gives."""
    if isinstance(d, str) and "*" in d:
        k, _, name = d.partition("*")
        if not (k.isdigit() and int(k) >= 2 and name.isidentifier()):
            raise ValueError(f"dim {d!r}: expected INT*NAME (INT >= 2)")
        return name, int(k), 0
    if isinstance(d, str) and "/" in d:
        name, _, k = d.partition("/")
        if not (k.isdigit() and int(k) >= 2 and name.isidentifier()):
            raise ValueError(f"dim {d!r}: expected NAME/INT (INT >= 2)")
        return name, Fraction(1, int(k)), 0
    name, k = split_dim(d)
    return name, 0 if name is None else 1, k


def dim_value(d: str | int, sizes: dict[str, int]) -> int:
    """The extent of dim ``d`` at ``sizes`` (a divided dim rounded up: the bytes that hold the packed values)."""
    name, mult, add = dim_parts(d)
    return add if name is None else math.ceil(mult * sizes[name]) + add


def split_dim(d: str | int) -> tuple[str | None, int]:
    """A dim's name and constant: ``"batch+1"`` -> ("batch", 1), ``"M"`` -> ("M", 0), ``64`` -> (None, 64)
    (a multiplied dim ``"2*N"``: :func:`dim_parts`)."""
    if isinstance(d, int):
        return None, d
    if "*" in d or "/" in d:
        raise ValueError(f"dim {d!r} is multiplied or divided: read it with dim_parts")
    name, plus, k = d.partition("+")
    if plus and not (k.isdigit() and name.isidentifier()):
        raise ValueError(f"dim {d!r}: expected NAME or NAME+INT")
    return name, int(k) if plus else 0


@dataclass(frozen=True)
class Abi:
    """A kernel's arguments in order (then ``void* stream``). ``empty_if``: sizes any of which being 0 makes
    the call a no-op that returns success before touching memory. At most one argument is a workspace (its
    bytes are the plan's ``launch.workspace``). ``extents``: dim names that are not arguments; ``divides``:
    (a, b) size pairs with b % a == 0 and a >= 1; ``blocks``: (count, size, block) with count = ceil(size / block)
    (module docstring)."""

    args: tuple[Arg, ...]
    empty_if: tuple[str, ...] = ()
    doc: str = ""
    extents: tuple[str, ...] = ()
    divides: tuple[tuple[str | int, str], ...] = ()
    blocks: tuple[tuple[str, str, int], ...] = ()
    _by_name: dict = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        names = [a.name for a in self.args]
        if len(set(names)) != len(names) or "stream" in names:
            raise ValueError(f"ABI argument names must be unique and not 'stream': {names}")
        object.__setattr__(self, "_by_name", {a.name: a for a in self.args})
        sizes = {a.name for a in self.args if a.kind == ArgKind.SIZE}
        strides = {a.name for a in self.args if a.kind == ArgKind.STRIDE}
        tensors = {a.name for a in self.args if a.kind == ArgKind.TENSOR}
        if set(self.extents) & set(names) or any(not e.isidentifier() for e in self.extents):
            raise ValueError(f"extents {self.extents} must be identifiers other than argument names")
        for a in self.args:
            for d in a.dims:
                name, _, _ = dim_parts(d)
                if name is not None and name not in sizes and name not in self.extents:
                    raise ValueError(f"tensor {a.name}: dim {d} is not a size argument or an extent")
            if a.value_range is not None and not set().union(*map(E.names, a.value_range)) <= sizes:
                raise ValueError(f"tensor {a.name}: value_range must be expressions of size arguments")
            if a.offsets_of is not None and a.offsets_of not in sizes | set(self.extents):
                raise ValueError(f"tensor {a.name}: offsets_of must name a size or an extent")
            if a.from_offsets is not None and (a.from_offsets not in tensors
                                               or self._by_name[a.from_offsets].offsets_of is None):
                raise ValueError(f"size {a.name}: from_offsets must name an offsets tensor")
            for s in a.strides:
                if isinstance(s, str) and s not in strides:
                    raise ValueError(f"tensor {a.name}: stride {s} is not a stride argument")
                if isinstance(s, int) and s != 1:
                    raise ValueError(f"tensor {a.name}: a literal stride must be 1")
            if not {dim_parts(d)[0] for d in a.at_least} <= sizes:
                raise ValueError(f"stride {a.name}: at_least must name sizes")
            for other in a.aliases:
                o = self._by_name.get(other)
                if o is None or not o.is_tensor or o.name == a.name or o.dtype != a.dtype or o.dims != a.dims:
                    raise ValueError(f"tensor {a.name}: aliases names a tensor of the same dtype and dims")
        if not set(self.empty_if) <= sizes:
            raise ValueError("empty_if must name sizes")
        if len(self.of(ArgKind.WORKSPACE)) > 1:
            raise ValueError("an ABI has at most one workspace argument")
        if any(len(p) != 2 or p[1] not in sizes or not (p[0] in sizes or (isinstance(p[0], int) and p[0] >= 1))
               for p in self.divides):
            raise ValueError("divides must be pairs of sizes (the first may be an int >= 1)")
        if any(len(t) != 3 or not {t[0], t[1]} <= sizes or not isinstance(t[2], int) or t[2] < 1 for t in self.blocks):
            raise ValueError("blocks must be (count size, size, block >= 1) triples")

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
        return replace(self, args=tuple(a for a in self.args if a.kind != ArgKind.WORKSPACE))

    def prototype(self, symbol: str) -> str:
        """The C prototype of the host entry ``symbol``."""
        params = ", ".join(f"{a.host_ctype} {a.name}" for a in self.args)
        return f"int {symbol}({params}, void* stream)"

    def to_json(self) -> list[dict]:
        return [a.to_json() for a in self.args]
