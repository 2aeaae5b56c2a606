"""Every bad input to the ``ckgen`` command is a one-screen error with a documented exit code (2 bad input, 4
environment), never a traceback; and the conveniences: default targets, progress, -v, warnings, examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
F32 = ROOT / "examples" / "gemm_f32.ck"
SMALL = "target gfx942\nkernel small { A = f32 row B = f32 row C = f32 row tile = 32x32x8 waves = 1x1 }\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


def ckgen(*args, cache: Path, cwd: Path = ROOT, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, CKGEN_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), **env)
    r = subprocess.run([sys.executable, "-m", "ckgen", *map(str, args)], cwd=cwd, env=full, capture_output=True,
                       text=True, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_output_that_is_a_file_or_below_one(tmp_path, cache):
    f = tmp_path / "file"
    f.write_text("x")
    r = ckgen("compile", F32, "-o", f, cache=cache)
    assert r.returncode == 2 and f"output directory {f} exists and is not a directory" in r.stderr
    r = ckgen("compile", F32, "-o", f / "sub", cache=cache)
    assert r.returncode == 2 and "cannot create the output directory" in r.stderr


def test_cache_dir_that_is_a_file_is_exit_4(tmp_path):
    f = tmp_path / "cachefile"
    f.write_text("x")
    (tmp_path / "small.ck").write_text(SMALL)
    r = ckgen("compile", "small.ck", "-o", tmp_path / "out", cache=f, cwd=tmp_path)
    assert r.returncode == 4 and "is not a directory" in r.stderr and "CKGEN_CACHE_DIR" in r.stderr


def test_missing_toolchain_is_exit_4(tmp_path, cache):
    (tmp_path / "small.ck").write_text(SMALL)
    r = ckgen("compile", "small.ck", "-o", tmp_path / "out", cache=tmp_path / "c", cwd=tmp_path,
              CKGEN_CLANG=str(tmp_path / "no-clang"))
    assert r.returncode == 4 and "no usable clang for gfx942" in r.stderr


@pytest.mark.parametrize("make,words", [
    (lambda d: d, "is a directory, not a .ck file"),
    (lambda d: (d / "x.txt").write_text(SMALL) and d / "x.txt", "is not a .ck file"),
    (lambda d: (d / "b.ck").write_bytes(b"\x7fELF\x02") and d / "b.ck", "it is an ELF object"),
])
def test_inputs_that_are_not_spec_files(tmp_path, cache, make, words):
    r = ckgen("check", make(tmp_path), cache=cache)
    assert r.returncode == 2 and words in r.stderr


@pytest.mark.parametrize("args,words", [
    (["--seed", "-1"], "--seed -1: the seed must be a non-negative integer"),
    (["--size", "m=3000000000,n=1,k=1"], "size m = 3000000000: out of range"),
    (["-m", "-5", "-n", "4", "-k", "4"], "size m = -5: out of range"),
    (["--size", "m=2147483647,n=2147483647,k=1"], "of host memory"),
    (["--size", "m=4,n=4,k=4,q=2"], "has no size q"),
    (["--size", "m=x"], "not an integer"),
    (["--arch", "sm_90"], "arch 'sm_90' is a nvidia target"),
])
def test_run_refuses_bad_sizes_and_seeds(cache, args, words):
    r = ckgen("run", F32, "--kernel", "sgemm_nn", *args, cache=cache)
    assert r.returncode == 2 and words in r.stderr, r.stderr


@pytest.mark.parametrize("size", ["m=0,n=8,k=8", "m=8,n=0,k=8", "m=8,n=8,k=0", "m=0,n=0,k=0"])
def test_run_with_empty_sizes(tmp_path, cache, size):
    """M=0 or N=0: nothing to compute; K=0: C = epilogue(beta * C) (here with beta and a bias)."""
    (tmp_path / "k0.ck").write_text("target gfx942\nkernel k0 { A = f32 row B = f32 row C = f32 row beta = 0.5 "
                                    "tile = 32x32x8 waves = 1x1 epilogue = bias(col) -> relu }\n")
    r = ckgen("run", "k0.ck", "--kernel", "k0", "--size", size, cache=cache, cwd=tmp_path)
    assert r.returncode == 0 and ": ok" in r.stdout, r.stdout + r.stderr


def test_compile_report_and_emit_default_to_the_spec_targets(tmp_path, cache):
    r = ckgen("compile", F32, "-o", tmp_path / "out", cache=cache)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["libraries"][0]["arches"] == ["gfx90a", "gfx942"]
    r = ckgen("report", F32, "--json", cache=cache)
    assert r.returncode == 0 and {k["arch"] for k in json.loads(r.stdout)["kernels"]} == {"gfx90a", "gfx942"}
    r = ckgen("emit", F32, "--stage", "ir", cache=cache)
    assert [p["arch"] for p in json.loads(r.stdout)] == ["gfx942", "gfx90a"]
    (tmp_path / "none.ck").write_text(SMALL.replace("target gfx942\n", ""))
    r = ckgen("compile", "none.ck", "-o", tmp_path / "o2", cache=cache, cwd=tmp_path)
    assert r.returncode == 2 and "has no target" in r.stderr and "--arch" in r.stderr


def test_progress_verbose_and_quiet(tmp_path):
    (tmp_path / "p.ck").write_text(SMALL)
    cache = tmp_path / "cache"
    quiet = ckgen("compile", "p.ck", "-o", "out", cache=cache, cwd=tmp_path)  # not a terminal: no progress
    assert quiet.returncode == 0 and "[1/1]" not in quiet.stderr
    loud = ckgen("compile", "p.ck", "-o", "out", "-v", cache=cache, cwd=tmp_path, CKGEN_NO_CACHE="1")
    assert "[1/1] small gfx942 (built " in loud.stderr and "[1/1] libp.so host (built" in loud.stderr
    assert "$ cd " in loud.stderr and "--offload-arch=gfx942" in loud.stderr  # the compiler commands
    again = ckgen("compile", "p.ck", "-o", "out", "-v", cache=cache, cwd=tmp_path)
    assert "[1/1] small gfx942 (cached)" in again.stderr


def test_compiler_warnings_are_shown(tmp_path, cache):
    """Warnings of a compiler on generated code reach the user (a host compiler that warns, for the emulator)."""
    import shutil

    real = shutil.which("clang++-19") or shutil.which("clang++")
    if real is None:
        pytest.skip("no clang++")
    cxx = tmp_path / "warn-cxx"
    cxx.write_text(f'#!/bin/sh\necho "fake.cpp:1:1: warning: a warning from the compiler" >&2\nexec {real} "$@"\n')
    cxx.chmod(0o755)
    (tmp_path / "w.ck").write_text(SMALL.replace("small", "warned"))
    r = ckgen("run", "w.ck", "--kernel", "warned", "-m", "8", "-n", "8", "-k", "8", cache=tmp_path / "c",
              cwd=tmp_path, CKGEN_HOST_CXX=str(cxx))
    assert r.returncode == 0, r.stderr
    assert "warning: emu build of libwarned.so:" in r.stderr and "a warning from the compiler" in r.stderr


def test_examples_list_and_copy(tmp_path, cache):
    r = ckgen("examples", cache=cache)
    assert r.returncode == 0 and "gemm_f16.ck" in r.stdout and "Half-precision GEMMs" in r.stdout
    r = ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", cache=cache)
    assert r.returncode == 0 and (tmp_path / "ex" / "gemm_f32.ck").read_text() == F32.read_text()
    again = ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", cache=cache)
    assert again.returncode == 2 and "exists" in again.stderr and "--force" in again.stderr
    assert ckgen("examples", "gemm_f32", "--copy", tmp_path / "ex", "--force", cache=cache).returncode == 0
    bad = ckgen("examples", "nope", cache=cache)
    assert bad.returncode == 2 and "no example named 'nope'" in bad.stderr
    chk = ckgen("check", tmp_path / "ex" / "gemm_f32.ck", cache=cache)
    assert chk.returncode == 0


@pytest.mark.parametrize("args", [["compile", "x.ck", "-o", "o", "-j", "-1"], ["compile", "x.ck", "-o", "o", "-j", "x"],
                                  ["check", "x.ck", "--arch", "gfx943"]])
def test_usage_errors(cache, args):
    r = ckgen(*args, cache=cache)
    assert r.returncode == 2 and "error:" in r.stderr


def test_no_gpu_for_a_gpu_target_is_exit_4(cache):
    pytest.importorskip("hip")
    r = ckgen("run", F32, "--kernel", "sgemm_nn", "--target", "hip", "-m", "8", "-n", "8", "-k", "8", cache=cache)
    if "no AMD GPU" not in r.stderr:
        pytest.skip("this machine has an AMD GPU or no HIP runtime")
    assert r.returncode == 4 and "use target='emu'" in r.stderr


def test_report_of_a_spec_that_mixes_vendors_says_which_arch_to_pass(tmp_path, cache):
    (tmp_path / "mix.ck").write_text(SMALL.replace("target gfx942", "target gfx942, sm_90"))
    r = ckgen("report", "mix.ck", cache=cache, cwd=tmp_path)
    assert r.returncode == 2 and "the spec's targets: report AMD and NVIDIA targets in separate runs" in r.stderr
    assert "e.g. --arch gfx942" in r.stderr
