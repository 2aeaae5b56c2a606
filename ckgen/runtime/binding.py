"""Binding a call's arrays to a kernel's ABI (:mod:`ckgen.ir.abi`), once, for every backend and op.

:func:`bind` takes the arrays the caller passed (by ABI tensor name), checks each against its ABI argument
and returns a :class:`Call` holding the value of every ABI argument in order:

- dtype: the argument's (bf16 travels as uint16 bit patterns, see :func:`ckgen.ir.arrays.to_bf16`);
- rank and shape: one extent per ``dims`` entry; a ``broadcast`` dim may be left out (leading) or have extent
  1, and then gets stride 0; every size (and every extent of ``Abi.extents``) is the common extent of the dims
  that name it (a ``size+k`` dim: its extent minus k); sizes no array determines come from the caller's
  ``sizes``, from an offsets tensor (``from_offsets``: its largest step, read through ``backend.to_host``) or
  the argument's default; offsets tensors that are read are checked (non-decreasing integers from 0, the last
  at most their extent); ``Abi.divides`` pairs are checked;
- strides: the dim whose ABI stride is the literal 1 must have unit stride (the kernel's layout), the others
  give their stride arguments (an extent of 0 or 1 makes the stride irrelevant: its smallest legal value is
  passed), at least the bound the ABI states; no negative strides;
- outputs the caller left out are allocated by the backend (poisoned on the host), unless the kernel reads
  them (role ``inout``);
- sizes: in 0..INT32_MAX, and at most a size's ``at_most`` bound;
- no output may share an element's memory with another tensor of the call, nor with itself (a stride-0 view):
  aliasing gives wrong results, except with a tensor the output declares in ``aliases``, and then only as the
  very same view (address, shape, element strides: in place). The test is exact for strided arrays in one
  address space (numpy's ``shares_memory`` on views describing each array, never reading it): two views that
  only interleave, like the two halves of one matrix's columns, are fine; when the exact test is too hard,
  overlapping ranges are refused;
- a workspace argument (:data:`~ckgen.ir.abi.ArgKind.WORKSPACE`) gets the caller's buffer when it holds at least
  the plan's ``launch.workspace_bytes(sizes)`` bytes (zero-filled, as the ABI requires), else a new
  zero-filled one from the backend (``new_workspace``); None when the call needs none;
- the grid the sizes give fits the launch limits (x < 2^31, y and z <= 65535), unless its dims split;
- scalars: floats, or integers in the int32 range for ``i32`` scalars;
- integer inputs with a ``value_range`` (e.g. per-sequence lengths against a cache's capacity): every entry within
  it, when the array is on the host (device arrays are not read: the kernel checks).

Every problem is a :class:`~ckgen.errors.RuntimeFailure` naming the kernel and the argument.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ckgen.backends.base import ArrayInfo, Call
from ckgen.errors import RuntimeFailure
from ckgen.ir import expr as E
from ckgen.ir.abi import INT32_MAX, Arg, ArgKind, dim_parts, dim_value
from ckgen.ir.arrays import memory_order, numpy_dtype, shape_of
from ckgen.ir.plan import GRID_X_MAX, GRID_YZ_MAX, KernelPlan, split_axes
from ckgen.ir.types import DType


def positional(abi) -> list[str]:
    """The tensors a Python callable takes positionally: the kernel's inputs (role ``in``, not unused) in ABI
    order; outputs, ``inout`` tensors, unused slots and the workspace are keyword-only."""
    return [a.name for a in abi.tensors if a.role == "in" and not a.unused]


def call_form(name: str, abi, workspace: bool | None = None) -> str:
    """How to call a callable of ``abi``: inputs positional, the rest keyword-only, and what it returns;
    ``workspace`` says whether it takes ``workspace=`` (default: whether the ABI has a workspace argument)."""
    def dflt(a) -> str:
        return "None" if a.default is None else f"{a.default:g}" if isinstance(a.default, float) else str(a.default)

    pos = [f"{a.name}=None" if a.optional else a.name for a in abi.tensors if a.name in positional(abi)]
    kw = [f"{a.name}=None" for a in abi.tensors if a.name not in positional(abi) and not a.unused]
    kw += [f"{a.name}={dflt(a)}" for a in abi.sizes] + [f"{a.name}={dflt(a)}" for a in abi.of(ArgKind.SCALAR)]
    takes_workspace = abi.workspace is not None if workspace is None else workspace
    kw += ["stream=None"] + (["workspace=None"] if takes_workspace else [])
    outs = [a.name for a in abi.tensors if a.writes and not a.unused]
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f"{name}({', '.join([*pos, '*', *kw])}) -> {ret}"


def _fail(plan: KernelPlan, msg: str, hint: str | None = None) -> RuntimeFailure:
    return RuntimeFailure(f"kernel '{plan.name}': {msg}", hint=hint)


def _layout(a: Arg) -> tuple[str, str | None]:
    """How to say which layout tensor ``a`` needs, and a hint to get it."""
    if len(a.dims) >= 2 and a.strides[-1] == 1:
        return "row-major (unit stride along its last dim)", "pass np.ascontiguousarray(x)"
    if len(a.dims) >= 2 and a.strides[-2] == 1:
        return "col-major (unit stride along its second-to-last dim)", "pass np.asfortranarray(x)"
    unit = a.dims[a.strides.index(1)]
    return f"unit-stride along its dim {unit}", None


def _dims_of(plan: KernelPlan, a: Arg, info: ArrayInfo) -> list[tuple[int, int] | None]:
    """Per ABI dim: (extent, stride) from the array, or None for a broadcast dim the array leaves out."""
    n, have = len(a.dims), len(info.shape)
    missing = n - have
    leading = [d for d in a.dims[:max(missing, 0)]]
    if missing < 0 or any(d not in a.broadcast for d in leading):
        want = "x".join(str(d) for d in a.dims)
        raise _fail(plan, f"{a.name} must have {n} dimensions ({want}), got shape {info.shape}")
    return [None] * missing + list(zip(info.shape, info.strides, strict=True))


def bind(plan: KernelPlan, backend: Any, arrays: dict[str, Any], sizes: dict[str, int] | None = None,
         scalars: dict[str, float] | None = None, stream: Any = None, workspace: Any = None) -> Call:
    """Check ``arrays`` (ABI tensor name -> object or None) against ``plan.abi``; see the module docstring."""
    abi = plan.abi
    known = {a.name for a in abi.tensors}
    extra = sorted(set(arrays) - known)
    if extra:
        raise _fail(plan, f"unknown tensor argument(s) {', '.join(extra)}", hint=f"tensors: {', '.join(sorted(known))}")
    infos: dict[str, ArrayInfo] = {}
    for a in abi.tensors:
        obj = arrays.get(a.name)
        if a.unused:
            if obj is not None:
                raise _fail(plan, f"{a.name} is not used by this kernel; pass None", hint=a.doc or None)
            continue
        if obj is None:
            if a.role == "in" and not a.optional:
                raise _fail(plan, f"pass {a.name} ({a.doc})" if a.doc else f"pass {a.name}")
            if a.role == "inout":
                raise _fail(plan, f"{a.name} is read by this kernel ({a.doc}): pass it")
            continue
        info = backend.array_info(obj, a.name)
        if a.writes and isinstance(obj, np.ndarray) and not obj.flags.writeable:
            raise _fail(plan, f"{a.name}: the output array is read-only")
        want = numpy_dtype(a.dtype)
        if np.dtype(info.dtype) != want:
            extra_hint = " (bf16 is passed as uint16 bit patterns: ckgen.ir.arrays.to_bf16)" \
                if a.dtype == DType.BF16 else ""
            raise _fail(plan, f"{a.name} has dtype {np.dtype(info.dtype)}, the kernel takes {a.dtype.value} ({want}){extra_hint}")
        infos[a.name] = info

    # ---- sizes and extents: every dim that names one must agree across the arrays
    found: dict[str, tuple[int, str, tuple[int, ...]]] = {}
    per_tensor: dict[str, list[tuple[int, int] | None]] = {}
    for name, info in infos.items():
        a = abi[name]
        dims = _dims_of(plan, a, info)
        per_tensor[name] = dims
        for d, ext in zip(a.dims, dims, strict=True):
            if ext is None or (d in a.broadcast and ext[0] == 1):
                continue
            dname, mult, k = dim_parts(d)
            if dname is None:
                if ext[0] != k:
                    raise _fail(plan, f"{name} has shape {info.shape}; its dims are {a.dims}")
                continue
            if mult > 1 and ext[0] % mult:
                raise _fail(plan, f"{name} has shape {info.shape}: its dim {d} must be a multiple of {mult}, "
                                  f"{ext[0]} is not")
            v = ext[0] // mult - k
            if v < 0:
                raise _fail(plan, f"{name} has shape {info.shape}: its dim {d} needs at least {k} entries")
            if dname in found and found[dname][0] != v:
                other = found[dname]
                why = _packed_note(abi, dname, (v, other[0]))
                raise _fail(plan, f"{name} has shape {info.shape} but {other[1]} has shape {other[2]}: "
                                  f"their {dname} differ ({v} vs {other[0]}){why}")
            found.setdefault(dname, (v, name, info.shape))
    size_values: dict[str, int] = {}
    given = dict(sizes or {})
    unknown = sorted(set(given) - {s.name for s in abi.sizes})
    if unknown:
        raise _fail(plan, f"unknown size(s) {', '.join(unknown)}", hint=f"sizes: {', '.join(s.name for s in abi.sizes)}")
    for e in abi.extents:
        size_values[e] = found[e][0] if e in found else 0
    offsets: dict[str, np.ndarray] = {}
    derived = {count: (size, block) for count, size, block in abi.blocks}  # block counts: from their size
    for s in abi.sizes:
        if s.name in found:
            v = found[s.name][0]
            if s.name in given and given[s.name] != v:
                why = _packed_note(abi, s.name, (given[s.name],))
                raise _fail(plan, f"size {s.name} = {given[s.name]} disagrees with the arrays ({v}){why}")
        elif s.from_offsets is not None and infos.get(s.from_offsets) is not None and (
                s.name not in given or isinstance(arrays[s.from_offsets], np.ndarray)):
            steps = _offsets(plan, backend, abi[s.from_offsets], arrays[s.from_offsets], size_values, offsets)
            longest = int(np.diff(steps).max(initial=0))
            v = given.get(s.name, longest)
            if isinstance(v, int) and v < longest:
                raise _fail(plan, f"size {s.name} = {v} is below the longest run of {s.from_offsets} ({longest})")
        elif s.name in given:
            v = given[s.name]
        elif s.default is not None:
            v = s.default
        elif s.name in derived and derived[s.name][0] in size_values:  # a block count of a size known already
            size, block = derived[s.name]
            v = -(-size_values[size] // block)
        else:
            raise _fail(plan, f"no array determines size {s.name}: pass {s.name}=<value>")
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= INT32_MAX:
            raise _fail(plan, f"size {s.name} = {v!r}: expected an integer in 0..{INT32_MAX}")
        if s.at_most is not None and v > s.at_most:
            raise _fail(plan, f"size {s.name} = {v}: this kernel takes {s.name} <= {s.at_most}", hint=s.doc or None)
        size_values[s.name] = v
    for t in abi.tensors:  # offsets arrays the binding has not read yet: read them when they are on the host
        if t.offsets_of and t.name in infos and t.name not in offsets and isinstance(arrays[t.name], np.ndarray):
            _offsets(plan, backend, t, arrays[t.name], size_values, offsets)
    empty_call = any(size_values[n] == 0 for n in abi.empty_if)
    for t in abi.tensors:  # value ranges of host integer inputs (device arrays: the kernel checks what it reads)
        if t.value_range is not None and t.name in infos and isinstance(arrays[t.name], np.ndarray) and not empty_call:
            _check_values(plan, t, arrays[t.name], size_values)
    for a_, b_ in abi.divides:
        av = a_ if isinstance(a_, int) else size_values[a_]
        if not empty_call and (av < 1 or size_values[b_] % av):
            what = str(a_) if isinstance(a_, int) else f"{a_} = {av} (at least 1)"
            raise _fail(plan, f"{b_} = {size_values[b_]} must be a multiple of {what}")
    for count, size, block in abi.blocks:
        want = -(-size_values[size] // block)
        if not empty_call and size_values[count] != want:
            users = ", ".join(t.name for t in abi.tensors if count in t.dims)
            raise _fail(plan, f"size {count} = {size_values[count]} must be ceil({size} / {block}) = {want} "
                              f"(the {block}-blocks of {size}; tensors {users})")
    if not empty_call:
        split = {axis for axis, _ in split_axes(plan.launch)}   # those run as sub-problems (split_launch)
        for axis, (g, count, limit) in enumerate(zip(plan.launch.grid, plan.launch.grid_counts(size_values),
                                                     (GRID_X_MAX, GRID_YZ_MAX, GRID_YZ_MAX), strict=True)):
            if count > limit and axis not in split:
                raise _fail(plan, f"size {g.size} = {size_values[g.size]} needs {count} workgroups along grid "
                                  f"{'xyz'[axis]}, over the launch limit {limit}")

    # ---- outputs the caller left out
    objects = dict(arrays)
    like = next((arrays[n] for n in infos), None)
    for a in abi.tensors:
        if a.unused or a.name in infos or a.role != "out":
            continue
        shape = shape_of(a, size_values)
        obj = backend.new_output(shape, numpy_dtype(a.dtype), memory_order(a), like, a.dtype)
        objects[a.name] = obj
        infos[a.name] = backend.array_info(obj, a.name)
        per_tensor[a.name] = _dims_of(plan, a, infos[a.name])

    # ---- strides
    stride_values: dict[str, int] = {}
    for name, dims in per_tensor.items():
        a, info = abi[name], infos[name]
        if any(st < 0 for st in info.strides):
            raise _fail(plan, f"{name} has negative strides {info.strides}")
        empty = any(n == 0 for n in info.shape)  # no element is ever read: strides are irrelevant
        entries = []
        for d, s, ext in zip(a.dims, a.strides, dims, strict=True):
            if ext is None or (d in a.broadcast and ext[0] == 1 and _size(d, size_values) != 1):
                entries.append((d, s, None, 0))  # broadcast: one item for every index of d
            else:
                entries.append((d, s, *ext))
        for _d, s, extent, stride in entries:  # the layout first: a transposed array is a layout error
            if s == 1 and extent is not None and extent > 1 and stride != 1 and not empty:
                what, hint = _layout(a)
                raise _fail(plan, f"{name} must be {what}, the kernel's layout; its strides are {info.strides} "
                                  "elements", hint=hint)
        for _d, s, extent, stride in entries:
            if s == 1:
                continue
            bound = _bound(abi[s], size_values)
            if extent is not None and (extent <= 1 or empty):
                stride = bound  # one item (or none): the stride is never used
            elif extent is not None and stride < bound:
                raise _fail(plan, f"{name}'s stride {s} = {stride} is below {bound} (overlapping lines)")
            if s in stride_values and stride_values[s] != stride:
                raise _fail(plan, f"stride {s} is {stride_values[s]} by one tensor and {stride} by {name}")
            stride_values[s] = stride
    for s in abi.of(ArgKind.STRIDE):
        stride_values.setdefault(s.name, _bound(s, size_values))
    for name, info in infos.items():
        if abi[name].writes:
            _check_self_overlap(plan, name, info)
    _check_aliasing(plan, infos)
    ws_obj = _workspace(plan, backend, size_values, workspace, like)

    values: list[Any] = []
    for a in abi.args:
        if a.kind == ArgKind.TENSOR:
            values.append(None if a.unused else objects.get(a.name))
        elif a.kind == ArgKind.SIZE:
            values.append(size_values[a.name])
        elif a.kind == ArgKind.STRIDE:
            values.append(stride_values[a.name])
        elif a.kind == ArgKind.WORKSPACE:
            values.append(ws_obj)
        else:
            values.append(_scalar(plan, a, (scalars or {}).get(a.name, a.default)))
    return Call(plan, tuple(values), {k: v for k, v in size_values.items() if k not in abi.extents}, stream)


def _scalar(plan: KernelPlan, a: Arg, val: Any) -> float | int:
    if val is None:
        raise _fail(plan, f"pass the scalar {a.name}")
    if a.is_int_scalar:
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or not -2**31 <= int(val) <= INT32_MAX:
            raise _fail(plan, f"scalar {a.name} = {val!r}: expected an integer in {-2**31}..{INT32_MAX}")
        out: float | int = int(val)
    else:
        try:
            out = float(np.float32(val))
        except (TypeError, ValueError, OverflowError):
            raise _fail(plan, f"scalar {a.name} = {val!r}: expected a number") from None
    if a.bounds is not None and not a.bounds[0] <= out <= a.bounds[1]:
        raise _fail(plan, f"scalar {a.name} = {val!r}: out of range", hint=f"legal: {a.bounds[0]:g}..{a.bounds[1]:g}")
    return out


def _offsets(plan: KernelPlan, backend: Any, a: Arg, obj: Any, sizes: dict[str, int],
             seen: dict[str, np.ndarray]) -> np.ndarray:
    """The entries of offsets tensor ``a`` (read to the host once), checked by its ``offsets_form``: ``starts``
    non-decreasing from 0, ``ends`` non-negative and non-decreasing, the last of either at most the extent
    ``a.offsets_of``; ``counts`` each in 0..the extent."""
    if a.name not in seen:
        read = getattr(backend, "to_host", None)
        host = np.asarray(read(obj) if read is not None else obj).reshape(-1).astype(np.int64)
        bound = sizes.get(a.offsets_of)
        got = f"got {host[:8].tolist()}{' ...' if host.size > 8 else ''}"
        if a.offsets_form == "counts":
            if host.size and (host.min() < 0 or (bound is not None and host.max() > bound)):
                bad = int(np.argmax((host < 0) | (host > (bound if bound is not None else host.max()))))
                raise _fail(plan, f"{a.name}[{bad}] = {host[bad]}: counts must lie in 0..{a.offsets_of} = {bound}, {got}")
        elif host.size:
            first = "from 0" if a.offsets_form == "starts" else "from at least 0"
            drop = np.flatnonzero(np.diff(host) < 0)
            if (host[0] != 0 if a.offsets_form == "starts" else host[0] < 0):
                why = f"{a.name}[0] = {host[0]}"
            elif drop.size:
                why = f"{a.name}[{drop[0] + 1}] = {host[drop[0] + 1]} is below {a.name}[{drop[0]}] = {host[drop[0]]}"
            elif bound is not None and host[-1] > bound:
                why = f"{a.name}[{host.size - 1}] = {host[-1]} is past {a.offsets_of} = {bound}"
            else:
                why = ""
            if why:
                raise _fail(plan, f"{why}: {a.name} must be non-decreasing offsets {first} to at most "
                                  f"{a.offsets_of} = {bound}, {got}")
        seen[a.name] = host
    return seen[a.name]


def _check_values(plan: KernelPlan, a: Arg, obj: np.ndarray, sizes: dict[str, int]) -> None:
    """Every entry of host integer input ``a`` within its value range (expressions of ``sizes``)."""
    lo, hi = (E.evaluate(e, sizes) for e in a.value_range)
    v = np.asarray(obj)
    if v.size and (int(v.min()) < lo or int(v.max()) > hi):
        bad = v[(v < lo) | (v > hi)].reshape(-1)[:4].tolist()
        raise _fail(plan, f"{a.name}: every entry must lie in {lo}..{hi}, got {bad}", hint=a.doc or None)


def _check_self_overlap(plan: KernelPlan, name: str, info: ArrayInfo) -> None:
    """An output's elements must lie at distinct addresses: sorted by stride, each dim's stride clears the span
    of the dims inside it (sufficient; a written broadcast dim or a zero stride fails)."""
    dims = sorted((st, n) for n, st in zip(info.shape, info.strides, strict=True) if n > 1)
    if any(n == 0 for n in info.shape):
        return
    span = 1
    for st, n in dims:
        if st < span:
            raise _fail(plan, f"output {name} (shape {info.shape}, strides {info.strides}) has elements that share "
                              "memory: every element needs its own address", hint=f"pass a dense array for {name}")
        span = st * (n - 1) + span


def _workspace(plan: KernelPlan, backend: Any, sizes: dict[str, int], given: Any, like: Any) -> Any:
    """The workspace buffer of the call: the caller's (checked for size) or a new zero-filled one."""
    arg = plan.abi.workspace
    if arg is None:
        if given is not None:
            raise _fail(plan, "this kernel takes no workspace")
        return None
    empty = any(sizes.get(s, 1) == 0 for s in plan.abi.empty_if)
    need = 0 if empty else plan.launch.workspace_bytes(sizes)
    if given is not None:
        info = backend.array_info(given, arg.name)
        have = int(np.prod(info.shape)) * np.dtype(info.dtype).itemsize if info.shape else 0
        if have < need:
            raise _fail(plan, f"{arg.name} holds {have} bytes; these sizes need {need}",
                        hint="size it with the kernel's workspace_bytes(sizes), zero-filled")
        return given
    return backend.new_workspace(need, like) if need > 0 else None


def _packed_note(abi: Any, size: str, values: tuple[int, ...]) -> str:
    """``; K must be a multiple of 2`` when one of ``values`` of ``size`` breaks a constant ``divides`` of the ABI
    (an odd K or cols where two fp4 values share a byte: a divided dim's extent then disagrees), else empty."""
    bad = next((a for a, b in abi.divides if b == size and isinstance(a, int) and any(x % a for x in values)), None)
    return f"; {size} must be a multiple of {bad}" if bad else ""


def _size(d: str | int, sizes: dict[str, int]) -> int:
    return dim_value(d, sizes)


def _bound(a: Arg, sizes: dict[str, int]) -> int:
    """The smallest legal value of stride argument ``a`` (its ``at_least`` sizes' product, at least 1; else 0)."""
    if not a.at_least:
        return 0
    prod = 1
    for n in a.at_least:
        prod *= dim_value(n, sizes)
    return max(prod, 1)


class _Described:
    """An object numpy can view through ``__array_interface__`` at ``info``'s address (never read)."""

    def __init__(self, info: ArrayInfo, itemsize: int):
        self.__array_interface__ = {"data": (info.ptr, False), "shape": tuple(info.shape), "version": 3,
                                    "strides": tuple(st * itemsize for st in info.strides), "typestr": f"|V{itemsize}"}


_TOO_HARD = getattr(getattr(np, "exceptions", np), "TooHardError", Exception)


def _share_memory(a: ArrayInfo, b: ArrayInfo) -> bool:
    """Whether some element of ``a`` and some element of ``b`` overlap in memory (exact, else by range)."""
    va = np.asarray(_Described(a, np.dtype(a.dtype).itemsize))
    vb = np.asarray(_Described(b, np.dtype(b.dtype).itemsize))
    try:
        return bool(np.shares_memory(va, vb, max_work=1 << 20))
    except _TOO_HARD:
        return bool(np.may_share_memory(va, vb))


def _self_overlapping(info: ArrayInfo) -> bool:
    """True when two different indices of the array reach one element (a zero or too small stride)."""
    dims = sorted((st, n) for n, st in zip(info.shape, info.strides, strict=True) if n > 1)
    reach = 1  # elements spanned by the dims so far, in stride order
    for st, n in dims:
        if st < reach:
            return True
        reach = st * (n - 1) + reach
    return False


def _same_view(a: ArrayInfo, b: ArrayInfo) -> bool:
    """Whether two arrays are one view of memory: address, shape, element strides and dtype."""
    dims = lambda i: [(n, st) for n, st in zip(i.shape, i.strides, strict=True) if n != 1]  # noqa: E731
    return a.ptr == b.ptr and a.shape == b.shape and np.dtype(a.dtype) == np.dtype(b.dtype) and dims(a) == dims(b)


def _check_aliasing(plan: KernelPlan, infos: dict[str, ArrayInfo]) -> None:
    for a in plan.abi.tensors:
        info = infos.get(a.name)
        if a.writes and info is not None and 0 not in info.shape and _self_overlapping(info):
            raise _fail(plan, f"output {a.name} (shape {info.shape}, strides {info.strides}) has elements that share "
                              "memory, e.g. a broadcast (stride 0) view: the kernel would write one place twice",
                        hint=f"pass a separate, writable array for {a.name}")
    live = {n: i for n, i in infos.items() if i.ptr and 0 not in i.shape}
    for a in plan.abi.tensors:
        if not a.writes or a.name not in live:
            continue
        for other, info in live.items():
            if other == a.name or not _share_memory(live[a.name], info):
                continue
            if other in a.aliases:
                if _same_view(live[a.name], info):
                    continue  # in place, as the ABI allows
                raise _fail(plan, f"output {a.name} overlaps {other} without being the same view (address, shape, "
                                  "strides): the kernel may write over it in place only as the very same array",
                            hint=f"pass {other} itself as {a.name}, or a separate array")
            allowed = f" (it may be {', '.join(a.aliases)} itself)" if a.aliases else ""
            raise _fail(plan, f"output {a.name} overlaps {other} in memory: the kernel would read what it writes",
                        hint=f"pass a separate array for {a.name}{allowed}")
