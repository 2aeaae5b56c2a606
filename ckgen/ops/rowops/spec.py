"""The row ops' kernel description and DSL keys (softmax, layernorm, rmsnorm: one description for the three).

A row op reads a ``rows x cols`` matrix ``x`` (row-major, a row stride per tensor) and writes ``y`` of the same
shape, one row at a time, reducing over the last dimension:

- ``softmax``: ``y = softmax(scale * v)``, or with ``log = true`` ``log_softmax(scale * v)``;
- ``layernorm``: ``y = (v - mean) / sqrt(var + eps) [* weight] [+ bias]`` (population variance);
- ``rmsnorm``: ``y = v / sqrt(mean(v^2) + eps) [* weight]``;

where ``v = x``, or with a residual ``v = s = x + residual`` rounded to the residual's dtype and written to
``s_out``. ``y = i8`` or an fp8 dtype (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz) quantizes y symmetrically with f32
scales written to ``y_scale``: per row (``quant = row``) or per group of 128 columns (``quant = group(128)``).
``quant = mx(32)`` (OCP microscaling, y = e4m3fn, e5m2 or fp4 pairs e2m1fn_x2: :data:`ckgen.ir.quant.MX_DTYPES`)
writes one E8M0 byte per 32 columns of a row instead (``y_scale`` [rows, ceil(cols / 32)]; ckgen/blocks/mx_quant.h),
as the element-wise op does; ``y = e2m1fn_x2`` (two fp4 values a byte, the even column in the low nibble: y is
``rows x cols/2`` bytes, cols even) takes only ``mx(32)``, its default.
An op whose kind has an rstd entry (kinds.py ``RowKind.rstd_entry``: ``rmsnorm``) takes ``rstd = true``: the
row's ``1 / sqrt(mean(v^2) + eps)`` is also written to ``rstd`` (f32, one per row); with it, ``y = none`` writes
no normalized rows at all (the norm folded into the next GEMM: gamma in its weight, ``scale_a = row`` = rstd),
and then takes no ``weight``.

:func:`build_params` turns the parsed values of one kernel into frozen :class:`RowParams` (defaults resolved
where they do not depend on the target: dtypes of y, residual, weight and bias follow x's). Legality against the
target (dtypes the body generates, vector widths, workgroup, registers, one tile per row) is the planning passes'
job (``plan.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key
from ckgen.ir.quant import GROUP, MX_DTYPES, MX_GROUP, MX_WORD
from ckgen.ir.spec import Value
from ckgen.ir.types import DType
from ckgen.ops.rowops import kinds as K

#: largest ``max_cols`` the DSL accepts (a size argument's range)
MAX_COLS = 2**31 - 1
#: largest finite f32 (scale and eps must be finite f32 numbers)
F32_MAX = 3.4028234663852886e38
DTYPE_WORDS = ("f16", "bf16", "f32")
#: the columns of a scale group (quant = group(128)): the K block of the GEMM's scale_a = block(128)
QUANT_GROUP = GROUP
#: the values of quant (MX_WORD: OCP microscaling, E8M0 scales per MX_GROUP columns, y in MX_DTYPES)
QUANT_WORDS = ("row", f"group({QUANT_GROUP})", MX_WORD)

_Y_DOC = ("f16 | bf16 | f32 | i8 | e4m3fn | e5m2 | e4m3fnuz | e5m2fnuz | e2m1fn_x2 (int8 or fp8 in the target's "
          "encoding: quantized, with f32 scales written to y_scale; see quant. e2m1fn_x2: fp4 pairs, rows x cols/2 "
          "bytes with cols even, quant = mx(32) only)")
#: y dtypes that take only MX scales (fp4 pairs: quant = mx(32) is their default)
_MX_ONLY = tuple(d for d in MX_DTYPES if d.pack > 1)
_Y_NONE_DOC = " | none (with rstd = true: no normalized output, only rstd and s_out; no weight)"
_X = Key("x", "f16 | bf16 | f32: the input's dtype", required=True)
_COMMON_HEAD = (
    Key("quant", f"row | group({QUANT_GROUP}) | {MX_WORD} (an i8 / fp8 y): one f32 scale per row (y_scale [rows]) "
                 f"or per {QUANT_GROUP} columns of a row (y_scale [rows, ceil(cols / {QUANT_GROUP})], row stride "
                 f"stride_scale: the GEMM's scale_a = block(128)); {MX_WORD} (y = "
                 f"{', '.join(d.value for d in MX_DTYPES)}): one E8M0 byte per {MX_GROUP} columns of a row (y_scale "
                 f"[rows, ceil(cols / {MX_GROUP})] bytes, row stride stride_scale: the GEMM's scale_a = mx(32)); "
                 f"y = {', '.join(d.value for d in _MX_ONLY)} takes {MX_WORD} only",
        default_text=f"row; {MX_WORD} for an fp4 y"),
    Key("residual", "none | true (x's dtype) | f16 | bf16 | f32: s = x + residual, rounded to this dtype, is "
                    "written to s_out and the op is applied to it", default_text="none"),
)
_COMMON_TAIL = (
    Key("vec", "1 | 2 | 4 | 8 | 16 elements per vector access, at most 16 bytes of x", default_text="16 bytes of x"),
    Key("threads_per_row", "a power of two, 1..1024: part of a wave, one wave or several waves per row",
        default_text="planned (a table per wave size)"),
    Key("rows_per_workgroup", "1..1024 / threads_per_row, the workgroup a whole number of waves",
        default_text="planned (256 threads)"),
    Key("reg_vecs", "1..16 vectors per thread and tile (registers)", default_text="planned"),
    Key("max_cols", "1..2147483647 or any: the longest row this kernel takes (the host entry refuses longer)",
        default_text="any"),
    Key("looped", "true | false: false holds the row in registers, read once (cols <= one tile); true loops over "
                  "tiles (any cols; rows longer than a tile are read twice)",
        default_text="false when max_cols fits one tile, else true"),
    Key("row_in", "registers | shared: where a row longer than one tile waits between the passes. registers: "
                  "looped rows are read again from global memory; shared: every tile is kept in shared memory "
                  "(LDS) as it is read, the row read from global memory once (looped tiles; needs max_cols; the "
                  "workgroup's rows must fit the target's shared memory per workgroup)",
        default_text="shared when no single pass holds max_cols in registers (for the norms on NVIDIA: nor a "
                     "register-bounded one) and the rows fit the planning limit (NVIDIA 96 KiB, AMD 32 KiB per "
                     "workgroup), else registers"),
    Key("split", "1..32: the most workgroups one row is split over (each holds a slice of one tile in registers, "
                 "the row read once; partial statistics exchanged through a workspace); 1: rows are never split. "
                 "Needs max_cols; not with y = i8, looped = true or row_in",
        default_text="rows of more than 96 KiB (max_cols x the bytes of v) with nothing else given: one workgroup "
                     "per 2048 vectors (16 at most; up to 32 where a slice of 2048 vectors spills on the target), else 1"),
)
#: the values of row_in
ROW_IN = ("registers", "shared")



def keys(op: str) -> tuple[Key, ...]:
    """The DSL keys of row op ``op``, from its kinds (kinds.py): the common ones, its runtime scalar's default,
    a boolean key per variant kind, weight and bias where it takes them."""
    base = K.default(op)
    y = Key("y", _Y_DOC + (_Y_NONE_DOC if base.rstd_entry else ""), default_text="x's dtype")
    own = []
    if base.scalar == "scale":
        own.append(Key("scale", "a finite number: y = softmax(scale * v); the default of the runtime scalar scale",
                       default_text="1.0"))
    own += [Key(k.variant, f"true | false: {k.what}", default_text="false") for k in K.of_op(op) if k.variant]
    if base.weight:
        own.append(Key("weight", "none | true (x's dtype) | f16 | bf16 | f32", default_text="true"))
    if base.bias:
        own.append(Key("bias", "none | true (weight's dtype) | f16 | bf16 | f32 (weight's dtype)",
                       default_text="as weight (both, as torch's LayerNorm, or neither)"))
    if base.scalar == "eps":
        own.append(Key("eps", "a finite number >= 0; the default of the runtime scalar eps", default_text="1e-5"))
    if base.rstd_entry:
        own.append(Key("rstd", "true | false: also write rstd[row] = 1 / sqrt(mean(v^2) + eps), f32, one per row "
                               "(the ABI's rstd after y_scale); with y = none the only per-row output",
                       default_text="false"))
    return (_X, y, *_COMMON_HEAD, *own, *_COMMON_TAIL)


@dataclass(frozen=True)
class RowOpSpec:
    """What one row-op kernel computes. ``op``: a registry name of the kind table (kinds.py); ``variant``: the
    variant key set true (None: the op's default kind). ``residual``, ``weight``, ``bias``: dtypes, None when
    absent (weight and bias share one dtype). ``scale`` (softmax) and ``eps`` (norms): the defaults of the runtime
    scalars."""

    op: str
    x: DType
    y: DType
    residual: DType | None = None
    weight: DType | None = None
    bias: DType | None = None
    variant: str | None = None
    scale: float = 1.0
    eps: float = 1e-5
    quant_group: int = 0  # quantized y: 0 one scale per row, else one per quant_group columns
    quant_mx: bool = False  # MX (quant = mx(32)): E8M0 scale bytes per quant_group (= MX_GROUP) columns
    rstd: bool = False    # also write rstd[row] (the kind's RowKind.rstd_entry)
    write_y: bool = True  # False: y = none (rstd only; y is then x's dtype, unused)

    def __post_init__(self) -> None:
        if self.op not in K.ops():
            raise ValueError(f"row op {self.op}")
        base = K.default(self.op)
        if not base.bias and self.bias is not None:
            raise ValueError(f"{self.op} has no bias")
        if not base.weight and self.weight is not None:
            raise ValueError(f"{self.op} has no weight")
        if self.variant is not None and self.variant not in K.variants(self.op):
            raise ValueError(f"{self.variant} is not a variant of {self.op}")
        if self.weight is not None and self.bias is not None and self.weight != self.bias:
            raise ValueError("weight and bias share one dtype")
        if self.rstd and self.row_kind.rstd_entry is None:
            raise ValueError(f"{self.op} writes no rstd")
        if not self.write_y and (not self.rstd or self.weight is not None or self.bias is not None
                                 or self.y != self.x or self.quant_group):
            raise ValueError("y = none: rstd, no weight or bias, y's placeholder dtype x's")
        if self.quant_mx and (self.quant_group != MX_GROUP or self.y not in MX_DTYPES):
            raise ValueError(f"quant_mx: quant_group {MX_GROUP} and an MX y")
        if self.y in _MX_ONLY and not self.quant_mx:
            raise ValueError(f"y = {self.y.value}: quant_mx only")

    @property
    def quantized(self) -> bool:
        """y is int8, an fp8 dtype or fp4 pairs, written with scales (y_scale: f32, or E8M0 bytes with quant_mx)."""
        return self.y == DType.I8 or self.y.fp8 is not None or self.y in _MX_ONLY

    @property
    def w_dtype(self) -> DType:
        """The element type of weight and bias (x's when the kernel has neither)."""
        return self.weight or self.bias or self.x

    @property
    def res_dtype(self) -> DType:
        """The element type of residual and s_out (x's when the kernel has no residual)."""
        return self.residual or self.x

    @property
    def row_kind(self) -> K.RowKind:
        """The kind's row of the table."""
        return K.kind_of(self.op, self.variant)

    @property
    def kind(self) -> str:
        """The kind's name: softmax, log_softmax, layernorm, rmsnorm (or a registered kind's)."""
        return self.row_kind.name

    @property
    def log(self) -> bool:
        """log-softmax (softmax's variant ``log``)."""
        return self.variant == "log"

    def to_json(self) -> dict:
        d = {"op": self.op, "x": self.x.value, "y": self.y.value,
                "residual": self.residual.value if self.residual else None,
                "weight": self.weight.value if self.weight else None, "bias": self.bias.value if self.bias else None,
                "log": self.log, "scale": self.scale, "eps": self.eps, "quant_group": self.quant_group}
        if self.quant_mx:  # (absent otherwise: the descriptions and cache keys of other kernels as they were)
            d["quant_mx"] = True
        if self.rstd:  # (absent otherwise: the descriptions and cache keys of other kernels as they were)
            d["rstd"] = True
        if not self.write_y:
            d["y"] = "none"
        return d


@dataclass(frozen=True)
class RowConfig:
    """How the rows are cut: None means planned per target (``plan.py``)."""

    vec: int | None = None
    threads_per_row: int | None = None
    rows_per_workgroup: int | None = None
    reg_vecs: int | None = None
    max_cols: int | None = None
    looped: bool | None = None
    row_in: str | None = None   # registers | shared (ROW_IN)
    split: int | None = None    # most workgroups per row (split.py); 1: never split

    def to_json(self) -> dict:
        d = {"vec": self.vec, "threads_per_row": self.threads_per_row,
             "rows_per_workgroup": self.rows_per_workgroup, "reg_vecs": self.reg_vecs,
             "max_cols": self.max_cols, "looped": self.looped, "row_in": self.row_in}
        if self.split is not None:  # (absent when not given: the descriptions and cache keys of other kernels)
            d["split"] = self.split
        return d


@dataclass(frozen=True)
class RowParams:
    row: RowOpSpec
    config: RowConfig

    def to_json(self) -> dict:
        return {"row": self.row.to_json(), "config": self.config.to_json()}


def _optional_dtype(v: Value, param: str, default: DType) -> DType | None:
    """``none`` / ``false`` -> None, ``true`` -> default, else a dtype."""
    if v.kind == "call" and not v.data[1] and v.data[0] in ("none", "false", "true"):
        return default if v.data[0] == "true" else None
    if v.kind == "call" and not v.data[1]:
        try:
            return DType.parse(v.data[0])
        except ValueError:
            pass
    words = ("none", "true", *DTYPE_WORDS)
    raise V.err(f"{param} = {v.text}: expected none, true or a dtype", v.span,
                f"{V.did_you_mean(v.text, words)}legal: {', '.join(words)}")


def _row_in(v: Value) -> str:
    if v.kind == "call" and not v.data[1] and v.data[0] in ROW_IN:
        return v.data[0]
    raise V.err(f"row_in = {v.text}: expected registers or shared", v.span,
                f"{V.did_you_mean(v.text, ROW_IN)}legal: {', '.join(ROW_IN)}")


def _quant(v: Value, y: DType) -> tuple[int, bool]:
    """(group, mx): ``row`` -> (0, False), ``group(128)`` -> (128, False), ``mx(32)`` -> (32, True); only for a
    quantized y (i8, fp8, fp4 pairs), mx(32) only for an MX y (:data:`MX_DTYPES`: OCP fp8, fp4), and the only one for
    fp4 pairs (:data:`_MX_ONLY`)."""
    mx_words = ", ".join(d.value for d in MX_DTYPES)
    if y in _MX_ONLY and not (v.kind == "call" and v.data == ("mx", (str(MX_GROUP),))):
        raise V.err(f"quant = {v.text}: y = {y.value} (fp4 values) takes E8M0 scales per {MX_GROUP} columns",
                    v.span, f"legal: {MX_WORD} (the default for y = {y.value})")
    if y != DType.I8 and y.fp8 is None and y not in _MX_ONLY:
        raise V.err(f"quant = {v.text}: y = {y.value} is not quantized", v.span,
                    "quant takes y = i8, e4m3fn, e5m2, e4m3fnuz or e5m2fnuz (the target's encoding; "
                    f"{MX_WORD}: {mx_words})")
    if v.kind == "call" and v.data == ("mx", (str(MX_GROUP),)):
        if y not in MX_DTYPES:
            raise V.err(f"quant = {v.text}: y = {y.value} has no MX form", v.span,
                        f"{MX_WORD} takes y = {mx_words}; {y.value}: row or group({QUANT_GROUP})")
        return MX_GROUP, True
    if v.kind == "call" and v.data == ("row", ()):
        return 0, False
    if v.kind == "call" and v.data == ("group", (str(QUANT_GROUP),)):
        return QUANT_GROUP, False
    legal = QUANT_WORDS if y in MX_DTYPES else QUANT_WORDS[:2]
    raise V.err(f"quant = {v.text}: expected {', '.join(legal)}", v.span,
                f"{V.did_you_mean(v.text, legal)}legal: {', '.join(legal)}")


def _rstd(v: dict[str, Value]) -> bool:
    """``rstd = true | false`` (only an op whose kind has an rstd entry has the key: keys())."""
    return V.boolean(v["rstd"], "rstd") if "rstd" in v else False


def _y_none(v: dict[str, Value], op: str, rstd: bool) -> bool:
    """Whether ``y = none``: only for an op with the rstd key, and only with ``rstd = true``."""
    if "y" not in v or not (v["y"].kind == "call" and v["y"].data == ("none", ())):
        return False
    dtypes = "f16, bf16, f32, i8, e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e2m1fn_x2"
    if K.default(op).rstd_entry is None:
        raise V.err(f"y = none: op = {op} always writes y", v["y"].span,
                    f"legal: {dtypes} (y = none is op = rmsnorm's, with rstd = true)")
    if not rstd:
        raise V.err("y = none: the kernel would write nothing without rstd = true", v["y"].span,
                    f"add rstd = true (rstd[row] = 1 / sqrt(mean(v^2) + eps)), or give y a dtype: {dtypes}")
    return True


def build_params(op: str, v: dict[str, Value], ctx: BuildContext) -> RowParams:
    """The params of one ``op`` kernel from its parsed values (keys of ``keys(op)``)."""
    del ctx
    base = K.default(op)
    x = V.dtype(v["x"], "x")
    rstd = _rstd(v)
    write_y = not _y_none(v, op, rstd)
    y = V.dtype(v["y"], "y") if "y" in v and write_y else x
    residual = _optional_dtype(v["residual"], "residual", x) if "residual" in v else None
    weight = bias = None
    if base.weight:
        weight = _optional_dtype(v["weight"], "weight", x) if "weight" in v else x if write_y else None
        if weight is not None and not write_y:
            raise V.err(f"weight = {v['weight'].text}: y = none writes no normalized rows for a weight to scale",
                        v["weight"].span, "legal with y = none: weight = none (or leave it out); fold the weight "
                                          "into what consumes rstd (the next GEMM's weight)")
    if base.bias:
        bias = _optional_dtype(v["bias"], "bias", weight or x) if "bias" in v else weight
        if weight is not None and bias is not None and bias != weight:
            raise V.err(f"bias = {bias.value}: weight and bias share one dtype (weight is {weight.value})",
                        v["bias"].span, f"legal: {weight.value}, true or none")
    eps = V.number(v["eps"], "eps", 0.0, F32_MAX) if "eps" in v else 1e-5
    scale = V.number(v["scale"], "scale", -F32_MAX, F32_MAX) if "scale" in v else 1.0
    variant = None
    for key in K.variants(op):
        if key in v and V.boolean(v[key], key):
            if variant is not None:
                raise V.err(f"{key} = true: {op} takes one of {', '.join(K.variants(op))}", v[key].span,
                            f"{variant} is already true")
            variant = key
    if "quant" in v and not write_y:
        raise V.err(f"quant = {v['quant'].text}: y = none writes no y to quantize", v["quant"].span,
                    "leave quant out with y = none, or give y an i8 / fp8 dtype")
    default = (MX_GROUP, True) if y in _MX_ONLY else (0, False)
    group, mx = _quant(v["quant"], y) if "quant" in v else default
    row = RowOpSpec(op, x, y, residual, weight, bias, variant=variant, scale=scale, eps=eps, quant_group=group,
                    quant_mx=mx, rstd=rstd, write_y=write_y)

    max_cols = None
    if "max_cols" in v:
        mv = v["max_cols"]
        if not (mv.kind == "call" and mv.data == ("any", ())):
            max_cols = V.integer(mv, "max_cols", 1, MAX_COLS)
    cfg = RowConfig(
        vec=V.integer(v["vec"], "vec", 1, 16) if "vec" in v else None,
        threads_per_row=V.integer(v["threads_per_row"], "threads_per_row", 1, 1024) if "threads_per_row" in v else None,
        rows_per_workgroup=V.integer(v["rows_per_workgroup"], "rows_per_workgroup", 1, 1024)
        if "rows_per_workgroup" in v else None,
        reg_vecs=V.integer(v["reg_vecs"], "reg_vecs", 1, 16) if "reg_vecs" in v else None,
        max_cols=max_cols,
        looped=V.boolean(v["looped"], "looped") if "looped" in v else None,
        row_in=_row_in(v["row_in"]) if "row_in" in v else None,
        split=V.integer(v["split"], "split", 1, 32) if "split" in v else None,
    )
    return RowParams(row, cfg)
