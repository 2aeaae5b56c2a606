"""The element-wise op's DSL keys and params: ``y = expr(a[, b][, c])`` element by element over ``rows x cols``.

    kernel silu_mul {
      op = elementwise
      a = bf16  b = bf16           // inputs (a required); b and c optional
      expr = silu(a) -> mul(b)     // a chain of calls (fns.py)
    }

``broadcast = b`` (or ``[b, c]``) makes that input one row of ``cols`` elements, the same for every row (a bias,
a scale per column). ``y`` is the output's dtype (default a's); ``y = i8`` or an fp8 dtype quantizes it with one
f32 scale per 128 columns of a row (``quant = group(128)``, written to ``y_scale``: the 1 x 128 groups the GEMM's
``scale_a = block(128)`` takes). :func:`build_params` checks the chain against the
table and the declared inputs, pointing at the offending call; legality against the target is the plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key
from ckgen.ir.quant import GROUP, MX_DTYPES, MX_GROUP, MX_WORD
from ckgen.ir.spec import Value
from ckgen.ir.types import DType
from ckgen.ops.elementwise.fns import FNS, INPUTS, Step

DTYPES = (DType.F16, DType.BF16, DType.F32)
DTYPE_WORDS = tuple(d.value for d in DTYPES)
#: quantized y dtypes (with per-group scales); the plan keeps the fp8 ones of the target's encoding
QUANT_DTYPES = (DType.I8, DType.E4M3FN, DType.E5M2, DType.E4M3FNUZ, DType.E5M2FNUZ, DType.E2M1FN_X2)
QUANT_WORD = f"group({GROUP})"
MAX_STEPS = 16
THREADS = (64, 128, 256, 512, 1024)

KEYS = (
    Key("a", f"{' | '.join(DTYPE_WORDS)}: the first input, rows x cols", required=True),
    Key("b", f"{' | '.join(DTYPE_WORDS)}: a second input", default_text="none"),
    Key("c", f"{' | '.join(DTYPE_WORDS)}: a third input", default_text="none"),
    Key("y", f"{' | '.join(DTYPE_WORDS + tuple(d.value for d in QUANT_DTYPES))}: the output's dtype (i8 / fp8: "
             "quantized, with f32 scales per group written to y_scale; see quant)", default_text="a's dtype"),
    Key("quant", f"{QUANT_WORD} (an i8 / fp8 y): one f32 scale per {GROUP} columns of a row, y_scale [rows, "
                 f"ceil(cols / {GROUP})] with row stride stride_scale (the GEMM's scale_a = block(128)); {MX_WORD} "
                 f"(y = {', '.join(d.value for d in MX_DTYPES)}): one E8M0 byte per {MX_GROUP} columns (the GEMM's "
                 "scale_a = mx(32)); per-row scales need the whole row: op = quantize",
        default_text=f"{QUANT_WORD}; {MX_WORD} for an fp4 y"),
    Key("broadcast", "b, c or [b, c]: inputs that are one row of cols elements, the same for every row",
        default_text="none"),
    Key("expr", "a chain of calls, e.g. silu(a) -> mul(b): the first call names its operands (a, b, c or a "
                f"number), later ones take the value so far first; functions: {', '.join(FNS)}", required=True),
    Key("vec", "1 | 2 | 4 | 8 | 16 elements per vector access (at most 16 bytes of each tensor)",
        default_text="16 bytes of the widest tensor"),
    Key("threads", f"{' | '.join(map(str, THREADS))} threads per workgroup", default_text="256"),
    Key("unroll", "1..8 vectors per thread in flight", default_text="4"),
)


@dataclass(frozen=True)
class EwParams:
    a: DType
    b: DType | None
    c: DType | None
    y: DType
    broadcast: tuple[str, ...]
    steps: tuple[Step, ...]
    vec: int | None
    threads: int
    unroll: int
    quant_group: int = 0  # a quantized y (i8 / fp8): its scales' group of columns
    quant_mx: bool = False  # MX: E8M0 scales per MX_GROUP columns (quant = mx(32))

    @property
    def quantized(self) -> bool:
        return self.y in QUANT_DTYPES

    def dtype_of(self, name: str) -> DType | None:
        return {"a": self.a, "b": self.b, "c": self.c, "y": self.y}[name]

    def to_json(self) -> dict:
        return {"a": self.a.value, "b": self.b and self.b.value, "c": self.c and self.c.value, "y": self.y.value,
                "broadcast": list(self.broadcast), "expr": [s.to_json() for s in self.steps], "vec": self.vec,
                "threads": self.threads, "unroll": self.unroll, "quant_group": self.quant_group,
                **({"quant_mx": True} if self.quant_mx else {})}


def _dtype(v: Value, param: str, quantized: bool = False) -> DType:
    d = V.dtype(v, param)
    legal = DTYPES + (QUANT_DTYPES if quantized else ())
    if d not in legal:
        words = ", ".join(x.value for x in legal)
        raise V.err(f"{param} = {v.text}: the element-wise op takes {words}", v.span, f"legal: {words}")
    return d


def _operand(text: str, call: Value, declared: set[str]) -> tuple[str, float | None]:
    """(source, constant) of one argument: an input name, or a number (an f32)."""
    if text in INPUTS:
        if text not in declared:
            raise V.err(f"expr: {call.text} reads {text}, which the kernel does not declare", call.span,
                        f"declare it, e.g. {text} = {next(iter(sorted(declared)), 'bf16')}")
        return text, None
    try:
        k = float(text)
    except ValueError:
        raise V.err(f"expr: {call.text}: '{text}' is neither an input nor a number", call.span,
                    f"{V.did_you_mean(text, INPUTS)}operands: the declared inputs ({', '.join(sorted(declared))}) "
                    "or a number") from None
    with np.errstate(over="ignore"):
        k32 = float(np.float32(k))
    if not math.isfinite(k32):
        raise V.err(f"expr: {call.text}: {text} is not a finite f32", call.span)
    return "const", k32


def _steps(v: Value, declared: set[str]) -> tuple[Step, ...]:
    if v.kind not in ("chain", "call"):
        raise V.err(f"expr = {v.text}: expected a chain of calls like silu(a) -> mul(b)", v.span,
                    f"functions: {', '.join(FNS)}")
    calls = v.data if v.kind == "chain" else (v,)
    if len(calls) > MAX_STEPS:
        raise V.err(f"expr: {len(calls)} calls, at most {MAX_STEPS}", v.span)
    steps = []
    for i, call in enumerate(calls):
        name, args = call.data
        f = FNS.get(name)
        if f is None:
            raise V.err(f"expr: '{name}' is not a function", call.span,
                        f"{V.did_you_mean(name, tuple(FNS))}functions: {', '.join(FNS)}")
        want = f.arity if i == 0 else f.arity - 1
        if len(args) != want:
            where = "the first call names all its operands" if i == 0 else "a later call takes the value so far first"
            raise V.err(f"expr: {call.text}: {name} takes {want} operand(s) here ({where})", call.span,
                        f"e.g. {name}({', '.join(['a', 'b'][:f.arity])})" if i == 0 else
                        f"e.g. -> {name}" + ("(b)" if f.arity == 2 else ""))
        ops = [_operand(t, call, declared) for t in args]
        if sum(k is not None for _, k in ops) > 1:
            raise V.err(f"expr: {call.text}: at most one number per call", call.span)
        srcs = (["run"] if i > 0 else []) + [s for s, _ in ops]
        k = next((k for _, k in ops if k is not None), 0.0)
        if i == 0 and all(s == "const" for s in srcs):
            raise V.err(f"expr: {call.text} reads no input", call.span, "the first call reads a, b or c")
        steps.append(Step(name, srcs[0], srcs[1] if len(srcs) > 1 else "run", k))
    return tuple(steps)


def build_params(values: dict[str, Value], ctx: BuildContext) -> EwParams:
    a = _dtype(values["a"], "a")
    b = _dtype(values["b"], "b") if "b" in values else None
    c = _dtype(values["c"], "c") if "c" in values else None
    declared = {"a"} | ({"b"} if b else set()) | ({"c"} if c else set())
    broadcast: tuple[str, ...] = ()
    if "broadcast" in values:
        bv = values["broadcast"]
        items = bv.data if bv.kind == "list" else (bv,)
        broadcast = tuple(V.word(x, "broadcast", ("b", "c")) for x in items)
        for name in broadcast:
            if name not in declared:
                raise V.err(f"broadcast = {bv.text}: the kernel declares no {name}", bv.span,
                            f"declare it, e.g. {name} = {a.value}")
    steps = _steps(values["expr"], declared)
    used = {s for st in steps for s in (st.lhs, st.rhs)}
    for name in sorted(declared - used):
        raise V.err(f"expr = {values['expr'].text} does not read {name}, which the kernel declares",
                    values["expr"].span, f"use {name} in the expression or leave '{name} = ...' out")
    vec = V.integer(values["vec"], "vec", 1, 16) if "vec" in values else None
    if vec is not None and vec & (vec - 1):
        raise V.err(f"vec = {vec}: not a power of two", values["vec"].span, "legal: 1, 2, 4, 8, 16")
    threads = 256
    if "threads" in values:
        threads = V.integer(values["threads"], "threads", 1, 1024)
        if threads not in THREADS:
            raise V.err(f"threads = {threads}: not a legal workgroup", values["threads"].span,
                        f"legal: {', '.join(map(str, THREADS))}")
    unroll = V.integer(values["unroll"], "unroll", 1, 8) if "unroll" in values else 4
    y = _dtype(values["y"], "y", quantized=True) if "y" in values else a
    default = (MX_GROUP, True) if y == DType.E2M1FN_X2 else (GROUP, False) if y in QUANT_DTYPES else (0, False)
    group, mx = _quant(values["quant"], y) if "quant" in values else default
    return EwParams(a, b, c, y, broadcast, steps, vec, threads, unroll, group, mx)


def _quant(v: Value, y: DType) -> tuple[int, bool]:
    """(group, mx): ``group(128)`` for a quantized y but fp4, ``mx(32)`` for an OCP fp8 or fp4 y; ``row`` refused
    (a workgroup holds part of a row)."""
    if y not in QUANT_DTYPES:
        raise V.err(f"quant = {v.text}: y = {y.value} is not quantized", v.span,
                    f"quant takes y = {', '.join(d.value for d in QUANT_DTYPES)} (the target's encoding)")
    if v.kind == "call" and v.data == ("mx", (str(MX_GROUP),)):
        if y not in MX_DTYPES:
            raise V.err(f"quant = {v.text}: y = {y.value} has no MX form", v.span,
                        f"{MX_WORD} takes y = {', '.join(d.value for d in MX_DTYPES)}; {y.value}: {QUANT_WORD}")
        return MX_GROUP, True
    if y == DType.E2M1FN_X2:
        raise V.err(f"quant = {v.text}: fp4 values take E8M0 scales per {MX_GROUP}", v.span, f"legal: {MX_WORD}")
    if v.kind == "call" and v.data == ("group", (str(GROUP),)):
        return GROUP, False
    if v.kind == "call" and v.data == ("row", ()):
        raise V.err("quant = row: the element-wise op's workgroups each hold part of a row", v.span,
                    f"legal: {QUANT_WORD}; per-row scales: op = quantize (a row op; x may be the output of this "
                    "kernel in bf16)")
    legal = f"{QUANT_WORD}, {MX_WORD}" if y in MX_DTYPES else QUANT_WORD
    raise V.err(f"quant = {v.text}: expected {legal}", v.span, f"legal: {legal}")
