"""The row ops' C ABI and launch, as data (see :mod:`ckgen.ir.abi`).

One signature per op (from its default kind's row, kinds.py: weight, bias, the scalar), the same for every kernel
of it (tensors a kernel does not use are ``unused``: NULL)::

    softmax:   x, residual,               y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s, scale
    layernorm: x, residual, weight, bias, y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s, eps
    rmsnorm:   x, residual, weight,       y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s, eps
    quantize:  x, residual,               y, s_out, y_scale, rows, cols, stride_x, stride_res, stride_y, stride_s

A kernel with ``rstd = true`` (rmsnorm: kinds.py ``RowKind.rstd_entry``) takes ``rstd`` (f32, ``rows`` floats: the
row's ``1 / sqrt(mean(v^2) + eps)``) right after ``y_scale``; with ``y = none`` its ``y`` is unused (NULL).

x, residual, y and s_out are ``rows x cols`` row-major with a row stride each (elements, >= cols); weight and bias
are ``cols`` elements; y_scale is ``rows`` floats (int8 / fp8 y only), or with ``quant = group(128)``
``rows x groups`` floats, row-major with the row stride ``stride_scale``: such kernels end with two more arguments,
``groups`` (= ceil(cols / 128), checked; the Python binding derives it) and ``stride_scale`` (>= groups). With
``quant = mx(32)`` (y = e4m3fn, e5m2 or e2m1fn_x2) y_scale is ``rows x groups`` E8M0 bytes (2^(e - 127)), groups =
ceil(cols / 32), with the same two trailing arguments. An fp4 y (``e2m1fn_x2``: two values a byte, the even column
in the low nibble) is ``rows x cols/2`` bytes with its row stride ``stride_y`` in bytes (>= cols / 2); cols must be
even (``divides``: the host entry returns CKGEN_ERROR_INVALID_VALUE, the Python binding names cols). The strides
of unused tensors are not checked.
``scale`` and ``eps`` are runtime scalars whose defaults (the Python callable, ``ckgen run``) are the DSL's.
A kernel that splits its rows (split.py: ``split``, or rows of more than 96 KiB) takes a ``workspace`` last
(zero-filled, left zero-filled; ``ckgen_<kernel>_workspace_bytes``) and launches min(rows * ceil(cols / tile), 65536)
workgroups of one row slice each (split.launch). A kernel with ``max_cols`` (every single-pass kernel, ``looped = false``) takes ``cols <= max_cols``: its host
entry returns ``CKGEN_ERROR_INVALID_VALUE`` above (the binding says so by name). In place: y may be x itself (same dtype), s_out may be x or residual itself.

Launch: 1-D workgroups of ``threads``; ``min(ceil(rows / rows_per_workgroup), 2^20)`` of them (the body's
workgroups loop over the row groups past the grid); nothing when rows or cols is 0.
"""

from __future__ import annotations

from ckgen.ir.abi import Abi, Arg, ArgKind, packed_dim
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.quant import group_scales_arg, qmax
from ckgen.ir.spec import KernelSpec
from ckgen.ir.types import DType
from ckgen.ops.rowops.split import split_of

T, S, ST, SC = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE, ArgKind.SCALAR
#: the largest grid the host entry launches (the body's rowops::kMaxGridBlocks; any grid >= 1 is correct)
GRID_CAP = 2**20


def _matrix(name: str, dtype: DType, stride: str, role: str, doc: str, unused: bool = False,
            aliases: tuple[str, ...] = (), cols: str = "cols") -> Arg:
    """A rows x ``cols`` tensor (``cols/2``: the bytes of a row of fp4 pairs) with row stride ``stride``."""
    return Arg(name, T, doc=doc if not unused else f"unused: pass NULL ({doc})", dtype=dtype, role=role,
               dims=("rows", cols), strides=(stride, 1), unused=unused, aliases=() if unused else aliases)


def abi(spec: KernelSpec) -> Abi:
    r, cfg = spec.params.row, spec.params.config
    kind = r.row_kind
    res = r.residual is not None
    args = [_matrix("x", r.x, "stride_x", "in", "rows x cols input"),
            _matrix("residual", r.res_dtype, "stride_res", "in", "rows x cols, added to x", unused=not res)]
    if kind.weight:
        args.append(Arg("weight", T, doc="cols elements" if r.weight else "unused: pass NULL (no weight)",
                        dtype=r.w_dtype, dims=("cols",), strides=(1,), unused=r.weight is None))
    if kind.bias:
        args.append(Arg("bias", T, doc="cols elements" if r.bias else "unused: pass NULL (no bias)",
                        dtype=r.w_dtype, dims=("cols",), strides=(1,), unused=r.bias is None))
    # (fp4 pairs: cols / 2 bytes a row, the even column in the low nibble; cols even: divides below)
    ycols = packed_dim("cols", r.y)
    y_doc = (f"rows x {ycols} output" + (f", {r.y.value} q with y ~ q * its scale" if r.quantized else "")
             if r.write_y else "y = none: no normalized output")
    args += [_matrix("y", r.y, "stride_y", "out", y_doc, aliases=("x",) if r.y == r.x else (), unused=not r.write_y,
                     cols=ycols),
             _matrix("s_out", r.res_dtype, "stride_s", "out", "rows x cols, s = x + residual (the op's input)",
                     unused=not res, aliases=("x", "residual") if r.res_dtype == r.x else ("residual",)),
             _y_scale(r)]
    if r.rstd:
        args.append(Arg("rstd", T, doc="rows floats: 1 / sqrt(mean(v^2) + eps) of each row (f32)", dtype=DType.F32,
                        role="out", dims=("rows",), strides=(1,)))
    bound = cfg.max_cols  # the kernel's declared bound (a single-pass tile holds it; a looped kernel honours it too)
    cols_doc = "columns (the reduced dimension)" + (f"; at most {bound} (max_cols)" if bound is not None else "")
    args += [Arg("rows", S, doc="rows (any number)"), Arg("cols", S, doc=cols_doc, at_most=bound)]
    for name, what in (("stride_x", "x"), ("stride_res", "residual"), ("stride_y", "y"), ("stride_s", "s_out")):
        cols = ycols if what == "y" else "cols"  # (fp4 pairs: bytes, y's elements)
        args.append(Arg(name, ST, doc=f"elements between rows of {what} (>= max(1, {cols}))", at_least=(cols,)))
    if kind.scalar == "scale":
        args.append(Arg("scale", SC, doc=f"y = {'log_' if r.log else ''}softmax(scale * v) (default {r.scale:g})",
                        default=r.scale))
    elif kind.scalar == "eps":
        args.append(Arg("eps", SC, doc=f"added to the variance (default {r.eps:g})", default=r.eps))
    g = r.quant_group
    if g:
        args += [Arg("groups", S, doc=f"scale groups per row: ceil(cols / {g})"),
                 Arg("stride_scale", ST, doc="elements between rows of y_scale (>= max(1, groups))",
                     at_least=("groups",))]
    if split_of(spec):
        args.append(Arg("workspace", ArgKind.WORKSPACE,
                        doc="split rows' partial statistics and counters: ckgen_<kernel>_workspace_bytes(rows, cols) "
                            "bytes, zero-filled before first use (calls leave it zero-filled)"))
    doc = f"y = {kind.what} of each row of {'s = x + residual' if res else 'x'}" + (
        f", quantized to {r.y.value} with a scale per {f'{g} columns' if g else 'row'}" if r.quantized else "")
    if r.rstd:
        doc = (doc if r.write_y else f"the {kind.what}'s rstd of each row of {'s = x + residual' if res else 'x'}, "
               "no y") + "; rstd = 1 / sqrt(mean(v^2) + eps) per row"
    return Abi(tuple(args), empty_if=("rows", "cols"), doc=doc, blocks=(("groups", "cols", g),) if g else (),
               divides=((r.y.pack, "cols"),) if r.y.pack > 1 and r.write_y else ())


def _y_scale(r) -> Arg:
    """y_scale: the f32 scales of a quantized y (amax / qmax of each row, or of each group of a row; 1 where amax
    is 0), qmax = 127 for i8, the fp8 dtype's largest finite value otherwise; E8M0 bytes with quant = mx(32)
    (ckgen.ir.quant.mx_quantized_values); unused (NULL) otherwise."""
    if not r.quantized:
        return Arg("y_scale", T, doc="unused: pass NULL (y is not quantized)", dtype=DType.F32, role="out",
                   dims=("rows",), strides=(1,), unused=True)
    if r.quant_group:
        return group_scales_arg(r.y, r.quant_group, r.quant_mx)
    return Arg("y_scale", T, doc=f"rows floats: amax / {qmax(r.y):g} of each row of y (1 for an all-zero row)",
               dtype=DType.F32, role="out", dims=("rows",), strides=(1,))


#: the host-side template of a kernel with a few-rows entry (RowPlan.few_groups): small grids launch <name>_few
FEW_PRELAUNCH = "rowops/few_launch.cpp.j2"


def launch(threads: int, rows_per_workgroup: int, few: bool = False) -> Launch:
    """x walks row groups of ``rows_per_workgroup`` rows, at most :data:`GRID_CAP` workgroups; ``few``: the host
    entry launches the few-rows entry instead for small grids (FEW_PRELAUNCH)."""
    return Launch(threads=threads, grid=(GridDim("rows", rows_per_workgroup, cap=GRID_CAP), GridDim(), GridDim()),
                  prelaunch=FEW_PRELAUNCH if few else None)
