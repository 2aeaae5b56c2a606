"""The GEMM op's C ABI and launch, as data (see :mod:`ckgen.ir.abi`).

Every GEMM kernel takes, in order::

    A, B, C, bias, [scale_a, scale_b,] [residual,] [positions, cos_sin,] M, N, K, [rope_positions, rope_cols,]
    [batch,] [kb[, nb],] lda, ldb, ldc[, cs_pos_stride][, ld_scale_a, ld_scale_b][, stride_a, stride_b, stride_c,
    stride_bias][, workspace], stream

A is MxK, B is KxN, C is MxN, each row- or column-major as the spec says; ``ld*`` is the stride in elements
between rows (row-major) or columns (column-major). ``bias`` is NULL unless the epilogue has a bias
(length M for ``bias(row)``, N for ``bias(col)``), and C is read only when beta != 0. The bracketed
arguments exist when the kernel is ``batched``: ``batch`` matrices, item b of X at ``X + b * stride_x``;
a batch stride of 0 broadcasts A, B or bias (not C). ``scale_a`` / ``scale_b`` exist when the kernel has scalings
(``scale_a = tensor | row``, ``scale_b = tensor | col``): f32 device tensors of 1, M or N elements, shared by every
batch item; one of them is unused (NULL) when only the other operand is scaled. Block scales (``block(128)`` on
both) add ``kb`` = ceil(K / 128), ``nb`` = ceil(N / 128) (checked) and the scales' leading dimensions. MX scales
(``mx(32)`` on both) are E8M0 bytes, A's M x kb and B's N x kb, row-major, with ``kb`` = ceil(K / 32) (checked) and
the leading dimensions. fp4 pairs (``e2m1fn_x2``: two values per byte along K) make A M x K/2 and B K/2 x N bytes,
``lda`` / ``ldb`` in bytes, and K even (checked). ``workspace`` exists when the kernel's schedule needs one
(split-K, stream-K: :mod:`ckgen.ops.gemm.schedule` sizes it). ``residual`` exists when the epilogue ends in
``-> residual``: an input R laid out exactly as C (dtype, dims, layout, ``ldc``, ``stride_c``) added after the
chain, ``C = chain(...) + R``; C may be the very same view as R (in place). A gated epilogue (``swiglu`` /
``geglu``) takes B of ``2*N`` columns (gate and up, placed as ``gate`` says; ``ldb`` at least 2N when row-major) and
``bias(col)`` of 2N; N is C's columns; ``gate = interleaved(b)`` requires N to be a multiple of b (``divides``). The rotary epilogue (``rope = gptj(hd[,
rot])``) takes ``positions`` (int32 ``[M]``: row i's position, in 0..rope_positions-1; a device-resident one outside
gives that row NaNs in the rotated columns, never a read outside the table), the table ``cos_sin`` (f32
``[rope_positions, rot]``, ``cs_pos_stride`` apart; ``ckgen.rope_table``) and ``rope_cols``: columns
[0, rope_cols) are rotated (q and k of a fused qkv projection; the rest, v, pass through), a multiple of hd.

Grouped kernels (``mode = grouped``: G GEMMs sharing N and K, as ``torch._grouped_mm`` takes a 2-D A and a 3-D
B) take::

    A, B, C, bias, [scale_a, scale_b,] [residual,] offsets, M, N, K, groups, lda, ldb, ldc, [ld_scale_b,] stride_b,
    stride_bias, stream

A is M x K and C is M x N: all groups' rows, sorted by group; ``offsets`` (``groups`` entries of the kernel's
``index`` dtype) holds each group's cumulative end row, so group g is rows [offsets[g-1], offsets[g]) (from 0 for
g = 0) and multiplies B[g] (K x N, item g at ``B + g * stride_b``). Rows past the last offset are not written.
``bias(col)`` is per group (groups x N, ``stride_bias`` apart; 0 broadcasts one), ``bias(row)`` per row (M).
Scales (as ``torch._scaled_grouped_mm``'s): ``scale_a`` one f32 (``tensor``) or one per row (``row``, M);
``scale_b`` one per group (``tensor``, groups) or per group and column (``col``, groups x N, ``ld_scale_b`` apart).
Masked kernels (``mode = masked``: a fixed capacity of M rows per group, for CUDA-graph decode) take::

    A, B, C, bias, [residual,] counts, M, N, K, groups, lda, ldb, ldc, stride_a, stride_b, stride_c, stride_bias, stream

A is groups x M x K and C groups x M x N (item g ``stride_a`` / ``stride_c`` apart); group g's first counts[g]
rows are computed, the rest of its C rows are not written. ``bias(row)`` is groups x M, ``bias(col)`` groups x N.
Offsets and counts that the device reads are clamped to 0..M (a malformed one never moves an access out of the
matrices); the Python binding checks them when they are host arrays.
"""

from __future__ import annotations

from dataclasses import replace

from ckgen.ir import expr as E
from ckgen.ir.abi import Abi, Arg, ArgKind, packed_dim
from ckgen.ir.plan import GridDim, Launch
from ckgen.ir.spec import KernelSpec
from ckgen.ir.types import DType, Layout
from ckgen.ops.gemm.grouped import GROUPED_SCALES
from ckgen.ops.gemm.schedule import scheduled_launch
from ckgen.ops.gemm.spec import MX_BLOCK, SCALE_BLOCK, resolve_schedule

T, S, ST = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE
#: the groups `ckgen run` draws when --size does not say (calls take them from the offsets / counts tensor)
GROUPS_DEFAULT = 4


def bias_dtype(c_dtype: DType) -> DType:
    """The bias vector's element type: C's for float C, f32 for integer C."""
    return c_dtype if c_dtype.is_float else DType.F32


def _matrix(name: str, dtype: DType, layout: Layout, rows: str, cols: str, ld: str, batch: str | None,
            role: str = "in", broadcast: bool = True, doc: str = "", outer: str = "batch") -> Arg:
    """A matrix argument: (rows x cols) in ``layout``, optionally with a leading dim ``outer`` (batch, groups)
    whose stride argument is ``batch``."""
    dims: tuple[str, ...] = (rows, cols)
    strides: tuple[str | int, ...] = (ld, 1) if layout == Layout.ROW else (1, ld)
    bcast: tuple[str, ...] = ()
    if batch is not None:
        dims, strides = (outer, *dims), (batch, *strides)
        bcast = (outer,) if broadcast else ()
    return Arg(name, T, doc=doc, dtype=dtype, role=role, dims=dims, strides=strides, broadcast=bcast)


def b_cols(g) -> str:
    """B's columns: N, or 2*N (gate and up) for a gated epilogue."""
    return "2*N" if g.gated else "N"


def gate_doc(g) -> str:
    if not g.gated:
        return ""
    if g.gate == "halves":
        return ": gate columns [0, N), up columns [N, 2N)"
    return f": blocks of {g.gate_block} gate then {g.gate_block} up columns"


def gate_divides(g) -> tuple:
    """interleaved(b): N a multiple of the block (whole blocks of gate and up columns)."""
    return ((g.gate_block, "N"),) if g.gate == "interleaved" else ()


def residual(g, stride: str | None, doc: str, outer: str = "batch") -> Arg:
    """The residual R of ``epilogue = ... -> residual``: C's dtype, dims and layout, read with C's leading
    dimension (and batch / group stride): element (i, j) of R at the offset of C's (i, j). C may be the very
    same view (in place: C += chain(...))."""
    return _matrix("residual", g.c.dtype, g.c.layout, "M", "N", "ldc", stride, broadcast=False, outer=outer,
                   doc=f"{doc}: added after the epilogue chain; C's dtype, layout and leading dimension")


def rope_args(g) -> tuple[list[Arg], list[Arg], list[Arg]]:
    """The rotary epilogue's inputs (module docstring): its tensors (after the bias), sizes (after K: the dispatcher
    and the cost model read M, N, K first) and stride (after ldc)."""
    rot = g.rope.dim
    tensors = [Arg("positions", T, dtype=DType.I32, dims=("M",), strides=(1,),
                   value_range=(0, E.add("rope_positions", -1)),
                   doc="int32 [M]: each row's position (its row of cos_sin), 0..rope_positions-1"),
               Arg("cos_sin", T, dtype=DType.F32, dims=("rope_positions", rot), strides=("cs_pos_stride", 1),
                   doc=f"f32 [rope_positions, {rot}]: per position the {rot // 2} cosines, then the sines "
                       "(ckgen.rope_table)")]
    sizes = [Arg("rope_positions", S, default=0, doc="rows of cos_sin"),
             Arg("rope_cols", S, doc=f"columns rotated from 0 (a multiple of {g.rope_head}; the rest pass through)")]
    return tensors, sizes, [Arg("cs_pos_stride", ST, doc="elements between positions of cos_sin")]


def _scale(name: str, kind: str | None, size: str) -> Arg:
    """A scale tensor: one f32 (``tensor``), one per row of A / column of B (length ``size``), blocks (``block``:
    A's M x kb, B's nb x kb, row-major with a leading dimension); unused (NULL) when only the other operand is
    scaled."""
    if kind == "mx":
        rows = "M" if name == "scale_a" else "N"
        what = "row of A" if name == "scale_a" else "column of B"
        return Arg(name, T, doc=f"{rows} x kb e8m0 bytes: one exponent (2^(e - 127)) per {what} and {MX_BLOCK} K's",
                   dtype=DType.E8M0, dims=(rows, "kb"), strides=(f"ld_{name}", 1))
    if kind == "block":
        rows, doc = ("M", "M x kb: one f32 per row of A and 128 K's") if name == "scale_a" else \
            ("nb", "nb x kb: one f32 per 128 x 128 block of B (N blocks x K blocks)")
        return Arg(name, T, doc=doc, dtype=DType.F32, dims=(rows, "kb"), strides=(f"ld_{name}", 1))
    if kind is None:
        return Arg(name, T, doc="unused: pass NULL", dtype=DType.F32, dims=(1,), strides=(1,), unused=True)
    if kind == "tensor":
        return Arg(name, T, doc="one f32: the whole operand's scale", dtype=DType.F32, dims=(1,), strides=(1,))
    return Arg(name, T, doc=f"length {size}: one f32 scale per {kind} ({kind} scaling)", dtype=DType.F32,
               dims=(size,), strides=(1,))


def abi(spec: KernelSpec) -> Abi:
    g = spec.params.gemm
    if g.grouped:
        return _grouped_abi(spec)
    batched = g.batched
    sb = (lambda x: x) if batched else (lambda x: None)
    # fp4 pairs (e2m1fn_x2, A row-major, B column-major): K/2 bytes along K, K even (divides below)
    kx = packed_dim("K", g.a.dtype)
    pairs = "" if kx == "K" else ", two fp4 values per byte along K"
    a = _matrix("A", g.a.dtype, g.a.layout, "M", kx, "lda", sb("stride_a"), doc="M x K" + pairs)
    nb = b_cols(g)
    b = _matrix("B", g.b.dtype, g.b.layout, kx, nb, "ldb", sb("stride_b"), doc=f"K x {nb}" + gate_doc(g) + pairs)
    c = _matrix("C", g.c.dtype, g.c.layout, "M", "N", "ldc", sb("stride_c"), role="inout" if g.beta != 0 else "out",
                broadcast=False, doc="M x N" + (", read (beta != 0)" if g.beta != 0 else ""))
    if g.residual:
        c = replace(c, aliases=("residual",))
    axis = g.bias_axis
    bias_len = "M" if axis == "row" else nb
    bias = Arg("bias", T, doc=f"length {bias_len} (bias({axis}))" if axis else "unused: pass NULL",
               dtype=bias_dtype(g.c.dtype), dims=(("batch",) if batched else ()) + (bias_len,),
               strides=(("stride_bias",) if batched else ()) + (1,),
               broadcast=("batch",) if batched else (), unused=axis is None)

    def ld(name: str, layout: Layout, row_major_extent: str, col_major_extent: str) -> Arg:
        ext = row_major_extent if layout == Layout.ROW else col_major_extent
        return Arg(name, ST, doc=f"leading dimension (>= max(1, {ext}))", at_least=(ext,))

    args = [a, b, c, bias]
    if g.scale_a is not None or g.scale_b is not None:  # fp8 scalings: f32 device tensors, shared by a batch
        # (mx(32) beside block(128) is refused by the planner; its ABI, built first, takes the MX shapes)
        ka, kb = (("mx" if g.mx_scaled and k == "block" else k) for k in (g.scale_a, g.scale_b))
        args += [_scale("scale_a", ka, "M"), _scale("scale_b", kb, "N")]
    if g.residual:
        args.append(residual(g, sb("stride_c"), "M x N"))
    rope_tensors, rope_sizes, rope_strides = rope_args(g) if g.rope is not None else ([], [], [])
    args += rope_tensors
    args += [Arg("M", S, doc="rows of A and C"), Arg("N", S, doc="columns of B and C"),
             Arg("K", S, doc="columns of A, rows of B (0: C = epilogue(beta * C))")] + rope_sizes
    if batched:
        args.append(Arg("batch", S, doc="matrices in the batch", default=1))
    if g.block_scaled and not g.mx_scaled:  # (mx with block(128) is refused by the planner)
        args += [Arg("kb", S, doc=f"K blocks of the block scales: ceil(K / {SCALE_BLOCK})"),
                 Arg("nb", S, doc=f"N blocks of B's block scales: ceil(N / {SCALE_BLOCK})")]
    if g.mx_scaled:
        args.append(Arg("kb", S, doc=f"K blocks of the MX scales: ceil(K / {MX_BLOCK})"))
    args += [ld("lda", g.a.layout, kx, "M"), ld("ldb", g.b.layout, nb, kx), ld("ldc", g.c.layout, "N", "M")]
    args += rope_strides
    if g.block_scaled or g.mx_scaled:
        args += [Arg("ld_scale_a", ST, doc="leading dimension of scale_a (>= max(1, kb))", at_least=("kb",)),
                 Arg("ld_scale_b", ST, doc="leading dimension of scale_b (>= max(1, kb))", at_least=("kb",))]
    if batched:
        args += [Arg("stride_a", ST, doc="elements between A matrices (0: one A for all)"),
                 Arg("stride_b", ST, doc="elements between B matrices (0: one B for all)"),
                 Arg("stride_c", ST, doc="elements between C matrices"),
                 Arg("stride_bias", ST, doc="elements between bias vectors (0: one for all)")]
    if resolve_schedule(spec.params.config, g).uses_workspace:
        args.append(Arg("workspace", ArgKind.WORKSPACE,
                        doc="scratch of the split-K / stream-K schedule: ckgen_<kernel>_workspace_bytes(M, N, K) bytes, "
                            "zero-filled before first use (calls leave it zero-filled)"))
    empty = ("M", "N", "batch") if batched else ("M", "N")
    blocks = (("kb", "K", MX_BLOCK),) if g.mx_scaled else \
        (("kb", "K", SCALE_BLOCK), ("nb", "N", SCALE_BLOCK)) if g.block_scaled else ()
    divides = gate_divides(g) + (((g.rope_head, "rope_cols"),) if g.rope is not None else ()) + \
        (((g.a.dtype.pack, "K"),) if kx != "K" else ())
    return Abi(tuple(args), empty_if=empty, blocks=blocks, divides=divides,
               doc="C = epilogue(alpha * A.B + beta * C), cast to C's dtype" + (", for each of batch matrices" if batched else ""))


def _ld(name: str, layout: Layout, row_major_extent: str, col_major_extent: str) -> Arg:
    ext = row_major_extent if layout == Layout.ROW else col_major_extent
    return Arg(name, ST, doc=f"leading dimension (>= max(1, {ext}))", at_least=(ext,))


def _grouped_scale_b(kind: str | None) -> Arg:
    """B's scales of a grouped kernel: one f32 per group (``tensor``) or per group and column (``col``: groups x N,
    ``ld_scale_b`` apart), as ``torch._scaled_grouped_mm`` takes them."""
    if kind == "col":
        return Arg("scale_b", T, doc="groups x N: one f32 scale per group and column of B (col scaling)",
                   dtype=DType.F32, dims=("groups", "N"), strides=("ld_scale_b", 1))
    if kind == "tensor":
        return Arg("scale_b", T, doc="groups: one f32 scale per group's B (tensor scaling)", dtype=DType.F32,
                   dims=("groups",), strides=(1,))
    return _scale("scale_b", None, "N")


def _grouped_abi(spec: KernelSpec) -> Abi:
    """The grouped and masked layouts (module docstring)."""
    g = spec.params.gemm
    masked = g.mode == "masked"
    a = _matrix("A", g.a.dtype, g.a.layout, "M", "K", "lda", "stride_a" if masked else None, broadcast=False,
                outer="groups", doc="groups x M x K (M rows per group)" if masked else "M x K, rows sorted by group")
    nb = b_cols(g)
    b = _matrix("B", g.b.dtype, g.b.layout, "K", nb, "ldb", "stride_b", broadcast=False, outer="groups",
                doc=f"groups x K x {nb}: B[g] multiplies group g" + gate_doc(g))
    c = _matrix("C", g.c.dtype, g.c.layout, "M", "N", "ldc", "stride_c" if masked else None, broadcast=False,
                outer="groups", role="inout" if g.beta != 0 else "out",
                doc=("groups x M x N" if masked else "M x N") + (", read (beta != 0)" if g.beta != 0 else ""))
    axis = g.bias_axis
    if axis == "col":
        bias_dims, bias_strides, bcast = ("groups", nb), ("stride_bias", 1), ("groups",)
    elif masked:
        bias_dims, bias_strides, bcast = ("groups", "M"), ("stride_bias", 1), ("groups",)
    else:
        bias_dims, bias_strides, bcast = ("M",), (1,), ()
    bias = Arg("bias", T, doc=f"{' x '.join(bias_dims)} (bias({axis}))" if axis else "unused: pass NULL",
               dtype=bias_dtype(g.c.dtype), dims=bias_dims, strides=bias_strides, broadcast=bcast,
               unused=axis is None)
    # scales (GROUPED_SCALES, mode = grouped: the planner's rules; block / mx, which it refuses, take the row / col
    # shapes here: the ABI is built before planning)
    ka, kb = (k if k is None or k in GROUPED_SCALES[p] else GROUPED_SCALES[p][-1]
              for p, k in (("scale_a", g.scale_a), ("scale_b", g.scale_b)))
    extra = [_scale("scale_a", ka, "M"), _grouped_scale_b(kb)] if ka or kb else []
    if g.residual:
        c = replace(c, aliases=("residual",))
        extra += [residual(g, "stride_c" if masked else None, "groups x M x N" if masked else "M x N",
                           outer="groups")]
    if masked:
        index = Arg("counts", T, dtype=g.index, dims=("groups",), strides=(1,), offsets_of="M", offsets_form="counts",
                    doc="rows of each group, each in 0..M")
    else:
        index = Arg("offsets", T, dtype=g.index, dims=("groups",), strides=(1,), offsets_of="M", offsets_form="ends",
                    doc="cumulative end row of each group: non-decreasing, the last at most M")
    args = [a, b, c, bias, *extra, index,
            Arg("M", S, doc="rows of each group's capacity" if masked else "rows of A and C (all groups)"),
            Arg("N", S, doc="columns of B and C"), Arg("K", S, doc="columns of A, rows of B (0: C = epilogue(beta * C))"),
            Arg("groups", S, doc="groups (experts): entries of " + index.name, default=GROUPS_DEFAULT),
            _ld("lda", g.a.layout, "K", "M"), _ld("ldb", g.b.layout, nb, "K"), _ld("ldc", g.c.layout, "N", "M")]
    if kb == "col":
        args.append(Arg("ld_scale_b", ST, doc="elements between the groups' rows of scale_b (>= max(1, N))",
                        at_least=("N",)))
    if masked:
        args.append(Arg("stride_a", ST, doc="elements between A's groups"))
    args.append(Arg("stride_b", ST, doc="elements between B's groups"))
    if masked:
        args.append(Arg("stride_c", ST, doc="elements between C's groups"))
    args.append(Arg("stride_bias", ST, doc="elements between the bias vectors of groups (0: one for all)"))
    return Abi(tuple(args), empty_if=("M", "N", "groups"), divides=gate_divides(g),
               doc=f"C = epilogue(alpha * A.B[g] + beta * C) per group g ({g.mode}), cast to C's dtype")


def launch(spec: KernelSpec, threads: int, tma: bool, schedule=None) -> Launch:
    """One workgroup per C tile: x walks N tiles, y walks M tiles, z the batch. With the Hopper body the host
    entry first tries it (ops/gemm/tma_launch.cpp.j2). A split-K / stream-K kernel's grid, values and workspace
    come from its :class:`~ckgen.ops.gemm.body.SchedulePlan` (``schedule``)."""
    cfg = spec.params.config
    if spec.params.gemm.grouped:
        raise ValueError("grouped kernels launch with grouped_launch")
    if schedule is not None and schedule.kind != "tile":

        out_tile = (cfg.tile[0], out_tile_n(spec), cfg.tile[2])  # (tiles of C: half the N of B's for a gated one)
        return scheduled_launch(out_tile, threads, schedule,
                                prelaunch="gemm/tma_sched_launch.cpp.j2" if tma else None)
    z = GridDim("batch") if spec.params.gemm.batched else GridDim()
    # (gated: no sub-problems along N, whose slices would move B's up columns)
    n = GridDim("N", out_tile_n(spec), split=not spec.params.gemm.gated)
    return Launch(threads=threads, grid=(n, GridDim("M", cfg.tile[0]), z),
                  prelaunch="gemm/tma_launch.cpp.j2" if tma else None)


def out_tile_n(spec: KernelSpec) -> int:
    """The columns of C one tile writes: the tile's N, half of it (gate and up) with a gated epilogue."""
    tn = spec.params.config.tile[1]
    return tn // 2 if spec.params.gemm.gated else tn


def grouped_tiles_expr(spec: KernelSpec) -> E.Expr:
    """An upper bound of the C tiles of a grouped / masked call: grouped, sum over g of ceil(rows_g / tile M)
    <= ceil(M / tile M) + groups row tiles; masked, groups x ceil(M / tile M); times ceil(N / tile N)."""
    tm, tn = spec.params.config.tile[0], out_tile_n(spec)
    rows = E.add(E.cdiv("M", tm), "groups") if spec.params.gemm.mode == "grouped" else E.mul("groups", E.cdiv("M", tm))
    return E.mul(rows, E.cdiv("N", tn))


def grouped_launch(spec: KernelSpec, threads: int, workers: int, tma: bool = False) -> Launch:
    """A persistent grid of at most ``workers`` workgroups (never more than the tiles' bound) that walk every
    group's tiles (device/gemm_grouped.h). With the Hopper body the host entry first tries it
    (ops/gemm/tma_grouped_launch.cpp.j2)."""
    return Launch(threads=threads, grid=(GridDim(expr="workers"), GridDim(), GridDim()),
                  values=(("workers", E.emax(1, E.emin(workers, grouped_tiles_expr(spec)))),),
                  prelaunch="gemm/tma_grouped_launch.cpp.j2" if tma else None)
