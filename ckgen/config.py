"""Typed settings. This module is the only reader of environment variables in ckgen.

Every other module receives a :class:`Settings` (or reads :func:`settings`) instead of
looking at ``os.environ``. Variables:

- ``CKGEN_CLANG``: path to a HIP-capable clang++ for AMD targets (default: search clang++-22, clang++-19, hipcc's clang).
- ``CKGEN_HIPCC``: path to hipcc (used only when set or found on PATH and no clang is set).
- ``CKGEN_NVCC``: path to nvcc (default: ``nvcc`` on PATH, then /usr/local/cuda/bin/nvcc).
- ``CKGEN_HOST_CXX``: host C++ compiler for the emulation target and host libraries (default: a clang++).
- ``CKGEN_CACHE_DIR``: the build cache (default: ``$XDG_CACHE_HOME/ckgen`` or ``~/.cache/ckgen``).
- ``CKGEN_JOBS``: default parallel compile jobs, 0..256 (default 0: the CPU count); anything else is an error.
- ``CKGEN_NO_CACHE``: set to 1 to bypass the cache (still writes results).
- ``CKGEN_POISON``: set to 1 to poison (0xFF bytes) the outputs a prepared call allocates too, as the full
  binding always does (the test suite sets it; default: prepared calls leave new outputs unfilled).
- ``CKGEN_FASTCALL``: set to 0 to keep the cuda backend's repeated calls on the Python prepared path instead of the
  compiled one (ckgen/backends/nvidia/fastcall.cpp, a torch extension built into the cache on first use; default 1).

Besides the environment, :func:`available_memory` reads how much memory this process may still take
(``/proc/meminfo`` and the cgroup's limit): ``ckgen run`` checks its arrays against it.

Read outside Python: ``CKGEN_HIP_LIBRARY`` is read only in C, by generated AMD host libraries
(``ckgen/include/ckgen/host_runtime.h``): when set, they dlopen() exactly that path instead of
libamdhip64.so / .so.6 / .so.5.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ckgen.errors import CkgenError


@dataclass(frozen=True)
class Settings:
    clang: str | None
    hipcc: str | None
    nvcc: str | None
    host_cxx: str | None
    cache_dir: Path
    jobs: int
    no_cache: bool
    poison: bool = False
    fastcall: bool = True


def _from_env(env: dict[str, str]) -> Settings:
    xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    cache = Path(env.get("CKGEN_CACHE_DIR") or Path(xdg) / "ckgen")
    text = env.get("CKGEN_JOBS", "").strip() or "0"
    if not text.isdigit() or int(text) > 256:
        raise CkgenError(f"CKGEN_JOBS={text!r}: expected an integer in 0..256 (0: the CPU count)")
    jobs = int(text) or (os.cpu_count() or 1)
    return Settings(
        clang=env.get("CKGEN_CLANG") or None,
        hipcc=env.get("CKGEN_HIPCC") or None,
        nvcc=env.get("CKGEN_NVCC") or None,
        host_cxx=env.get("CKGEN_HOST_CXX") or None,
        cache_dir=cache,
        jobs=max(1, jobs),
        no_cache=env.get("CKGEN_NO_CACHE", "") not in ("", "0"),
        poison=env.get("CKGEN_POISON", "") not in ("", "0"),
        fastcall=env.get("CKGEN_FASTCALL", "1").strip() != "0",
    )


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return _from_env(dict(os.environ))


def reload() -> Settings:
    """Re-read the environment (tests that change variables call this)."""
    settings.cache_clear()
    return settings()


def _read_int(path: str, key: str | None = None) -> int | None:
    """An integer from a /proc or /sys file: the whole file, or the ``key:`` line (in kB, returned in bytes)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    if key is None:
        value = text.strip()
        return int(value) if value.isdigit() else None
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == key and rest.split() and rest.split()[0].isdigit():
            return int(rest.split()[0]) * 1024
    return None


def available_memory() -> int | None:
    """Bytes of memory this process can still allocate: the system's MemAvailable, lowered by the cgroup (v2 or
    v1) memory limit when there is one. None when neither can be read (not Linux)."""
    free = _read_int("/proc/meminfo", "MemAvailable")
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, used = _read_int(limit_file), _read_int(usage_file)
        if limit is not None and used is not None and limit < 1 << 60:
            room = max(limit - used, 0)
            free = room if free is None else min(free, room)
            break
    return free
