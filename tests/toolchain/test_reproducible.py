"""The same spec content and toolchain give the same bytes and cache keys from any working directory, by an
absolute or a relative path: two fresh builds (empty caches) compared byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = "target gfx942\nkernel rep { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 2x2 }\n"


def _compile(spec_arg: str, cwd: Path, out: Path, cache: Path) -> None:
    env = dict(os.environ, CKGEN_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "ckgen", "compile", spec_arg, "-o", str(out)], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


def _keys(cache: Path) -> set[str]:
    return {p.name for p in (cache / "v1").glob("*/*") if p.parent.name not in ("tmp", "locks")}


def test_two_builds_from_different_places_are_identical(tmp_path, toolchain_or_skip):
    a, b = tmp_path / "a" / "deep" / "dir", tmp_path / "b"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "rep.ck").write_text(SPEC)
    _compile("rep.ck", a, tmp_path / "out1", tmp_path / "cache1")            # relative, cwd a
    _compile(str(b / "rep.ck"), tmp_path, tmp_path / "out2", tmp_path / "cache2")  # absolute, another cwd
    one, two = (tmp_path / "out1" / "librep.so").read_bytes(), (tmp_path / "out2" / "librep.so").read_bytes()
    assert one == two
    assert (tmp_path / "out1" / "rep.h").read_text() == (tmp_path / "out2" / "rep.h").read_text()
    keys = _keys(tmp_path / "cache1")
    assert keys and keys == _keys(tmp_path / "cache2")
    assert str(tmp_path).encode() not in one, "a build path leaked into the library"


@pytest.mark.parametrize("clang", ["clang++-19", "clang++-22"])
def test_the_cuid_does_not_depend_on_the_build_directory(tmp_path, clang):
    """clang-19 names __hip_cuid_<hash> after the input's absolute path unless ckgen passes -cuid."""
    import dataclasses
    import shutil

    from ckgen.backends.amd.device_code import KernelSource, compile_kernel
    from ckgen.backends.amd.llvm import find_toolchain
    from ckgen.config import settings
    from ckgen.targets import get_target
    from ckgen.toolchain.cache import Cache

    if shutil.which(clang) is None:
        pytest.skip(f"{clang} not installed")
    tc = find_toolchain(get_target("gfx942"), dataclasses.replace(settings(), clang=clang, hipcc=None))
    src = (ROOT / "tests" / "toolchain" / "cases" / "mfma_f16.hip").read_text()
    k = KernelSource("case_mfma_f16", src)
    objs = [compile_kernel(k, get_target("gfx942"), tc, Cache(tmp_path / f"c{i}"))[0].read_bytes() for i in range(2)]
    assert objs[0] == objs[1]
