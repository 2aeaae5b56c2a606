"""Occupancy by the hardware's rules (ckgen/backends/amd/occupancy.py): unit cases from the LLVM / AMDGPUUsage
facts in ckgen/targets/amd.py, and the cross-check against clang's own figure (the kernel-resource-usage
remark the build keeps in each kernel's compile log) on every example kernel for every AMD arch: here the arches
tests/test_cli.py does not compile (:data:`CLI_ARCHES`, whose examples it checks from `ckgen compile`'s manifest
with :func:`check_against_clang`; one build of each example per arch in the suite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ckgen.backends.amd import compiler as amd_compiler
from ckgen.backends.amd.occupancy import occupancy, occupancy_limits, parse_resource_remarks
from ckgen.errors import ValidationError
from ckgen.frontend import load_file
from ckgen.lower import plan_kernel
from ckgen.targets import amd_targets, get_target

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.ck"))
#: examples built only for the AMD arches they name: the layer's kernels repeat op configurations the other examples
#: already give every arch (norms, attention, the K/V append, 64x64x32 GEMMs): on the other arches the cross-check
#: would gain no new resource pattern for 14 x 3 more builds of CI time; the fp8 kernels' dtypes belong to the arches
#: they name (FNUZ on gfx942, OCP and MX on gfx950): every other arch refuses them
NAMED_ARCHES_ONLY = ("llama_layer", "gemm_fp8")
G908, G90A, G942, G950 = (get_target(a) for a in ("gfx908", "gfx90a", "gfx942", "gfx950"))
#: the arches tests/test_cli.py compiles every example for (and cross-checks there)
CLI_ARCHES = ("gfx942", "gfx90a")


def check_against_clang(r) -> None:
    """One kernel's report (a KernelReport, or its manifest JSON as a namespace): clang's remark == the
    LLVM-compatible model; the report's hardware figure is that one except the documented granule effects (never
    higher), and equal on gfx90a / gfx942."""
    t = get_target(r.arch)
    assert r.clang_occupancy is not None, (r.name, r.arch)
    llvm = occupancy(t, r.vgprs, r.agprs, r.vgpr_file, r.sgprs, r.lds_bytes, r.workgroup_size, model="llvm")
    assert llvm[0] == r.clang_occupancy, (r.name, r.arch, llvm, r.clang_occupancy)
    assert r.waves_per_simd <= r.clang_occupancy
    if r.arch in ("gfx90a", "gfx942"):
        assert r.waves_per_simd == r.clang_occupancy, (r.name, r.arch)
    assert r.sgprs - r.sgpr_extra >= 0 and r.sgpr_extra in (0, 2, 4, 6), (r.name, r.arch, r.sgpr_extra)


@pytest.mark.parametrize("target,sgprs,want", [
    (G908, 80, 10), (G908, 81, 8), (G908, 96, 8), (G908, 97, 7), (G908, 108, 7), (G908, 109, 0),
    (G942, 54, 8), (G942, 104, 7), (G942, 106, 7),
])
def test_sgpr_blocks_of_16_with_the_special_registers(target, sgprs, want):
    assert occupancy_limits(target, 8, 0, 8, sgprs, 0, 256)["sgpr"] == min(want, target.max_waves_per_simd)


def test_llvm_steps_differ_only_where_documented():
    # LLVM: <= 88 SGPRs -> 9 waves; 16-SGPR blocks: 96 -> 8 (gfx908 runs up to 10)
    assert occupancy(G908, 8, 0, 8, 88, 0, 256, model="llvm") == (9, "sgpr")
    assert occupancy(G908, 8, 0, 8, 88, 0, 256) == (8, "sgpr")
    # gfx950 allocates LDS in 1280-byte blocks: 32 KiB takes 26 blocks, so 4 (not 5) groups of 160 KiB
    assert occupancy_limits(G950, 8, 0, 8, 40, 32768, 256)["lds"] == 4
    assert occupancy_limits(G950, 8, 0, 8, 40, 32768, 256, model="llvm")["lds"] == 5


@pytest.mark.parametrize("vgprs,agprs,target,want", [
    (128, 0, G942, 4), (129, 0, G942, 3), (256, 0, G942, 2), (252, 4, G942, 2), (256, 256, G942, 1),
    (7, 0, G942, 8),               # under one granule: no limit
    (128, 0, G908, 2), (64, 0, G908, 4), (65, 0, G908, 3),   # 256-entry file, granule 4
])
def test_vgpr_files_and_granules(vgprs, agprs, target, want):
    vfile = (-(-vgprs // 4) * 4 + agprs) if agprs and target.unified_vgpr_file else vgprs
    assert occupancy_limits(target, vgprs, agprs, vfile, 40, 0, 256)["vgpr"] == want


def test_workgroups_per_cu_are_bounded_by_barriers():
    # 64 threads = 1 wave: no barrier limit; 128 threads, 2 KiB: 32 groups by LDS but 16 by barriers
    assert occupancy_limits(G942, 8, 0, 8, 40, 2048, 64)["lds"] == 8
    assert occupancy_limits(G942, 8, 0, 8, 40, 2048, 128)["lds"] == 8   # 16 groups x 2 waves / 4 SIMDs
    assert occupancy_limits(G942, 8, 0, 8, 40, 2048, 256)["lds"] == 8
    assert occupancy_limits(G942, 8, 0, 8, 40, 16384, 1024)["lds"] == 8
    assert occupancy_limits(G942, 8, 0, 8, 40, 49152, 512)["lds"] == 2


def test_parse_resource_remarks():
    log = ("k.hip:3:1: remark: Function Name: gemm_x [-Rpass-analysis=kernel-resource-usage]\n"
           "k.hip:3:1: remark:     TotalSGPRs: 54 [-Rpass-analysis=kernel-resource-usage]\n"
           "k.hip:3:1: remark:     VGPRs: 118 [-Rpass-analysis=kernel-resource-usage]\n"
           "k.hip:3:1: remark:     Occupancy [waves/SIMD]: 2 [-Rpass-analysis=kernel-resource-usage]\n"
           "k.hip:3:1: remark:     LDS Size [bytes/block]: 32768 [-Rpass-analysis=kernel-resource-usage]\n")
    assert parse_resource_remarks(log) == {"gemm_x": {"sgprs": 54, "vgprs": 118, "occupancy": 2, "lds_bytes": 32768}}


@pytest.fixture(scope="module")
def example_reports(tmp_path_factory):
    """Every example kernel for every AMD arch whose toolchain is installed but :data:`CLI_ARCHES` (built through
    the cache)."""
    from ckgen.backends.amd.llvm import find_toolchain
    from ckgen.errors import ToolchainError

    arches = []
    for t in amd_targets():
        try:
            find_toolchain(t)
            if t.name not in CLI_ARCHES:
                arches.append(t.name)
        except ToolchainError:
            pass
    if not arches:
        pytest.skip("no AMD toolchain beside the CLI test's arches")
    out = []
    for ex in EXAMPLES:
        ps = []
        for spec in load_file(ex, default_arches=tuple(arches)):
            if all(get_target(a).vendor != "amd" for a in spec.arches):
                continue  # a block written for NVIDIA targets only (e.g. llama_layer.ck's sm_90 families)
            named = [a for a in arches if a in spec.arches]
            # every installed arch (not only those the example names), where the op plans
            for arch in named if ex.stem in NAMED_ARCHES_ONLY else arches:
                try:
                    ps.append(plan_kernel(spec, arch))
                except ValidationError:
                    assert spec.op != "gemm" or arch == "gfx908", (spec.name, arch)  # every GEMM plans on CDNA2+
        if not ps:  # (an example that names only the CLI test's arches)
            continue
        result = amd_compiler.compile_plans(ex.stem, ps, tmp_path_factory.mktemp(ex.stem), 2)
        out += [result.reports[(p.name, p.arch)] for p in ps]
    return out


def test_occupancy_agrees_with_clang_on_every_example(example_reports):
    """:func:`check_against_clang` for every example kernel on the arches beyond :data:`CLI_ARCHES` (gfx908 and
    gfx950 where their toolchains are installed)."""
    assert example_reports
    for r in example_reports:
        check_against_clang(r)
