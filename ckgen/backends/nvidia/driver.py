"""The ``cuda`` backend of the JIT API (:mod:`ckgen.runtime.api`): generated kernels on an NVIDIA GPU.

Contract:

- ``build(plan)``: renders the plan's kernel and launcher, compiles them with nvcc for the plan's
  arch through the build cache (:func:`ckgen.backends.nvidia.compiler.build_cuda_library`: key = sources, which
  hold the spec-derived Cfg; header and template hashes; nvcc version; flags; arch), and loads the
  library once per process.
- Operands: torch CUDA tensors; any object with ``__cuda_array_interface__`` (CuPy, Numba ...); other
  ``__dlpack__`` objects through ``torch.from_dlpack``; numpy arrays, which are copied to the device
  (their whole byte extent, so strides and padding keep their meaning) and C copied back. bf16 is
  ``torch.bfloat16`` or uint16 bit patterns (numpy, CuPy). CPU torch tensors are refused (say
  ``.cuda()`` or ``.numpy()``).
- Streams: GPU operands run on the caller's stream: ``stream=`` when given (an int handle, a
  ``torch.cuda.Stream`` or a CuPy stream), else the current torch stream (torch operands) or the
  current CuPy stream (CuPy operands); the call does not synchronize. numpy calls synchronize.
- Errors: every status from the library raises :class:`~ckgen.errors.RuntimeFailure` with
  ``ckgen_status_string``; operands on different devices, or on the host mixed with device ones, are
  refused by name.
"""

from __future__ import annotations

import array
import ctypes
import functools
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ckgen.backends.base import (
    ArrayInfo,
    Backend,
    Call,
    byte_bounds,
    host_argtypes,
    new_host_output,
    numpy_array_info,
    pack_slots,
    packed_entry,
)
from ckgen.backends.nvidia import native
from ckgen.backends.nvidia.compiler import build_cuda_library
from ckgen.config import settings
from ckgen.errors import RuntimeFailure
from ckgen.ir.abi import ArgKind
from ckgen.ir.arrays import torch_dtype_name

_TORCH_NP = {"torch.float16": "<f2", "torch.bfloat16": "<u2", "torch.float32": "<f4", "torch.int8": "|i1",
             "torch.int32": "<i4", "torch.uint16": "<u2", "torch.float64": "<f8", "torch.uint8": "|u1",
             "torch.int64": "<i8",
             # fp8 tensors travel as their uint8 codes (the kernel's dtype names the encoding; see docs/dsl.md)
             "torch.float8_e4m3fn": "|u1", "torch.float8_e5m2": "|u1", "torch.float8_e4m3fnuz": "|u1",
             "torch.float8_e5m2fnuz": "|u1"}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _is_torch(obj) -> bool:
    t = type(obj)
    return t.__module__.startswith("torch") and t.__name__ in ("Tensor", "Parameter")


_TENSOR_TYPES: tuple[type, ...] = ()


def _raw_stream(dev: int) -> int:
    """The current torch stream of device ``dev`` as a raw handle (torch's fastest query, else the public API)."""
    torch = _torch()
    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if fast is not None:
        return fast(dev)
    return int(torch.cuda.current_stream(dev).cuda_stream)


class CudaKernel:
    """A loaded library and the entry point ``ckgen_<name>``."""

    def __init__(self, plan, path: Path):
        self.plan = plan
        self.path = path
        self.lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)
        fn = getattr(self.lib, f"ckgen_{plan.name}")
        fn.argtypes = host_argtypes(plan.abi)
        fn.restype = ctypes.c_int
        self.entry = fn
        self.packed = packed_entry(self.lib, plan.name)
        self.lib.ckgen_status_string.argtypes = [ctypes.c_int]
        self.lib.ckgen_status_string.restype = ctypes.c_char_p

    def status_text(self, status: int) -> str:
        return (self.lib.ckgen_status_string(status) or b"").decode()


_loaded: dict[Path, CudaKernel] = {}
_lock = threading.Lock()


class CudaBackend(Backend):
    name = "cuda"
    vendor = "nvidia"

    def __init__(self) -> None:
        self._ws: dict[tuple[int, int], Any] = {}
        self._old_ws: list[Any] = []

    # ------------------------------------------------------------------ build
    def build(self, plan) -> CudaKernel:

        lib = build_cuda_library(plan.name, [plan])
        path = lib.library.resolve()
        with _lock:
            if path not in _loaded:
                _loaded[path] = CudaKernel(plan, path)
            return _loaded[path]

    # ------------------------------------------------------------------ operands
    def array_info(self, obj: Any, what: str) -> ArrayInfo:
        if isinstance(obj, np.ndarray):
            return numpy_array_info(obj, what)
        if _is_torch(obj):
            if not obj.is_cuda:
                raise RuntimeFailure(f"{what}: a torch tensor on {obj.device}; the cuda target takes CUDA tensors",
                                     hint="move it with .cuda(), or pass a numpy array (copied to the GPU and back)")
            dt = _TORCH_NP.get(str(obj.dtype))
            if dt is None:
                raise RuntimeFailure(f"{what}: unsupported torch dtype {obj.dtype}")
            return ArrayInfo(tuple(obj.shape), dt, tuple(obj.stride()), int(obj.data_ptr()))
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            shape = tuple(cai["shape"])
            dt = np.dtype(cai["typestr"])
            strides = cai.get("strides")
            if strides is None:  # C-contiguous
                strides, acc = [], dt.itemsize
                for n in reversed(shape):
                    strides.insert(0, acc)
                    acc *= max(n, 1)
            if any(st % dt.itemsize for st in strides):
                raise RuntimeFailure(f"{what}: strides {tuple(strides)} are not multiples of the element size")
            return ArrayInfo(shape, dt.str, tuple(st // dt.itemsize for st in strides), int(cai["data"][0]))
        if hasattr(obj, "__dlpack__"):
            torch = _torch()
            if torch is None:
                raise RuntimeFailure(f"{what}: DLPack objects need torch to be imported (torch.from_dlpack)")
            return self.array_info(torch.from_dlpack(obj), what)
        raise RuntimeFailure(f"{what}: the cuda target takes torch CUDA tensors, objects with "
                             f"__cuda_array_interface__ (CuPy), DLPack objects or numpy arrays, got {type(obj).__name__}")

    def to_host(self, obj: Any) -> np.ndarray:
        """A host copy of ``obj`` (numpy, torch, CuPy / CUDA-array-interface objects); synchronizes."""
        if isinstance(obj, np.ndarray):
            return obj
        if _is_torch(obj):
            return obj.detach().cpu().numpy()
        if hasattr(obj, "__cuda_array_interface__"):
            import cupy

            return cupy.asnumpy(obj)
        torch = _torch()
        if torch is not None and hasattr(obj, "__dlpack__"):
            return torch.from_dlpack(obj).cpu().numpy()
        raise RuntimeFailure(f"cannot read a {type(obj).__name__} on the host")

    def new_output(self, shape, np_dtype, order, like, dtype) -> Any:
        inverse = [order.index(i) for i in range(len(order))]
        mem_shape = [shape[i] for i in order]
        if _is_torch(like):
            torch = _torch()
            base = torch.empty(mem_shape, dtype=getattr(torch, torch_dtype_name(dtype)), device=like.device)
            base.view(torch.uint8).fill_(0xFF)  # poison: NaN / -1 where nothing is written
            return base.permute(inverse)
        if hasattr(like, "__cuda_array_interface__"):
            import cupy  # a CUDA-array-interface operand without torch: CuPy is the common case

            out = cupy.empty(mem_shape, dtype=np_dtype)
            out.view(cupy.uint8).fill(0xFF)
            return out.transpose(inverse)
        return new_host_output(shape, np_dtype, order)

    def new_workspace(self, nbytes: int, like: Any) -> Any:
        """Zero-filled scratch on the operands' device (a numpy array for host operands)."""
        if _is_torch(like):
            return _torch().zeros(max(int(nbytes), 1), dtype=_torch().uint8, device=like.device)
        if hasattr(like, "__cuda_array_interface__"):
            import cupy

            return cupy.zeros(max(int(nbytes), 1), dtype=cupy.uint8)
        return np.zeros(max(int(nbytes), 1), np.uint8)

    # ------------------------------------------------------------------ prepared calls (ckgen.runtime.prepared)
    def fast_operand(self, obj: Any) -> Any:
        """(dtype, shape, strides, device index, address mod 16), address of a CUDA torch tensor; None for
        anything else (numpy host copies, CuPy, DLPack objects take the full path)."""
        global _TENSOR_TYPES
        if type(obj) not in _TENSOR_TYPES:
            if not _is_torch(obj):
                return None
            _TENSOR_TYPES = (*_TENSOR_TYPES, type(obj))
        if not obj.is_cuda:
            return None
        p = obj.data_ptr()
        return (obj.dtype, obj.shape, obj.stride(), obj.get_device(), p & 15), p

    def fast_ptr(self, obj: Any) -> int:
        return obj.data_ptr()

    def fast_template(self, plan, values: list) -> array.array:
        return pack_slots(plan.abi, values)

    def poison_output(self, obj: Any) -> None:
        if _is_torch(obj):
            obj.untyped_storage().fill_(0xFF)  # the output's own allocation (empty_strided): NaN / -1

    def fast_output(self, like_out: Any, info: ArrayInfo) -> Any:

        torch = _torch()
        return functools.partial(torch.empty_strided, tuple(like_out.shape), tuple(like_out.stride()),
                                 dtype=like_out.dtype, device=like_out.device)

    def fast_workspace(self, nbytes: int, like: Any) -> tuple:
        """One zero-filled buffer per (device, current stream), grown when needed (kernels leave it zero-filled;
        buffers outgrown stay alive, as a captured CUDA graph may still use them); the compiled prepared call's
        buffers when it is built (native.py), so that both paths share one per stream."""
        dev = like.get_device()
        mod = native.module()
        if mod is not None:
            ws = mod.workspace(dev, _raw_stream(dev), int(nbytes))
            return ws, ws.data_ptr()
        key = (dev, _raw_stream(dev))
        ws = self._ws.get(key)
        if ws is None or ws.numel() < nbytes:
            if ws is not None:
                self._old_ws.append(ws)
            ws = self._ws[key] = _torch().zeros(max(int(nbytes), 1), dtype=_torch().uint8, device=like.device)
        return ws, ws.data_ptr()

    def fast_launcher(self, handle: CudaKernel, plan, call: Call):
        torch = _torch()
        dev = next(v.get_device() for a, v in call.tensors() if v is not None and _is_torch(v))
        entry, check = handle.packed, self._check
        get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or _raw_stream

        def launch(args: array.array, live: list) -> None:
            if get_device() == dev:
                status = entry(args.buffer_info()[0], raw_stream(dev))
            else:
                with torch.cuda.device(dev):
                    status = entry(args.buffer_info()[0], raw_stream(dev))
            if status:
                self._drop_workspaces()
                check(handle, status)
        return launch

    def native_class(self, base: type) -> type | None:
        return native.native_class(base)

    def native_spec(self, handle: CudaKernel, key: tuple, prep: Any) -> tuple:
        return native.spec(handle.packed, key, prep, settings().poison)

    def raise_status(self, handle: CudaKernel, status: int, what: str | None = None) -> None:
        self._drop_workspaces()
        self._check(handle, status, what)

    def _drop_workspaces(self) -> None:
        """Forget the workspaces after a failed launch (a kernel that failed may have left one dirty)."""
        self._ws.clear()
        mod = native.module()
        if mod is not None:
            mod.drop_workspaces()

    # ------------------------------------------------------------------ launch
    def _stream(self, stream: Any, kinds: set[str]) -> int:
        if stream is not None:
            if isinstance(stream, int):
                return stream
            for attr in ("cuda_stream", "ptr"):
                if hasattr(stream, attr):
                    return int(getattr(stream, attr))
            raise RuntimeFailure(f"stream: cannot take a {type(stream).__name__} (pass an int handle, "
                                 "a torch.cuda.Stream or a CuPy stream)")
        if "torch" in kinds or "host" in kinds:
            torch = _torch()
            if torch is not None:
                return int(torch.cuda.current_stream().cuda_stream)
        if "cai" in kinds:
            try:
                import cupy

                return int(cupy.cuda.get_current_stream().ptr)
            except ImportError:
                pass
        return 0

    def launch(self, handle: CudaKernel, call: Call) -> None:
        ws = call.workspace()
        tensors = [(a.name, v) for a, v in [*call.tensors(), *([ws] if ws else [])] if v is not None]
        kinds = {k: "host" if isinstance(v, np.ndarray) else "torch" if _is_torch(v) else "cai" for k, v in tensors}
        host = [k for k, v in kinds.items() if v == "host"]
        if host and len(host) != len(kinds):
            raise RuntimeFailure(f"operands {', '.join(host)} are numpy (host) arrays but "
                                 f"{', '.join(k for k in kinds if k not in host)} live on the GPU: pass all on one side")
        if host:
            self._launch_host(handle, call)
            return
        devices = {v.device.index for k, v in tensors if kinds[k] == "torch"}
        if len(devices) > 1:
            raise RuntimeFailure(f"operands are on different CUDA devices {sorted(devices)}")
        ptr = {k: self.array_info(v, k).ptr for k, v in tensors}
        stream = self._stream(call.stream, set(kinds.values()))
        torch = _torch() if devices else None
        if torch is not None:
            with torch.cuda.device(devices.pop()):
                status = self._call(handle, call, ptr, stream)
        else:
            status = self._call(handle, call, ptr, stream)
        self._check(handle, status)

    def _call(self, handle: CudaKernel, call: Call, ptr: dict, stream: int) -> int:
        args = [ptr.get(a.name) if a.is_tensor or a.kind == ArgKind.WORKSPACE else v
                for a, v in zip(call.plan.abi.args, call.values, strict=True)]
        return handle.entry(*args, stream or None)

    def _check(self, handle: CudaKernel, status: int, what: str | None = None) -> None:
        if status != 0:
            raise RuntimeFailure(f"{what or 'kernel ' + repr(handle.plan.name)} on {handle.plan.arch}: status {status}: "
                                 f"{handle.status_text(status)}")

    def _launch_host(self, handle: CudaKernel, call: Call) -> None:
        torch = _torch()
        if torch is None:
            raise RuntimeFailure("numpy operands on the cuda target need torch (to copy them to the GPU)")
        dev = {}
        ptr = {}
        ws = call.workspace()
        for a, v in [*call.tensors(), *([ws] if ws else [])]:
            if v is None:
                continue
            lo, hi = byte_bounds(v)
            raw = np.ctypeslib.as_array((ctypes.c_uint8 * max(hi - lo, 1)).from_address(lo))
            d = torch.from_numpy(raw.copy()).cuda()
            dev[a.name] = (a, d, lo, hi)
            ptr[a.name] = d.data_ptr() + (v.__array_interface__["data"][0] - lo)
        stream = int(torch.cuda.current_stream().cuda_stream)
        status = self._call(handle, call, ptr, stream)
        self._check(handle, status)
        for a, d, lo, hi in dev.values():
            if a.is_tensor and a.writes:
                back = d.cpu().numpy()  # synchronizes with the stream
                ctypes.memmove(lo, back.ctypes.data, hi - lo)
