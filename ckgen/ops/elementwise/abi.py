"""The element-wise op's C ABI and launch, as data (see :mod:`ckgen.ir.abi`)::

    a, b, c, y, rows, cols, stride_a, stride_b, stride_c, stride_y
    a, b, c, y, y_scale, rows, cols, stride_a, stride_b, stride_c, stride_y, groups, stride_scale   (i8 / fp8 y)

a, b, c and y are ``rows x cols`` row-major with a row stride each (elements, >= cols; 0 for a broadcast row); b and c are ``unused``
(NULL) when the kernel has no such input; an input the kernel broadcasts (``broadcast = b``) may also be one row
of ``cols`` elements (its rows dim left out or 1: stride 0), the same for every row. y may be an input itself of
y's dtype (in place), as the very same view. A quantized y (i8 / fp8, ``quant = group(128)``) comes with
``y_scale``: ``rows x groups`` f32 (amax / qmax of each 128 columns of a row, 1 for an all-zero group), row-major
with row stride ``stride_scale``; ``groups`` = ceil(cols / 128) (checked; the Python binding derives it). An MX y
(``quant = mx(32)``: e4m3fn, e5m2, or fp4 pairs, ``rows x cols/2`` bytes with cols even) comes with ``y_scale`` of
``rows x groups`` E8M0 bytes, ``groups`` = ceil(cols / 32).

Launch: 1-D workgroups of ``threads``; ``ceil(cols / (threads * vec * unroll))`` workgroups along x (column
chunks) and one per row along y (over 65535 rows: consecutive launches of row slices); nothing when rows or cols
is 0.
"""

from __future__ import annotations

from ckgen.ir.abi import Abi, Arg, ArgKind, packed_dim
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.quant import group_scales_arg
from ckgen.ir.spec import KernelSpec
from ckgen.ops.elementwise.fns import FNS

T, S, ST = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE


def abi(spec: KernelSpec) -> Abi:
    p = spec.params
    args = []
    for name in ("a", "b", "c"):
        d = p.dtype_of(name)
        bcast = name in p.broadcast
        doc = ("rows x cols" + (", or one row of cols broadcast over the rows" if bcast else "")
               if d is not None else "unused: pass NULL (the kernel has no " + name + ")")
        args.append(Arg(name, T, doc=doc, dtype=d or p.a, dims=("rows", "cols"), strides=(f"stride_{name}", 1),
                        broadcast=("rows",) if bcast else (), unused=d is None))
    same = tuple(n for n in ("a", "b", "c") if p.dtype_of(n) == p.y and n not in p.broadcast)
    # (fp4 pairs: cols / 2 bytes a row, the even column in the low nibble; cols even)
    ycols = packed_dim("cols", p.y)
    args.append(Arg("y", T, doc=f"rows x {ycols} output" + (f", {p.y.value} q with y ~ q * its scale"
                                                             if p.quant_group else ""),
                    dtype=p.y, role="out", dims=("rows", ycols), strides=("stride_y", 1), aliases=same))
    g = p.quant_group
    if g:
        args.append(group_scales_arg(p.y, g, p.quant_mx))
    args += [Arg("rows", S, doc="rows (any number)"), Arg("cols", S, doc="columns (any number)")]
    for name in ("a", "b", "c", "y"):
        cols = ycols if name == "y" else "cols"
        if name in p.broadcast:  # 0 for one row broadcast over the rows
            args.append(Arg(f"stride_{name}", ST, doc=f"elements between rows of {name} (0: one row for all)"))
        else:
            args.append(Arg(f"stride_{name}", ST, doc=f"elements between rows of {name} (>= max(1, {cols}))",
                            at_least=(cols,)))
    if g:
        args += [Arg("groups", S, doc=f"scale groups per row: ceil(cols / {g})"),
                 Arg("stride_scale", ST, doc="elements between rows of y_scale (>= max(1, groups))",
                     at_least=("groups",))]
    doc = "y = " + expr_text(p) + (f", quantized to {p.y.value} with a scale per {g} columns" if g else "")
    return Abi(tuple(args), empty_if=("rows", "cols"), doc=doc, blocks=(("groups", "cols", g),) if g else (),
               divides=((p.y.pack, "cols"),) if p.y.pack > 1 else ())


def expr_text(p) -> str:
    """The expression in one line, as math (``silu(a) * b``)."""
    run = ""

    def name(src: str, k: float) -> str:
        return run if src == "run" else f"{k:g}" if src == "const" else src

    infix = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    for s in p.steps:
        x, y = name(s.lhs, s.k), name(s.rhs, s.k)
        if s.fn in infix:
            run = f"({x} {infix[s.fn]} {y})"
        else:
            run = f"{s.fn}({x}, {y})" if FNS[s.fn].arity == 2 else f"{s.fn}({x})"
    return run[1:-1] if p.steps[-1].fn in infix else run


def launch(threads: int, vec: int, unroll: int) -> Launch:
    return Launch(threads=threads, grid=(GridDim("cols", threads * vec * unroll, split=False), GridDim("rows", 1),
                                         GridDim()))
