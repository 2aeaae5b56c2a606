"""Quantized outputs with f32 scales (int8, and the fp8 dtypes of ckgen/blocks/fp8.h): the float64 reference every
op writing them shares, and the group size of per-group scales.

A row (or a group of :data:`GROUP` consecutive columns of a row) is quantized symmetrically: ``amax`` = max |y|
over it, ``scale = amax / qmax`` (f32; 1 where amax is 0) and ``q = y * (qmax / amax)`` (0 where amax is 0),
``qmax`` = 127 for int8 and the fp8 dtype's largest finite value (448 e4m3fn, 57344 e5m2, 240 e4m3fnuz, 57344
e5m2fnuz). Device code: ckgen/blocks/quant.h. MX outputs (OCP microscaling: an E8M0 power-of-two scale per block
of :data:`MX_GROUP` columns, fp8 or fp4 elements): :func:`mx_quantized_values`, device code ckgen/blocks/mx_quant.h.
"""

from __future__ import annotations

import numpy as np

from ckgen.ir.abi import Arg, ArgKind
from ckgen.ir.arrays import FP4_VALUES, to_float64, to_fp4, to_fp8
from ckgen.ir.types import DType

#: the columns of one scale group: the K block of the matrix multiply's ``scale_a = block(128)`` (one f32 per row and
#: 128 K)
GROUP = 128
#: the columns of one MX block (OCP microscaling: one E8M0 scale per 32 values, a matrix product's ``scale_a = mx(32)``)
MX_GROUP = 32
#: the exponent of each MX element type's largest value (OCP MX v1.0: the shared scale is 2^(floor(log2 amax) - it))
MX_EMAX = {DType.E4M3FN: 8, DType.E5M2: 15, DType.E2M1FN_X2: 2}
#: the MX element dtypes (``quant = mx(32)`` outputs): OCP fp8, or fp4 pairs
MX_DTYPES = tuple(MX_EMAX)
#: the DSL's word for MX scales
MX_WORD = f"mx({MX_GROUP})"


def qmax(dt: DType) -> float:
    """The largest magnitude a quantized ``dt`` takes (127 for i8, the fp8 dtype's largest finite value)."""
    return 127.0 if dt == DType.I8 else dt.fp8.max


def quantized_values(y: np.ndarray, dt: DType, group: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(scales, q) of float64 rows ``y`` (last axis) quantized to ``dt`` (i8 or fp8), one scale per row (``group``
    0: shape ``y.shape[:-1]``) or per ``group`` columns (``y.shape[:-1] + (ceil(cols / group),)``, the last group
    shorter). int8 q is unrounded (in steps: the kernels round once, within half a step). fp8 q is computed as the
    kernels do (an f32 multiplier qmax / amax, an f32 product: exact ties at fp8 midpoints are common for bf16
    inputs, and f32 decides their side), then rounded to the nearest fp8 value, ties to even, saturating
    (:func:`ckgen.ir.arrays.to_fp8`), as float64."""
    top = qmax(dt)
    rows, cols = y.shape[:-1], y.shape[-1]
    g = group or max(cols, 1)
    n = -(-cols // g)
    padded = np.zeros((*rows, n * g))
    padded[..., :cols] = y
    amax = np.abs(padded.reshape(*rows, n, g)).max(axis=-1)
    safe = np.where(amax > 0, amax, 1.0)
    if dt.fp8 is None:
        q = y * np.repeat(np.where(amax > 0, top / safe, 0.0), g, axis=-1)[..., :cols]
    else:
        mul = np.where(amax > 0, np.float32(top) / safe.astype(np.float32), np.float32(0.0)).astype(np.float32)
        q = y.astype(np.float32) * np.repeat(mul, g, axis=-1)[..., :cols]
        q = to_float64(to_fp8(q, dt), dt)
    scales = np.where(amax > 0, amax / top, 1.0)
    return (scales if group else scales.reshape(rows)), q


def mx_quantized_values(y: np.ndarray, dt: DType) -> tuple[np.ndarray, np.ndarray]:
    """(scales, q) of float64 rows ``y`` quantized to MX ``dt`` (e4m3fn, e5m2 or fp4 pairs) in blocks of
    :data:`MX_GROUP` columns, as ckgen/blocks/mx_quant.h does: per block e = floor(log2 amax) - emax + 127, clamped
    to 0..254 (127 for an all-zero block), the scale 2^(e - 127) (``scales``: its value, ``y.shape[:-1] +
    (ceil(cols / 32),)``), and q the element nearest y / scale (ties to even, saturating), as float64 values."""
    rows, cols = y.shape[:-1], y.shape[-1]
    n = -(-cols // MX_GROUP)
    padded = np.zeros((*rows, n * MX_GROUP))
    padded[..., :cols] = y
    amax = np.abs(padded.reshape(*rows, n, MX_GROUP)).max(axis=-1).astype(np.float32).astype(np.float64)
    exp = np.frexp(np.where(amax > 0, amax, 1.0))[1] - 1          # floor(log2 amax) (frexp: amax = m 2^x, m in [.5, 1))
    e = np.where(amax > 0, np.clip(exp - MX_EMAX[dt] + 127, 0, 254), 127)
    scales = np.exp2(e - 127.0)
    v = y * np.repeat(1.0 / scales, MX_GROUP, axis=-1)[..., :cols]
    q = FP4_VALUES[to_fp4(v)] if dt == DType.E2M1FN_X2 else to_float64(to_fp8(v, dt), dt)
    return scales, q


def quantized_rows(y: np.ndarray, dt: DType, group: int, mx: bool) -> tuple[np.ndarray, np.ndarray]:
    """(scales, q) of an op's quantized output: :func:`mx_quantized_values` with ``mx`` (``quant = mx(32)``), else
    :func:`quantized_values` per row (``group`` 0) or per ``group`` columns."""
    return mx_quantized_values(y, dt) if mx else quantized_values(y, dt, group)


def group_scales_arg(y: DType, group: int, mx: bool) -> Arg:
    """The ABI's ``y_scale`` of a y quantized per ``group`` columns of a row: rows x groups, row stride
    ``stride_scale``; f32 amax / qmax (a matrix product's ``scale_a = block(128)``), or E8M0 bytes with ``mx`` (its
    ``scale_a = mx(32)``)."""
    if mx:
        return Arg("y_scale", ArgKind.TENSOR, doc=f"rows x groups E8M0 bytes: 2^(floor(log2 amax) - emax) of each "
                   f"{group} columns of a row (127 for an all-zero group): a matrix product's scale_a = mx(32)",
                   dtype=DType.E8M0, role="out", dims=("rows", "groups"), strides=("stride_scale", 1))
    return Arg("y_scale", ArgKind.TENSOR, doc=f"rows x groups floats: amax / {qmax(y):g} of each {group} columns of "
               "a row (1 for an all-zero group): a matrix product's scale_a = block(128)", dtype=DType.F32, role="out",
               dims=("rows", "groups"), strides=("stride_scale", 1))
