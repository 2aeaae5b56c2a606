"""Typed readers of parsed DSL values, shared by every op's ``build_params``.

Each reader takes a :class:`~ckgen.ir.spec.Value` and the parameter's name, and returns a Python
value or raises :class:`~ckgen.errors.SpecError` pointing at the value, saying what was expected.
"""

from __future__ import annotations

import decimal
import math

import numpy as np

from ckgen.errors import SourceSpan, SpecError, did_you_mean
from ckgen.ir.spec import TensorSpec, Value
from ckgen.ir.types import ALL_DTYPES, DType, Layout


def err(msg: str, span: SourceSpan | None, hint: str | None = None) -> SpecError:
    return SpecError(msg, span, hint)


def word(v: Value, param: str, legal: tuple[str, ...]) -> str:
    """A bare name among ``legal``."""
    if v.kind == "call" and not v.data[1] and v.data[0] in legal:
        return v.data[0]
    raise err(f"{param} = {v.text}: expected one of {', '.join(legal)}", v.span,
              f"{did_you_mean(v.text, legal)}legal: {', '.join(legal)}")


#: fp8 spellings without an encoding: refused, naming the encodings (the bits differ between them)
AMBIGUOUS_FP8 = {"fp8": "e4m3fn (OCP: gfx950, sm_90) or e4m3fnuz (FNUZ: gfx942)",
                 "bf8": "e5m2 (OCP: gfx950, sm_90) or e5m2fnuz (FNUZ: gfx942)"}


def dtype(v: Value, param: str) -> DType:
    if v.kind == "call" and not v.data[1]:
        if v.data[0] in AMBIGUOUS_FP8:
            raise err(f"{param} = {v.text}: '{v.data[0]}' does not say its encoding", v.span,
                      f"write {AMBIGUOUS_FP8[v.data[0]]}")
        try:
            return DType.parse(v.data[0])
        except ValueError:
            pass
    raise err(f"{param} = {v.text}: not a dtype", v.span,
              f"{did_you_mean(v.text, ALL_DTYPES)}legal: {', '.join(ALL_DTYPES)}")


def tensor(v: Value, param: str) -> TensorSpec:
    """``<dtype> row|col`` (layout row when left out)."""
    if v.kind == "tensor":
        d = dtype(Value("call", (v.data[0], ()), v.span, v.data[0]), param)
        return TensorSpec(d, Layout.parse(v.data[1]))
    if v.kind == "call" and not v.data[1]:
        return TensorSpec(dtype(v, param), Layout.ROW)
    raise err(f"{param} = {v.text}: expected '<dtype> row|col'", v.span, f"e.g. {param} = f16 row")


def dims(v: Value, param: str, n: int, hi: int = 1 << 16) -> tuple[int, ...]:
    """``AxBxC`` with ``n`` positive extents, each at most ``hi``."""
    if v.kind != "dims" or len(v.data) != n:
        shape = "x".join(["N"] * n)
        raise err(f"{param} = {v.text}: expected {shape}", v.span, f"e.g. {param} = {'x'.join(['32'] * n)}")
    if any(d <= 0 for d in v.data):
        raise err(f"{param} = {v.text}: every extent must be positive", v.span)
    if any(d > hi for d in v.data):
        raise err(f"{param} = {v.text}: extents must be at most {hi}", v.span)
    return v.data


def _exact(text: str) -> decimal.Decimal | None:
    """The exact value of a number's spelling (``2.0000000000000001`` is not 2), or None."""
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        return None


def integer(v: Value, param: str, lo: int, hi: int) -> int:
    """An integer in [lo, hi], written as one (``2``, ``2.0``, ``2e0``; not ``2.5`` or ``2.0000000000000001``)."""
    exact = _exact(v.text) if v.kind == "number" else None
    if exact is None or not exact.is_finite() or not lo <= exact <= hi or exact != exact.to_integral_value():
        raise err(f"{param} = {v.text}: expected an integer in {lo}..{hi}", v.span)
    return int(exact)


def number(v: Value, param: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A finite number in [lo, hi]."""
    if v.kind != "number":
        raise err(f"{param} = {v.text}: expected a number", v.span, f"e.g. {param} = 1.0")
    if not math.isfinite(v.data) or not lo <= v.data <= hi:
        rng = f"{lo:g}..{hi:g}" if math.isfinite(lo) or math.isfinite(hi) else "a finite number"
        raise err(f"{param} = {v.text}: out of range", v.span, f"legal: {rng}")
    return float(v.data)


#: the f32 range: largest finite and smallest normal magnitude
F32_MAX = 3.4028234663852886e38
F32_MIN_NORMAL = 1.1754943508222875e-38


def f32(v: Value, param: str) -> float:
    """A number the f32 compute type holds: finite, at most F32_MAX and, unless zero, at least F32_MIN_NORMAL
    in magnitude (a smaller one would be a denormal that GPUs flush to zero). Returns the f32 value itself (the
    value the kernel computes with), as a Python float."""

    x = number(v, param, -F32_MAX, F32_MAX)
    exact = _exact(v.text)
    if (exact is not None and exact != 0 or x != 0) and abs(x) < F32_MIN_NORMAL:
        raise err(f"{param} = {v.text}: too small for f32 (it would be flushed to zero)", v.span,
                  f"legal: 0, or a magnitude in {F32_MIN_NORMAL:.9g}..{F32_MAX:.9g}")
    with np.errstate(over="ignore"):
        rounded = float(np.float32(x))
    if not math.isfinite(rounded) or abs(rounded) > F32_MAX:  # pragma: no cover - number() bounds it
        raise err(f"{param} = {v.text}: out of range for f32", v.span)
    return rounded


def boolean(v: Value, param: str) -> bool:
    return word(v, param, ("true", "false")) == "true"
