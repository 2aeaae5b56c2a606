"""Find the LLVM toolchain that builds device code for a target.

Contract:

- :func:`find_toolchain(target)` returns a frozen :class:`Toolchain` whose clang's major version is at
  least ``target.min_clang`` (AMD targets), with ``ld.lld``, ``llvm-objdump``, ``llvm-readelf``,
  ``llvm-objcopy`` and ``clang-offload-bundler`` of the *same* LLVM installation.
- The tools beside clang are looked up in the LLVM ``bin`` directory clang reports (``InstalledDir`` of
  ``clang --version``, so a ``CKGEN_CLANG`` wrapper script works), then beside the resolved clang, then
  through ``clang -print-prog-name=<tool>``, then as ``<tool>-<major>`` on PATH.
- Search order: ``CKGEN_CLANG`` (a clang++; when set it is the only candidate), then ``CKGEN_HIPCC``
  (hipcc's own clang, from ``hipcc --version``'s ``InstalledDir``), then ``clang++-<N>`` on PATH for N
  from :data:`PATH_MAJORS` (newest first), then plain ``clang++``, then ``hipcc`` on PATH.
- A missing or too-old toolchain raises :class:`ckgen.errors.ToolchainError` naming the arch, the
  version needed, what was found and the environment variable to set.
- ``Toolchain.version`` is the exact first line of ``clang++ --version``; it goes into cache keys.

Only ``ckgen/config.py`` reads environment variables: settings arrive as a
:class:`ckgen.config.Settings`; ``search_path`` (a PATH-like string) exists for tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ckgen.config import Settings, settings
from ckgen.errors import ToolchainError
from ckgen.ir.target import Target
from ckgen.toolchain.tools import tool_version

PATH_MAJORS: tuple[int, ...] = (22, 21, 20, 19, 18, 17, 16, 15, 14)
_VERSION_RE = re.compile(r"clang version (\d+)\.(\d+)(?:\.(\d+))?")

# Tools looked up beside clang (same LLVM), attribute name -> executable name.
_SIBLINGS = {
    "lld": "ld.lld",
    "objdump": "llvm-objdump",
    "readelf": "llvm-readelf",
    "objcopy": "llvm-objcopy",
    "offload_bundler": "clang-offload-bundler",
}


@dataclass(frozen=True)
class Toolchain:
    """One LLVM installation. Paths are absolute; ``version`` is clang's exact version line."""

    clang: Path
    lld: Path
    objdump: Path
    readelf: Path
    objcopy: Path
    offload_bundler: Path
    version: str
    major: int
    origin: str  # how it was found: "CKGEN_CLANG", "CKGEN_HIPCC", "PATH:clang++-19", ...

    def __post_init__(self) -> None:
        if self.major <= 0:
            raise ValueError(f"bad clang major {self.major}")

    def key(self) -> dict[str, str]:
        """What identifies this toolchain in a cache key."""
        return {"clang": str(self.clang), "version": self.version}


@dataclass(frozen=True)
class _Probe:
    path: Path                  # the clang++ driver to run
    bindirs: tuple[Path, ...]   # LLVM bin directories it belongs to: InstalledDir, then beside the resolved path
    version: str
    major: int


def _probe(clang: str) -> _Probe | None:
    """Run ``clang --version``; None when it does not run or is not clang. A bare name is looked up on PATH."""
    if os.sep not in clang:
        found = shutil.which(clang)
        if found is None:
            return None
        clang = found
    text = tool_version(clang)
    first = text.splitlines()[0].strip() if text else ""
    m = _VERSION_RE.search(first)
    if not m:
        return None
    # Keep the C++ driver: clang++-19 resolves to .../bin/clang, which would link C only.
    real = Path(clang).resolve()
    cxx = real.parent / "clang++"
    path = cxx if cxx.is_file() and os.access(cxx, os.X_OK) else Path(clang).absolute()
    installed = re.search(r"^InstalledDir:\s*(.+?)\s*$", text or "", re.MULTILINE)
    dirs = ([Path(installed.group(1)).resolve()] if installed else []) + [real.parent]
    return _Probe(path, tuple(dict.fromkeys(dirs)), first, int(m.group(1)))


def _prog_name(clang: Path, exe: str) -> Path | None:
    """Where ``clang -print-prog-name=<exe>`` says the tool is (None when it only echoes the name)."""
    try:
        proc = subprocess.run([str(clang), f"-print-prog-name={exe}"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    out = Path(proc.stdout.strip())
    return out if proc.returncode == 0 and out.is_absolute() and _executable(out) else None


def _executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def _hipcc_clang(hipcc: str) -> str | None:
    """The clang++ that hipcc drives, from ``hipcc --version`` (``InstalledDir: <dir>``)."""
    m = re.search(r"^InstalledDir:\s*(\S+)", tool_version(hipcc) or "", re.MULTILINE)
    if not m:
        return None
    cand = Path(m.group(1)) / "clang++"
    return str(cand) if cand.exists() else None


def _siblings(probe: _Probe, search_path: str | None) -> dict[str, Path] | str:
    """Tools of the same LLVM as ``probe``; on failure, the name of the first missing tool."""
    found: dict[str, Path] = {}
    for attr, exe in _SIBLINGS.items():
        cand = next((d / exe for d in probe.bindirs if _executable(d / exe)), None) or _prog_name(probe.path, exe)
        if cand is None:
            versioned = shutil.which(f"{exe}-{probe.major}", path=search_path)
            if versioned is None:
                return exe
            cand = Path(versioned).resolve()
        found[attr] = cand
    return found


def _candidates(st: Settings, search_path: str | None) -> list[tuple[str, str | None]]:
    """(origin, clang path or None when that source gave nothing), in search order."""
    if st.clang:
        return [("CKGEN_CLANG", st.clang)]
    out: list[tuple[str, str | None]] = []
    if st.hipcc:
        out.append(("CKGEN_HIPCC", _hipcc_clang(st.hipcc)))
    for major in PATH_MAJORS:
        p = shutil.which(f"clang++-{major}", path=search_path)
        if p:
            out.append((f"PATH:clang++-{major}", p))
    p = shutil.which("clang++", path=search_path)
    if p:
        out.append(("PATH:clang++", p))
    hipcc = shutil.which("hipcc", path=search_path)
    if hipcc:
        out.append(("PATH:hipcc", _hipcc_clang(hipcc)))
    return out


def find_toolchain(target: Target, st: Settings | None = None, search_path: str | None = None) -> Toolchain:
    """The toolchain for ``target`` (see the module docstring). Memoised per (min version, settings)."""
    st = st or settings()
    return _find(target.name, target.min_clang, st, search_path)


@lru_cache(maxsize=32)
def _find(arch: str, min_major: int, st: Settings, search_path: str | None) -> Toolchain:
    seen: list[str] = []
    for origin, clang in _candidates(st, search_path):
        if clang is None:
            seen.append(f"{origin}: no clang++ found")
            continue
        probe = _probe(clang)
        if probe is None:
            seen.append(f"{origin}: {clang} does not run as clang")
            continue
        if probe.major < min_major:
            seen.append(f"{origin}: {clang} is clang {probe.major}")
            continue
        tools = _siblings(probe, search_path)
        if isinstance(tools, str):
            seen.append(f"{origin}: {clang} has no {tools} beside it")
            continue
        return Toolchain(clang=probe.path, version=probe.version, major=probe.major, origin=origin, **tools)
    found = "; ".join(seen) if seen else "no clang++ on PATH, CKGEN_CLANG and CKGEN_HIPCC unset"
    raise ToolchainError(
        f"no usable clang for {arch}: it needs clang >= {min_major} with lld and llvm tools (found: {found})",
        hint=f"install clang-{max(min_major, 19)} and lld-{max(min_major, 19)}, or set CKGEN_CLANG to a "
             f"clang++ of version >= {min_major} (or CKGEN_HIPCC to a hipcc)",
    )


def clear_cache() -> None:
    """Forget memoised lookups (tests that change settings or tools call this)."""
    _find.cache_clear()
    tool_version.cache_clear()
