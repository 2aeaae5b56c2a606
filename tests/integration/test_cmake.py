"""The CMake package (cmake/): find_package(ckgen), ckgen_add_library, the examples/cmake consumer.

The consumer builds two .ck specs into two libraries at build time through `ckgen compile`, links a C++
program against one, and runs it: on this GPU-less machine the kernel returns CKGEN_ERROR_NO_DEVICE.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest

from ckgen import resources

from .cmake_util import NO_DEVICE, build, configure, copy_example, env_with_cache, run

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The example, configured and built once (the tests below share it, in this order)."""
    root = tmp_path_factory.mktemp("cmake")
    src = copy_example(root / "src")
    env = env_with_cache(root / "cache")
    configure(src, root / "build", str(resources.CMAKE_DIR), env=env)
    first = build(root / "build", env=env)
    return {"src": src, "build": root / "build", "env": env, "first": first}


def outputs(project, stem):
    d = project["build"] / "ckgen" / "example_kernels" / stem
    return d / f"lib{stem}.so", d / f"{stem}.h", d / "manifest.json"


def test_builds_both_libraries_and_manifests(project):
    assert len(re.findall(r"ckgen: compiling", project["first"].stdout)) == 2
    for stem, kernel in (("linear", "linear_relu_f16"), ("sgemm", "sgemm_small")):
        lib, hdr, man = outputs(project, stem)
        assert lib.is_file() and hdr.is_file()
        assert f"ckgen_{kernel}(" in hdr.read_text()
        kernels = json.loads(man.read_text())["kernels"]
        assert {k["name"] for k in kernels} == {kernel}  # each manifest describes exactly its library


def test_program_runs_to_no_device(project):
    res = run([project["build"] / "gemm_app"], check=False)
    assert res.returncode == NO_DEVICE, res.stdout + res.stderr
    assert "ckgen_linear_relu_f16: 2 (" in res.stdout
    assert "no GPU device" in res.stdout or "no usable device" in res.stdout


def test_editing_one_spec_rebuilds_only_its_library(project):
    lin, _, _ = outputs(project, "linear")
    sg, _, _ = outputs(project, "sgemm")
    before = {p: p.stat().st_mtime_ns for p in (lin, sg)}
    spec = project["src"] / "kernels" / "sgemm.ck"
    newer = max(max(before.values()), time.time_ns() - 1_000_000_000) + 10_000_000  # newer than the outputs
    os.utime(spec, ns=(newer, newer))  # an edit (copytree kept the checkout's older mtime)
    res = build(project["build"], env=project["env"])
    assert re.findall(r"ckgen: compiling (\S+)", res.stdout) == ["sgemm.ck"], res.stdout
    assert sg.stat().st_mtime_ns != before[sg]
    assert lin.stat().st_mtime_ns == before[lin]
    again = build(project["build"], env=project["env"])
    assert "ckgen: compiling" not in again.stdout  # nothing edited, nothing regenerated


def test_bad_spec_fails_the_build_with_a_located_error(project, tmp_path):
    src = copy_example(tmp_path / "src")
    (src / "kernels" / "sgemm.ck").write_text("target gfx942\nkernel k {\n  A = f16 sideways\n}\n")
    configure(src, tmp_path / "build", str(resources.CMAKE_DIR), env=project["env"])
    res = build(tmp_path / "build", env=project["env"], check=False)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert re.search(r"sgemm\.ck:\d+:\d+: error:", out), out
    assert "Traceback" not in out


def test_configure_errors_are_clear(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(p LANGUAGES NONE)\nfind_package(ckgen REQUIRED)\n"
        "ckgen_add_library(k SPECS missing.ck ARCHS gfx942)\n")
    res = run(["cmake", "-S", src, "-B", tmp_path / "b", f"-Dckgen_DIR={resources.CMAKE_DIR}"], check=False)
    assert res.returncode != 0 and "missing.ck does not exist" in " ".join(res.stderr.split())
    (src / "a.ck").write_text("target gfx942\n")
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(p LANGUAGES NONE)\nfind_package(ckgen 0.1 REQUIRED)\n"
        "ckgen_add_library(k SPECS a.ck)\n")
    res = run(["cmake", "-S", src, "-B", tmp_path / "b2", f"-Dckgen_DIR={resources.CMAKE_DIR}"], check=False)
    assert res.returncode != 0 and "ARCHS is empty" in " ".join(res.stderr.split())


def test_version_file_rejects_a_newer_request(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(p LANGUAGES NONE)\nfind_package(ckgen 99.0 REQUIRED)\n")
    res = run(["cmake", "-S", src, "-B", tmp_path / "b", f"-Dckgen_DIR={resources.CMAKE_DIR}"], check=False)
    assert res.returncode != 0 and "99.0" in res.stderr
