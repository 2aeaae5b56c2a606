"""Fixtures of the build tests: the real toolchain, and one library of the hand-written cases
(tests/toolchain/cases) built once per session for gfx90a and gfx942 into a private cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckgen.backends.amd.device_code import KernelSource
from ckgen.backends.amd.host_library import build_amd_library
from ckgen.errors import ToolchainError
from ckgen.targets import get_target
from ckgen.toolchain.cache import Cache

CASES = Path(__file__).parent / "cases"
ARCHS = ("gfx90a", "gfx942")


def case_kernels(edit: str = "") -> list[KernelSource]:
    """The two case kernels; ``edit`` is appended to the f16 one (a change that forces its rebuild)."""
    return [KernelSource("case_mfma_f16", (CASES / "mfma_f16.hip").read_text() + edit),
            KernelSource("case_mfma_bf16", (CASES / "mfma_bf16.hip").read_text())]


def launcher_source() -> str:
    return (CASES / "launcher.cpp").read_text()


@pytest.fixture(scope="session")
def toolchain_or_skip():
    from ckgen.backends.amd.llvm import find_toolchain

    try:
        return find_toolchain(get_target("gfx942"))
    except ToolchainError as exc:  # pragma: no cover - CI installs clang-19
        pytest.skip(f"no AMD toolchain: {exc.message}")


@pytest.fixture(scope="session")
def case_cache(tmp_path_factory) -> Cache:
    return Cache(tmp_path_factory.mktemp("ckgen-cache"))


@pytest.fixture(scope="session")
def case_library(toolchain_or_skip, case_cache, tmp_path_factory):
    """LibraryResult of the two case kernels for gfx90a and gfx942."""
    out = tmp_path_factory.mktemp("lib")
    return build_amd_library("cases", case_kernels(), launcher_source(), [get_target(a) for a in ARCHS], out,
                             jobs=2, cache=case_cache)
