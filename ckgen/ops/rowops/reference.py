"""The row ops' float64 reference and tolerances.

:func:`reference` computes every output of a kernel from its inputs as the device contract states
(``device/rowops_forward.h``): ``s = x + residual`` rounded to the residual's dtype (f32 sum, then one rounding),
the op on ``v = s`` (or ``x``) in float64, and for int8 ``y`` the per-row scale ``amax / 127`` (1 for an all-zero
row) and ``y`` in quantization steps, ``y_f64 * 127 / amax`` *before* rounding: the kernel's ``q`` differs from it
by at most half a step (one rounding), which :data:`TOLERANCES` allows for in the relative norm error. An fp8
``y`` is quantized the same way with its dtype's largest finite value in place of 127, per row or per group of
``quant_group`` columns (``y_scale`` [rows, groups]), and its reference is the fp8 value nearest to ``y * qmax /
amax`` computed as the kernel does (an f32 multiplier ``qmax / amax``, an f32 product: exact ties at fp8
midpoints are common for bf16 inputs, and f32 decides their side), rounded to nearest even and saturating
(``ckgen.ir.arrays.to_fp8``). With ``quant = mx(32)`` the scales are E8M0 powers of two per 32 columns and q
the fp8 (or fp4: ``y = e2m1fn_x2``) value nearest ``y / scale`` (``ckgen.ir.quant.mx_quantized_values``; ``y_scale``
as the scales' values, the E8M0 bytes decoded; an fp4 y as its values, rows x cols, the kernel's bytes unpacked by
``ckgen.ir.arrays.to_float64``); where y itself comes from f32 math (the norms), an element may still land on the
other side of a rounding boundary, one fp8 step, which :data:`TOLERANCES` allows for.
"""

from __future__ import annotations

import numpy as np

from ckgen.ir.arrays import to_bf16, to_float64
from ckgen.ir.plan import KernelPlan
from ckgen.ir.quant import quantized_rows
from ckgen.ir.types import DType
from ckgen.ops.rowops.kinds import KINDS

#: relative norm error allowed per output dtype against float64 (f32 arithmetic, then one rounding of y):
#: i8 is y in quantization steps, one rounding (rms 0.29 steps) against row values whose rms is at least about
#: 1/6 of the row's largest (127 steps): 0.29 / 21 ~ 1.4e-2, allowed 2.5e-2.
TOLERANCES = {DType.F32: 2e-5, DType.F16: 2e-3, DType.BF16: 1e-2, DType.I8: 2.5e-2}
#: fp8 y against the fp8-rounded reference: exact but for an element landing on the other side of a rounding
#: boundary (f32 against float64: rare); a systematic rounding error (truncation: ~3 % rms) is far above
TOLERANCES.update({DType.E4M3FN: 1e-2, DType.E4M3FNUZ: 1e-2, DType.E5M2: 2e-2, DType.E5M2FNUZ: 2e-2})
#: fp4 pairs (quant = mx(32)) compared as values (ckgen.ir.arrays.to_float64 unpacks the nibbles) against the
#: fp4-rounded reference: exact but for a rare element the f32 op puts across a rounding boundary (one code: up to a
#: third of the value), which this allows about one in a thousand of
TOLERANCES[DType.E2M1FN_X2] = 3e-2
#: y_scale: amax / 127 in f32 against float64
SCALE_TOLERANCE = 1e-4
#: rstd (f32 sums of squares and one reciprocal square root) against float64
RSTD_TOLERANCE = 2e-5


def round_to(v: np.ndarray, dt: DType) -> np.ndarray:
    """float64 values rounded to f32, then to ``dt`` (round to nearest even), as float64 again."""
    f = np.asarray(v, np.float64).astype(np.float32)
    if dt == DType.BF16:
        return to_float64(to_bf16(f), dt)
    return f.astype(np.dtype(dt.numpy)).astype(np.float64)


def op_values(kind: str, v: np.ndarray, weight, bias, scale: float, eps: float) -> np.ndarray:
    """float64 y of ``kind`` (a name of the kind table, kinds.py) on rows of ``v``: the kind's reference, then
    ``* weight`` and ``+ bias`` where given."""
    if v.shape[-1] == 0:
        return v.copy()
    y = KINDS[kind].reference(v, scale, eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def reference(plan: KernelPlan, arrays: dict[str, np.ndarray], scalars: dict[str, float] | None = None
              ) -> dict[str, np.ndarray]:
    """float64 ``y`` (int8: in quantization steps, unrounded), ``s_out``, ``y_scale`` and ``rstd`` of the kernel's
    used outputs (no ``y`` with ``y = none``). ``scalars``: scale / eps (default: the ABI's defaults, the DSL's values)."""
    r = plan.spec.params.row
    sc = {a.name: a.default for a in plan.abi.args if a.kind.value == "scalar"} | dict(scalars or {})
    x = to_float64(arrays["x"], r.x)
    out: dict[str, np.ndarray] = {}
    if r.residual is not None:
        v = round_to(x + to_float64(arrays["residual"], r.residual), r.residual)
        out["s_out"] = v
    else:
        v = x
    w = to_float64(arrays["weight"], r.w_dtype) if r.weight is not None else None
    b = to_float64(arrays["bias"], r.w_dtype) if r.bias is not None else None
    eps = float(sc.get("eps", 0.0))
    if r.rstd:
        out["rstd"] = rstd_values(v, eps)
    if not r.write_y:
        return out
    y = op_values(r.kind, v, w, b, float(sc.get("scale", 1.0)), eps)
    if r.quantized:
        out["y_scale"], out["y"] = quantized_rows(y, r.y, r.quant_group, r.quant_mx)
    else:
        out["y"] = y
    return out


def rstd_values(v: np.ndarray, eps: float) -> np.ndarray:
    """float64 ``1 / sqrt(mean(v^2) + eps)`` of each row of ``v`` (rows x cols, cols >= 1): the rstd output."""
    return 1.0 / np.sqrt((v * v).mean(axis=-1) + eps)


def tolerance(plan: KernelPlan, output: str) -> float:
    """s_out: exact (one rounding of an exact f32 sum, as the reference); y_scale: :data:`SCALE_TOLERANCE`; rstd:
    :data:`RSTD_TOLERANCE`; y: by its dtype (:data:`TOLERANCES`)."""
    r = plan.spec.params.row
    if output == "s_out":
        return 0.0
    if output == "y_scale":
        return SCALE_TOLERANCE
    if output == "rstd":
        return RSTD_TOLERANCE
    return TOLERANCES[r.y]
