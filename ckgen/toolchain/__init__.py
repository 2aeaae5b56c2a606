"""Toolchain: compiler discovery, device compiles per arch, the host library, the cache, ``report``.

Entry points (see each module's docstring for the contract):

- :func:`build_amd_library` (hostlib): kernels -> one code object per arch -> ``out_dir/lib<stem>.so``;
  returns a :class:`LibraryResult` (``.library``, ``.code_objects``, ``.reports``, ``.resources``).
- :func:`analyze_code_object` (report): :class:`KernelReport` per kernel of a code object.
- :func:`find_toolchain` (llvm), :class:`Cache` / :func:`get_or_build` / :func:`key` (cache).
"""

from __future__ import annotations

from ckgen.toolchain.amdgpu import COUNTERS, KernelSource
from ckgen.toolchain.cache import Cache, default_cache, get_or_build, key
from ckgen.toolchain.hostlib import LibraryResult, build_amd_library
from ckgen.toolchain.llvm import Toolchain, find_toolchain
from ckgen.toolchain.report import KernelReport, analyze_code_object

__all__ = ["COUNTERS", "Cache", "KernelReport", "KernelSource", "LibraryResult", "Toolchain", "analyze_code_object",
           "build_amd_library", "default_cache", "find_toolchain", "get_or_build", "key"]
