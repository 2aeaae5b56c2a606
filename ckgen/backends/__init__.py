"""Backends: one package per backend, each pairing a *compiler* (find the toolchain, build, read back the code
object) with a *driver* (load, prepare, launch), as Triton pairs its compiler and driver per vendor.

=========  ======================  ===========================================================================
backend    package                 compiler / driver
=========  ======================  ===========================================================================
``hip``    ``ckgen.backends.amd``  clang (or hiprtc) per arch, code objects embedded in a host library /
                                   hip-python (``hipModuleLaunchKernel``)
``cuda``   ``ckgen.backends.nvidia``  nvcc, one fat library / ctypes on the library's ``extern "C"`` entries
``emu``    ``ckgen.backends.emu``  the host clang++ with the emulator's headers / ctypes, numpy arrays
=========  ======================  ===========================================================================

The one build path: plans -> sources (:mod:`ckgen.codegen`) -> :func:`build_library` (the platform's compiler)
-> the build cache (:mod:`ckgen.toolchain.cache`). The ahead-of-time driver, the JIT drivers and the dispatcher
builds all go through it. Drivers honour :class:`ckgen.backends.base.Backend`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ckgen.backends.base import Backend, BuiltLibrary
from ckgen.errors import CkgenError, option
from ckgen.targets import get_target


@dataclass(frozen=True)
class BackendEntry:
    """One backend: the JIT target name, the vendor of the arches it runs, the codegen platform of its libraries,
    its package (``<package>.compiler`` and ``<package>.driver``) and its driver class."""

    name: str
    vendor: str
    platform: str
    package: str
    driver: str


BACKENDS: dict[str, BackendEntry] = {b.name: b for b in (
    BackendEntry("emu", "amd", "emu", "ckgen.backends.emu", "EmuBackend"),
    BackendEntry("hip", "amd", "amd", "ckgen.backends.amd", "HipBackend"),
    BackendEntry("cuda", "nvidia", "cuda", "ckgen.backends.nvidia", "CudaBackend"),
)}

_instances: dict[str, Backend] = {}


def get_backend(name: str) -> Backend:
    """The (process-wide) driver of the backend called ``name``."""
    entry = BACKENDS.get(name)
    if entry is None:
        raise CkgenError(f"target '{name}' is not a ckgen backend", hint="targets: " + ", ".join(sorted(BACKENDS)))
    if name not in _instances:
        try:
            driver_cls = getattr(importlib.import_module(f"{entry.package}.driver"), entry.driver)
        except (ImportError, AttributeError) as exc:
            raise CkgenError(f"target '{name}': backend {entry.package} is not available ({exc})") from None
        _instances[name] = driver_cls()
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
    gpu = next(b for b in BACKENDS.values() if b.vendor == t.vendor and b.platform != "emu")
    return gpu.name, t.name


def build_library(platform: str, stem: str, plans: Sequence, *, out_dir: Path | None = None, jobs: int = 1,
                  host_sources: Mapping[str, str] | None = None) -> BuiltLibrary:
    """Build ``lib<stem>.so`` of ``plans`` (one platform: ``amd``, ``cuda`` or ``emu``) and ``host_sources`` (file
    name -> host C++ text, e.g. generated dispatchers) with that platform's compiler, through the build cache;
    copied into ``out_dir`` when given (the emulator's library stays in the cache)."""
    entry = next((b for b in BACKENDS.values() if b.platform == platform), None)
    if entry is None:
        raise CkgenError(f"no backend builds for platform '{platform}'")
    compiler = importlib.import_module(f"{entry.package}.compiler")
    return compiler.build_library(stem, plans, out_dir=out_dir, jobs=jobs, host_sources=host_sources)
