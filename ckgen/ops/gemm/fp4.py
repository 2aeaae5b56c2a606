"""MXFP4 GEMMs: A and B of OCP FP4 (E2M1) values packed two per byte along K (``e2m1fn_x2``), with ``mx(32)``
scales, on targets with the block-scaled MFMA (its table: ``targets.amd.MX_INSTRUCTIONS``).

Contract:

- :func:`check_fp4` is the dtype pass for a kernel whose A or B is ``e2m1fn_x2``: both operands fp4, A row-major
  and B column-major (K contiguous: the bytes hold consecutive K's), f32 accumulation, a C of ``c_dtypes``,
  ``mx(32)`` scales on both, a target with the block-scaled MFMA. Each refusal names the parameter and the legal
  values. Mixed fp4 / fp8 operands are refused: no published lane layout was found for them.
- The kernel body works in storage elements (bytes) along K: :func:`storage_k` is the values per byte along K (2
  for fp4, 1 otherwise); :func:`storage_view` turns a tile config and an instruction into the shapes the body
  moves (K tile and instruction K in bytes), for the vector widths, the LDS layout and the register estimate. The
  plan keeps the kernel's own tile and instruction (in values) for reports and the cost model.
"""

from __future__ import annotations

from dataclasses import replace

from ckgen.ir.target import MatrixInstr
from ckgen.ir.types import DType, Layout
from ckgen.targets.amd import FEATURE_MFMA_SCALE_F8F6F4, MX_INSTRUCTIONS

FP4 = DType.E2M1FN_X2


def has_scaled_mfma(t) -> bool:
    return FEATURE_MFMA_SCALE_F8F6F4 in t.features and bool(MX_INSTRUCTIONS.get(t.name))


def check_fp4(d, made: list[DType], c_dtypes: dict[DType, tuple[DType, ...]]) -> bool:
    """The dtype pass of an fp4 kernel (module docstring); False when neither A nor B is fp4. ``made``: the A
    dtypes the target's GEMM generates otherwise (named when the target has no fp4)."""
    g, t = d.g, d.target
    if FP4 not in (g.a.dtype, g.b.dtype):
        return False
    if not has_scaled_mfma(t):
        legal = ", ".join(x.value for x in made)
        raise d.fail("A" if g.a.dtype == FP4 else "B", FP4.value, legal,
                     f"fp4 operands need the block-scaled MFMA (f8f6f4, gfx950); {t.name} has none")
    for param, x in (("A", g.a), ("B", g.b)):
        if x.dtype != FP4:
            raise d.fail(param, x.dtype.value, FP4.value, f"{'B' if param == 'A' else 'A'} is fp4: fp4 pairs only "
                         "with fp4 (no published lane layout for mixed fp4 / fp8 operands)")
    for param, x, want, what in (("A", g.a, Layout.ROW, "row-major"), ("B", g.b, Layout.COL, "column-major")):
        if x.layout != want:
            raise d.fail(param, f"{FP4.value} {x.layout.value}", f"{FP4.value} {want.value}",
                         f"fp4 values are packed two per byte along K: {param} must be {what} (K contiguous)")
    if g.acc != DType.F32:
        raise d.fail("acc", g.acc.value, "f32", "the block-scaled MFMA accumulates in f32")
    if g.c.dtype not in c_dtypes[DType.F32]:
        legal = ", ".join(x.value for x in c_dtypes[DType.F32])
        raise d.fail("C", g.c.dtype.value, legal, "not an output type for f32 accumulation")
    if not g.mx_scaled:
        param = "scale_a" if g.scale_a != "mx" else "scale_b"
        raise d.fail(param, getattr(g, param) or "none", "mx(32)", "fp4 operands take mx(32) scales on both (MXFP4): "
                     "the block-scaled MFMA is the only instruction that reads them")
    return True


def storage_k(g) -> int:
    """Values per storage element along K: 2 for fp4 pairs, 1 otherwise (A and B agree: check_fp4)."""
    return g.a.dtype.pack


def storage_view(params, instr: MatrixInstr | None):
    """``(params, instr)`` with the K tile and the instruction's K in storage elements (unchanged but for fp4,
    whose lane fragment is one run of 16 bytes where fp8's is two runs of 16: ``MatrixInstr.frag_runs``)."""
    pk = storage_k(params.gemm)
    if pk == 1:
        return params, instr
    cfg = params.config
    tile = (cfg.tile[0], cfg.tile[1], cfg.tile[2] // pk)
    if instr is not None:
        instr = replace(instr, k=instr.k // pk, frag_runs=max(1, instr.frag_runs // pk))
    return replace(params, config=replace(cfg, tile=tile)), instr
