"""Prepared calls: the fast path of :meth:`ckgen.runtime.api.Kernel.__call__` for a signature seen before.

Contract:

- :func:`call_key` turns a call's operands into a signature: per operand the backend's ``fast_operand(obj)``
  (``(sig, ptr)``, sig = dtype, shape, strides, device, pointer alignment class and whatever else the full
  checks depend on; ``None`` when the backend cannot vouch for the operand, e.g. numpy arrays on a GPU
  backend), plus the sizes and scalars passed by name (exact ``int``/``float`` values, keyed with their type:
  ``rope_cols=16.0`` is not ``rope_cols=16``, which the full checks tell apart; the compiled path matches type and
  value too). ``None`` means: use the full path. Named entries are ``(name, value, type)`` for a scalar and
  ``(name, sig)`` for an operand (``sig`` None for None).
- The first call with a signature runs the full :func:`~ckgen.runtime.binding.bind` (every check, poisoned
  outputs) and launches; then :func:`prepare` records a :class:`Prepared` from the checked
  :class:`~ckgen.runtime.binding.Call`: the argument list with its size, stride and scalar values, which
  operand fills which tensor slot, how to allocate the outputs the caller left out (no poison), the
  workspace's byte count, and each operand's byte span. A call is not prepared (it stays on the full path)
  when it passed ``stream=`` or ``workspace=``, when a size came from reading an offsets tensor (not passed
  by name), when an offsets tensor or an integer input with a ``value_range`` is a host array (the full path
  checks its contents every call), or when a size or scalar was passed as an object other than an ``int`` or
  ``float`` (e.g. a 0-d array: the full path reads its value, which the signature does not hold). An output
  passed as None is allocated, as when it is left out.
- :meth:`Prepared.run` launches with no binding: it patches the pointers into the argument list, checks that
  no written operand's byte span overlaps another's (else it returns :data:`MISS` and the caller runs the full
  path, which raises or allows exactly as it does for a first call; the same view of a tensor the ABI lets the
  output alias is allowed here too), allocates missing outputs with the backend's ``fast_output`` maker,
  takes the per-device workspace (``fast_workspace``: zero-filled once, grown when needed; every kernel
  leaves it zero-filled, docs/dsl.md) and calls the backend's ``fast_launcher(handle, plan)`` with
  ``(args, live)``: ``args`` one value per ABI argument (tensors and workspace as addresses), ``live`` the
  operand objects per tensor slot in ABI order then the workspace (None where absent).
- ``Prepared.allocs`` holds per output the caller left out ``(slot, live index, maker, address getter, maker
  without poison)``; a backend with a compiled prepared call (``native_spec``) reads the last.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ckgen.config import settings
from ckgen.ir.abi import ArgKind
from ckgen.runtime.binding import positional

#: what :meth:`Prepared.run` returns when the call must take the full path
MISS = object()

#: signatures kept per kernel (a call pattern that varies its scalars every call must not grow without bound)
MAX_ENTRIES = 64

_SCALARS = (int, float)


def call_key(op: Any, tensors: tuple, named: dict) -> tuple | None:
    """(key, objs, ptrs) of a call for ``op`` = the backend's ``fast_operand``; None when not cacheable.
    ``objs`` are the positional operands then the named non-scalar ones; ``ptrs`` their addresses (0 for None)."""
    sigs = []
    objs = list(tensors)
    ptrs = []
    for t in tensors:
        if t is None:
            sigs.append(None)
            ptrs.append(0)
            continue
        r = op(t)
        if r is None:
            return None
        sigs.append(r[0])
        ptrs.append(r[1])
    if not named:
        return (tuple(sigs), ()), objs, ptrs
    nk = []
    for k, v in named.items():
        if type(v) in _SCALARS:
            nk.append((k, v, type(v)))  # the type too: 16 == 16.0, but the full checks refuse a float size
        elif v is None:
            nk.append((k, None))
            objs.append(None)
            ptrs.append(0)
        else:
            r = op(v)
            if r is None:
                return None
            nk.append((k, r[0]))
            objs.append(v)
            ptrs.append(r[1])
    return (tuple(sigs), tuple(nk)), objs, ptrs


def _span(info: Any, itemsize: int) -> int:
    """Bytes from an array's first element to one past its last (non-negative strides, as bind requires)."""
    if not info.shape or 0 in info.shape:
        return 0 if info.shape else itemsize
    return (sum((n - 1) * st for n, st in zip(info.shape, info.strides, strict=True)) + 1) * itemsize


class Prepared:
    """One signature's launch, ready to patch (see the module docstring)."""

    __slots__ = ("template", "fill", "allocs", "ws_slot", "ws_need", "checks", "spans", "ret", "launch",
                 "workspace", "n_live", "like_idx", "native")

    def run(self, objs: list, ptrs: list) -> Any:
        spans = self.spans
        for wi, others in self.checks:  # a cheap interval test: any overlap goes to the full checks
            wp = ptrs[wi]
            wh = wp + spans[wi]
            for oi, same_ok in others:
                p = ptrs[oi]
                if p < wh and wp < p + spans[oi] and not (same_ok and p == wp):
                    return MISS
        args = self.template[:]
        live = [None] * self.n_live
        for slot, li, idx in self.fill:
            args[slot] = ptrs[idx]
            live[li] = objs[idx]
        outs = []
        for slot, li, make, ptr_of, _ in self.allocs:
            o = make()
            args[slot] = ptr_of(o)
            live[li] = o
        if self.ws_slot is not None:
            ws, wptr = self.workspace(self.ws_need, objs[self.like_idx])
            args[self.ws_slot] = wptr
            live[-1] = ws
        self.launch(args, live)
        for li in self.ret:
            outs.append(live[li])
        return outs[0] if len(outs) == 1 else tuple(outs)


def cacheable(abi: Any, tensors: tuple, named: dict) -> bool:
    """Whether a call's checks hold for every later call of its signature (see the module docstring)."""
    names = {a.name for a in abi.tensors}
    if any(k not in names and type(v) not in _SCALARS for k, v in named.items()):
        return False  # a size or scalar given as an array (or another object): its value is not in the signature
    given = dict(zip(positional(abi), tensors, strict=False))
    given.update({k: v for k, v in named.items() if k in names})
    for a in abi.tensors:
        if given.get(a.name) is None:
            continue
        if a.value_range is not None and isinstance(given[a.name], np.ndarray):
            return False  # bind checks a host array's entries against the range on every call
        if a.offsets_of is not None:
            if isinstance(given[a.name], np.ndarray):
                return False
            if any(s.from_offsets == a.name and s.name not in named for s in abi.sizes):
                return False
    return True


def _poisoned(make: Any, fill: Any) -> Any:
    """``make`` followed by ``fill`` on the new output (0xFF bytes where the backend can)."""

    def make_poisoned() -> Any:
        out = make()
        fill(out)
        return out

    return make_poisoned


def prepare(plan: Any, backend: Any, handle: Any, call: Any, tensors: tuple, named: dict) -> Prepared:
    """The :class:`Prepared` launch of a checked first ``call`` made with ``tensors`` and ``named``."""

    abi = plan.abi
    tensor_names = {a.name for a in abi.tensors}
    index: dict[str, int] = {n: i for n, i in zip(positional(abi), range(len(tensors)), strict=False)}
    k = len(tensors)
    for key, v in named.items():
        if type(v) not in _SCALARS:
            if key in tensor_names and v is not None:  # an output passed as None is allocated, as one left out
                index[key] = k
            k += 1
    p = Prepared()
    p.native = None  # the backend's compiled form (Backend.native_spec), set by the caller that has one
    p.template = [None] * len(abi.args)
    p.fill, p.allocs, p.checks, p.ret = [], [], [], []
    p.spans = [0] * k
    p.ws_slot = None
    p.ws_need = 0
    tensor_slots = [j for j, a in enumerate(abi.args) if a.kind == ArgKind.TENSOR]
    p.n_live = len(tensor_slots) + 1
    live_of = {abi.args[j].name: li for li, j in enumerate(tensor_slots)}
    infos = {}
    for j, (a, v) in enumerate(zip(abi.args, call.values, strict=True)):
        if a.kind == ArgKind.TENSOR:
            p.template[j] = 0
            if v is None:
                continue
            info = backend.array_info(v, a.name)
            infos[a.name] = info
            li = live_of[a.name]
            if a.name in index:
                p.fill.append((j, li, index[a.name]))
                p.spans[index[a.name]] = _span(info, np.dtype(info.dtype).itemsize)
            else:  # allocated by bind: allocate the same way, without poison (unless CKGEN_POISON asks for it)
                raw = make = backend.fast_output(v, info)
                if settings().poison:
                    make = _poisoned(make, backend.poison_output)
                p.allocs.append((j, li, make, backend.fast_ptr, raw))
            if a.writes and not a.unused:
                p.ret.append(li)
        elif a.kind == ArgKind.WORKSPACE:
            p.template[j] = 0
            if v is not None:
                p.ws_slot = j
                p.ws_need = backend.array_info(v, a.name).shape[0]
        else:
            p.template[j] = v
    p.like_idx = next((i for i, o in enumerate(call_objs(tensors, named)) if o is not None), 0)
    for a in abi.tensors:
        wi = index.get(a.name)
        if not a.writes or wi is None or a.name not in infos or not p.spans[wi]:
            continue
        others = []
        for b in abi.tensors:
            oi = index.get(b.name)
            if b.name == a.name or oi is None or b.name not in infos or not p.spans[oi]:
                continue
            ia, ib = infos[a.name], infos[b.name]
            same = (b.name in a.aliases and ia.shape == ib.shape and ia.strides == ib.strides
                    and ia.dtype == ib.dtype)
            others.append((oi, same))
        p.checks.append((wi, tuple(others)))
    p.template = backend.fast_template(plan, p.template)
    p.workspace = backend.fast_workspace
    p.launch = backend.fast_launcher(handle, plan, call)
    return p


def call_objs(tensors: tuple, named: dict) -> list:
    """The operand list :func:`call_key` builds (positional, then named non-scalars), without signatures."""
    return list(tensors) + [v for v in named.values() if type(v) not in _SCALARS]


def new_callable(cls: type, backend: Any) -> Any:
    """A new, uninitialized instance of ``cls`` (a callable of kernels: Kernel, DispatchKernel) for ``backend``: of
    the backend's compiled subclass of ``cls`` (``Backend.native_class``: its calls reach compiled code first, which
    serves prepared signatures and hands the rest to ``_full_call``) when it has one, else of ``cls``."""
    if backend is not None and not getattr(cls, "native_call", False):
        sub = backend.native_class(cls)
        if sub is not None:
            return sub.__new__(sub)
    return object.__new__(cls)


def compiled_self(obj: Any) -> Any:
    """``obj`` (made by :func:`new_callable`) when it is of a backend's compiled class, where its prepared signatures
    are then added (``add(spec)``, ``clear()``); None otherwise."""
    return obj if getattr(type(obj), "native_call", False) else None
