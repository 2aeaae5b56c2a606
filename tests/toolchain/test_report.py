"""report: metadata parsing, the main-loop finder, occupancy from Target fields, and reports of real
code objects checked against their metadata notes."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess

import pytest

from ckgen.backends.amd.metadata import kernels_of, merge_kernel_metadata, parse_yaml
from ckgen.backends.amd.report import (
    Insn,
    KernelReport,
    analyze_code_object,
    format_table,
    main_loop,
    occupancy,
)
from ckgen.errors import BuildError
from ckgen.targets import get_target

_DOC = """\
amdhsa.kernels:
  - .agpr_count:     4
    .args:
      - .address_space:  global
        .name:           'a'
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .offset:         8
        .size:           4
        .value_kind:     by_value
    .name:           k1
    .reqd_workgroup_size: [ 256, 1, 1 ]
    .uses_dynamic_stack: false
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - 1
"""


def test_parse_yaml_subset():
    doc = parse_yaml(_DOC)
    k = doc["amdhsa.kernels"][0]
    assert k[".agpr_count"] == 4 and k[".name"] == "k1" and k[".uses_dynamic_stack"] is False
    assert k[".reqd_workgroup_size"] == [256, 1, 1]
    assert k[".args"][0] == {".address_space": "global", ".name": "a", ".offset": 0, ".size": 8,
                             ".value_kind": "global_buffer"}
    assert doc["amdhsa.version"] == [1, 1] and doc["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx942"


def test_merge_kernel_metadata():
    other = _DOC.replace("k1", "k2")
    merged = merge_kernel_metadata([_DOC, other])
    assert [k[".name"] for k in kernels_of(merged)] == ["k1", "k2"]
    assert parse_yaml(merged)["amdhsa.target"] == "amdgcn-amd-amdhsa--gfx942"
    with pytest.raises(BuildError):
        merge_kernel_metadata([_DOC, other.replace("gfx942", "gfx90a")])


def _insn(addr, mnemonic, target=None):
    return Insn(addr, mnemonic, "", target)


def test_main_loop_is_the_loop_with_most_mfma():
    insns = [_insn(0, "s_load_dword"),
             _insn(4, "v_mfma_f32_16x16x16_f16"), _insn(8, "s_cbranch_scc0", 4),          # loop A: 1 mfma
             _insn(12, "v_mfma_f32_32x32x8_f16"), _insn(16, "v_mfma_f32_32x32x8_f16"),
             _insn(20, "s_add_u32"), _insn(24, "s_cbranch_vccnz", 12),                     # loop B: 2 mfma
             _insn(28, "v_mfma_f32_32x32x8_f16"), _insn(32, "s_cbranch_execz", 40),        # forward: no loop
             _insn(36, "s_endpgm")]
    assert main_loop(insns, ("v_mfma",)) == ((12, 24), 2)
    assert main_loop(insns[:2], ("v_mfma",)) == (None, 0)


T90A = get_target("gfx90a")
T908 = get_target("gfx908")


@pytest.mark.parametrize("vgprs,agprs,expect", [
    (16, 0, (8, "max_waves")),     # 512 // 16 = 32, capped at max_waves_per_simd
    (128, 0, (4, "vgpr")),         # 512 // 128
    (129, 0, (3, "vgpr")),         # rounds up to 136: 512 // 136 = 3
    (70, 64, (3, "vgpr")),         # roundup(70, 4) + 64 = 136
    (256, 256, (1, "vgpr")),       # the whole unified file
])
def test_occupancy_unified_vgpr_file(vgprs, agprs, expect):
    vfile = (-(-vgprs // 4) * 4 + agprs) if agprs else vgprs
    assert occupancy(T90A, vgprs, agprs, vfile, 40, 0, 256) == expect


def test_occupancy_separate_files_and_other_limits():
    assert occupancy(T908, 128, 0, 128, 40, 0, 256) == (T908.vgprs_per_simd_lane // 128, "vgpr")
    # gfx908: AGPRs live in their own file; 200 AGPRs limit on their own
    assert occupancy(T908, 32, 200, 200, 40, 0, 256)[1] == "agpr"
    # .sgpr_count includes VCC / FLAT_SCRATCH / XNACK_MASK: up to 102 + 6 run; blocks of 16 out of 800
    assert occupancy(T90A, 32, 0, 32, 106, 0, 256) == (7, "sgpr")
    assert occupancy(T90A, 32, 0, 32, T90A.sgprs + T90A.sgpr_extra_max + 1, 0, 256) == (0, "sgpr")
    # LDS: 40 KiB per workgroup -> 1 group of 4 waves per CU -> 1 wave per SIMD
    assert occupancy(T90A, 32, 0, 32, 40, 40960, 256) == (1, "lds")
    assert occupancy(T90A, 32, 0, 32, 40, 8192, 256) == (8, "max_waves")   # 8 groups x 4 waves / 4 SIMDs
    assert occupancy(T90A, 32, 0, 32, 40, T90A.lds_bytes + 1, 256) == (0, "lds")
    small_lds = dataclasses.replace(T90A, lds_bytes_per_cu=16384)
    assert occupancy(small_lds, 32, 0, 32, 40, 8192, 256) == (2, "lds")


def _metadata_fields(tc, co) -> dict[str, dict[str, int]]:
    """name -> integer fields, read with regexes straight from llvm-readelf (independent of parse_yaml)."""
    text = subprocess.run([str(tc.readelf), "--notes", str(co)], capture_output=True, text=True).stdout
    out: dict[str, dict[str, int]] = {}
    for block in re.split(r"\n  - ", text.split("amdhsa.kernels:")[1].split("amdhsa.target")[0]):
        if not block.strip():
            continue
        fields = dict(re.findall(r"^ {0,4}(\.[a-z_]+):\s+(\d+)\s*$", block, re.MULTILINE))
        name = re.search(r"^ {4}\.name:\s+(\S+)", block, re.MULTILINE).group(1)
        out[name] = {k: int(v) for k, v in fields.items()}
    return out


def test_reports_match_the_metadata(case_library):
    for arch, co in case_library.code_objects.items():
        target, tc = get_target(arch), case_library.toolchains[arch]
        meta = _metadata_fields(tc, co)
        reports = {r.name: r for r in analyze_code_object(co, target, tc)}
        assert sorted(reports) == sorted(meta) == ["case_mfma_bf16", "case_mfma_f16"]
        for name, r in reports.items():
            m = meta[name]
            assert (r.agprs, r.vgpr_file, r.sgprs) == (m[".agpr_count"], m[".vgpr_count"], m[".sgpr_count"])
            assert (r.lds_bytes, r.scratch_bytes) == (m[".group_segment_fixed_size"], m[".private_segment_fixed_size"])
            assert (r.vgpr_spills, r.sgpr_spills) == (m[".vgpr_spill_count"], m[".sgpr_spill_count"])
            assert r.workgroup_size == m[".max_flat_workgroup_size"] and r.wavefront_size == 64
            # the registers the code names fit in what the metadata allocates (unified: VGPRs, then AGPRs)
            assert 0 < r.vgprs <= r.vgpr_file
            if target.unified_vgpr_file and r.agprs:
                assert r.vgpr_file >= -(-r.vgprs // 4) * 4 + r.agprs
            assert (r.waves_per_simd, r.occupancy_limiter) == occupancy(
                target, r.vgprs, r.agprs, r.vgpr_file, r.sgprs, r.lds_bytes, r.workgroup_size)
            assert r.vgpr_spills == r.sgpr_spills == r.scratch_bytes == 0
        f16, bf16 = reports["case_mfma_f16"], reports["case_mfma_bf16"]
        # f16 case: one 16x16x16 MFMA per K step, A staged in 256 half4 of LDS
        assert f16.mfma_total == f16.mfma_in_main_loop == 1 and f16.lds_bytes == 256 * 8
        assert all(m.startswith("v_mfma_f32_16x16x16") for m, _ in f16.mfma)
        # bf16 case: two MFMAs in the loop and one after it
        assert (bf16.mfma_in_main_loop, bf16.mfma_total) == (2, 3) and bf16.lds_bytes == 0
        assert all(m.startswith("v_mfma_f32_32x32x8") for m, _ in bf16.mfma)
        assert bf16.main_loop is not None and bf16.main_loop[0] < bf16.main_loop[1]


def test_report_json_and_table(case_library):
    reports = list(case_library.reports.values())
    for r in reports:
        d = json.loads(r.to_json_text())
        assert d["name"] == r.name and sum(d["mfma"].values()) == r.mfma_total
        assert case_library.resources[(r.name, r.arch)] == d
    table = format_table(reports)
    assert len(table.splitlines()) == 2 + len(reports) and "case_mfma_bf16" in table and "(2/3)" in table


def test_report_validates_itself():
    with pytest.raises(ValueError):
        KernelReport(name="k", arch="gfx942", mfma=(), mfma_total=0, mfma_in_main_loop=1, main_loop=None,
                     vgprs=1, agprs=0, vgpr_file=1, sgprs=1, lds_bytes=0, scratch_bytes=0, vgpr_spills=0,
                     sgpr_spills=0, wavefront_size=64, workgroup_size=64, waves_per_simd=8,
                     occupancy_limiter="max_waves")


def test_report_command_json_on_an_example(toolchain_or_skip, tmp_path, monkeypatch, capsys):
    """``ckgen report --json`` end to end on a shipped example: present, consistent, no spills."""
    from pathlib import Path

    from ckgen import config
    from ckgen.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "gemm_f32.ck"
    if not example.exists():
        pytest.skip("examples/gemm_f32.ck not in this checkout")
    monkeypatch.setenv("CKGEN_CACHE_DIR", str(tmp_path / "cache"))
    config.reload()
    try:
        assert main(["report", str(example), "--arch", "gfx942", "--json", "-j", "2"]) == 0
    finally:
        monkeypatch.undo()
        config.reload()
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernels"]
    for k in doc["kernels"]:
        assert k["arch"] == "gfx942" and k["mfma_total"] > 0 and 0 < k["mfma_in_main_loop"] <= k["mfma_total"]
        assert all(m.startswith("v_mfma_") for m in k["mfma"])
        assert k["vgpr_spills"] == k["sgpr_spills"] == k["scratch_bytes"] == 0
        assert 0 < k["waves_per_simd"] <= get_target("gfx942").max_waves_per_simd


def test_each_installed_clang_builds_and_reports(tmp_path, monkeypatch, case_cache):
    """Every clang here (19 and 22) builds the cases; where it uses AGPRs (clang-19 does), the metadata's
    VGPR file is exactly roundup(arch VGPRs, 4) + AGPRs on the unified-file targets."""
    import shutil

    from ckgen import config
    from ckgen.backends.amd.host_library import build_amd_library
    from ckgen.backends.amd.llvm import clear_cache

    from .conftest import case_kernels, launcher_source

    clangs = [c for c in ("clang++-19", "clang++-22") if shutil.which(c)]
    if not clangs:
        pytest.skip("no versioned clang++ installed")
    saw_agprs = False
    for clang in clangs:
        monkeypatch.setenv("CKGEN_CLANG", clang)
        config.reload()
        clear_cache()
        try:
            r = build_amd_library("cases", case_kernels(), launcher_source(), ["gfx90a", "gfx942"],
                                  tmp_path / clang, 2, cache=case_cache)
        finally:
            monkeypatch.undo()
            config.reload()
            clear_cache()
        assert {tc.major for tc in r.toolchains.values()} == {int(clang.rsplit("-", 1)[1])}
        for (name, arch), rep in r.reports.items():
            assert get_target(arch).unified_vgpr_file
            if rep.agprs:
                saw_agprs = True
                assert rep.vgpr_file == -(-rep.vgprs // 4) * 4 + rep.agprs, (clang, name, arch)
            else:
                assert rep.vgpr_file == rep.vgprs, (clang, name, arch)
    if "clang++-19" in clangs:
        assert saw_agprs  # clang-19 puts these accumulators in AGPRs: the rule above was exercised
