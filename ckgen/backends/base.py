"""The contract between the runtime and a backend's driver (:mod:`ckgen.backends`), and what drivers share.

- :class:`ArrayInfo`: what the binder needs to know of one operand (``Backend.array_info``).
- :class:`Call`: one checked call (:func:`ckgen.runtime.binding.bind`), what ``Backend.launch`` runs.
- :class:`Backend`: a driver. ``build(plan)`` builds the plan through its backend's compiler (cached) and loads it;
  ``array_info`` describes an operand (or raises RuntimeFailure naming it); ``new_output`` / ``new_workspace``
  allocate; ``launch(handle, call)`` runs a checked call; ``to_host`` reads an array on the host. The prepared-call
  hooks (``fast_operand``, ``fast_workspace``, ``fast_output``, ``fast_launcher``; :mod:`ckgen.runtime.prepared`)
  are optional: a backend without them runs every call through the full checks. So is a compiled prepared call
  (``native_class``, ``native_spec``: the cuda backend's), which serves a prepared signature with no Python.
- ``BuiltLibrary``: what every compiler's ``build_library`` returns (the one build path: plans -> sources -> the
  backend's compiler -> the build cache).
- numpy helpers the drivers share (host outputs, byte bounds, the numpy fast path).
"""

from __future__ import annotations

import array
import ctypes
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ckgen.errors import RuntimeFailure
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.arrays import poison
from ckgen.ir.plan import KernelPlan


@dataclass(frozen=True)
class BuiltLibrary:
    """A library one compiler built: its path, and per (kernel, arch) the resources and report read back from the
    code object (empty where the backend reads none, e.g. the emulator)."""

    library: Path
    resources: dict = field(default_factory=dict)
    reports: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ArrayInfo:
    """What binding needs to know about one array. ``strides`` are in elements."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    ptr: int


@dataclass(frozen=True)
class Call:
    """One checked call: ``values`` holds, per ABI argument in order, the caller's (or allocated) object for a
    tensor (None when unused), an int for sizes and strides, a float for scalars."""

    plan: KernelPlan
    values: tuple[Any, ...]
    sizes: dict[str, int]
    stream: Any = None

    def tensors(self) -> list[tuple[Arg, Any]]:
        return [(a, v) for a, v in zip(self.plan.abi.args, self.values, strict=True) if a.kind == ArgKind.TENSOR]

    def outputs(self) -> list[Any]:
        """The written tensors the kernel uses, in ABI order (what the Python callable returns)."""
        return [v for a, v in self.tensors() if a.writes and not a.unused]

    def workspace(self) -> tuple[Arg, Any] | None:
        """The workspace argument and its buffer (None when the kernel takes none)."""
        for a, v in zip(self.plan.abi.args, self.values, strict=True):
            if a.kind == ArgKind.WORKSPACE:
                return a, v
        return None


class Backend(ABC):
    """See the module docstring for the contract."""

    name: str = ""
    vendor: str = ""

    @abstractmethod
    def build(self, plan: Any) -> Any: ...

    @abstractmethod
    def array_info(self, obj: Any, what: str) -> ArrayInfo: ...

    @abstractmethod
    def new_output(self, shape: tuple[int, ...], np_dtype: np.dtype, order: list[int], like: Any,
                   dtype: Any) -> Any:
        """An output of ``shape`` (element type ``dtype``, a DType, stored as ``np_dtype``) on ``like``'s side."""

    @abstractmethod
    def launch(self, handle: Any, call: Call) -> None: ...

    def poison_output(self, obj: Any) -> None:
        """Fill a new, densely allocated output with 0xFF bytes (NaN / -1) where the backend can (default: not)."""
        return None

    def new_workspace(self, nbytes: int, like: Any) -> Any:
        return np.zeros(max(int(nbytes), 1), np.uint8)
    def to_host(self, obj: Any) -> np.ndarray:
        return np.asarray(obj)

    # ---- the prepared-call hooks (ckgen.runtime.prepared); a backend without them runs every call in full
    #: ``fast_operand(obj) -> ((signature...), address) | None``: None = the full path must handle obj
    fast_operand: Any = None
    #: ``fast_workspace(nbytes, like) -> (buffer, address)``: the per-device zero-filled scratch (None: no fast
    #: path for kernels that need a workspace)
    fast_workspace: Any = None

    def fast_template(self, plan: Any, values: list) -> Any:
        """The prepared launch's argument container from the ABI values of a checked call (tensor and workspace
        slots 0): anything ``fast_launcher``'s launch takes that supports ``[:]`` (a copy) and ``[slot] = address``.
        Default: the list itself; libraries with packed host entries use :func:`pack_slots`."""
        return list(values)

    def fast_ptr(self, obj: Any) -> int:
        """The data address of an array this backend allocated."""
        return self.array_info(obj, "output").ptr

    def fast_output(self, like_out: Any, info: ArrayInfo) -> Any:
        """A zero-argument maker of arrays laid out as ``like_out`` (an output ``new_output`` made), not
        poisoned."""
        raise NotImplementedError

    def fast_launcher(self, handle: Any, plan: Any, call: Call) -> Any:
        """A callable ``(args, live) -> None`` launching ``handle`` with a prepared argument list (see
        :mod:`ckgen.runtime.prepared`) on the current stream."""
        raise NotImplementedError

    # ---- the compiled prepared call (the cuda backend's ckgen/backends/nvidia/fastcall.cpp); None: there is none
    def native_class(self, base: type) -> type | None:
        """A subclass of ``base`` (Kernel, DispatchKernel) whose calls reach compiled code first: it serves the
        signatures added to the instance (``add(spec)``, ``clear()``) and calls ``self._full_call(*args, **kwargs)``
        for the rest and ``self._raise_status(status)`` on a failed launch. None when the backend has none."""
        return None

    def native_spec(self, handle: Any, key: tuple, prep: Any) -> Any:
        """What an instance of ``native_class(...)`` takes in ``add`` for prepared signature ``key`` (:func:`ckgen.runtime.prepared.
        call_key`'s) of ``handle``, recorded as ``prep``."""
        raise NotImplementedError

    def raise_status(self, handle: Any, status: int, what: str | None = None) -> None:
        """Raise the RuntimeFailure of a nonzero status from ``handle``'s entry (``what``: who failed, by default
        the kernel's name)."""
        raise RuntimeFailure(f"{what or 'kernel ' + repr(handle.plan.name)}: status {status}")


def host_argtypes(abi: Abi) -> list:
    """ctypes argument types of a host entry ``ckgen_<kernel>`` (then ``void* stream``)."""
    kinds = {ArgKind.TENSOR: ctypes.c_void_p, ArgKind.SIZE: ctypes.c_int64, ArgKind.STRIDE: ctypes.c_int64,
             ArgKind.SCALAR: ctypes.c_float, ArgKind.WORKSPACE: ctypes.c_void_p}
    return [ctypes.c_int32 if a.is_int_scalar else kinds[a.kind] for a in abi.args] + [ctypes.c_void_p]


def pack_slots(abi: Abi, values: list) -> array.array:
    """The slots of a packed host entry ``ckgen_<kernel>_packed`` (ckgen/host_api.h) holding ``values`` (one per ABI
    argument): addresses, sizes and strides as int64, float scalars as their float32 bits and int32 scalars in the
    slot's low half (little-endian)."""
    out = array.array("q", bytes(8 * len(abi.args)))
    for i, (a, v) in enumerate(zip(abi.args, values, strict=True)):
        if a.kind == ArgKind.SCALAR and not a.is_int_scalar:
            out[i] = struct.unpack("<i", struct.pack("<f", float(v)))[0]
        else:
            out[i] = int(v or 0)
    return out


def packed_entry(lib: ctypes.CDLL, kernel: str) -> Any:
    """The packed host entry of ``kernel`` in ``lib``: ``entry(slots_address, stream) -> status``."""
    fn = getattr(lib, f"ckgen_{kernel}_packed")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def new_host_output(shape: tuple[int, ...], np_dtype: np.dtype, order: list[int]) -> np.ndarray:
    """A poisoned numpy array of ``shape`` whose dims lie in memory in ``order`` (outermost first)."""
    base = np.empty([shape[i] for i in order], np_dtype)
    return poison(base).transpose([order.index(i) for i in range(len(order))])


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """[low, high) byte addresses of the memory ``a`` spans (numpy's byte_bounds, any stride sign)."""
    lo = hi = a.__array_interface__["data"][0]
    if a.size == 0:
        return lo, lo
    for n, st in zip(a.shape, a.strides, strict=True):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


def host_output_maker(like_out: np.ndarray) -> Any:
    """A maker of unpoisoned numpy arrays with ``like_out``'s shape, dtype and memory order of dims."""
    n = like_out.ndim
    order = sorted(range(n), key=lambda i: -like_out.strides[i])
    mem_shape = tuple(like_out.shape[i] for i in order)
    inverse = tuple(order.index(i) for i in range(n))
    dt = like_out.dtype
    if inverse == tuple(range(n)):
        return lambda: np.empty(mem_shape, dt)
    return lambda: np.empty(mem_shape, dt).transpose(inverse)


def numpy_fast_operand(obj: Any) -> Any:
    """``fast_operand`` of host numpy arrays: (dtype, shape, strides, writable, address mod 16), address."""
    if type(obj) is not np.ndarray:
        return None
    p = obj.__array_interface__["data"][0]
    return (obj.dtype.str, obj.shape, obj.strides, obj.flags.writeable, p & 15), p


def numpy_array_info(obj: np.ndarray, what: str) -> ArrayInfo:
    """ArrayInfo of a host numpy array (strides in elements); RuntimeFailure for strides that are not whole
    elements."""
    isz = obj.itemsize
    if any(st % isz for st in obj.strides):
        raise RuntimeFailure(f"{what}: strides {obj.strides} are not multiples of the element size {isz}")
    return ArrayInfo(tuple(obj.shape), obj.dtype.str, tuple(st // isz for st in obj.strides),
                     obj.__array_interface__["data"][0])
