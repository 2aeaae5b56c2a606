"""The swizzled LDS layouts (ckgen/lower/lds_banks.py, ckgen/lower/lds.py, ckgen/ops/gemm/lds_layout.py): exact bytes, bijective maps, and
zero bank conflicts under the bank model for every instruction, dtype, layout and arch of a sweep; the bank
model itself on hand-computed patterns."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ckgen.frontend import load_text
from ckgen.lower import lds_banks as L
from ckgen.lower.lds import MAX_TABLE, LdsOperandLayout
from ckgen.lower.pipeline import plan_kernel
from ckgen.ops.gemm import lds_layout as G
from ckgen.targets import get_target


def spec(body: str, arch: str = "gfx942"):
    return load_text(f"target {arch}\nkernel k {{ {body} }}\n", "t.ck")[0]


def _all_offsets(lay: LdsOperandLayout) -> list[int]:
    return [lay.offset(r, k) for r in range(lay.rows) for k in range(lay.tile_k)]


# ------------------------------------------------------------------------------------------- bank model
def _group(kind: str, nbytes: int, addrs: list[int]) -> L.AccessGroup:
    q = np.array([addrs]) // nbytes
    inner = np.array([addrs]) % nbytes
    return L.AccessGroup(kind, nbytes, q, inner)


@pytest.mark.parametrize("nbytes,stride,want", [
    (4, 4, 0),            # consecutive dwords: one per bank
    (4, 128, 31 * 2),     # every lane on bank 0: 2 phases of 32 lanes, 32-way each
    (4, 0, 0),            # all lanes on one dword: a broadcast
    (8, 8, 0),            # 16 lanes per phase x 8 bytes = 128 bytes
    (8, 16, 4 * 1),       # 16 lanes over 256 bytes: 2-way in each of 4 phases
    (16, 16, 0),          # ds_read_b128, 8 lanes per phase
    (16, 32, 8 * 1),      # 8 lanes over 256 bytes: 2-way in each of 8 phases
])
def test_bank_model_on_strided_patterns(nbytes, stride, want):
    bank = L.BankModel(32, 4)
    addrs = [lane * stride for lane in range(64)]
    g = _group("read", nbytes, addrs)
    got = L.extra_cycles([g], nbytes, 0, (0,) * MAX_TABLE, bank)["read"]
    assert got == want


def test_gfx950_phases_are_twice_as_wide():
    """64 banks: a ds_read_b128 phase is 16 lanes, so a 256-byte stride that is 2-way on 32 banks is 4-way."""
    addrs = [lane * 32 for lane in range(64)]
    g = _group("read", 16, addrs)
    assert L.extra_cycles([g], 16, 0, (0,) * MAX_TABLE, L.BankModel(32, 4))["read"] == 8
    assert L.extra_cycles([g], 16, 0, (0,) * MAX_TABLE, L.BankModel(64, 4))["read"] == 4
    assert L.bank_model(get_target("gfx950")).line_bytes == 256 and L.bank_model(get_target("gfx942")).line_bytes == 128


# --------------------------------------------------------------------------------------- layouts
def test_layout_is_a_bijection_onto_exact_bytes():
    plan = plan_kernel(spec("A = f16 col B = f16 row C = f16 row tile = 128x64x32 waves = 2x2"), "gfx942")
    for lay in (plan.body.lds.a, plan.body.lds.b):
        offs = _all_offsets(lay)
        assert sorted(offs) == list(range(lay.rows * lay.tile_k))
        # a granule's elements stay contiguous
        for r, k0 in itertools.product(range(0, lay.rows, 7), range(0, lay.tile_k, lay.granule)):
            base = lay.offset(r, k0)
            assert [lay.offset(r, k0 + e) for e in range(lay.granule)] == list(range(base, base + lay.granule))
    assert plan.body.lds.total_bytes == 2 * (128 + 64) * 32 * 2


def test_ck_256x256x32_fits_in_64_kib():
    """CK's CShuffleV2 256x256x32 f16/bf16 tuples (2x2 waves of 4x4 32x32 XDL ops, double-buffered): their LDS
    is exactly 64 KiB, and they plan whole (their 256 accumulators per lane fill the AGPR file: the rung-1 test in
    test_registers.py compiles them without spills), as does the same tile on 2x4 waves."""
    from ckgen.ops.gemm.plan import PASSES, GemmDraft, estimate_registers

    for dt in ("f16", "bf16"):
        s = spec(f"A = {dt} row B = {dt} col C = {dt} row tile = 256x256x32 waves = 2x2 instr = 32x32x8 lds_buffers = 2")
        d = GemmDraft(s, get_target("gfx942"))
        for step in PASSES[:PASSES.index(estimate_registers)]:
            step(d)
        assert d.lds.total_bytes == 65536 == get_target("gfx942").lds_bytes
        assert plan_kernel(s, "gfx942").body.registers.accumulators == 256
        plan = plan_kernel(spec(f"A = {dt} row B = {dt} col C = {dt} row tile = 256x256x32 waves = 2x4 "
                                "instr = 32x32x8 lds_buffers = 2"), "gfx942")
        assert plan.body.lds.total_bytes == 65536


def test_the_xor_table_lands_in_the_cfg():
    from ckgen.codegen import render_kernel

    plan = plan_kernel(spec("A = f16 row B = f16 row C = f16 row tile = 128x128x32 waves = 2x2"), "gfx942")
    text = render_kernel(plan)
    assert f"kLdsASwizzle = {plan.body.lds.a.packed_table:#x}ull" in text
    assert f"kLdsBMnLanes = {plan.body.lds.b.mn_lanes};" in text and f"kLdsBMnPiece = {plan.body.lds.b.mn_piece};" in text
    assert "kLdsAStride" not in text


SWEEP = [
    # (arch, dtype, instr, tile, waves)
    ("gfx942", "f16", "32x32x8", "128x128x32", "2x2"), ("gfx942", "f16", "16x16x16", "128x128x32", "2x2"),
    ("gfx942", "f16", "32x32x8", "256x128x32", "2x4"), ("gfx942", "f16", "16x16x16", "64x64x64", "1x4"),
    ("gfx942", "bf16", "32x32x8", "128x256x32", "2x2"), ("gfx942", "f32", "16x16x4", "64x64x16", "2x2"),
    ("gfx942", "f32", "32x32x2", "128x64x16", "2x2"), ("gfx942", "i8", "32x32x16", "128x128x64", "2x2"),
    ("gfx942", "i8", "16x16x32", "64x128x128", "2x2"), ("gfx90a", "i8", "32x32x8", "128x128x64", "2x2"),
    ("gfx908", "bf16", "32x32x4", "64x64x32", "1x2"), ("gfx950", "f16", "32x32x16", "256x256x64", "2x4"),
    ("gfx950", "f16", "16x16x32", "128x128x64", "2x2"), ("gfx950", "bf16", "32x32x8", "128x128x32", "2x2"),
    ("gfx950", "i8", "16x16x64", "128x128x128", "2x2"), ("gfx950", "f32", "16x16x4", "64x64x32", "2x2"),
]


@pytest.mark.parametrize("arch,dt,instr,tile,waves", SWEEP, ids=["-".join(c) for c in SWEEP])
@pytest.mark.parametrize("la,lb", [("row", "col"), ("col", "row"), ("row", "row"), ("col", "col")])
def test_swizzled_tiles_are_conflict_free(arch, dt, instr, tile, waves, la, lb):
    c = "i32" if dt == "i8" else dt
    plan = plan_kernel(spec(f"A = {dt} {la} B = {dt} {lb} C = {c} row tile = {tile} waves = {waves} instr = {instr}",
                            arch), arch)
    for lay in (plan.body.lds.a, plan.body.lds.b):
        assert (lay.read_conflicts, lay.write_conflicts) == (0, 0), (lay, plan.body.lds)
    # and the model agrees when re-run from the plan's shapes (the figures are not just copied)
    bank = L.bank_model(plan.target)
    for shape, lay in zip(G.gemm_operand_shapes(plan.target, plan.spec.params, plan.body.instr, plan.body.vec), (plan.body.lds.a, plan.body.lds.b),
                          strict=True):
        groups = L.operand_accesses(shape, lay.granule, lay.mn_lanes, bank.wave, lay.mn_piece)
        assert L.extra_cycles(groups, lay.granule * lay.elem_bytes, lay.low_bits, lay.table, bank) == {"read": 0, "write": 0}


@pytest.mark.parametrize("dt,tile", [("e4m3fn", "128x128x64"), ("e5m2", "64x128x128"), ("e2m1fn_x2", "128x128x128")])
def test_mx_fragments_are_read_as_their_runs(dt, tile):
    """The block-scaled MFMA (gfx950, mx(32)) reads a lane's fp8 fragment as two runs of 16 bytes, 32 K's apart
    (fp4 pairs: one run of 16 bytes): the model counts those reads, each run lies in one granule, and the layout
    is conflict-free. Modelled as one 32-byte read per lane, the chosen layout left 2-way conflicts on every
    fp8 fragment read (the emulator's bank counter saw 384 extra cycles per K tile in 128x128x64 on 2x2 waves)."""
    plan = plan_kernel(spec(f"A = {dt} row B = {dt} col C = bf16 row tile = {tile} waves = 2x2 "
                            "scale_a = mx(32) scale_b = mx(32)", "gfx950"), "gfx950")
    bank = L.bank_model(plan.target)
    from ckgen.ops.gemm.fp4 import storage_view
    params, instr = storage_view(plan.spec.params, plan.body.instr)
    runs = 1 if dt == "e2m1fn_x2" else 2
    assert instr.frag_runs == runs
    for shape, lay in zip(G.gemm_operand_shapes(plan.target, params, instr, plan.body.vec),
                          (plan.body.lds.a, plan.body.lds.b), strict=True):
        reads = L.operand_accesses(shape, lay.granule, lay.mn_lanes, bank.wave, lay.mn_piece)[0]
        assert reads.nbytes == 16 and lay.granule * lay.elem_bytes % 16 == 0
        assert len(reads.q) == runs * (shape.wave_tile // shape.instr_rows) * (shape.tile_k // shape.instr_k) * \
            shape.waves_along
        assert (lay.read_conflicts, lay.write_conflicts) == (0, 0), lay


def test_unswizzled_rows_conflict():
    """The same tiles without the XOR (plain_layout) conflict on the fragment reads: the model sees it."""
    plan = plan_kernel(spec("A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2 instr = 32x32x8"),
                       "gfx942")
    bank = L.bank_model(plan.target)
    a, _ = G.gemm_operand_shapes(plan.target, plan.spec.params, plan.body.instr, plan.body.vec)
    plain = L.plain_layout(a)
    groups = L.operand_accesses(a, plain.granule, 1, 64, 1)
    cost = L.extra_cycles(groups, plain.granule * 2, 0, plain.table, bank)
    # 16 lanes per ds_read_b64 phase on rows 64 bytes apart: 8-way (7 extra cycles) in each of 4 phases,
    # for 2 rows x 4 k-steps per wave, 4 waves
    assert cost["read"] == 7 * 4 * (2 * 4) * 4 and cost["write"] == 0


def test_nvidia_targets_keep_plain_tiles():
    plan = plan_kernel(spec("A = f16 row B = f16 col C = f16 row tile = 128x128x32 waves = 2x2", "sm_90"), "sm_90")
    assert plan.body.lds.a.low_bits == 0 and set(plan.body.lds.a.table) == {0}
