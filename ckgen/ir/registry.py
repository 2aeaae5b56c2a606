"""The op registry: one line per op. Every stage reaches an op only through :func:`get_op`, which imports the op's
module by name on first use, so no stage imports an op (the ops sit above every stage: docs/design.md).

An op is a package ``ckgen/ops/<op>/`` (or a module of one package serving several ops) holding its DSL keys,
plan passes, ABI, float64 reference, kernel template and device bodies (``device/``); ``OP`` in its module is
its :class:`~ckgen.ir.op.Op`. See docs/adding-an-op.md.
"""

from __future__ import annotations

import importlib
from functools import cache

from ckgen.errors import SpecError

#: op name -> the module whose ``OP`` describes it (imported on first use)
REGISTRY: dict[str, str] = {
    "gemm": "ckgen.ops.gemm",
    "attention": "ckgen.ops.attention",
    "attention_decode": "ckgen.ops.attention.decode",
    "attention_kv_append": "ckgen.ops.attention.kv_append",
    "softmax": "ckgen.ops.rowops.softmax",
    "layernorm": "ckgen.ops.rowops.layernorm",
    "rmsnorm": "ckgen.ops.rowops.rmsnorm",
    "quantize": "ckgen.ops.rowops.quantize",
    "elementwise": "ckgen.ops.elementwise",
    "moe_routing": "ckgen.ops.moe_routing",
}

#: the op of a kernel that does not say ``op = ...`` (the DSL's first op)
DEFAULT_OP = "gemm"


def op_names() -> tuple[str, ...]:
    return tuple(REGISTRY)


@cache
def get_op(name: str):
    """The :class:`~ckgen.ir.op.Op` called ``name``; SpecError (with the legal names) otherwise."""
    module = REGISTRY.get(name)
    if module is None:
        raise SpecError(f"op = {name}: unknown op", hint=f"legal: {', '.join(REGISTRY)}")
    op = importlib.import_module(module).OP
    if op.name != name:  # pragma: no cover - a registry bug
        raise RuntimeError(f"ckgen.ops: {module}.OP is named {op.name!r}, registered as {name!r}")
    return op
