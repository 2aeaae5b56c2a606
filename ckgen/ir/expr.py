"""Integer expressions over a kernel's runtime sizes, as data: rendered to C for the host entry and evaluated
in Python for the runtimes, so that the two always agree.

An expression is an ``int``, a ``str`` (the name of a size argument of the ABI, or of a value the launch
computed before), or a tuple ``(op, arg, ...)`` with ``op`` one of:

======== ===========================================================================
``add``  sum of the arguments
``mul``  product of the arguments
``min``  smallest argument;  ``max``: largest
``div``  ``a / b`` rounded down (both non-negative)
``cdiv`` ``ceil(a / b)`` (both non-negative, ``b > 0``)
======== ===========================================================================

Build them with :func:`add`, :func:`mul`, :func:`cdiv` ...; :func:`evaluate` computes one (Python ints, no
overflow), :func:`render_c` writes it as an ``int64_t`` C expression (helpers ``ckgen_ceil_div``,
``ckgen_min64``, ``ckgen_max64`` of the generated host code), :func:`to_json` is its canonical JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Expr = int | str | tuple

OPS = ("add", "mul", "min", "max", "div", "cdiv")


def _check(e: Expr) -> Expr:
    if isinstance(e, bool):
        raise TypeError("expression: bool is not an integer")
    if isinstance(e, (int, str)):
        return e
    if not isinstance(e, tuple) or not e or e[0] not in OPS:
        raise TypeError(f"expression: {e!r} is not an int, a name or (op, args...) with op in {OPS}")
    if e[0] in ("div", "cdiv") and len(e) != 3:
        raise TypeError(f"expression: {e[0]} takes two arguments")
    if len(e) < 2:
        raise TypeError(f"expression: {e[0]} needs arguments")
    for a in e[1:]:
        _check(a)
    return e


def add(*a: Expr) -> Expr:
    return _check(("add", *a))


def mul(*a: Expr) -> Expr:
    return _check(("mul", *a))


def emin(*a: Expr) -> Expr:
    return _check(("min", *a))


def emax(*a: Expr) -> Expr:
    return _check(("max", *a))


def div(a: Expr, b: Expr) -> Expr:
    return _check(("div", a, b))


def cdiv(a: Expr, b: Expr) -> Expr:
    return _check(("cdiv", a, b))


def align(a: Expr, n: int) -> Expr:
    """``a`` rounded up to a multiple of ``n``."""
    return mul(cdiv(a, n), n)


def names(e: Expr) -> set[str]:
    """Every name the expression reads."""
    if isinstance(e, str):
        return {e}
    if isinstance(e, int):
        return set()
    out: set[str] = set()
    for a in e[1:]:
        out |= names(a)
    return out


def evaluate(e: Expr, env: Mapping[str, int]) -> int:
    """The value of ``e`` with names from ``env`` (KeyError for a missing one)."""
    if isinstance(e, int):
        return e
    if isinstance(e, str):
        return int(env[e])
    op, args = e[0], [evaluate(a, env) for a in e[1:]]
    if op == "add":
        return sum(args)
    if op == "mul":
        out = 1
        for a in args:
            out *= a
        return out
    if op == "min":
        return min(args)
    if op == "max":
        return max(args)
    if op == "div":
        return args[0] // args[1]
    return -(-args[0] // args[1])  # cdiv


def render_c(e: Expr, name: Callable[[str], str] = lambda s: s) -> str:
    """``e`` as a C expression of type ``int64_t``; ``name`` maps a name to its C identifier."""
    if isinstance(e, int):
        return f"(int64_t){e}"
    if isinstance(e, str):
        return f"(int64_t){name(e)}"
    op, args = e[0], [render_c(a, name) for a in e[1:]]
    if op in ("add", "mul"):
        return "(" + (" + " if op == "add" else " * ").join(args) + ")"
    if op in ("min", "max"):
        out = args[0]
        for a in args[1:]:
            out = f"ckgen_{op}64({out}, {a})"
        return out
    if op == "div":
        return f"({args[0]} / {args[1]})"
    return f"ckgen_ceil_div({args[0]}, {args[1]})"


def to_json(e: Expr):
    """Canonical JSON: ints and names as they are, operations as lists."""
    if isinstance(e, (int, str)):
        return e
    return [e[0], *[to_json(a) for a in e[1:]]]


def text(e: Expr) -> str:
    """A readable formula (manifest, docs): ``ceil(M / 16) * 4``."""
    if isinstance(e, (int, str)):
        return str(e)
    op, args = e[0], [text(a) for a in e[1:]]
    if op == "add":
        return "(" + " + ".join(args) + ")"
    if op == "mul":
        return " * ".join(args)
    if op in ("min", "max"):
        return f"{op}({', '.join(args)})"
    if op == "div":
        return f"floor({args[0]} / {args[1]})"
    return f"ceil({args[0]} / {args[1]})"
