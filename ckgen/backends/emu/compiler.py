"""The emu backend's compiler: generated gfx9 kernels built for the host CPU (ckgen's emulator).

Contract (docs/emulation.md):

- :func:`emu_defines` turns a :class:`~ckgen.ir.target.Target` into the preprocessor flags that
  parameterize the emulated arch: the builtins of its MFMA table (``CKGEN_EMU_ARCH_RESTRICT`` +
  ``CKGEN_EMU_HAS_<name>``), its LDS limit, wave size and fp8 encoding. Nothing here tests an arch name.
- :func:`compile_flags` / :func:`build_shared` compile sources with the host clang++ into a plain
  shared library (``-DCKGEN_PLATFORM_EMU``); output is written to a temp file and published with
  ``os.replace``.
- :func:`build_library` is the backend's one build path: plans (one arch, distinct names) -> kernel sources and
  emu launchers (ckgen.codegen), plus optional host sources (generated dispatchers) -> one shared library in the
  build cache (key: every source, compiler version, flags, header hashes). :func:`build_emu_kernel` is the
  library of one plan, as the JIT builds it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ckgen.backends.base import BuiltLibrary
from ckgen.codegen import render_kernel, render_launchers
from ckgen.codegen.render import unique_plans
from ckgen.config import Settings, settings
from ckgen.errors import BuildError, ToolchainError, option
from ckgen.files import atomic_copy, atomic_output
from ckgen.ir.target import Target
from ckgen.progress import Steps
from ckgen.resources import content_hashes, include_flags
from ckgen.targets import amd
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
    """Every matrix builtin the arch has: its table plus instructions the planner never picks implicitly (xf32,
    the block-scaled MX MFMA)."""

    instrs = (list(target.instructions) + list(amd.XF32_INSTRUCTIONS.get(target.name, ()))
              + list(amd.MX_INSTRUCTIONS.get(target.name, ())))
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


#: Flags for every emu library (the emulator is header-only). -O1: against -O2 the test suite's emulator builds and
#: runs take less CPU time (two emulator-heavy test files, fresh caches, this 2-core machine: 28 -> 22 s and 83 -> 71 s;
#: the builds shrink more than the runs grow).
BASE_FLAGS: tuple[str, ...] = ("-std=c++17", "-O1", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden",
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


def build_library(stem: str, plans: Sequence, *, out_dir: Path | None = None, jobs: int = 1,
                  host_sources: Mapping[str, str] | None = None, progress: bool = False) -> BuiltLibrary:
    """The cached emu library ``lib<stem>.so`` of ``plans`` (one arch; plans of the same name must be the same
    kernel) and ``host_sources`` (file name -> C++ text, e.g. generated dispatchers, compiled as their own
    translation units): one host compile for all of them (the emulator headers dominate the compile time).
    ``progress``: report the build (or cache hit) as one step, as the JIT's builds do. The library is copied into
    ``out_dir`` when given; ``jobs`` is unused (one compiler process)."""

    plans = unique_plans(list(plans))
    targets = {p.target for p in plans}
    if len(targets) != 1 or len({p.name for p in plans}) != len(plans):
        raise BuildError("the emu library takes plans of one arch with distinct kernel names")
    (target,) = targets
    kernels = {f"{p.name}.hip": render_kernel(p) for p in plans}
    launchers = render_launchers(stem, plans, "emu", kernel_files=list(kernels))
    host = dict(host_sources or {})
    cxx = host_compiler()
    flags = compile_flags(target)
    lib_name = f"lib{stem}.so"
    key_parts = {"kind": "emu-library", "arch": target.name, "kernels": kernels, "launchers": launchers,
                 "host": host, "compiler": compiler_version(cxx), "flags": flags,
                 "include": content_hashes()["include"]}
    built: list[bool] = []
    t0 = time.perf_counter()

    def build(d: Path) -> None:
        for name, text in {**kernels, "launchers.cpp": launchers, **host}.items():
            (d / name).write_text(text)
        build_shared([d / "launchers.cpp", *[d / n for n in host]], d / lib_name, target, cxx=cxx)
        built.append(True)

    entry = get_or_build(key_parts, build)
    if progress:
        Steps(1).finish(stem, f"{target.name} emu", not built, time.perf_counter() - t0)
    library = entry / lib_name
    if out_dir is not None:
        atomic_copy(library, Path(out_dir) / lib_name)
        library = Path(out_dir) / lib_name
    return BuiltLibrary(library)


def emu_sources(plan) -> tuple[str, str, str]:
    """(kernel file name, kernel source, launcher source) of one plan on the emu platform, as
    :func:`build_library` writes them."""

    kernel_file = f"{plan.name}.hip"
    return kernel_file, render_kernel(plan), render_launchers(plan.name, [plan], "emu", kernel_files=[kernel_file])


def build_emu_kernel(plan) -> Path:
    """The cached emu library of one plan, as the JIT builds it."""
    return build_library(plan.name, [plan], progress=True).library
