"""Dispatchers in libraries: their sources for the AMD and CUDA builds (:func:`dispatch_sources`) and an emulator
library holding a family's kernels and its dispatchers (:func:`build_emu_library`, for ``explain``-style checks
and tests of the generated C on the host)."""

from __future__ import annotations

from pathlib import Path

from ckgen.codegen import render_kernel, render_launchers
from ckgen.codegen.render import unique_plans
from ckgen.dispatch.codegen import render
from ckgen.dispatch.table import Table
from ckgen.resources import content_hashes
from ckgen.runtime import emu
from ckgen.toolchain.cache import get_or_build


def dispatch_sources(stem: str, tables: list[Table]) -> dict[str, str]:
    """File name -> C++ source of each table's dispatcher (one translation unit each)."""
    return {f"dispatch_{t.name}.cpp": render(stem, t) for t in tables}


def build_emu_library(stem: str, tables: list[Table]) -> Path:
    """The cached emu library of the tables' kernels (one arch) and their dispatchers."""

    plans = unique_plans([p for t in tables for p in t.plans])
    kernels = {f"{p.name}.hip": render_kernel(p) for p in plans}
    launchers = render_launchers(stem, plans, "emu", kernel_files=list(kernels))
    dispatch = dispatch_sources(stem, tables)
    cxx = emu.host_compiler()
    target = plans[0].target
    flags = emu.compile_flags(target)
    lib_name = f"lib{stem}.so"
    parts = {"kind": "emu-dispatch-library", "arch": target.name, "kernels": kernels, "launchers": launchers,
             "dispatch": dispatch, "compiler": emu.compiler_version(cxx), "flags": flags,
             "include": content_hashes()["include"]}

    def build(d: Path) -> None:
        for name, text in {**kernels, "launchers.cpp": launchers, **dispatch}.items():
            (d / name).write_text(text)
        emu.build_shared([d / "launchers.cpp", *[d / n for n in dispatch]], d / lib_name, target, cxx=cxx)

    return get_or_build(parts, build) / lib_name
