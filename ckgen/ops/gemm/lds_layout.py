"""The LDS layouts of a GEMM's A and B tiles on the AMD MFMA body (gemm_mfma.h): each operand tile as the body
moves it, planned by the shared bank model (ckgen/lower/lds_banks.py; the address map: ckgen/lower/lds.py)."""

from __future__ import annotations

from ckgen.ir.types import Layout
from ckgen.lower.lds import LdsOperandLayout
from ckgen.lower.lds_banks import OperandShape, bank_model, plain_layout, plan_operand_layout


def gemm_operand_shapes(target, params, instr, vec: tuple[int, int, int]) -> tuple[OperandShape, OperandShape]:
    """The A and B tiles of a GEMM plan as the MFMA body moves them (A: rows along M; B: rows along N)."""
    g, cfg = params.gemm, params.config
    (tm, tn, tk), (wm, wn), lanes = cfg.tile, cfg.waves, target.wave_size
    threads = wm * wn * lanes
    a = OperandShape(rows=tm, tile_k=tk, elem_bytes=g.a.dtype.bytes, k_contiguous=g.a.layout == Layout.ROW,
                     vec=vec[0], threads=threads, instr_rows=instr.m, instr_k=instr.k,
                     frag_items=instr.a_items(lanes), waves_along=wm, wave_tile=tm // wm,
                     frag_runs=instr.frag_runs)
    b = OperandShape(rows=tn, tile_k=tk, elem_bytes=g.b.dtype.bytes, k_contiguous=g.b.layout == Layout.COL,
                     vec=vec[1], threads=threads, instr_rows=instr.n, instr_k=instr.k,
                     frag_items=instr.b_items(lanes), waves_along=wn, wave_tile=tn // wn,
                     frag_runs=instr.frag_runs)
    return a, b


def plan_gemm_lds(target, params, instr, vec: tuple[int, int, int]) -> tuple[LdsOperandLayout, LdsOperandLayout]:
    """The LDS layouts of a GEMM's A and B tiles on ``target`` (swizzled where the target's body takes it)."""
    a, b = gemm_operand_shapes(target, params, instr, vec)
    if not target.lds_swizzle:
        return plain_layout(a), plain_layout(b)
    bank = bank_model(target)
    return plan_operand_layout(a, bank), plan_operand_layout(b, bank)
