"""The one JIT API of ckgen, with the target as a parameter, for every op.

    import ckgen.runtime.api as ck          # (ckgen.jit is the same function)
    k = ck.jit("kernels.ck", kernel="my_kernel", target="emu", arch="gfx942")
    out = k(*arrays)                        # numpy in, numpy out on the emulator

``jit(source, kernel=None, target="emu", arch=None) -> Kernel``
    ``source`` is a path to a ``.ck`` file or DSL text. ``target`` names a backend: ``"emu"`` (CPU
    emulator, AMD arch), ``"hip"`` (AMD GPU through hip-python) or ``"cuda"``; an NVIDIA arch name
    (``"sm_90"``) means ``target="cuda", arch="sm_90"``. ``arch`` defaults to the kernel's first
    declared arch of the backend's vendor. The kernel is planned for that arch, built through the
    backend (cached on disk) and returned as a :class:`Kernel`.

``Kernel.__call__(*tensors, stream=None, **named) -> output(s)``
    Tensors are passed positionally in the order of the kernel's ABI (``kernel.abi``; e.g. A, B, C,
    bias) or by name; sizes and scalars no array determines may be given by name (``batch=4``). Every
    check is :mod:`ckgen.runtime.binding`'s, the same for every op and backend: dtypes (bf16 travels as
    uint16 bit patterns, see :func:`ckgen.runtime.arrays.to_bf16`), shapes that agree, layouts, strides,
    unused tensors None, no output aliasing an input. Outputs left out are allocated (unless the kernel reads
    them). Returns the output, or a tuple of the outputs in ABI order when there are several.

Backends (the interface the emu, hip and cuda runtimes implement)
    A backend is a subclass of :class:`Backend` registered under a name in :data:`BACKENDS`
    (``"module:Class"``, imported on first use). It provides:

    - ``vendor``: the vendor of the targets it runs ("amd" or "nvidia");
    - ``build(plan) -> object``: compile the planned kernel (cached), returning any handle;
    - ``array_info(obj, what) -> ArrayInfo``: shape, dtype (numpy ``dtype.str``, e.g. ``"<f2"``),
      strides in *elements* and a data pointer for one array; raise RuntimeFailure for objects the
      backend cannot take;
    - ``new_output(shape, np_dtype, order, like) -> object``: an output array, its dims laid out in memory
      in ``order`` (outermost first), poisoned where the backend can;
    - ``launch(handle, call: Call) -> None``: run the kernel with ``call.values`` (one per ABI argument);
      raise RuntimeFailure (EmulationFault for emulator faults) on error;
    - ``new_workspace(nbytes, like) -> object``: a zero-filled scratch buffer of ``nbytes`` bytes for a kernel's
      workspace argument (default: a host numpy array of uint8).

``Kernel.__call__(..., workspace=buf)`` passes a workspace (at least ``kernel.workspace_bytes(M=.., ...)``
bytes, zero-filled before its first use); without one, a call that needs it allocates a new one.
    - ``to_host(obj) -> numpy array``: a host copy of a (small) array the binding must read, e.g. an offsets
      tensor (default: ``np.asarray``; device backends copy, which synchronizes).
"""

from __future__ import annotations

import ctypes
import importlib
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from ckgen.errors import CkgenError, RuntimeFailure, option
from ckgen.frontend import load_file, load_text
from ckgen.ir.abi import Abi, ArgKind
from ckgen.lower import plan_kernel
from ckgen.runtime.arrays import from_bf16, numpy_dtype, poison, to_bf16
from ckgen.runtime.binding import ArrayInfo, Call, bind, call_form, positional
from ckgen.runtime.dispatch import jit_family
from ckgen.runtime.prepared import MAX_ENTRIES, MISS, cacheable, call_key, prepare
from ckgen.targets import default_target, get_target

__all__ = ["ArrayInfo", "Backend", "Call", "Kernel", "from_bf16", "jit", "numpy_dtype", "plan_for", "poison",
           "to_bf16"]

#: backend name -> "module:Class" (imported lazily)
BACKENDS: dict[str, str] = {
    "emu": "ckgen.runtime.emu:EmuBackend",
    "hip": "ckgen.runtime.hip:HipBackend",
    "cuda": "ckgen.runtime.cuda:CudaBackend",
}


class Backend(ABC):
    """See the module docstring for the contract."""

    name: str = ""
    vendor: str = ""

    @abstractmethod
    def build(self, plan: Any) -> Any: ...

    @abstractmethod
    def array_info(self, obj: Any, what: str) -> ArrayInfo: ...

    @abstractmethod
    def new_output(self, shape: tuple[int, ...], np_dtype: np.dtype, order: list[int], like: Any) -> Any: ...

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


def host_argtypes(abi: Abi) -> list:
    """ctypes argument types of a host entry ``ckgen_<kernel>`` (then ``void* stream``)."""
    kinds = {ArgKind.TENSOR: ctypes.c_void_p, ArgKind.SIZE: ctypes.c_int64, ArgKind.STRIDE: ctypes.c_int64,
             ArgKind.SCALAR: ctypes.c_float, ArgKind.WORKSPACE: ctypes.c_void_p}
    return [ctypes.c_int32 if a.is_int_scalar else kinds[a.kind] for a in abi.args] + [ctypes.c_void_p]


def new_host_output(shape: tuple[int, ...], np_dtype: np.dtype, order: list[int]) -> np.ndarray:
    """A poisoned numpy array of ``shape`` whose dims lie in memory in ``order`` (outermost first)."""
    base = np.empty([shape[i] for i in order], np_dtype)
    return poison(base).transpose([order.index(i) for i in range(len(order))])


_instances: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The (process-wide) backend registered as ``name``."""
    if name not in BACKENDS:
        raise CkgenError(f"target '{name}' is not a ckgen backend", hint="targets: " + ", ".join(sorted(BACKENDS)))
    if name not in _instances:
        mod, _, cls = BACKENDS[name].partition(":")
        try:
            backend_cls = getattr(importlib.import_module(mod), cls)
        except (ImportError, AttributeError) as exc:
            raise CkgenError(f"target '{name}': backend {BACKENDS[name]} is not available ({exc})") from None
        _instances[name] = backend_cls()
    return _instances[name]


def resolve_target(target: str, arch: str | None) -> tuple[str, str | None]:
    """(backend name, arch): an arch name given as the target selects its vendor's GPU backend."""
    if target in BACKENDS:
        return target, arch

    try:
        t = get_target(target)
    except CkgenError:
        raise CkgenError(f"target '{target}' is neither a backend nor a known arch",
                         hint="targets: " + ", ".join(sorted(BACKENDS)) + ", or an arch such as sm_90") from None
    if arch is not None and arch != t.name:
        raise CkgenError(f"target '{target}' and arch '{arch}' disagree", hint=f"pass {option('target', target)} alone")
    return ("cuda" if t.vendor == "nvidia" else "hip"), t.name


def _load_specs(source: str | Path, default_arches: tuple[str, ...] = ()):
    """Specs of a .ck path or DSL text; kernels that name no target take ``default_arches``."""

    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".ck")):
        path = Path(source)
        if not path.is_file():
            raise CkgenError(f"{path}: no such .ck file")
        return load_file(path, default_arches)
    return load_text(str(source), default_arches=default_arches)


def plan_for(source: str | Path, kernel: str | None, vendor: str, arch: str | None):
    """Parse ``source``, pick ``kernel`` and plan it for ``arch`` (default: its first arch of ``vendor``)."""

    specs = _load_specs(source, (arch or default_target(vendor),))
    names = [s.name for s in specs]
    if kernel is None:
        if len(specs) != 1:
            raise CkgenError(f"the source defines {len(specs)} kernels; choose one with kernel=",
                             hint="kernels: " + ", ".join(names))
        spec = specs[0]
    else:
        found = [s for s in specs if s.name == kernel]
        if not found:
            raise CkgenError(f"no kernel named '{kernel}'", hint="kernels: " + ", ".join(names))
        spec = found[0]
    if arch is None:
        own = [a for a in spec.arches if get_target(a).vendor == vendor]
        arch = own[0] if own else default_target(vendor)
    target = get_target(arch)
    if target.vendor != vendor:
        raise CkgenError(f"arch '{arch}' is a {target.vendor} target; this backend runs {vendor} targets")
    return plan_kernel(spec, target)


def jit(source: str | Path, kernel: str | None = None, target: str = "emu", arch: str | None = None,
        tuning: str | Path | None = None):
    """Build one kernel for ``target`` and return it as a callable (see the module docstring). When ``kernel``
    names a family rather than a kernel, return its dispatching callable
    (:class:`ckgen.runtime.dispatch.DispatchKernel`), which picks a member by shape from the ``tuning`` database
    (optional) and builds members as they are first chosen."""
    name, arch = resolve_target(target, arch)
    backend = get_backend(name)
    if kernel is not None:

        specs = _load_specs(source, (arch or default_target(backend.vendor),))
        if not any(s.name == kernel for s in specs):

            return jit_family(specs, kernel, backend, arch, str(tuning) if tuning else None)
    plan = plan_for(source, kernel, backend.vendor, arch)
    return Kernel(plan, backend)


class Kernel:
    """One planned kernel built for one backend; call it with its tensors (see the module docstring)."""

    def __init__(self, plan: Any, backend: Backend):
        self.plan = plan
        self.backend = backend
        self.name = plan.name
        self.arch = plan.arch
        self.op = plan.op
        self.abi: Abi = plan.abi
        self.handle = backend.build(plan)
        self._prepared: dict = {}

    def __repr__(self) -> str:
        return (f"Kernel({self.name!r}, op={self.op!r}, arch={self.arch!r}, target={self.backend.name!r}): "
                f"{self.signature()}")

    def signature(self) -> str:
        """The call form: inputs positional in ABI order; outputs, sizes, scalars, ``stream`` and ``workspace``
        keyword-only (None: allocated / given by the arrays / the default); then what the call returns."""
        return call_form(self.name, self.abi)

    def workspace_bytes(self, **sizes: int) -> int:
        """Bytes of workspace a call at these sizes (by ABI name; defaults apply) needs; 0 without one."""
        vals = {a.name: sizes.get(a.name, a.default) for a in self.abi.sizes}
        missing = [k for k, v in vals.items() if v is None]
        if missing:
            raise RuntimeFailure(f"kernel '{self.name}': workspace_bytes needs {', '.join(missing)}")
        if any(vals.get(s, 1) == 0 for s in self.abi.empty_if):
            return 0
        return self.plan.launch.workspace_bytes(vals)

    def bind(self, *tensors: Any, stream: Any = None, workspace: Any = None, **named: Any) -> Call:
        """The checked :class:`Call` of these arguments (what ``__call__`` launches)."""
        names = positional(self.abi)
        if len(tensors) > len(names):
            rest = [a.name for a in self.abi.tensors if a.name not in names and not a.unused]
            raise RuntimeFailure(f"kernel '{self.name}' takes its inputs positionally ({', '.join(names) or 'none'}), "
                                 f"got {len(tensors)} positional arguments",
                                 hint="outputs and the rest are keyword-only: pass "
                                      + ", ".join(f"{n}=..." for n in rest or ["..."]) + f"; {self.signature()}")
        arrays = dict(zip(names, tensors, strict=False))
        sizes, scalars = {}, {}
        for key, val in named.items():
            if key in arrays and key in names[:len(tensors)]:
                raise RuntimeFailure(f"kernel '{self.name}': {key} is given twice")
            kind = next((a.kind for a in self.abi.args if a.name == key), None)
            if kind == ArgKind.TENSOR:
                arrays[key] = val
            elif kind == ArgKind.SIZE:
                sizes[key] = val
            elif kind == ArgKind.SCALAR:
                scalars[key] = val
            else:
                raise RuntimeFailure(f"kernel '{self.name}' has no argument {key!r}",
                                     hint="arguments: " + ", ".join(a.name for a in self.abi.args
                                                                    if a.kind not in (ArgKind.STRIDE,
                                                                                      ArgKind.WORKSPACE)))
        return bind(self.plan, self.backend, arrays, sizes, scalars, stream, workspace)

    def __call__(self, *tensors: Any, stream: Any = None, workspace: Any = None, **named: Any) -> Any:
        op = self.backend.fast_operand
        keyed = None
        if op is not None and stream is None and workspace is None:
            keyed = call_key(op, tensors, named)
            if keyed is not None:
                out = self.run_prepared(*keyed)
                if out is not MISS:
                    return out
        call = self.bind(*tensors, stream=stream, workspace=workspace, **named)
        self.backend.launch(self.handle, call)
        if keyed is not None and keyed[0] not in self._prepared:
            self._remember(keyed[0], call, tensors, named)
        outs = call.outputs()
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_prepared(self, key: tuple, objs: list, ptrs: list) -> Any:
        """Launch the prepared call of signature ``key`` (see :mod:`ckgen.runtime.prepared`); MISS when there is
        none or the call needs the full checks."""
        prep = self._prepared.get(key)
        if prep is None:
            return MISS
        return prep.run(objs, ptrs)

    def _remember(self, key: tuple, call: Call, tensors: tuple, named: dict) -> None:
        if not cacheable(self.abi, tensors, named):
            return
        if call.workspace() is not None and call.workspace()[1] is not None and self.backend.fast_workspace is None:
            return
        if len(self._prepared) >= MAX_ENTRIES:
            self._prepared.clear()
        self._prepared[key] = prepare(self.plan, self.backend, self.handle, call, tensors, named)


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
