"""The AMD host library: plain C++ that embeds one code object per arch and launches through HIP's
module API, found with dlopen at run time (``ckgen/include/ckgen/host_runtime.h``).

Entry point: :func:`build_amd_library`. The host source is one C++ translation unit (the
launchers) that includes ``ckgen/host_runtime.h``; the code objects are embedded by an assembly
file rendered from ``templates/embed_amd.s.j2`` (``.incbin``), and both are compiled with::

    <host c++> -shared -fPIC -O2 -std=c++17 -fvisibility=hidden -fvisibility-inlines-hidden
               -Wl,-Bsymbolic -Wl,--no-undefined -I <ckgen/include> host.cpp embed.s -ldl

Only entry points marked ``CKGEN_API`` (and ``ckgen_status_string``) are exported.

The host compiler is ``settings().host_cxx`` (``CKGEN_HOST_CXX``) or else the first target's clang++.
The library is cached (key: host source, code object hashes, compiler version, flags, headers,
templates) and copied to ``out_dir/lib<stem>.so`` through a temporary file and ``os.replace``.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ckgen.backends.amd.device_code import COUNTERS, SCHEMA, KernelSource, build_device_code
from ckgen.backends.amd.llvm import Toolchain
from ckgen.backends.amd.report import KernelReport, analyze_code_object, with_clang_occupancy
from ckgen.config import settings
from ckgen.errors import BuildError, ToolchainError
from ckgen.files import atomic_copy
from ckgen.ir.target import Target
from ckgen.progress import Steps
from ckgen.resources import INCLUDE_DIR, TEMPLATE_DIR, content_hashes
from ckgen.targets import get_target
from ckgen.toolchain import cache as cache_mod
from ckgen.toolchain.tools import first_line, run_tool

HOST_FLAGS: tuple[str, ...] = ("-shared", "-fPIC", "-O2", "-std=c++17", "-fvisibility=hidden",
                                "-fvisibility-inlines-hidden", "-Wl,-Bsymbolic", "-Wl,--no-undefined")
HOST_LIBS: tuple[str, ...] = ("-ldl",)
EMBED_TEMPLATE = "embed_amd.s.j2"
_STEM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class LibraryResult:
    """What :func:`build_amd_library` produced.

    ``library`` is ``out_dir/lib<stem>.so``; ``code_objects`` maps arch -> the code object embedded
    for it (a read-only cache path, for ``report``); ``toolchains`` arch -> the toolchain used;
    ``compiled``/``reused`` list (kernel, arch) pairs compiled in this call / taken from the cache;
    ``reports`` holds the :class:`KernelReport` of every (kernel, arch).
    """

    library: Path
    kernels: tuple[str, ...]
    code_objects: dict[str, Path]
    toolchains: dict[str, Toolchain]
    compiled: tuple[tuple[str, str], ...]
    reused: tuple[tuple[str, str], ...]
    host_compiler: str
    reports: dict[tuple[str, str], KernelReport]

    @property
    def resources(self) -> dict[tuple[str, str], dict]:
        """(kernel, arch) -> the report as JSON (for the manifest's ``resources``)."""
        return {k: r.to_json() for k, r in self.reports.items()}


def _compiler_version(cxx: str) -> str:
    version = first_line(cxx)
    if version is None:
        raise ToolchainError(f"host C++ compiler {cxx} does not run",
                             hint="set CKGEN_HOST_CXX to a working C++ compiler")
    return version


def host_compiler(toolchains: Sequence[Toolchain]) -> str:
    """The host C++ compiler: CKGEN_HOST_CXX, else the first device toolchain's clang++."""
    st = settings()
    if st.host_cxx:
        return st.host_cxx
    if not toolchains:
        raise ToolchainError("no host C++ compiler", hint="set CKGEN_HOST_CXX")
    return str(toolchains[0].clang)


def _template_env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
                              autoescape=False)


def render_embed(code_objects: Sequence[tuple[str, str]]) -> str:
    """The embed assembly for (arch, file name relative to the build dir) pairs."""
    for arch, file in code_objects:
        if not re.match(r"^[A-Za-z0-9_.-]+$", arch) or not re.match(r"^[A-Za-z0-9_./-]+$", file):
            raise BuildError(f"unsafe name for embedding: {arch} {file}")
    entries = [{"index": i, "arch": a, "file": f} for i, (a, f) in enumerate(code_objects)]
    return _template_env().get_template(EMBED_TEMPLATE).render(
        code_objects=entries, count=len(entries), table_bytes=24 * len(entries))


def build_host_library(stem: str, host_source: str, code_objects: dict[str, Path], cxx: str,
                       cache: cache_mod.Cache, extra_flags: Sequence[str] = (),
                       extra_sources: dict[str, str] | None = None) -> Path:
    """The cached ``lib<stem>.so`` embedding ``code_objects`` (arch -> path), compiled with ``cxx``;
    ``extra_sources`` (name -> C++ text) are more host translation units (e.g. generated dispatchers)."""
    extra_sources = dict(extra_sources or {})
    lib_name = f"lib{stem}.so"
    extra_flags = (*extra_flags, f"-Wl,-soname,{lib_name}")  # consumers record the name, not our path
    archs = sorted(code_objects)
    parts = {
        "what": "amd-host-library", "schema": SCHEMA, "stem": stem, "source": host_source,
        "code_objects": [[a, cache_mod.file_sha256(code_objects[a])] for a in archs],
        "cxx": cxx, "cxx_version": _compiler_version(cxx), "flags": [*HOST_FLAGS, *extra_flags, *HOST_LIBS],
        "include": content_hashes()["include"], "templates": content_hashes()["templates"],
    }
    if extra_sources:
        parts["extra_sources"] = extra_sources

    built: list[bool] = []
    t0 = time.perf_counter()

    def build(out: Path) -> None:
        work = out / "work"
        work.mkdir()
        files = []
        for a in archs:
            shutil.copyfile(code_objects[a], work / f"{a}.hsaco")
            files.append((a, f"{a}.hsaco"))
        (work / "embed.s").write_text(render_embed(files))
        (work / "host.cpp").write_text(host_source)
        for name, text in extra_sources.items():
            (work / name).write_text(text)
        COUNTERS.bump("host_compiles")
        built.append(True)
        log = run_tool([cxx, *HOST_FLAGS, *extra_flags, "-I", str(INCLUDE_DIR), "host.cpp", *extra_sources, "embed.s",
                        "-o", lib_name, *HOST_LIBS], f"compiling the host library {lib_name}", cwd=work, warn=True)
        (work / lib_name).replace(out / lib_name)
        (out / "build.log").write_text(log)
        shutil.rmtree(work)

    entry = cache.get_or_build(parts, build)
    Steps(1).finish(lib_name, "host", not built, time.perf_counter() - t0)
    return entry / lib_name


def build_amd_library(stem: str, kernels: Sequence[KernelSource], host_source: str,
                      archs: Sequence[Target | str],
                      out_dir: Path, jobs: int | None = None, *, cache: cache_mod.Cache | None = None,
                      host_flags: Sequence[str] = (), extra_sources: dict[str, str] | None = None) -> LibraryResult:
    """Build ``out_dir/lib<stem>.so``: every kernel for every arch (parallel, cached), one code object
    per arch, embedded in a host library built from ``host_source``. Raises BuildError/ToolchainError."""
    if not _STEM_RE.match(stem):
        raise BuildError(f"library stem {stem!r} is not a plain file name",
                         hint="letters, digits, '_', '.', '+', '-'")
    if not archs:
        raise BuildError("no target architectures given")
    archs = [get_target(a) if isinstance(a, str) else a for a in archs]
    names = [t.name for t in archs]
    if len(set(names)) != len(names):
        raise BuildError(f"an arch is listed twice: {', '.join(names)}")
    cache = cache or cache_mod.default_cache()
    jobs = jobs or settings().jobs
    device = build_device_code(kernels, archs, jobs, cache)
    cxx = host_compiler([device.toolchains[n] for n in names])
    lib = build_host_library(stem, host_source, device.code_objects, cxx, cache, host_flags, extra_sources)
    reports = {(r.name, t.name): r for t in archs
               for r in analyze_code_object(device.code_objects[t.name], t, device.toolchains[t.name])}
    reports = {key: with_clang_occupancy(r, device.logs.get(key)) for key, r in reports.items()}
    out = Path(out_dir) / f"lib{stem}.so"
    atomic_copy(lib, out)
    return LibraryResult(library=out, kernels=tuple(dict.fromkeys(k.name for k in kernels)),
                         code_objects=device.code_objects, toolchains=device.toolchains, compiled=device.compiled,
                         reused=device.reused, host_compiler=cxx, reports=reports)
