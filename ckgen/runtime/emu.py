"""The ``emu`` target: generated gfx9 kernels built for the host CPU and run on ckgen's emulator.

Contract (docs/emulation.md):

- :func:`emu_defines` turns a :class:`~ckgen.targets.model.Target` into the preprocessor flags that
  parameterize the emulated arch: the builtins of its MFMA table (``CKGEN_EMU_ARCH_RESTRICT`` +
  ``CKGEN_EMU_HAS_<name>``), its LDS limit, wave size and fp8 encoding. Nothing here tests an arch name.
- :func:`compile_flags` / :func:`build_shared` compile sources with the host clang++ into a plain
  shared library (``-DCKGEN_PLATFORM_EMU``); output is written to a temp file and published with
  ``os.replace``.
- :class:`EmuLibrary` loads such a library with ctypes and wraps the emulator's C API
  (buffer registration, last fault, worker threads, LDS bank statistics of the last launch:
  :meth:`EmuLibrary.lds_sites`, one :class:`LdsSiteStats` per lds_load/lds_store call site).
- :class:`EmuBackend` is the ``emu`` backend of :mod:`ckgen.runtime.api`: it renders the plan's
  kernel and emu launcher (ckgen.codegen), builds them through the build cache (key: both sources,
  compiler version, flags, header hashes), loads the library once, registers every numpy operand at
  its exact byte extent, calls ``ckgen_<kernel>`` and raises :class:`~ckgen.errors.EmulationFault`
  with the emulator's report on a fault.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ckgen.codegen import render_kernel, render_launchers
from ckgen.config import Settings, settings
from ckgen.errors import BuildError, EmulationFault, RuntimeFailure, ToolchainError, option
from ckgen.files import atomic_output
from ckgen.ir.abi import ArgKind
from ckgen.progress import Steps
from ckgen.resources import content_hashes, include_flags
from ckgen.runtime.api import Kernel
from ckgen.runtime.arrays import poison as poison_array
from ckgen.targets import amd
from ckgen.targets.model import Target
from ckgen.toolchain.cache import get_or_build
from ckgen.toolchain.tools import first_line, run_tool

#: Host compilers tried in order when CKGEN_HOST_CXX is not set.
HOST_CXX_CANDIDATES: tuple[str, ...] = ("clang++-19", "clang++-22", "clang++")

BUILTIN_PREFIX = "__builtin_amdgcn_"

#: status codes (ckgen/status.h)
CKGEN_SUCCESS = 0
CKGEN_ERROR_INVALID_VALUE = 1
CKGEN_ERROR_EMULATION_FAULT = 6


def host_compiler(st: Settings | None = None) -> str:
    """The host clang++ that builds emu libraries (``CKGEN_HOST_CXX`` or the first candidate on PATH)."""
    st = st or settings()
    if st.host_cxx:
        found = shutil.which(st.host_cxx)
        if not found:
            raise ToolchainError(f"CKGEN_HOST_CXX = {st.host_cxx}: not found or not executable",
                                 hint="set CKGEN_HOST_CXX to a clang++ (the emulator needs clang's vector extensions)")
        return found
    for name in HOST_CXX_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise ToolchainError("no host clang++ found for the emu target (tried " + ", ".join(HOST_CXX_CANDIDATES) + ")",
                         hint="install clang (e.g. clang-19) or set CKGEN_HOST_CXX")


def compiler_version(cxx: str) -> str:
    """First line of ``cxx --version`` (part of cache keys)."""
    version = first_line(cxx)
    if version is None:
        raise ToolchainError(f"host C++ compiler {cxx} does not run", hint="set CKGEN_HOST_CXX to a clang++")
    return version


def target_builtins(target: Target) -> tuple[str, ...]:
    """Every matrix builtin the arch has: its table plus instructions the planner never picks (xf32)."""

    instrs = list(target.instructions) + list(amd.XF32_INSTRUCTIONS.get(target.name, ()))
    return tuple(sorted({i.builtin for i in instrs if i.builtin.startswith(BUILTIN_PREFIX)}))


def emu_defines(target: Target) -> list[str]:
    """Preprocessor flags that make the emulator behave as ``target``."""
    if target.vendor != "amd":
        raise ToolchainError(f"the emu target emulates AMD CDNA targets; {target.name} is {target.vendor}",
                             hint=f"use an AMD arch (see ckgen.targets) with {option('target', 'emu')}")

    flags = ["-DCKGEN_PLATFORM_EMU", "-DCKGEN_EMU_ARCH_RESTRICT",
             f"-DCKGEN_EMU_WAVE_SIZE={target.wave_size}", f"-DCKGEN_EMU_LDS_BYTES={target.lds_bytes}",
             f"-DCKGEN_EMU_LDS_BANKS={target.lds_banks}", f"-DCKGEN_EMU_LDS_BANK_BYTES={target.lds_bank_bytes}"]
    flags += [f"-DCKGEN_EMU_HAS_{b[len(BUILTIN_PREFIX):]}" for b in target_builtins(target)]
    if amd.FEATURE_FP8_OCP in target.features:
        flags.append("-DCKGEN_EMU_FP8_OCP")
    return flags


#: Flags for every emu library (the emulator is header-only; -O2 keeps the sanitizers fast).
BASE_FLAGS: tuple[str, ...] = ("-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
                               "-Wno-psabi")


def compile_flags(target: Target, extra: Iterable[str] = (), includes: Sequence[Path] = ()) -> list[str]:
    """``includes`` are searched before ckgen's own headers."""
    return [*BASE_FLAGS, *[f"-I{p}" for p in includes], *include_flags(), *emu_defines(target), *extra]


def build_shared(sources: Sequence[Path], out: Path, target: Target, extra: Iterable[str] = (),
                 cxx: str | None = None, includes: Sequence[Path] = ()) -> Path:
    """Compile ``sources`` into the shared library ``out`` (published atomically). Raises BuildError."""
    cxx = cxx or host_compiler()
    out = Path(out)
    with atomic_output(out, 0o755) as tmp:
        run_tool([cxx, *compile_flags(target, extra, includes), *[str(s) for s in sources], "-o", str(tmp)],
                 f"emu build of {out.name}", warn=True)
    return out


@dataclass(frozen=True)
class LdsSiteStats:
    """LDS bank statistics of one lds_load / lds_store call site over the last launch (ckgen/emu/lds_banks.h)."""

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
        lib.ckgen_emu_lds_site.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)] + [
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

    def lds_sites(self) -> list[LdsSiteStats]:
        """Bank statistics of the last launch, per LDS call site that ran (sites are never forgotten; sites
        the launch did not reach report 0 instructions and are left out)."""
        out = []
        for i in range(self.lib.ckgen_emu_lds_site_count()):
            f, line, wr, mw = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
            ins, extra, acc = ctypes.c_longlong(), ctypes.c_longlong(), ctypes.c_longlong()
            if self.lib.ckgen_emu_lds_site(i, ctypes.byref(f), ctypes.byref(line), ctypes.byref(wr), ctypes.byref(ins),
                                           ctypes.byref(extra), ctypes.byref(mw), ctypes.byref(acc)) == 0 and ins.value:
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


# ---------------------------------------------------------------------------------------------- backend
from ckgen.runtime.api import (  # noqa: E402
    ArrayInfo,
    Backend,
    Call,
    byte_bounds,
    host_argtypes,
    host_output_maker,
    new_host_output,
    numpy_array_info,
    numpy_fast_operand,
)


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


_loaded: dict[Path, EmuLibrary] = {}
_loaded_lock = threading.Lock()


def load_library(path: Path) -> EmuLibrary:
    """Load ``path`` once per process."""
    path = Path(path).resolve()
    with _loaded_lock:
        if path not in _loaded:
            _loaded[path] = EmuLibrary(path)
        return _loaded[path]


def emu_sources(plan) -> tuple[str, str, str]:
    """(kernel file name, kernel source, launcher source) of one plan on the emu platform."""

    kernel_file = f"{plan.name}.hip"
    return kernel_file, render_kernel(plan), render_launchers(plan.name, [plan], "emu", kernel_files=[kernel_file])


def build_emu_kernel(plan) -> Path:
    """The cached emu library of ``plan`` (built on a miss)."""

    kernel_file, kernel_src, launcher_src = emu_sources(plan)
    cxx = host_compiler()
    flags = compile_flags(plan.target)
    lib_name = f"lib{plan.name}.so"
    key_parts = {"kind": "emu-library", "arch": plan.arch, "kernel": kernel_src, "launcher": launcher_src,
                 "compiler": compiler_version(cxx), "flags": flags, "include": content_hashes()["include"]}

    built: list[bool] = []
    t0 = time.perf_counter()

    def build(d: Path) -> None:
        (d / kernel_file).write_text(kernel_src)
        (d / "launchers.cpp").write_text(launcher_src)
        build_shared([d / "launchers.cpp"], d / lib_name, plan.target, cxx=cxx)
        built.append(True)

    entry = get_or_build(key_parts, build)
    Steps(1).finish(plan.name, f"{plan.arch} emu", not built, time.perf_counter() - t0)
    return entry / lib_name


def _ptr(obj) -> int | None:
    return obj.__array_interface__["data"][0] if obj is not None else None


def build_emu_library(plans, stem: str) -> Path:
    """One cached emu library holding every kernel of ``plans`` (one arch, distinct names): one host compile
    instead of one per kernel (the emulator headers dominate the compile time)."""

    targets = {p.target for p in plans}
    if len(targets) != 1 or len({p.name for p in plans}) != len(plans):
        raise BuildError("build_emu_library: plans of one arch with distinct kernel names")
    (target,) = targets
    files = {f"{p.name}.hip": render_kernel(p) for p in plans}
    launchers = render_launchers(stem, list(plans), "emu", kernel_files=list(files))
    cxx = host_compiler()
    flags = compile_flags(target)
    key_parts = {"kind": "emu-library", "arch": target.name, "kernels": files, "launcher": launchers,
                 "compiler": compiler_version(cxx), "flags": flags, "include": content_hashes()["include"]}

    def build(d: Path) -> None:
        for name, text in files.items():
            (d / name).write_text(text)
        (d / "launchers.cpp").write_text(launchers)
        build_shared([d / "launchers.cpp"], d / f"lib{stem}.so", target, cxx=cxx)

    return get_or_build(key_parts, build) / f"lib{stem}.so"


def emu_kernels(plans, stem: str = "emu_kernels") -> dict:
    """name -> :class:`~ckgen.runtime.api.Kernel` for every plan, all in one emu library (see
    :func:`build_emu_library`)."""

    library = load_library(build_emu_library(plans, stem))
    lock = threading.Lock()  # one library: one buffer registry and one fault record, so one launch at a time

    class _Prebuilt(EmuBackend):
        def build(self, plan) -> EmuKernel:
            kernel = EmuKernel(plan, library)
            kernel.lock = lock
            return kernel

    backend = _Prebuilt()
    return {p.name: Kernel(p, backend) for p in plans}


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

    def new_output(self, shape, np_dtype, order, like) -> np.ndarray:
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

    def fast_launcher(self, handle: EmuKernel, plan, call: Call):
        names = [a.name for a in plan.abi.tensors] + [plan.abi.workspace.name if plan.abi.workspace else "workspace"]
        lib, entry, lock = handle.library, handle.entry, handle.lock
        what = f"kernel '{handle.plan.name}' on emu ({handle.plan.arch})"
        ws_cache = self._workspaces()

        def launch(args: list, live: list) -> None:
            with lock:
                lib.clear_buffers()
                for name, arr in zip(names, live, strict=True):
                    if arr is not None and arr.size:
                        lib.register(arr, name)
                status = entry(*args, None)
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
