"""The element-wise op (``op = elementwise``): ``y = expr(a[, b][, c])`` element by element over a ``rows x cols``
matrix, for what does not fuse into a neighbouring kernel (SiLU(gate) * up, a residual add, a scaled cast).

Its parts: ``fns.py`` (the functions: DSL names, device codes, float64 numpy; the one vocabulary), ``spec.py``
(DSL keys, params, the chain checked against the table and the declared inputs), ``abi.py`` (the C ABI and launch),
``plan.py`` (vectors, workgroup), ``kernel.hip.j2`` and ``device/`` (``elementwise_expr.h``: the expression as a
type; ``elementwise_body.h``: the loop over column chunks and rows; ``elementwise_quant.h``: the same with y
quantized to int8 / fp8 with a scale per 128 columns). The activation functions are the GEMM
epilogues' (``ckgen/blocks/activation.h``).
"""

from __future__ import annotations

import numpy as np

from ckgen.codegen.escape import bool_literal
from ckgen.ir.arrays import overflowed, to_float64
from ckgen.ir.op import TOLERANCE, Op
from ckgen.ir.plan import KernelPlan
from ckgen.ir.quant import quantized_rows
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.ops.elementwise import abi as _abi
from ckgen.ops.elementwise import plan as _plan
from ckgen.ops.elementwise import spec as _spec
from ckgen.ops.elementwise.fns import evaluate, step_type


class ElementwiseOp(Op):
    name = "elementwise"
    doc = "y = expr(a, b, c) element by element (silu, gelu, add, mul, ...), vectorized, any size"
    keys = _spec.KEYS
    kernel_template = "elementwise/kernel.hip.j2"

    def build_params(self, values, ctx):
        return _spec.build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return _plan.plan(spec, target)

    def abi(self, spec: KernelSpec):
        return _abi.abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        p, b = plan.spec.params, plan.body
        ins = ", ".join(f"{n} {p.dtype_of(n).value}" + (" (one row)" if n in p.broadcast else "")
                        for n in ("a", "b", "c") if p.dtype_of(n) is not None)
        return (f"y = {_abi.expr_text(p)}; {ins} -> y {p.y.value}; {b.threads} threads x {b.unroll} vectors of "
                f"{b.vec}")

    def kernel_view(self, plan: KernelPlan) -> dict:
        p, b = plan.spec.params, plan.body
        types = [("TA", p.a.cpp), ("TB", (p.b or p.a).cpp), ("TC", (p.c or p.a).cpp), ("TY", p.y.cpp),
                 ("Expr", "ckgen::ew::Expr<" + ", ".join(step_type(s) for s in p.steps) + ">")]
        constants = [("bool", "kHasB", bool_literal(p.b is not None)), ("bool", "kHasC", bool_literal(p.c is not None)),
                     ("int", "kVec", str(b.vec)), ("int", "kThreads", str(b.threads)),
                     ("int", "kUnroll", str(b.unroll)), ("int", "kLdsBytes", "0")]
        if p.quant_group:
            constants.append(("int", "kQuantGroup", str(p.quant_group)))
        if p.quant_mx:
            constants.append(("bool", "kQuantMx", "true"))
        return {"types": types, "constants": constants, "header": b.header, "impl": b.impl, "notes": []}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        p = plan.spec.params
        ins = {}
        for n in ("a", "b", "c"):
            if p.dtype_of(n) is not None:
                ins[n] = to_float64(np.asarray(arrays[n]), p.dtype_of(n))
        y = evaluate(p.steps, ins)
        rows, cols = sizes["rows"], sizes["cols"]
        y = np.broadcast_to(y, (rows, cols)).astype(np.float64)
        if p.quant_group:
            scales, q = quantized_rows(y, p.y, p.quant_group, p.quant_mx)
            return {"y": q, "y_scale": scales}
        return {"y": overflowed(y, p.y)}  # (an f32 step or y's own rounding past its range is inf, as the kernel's)

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        # the output's rounding dominates (the inputs are exact in f32); exp, tanh and sigmoid are approximate.
        # Quantized: y_scale in f32; fp8 q against the fp8-rounded reference (one step where the f32 expression
        # lands on the other side of a rounding boundary); int8 q against unrounded steps (one rounding)
        p = plan.spec.params
        if output == "y_scale":
            return 1e-5
        if p.quant_group:
            return 2.5e-2 if p.y == DType.I8 else 2e-2
        return TOLERANCE.get(p.y, 1e-2) + 1e-5

    def flops(self, plan: KernelPlan, sizes: dict[str, int]) -> float | None:
        return None


OP = ElementwiseOp()
