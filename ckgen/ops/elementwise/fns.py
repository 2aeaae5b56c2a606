"""The element-wise op's vocabulary: one row per function (:data:`FNS`), read by the DSL (names, arity), the
plan (the device code, ``device/elementwise_expr.h``'s ``Fn``), the docs and the float64 reference.

An expression is a chain of calls, left to right, each step a function of the value so far and its arguments:

    silu(a) -> mul(b)          y = silu(a) * b              (SwiGLU's SiLU(gate) * up)
    add(a, b) -> gelu          y = gelu(a + b)
    mul(a, 0.5)                y = a * 0.5, cast to y's dtype

The first call names all its operands (inputs ``a``, ``b``, ``c`` or numbers); a later call takes the value so far
as its first operand and names the rest (``mul(b)``, ``gelu``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ckgen.ir import activations as A


@dataclass(frozen=True)
class Fn:
    """One function: its DSL name, operand count, device code (``ew::Fn``), what it computes, and float64 numpy."""

    name: str
    arity: int
    code: int
    doc: str
    numpy: Callable


FNS: dict[str, Fn] = {f.name: f for f in (
    Fn("add", 2, 0, "x + y", lambda x, y: x + y),
    Fn("sub", 2, 1, "x - y", lambda x, y: x - y),
    Fn("mul", 2, 2, "x * y", lambda x, y: x * y),
    Fn("div", 2, 3, "x / y", lambda x, y: x / y),
    Fn("max", 2, 4, "max(x, y)", np.maximum),
    Fn("min", 2, 5, "min(x, y)", np.minimum),
    Fn("silu", 1, 6, "x * sigmoid(x)", A.silu),
    Fn("gelu", 1, 7, "GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))", A.gelu_tanh),
    Fn("relu", 1, 8, "max(x, 0)", A.relu),
    Fn("sigmoid", 1, 9, "1 / (1 + exp(-x))", A.sigmoid),
    Fn("tanh", 1, 10, "tanh(x)", np.tanh),
    Fn("neg", 1, 11, "-x", lambda x: -x),
    Fn("exp", 1, 12, "exp(x)", lambda x: np.exp(np.minimum(x, 709.0))),
    Fn("copy", 1, 13, "x (a cast to y's dtype)", lambda x: x),
)}

#: operand sources (``ew::Src``): the value so far, the inputs, the step's constant
SRC_RUN, SRC_CONST = 0, 4
INPUTS = ("a", "b", "c")
SRC_INPUT = {name: 1 + i for i, name in enumerate(INPUTS)}


@dataclass(frozen=True)
class Step:
    """One call of the chain: ``fn`` of ``lhs`` and ``rhs`` (input names, ``"run"`` for the value so far, or
    ``"const"`` for ``k``)."""

    fn: str
    lhs: str
    rhs: str = "run"
    k: float = 0.0

    def to_json(self) -> dict:
        return {"fn": self.fn, "lhs": self.lhs, "rhs": self.rhs, "k": self.k}


def _src(name: str) -> int:
    return SRC_RUN if name == "run" else SRC_CONST if name == "const" else SRC_INPUT[name]


def step_type(s: Step) -> str:
    """The step as the device type ``ckgen::ew::Step<fn, lhs, rhs, bits of k>``."""
    bits = int(np.array(s.k, np.float32).view(np.uint32))
    return f"ckgen::ew::Step<{FNS[s.fn].code}, {_src(s.lhs)}, {_src(s.rhs)}, {bits}u>"


def evaluate(steps: tuple[Step, ...], inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The chain in float64 on numpy arrays (``inputs`` by name, broadcast against each other)."""
    run: np.ndarray | float = 0.0

    def operand(name: str, k: float):
        return run if name == "run" else k if name == "const" else inputs[name]

    for s in steps:
        f = FNS[s.fn]
        x = operand(s.lhs, np.float32(s.k).item())
        run = f.numpy(x, operand(s.rhs, np.float32(s.k).item())) if f.arity == 2 else f.numpy(x)
    return np.asarray(run, np.float64)
