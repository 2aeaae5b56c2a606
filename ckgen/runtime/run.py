"""``ckgen run``: one kernel on random data, checked against a float64 reference.

:func:`run_command` builds the kernel for the target (``emu``, ``hip``, ``sm_90`` ...) through
:func:`ckgen.runtime.api.jit`, draws random inputs (never zeros; C poisoned unless beta != 0), runs it,
and prints the relative error ``||C - ref|| / ||ref||`` against a float64 reference of
``act(alpha * A.B + beta * C + bias)``; on ``emu`` also the LDS bank conflicts the emulator counted. Exit status: 0 within the tolerance of the kernel's dtypes,
1 over it (or unwritten/NaN outputs), 2 on bad input (a CkgenError, printed with ``render()``).

The reference and tolerances are shared with the numerics tests (:func:`reference`, :func:`tolerance`,
:func:`random_operands`).
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np

from ckgen.errors import CkgenError
from ckgen.ir.types import DType, Layout
from ckgen.runtime.api import from_bf16, jit, numpy_dtype, poison, to_bf16

#: relative norm error allowed per dtype (the loosest of the kernel's A, B and C dtypes applies)
TOLERANCE: dict[DType, float] = {DType.F16: 5e-3, DType.BF16: 3e-2, DType.F32: 1e-4, DType.I8: 0.0, DType.I32: 0.0}


def tolerance(plan: Any) -> float:
    g = plan.spec.gemm
    tol = max(TOLERANCE.get(d, 1e-2) for d in (g.a.dtype, g.b.dtype, g.c.dtype))
    if not g.c.dtype.is_float and not plan.integer_epilogue:
        tol = max(tol, 1e-3)  # integer output through the float epilogue: one rounding of the result
    return tol


def to_float64(x: np.ndarray, dt: DType) -> np.ndarray:
    return from_bf16(x).astype(np.float64) if dt == DType.BF16 else np.asarray(x).astype(np.float64)


def random_matrix(rng: np.random.Generator, shape: tuple[int, ...], dt: DType, row_major: bool = True) -> np.ndarray:
    """Random values of ``dt`` (bf16 as uint16 bits), in the requested memory order; never all zero."""
    if dt == DType.I8:
        v = rng.integers(-8, 9, size=shape)
        v[v == 0] = 1
        out = v.astype(np.int8)
    elif dt == DType.I32:
        out = rng.integers(-1000, 1000, size=shape).astype(np.int32)
    else:
        x = rng.uniform(-1.0, 1.0, size=shape)
        out = to_bf16(x) if dt == DType.BF16 else x.astype(numpy_dtype(dt))
    return np.ascontiguousarray(out) if row_major else np.asfortranarray(out)


def poisoned(shape: tuple[int, int], dt: DType, row_major: bool) -> np.ndarray:
    return poison(np.empty(shape, numpy_dtype(dt), order="C" if row_major else "F"))


def random_operands(plan: Any, M: int, N: int, K: int, rng: np.random.Generator) -> dict[str, np.ndarray | None]:
    g = plan.spec.gemm
    rm = {x: getattr(g, x).layout == Layout.ROW for x in "abc"}
    ops: dict[str, np.ndarray | None] = {
        "A": random_matrix(rng, (M, K), g.a.dtype, rm["a"]),
        "B": random_matrix(rng, (K, N), g.b.dtype, rm["b"]),
        "C": random_matrix(rng, (M, N), g.c.dtype, rm["c"]) if g.beta != 0 else poisoned((M, N), g.c.dtype, rm["c"]),
        "bias": None,
    }
    if g.bias_axis is not None:
        ops["bias"] = random_matrix(rng, (M if g.bias_axis == "row" else N,), plan.bias_dtype)
    return ops


def activation(kind: str, x: np.ndarray) -> np.ndarray:
    """float64 reference of an epilogue activation: ``relu``, ``gelu`` (tanh form) or ``silu``."""
    if kind == "relu":
        return np.maximum(x, 0.0)
    if kind == "gelu":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if kind == "silu":
        return x / (1.0 + np.exp(-x))
    raise ValueError(kind)


def reference(plan: Any, A: np.ndarray, B: np.ndarray, C0: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    """float64 ``epilogue(alpha * A.B + beta * C0)``; integer outputs rounded and saturated like the kernel."""
    g = plan.spec.gemm
    r = g.alpha * (to_float64(A, g.a.dtype) @ to_float64(B, g.b.dtype))
    if g.beta != 0:
        r = r + g.beta * to_float64(C0, g.c.dtype)
    for op in g.epilogue:
        if op.kind == "bias":
            b = to_float64(bias, plan.bias_dtype)
            r = r + (b[:, None] if op.axis == "row" else b[None, :])
        else:
            r = activation(op.kind, r)
    if not g.c.dtype.is_float:
        info = np.iinfo(numpy_dtype(g.c.dtype))
        r = np.clip(np.rint(r), info.min, info.max)
    return r


def relative_error(plan: Any, C: np.ndarray, ref: np.ndarray) -> float:
    got = to_float64(C, plan.spec.gemm.c.dtype)
    if not np.all(np.isfinite(got)):
        return math.inf
    denom = np.linalg.norm(ref)
    diff = np.linalg.norm(got - ref)
    return float(diff / denom) if denom > 0 else float(diff)


def run_command(path: str, kernel: str | None, target: str, arch: str | None, m: int, n: int, k: int,
                seed: int | None) -> int:
    """``ckgen run``. Returns the exit status (0 ok, 1 numeric failure, 2 bad input)."""
    try:
        for name, v in (("-m", m), ("-n", n), ("-k", k)):
            if v is None or v < 0:
                raise CkgenError(f"{name} = {v}: sizes must be >= 0")
        gemm = jit(path, kernel=kernel, target=target, arch=arch)
        rng = np.random.default_rng(0 if seed is None else seed)
        ops = random_operands(gemm.plan, m, n, k, rng)
        c0 = ops["C"].copy() if gemm.plan.spec.gemm.beta != 0 else None
        t0 = time.perf_counter()
        C = gemm(ops["A"], ops["B"], ops["C"], ops["bias"])
        dt = time.perf_counter() - t0
    except CkgenError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    ref = reference(gemm.plan, ops["A"], ops["B"], c0, ops["bias"])
    err = relative_error(gemm.plan, C, ref)
    tol = tolerance(gemm.plan)
    ok = err <= tol
    print(f"{gemm.name} on {gemm.backend.name} ({gemm.arch}): M={m} N={n} K={k}, {dt:.3f} s, "
          f"relative error vs float64 {err:.3e} (tolerance {tol:.1e}): {'ok' if ok else 'FAILED'}")
    if gemm.backend.name == "emu":  # the emulator counts LDS bank conflicts (docs/emulation.md)
        from ckgen.runtime.emu import lds_bank_summary

        print(lds_bank_summary(gemm.handle.library.lds_sites()))
    return 0 if ok else 1
