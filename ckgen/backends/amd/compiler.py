"""The AMD backend's compiler: generated HIP source -> code objects per arch -> libraries.

- :func:`build_library` (the one build path, :func:`ckgen.backends.build_library`): plans -> kernel sources and
  host launchers (ckgen.codegen) -> one code object per arch (:mod:`~ckgen.backends.amd.device_code`: clang,
  lld, cached per kernel) embedded in ``lib<stem>.so`` (:mod:`~ckgen.backends.amd.host_library`), with every
  kernel's resources and report read back from the code object (:mod:`~ckgen.backends.amd.report`).
- :func:`compile_code_object` turns one kernel source (the generated ``.hip`` text, which includes
  ckgen's self-contained device headers from ``ckgen/include``) into a raw code object for one arch, for the
  JIT driver. It uses hiprtc when the system's ROCm has it *and* its code-object manager knows the arch
  (:func:`hiprtc_info`); otherwise the clang toolchain (``clang++ -x hip --offload-device-only``).
  Results are kept in the build cache (:mod:`ckgen.toolchain.cache`: keyed by the source, arch, compiler,
  options and header hashes; locked, verified, published atomically).

ROCm 5.x ships hiprtc inside ``libamdhip64.so.5`` and no ``libhiprtc.so``, while hip-python opens
``libhiprtc.so``. :func:`hiprtc_info` resolves that in-process: when hip-python cannot find a hiprtc
library but ``libamdhip64`` exports ``hiprtcCompileProgram``, it links ``<cache>/hiprtc-shim/lib/libhiprtc.so``
to that ``libamdhip64`` and lets hip-python's documented ``ROCM_PATH`` lookup find it for the one call
that loads hiprtc (hip-python resolves the library lazily, once). A system-wide alternative, for CI
images: ``ln -s libamdhip64.so.5 /usr/lib/x86_64-linux-gnu/libhiprtc.so``.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ckgen import resources
from ckgen.backends.amd.device_code import KernelSource, build_device_code
from ckgen.backends.amd.hip_bindings import (
    HipRuntimeUnavailable,
    _amdhip64,
    _bindings,
    _code,
    _dl_path_of,
    _load,
)
from ckgen.backends.amd.host_library import LibraryResult, build_amd_library
from ckgen.backends.amd.llvm import find_toolchain
from ckgen.backends.base import BuiltLibrary
from ckgen.codegen import render_kernel, render_launchers
from ckgen.errors import BuildError, ToolchainError
from ckgen.targets import get_target
from ckgen.toolchain.cache import default_cache, get_or_build, scratch_dir


def compile_plans(stem: str, plans: Sequence, out_dir: Path, jobs: int = 1,
                  host_sources: Mapping[str, str] | None = None) -> LibraryResult:
    """``out_dir/lib<stem>.so`` of AMD ``plans`` (any of their arches) and ``host_sources`` (more host translation
    units: dispatchers), with everything the build found (code objects, toolchains, reports per (kernel, arch))."""
    kernels = [KernelSource(name=p.name, source=render_kernel(p), arch=p.arch,
                            extra=tuple(e.name for e in p.entries[1:])) for p in plans]
    return build_amd_library(stem, kernels, render_launchers(stem, list(plans), "amd"),
                             sorted({p.arch for p in plans}), Path(out_dir), jobs,
                             extra_sources=dict(host_sources or {}) or None)


def build_library(stem: str, plans: Sequence, *, out_dir: Path | None = None, jobs: int = 1,
                  host_sources: Mapping[str, str] | None = None) -> BuiltLibrary:
    """The one build path's AMD step (:func:`ckgen.backends.build_library`): :func:`compile_plans` in ``out_dir``
    (a scratch directory of the cache when None); resources and reports per (kernel, arch)."""
    if out_dir is None:
        out_dir = scratch_dir("amd-libraries") / stem
        out_dir.mkdir(parents=True, exist_ok=True)
    result = compile_plans(stem, plans, Path(out_dir), jobs, host_sources)
    return BuiltLibrary(result.library, result.resources, result.reports)


# ------------------------------------------------------------------------------------------ hiprtc
@dataclass(frozen=True)
class HiprtcInfo:
    """Whether hiprtc works here. ``isas`` lists the archs its code-object manager knows (None: unknown)."""

    available: bool
    library: str | None
    version: tuple[int, int] | None
    isas: frozenset[str] | None
    reason: str

    def supports(self, arch: str) -> bool:
        return self.available and (self.isas is None or arch in self.isas)


def _comgr_isas() -> frozenset[str] | None:
    """Processor names (``gfx90a`` ...) that the system's amd_comgr (which hiprtc uses) can target.

    hiprtc from ROCm 5.2 aborts the process on an unknown processor, so callers check this first.
    """
    lib = _load(["libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so"])
    if lib is None:
        return None
    n = ctypes.c_size_t()
    if lib.amd_comgr_get_isa_count(ctypes.byref(n)) != 0:
        return None
    out = set()
    for i in range(n.value):
        name = ctypes.c_char_p()
        if lib.amd_comgr_get_isa_name(ctypes.c_size_t(i), ctypes.byref(name)) == 0 and name.value:
            out.add(name.value.decode().rsplit("--", 1)[-1].split(":")[0])
    return frozenset(out)


_hiprtc_lock = threading.Lock()


def _shim_dir(target: str) -> Path:
    """``<cache>/hiprtc-shim/<hash>`` holding ``lib/libhiprtc.so -> target``; made atomically."""

    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    root = scratch_dir("hiprtc-shim") / digest
    link = root / "lib" / "libhiprtc.so"
    if os.path.realpath(link) != target:
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".libhiprtc.so.{os.getpid()}")
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(target, tmp)
        os.replace(tmp, link)
    return root


@lru_cache(maxsize=1)
def hiprtc_info() -> HiprtcInfo:
    """Find hiprtc, making hip-python able to load it (see the module docstring). Never raises."""
    try:
        b = _bindings()
    except HipRuntimeUnavailable as e:
        return HiprtcInfo(False, None, None, None, e.message)
    with _hiprtc_lock:
        resolved = os.fsdecode(b.paths.get_library_path("hiprtc")) if b.paths else "libhiprtc.so"
        lib = _load([resolved])
        shim_root = None
        if lib is None or not hasattr(lib, "hiprtcCompileProgram"):
            hip = _amdhip64()
            if hip is None or not hasattr(hip, "hiprtcCompileProgram"):
                return HiprtcInfo(False, None, None, None,
                                  "no hiprtc library, and libamdhip64 does not export hiprtc")
            target = _dl_path_of(hip, "hiprtcCompileProgram")
            if target is None or b.paths is None:
                return HiprtcInfo(False, None, None, None, "cannot point hip-python at libamdhip64's hiprtc")
            shim_root = _shim_dir(target)
            resolved = target
        saved = os.environ.get("ROCM_PATH")
        try:
            if shim_root is not None:
                os.environ["ROCM_PATH"] = str(shim_root)  # read once by hip-python's lazy lookup below
            res = b.hiprtc.hiprtcVersion()
        except RuntimeError as e:  # hip-python: failed to dlopen / dlsym
            return HiprtcInfo(False, None, None, None, f"hip-python cannot load hiprtc: {e}")
        finally:
            if shim_root is not None:
                if saved is None:
                    os.environ.pop("ROCM_PATH", None)
                else:
                    os.environ["ROCM_PATH"] = saved
    if _code(res[0]) != 0:
        return HiprtcInfo(False, resolved, None, None, f"hiprtcVersion failed: {res[0]}")
    return HiprtcInfo(True, resolved, (int(res[1]), int(res[2])), _comgr_isas(), "ok")


# ------------------------------------------------------------------------------------------ compile
@dataclass(frozen=True)
class CodeObject:
    """A raw amdgcn code object (ELF) for one arch, and which compiler made it."""

    arch: str
    kernel: str
    data: bytes
    compiler: str  # "hiprtc <major>.<minor>" or the clang path and version
    log: str = ""


def _include_dirs(extra: tuple[str, ...]) -> list[str]:
    return [*extra, *(str(d) for d in resources.DEVICE_INCLUDE_DIRS)]


def _hiprtc_compile(source: str, kernel: str, arch: str, includes: list[str], options: tuple[str, ...]) -> CodeObject:
    info = hiprtc_info()
    rtc = _bindings().hiprtc
    err, prog = rtc.hiprtcCreateProgram(source.encode(), f"{kernel}.hip".encode(), 0, [], [])
    if _code(err) != 0:
        raise BuildError(f"hiprtcCreateProgram failed for kernel '{kernel}': {err}")
    try:
        opts = [f"--offload-arch={arch}", "-O3", "-std=c++17", *[f"-I{d}" for d in includes], *options]
        (err,) = rtc.hiprtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, n = rtc.hiprtcGetProgramLogSize(prog)
        log = bytearray(n)
        if n:
            rtc.hiprtcGetProgramLog(prog, log)
        text = log.decode(errors="replace").rstrip("\x00")
        if _code(err) != 0:
            raise BuildError(f"hiprtc could not compile kernel '{kernel}' for {arch}", log=text)
        _, size = rtc.hiprtcGetCodeSize(prog)
        code = bytearray(size)
        rtc.hiprtcGetCode(prog, code)
    finally:
        rtc.hiprtcDestroyProgram(prog.createRef())
    return CodeObject(arch, kernel, bytes(code), f"hiprtc {info.version[0]}.{info.version[1]}", text)


def _clang_compile(source: str, kernel: str, arch: str, includes: list[str], options: tuple[str, ...]) -> CodeObject:
    """The build stage's device pipeline (ckgen.toolchain: toolchain discovery, clang, lld link, its cache)."""

    target = get_target(arch)
    own = {str(d) for d in resources.DEVICE_INCLUDE_DIRS}
    flags = (*[f"-I{d}" for d in includes if d not in own], *options)
    res = build_device_code([KernelSource(kernel, source, flags, arch)], [target], 1, default_cache())
    tc = find_toolchain(target)
    return CodeObject(arch, kernel, res.code_objects[arch].read_bytes(), f"{tc.clang} ({tc.version})")


def compile_code_object(source: str, kernel: str, arch: str, *, compiler: str = "auto",
                        include_dirs: tuple[str, ...] = (), options: tuple[str, ...] = (),
                        use_cache: bool = True) -> CodeObject:
    """Compile ``source`` (which defines ``extern "C"`` kernel ``kernel``) to a code object for ``arch``.

    ``compiler``: ``"auto"`` (hiprtc when :func:`hiprtc_info` supports ``arch``, else clang),
    ``"hiprtc"`` (a :class:`ToolchainError` when it cannot) or ``"clang"``.
    """
    if compiler not in ("auto", "hiprtc", "clang"):
        raise ToolchainError(f"compiler = {compiler!r}: unknown", hint="legal: auto, hiprtc, clang")
    info = hiprtc_info()
    use_rtc = compiler == "hiprtc" or (compiler == "auto" and info.supports(arch))
    if use_rtc and not info.supports(arch):
        why = info.reason if not info.available else f"its code-object manager does not know {arch}"
        raise ToolchainError(f"hiprtc cannot compile for {arch}: {why}",
                             hint=f"hiprtc targets here: {sorted(info.isas or [])}; or use compiler='clang'")
    includes = _include_dirs(include_dirs)
    if not use_rtc:  # ckgen.toolchain caches its own objects, keyed by its toolchain
        return _clang_compile(source, kernel, arch, includes, options)
    parts = {"what": "hiprtc-code-object", "source": source, "kernel": kernel, "arch": arch,
             "compiler": f"hiprtc {info.version}", "options": list(options), "includes": list(include_dirs),
             "headers": resources.content_hashes()["include"]}

    def build(out: Path) -> None:
        co = _hiprtc_compile(source, kernel, arch, includes, options)
        (out / "code.co").write_bytes(co.data)
        (out / "meta.json").write_text(json.dumps({"compiler": co.compiler, "log": co.log}))

    try:
        if not use_cache:
            return _hiprtc_compile(source, kernel, arch, includes, options)

        entry = get_or_build(parts, build)
    except BuildError as rtc_err:
        if compiler == "hiprtc":
            raise
        # auto: a source hiprtc rejects (its built-in header differs from -nogpuinc) may still build with clang
        co = _clang_compile(source, kernel, arch, includes, options)
        return CodeObject(co.arch, co.kernel, co.data, co.compiler,
                          f"hiprtc failed, built with clang instead:\n{rtc_err.render()}")
    meta = json.loads((entry / "meta.json").read_text())
    return CodeObject(arch, kernel, (entry / "code.co").read_bytes(), meta["compiler"], meta.get("log", ""))
