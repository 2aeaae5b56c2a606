"""Typed readers of parsed DSL values, shared by every op's ``build_params``.

Each reader takes a :class:`~ckgen.frontend.parser.Value` and the parameter's name, and returns a Python
value or raises :class:`~ckgen.errors.SpecError` pointing at the value, saying what was expected.
"""

from __future__ import annotations

import difflib
import math

from ckgen.errors import SourceSpan, SpecError
from ckgen.frontend.parser import Value
from ckgen.ir.spec import TensorSpec
from ckgen.ir.types import ALL_DTYPES, DType, Layout


def err(msg: str, span: SourceSpan | None, hint: str | None = None) -> SpecError:
    return SpecError(msg, span, hint)


def did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def word(v: Value, param: str, legal: tuple[str, ...]) -> str:
    """A bare name among ``legal``."""
    if v.kind == "call" and not v.data[1] and v.data[0] in legal:
        return v.data[0]
    raise err(f"{param} = {v.text}: expected one of {', '.join(legal)}", v.span,
              f"{did_you_mean(v.text, legal)}legal: {', '.join(legal)}")


def dtype(v: Value, param: str) -> DType:
    if v.kind == "call" and not v.data[1]:
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


def integer(v: Value, param: str, lo: int, hi: int) -> int:
    if v.kind != "number" or not math.isfinite(v.data) or v.data != int(v.data) or not lo <= v.data <= hi:
        raise err(f"{param} = {v.text}: expected an integer in {lo}..{hi}", v.span)
    return int(v.data)


def number(v: Value, param: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A finite number in [lo, hi]."""
    if v.kind != "number":
        raise err(f"{param} = {v.text}: expected a number", v.span, f"e.g. {param} = 1.0")
    if not math.isfinite(v.data) or not lo <= v.data <= hi:
        rng = f"{lo:g}..{hi:g}" if math.isfinite(lo) or math.isfinite(hi) else "a finite number"
        raise err(f"{param} = {v.text}: out of range", v.span, f"legal: {rng}")
    return float(v.data)


def boolean(v: Value, param: str) -> bool:
    return word(v, param, ("true", "false")) == "true"
