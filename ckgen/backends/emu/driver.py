"""The emu backend's driver: emu libraries (:mod:`ckgen.backends.emu.compiler`) loaded and run on ckgen's emulator.

Contract (docs/emulation.md):

- :class:`EmuLibrary` loads such a library with ctypes and wraps the emulator's C API
  (buffer registration, last fault, worker threads, LDS bank statistics: :meth:`EmuLibrary.lds_sites`, one
  :class:`LdsSiteStats` per lds_load/lds_store call site, summed over every launch of the last call, or over
  its last launch only).
- :class:`EmuBackend` is the ``emu`` driver of :mod:`ckgen.runtime.api`: it builds the plan through the
  compiler, loads the library once, registers every numpy operand at its exact byte extent, restarts the bank
  counters (``ckgen_emu_lds_reset``), calls ``ckgen_<kernel>`` and raises :class:`~ckgen.errors.EmulationFault`
  with the emulator's report on a fault.
- :func:`prebuilt_backend`: a driver running many plans from one library (one host compile).
"""

from __future__ import annotations

import array
import ctypes
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckgen.backends.base import (
    ArrayInfo,
    Backend,
    Call,
    byte_bounds,
    host_argtypes,
    host_output_maker,
    new_host_output,
    numpy_array_info,
    numpy_fast_operand,
    pack_slots,
    packed_entry,
)
from ckgen.backends.emu.compiler import build_emu_kernel, build_library
from ckgen.errors import EmulationFault, RuntimeFailure
from ckgen.ir.abi import ArgKind
from ckgen.ir.arrays import poison as poison_array

#: status codes (ckgen/status.h)
CKGEN_SUCCESS = 0
CKGEN_ERROR_INVALID_VALUE = 1
CKGEN_ERROR_EMULATION_FAULT = 6


@dataclass(frozen=True)
class LdsSiteStats:
    """LDS bank statistics of one lds_load / lds_store call site (ckgen/emu/lds_banks.h), over the launches of the
    last call or its last launch (:meth:`EmuLibrary.lds_sites`)."""

    file: str
    line: int
    write: bool
    instructions: int     # wave-level LDS instructions
    extra_cycles: int     # extra cycles from bank conflicts, summed
    max_ways: int         # worst phase: distinct dwords one bank had to serve
    accesses: int         # lane accesses

    @property
    def where(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


class EmuLibrary:
    """A loaded emu shared library and the emulator's C API inside it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.lib = ctypes.CDLL(str(self.path), mode=os.RTLD_LOCAL)
        lib = self.lib
        lib.ckgen_emu_register_buffer.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        lib.ckgen_emu_register_buffer.restype = ctypes.c_int
        lib.ckgen_emu_clear_buffers.argtypes = []
        lib.ckgen_emu_clear_buffers.restype = None
        lib.ckgen_emu_last_fault.argtypes = []
        lib.ckgen_emu_last_fault.restype = ctypes.c_char_p
        lib.ckgen_emu_fault_count.argtypes = []
        lib.ckgen_emu_fault_count.restype = ctypes.c_int
        lib.ckgen_emu_set_threads.argtypes = [ctypes.c_int]
        lib.ckgen_emu_set_threads.restype = None
        lib.ckgen_emu_lds_site_count.argtypes = []
        lib.ckgen_emu_lds_site_count.restype = ctypes.c_int
        lib.ckgen_emu_lds_reset.argtypes = []
        lib.ckgen_emu_lds_reset.restype = None
        lib.ckgen_emu_lds_launches.argtypes = []
        lib.ckgen_emu_lds_launches.restype = ctypes.c_int
        lib.ckgen_emu_lds_site.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)] + [
            ctypes.POINTER(ctypes.c_int)] * 2 + [ctypes.POINTER(ctypes.c_longlong)] * 2 + [
            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_longlong)]
        lib.ckgen_emu_lds_site.restype = ctypes.c_int

    def register(self, array: np.ndarray, name: str) -> None:
        """Register the bytes ``array`` spans (a view: only its own extent) as a buffer named ``name``."""
        lo, hi = byte_bounds(array)
        self.lib.ckgen_emu_register_buffer(ctypes.c_void_p(lo), hi - lo, name.encode())

    def clear_buffers(self) -> None:
        self.lib.ckgen_emu_clear_buffers()

    def last_fault(self) -> str:
        return (self.lib.ckgen_emu_last_fault() or b"").decode(errors="replace")

    def fault_count(self) -> int:
        return int(self.lib.ckgen_emu_fault_count())

    def set_threads(self, n: int) -> None:
        self.lib.ckgen_emu_set_threads(int(n))

    def lds_reset(self) -> None:
        """Restart the bank counters: :meth:`lds_sites` then counts the launches from here on (the drivers call it
        before every call of a kernel)."""
        self.lib.ckgen_emu_lds_reset()

    def lds_launches(self) -> int:
        """Launches since the last :meth:`lds_reset` (one per kernel the call launched)."""
        return int(self.lib.ckgen_emu_lds_launches())

    def lds_sites(self, last_launch: bool = False) -> list[LdsSiteStats]:
        """Bank statistics per LDS call site that ran, summed over every launch since the last :meth:`lds_reset`
        (through a driver: every launch of the last call, e.g. a main kernel and a combine kernel), or with
        ``last_launch`` over the last launch only; the same for a call of one launch. Sites are never forgotten;
        sites the window did not reach report 0 instructions and are left out."""
        out = []
        for i in range(self.lib.ckgen_emu_lds_site_count()):
            f, line, wr, mw = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            ins, extra, acc = ctypes.c_longlong(), ctypes.c_longlong(), ctypes.c_longlong()
            if self.lib.ckgen_emu_lds_site(i, int(last_launch), ctypes.byref(f), ctypes.byref(line), ctypes.byref(wr),
                                           ctypes.byref(ins), ctypes.byref(extra), ctypes.byref(mw),
                                           ctypes.byref(acc)) == 0 and ins.value:
                out.append(LdsSiteStats((f.value or b"").decode(), line.value, bool(wr.value), ins.value, extra.value,
                                        mw.value, acc.value))
        return out

    def check_status(self, status: int, what: str) -> None:
        """Raise EmulationFault (status 6) or RuntimeFailure for a non-zero status."""
        if status == CKGEN_SUCCESS:
            return
        if status == CKGEN_ERROR_EMULATION_FAULT:
            raise EmulationFault(self.last_fault() or f"{what}: emulation fault")

        detail = self.last_fault()
        raise RuntimeFailure(f"{what}: status {status}" + (f": {detail}" if detail else ""))


class EmuKernel:
    """A built emu library and its entry point ``ckgen_<name>``."""

    def __init__(self, plan, library: EmuLibrary):
        self.plan = plan
        self.library = library
        self.lock = threading.Lock()
        fn = getattr(library.lib, f"ckgen_{plan.name}")
        fn.argtypes = host_argtypes(plan.abi)
        fn.restype = ctypes.c_int
        self.entry = fn
        self.packed = packed_entry(library.lib, plan.name)


_loaded: dict[Path, EmuLibrary] = {}
_loaded_lock = threading.Lock()


def load_library(path: Path) -> EmuLibrary:
    """Load ``path`` once per process."""
    path = Path(path).resolve()
    with _loaded_lock:
        if path not in _loaded:
            _loaded[path] = EmuLibrary(path)
        return _loaded[path]


def _ptr(obj) -> int | None:
    return obj.__array_interface__["data"][0] if obj is not None else None


class EmuBackend(Backend):
    """The CPU emulator (numpy arrays in and out)."""

    name = "emu"
    vendor = "amd"

    def build(self, plan) -> EmuKernel:
        return EmuKernel(plan, load_library(build_emu_kernel(plan)))

    def array_info(self, obj, what: str) -> ArrayInfo:
        if not isinstance(obj, np.ndarray):

            raise RuntimeFailure(f"{what}: the emu target takes numpy arrays, got {type(obj).__name__}")
        return numpy_array_info(obj, what)

    def new_output(self, shape, np_dtype, order, like, dtype) -> np.ndarray:
        return new_host_output(shape, np_dtype, order)  # poisoned: NaN / -1 where nothing is written

    fast_operand = staticmethod(numpy_fast_operand)

    def _workspaces(self) -> dict[int, np.ndarray]:
        """Per-thread workspace buffers of the prepared calls, made on first use (subclasses need not call an
        ``__init__``)."""
        return self.__dict__.setdefault("_ws", {})

    def fast_ptr(self, obj) -> int:
        return obj.__array_interface__["data"][0]

    def poison_output(self, obj) -> None:
        poison_array(obj)

    def fast_output(self, like_out, info):
        return host_output_maker(like_out)

    def fast_workspace(self, nbytes: int, like) -> tuple:
        """One zero-filled buffer per thread (every kernel leaves it zero-filled), grown when needed."""
        tid = threading.get_ident()
        cache = self._workspaces()
        ws = cache.get(tid)
        if ws is None or ws.size < nbytes:
            ws = cache[tid] = np.zeros(max(int(nbytes), 1), np.uint8)
        return ws, ws.__array_interface__["data"][0]

    def fast_template(self, plan, values: list) -> array.array:
        return pack_slots(plan.abi, values)

    def fast_launcher(self, handle: EmuKernel, plan, call: Call):
        names = [a.name for a in plan.abi.tensors] + [plan.abi.workspace.name if plan.abi.workspace else "workspace"]
        lib, entry, lock = handle.library, handle.packed, handle.lock
        what = f"kernel '{handle.plan.name}' on emu ({handle.plan.arch})"
        ws_cache = self._workspaces()

        def launch(args: list, live: list) -> None:
            with lock:
                lib.clear_buffers()
                for name, arr in zip(names, live, strict=True):
                    if arr is not None and arr.size:
                        lib.register(arr, name)
                lib.lds_reset()
                status = entry(args.buffer_info()[0], None)
                if status:
                    ws_cache.clear()  # a faulting kernel may leave the workspace dirty
                lib.check_status(status, what)
        return launch

    def launch(self, handle: EmuKernel, call: Call) -> None:
        lib = handle.library
        args = [_ptr(v) if a.is_tensor or a.kind == ArgKind.WORKSPACE else v
                for a, v in zip(call.plan.abi.args, call.values, strict=True)]
        ws = call.workspace()
        with handle.lock:
            lib.clear_buffers()
            for a, arr in [*call.tensors(), *([ws] if ws else [])]:
                if arr is not None and arr.size:
                    lib.register(arr, a.name)
            lib.lds_reset()
            status = handle.entry(*args, None)
            lib.check_status(status, f"kernel '{handle.plan.name}' on emu ({handle.plan.arch})")


def lds_bank_summary(sites: list[LdsSiteStats]) -> str:
    """One line for ``ckgen run``: extra cycles from LDS bank conflicts over the wave instructions, reads and
    writes apart, and the worst site when there are conflicts."""
    def part(kind: str, chosen: list[LdsSiteStats]) -> str:
        return (f"{kind} {sum(s.extra_cycles for s in chosen)} extra cycles over "
                f"{sum(s.instructions for s in chosen)} instructions")

    reads, writes = [s for s in sites if not s.write], [s for s in sites if s.write]
    total = sum(s.extra_cycles for s in sites)
    line = f"LDS bank conflicts ({total} extra cycles): {part('ds_read', reads)}; {part('ds_write', writes)}"
    if total:
        worst = max(sites, key=lambda s: s.extra_cycles)
        line += f"; worst {worst.where} ({'write' if worst.write else 'read'}, up to {worst.max_ways}-way)"
    return line


def prebuilt_backend(plans, stem: str) -> EmuBackend:
    """An emu driver whose ``build(plan)`` takes each of ``plans`` from one library
    (:func:`~ckgen.backends.emu.compiler.build_library`: one host compile for all). One library has one buffer
    registry and one fault record, so its kernels launch one at a time."""

    library = load_library(build_library(stem, plans).library)
    lock = threading.Lock()

    class _Prebuilt(EmuBackend):
        def build(self, plan) -> EmuKernel:
            kernel = EmuKernel(plan, library)
            kernel.lock = lock
            return kernel

    return _Prebuilt()
