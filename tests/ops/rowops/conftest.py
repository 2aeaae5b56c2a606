"""Session-wide builds of the rowops cases, started together on first use so that the AMD, emulator and nvcc
compilers overlap (tests/ops/rowops/harness.py)."""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.ops.rowops import harness as H

_pool: ThreadPoolExecutor | None = None
_futures: dict[str, Future] = {}


def _start(tmp_path_factory) -> dict[str, Future]:
    global _pool
    if not _futures:
        out = tmp_path_factory.mktemp("rowops_build")
        _pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
        half = len(H.CASE_NAMES) // 2
        groups = (H.CASE_NAMES[:half], H.CASE_NAMES[half:])
        for i, names in enumerate(groups):
            _futures[f"emu{i}"] = _pool.submit(H.build_emu, names, out / f"rowops_emu{i}.so")
        _futures["nvcc"] = _pool.submit(H.build_nvcc, out)
        for arch in H.AMD_ARCHES:
            _futures[arch] = _pool.submit(H.build_amd, arch, out)
        for i, names in enumerate(groups):
            _futures[f"emu_pred{i}"] = _pool.submit(H.build_emu, names, out / f"rowops_emu_pred{i}.so", "predicated")
        for i, names in enumerate(groups):
            _futures[f"emu_w32{i}"] = _pool.submit(H.build_emu, names, out / f"rowops_emu_w32{i}.so", "warp32")
    return _futures


@pytest.fixture(scope="session")
def amd_builds(tmp_path_factory) -> dict[str, H.AmdBuild]:
    f = _start(tmp_path_factory)
    return {arch: f[arch].result() for arch in H.AMD_ARCHES}


@pytest.fixture(scope="session")
def nv_build(tmp_path_factory) -> tuple[bool, str]:
    return _start(tmp_path_factory)["nvcc"].result()


def _emu(tmp_path_factory, prefix: str) -> H.EmuCases:
    f = _start(tmp_path_factory)
    half = len(H.CASE_NAMES) // 2
    libs = {}
    for i, names in enumerate((H.CASE_NAMES[:half], H.CASE_NAMES[half:])):
        lib = ctypes.CDLL(str(f[f"{prefix}{i}"].result()))
        libs.update({n: lib for n in names})
    return H.EmuCases(libs)


@pytest.fixture(scope="session")
def emu_cases(tmp_path_factory) -> H.EmuCases:
    """The cases on the emulator with the AMD tail path (the gfx9 code object's)."""
    return _emu(tmp_path_factory, "emu")


@pytest.fixture(scope="session")
def emu_cases_predicated(tmp_path_factory) -> H.EmuCases:
    """The same with CKGEN_ROWOPS_PREDICATED_TAIL=1, the tail path of the CUDA build."""
    return _emu(tmp_path_factory, "emu_pred")


@pytest.fixture(scope="session")
def emu_cases_warp32(tmp_path_factory) -> H.EmuCases:
    """The CUDA model: warps of 32, predicated tails, cp.async (the staged ring of kStages > 0 runs)."""
    return _emu(tmp_path_factory, "emu_w32")
