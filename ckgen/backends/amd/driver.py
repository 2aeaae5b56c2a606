"""The AMD backend's driver: code objects (:mod:`ckgen.backends.amd.compiler`) loaded with hipModuleLoadData and
launched through hip-python (``pip install hip-python``), which calls the system's ``libamdhip64``. Contracts:

- :class:`HipModule` loads a code object and launches one of its kernels with
  ``hipModuleLaunchKernel``. With no GPU it raises :class:`HipNoDevice` (never a HIP traceback).
- :func:`device_pointer` accepts hip-python buffers (``hipMalloc``'s ``DeviceArray``), any object with
  ``__cuda_array_interface__`` (ROCm PyTorch tensors, CuPy), and checks dtype, shape and size.
- :class:`HipBackend` is the ``hip`` driver of :mod:`ckgen.runtime.api`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ckgen.backends.amd.compiler import CodeObject, compile_code_object, hiprtc_info  # noqa: F401
from ckgen.backends.amd.hip_bindings import (  # noqa: F401  (re-exported: the errors are part of this module's API)
    _ROCM5_GCN_ARCH_NAME_OFFSET,
    _ROCM5_PROP_SIZE,
    STATUS_INVALID_VALUE,
    STATUS_LAUNCH_FAILED,
    STATUS_NO_DEVICE,
    STATUS_NO_RUNTIME,
    STATUS_UNSUPPORTED_ARCH,
    HipArgumentError,
    HipLaunchError,
    HipNoDevice,
    HipRuntimeUnavailable,
    _amdhip64,
    _bindings,
    _code,
    _dl_path_of,
    _hip_call,
    _load,
)
from ckgen.backends.base import ArrayInfo, Backend, new_host_output, numpy_array_info
from ckgen.codegen import render_kernel
from ckgen.errors import option
from ckgen.ir.plan import split_launch


# ------------------------------------------------------------------------------------------ device
def device_count() -> int:
    """Number of HIP devices; raises :class:`HipNoDevice` when there is none."""
    b = _bindings()
    try:
        n = _hip_call("hipGetDeviceCount", b.hip.hipGetDeviceCount())
    except RuntimeError as e:  # hip-python could not dlopen libamdhip64
        raise HipRuntimeUnavailable(f"HIP runtime library not loadable: {e}",
                                    hint="install ROCm's libamdhip64 (Debian: apt-get install libamdhip64-5)") from None
    if int(n) == 0:
        raise HipNoDevice("hipGetDeviceCount: no AMD GPU is visible to HIP",
                          hint=f"run on a machine with an AMD GPU, or use {option('target', 'emu')}")
    return int(n)


def device_arch(device: int = 0) -> str:
    """The processor name (``gfxNNN``, features stripped) of HIP device ``device``."""
    device_count()
    hip = _amdhip64()
    if hip is not None and not hasattr(hip, "hipGetDevicePropertiesR0600"):
        # ROCm 5.x: hip-python's bindings use the ROCm 6 struct; read the 5.x one directly.
        buf = ctypes.create_string_buffer(max(_ROCM5_PROP_SIZE, 4096))
        _hip_call("hipGetDeviceProperties", hip.hipGetDeviceProperties(buf, ctypes.c_int(device)))
        name = buf.raw[_ROCM5_GCN_ARCH_NAME_OFFSET:_ROCM5_GCN_ARCH_NAME_OFFSET + 256].split(b"\0", 1)[0]
    else:
        props = _hip_call("hipGetDeviceProperties", _bindings().hip.hipGetDeviceProperties(device))
        name = props.gcnArchName
    name = name.decode() if isinstance(name, bytes) else str(name)
    return name.split(":", 1)[0]


# ------------------------------------------------------------------------------------------ buffers
@dataclass(frozen=True)
class DeviceBuffer:
    """A device address with what the caller told us about it (None: unknown, e.g. raw hipMalloc)."""

    ptr: int
    nbytes: int | None
    shape: tuple[int, ...] | None
    typestr: str | None
    strides: tuple[int, ...] | None


_RAW_TYPESTRS = {"B", "|u1", "<u1", "b", "|b1"}


def device_pointer(obj: Any, what: str) -> DeviceBuffer:
    """Accept a hip-python buffer (``hipMalloc``), a ``__cuda_array_interface__`` object or None."""
    if obj is None:
        return DeviceBuffer(0, None, None, None, None)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict) and "data" in cai:
        ptr = int(cai["data"][0])
        shape = tuple(int(s) for s in cai.get("shape", ()))
        typestr = str(cai.get("typestr", ""))
        itemsize = int(getattr(obj, "itemsize", 0) or 0) if typestr in _RAW_TYPESTRS else 0
        if not itemsize:
            digits = "".join(ch for ch in typestr if ch.isdigit())
            itemsize = int(digits) if digits else 1
        n = 1
        for s in shape:
            n *= s
        strides = cai.get("strides")
        return DeviceBuffer(ptr, n * itemsize, shape, typestr,
                            tuple(int(s) for s in strides) if strides else None)
    if type(obj).__module__.startswith("rocm.bindings") or type(obj).__module__.startswith("hip"):
        try:
            return DeviceBuffer(int(obj), None, None, None, None)
        except (TypeError, ValueError):
            pass
    raise HipArgumentError(
        f"{what}: expected a device buffer (hip-python hipMalloc result or an object with "
        f"__cuda_array_interface__), got {type(obj).__name__}",
        hint=f"numpy arrays live on the host: copy them with hip.hipMemcpy, or use {option('target', 'emu')}")


# ------------------------------------------------------------------------------------------ modules
class HipModule:
    """A loaded code object. Loading happens on first use, so construction never needs a device."""

    def __init__(self, code: CodeObject):
        self.code = code
        self._module = None
        self._functions: dict[str, Any] = {}
        self._lock = threading.Lock()

    def function(self, name: str) -> Any:
        with self._lock:
            if self._module is None:
                device_count()
                arch = device_arch()
                if arch != self.code.arch:
                    err = HipLaunchError(f"the code object is for {self.code.arch}, the device is {arch}",
                                         hint=f"build for {option('arch', arch)}")
                    err.status = STATUS_UNSUPPORTED_ARCH
                    raise err
                self._module = _hip_call("hipModuleLoadData",
                                         _bindings().hip.hipModuleLoadData(self.code.data))
            if name not in self._functions:
                self._functions[name] = _hip_call(
                    f"hipModuleGetFunction({name})",
                    _bindings().hip.hipModuleGetFunction(self._module, name.encode()))
            return self._functions[name]

    def launch(self, name: str, grid: tuple[int, int, int], block: int,
               args: list[ctypes._SimpleCData], stream: Any = None, lds_bytes: int = 0) -> None:
        """``hipModuleLaunchKernel`` with ``args`` packed as kernelParams (one pointer per argument)."""
        fn = self.function(name)
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        _hip_call(f"hipModuleLaunchKernel({name})", _bindings().hip.hipModuleLaunchKernel(
            fn, grid[0], grid[1], grid[2], block, 1, 1, lds_bytes, stream,
            ctypes.addressof(params), None))


# ------------------------------------------------------------------------------------------ plan kernels
_DEVICE_CTYPES = {"tensor": ctypes.c_void_p, "size": ctypes.c_int, "stride": ctypes.c_longlong, "scalar": ctypes.c_float,
                  "workspace": ctypes.c_void_p}


class HipKernel:
    """One planned kernel: its generated source compiled for its arch (hiprtc or clang, cached) and a
    :class:`HipModule` that loads on first launch. Construction needs no device."""

    def __init__(self, plan: Any, *, compiler: str = "auto"):

        self.plan = plan
        self.name = plan.name
        self.source = render_kernel(plan)
        self.code = compile_code_object(self.source, plan.name, plan.arch, compiler=compiler)
        self.module = HipModule(self.code)

    def launch_raw(self, values: list[Any], sizes: dict[str, int], stream: Any = None) -> None:
        """Launch the device entry with one value per ABI argument (tensors as device addresses), which the
        caller has checked; the grid is the plan's, at ``sizes`` (as consecutive sub-problems when it is over the
        launch limits: :func:`ckgen.ir.plan.split_launch`)."""

        if any(sizes[s] == 0 for s in self.plan.abi.empty_if):
            return
        abi = self.plan.abi
        for sub in split_launch(abi, self.plan.launch, {a.name: v for a, v in zip(abi.args, values, strict=True)}):
            args = [(ctypes.c_int if a.is_int_scalar else _DEVICE_CTYPES[a.kind.value])(sub[a.name]) for a in abi.args]
            self.module.launch(self.name, self.plan.launch.grid_counts(sub), self.plan.threads, args, stream=stream,
                               lds_bytes=self.plan.launch.lds_bytes)


def _malloc(nbytes: int) -> Any:
    device_count()
    return _hip_call("hipMalloc", _bindings().hip.hipMalloc(max(1, nbytes)))


def _span_bytes(a: Any) -> int:
    """Bytes from a numpy array's first element to one past its last (views with a padded ld included)."""
    if a.size == 0:
        return 0
    return sum((d - 1) * st for d, st in zip(a.shape, a.strides, strict=True)) + a.itemsize


class HipArray:
    """A device array from ``hipMalloc`` exposing ``__cuda_array_interface__``, its dims laid out in memory in
    ``order`` (outermost first; default row-major)."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, order: list[int] | None = None):

        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        order = list(range(len(self.shape))) if order is None else list(order)
        item = self.dtype.itemsize
        strides = [0] * len(self.shape)
        acc = item
        for i in reversed(order):
            strides[i] = acc
            acc *= max(self.shape[i], 1)
        self.strides = tuple(strides)
        self._mem = _malloc(acc)
        self.ptr = int(self._mem)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": self.strides, "version": 3}

    def __del__(self) -> None:
        mem = getattr(self, "_mem", None)
        if mem is not None:
            _bindings().hip.hipFree(mem)


def _array_info(obj: Any, what: str):

    buf = device_pointer(obj, what)
    if buf.shape is None or buf.typestr in _RAW_TYPESTRS:
        raise HipArgumentError(f"{what}: a raw device buffer carries no shape or dtype",
                               hint="describe it: buf.configure(shape=(rows, cols), typestr='<f2', itemsize=2)")

    dt = np.dtype(buf.typestr)
    if buf.strides is None:  # C-contiguous
        strides, acc = [], 1
        for d in reversed(buf.shape):
            strides.insert(0, acc)
            acc *= d
    else:
        strides = [st // dt.itemsize for st in buf.strides]
    return ArrayInfo(buf.shape, dt.str, tuple(strides), buf.ptr)


class HipBackend(Backend):
    """The ``"hip"`` target of :func:`ckgen.runtime.api.jit`: device operands as :func:`device_pointer` takes
    (shape and dtype from ``__cuda_array_interface__``); numpy operands are copied to the device and C back."""

    name = "hip"
    vendor = "amd"

    def build(self, plan: Any) -> HipKernel:
        return HipKernel(plan)

    def array_info(self, obj: Any, what: str):

        if isinstance(obj, np.ndarray):  # its host address: the aliasing checks compare it with the others

            return numpy_array_info(obj, what)
        return _array_info(obj, what)

    def to_host(self, obj: Any) -> Any:
        """numpy arrays as they are; device arrays are not read back here (pass the sizes they would give)."""

        if isinstance(obj, np.ndarray):
            return obj
        raise HipArgumentError("the hip target does not read device arrays back to derive sizes",
                               hint="pass the size explicitly (NAME=value) or a numpy array")

    def new_output(self, shape: tuple[int, ...], np_dtype: Any, order: list[int], like: Any, dtype: Any) -> Any:

        if isinstance(like, np.ndarray):

            return new_host_output(shape, np_dtype, order)
        return HipArray(shape, np_dtype, order)

    # ---- prepared calls (ckgen.runtime.prepared): device arrays only; numpy operands (host copies) and kernels
    # with a workspace take the full path
    def fast_operand(self, obj: Any) -> Any:
        """(typestr, shape, byte strides, type, address mod 16), address of a ``__cuda_array_interface__`` object."""
        cai = getattr(obj, "__cuda_array_interface__", None)
        if not isinstance(cai, dict):
            return None
        p = int(cai["data"][0])
        st = cai.get("strides")
        return (cai.get("typestr"), tuple(cai.get("shape", ())), None if st is None else tuple(st), type(obj),
                p & 15), p

    def fast_ptr(self, obj: Any) -> int:
        return device_pointer(obj, "output").ptr

    def fast_output(self, like_out: Any, info: Any) -> Any:
        shape, dtype = tuple(like_out.shape), like_out.dtype
        order = sorted(range(len(shape)), key=lambda i: -info.strides[i])
        return lambda: HipArray(shape, dtype, order)

    def fast_launcher(self, handle: HipKernel, plan: Any, call: Any) -> Any:
        sizes = dict(call.sizes)
        return lambda args, live: handle.launch_raw(args, sizes, stream=None)

    def launch(self, handle: HipKernel, call: Any) -> None:

        device_count()  # no device: stop before allocating anything
        hip = _bindings().hip
        staged: dict[str, tuple[Any, Any, int, bool]] = {}
        values = []
        for a, obj in zip(call.plan.abi.args, call.values, strict=True):
            if not a.is_tensor and a.kind.value != "workspace":
                values.append(obj)
            elif obj is None:
                values.append(0)
            elif isinstance(obj, np.ndarray):  # same bytes on the device, so the same strides in elements
                n = _span_bytes(obj)
                mem = _malloc(n)
                _hip_call("hipMemcpy", hip.hipMemcpy(int(mem), obj.ctypes.data, n,
                                                     hip.hipMemcpyKind.hipMemcpyHostToDevice))
                staged[a.name] = (obj, mem, n, a.writes or a.kind.value == "workspace")
                values.append(int(mem))
            else:
                values.append(device_pointer(obj, a.name).ptr)
        try:
            handle.launch_raw(values, call.sizes, stream=call.stream)
            for host, mem, n, writes in staged.values():
                if writes:
                    _hip_call("hipMemcpy", hip.hipMemcpy(host.ctypes.data, int(mem), n,
                                                         hip.hipMemcpyKind.hipMemcpyDeviceToHost))
        finally:
            for _, mem, _, _ in staged.values():
                hip.hipFree(mem)
