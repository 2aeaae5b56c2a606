"""Device compiles and the AMD host library, built for gfx90a and gfx942 from the hand-written cases.

Rung 1 of the ladder only: the code objects are checked as files (ELF, metadata note, disassembly) and
the host library is loaded on this GPU-less machine, where its calls must return clean status codes.
"""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ckgen.backends.amd.device_code import COUNTERS, KernelSource, check_code_object
from ckgen.backends.amd.host_library import build_amd_library
from ckgen.backends.amd.metadata import kernels_of, read_metadata_text
from ckgen.errors import BuildError
from ckgen.targets import get_target

from .conftest import ARCHS, case_kernels, launcher_source

STATUS = {"SUCCESS": 0, "INVALID_VALUE": 1, "NO_DEVICE": 2, "NO_RUNTIME": 3}

# Runs in a fresh interpreter: the runtime lookup happens once per process.
_PROBE = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ckgen_status_string.restype = ctypes.c_char_p
buf = (ctypes.c_float * 4096)()
out = {
    "status": lib.ckgen_case_status(),
    "f16": lib.ckgen_case_mfma_f16(buf, buf, buf, 1, 1, None),
    "bf16": lib.ckgen_case_mfma_bf16(buf, buf, buf, 1, 1, None),
    "null_arg": lib.ckgen_case_mfma_f16(None, buf, buf, 1, 1, None),
    "text": lib.ckgen_status_string(lib.ckgen_case_status()).decode(),
    "table_hidden": not hasattr(lib, "ckgen_code_objects"),
}
print(json.dumps(out))
"""


def _probe(lib: Path, env_extra: dict[str, str] | None = None) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if k != "CKGEN_HIP_LIBRARY"}
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(lib)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_one_code_object_per_arch_lists_every_kernel(case_library):
    r = case_library
    assert sorted(r.code_objects) == sorted(ARCHS)
    for arch, co in r.code_objects.items():
        tc = r.toolchains[arch]
        check_code_object(co, ["case_mfma_f16", "case_mfma_bf16"], tc, arch)  # raises if not
        header = subprocess.run([str(tc.readelf), "-h", str(co)], capture_output=True, text=True).stdout
        assert "DYN (Shared object file)" in header and arch in header
        docs = read_metadata_text(tc.readelf, co)
        assert len(docs) == 1 and f"amdgcn-amd-amdhsa--{arch}" in docs[0]
        kernels = {k[".name"]: k for k in kernels_of(docs[0])}
        assert kernels["case_mfma_f16"][".symbol"] == "case_mfma_f16.kd"
        assert kernels["case_mfma_f16"][".max_flat_workgroup_size"] == 256
        assert kernels["case_mfma_bf16"][".max_flat_workgroup_size"] == 128
        dis = subprocess.run([str(tc.objdump), "-d", str(co)], capture_output=True, text=True).stdout
        assert "<case_mfma_f16>:" in dis and "<case_mfma_bf16>:" in dis
        assert "v_mfma_f32_16x16x16" in dis and "v_mfma_f32_32x32x8" in dis
        dyn = subprocess.run([str(tc.readelf), "--dyn-syms", str(co)], capture_output=True, text=True).stdout
        assert "case_mfma_f16.kd" in dyn and "case_mfma_bf16.kd" in dyn


def test_library_embeds_the_code_objects(case_library):
    blob = case_library.library.read_bytes()
    for co in case_library.code_objects.values():
        assert co.read_bytes() in blob
    assert [p.name for p in case_library.library.parent.iterdir()] == ["libcases.so"]  # no temp files left


@pytest.mark.skipif(ctypes.util.find_library("amdhip64") is None, reason="needs Debian's libamdhip64")
def test_no_device_status_with_the_runtime(case_library):
    out = _probe(case_library.library)
    assert out["status"] == out["f16"] == out["bf16"] == STATUS["NO_DEVICE"]
    assert out["null_arg"] == STATUS["INVALID_VALUE"]
    assert "no GPU device" in out["text"] and out["table_hidden"]


def test_no_runtime_status_without_libamdhip64(case_library, tmp_path):
    out = _probe(case_library.library, {"CKGEN_HIP_LIBRARY": str(tmp_path / "libamdhip64.so")})
    assert out["status"] == out["f16"] == out["bf16"] == STATUS["NO_RUNTIME"]
    assert out["null_arg"] == STATUS["INVALID_VALUE"]
    assert "runtime" in out["text"]


def test_no_runtime_when_the_library_lacks_the_module_api(case_library, tmp_path):
    """A loadable library that is not HIP (libm) is no runtime either."""
    libm = ctypes.util.find_library("m")
    out = _probe(case_library.library, {"CKGEN_HIP_LIBRARY": libm})
    assert out["status"] == STATUS["NO_RUNTIME"]


def test_unchanged_kernels_are_not_rebuilt(case_library, case_cache, tmp_path):
    targets = [get_target(a) for a in ARCHS]
    before = (COUNTERS.device_compiles, COUNTERS.links, COUNTERS.host_compiles)
    warm = build_amd_library("cases", case_kernels(), launcher_source(), targets, tmp_path / "warm", 2,
                             cache=case_cache)
    assert warm.compiled == () and len(warm.reused) == 4
    assert (COUNTERS.device_compiles, COUNTERS.links, COUNTERS.host_compiles) == before
    assert warm.library.read_bytes() == case_library.library.read_bytes()
    edited = build_amd_library("cases", case_kernels(edit="\n// edited\n"), launcher_source(), targets,
                               tmp_path / "edit", 2, cache=case_cache)
    assert sorted(edited.compiled) == [("case_mfma_f16", "gfx90a"), ("case_mfma_f16", "gfx942")]
    assert sorted(edited.reused) == [("case_mfma_bf16", "gfx90a"), ("case_mfma_bf16", "gfx942")]
    assert COUNTERS.device_compiles == before[0] + 2
    assert COUNTERS.links == before[1] + 2 and COUNTERS.host_compiles == before[2] + 1


def test_per_arch_sources(toolchain_or_skip, case_cache, tmp_path):
    f16, bf16 = case_kernels()
    only942 = KernelSource(bf16.name, bf16.source, arch="gfx942")
    r = build_amd_library("perarch", [f16, only942], launcher_source(), ["gfx90a", "gfx942"], tmp_path, 1,
                          cache=case_cache)
    assert sorted(r.reports) == [("case_mfma_bf16", "gfx942"), ("case_mfma_f16", "gfx90a"),
                                 ("case_mfma_f16", "gfx942")]


def test_compile_error_is_a_build_error_with_the_log(toolchain_or_skip, case_cache, tmp_path):
    broken = KernelSource("case_broken", '#include "ckgen/platform.h"\nCKGEN_GLOBAL void case_broken() { nope; }\n')
    with pytest.raises(BuildError) as ei:
        build_amd_library("broken", [broken], launcher_source(), ["gfx942"], tmp_path, 1, cache=case_cache)
    text = ei.value.render()
    assert "case_broken" in text and "gfx942" in text and "nope" in text and "error:" in text
    assert not (tmp_path / "libbroken.so").exists()


def test_host_compile_error_is_a_build_error(toolchain_or_skip, case_cache, tmp_path):
    with pytest.raises(BuildError) as ei:
        build_amd_library("badhost", case_kernels(), "this is not C++\n", ["gfx942"], tmp_path, 1, cache=case_cache)
    assert "libbadhost.so" in ei.value.render()


@pytest.mark.parametrize("bad", [
    dict(stem="a/b"), dict(archs=[]), dict(archs=["gfx942", "gfx942"]), dict(archs=["sm_90"]),
    dict(kernels=[]), dict(kernels="dupe"),
])
def test_bad_requests_are_rejected_before_compiling(tmp_path, case_cache, bad):
    from ckgen.errors import CkgenError

    kernels = case_kernels()
    if bad.get("kernels") == "dupe":
        bad = {"kernels": kernels + [kernels[0]]}
    args = {"stem": "x", "kernels": kernels, "archs": ["gfx942"], **bad}
    before = COUNTERS.device_compiles
    with pytest.raises(CkgenError):
        build_amd_library(args["stem"], args["kernels"], launcher_source(), args["archs"], tmp_path, 1,
                          cache=case_cache)
    assert COUNTERS.device_compiles == before


def test_kernel_source_validation():
    with pytest.raises(ValueError):
        KernelSource("not an identifier", "")
    with pytest.raises(ValueError):
        KernelSource("k", "", flags=["-O2"])  # a list, not a tuple


def test_gfx908_and_gfx950_code_objects(toolchain_or_skip, case_cache, tmp_path):
    """The f16 case (an MFMA all four targets have) for gfx908 (separate AGPR file) and gfx950 (clang-22)."""
    from ckgen.backends.amd.llvm import find_toolchain
    from ckgen.errors import ToolchainError

    archs = ["gfx908"]
    try:
        find_toolchain(get_target("gfx950"))
        archs.append("gfx950")
    except ToolchainError:
        pass
    f16 = case_kernels()[0]
    r = build_amd_library("f16only", [f16], launcher_source(), archs, tmp_path, 2, cache=case_cache)
    for arch in archs:
        check_code_object(r.code_objects[arch], ["case_mfma_f16"], r.toolchains[arch], arch)
        rep = r.reports[("case_mfma_f16", arch)]
        assert rep.mfma_total == rep.mfma_in_main_loop == 1 and rep.lds_bytes == 2048


def test_compiler_remarks_are_not_warnings():
    """The resource remarks ckgen asks clang for stay out of warnings; a real warning beside them does not."""
    from ckgen.toolchain.tools import without_remarks

    log = ("kernel.hip:65:1: remark: Function Name: k [-Rpass-analysis=kernel-resource-usage]\n"
           "   65 | void k() {\n      | ^\n"
           "kernel.hip:65:1: remark:     VGPRs: 12 [-Rpass-analysis=kernel-resource-usage]\n"
           "kernel.hip:3:5: warning: unused variable 'x' [-Wunused-variable]\n    3 | int x;\n1 warning generated.\n")
    assert without_remarks(log) == ("kernel.hip:3:5: warning: unused variable 'x' [-Wunused-variable]\n"
                                    "    3 | int x;\n1 warning generated.\n")
    assert without_remarks(log.split("kernel.hip:3:5")[0]) == ""
