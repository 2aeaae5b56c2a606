"""Toolchain discovery: what is found, in which order, and the errors when nothing fits."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from ckgen.backends.amd.llvm import clear_cache, find_toolchain
from ckgen.config import settings
from ckgen.errors import ToolchainError
from ckgen.targets import get_target


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def _settings(**kw):
    return dataclasses.replace(settings(), **{"clang": None, "hipcc": None, **kw})


def _script(path: Path, text: str) -> Path:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def _need(exe: str) -> str:
    p = shutil.which(exe)
    if p is None:
        pytest.skip(f"{exe} not installed")
    return p


def test_missing_clang_is_a_clear_error(tmp_path):
    with pytest.raises(ToolchainError) as ei:
        find_toolchain(get_target("gfx942"), _settings(), search_path=str(tmp_path))
    text = ei.value.render()
    assert "gfx942" in text and "clang >= 19" in text and "CKGEN_CLANG" in text
    assert "no clang++ on PATH" in text


def test_too_old_clang_names_what_was_found(tmp_path):
    fake = _script(tmp_path / "clang++", 'echo "clang version 14.0.6"\n')
    with pytest.raises(ToolchainError) as ei:
        find_toolchain(get_target("gfx942"), _settings(clang=str(fake)), search_path=str(tmp_path))
    text = ei.value.render()
    assert "clang 14" in text and ">= 19" in text and "CKGEN_CLANG" in text


def test_clang_that_does_not_run(tmp_path):
    with pytest.raises(ToolchainError) as ei:
        find_toolchain(get_target("gfx90a"), _settings(clang=str(tmp_path / "nope")), search_path=str(tmp_path))
    assert "does not run" in ei.value.render()


def test_explicit_clang_is_the_only_candidate(tmp_path):
    """CKGEN_CLANG set to an old clang does not silently fall back to another one on PATH."""
    _need("clang++-19")
    os.symlink(shutil.which("clang++-19"), tmp_path / "clang++-19")
    fake = _script(tmp_path / "old-clang", 'echo "clang version 15.0.0"\n')
    with pytest.raises(ToolchainError):
        find_toolchain(get_target("gfx942"), _settings(clang=str(fake)), search_path=str(tmp_path))


def test_path_search_respects_min_clang(tmp_path):
    """Only clang++-19 on PATH: fine for gfx942, an error naming 22 for gfx950."""
    os.symlink(_need("clang++-19"), tmp_path / "clang++-19")
    tc = find_toolchain(get_target("gfx942"), _settings(), search_path=str(tmp_path))
    assert tc.major == 19 and tc.origin == "PATH:clang++-19"
    assert "clang version 19" in tc.version
    for p in (tc.clang, tc.lld, tc.objdump, tc.readelf, tc.objcopy, tc.offload_bundler):
        assert p.is_file(), p
    assert tc.lld.parent == tc.objdump.parent == tc.clang.parent  # one LLVM installation
    with pytest.raises(ToolchainError) as ei:
        find_toolchain(get_target("gfx950"), _settings(), search_path=str(tmp_path))
    assert ">= 22" in ei.value.render() and "clang 19" in ei.value.render()


def test_hipcc_clang_is_used(tmp_path):
    clang = Path(_need("clang++-19")).resolve()
    hipcc = _script(tmp_path / "hipcc", f'echo "HIP version: 5.2"\necho "InstalledDir: {clang.parent}"\n')
    tc = find_toolchain(get_target("gfx90a"), _settings(hipcc=str(hipcc)), search_path=str(tmp_path / "empty"))
    assert tc.origin == "CKGEN_HIPCC" and tc.clang.parent == clang.parent and tc.major == 19


def test_default_search_finds_a_toolchain(toolchain_or_skip):
    tc = toolchain_or_skip
    assert tc.major >= get_target("gfx942").min_clang
    assert tc.key() == {"clang": str(tc.clang), "version": tc.version}
    assert tc.clang.name == "clang++"  # the C++ driver: the host library links libstdc++


def test_a_wrapper_script_as_ckgen_clang_finds_the_tools_through_clang(tmp_path):
    """CKGEN_CLANG may be a script (ccache, a site wrapper): readelf, lld ... come from the LLVM that clang itself
    reports (InstalledDir / -print-prog-name), not from the script's directory."""
    real = Path(_need("clang++-19")).resolve()
    wrapper = _script(tmp_path / "my-clang", f'exec {real} "$@"\n')
    tc = find_toolchain(get_target("gfx942"), _settings(clang=str(wrapper)), search_path=str(tmp_path / "empty"))
    assert tc.clang == wrapper and tc.major == 19
    for p in (tc.lld, tc.objdump, tc.readelf, tc.objcopy, tc.offload_bundler):
        assert p.is_file() and p.parent == real.parent, p
