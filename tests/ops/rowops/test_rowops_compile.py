"""Ladder rung 1 for the row ops: every DSL kernel of tests/ops/rowops/harness.py, planned for gfx942, gfx90a and
gfx950, compiled into one library by ckgen's own toolchain (``ckgen.backends.amd.compiler.compile_plans``: the production flags, the cache,
the clang ckgen picks: the newest installed, at least the target's minimum), and its sm_90 plan built by nvcc
(``ckgen.backends.nvidia.compiler``).

Per (kernel, AMD arch), from the code object's disassembly and metadata (``ckgen.backends.amd.report``):
* the cross-lane operations of the planned row reduction (threads_per_row T lanes): DPP ``quad_perm`` from
  T = 2, ``row_half_mirror`` from 8, ``row_mirror`` from 16, ``ds_swizzle_b32`` from 32, ``v_readlane_b32`` from
  64, and rows over several waves exchange through LDS (ds_write / ds_read, s_barrier); a row of one thread
  has none; the row cache (row_in = shared) keeps 16-byte slots in LDS (ds_write_b128 / ds_read_b128) and a row
  within a wave has no barrier;
* 16-byte vector loads of x (16-byte vectors) (``global_load_dwordx4``) and vector stores of y of ``vec`` elements;
* no scratch (no scratch_/buffer_ accesses, .private_segment_fixed_size 0), no VGPR or SGPR spills;
* LDS == the plan's, workgroup == the plan's threads, wave64.
nvcc: every kernel builds for sm_90a with no spill stores or loads, no stack frame (or a spill ptxas traded for occupancy,
checked by building the plan bounded for it: harness.assert_nv_spill_free), within its register budget.
"""

from __future__ import annotations

import re

import pytest

from ckgen.backends.amd.report import disassemble
from ckgen.ops.rowops.registers import register_budget
from tests.ops.rowops import harness as H

STORE = {2: "global_store_short", 4: "global_store_dword", 8: "global_store_dwordx2", 16: "global_store_dwordx4",
         32: "global_store_dwordx4"}
PARAMS = [(n, a) for a in H.AMD_ARCHES for n in H.NAMES]


@pytest.fixture(scope="module")
def disasm(amd_build) -> dict:
    """(kernel, arch) -> (mnemonics with operands, the kernel's report, its plan)."""
    result, plans = amd_build
    if result is None:
        pytest.skip(plans)
    out = {}
    for arch in H.AMD_ARCHES:
        funcs = disassemble(result.toolchains[arch].objdump, result.code_objects[arch])
        for name in H.NAMES:
            insns = funcs.get(name, [])
            out[(name, arch)] = ([(i.mnemonic, i.operands) for i in insns], result.reports[(name, arch)],
                                 plans[(name, arch)])
    return out


def cross_lane_ops(row_threads: int) -> list[str]:
    """What a butterfly over ``row_threads`` lanes of a wave64 needs (reduce.h on xlane_amd.h)."""
    want = []
    for lanes, op in ((2, "quad_perm:"), (8, "row_half_mirror"), (16, "row_mirror"), (32, "ds_swizzle_b32"),
                      (64, "v_readlane_b32")):
        if row_threads >= lanes:
            want.append(op)
    return want


@pytest.mark.parametrize("name,arch", PARAMS, ids=[f"{n}-{a}" for n, a in PARAMS])
def test_code_object(disasm, name: str, arch: str) -> None:
    insns, rep, p = disasm[(name, arch)]
    assert insns, f"{name} missing from the {arch} disassembly"
    b = p.body
    text = "\n".join(f"{m} {o}" for m, o in insns)
    ops = {m for m, _ in insns}
    for w in cross_lane_ops(min(b.threads_per_row, 64)):
        assert w in text, f"{w} missing: a {b.threads_per_row}-lane row reduction needs it"
    if b.threads_per_row == 1:
        assert not any(w in text for w in ("quad_perm:", "row_mirror", "ds_swizzle", "v_readlane")), \
            "a row of one thread needs no cross-lane operation"
    if b.waves_per_row > 1:
        assert "s_barrier" in ops and any(o.startswith("ds_write") for o in ops) and any(
            o.startswith("ds_read") for o in ops), "rows over several waves reduce through LDS"
    elif b.cache_tiles:
        assert "s_barrier" not in ops, "a row within a wave needs no barrier (each thread reads its own cache slots)"
    else:
        assert not any(o.startswith(("ds_write", "ds_read")) for o in ops), "a row within a wave needs no LDS"
    r = p.spec.params.row
    if b.cache_tiles and (b.vec * r.res_dtype.bytes) % 16 == 0:
        assert {"ds_write_b128", "ds_read_b128"} <= ops, "the row cache in 16-byte slots"
    if b.vec * r.x.bytes == 16:
        assert "global_load_dwordx4" in ops, "16-byte vector loads of x"
    assert STORE[b.vec * r.y.bytes] in ops, f"vector stores of {b.vec} x {r.y.value}"
    assert not any(o.startswith(("scratch_", "buffer_store", "buffer_load")) for o in ops), "scratch access"
    assert rep.vgpr_spills == 0 and rep.sgpr_spills == 0 and rep.scratch_bytes == 0, rep
    assert rep.lds_bytes == b.lds_bytes
    assert rep.workgroup_size == b.threads and rep.wavefront_size == 64


def test_nvcc_build_has_no_spills(nv_build, tmp_path) -> None:
    lib, reports = nv_build
    if lib is None:
        pytest.skip(reports)
    plans = [H.plan(name, "sm_90") for name in H.NAMES]
    H.assert_nv_entries_spill_free(plans, reports, tmp_path)  # (or a spill ptxas traded for occupancy, checked)
    for p in plans:
        for e in p.entries:
            r = reports[e.name]
            assert r.registers <= register_budget(p.target, p.body.threads), (e.name, r.registers)
            assert r.threads == p.body.threads
    assert any(len(p.entries) == 2 for p in plans)  # (a few-rows entry among them)


def _ptx_entry(lib, name: str) -> str:
    ptx = (lib.entry / f"{lib.stem}_sm_90.ptx").read_text()
    body = re.split(r"^\s*\.(?:visible\s+)?\.?entry\s+", ptx, flags=re.M)
    return next(b for b in body if b.startswith(name + "("))


def test_row_cache_reads_bias_through_the_l2(nv_build) -> None:
    """A row-cache kernel with weight and bias reads bias with ld.global.cg (the L1 beside the cache keeps the
    weight: rowops_forward.h, kBiasL1); a single-pass kernel reads both through the L1 (plain ld.global)."""
    lib, reports = nv_build
    if lib is None:
        pytest.skip(reports)
    cached, single = _ptx_entry(lib, "ln_bf16_lds"), _ptx_entry(lib, "ln_bf16_wb")
    assert H.plan("ln_bf16_lds", "sm_90").body.cache_tiles > 0 and H.plan("ln_bf16_wb", "sm_90").body.cache_tiles == 0
    assert "ld.global.cg.v4.u32" in cached
    assert "ld.global.cg" not in single and "ld.global.v4.u32" in single
