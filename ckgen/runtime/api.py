"""The one JIT API of ckgen, with the target as a parameter.

    import ckgen.runtime.api as ck          # (ckgen.jit is the same function)
    gemm = ck.jit("examples/gemm_f16.ck", kernel="gemm_f16_nt", target="emu", arch="gfx942")
    C = gemm(A, B)                          # numpy in, numpy out on the emulator

``jit(source, kernel=None, target="emu", arch=None) -> GemmKernel``
    ``source`` is a path to a ``.ck`` file or DSL text. ``target`` names a backend: ``"emu"`` (CPU
    emulator, AMD arch), ``"hip"`` (AMD GPU through hip-python) or ``"cuda"``; an NVIDIA arch name
    (``"sm_90"``) means ``target="cuda", arch="sm_90"``. ``arch`` defaults to the kernel's first
    declared arch of the backend's vendor. The kernel is planned for that arch, built through the
    backend (cached on disk) and returned as a :class:`GemmKernel`.

``GemmKernel.__call__(A, B, C=None, bias=None, *, stream=None) -> C``
    Checks, with a :class:`~ckgen.errors.RuntimeFailure` naming the operand: 2-D operands, the spec's
    dtypes (bf16 travels as uint16 bit patterns, see :func:`to_bf16`), A (M, K), B (K, N), C (M, N)
    shapes that agree, each operand's layout (row-major: unit stride along columns; col-major: along
    rows; the other stride is the leading dimension), bias present exactly when the epilogue has one,
    with length M (bias(row)) or N (bias(col)). When C is None it is allocated (row- or col-major as the
    spec says) unless beta != 0, which needs the caller's C. Returns C.

Backends (the interface the emu, hip and cuda runtimes implement)
    A backend is a subclass of :class:`Backend` registered under a name in :data:`BACKENDS`
    (``"module:Class"``, imported on first use). It provides:

    - ``vendor``: the vendor of the targets it runs ("amd" or "nvidia");
    - ``build(plan) -> object``: compile the planned kernel (cached), returning any handle;
    - ``array_info(obj, what) -> ArrayInfo``: shape, dtype (numpy ``dtype.str``, e.g. ``"<f2"``),
      strides in *elements* and a data pointer for one operand; raise RuntimeFailure for objects the
      backend cannot take;
    - ``new_output(shape, np_dtype, row_major, like) -> object``: an output array when C is None;
    - ``launch(handle, call: GemmCall) -> None``: run the kernel; raise RuntimeFailure (EmulationFault
      for emulator faults) on error.
    The shape, dtype and layout checks above are done once here, for every backend.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ckgen.errors import CkgenError, RuntimeFailure
from ckgen.ir.types import DType, Layout

#: backend name -> "module:Class" (imported lazily)
BACKENDS: dict[str, str] = {
    "emu": "ckgen.runtime.emu:EmuBackend",
    "hip": "ckgen.runtime.hip:HipBackend",
    "cuda": "ckgen.runtime.cuda:CudaBackend",
}


@dataclass(frozen=True)
class ArrayInfo:
    """What the API needs to know about one operand. ``strides`` are in elements."""

    shape: tuple[int, ...]
    dtype: str
    strides: tuple[int, ...]
    ptr: int


@dataclass(frozen=True)
class GemmCall:
    """One checked call: the caller's objects and the derived sizes and leading dimensions."""

    A: Any
    B: Any
    C: Any
    bias: Any
    M: int
    N: int
    K: int
    lda: int
    ldb: int
    ldc: int
    stream: Any = None


class Backend(ABC):
    """See the module docstring for the contract."""

    name: str = ""
    vendor: str = ""

    @abstractmethod
    def build(self, plan: Any) -> Any: ...

    @abstractmethod
    def array_info(self, obj: Any, what: str) -> ArrayInfo: ...

    @abstractmethod
    def new_output(self, shape: tuple[int, int], np_dtype: np.dtype, row_major: bool, like: Any) -> Any: ...

    @abstractmethod
    def launch(self, handle: Any, call: GemmCall) -> None: ...


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
    from ckgen.targets import get_target

    try:
        t = get_target(target)
    except CkgenError:
        raise CkgenError(f"target '{target}' is neither a backend nor a known arch",
                         hint="targets: " + ", ".join(sorted(BACKENDS)) + ", or an arch such as sm_90") from None
    if arch is not None and arch != t.name:
        raise CkgenError(f"target '{target}' and arch '{arch}' disagree", hint=f"pass target='{target}' alone")
    return ("cuda" if t.vendor == "nvidia" else "hip"), t.name


def _load_specs(source: str | Path, default_arches: tuple[str, ...] = ()):
    """Specs of a .ck path or DSL text; kernels that name no target take ``default_arches``."""
    from ckgen.frontend import load_file, load_text

    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".ck")):
        path = Path(source)
        if not path.is_file():
            raise CkgenError(f"{path}: no such .ck file")
        return load_file(path, default_arches)
    return load_text(str(source), default_arches=default_arches)


def plan_for(source: str | Path, kernel: str | None, vendor: str, arch: str | None):
    """Parse ``source``, pick ``kernel`` and plan it for ``arch`` (default: its first arch of ``vendor``)."""
    from ckgen.lower import plan_kernel
    from ckgen.targets import default_target, get_target

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


def jit(source: str | Path, kernel: str | None = None, target: str = "emu", arch: str | None = None) -> GemmKernel:
    """Build one kernel for ``target`` and return it as a callable (see the module docstring)."""
    name, arch = resolve_target(target, arch)
    backend = get_backend(name)
    plan = plan_for(source, kernel, backend.vendor, arch)
    return GemmKernel(plan, backend)


def numpy_dtype(dt: DType) -> np.dtype:
    return np.dtype(dt.numpy)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """float array -> bf16 bit patterns (uint16), rounded to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, np.float32))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, np.uint16(0x7FC0), r)


def poison(a: np.ndarray) -> np.ndarray:
    """Fill a contiguous (C or F order) array with 0xFF bytes: NaN for floats and bf16, -1 for integers."""
    flat = a.ravel(order="K")
    if not np.shares_memory(flat, a):
        raise ValueError("poison: array is not contiguous")
    flat.view(np.uint8).fill(0xFF)
    return a


def from_bf16(b: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32."""
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32)


class GemmKernel:
    """One planned kernel built for one backend. Call it with A, B (and C, bias)."""

    def __init__(self, plan: Any, backend: Backend):
        self.plan = plan
        self.backend = backend
        self.name = plan.name
        self.arch = plan.arch
        self.handle = backend.build(plan)
        g = plan.spec.gemm
        self._dtypes = {"A": g.a.dtype, "B": g.b.dtype, "C": g.c.dtype, "bias": plan.bias_dtype}
        self._row_major = {"A": g.a.layout == Layout.ROW, "B": g.b.layout == Layout.ROW,
                           "C": g.c.layout == Layout.ROW}
        self.bias_kind = g.bias_axis  # "row" | "col" | None
        self.beta = g.beta

    def __repr__(self) -> str:
        return f"GemmKernel({self.name!r}, arch={self.arch!r}, target={self.backend.name!r})"

    def _check(self, obj: Any, what: str) -> ArrayInfo:
        info = self.backend.array_info(obj, what)
        want = numpy_dtype(self._dtypes[what])
        if np.dtype(info.dtype) != want:
            extra = " (bf16 is passed as uint16 bit patterns: ckgen.runtime.api.to_bf16)" \
                if self._dtypes[what] == DType.BF16 else ""
            raise RuntimeFailure(f"kernel '{self.name}': {what} has dtype {np.dtype(info.dtype)}, the kernel takes "
                                 f"{self._dtypes[what].value} ({want}){extra}")
        return info

    def _ld(self, info: ArrayInfo, what: str) -> int:
        rows, cols = info.shape
        s0, s1 = info.strides
        row_major = self._row_major[what]
        layout = "row" if row_major else "col"
        if s0 < 0 or s1 < 0:
            raise RuntimeFailure(f"kernel '{self.name}': {what} has negative strides {info.strides}")
        inner, outer, n_inner, n_outer = (s1, s0, cols, rows) if row_major else (s0, s1, rows, cols)
        if n_inner > 1 and inner != 1:
            raise RuntimeFailure(
                f"kernel '{self.name}': {what} must be {layout}-major (unit stride along "
                f"{'columns' if row_major else 'rows'}); its strides are {info.strides} elements",
                hint="pass np.ascontiguousarray(x)" if row_major else "pass np.asfortranarray(x)")
        ld = outer if n_outer > 1 else max(n_inner, 1)
        if ld < max(n_inner, 1):
            raise RuntimeFailure(f"kernel '{self.name}': {what}'s leading dimension {ld} < {n_inner} (overlapping lines)")
        return ld

    def __call__(self, A: Any, B: Any, C: Any = None, bias: Any = None, *, stream: Any = None) -> Any:
        ia, ib = self._check(A, "A"), self._check(B, "B")
        for info, what in ((ia, "A"), (ib, "B")):
            if len(info.shape) != 2:
                raise RuntimeFailure(f"kernel '{self.name}': {what} must be 2-D, got shape {info.shape}")
        M, K = ia.shape
        K2, N = ib.shape
        if K2 != K:
            raise RuntimeFailure(f"kernel '{self.name}': A is {M}x{K} but B is {K2}x{N}: inner dimensions differ")
        if C is None:
            if self.beta != 0.0:
                raise RuntimeFailure(f"kernel '{self.name}' has beta = {self.beta:g}: pass C (it is read)")
            C = self.backend.new_output((M, N), numpy_dtype(self._dtypes["C"]), self._row_major["C"], A)
        ic = self._check(C, "C")
        if ic.shape != (M, N):
            raise RuntimeFailure(f"kernel '{self.name}': C has shape {ic.shape}, expected ({M}, {N}) for A {M}x{K} "
                                 f"and B {K}x{N}")
        if self.bias_kind is None:
            if bias is not None:
                raise RuntimeFailure(f"kernel '{self.name}' has no bias epilogue; bias must be None")
        else:
            if bias is None:
                raise RuntimeFailure(f"kernel '{self.name}' has a bias({self.bias_kind}) epilogue: pass bias")
            ibias = self._check(bias, "bias")
            want = M if self.bias_kind == "row" else N
            if len(ibias.shape) != 1 or ibias.shape[0] != want or (want > 1 and ibias.strides[0] != 1):
                raise RuntimeFailure(f"kernel '{self.name}': bias must be a contiguous vector of length {want} "
                                     f"({'M' if self.bias_kind == 'row' else 'N'}), got shape {ibias.shape}")
        call = GemmCall(A, B, C, bias, M, N, K, self._ld(ia, "A"), self._ld(ib, "B"), self._ld(ic, "C"), stream)
        self.backend.launch(self.handle, call)
        return C


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


def numpy_array_info(obj: np.ndarray, what: str) -> ArrayInfo:
    """ArrayInfo of a host numpy array (strides in elements); RuntimeFailure for a read-only C or odd strides."""
    if what == "C" and not obj.flags.writeable:
        raise RuntimeFailure("C: the output array is read-only")
    isz = obj.itemsize
    if any(st % isz for st in obj.strides):
        raise RuntimeFailure(f"{what}: strides {obj.strides} are not multiples of the element size {isz}")
    return ArrayInfo(tuple(obj.shape), obj.dtype.str, tuple(st // isz for st in obj.strides),
                     obj.__array_interface__["data"][0])
