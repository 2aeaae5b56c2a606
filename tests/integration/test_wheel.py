"""The installed wheel (not the editable checkout) works for every way in.

Builds ckgen's wheel (``pip wheel . --no-deps --no-build-isolation``), installs it into a fresh venv (ckgen
itself from the wheel; lark/jinja2/numpy/hip-python/wheel seen through a ``.pth`` file listing the site
directories of the interpreter running the tests, wherever those are: a venv, the user's site-packages, the
system's), and, from a directory outside the checkout and with an empty ckgen cache:
``ckgen check``/``ckgen compile`` on an example, the CMake consumer (found through ``ckgen cmake-dir``),
the pybuild example's wheel, and the hiprtc JIT path.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from .cmake_util import NO_DEVICE, ROOT, build, configure, copy_example, env_with_cache, run
from .test_pybuild import build_wheel, check_wheel


def _site_dirs() -> list[str]:
    """The running interpreter's package directories (not this checkout): where ckgen's dependencies are. As plain
    path lines of a .pth file they are searched after the venv's own packages, and their own .pth files (an
    editable ckgen) are not processed."""
    dirs = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    return list(dict.fromkeys(dirs))


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-w", tmp / "dist"], cwd=ROOT)
    (wheel,) = (tmp / "dist").glob("ckgen_compiler-*.whl")
    run([sys.executable, "-m", "venv", tmp / "venv"])
    py = tmp / "venv" / "bin" / "python"
    site_dir = run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    (Path(site_dir) / "_ckgen_test_deps.pth").write_text("\n".join(_site_dirs()) + "\n")
    run([py, "-m", "pip", "install", "--no-deps", "--no-index", wheel])
    work = tmp / "work"
    work.mkdir()
    env = env_with_cache(tmp / "cache")
    env.pop("PYTHONPATH", None)
    # Not on PATH on purpose: the CMake package must find the ckgen installed beside it.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != tmp / "venv" / "bin")
    return {"tmp": tmp, "py": str(py), "bin": tmp / "venv" / "bin", "work": work, "env": env}


def test_the_wheel_is_what_runs(venv):
    out = run([venv["py"], "-c", "import ckgen, ckgen.resources as r; print(ckgen.__file__); print(r.CMAKE_DIR);"
               "print(r.TEMPLATE_DIR); print(r.GRAMMAR_DIR)"], cwd=venv["work"], env=venv["env"]).stdout.split()
    for path in out:
        assert str(venv["tmp"] / "venv") in path and str(ROOT) not in path, out
    cmake_dir = run([venv["bin"] / "ckgen", "cmake-dir"], cwd=venv["work"], env=venv["env"]).stdout.strip()
    assert cmake_dir == out[1]
    assert (Path(cmake_dir) / "ckgenConfig.cmake").is_file()


def test_the_wheel_carries_license_examples_and_the_new_name(venv):
    (wheel,) = (venv["tmp"] / "dist").glob("ckgen_compiler-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    examples = sorted(p.name for p in (ROOT / "examples").glob("*.ck"))
    assert sorted(Path(n).name for n in names if n.startswith("ckgen/_data/examples/")) == examples
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "ckgen/backends/nvidia/fastcall.cpp" in names  # the compiled prepared call's source (native.py builds it)
    meta = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "Name: ckgen-compiler" in meta and "License-Expression: MIT" in meta
    out = run([venv["bin"] / "ckgen", "examples", "--copy", venv["work"] / "ex"], cwd=venv["work"], env=venv["env"])
    assert "gemm_f16.ck" in out.stdout
    run([venv["bin"] / "ckgen", "check", venv["work"] / "ex" / "gemm_f16.ck"], cwd=venv["work"], env=venv["env"])


def test_check_and_compile_from_the_wheel(venv):
    spec = ROOT / "examples" / "gemm_f16.ck"
    run([venv["bin"] / "ckgen", "check", spec], cwd=venv["work"], env=venv["env"])
    out = venv["work"] / "out"
    run([venv["bin"] / "ckgen", "compile", spec, "--arch", "gfx942,gfx90a", "-o", out], cwd=venv["work"],
        env=venv["env"])
    assert (out / "libgemm_f16.so").is_file() and (out / "gemm_f16.h").is_file()
    kernels = json.loads((out / "manifest.json").read_text())["kernels"]
    assert {k["name"] for k in kernels} == {"gemm_f16_nt", "mlp_f16_bias_gelu"}


def test_cmake_consumer_against_the_wheel(venv):
    src = copy_example(venv["tmp"] / "cmake-src")
    cmake_dir = run([venv["bin"] / "ckgen", "cmake-dir"], cwd=venv["work"], env=venv["env"]).stdout.strip()
    configure(src, venv["tmp"] / "cmake-build", cmake_dir, env=venv["env"])
    cache = (venv["tmp"] / "cmake-build" / "CMakeCache.txt").read_text()
    assert f"CKGEN_EXECUTABLE:STRING={venv['bin'] / 'ckgen'}" in cache
    build(venv["tmp"] / "cmake-build", env=venv["env"])
    res = run([venv["tmp"] / "cmake-build" / "gemm_app"], check=False)
    assert res.returncode == NO_DEVICE, res.stdout + res.stderr


def test_pybuild_against_the_wheel(venv):
    tmp = venv["tmp"] / "pybuild"
    tmp.mkdir()
    wheel = build_wheel(venv["py"], tmp, venv["env"])
    check_wheel(wheel, venv["py"], tmp, venv["env"])


def test_hiprtc_jit_from_the_wheel(venv):
    if shutil.which("llvm-objdump-19") is None:
        pytest.fail("llvm-objdump-19 not found (Debian: apt-get install llvm-19)")
    probe = (
        "import numpy as np\n"
        "from ckgen.runtime import api\nfrom ckgen.backends.amd import driver as H\n"
        f"k = api.jit({str(ROOT / 'examples' / 'gemm_f32.ck')!r}, target='hip', arch='gfx90a')\n"
        "open('k.co', 'wb').write(k.handle.code.data)\n"
        "print(k.handle.code.compiler, k.plan.body.instr.mnemonic)\n"
        "try:\n"
        "    k(np.ones((8, 8), np.float32), np.ones((8, 8), np.float32))\n"
        "except H.HipNoDevice as e:\n"
        "    print('status', e.status)\n")
    res = run([venv["py"], "-c", probe], cwd=venv["work"], env=venv["env"])
    compiler, mnemonic = res.stdout.splitlines()[0].rsplit(" ", 1)
    assert compiler.startswith("hiprtc")
    assert res.stdout.splitlines()[1] == f"status {NO_DEVICE}"
    dis = run(["llvm-objdump-19", "-d", venv["work"] / "k.co"]).stdout
    assert mnemonic in dis
