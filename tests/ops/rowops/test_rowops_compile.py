"""Ladder rung 1 for the row ops: every case in tests/ops/rowops/cases compiles for gfx942, gfx90a (clang-19)
and gfx950 (clang-22) with ckgen's device flags (ckgen/toolchain/amdgpu.py), and for sm_90a with nvcc.

Per (case, arch), from the disassembly and the code object's metadata:
* cross-lane ops of the row reduction: DPP quad_perm always (rows of >= 2 lanes), row_half_mirror / row_mirror
  from 8 / 16 lanes, ds_swizzle_b32 from 32 lanes, v_readlane_b32 for a whole wave; rows over several waves
  also exchange through LDS (ds_write / ds_read) with s_barrier;
* 16-byte vector loads of x (global_load_dwordx4) and vector stores of y of kVec elements;
* no scratch (.private_segment_fixed_size 0, no scratch_/buffer_ accesses), no VGPR/SGPR spills;
* .group_segment_fixed_size == Cfg::kLdsBytes, .max_flat_workgroup_size == kThreads, wave64.
nvcc: every kernel builds for sm_90a with 0 bytes of spill stores/loads and no stack frame (-Xptxas -v).
"""

from __future__ import annotations

import re

import pytest

from tests.ops.rowops import harness as H

ELEM = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1}
STORE = {4: "global_store_dword", 8: "global_store_dwordx2", 16: "global_store_dwordx4", 32: "global_store_dwordx4"}
PARAMS = [(n, a) for n in H.CASE_NAMES for a in H.AMD_ARCHES]


def built(amd_builds, arch: str) -> H.AmdBuild:
    b = amd_builds[arch]
    assert b.ok, f"the rowops cases failed to build for {arch}:\n{b.log}"
    return b


@pytest.mark.parametrize("name,arch", PARAMS, ids=[f"{n}-{a}" for n, a in PARAMS])
def test_code_object(amd_builds, emu_cases, name: str, arch: str) -> None:
    b = built(amd_builds, arch)
    info = emu_cases.info[name]      # the Cfg as compiled for wave64 (the emulator's build is wave64 too)
    dis = H.kernel_disasm(b.disasm, name)
    assert dis, f"{name} missing from the {arch} disassembly"
    ops = set(re.findall(r"^\s+(\w+)", dis, re.M))

    want = ["quad_perm:"]
    if info.row_threads >= 8:
        want.append("row_half_mirror")
    if info.row_threads >= 16:
        want.append("row_mirror")
    if info.row_threads >= 32:
        want.append("ds_swizzle_b32")
    if info.row_threads >= 64:
        want.append("v_readlane_b32")
    for w in want:
        assert w in dis, f"{w} missing: a {info.row_threads}-lane row reduction needs it"
    if info.lds_bytes:
        assert {"s_barrier", "ds_read_b32", "ds_write_b32"} <= ops or {"s_barrier", "ds_read_b32", "ds_write_b32"} & ops \
            >= {"s_barrier"}, "cross-wave reduction through LDS"
        assert any(o.startswith("ds_write") for o in ops) and any(o.startswith("ds_read") for o in ops)

    assert "global_load_dwordx4" in ops, "16-byte vector loads of x"
    assert STORE[info.vec * ELEM[info.tout]] in ops, f"vector stores of {info.vec} x {info.tout}"
    assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"

    md = H.kernel_metadata(b.notes).get(name)
    assert md is not None, f"no metadata for {name}"
    assert md["vgpr_spill_count"] == "0" and md["sgpr_spill_count"] == "0", md
    assert md["private_segment_fixed_size"] == "0", md
    assert int(md["group_segment_fixed_size"]) == info.lds_bytes
    assert int(md["max_flat_workgroup_size"]) == info.threads
    assert md["wavefront_size"] == "64"


def test_cuda_build_has_no_spills(nv_build) -> None:
    ok, log = nv_build
    assert ok, f"nvcc build of the rowops cases failed:\n{log}"
    res = H.ptxas_resources(log)
    assert set(res) == set(H.CASE_NAMES), sorted(set(H.CASE_NAMES) ^ set(res))
    for name, r in res.items():
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0 and r["stack"] == 0, (name, r)
        assert r["registers"] <= 128, (name, r)
