"""Session-wide builds of the row ops' test kernels (tests/ops/rowops/harness.py), all started on first use so
that the AMD, emulator and nvcc compilers overlap: the gfx90a / gfx942 / gfx950 library (rung 1), the gfx942
plans on the emulator in two libraries (rung 2: one host compile each, one per core), the sm_90 plans on the emulator as warp32 (one
library), and the sm_90 nvcc build. Every build goes through ckgen's build cache."""

from __future__ import annotations

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
        _futures["emu"] = _pool.submit(H.emu_library, H.NAMES)
        _futures["emu_nv"] = _pool.submit(H.build_nv_on_emu, H.NV_ON_EMU)
        _futures["amd"] = _pool.submit(H.build_amd, out)
        _futures["nvcc"] = _pool.submit(H.build_nvcc, out)
    return _futures


@pytest.fixture(scope="session")
def amd_build(tmp_path_factory):
    return _start(tmp_path_factory)["amd"].result()


@pytest.fixture(scope="session")
def nv_build(tmp_path_factory):
    return _start(tmp_path_factory)["nvcc"].result()


@pytest.fixture(scope="session")
def emu_kernels(tmp_path_factory):
    """name -> the gfx942 plan's Kernel on the emulator (ckgen.jit)."""
    f = _start(tmp_path_factory)
    return f["emu"].result()


@pytest.fixture(scope="session")
def nv_emu_kernels(tmp_path_factory):
    """name -> the sm_90 plan's Kernel on the emulator (warp32, the CUDA tail path)."""
    return _start(tmp_path_factory)["emu_nv"].result()
