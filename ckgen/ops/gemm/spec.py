"""The GEMM op's kernel description and its DSL keys.

``C = epilogue(alpha * A @ B + beta * C)`` cast to C's dtype; A is MxK, B is KxN, C is MxN. The chain may end in
``residual`` (``+ R``, an input laid out as C) and may be gated (``swiglu`` / ``geglu``: B is K x 2N, gate and up
columns as ``gate`` says, C = act(gate) * up). ``rope = gptj(head_dim[, rot])`` rotates the finished values of
adjacent column pairs (the qkv projection's rotary embedding, written rotated: :data:`ROPE_WORDS`). With
``batched = true`` every operand gains a leading batch dimension with its own batch stride (0 broadcasts). With
``mode = grouped`` (or ``masked``) it is G GEMMs sharing N and K with rows per group given at run time (the
mixture-of-experts layouts: :mod:`ckgen.ops.gemm.abi`).
:func:`build_params` turns the parsed values of one kernel into a frozen :class:`GemmParams`; every class
checks its structural invariants in ``__post_init__`` (target legality is the planning passes' job).
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key
from ckgen.ir.rope import Rope
from ckgen.ir.spec import TensorSpec, Value
from ckgen.ir.types import DType

EPILOGUE_KINDS = ("bias", "relu", "gelu", "silu", "swiglu", "geglu", "residual")
BIAS_AXES = ("row", "col")
EPILOGUE_WORDS = ("bias(row)", "bias(col)", "relu", "gelu", "silu", "swiglu", "geglu", "residual", "cast(<C dtype>)",
                  "none")
#: gated epilogues (docs/dsl.md): C = act(A.B_gate) * (A.B_up), B holding 2 N columns; their gate activation
GATED = {"swiglu": "silu", "geglu": "gelu"}
#: how B's 2 N columns hold the gate and up projections: ``halves`` (gate columns [0, N), up [N, 2N): the merged
#: gate_up weight of HF / vLLM) or ``interleaved(b)`` (blocks of b gate columns and b up columns alternating)
GATE_FORMS = ("halves", "interleaved")
GATE_WORDS = "halves, interleaved(b) with b a power of two in 8..256"
GATE_BLOCKS = (8, 16, 32, 64, 128, 256)
DEFAULT_ACC = {DType.F16: DType.F32, DType.BF16: DType.F32, DType.F32: DType.F32, DType.I8: DType.I32,
               DType.E4M3FN: DType.F32, DType.E5M2: DType.F32, DType.E4M3FNUZ: DType.F32, DType.E5M2FNUZ: DType.F32,
               DType.E2M1FN_X2: DType.F32, DType.F64: DType.F64}
#: the work schedules (docs/dsl.md): one workgroup per C tile; K split over workgroups; stream-K workers
SCHEDULES = ("tile", "splitk", "streamk", "auto")
SCHEDULE_WORDS = "tile, splitk, splitk(S), splitk(S, atomic), splitk(atomic), streamk, auto"
#: the problem's shape (docs/dsl.md): one GEMM (or a strided batch); groups of rows by end offsets; groups of a
#: fixed row capacity with a count each
MODES = ("dense", "grouped", "masked")
#: dtypes of the offsets / counts tensor of a grouped / masked kernel
INDEX_DTYPES = (DType.I32, DType.I64)
#: scalings of A and B (docs/dsl.md, "fp8 scalings"): one f32 for the whole operand, one per row of A / column of B,
#: or blocks (``block(128)``: A per row and 128 K's, B per 128 x 128 block), applied per K block in registers; or
#: OCP microscaling (``mx(32)``: one E8M0 exponent per row of A / column of B and 32 K's, applied by the MFMA)
SCALE_A = ("tensor", "row", "block", "mx")
SCALE_B = ("tensor", "col", "block", "mx")
SCALE_BLOCK = 128
MX_BLOCK = 32
#: the rotary embedding of the epilogue (docs/dsl.md, "RoPE in the GEMM epilogue"): adjacent columns (2i, 2i + 1) of
#: each head of ``head_dim`` columns are a pair (gptj); a lane holds both or its neighbour does, on every body
ROPE_WORDS = "none, gptj(head_dim) or gptj(head_dim, rot): head_dim even in 2..1024, rot even in 2..head_dim"
#: split counts a kernel may fix (splitk(S))
MIN_SPLITS, MAX_SPLITS = 2, 64

KEYS = (
    Key("A", "<dtype> row|col; dtypes f16 bf16 f32 i8, fp8: e4m3fn e5m2 (OCP) e4m3fnuz e5m2fnuz (FNUZ)",
        required=True),
    Key("B", "<dtype> row|col (A's dtype; for fp8 A any fp8 dtype of A's encoding)", required=True),
    Key("C", "<dtype> row|col; f16 bf16 f32 (float acc), i32 i8 f32 (i32 acc)", required=True),
    Key("acc", "f32 (f16/bf16/f32/fp8 inputs), i32 (i8)", default_text="by input dtype"),
    Key("alpha", "a finite f32 number", default_text="1.0"),
    Key("beta", "a finite f32 number", default_text="0.0"),
    Key("tile", "MxNxK", required=True),
    Key("waves", "MxN", required=True),
    Key("instr", "MxNxK of a matrix instruction of the target, auto, or none (the vector body: no matrix "
                 "instruction, for M of a few rows against a K-contiguous B)", default_text="the best legal one"),
    Key("lds_buffers", "1..the target body's maximum (2 on AMD, 6 on NVIDIA)", default_text="2"),
    Key("prefetch", "0 or 1", default_text="1"),
    Key("cluster", "1, 2 or auto: thread blocks per cluster of the Hopper body (sm_90), along M; 2: two M-adjacent "
                   "tiles load their shared B tile once, by TMA multicast (tile schedule, dense, no block scales)",
        default_text="auto"),
    Key("vec_a", "a power of two, at most 16 bytes, dividing the tile's contiguous extent", default_text="chosen"),
    Key("vec_b", "as vec_a", default_text="chosen"),
    Key("vec_c", "as vec_a", default_text="chosen"),
    Key("epilogue", f"a chain of {', '.join(EPILOGUE_WORDS)}", default_text="none"),
    Key("batched", "true or false: a batch dimension with batch strides for A, B, C and bias (0 broadcasts)",
        default_text="false"),
    Key("schedule", f"{SCHEDULE_WORDS}; S in {MIN_SPLITS}..{MAX_SPLITS}", default_text="tile"),
    Key("mode", "dense, grouped (rows of A and C in groups by end offsets, B per group) or masked (groups of a "
                "fixed row capacity, a count each)", default_text="dense"),
    Key("index", "i32 or i64: the dtype of the offsets (grouped) or counts (masked) tensor", default_text="i32"),
    Key("gate", f"{GATE_WORDS}: where a gated epilogue (swiglu, geglu) finds the gate and up columns of B",
        default_text="halves"),
    Key("scale_a", "tensor (one f32), row (M f32), block(128) (M x ceil(K/128) f32) or mx(32) (M x ceil(K/32) "
                   "e8m0 bytes, gfx950): A's dequantization scale, read from device memory", default_text="none"),
    Key("scale_b", "tensor (one f32), col (N f32), block(128) (ceil(N/128) x ceil(K/128) f32) or mx(32) (N x "
                   "ceil(K/32) e8m0 bytes, gfx950): B's dequantization scale", default_text="none"),
    Key("rope", f"{ROPE_WORDS}: the epilogue rotates the columns [0, rope_cols) of each row at its position "
                "(positions, cos_sin at run time)", default_text="none"),
)


@dataclass(frozen=True)
class Schedule:
    """How workgroups share the work. ``tile``: one per C tile. ``splitk``: each C tile's K range split over
    ``splits`` workgroups (0: a count chosen per call from the shape), partial sums reduced through the workspace
    in a fixed order, or with atomics when ``atomic`` (then the order is not fixed). ``streamk``: a persistent grid
    of workers sharing all tiles' K iterations evenly. ``auto``: the planner chooses (:func:`resolve_schedule`)."""

    kind: str = "tile"
    splits: int = 0
    atomic: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise ValueError(f"schedule {self.kind}")
        if self.kind != "splitk" and (self.splits or self.atomic):
            raise ValueError("only splitk takes a split count or atomic")
        if self.splits and not MIN_SPLITS <= self.splits <= MAX_SPLITS:
            raise ValueError(f"splits {self.splits}")

    @property
    def text(self) -> str:
        if self.kind != "splitk" or not (self.splits or self.atomic):
            return self.kind
        args = ([str(self.splits)] if self.splits else []) + (["atomic"] if self.atomic else [])
        return f"splitk({', '.join(args)})"

    @property
    def uses_workspace(self) -> bool:
        return self.kind in ("splitk", "streamk")

    def to_json(self) -> dict:
        return {"kind": self.kind, "splits": self.splits, "atomic": self.atomic}


#: ``schedule = auto`` picks split-K (a count per call) for tiles of at most this many rows: alone they leave
#: most of a GPU idle on the small-M (decode) shapes they are for
SMALL_M_TILE = 64


def resolve_schedule(cfg: TileConfig, gemm: GemmSpec | None = None) -> Schedule:
    """The schedule a kernel runs: its own, or for ``auto`` split-K (count per call) when the tile has at most
    :data:`SMALL_M_TILE` rows and one workgroup per tile otherwise (always for a rotary epilogue, which split-K does
    not take, and for a gated one, which keeps the ABI it had before gated pieces existed: ``splitk`` splits it).
    Target-independent (the ABI follows it)."""
    s = cfg.schedule
    if s.kind != "auto":
        return s
    whole = gemm is not None and (gemm.gated is not None or gemm.rope is not None)
    return Schedule("splitk") if cfg.tile[0] <= SMALL_M_TILE and not whole else Schedule("tile")


def _cluster(v: Value) -> int:
    """``cluster = 1 | 2 | auto`` (auto: 0)."""
    if v.kind == "call" and v.data == ("auto", ()):
        return 0
    if v.kind != "number" or v.text.strip() not in ("1", "2"):
        raise V.err(f"cluster = {v.text}: expected a cluster size", v.span, "legal: 1, 2 or auto")
    return int(v.text)


def _schedule(v: Value) -> Schedule:
    """``schedule = tile | streamk | auto | splitk | splitk(S) | splitk(S, atomic) | splitk(atomic)``."""
    legal = f"legal: {SCHEDULE_WORDS} (S an integer in {MIN_SPLITS}..{MAX_SPLITS})"
    if v.kind != "call":
        raise V.err(f"schedule = {v.text}: expected a schedule", v.span, legal)
    name, args = v.data
    if name not in ("tile", "splitk", "streamk", "auto"):
        raise V.err(f"schedule = {v.text}: unknown schedule '{name}'", v.span,
                    f"{V.did_you_mean(name, ('tile', 'splitk', 'streamk', 'auto'))}{legal}")
    if name != "splitk":
        if args:
            raise V.err(f"schedule = {v.text}: {name} takes no arguments", v.span, legal)
        return Schedule(name)
    splits, atomic = 0, False
    for i, a in enumerate(args):
        if a == "atomic" and i == len(args) - 1:
            atomic = True
        elif i == 0 and a.lstrip("+").isdigit():
            splits = int(a)
            if not MIN_SPLITS <= splits <= MAX_SPLITS:
                raise V.err(f"schedule = {v.text}: split count {splits} is out of range", v.span,
                            f"legal: S in {MIN_SPLITS}..{MAX_SPLITS}, or splitk with no count (chosen per call)")
        else:
            raise V.err(f"schedule = {v.text}: splitk takes a split count and/or 'atomic'", v.span, legal)
    return Schedule("splitk", splits, atomic)


@dataclass(frozen=True)
class EpilogueOp:
    """One step of the epilogue chain. ``bias`` has an ``axis``: ``row`` (one value per row of C, length M)
    or ``col`` (one per column, length N)."""

    kind: str
    axis: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EPILOGUE_KINDS:
            raise ValueError(f"unknown epilogue op {self.kind}")
        if (self.kind == "bias") != (self.axis is not None):
            raise ValueError("bias takes an axis, other ops none")
        if self.axis is not None and self.axis not in BIAS_AXES:
            raise ValueError(f"bias axis {self.axis}")

    @property
    def text(self) -> str:
        return f"bias({self.axis})" if self.axis else self.kind

    def to_json(self) -> dict:
        return {"kind": self.kind, "axis": self.axis}


@dataclass(frozen=True)
class GemmSpec:
    """``C = epilogue(alpha * A @ B + beta * C)``, cast to C's dtype. A is MxK, B is KxN. ``epilogue`` may end in a
    ``residual`` op (``+ R`` after the chain) and may hold one gated op (``swiglu`` / ``geglu``, after a bias at
    most): then B is K x 2N, ``gate`` (``halves`` / ``interleaved``, with ``gate_block``) places its gate and up
    columns, C = act(chain(gate)) * chain(up) and beta is 0."""

    a: TensorSpec
    b: TensorSpec
    c: TensorSpec
    acc: DType
    alpha: float = 1.0
    beta: float = 0.0
    epilogue: tuple[EpilogueOp, ...] = ()
    batched: bool = False
    mode: str = "dense"
    index: DType = DType.I32
    #: dequantization scales (``None``: none): ``tensor`` / ``row`` for A, ``tensor`` / ``col`` for B; the result
    #: is ``alpha * (scale_a * scale_b) * (A.B)`` before beta, the chain and the cast
    scale_a: str | None = None
    scale_b: str | None = None
    #: gated epilogues: ``halves`` or ``interleaved`` with ``gate_block`` columns per block (None: not gated)
    gate: str | None = None
    gate_block: int = 0
    #: rotary embedding of the finished values (None: none): ``rope.dim`` rotated elements of each ``rope_head``
    #: columns (style gptj: adjacent pairs)
    rope: Rope | None = None
    rope_head: int = 0

    def __post_init__(self) -> None:
        if (self.rope is None) != (self.rope_head == 0) or (
                self.rope is not None and (self.rope.style != "gptj" or self.rope_head % 2
                                           or self.rope.dim > self.rope_head)):
            raise ValueError(f"rope {self.rope} over heads of {self.rope_head}")
        if sum(1 for op in self.epilogue if op.kind == "bias") > 1:
            raise ValueError("at most one bias in the epilogue")
        if any(op.kind == "residual" for op in self.epilogue[:-1]):
            raise ValueError("residual ends the epilogue chain")
        if self.mode not in MODES or self.index not in INDEX_DTYPES:
            raise ValueError(f"mode {self.mode}, index {self.index}")
        if self.batched and self.mode != "dense":
            raise ValueError("grouped and masked kernels are not batched")
        if self.scale_a not in (None, *SCALE_A) or self.scale_b not in (None, *SCALE_B):
            raise ValueError(f"scales {self.scale_a}, {self.scale_b}")
        gated = [op for op in self.epilogue if op.kind in GATED]
        if (self.gate is not None) != bool(gated) or len(gated) > 1:
            raise ValueError("a gated epilogue has one gate op and a gate form")
        if self.gate is not None and (self.gate not in GATE_FORMS
                                      or (self.gate == "interleaved") != (self.gate_block in GATE_BLOCKS)):
            raise ValueError(f"gate {self.gate}({self.gate_block})")

    @property
    def grouped(self) -> bool:
        """Grouped or masked: groups of rows, one B (and bias(col)) per group."""
        return self.mode != "dense"

    @property
    def residual(self) -> bool:
        """``-> residual`` ends the chain: ``C = chain(...) + R``, R a separate input laid out as C."""
        return bool(self.epilogue) and self.epilogue[-1].kind == "residual"

    @property
    def chain(self) -> tuple[EpilogueOp, ...]:
        """The element-wise ops before the residual (bias, activations); gated: before the gate (a bias)."""
        ops = self.epilogue[:-1] if self.residual else self.epilogue
        return tuple(op for op in ops if op.kind not in GATED)

    @property
    def gated(self) -> str | None:
        """The gated op (``swiglu`` / ``geglu``) or None: C (N columns) = act(gate) * up of B's 2 N columns."""
        return next((op.kind for op in self.epilogue if op.kind in GATED), None)

    @property
    def gate_text(self) -> str:
        return f"interleaved({self.gate_block})" if self.gate == "interleaved" else str(self.gate)

    @property
    def scaled(self) -> bool:
        return self.scale_a is not None or self.scale_b is not None

    @property
    def block_scaled(self) -> bool:
        return "block" in (self.scale_a, self.scale_b)

    @property
    def mx_scaled(self) -> bool:
        """OCP microscaling (``mx(32)``): E8M0 scales per 32 K's that the scaled MFMA applies."""
        return "mx" in (self.scale_a, self.scale_b)

    @property
    def has_bias(self) -> bool:
        return any(op.kind == "bias" for op in self.epilogue)

    @property
    def bias_axis(self) -> str | None:
        return next((op.axis for op in self.epilogue if op.kind == "bias"), None)

    def to_json(self) -> dict:
        d = {"a": self.a.to_json(), "b": self.b.to_json(), "c": self.c.to_json(), "acc": self.acc.value,
             "alpha": self.alpha, "beta": self.beta, "epilogue": [op.to_json() for op in self.epilogue]}
        if self.batched:
            d["batched"] = True
        if self.mode != "dense":
            d.update(mode=self.mode, index=self.index.value)
        if self.scaled:  # (unscaled kernels keep their canonical JSON and cache keys)
            d["scale_a"], d["scale_b"] = self.scale_a, self.scale_b
        if self.gate is not None:  # (likewise ungated ones)
            d["gate"] = {"form": self.gate, "block": self.gate_block}
        if self.rope is not None:  # (likewise unrotated ones)
            d["rope"] = {**self.rope.to_json(), "head": self.rope_head}
        return d

    @property
    def rope_text(self) -> str:
        return f"gptj({self.rope_head})" if self.rope.dim == self.rope_head else f"gptj({self.rope_head}, {self.rope.dim})"


@dataclass(frozen=True)
class TileConfig:
    """Workgroup tile, waves, matrix instruction (``None``: choose the best legal one; ``vector``: none, the vector
    body of ``instr = none``), pipeline and vector widths (``None``: choose)."""

    tile: tuple[int, int, int]
    waves: tuple[int, int]
    instr: tuple[int, int, int] | None = None
    lds_buffers: int = 2
    prefetch: int = 1
    vec_a: int | None = None
    vec_b: int | None = None
    vec_c: int | None = None
    schedule: Schedule = Schedule()
    cluster: int = 0  # the Hopper body's cluster size along M; 0: the planner's choice (``auto``)
    vector: bool = False  # ``instr = none``: no matrix instruction, the vector body (ckgen/ops/gemm/vector.py)

    def __post_init__(self) -> None:
        if len(self.tile) != 3 or len(self.waves) != 2:
            raise ValueError("tile is MxNxK, waves is MxN")
        if self.instr is not None and len(self.instr) != 3:
            raise ValueError("instr is MxNxK")
        if self.vector and self.instr is not None:
            raise ValueError("instr = none names no instruction shape")

    def to_json(self) -> dict:
        d = {"tile": list(self.tile), "waves": list(self.waves),
             "instr": list(self.instr) if self.instr else None, "lds_buffers": self.lds_buffers,
             "prefetch": self.prefetch, "vec_a": self.vec_a, "vec_b": self.vec_b, "vec_c": self.vec_c}
        if self.schedule != Schedule():  # (kernels with the default keep their canonical JSON and cache keys)
            d["schedule"] = self.schedule.to_json()
        if self.cluster:  # (likewise kernels with cluster = auto)
            d["cluster"] = self.cluster
        if self.vector:
            d["vector"] = True
        return d


@dataclass(frozen=True)
class GemmParams:
    """The GEMM op's params: the problem (dtypes, layouts, scalars, epilogue) and the tiling."""

    gemm: GemmSpec
    config: TileConfig

    def to_json(self) -> dict:
        return {"gemm": self.gemm.to_json(), "config": self.config.to_json()}


def _epilogue(v: Value, c_dtype: DType) -> tuple[EpilogueOp, ...]:
    calls = v.data if v.kind == "chain" else (v,)
    if v.kind not in ("chain", "call"):
        raise V.err(f"epilogue = {v.text}: expected a chain like bias(col) -> gelu", v.span,
                    f"ops: {', '.join(EPILOGUE_WORDS)}")
    ops: list[EpilogueOp] = []
    for i, call in enumerate(calls):
        name, args = call.data
        if name == "none" and not args and len(calls) == 1:
            return ()
        if name == "bias":
            if len(args) != 1 or args[0] not in ("row", "col"):
                raise V.err(f"epilogue op {call.text}: bias takes one axis", call.span,
                            "bias(row): one value per row of C (length M); bias(col): one per column (length N)")
            if any(o.kind == "bias" for o in ops):
                raise V.err("epilogue: only one bias is allowed", call.span)
            ops.append(EpilogueOp("bias", args[0]))
        elif name == "residual":
            rest = calls[i + 1:]
            if args or not (not rest or (len(rest) == 1 and rest[0].data[0] == "cast")):
                raise V.err(f"epilogue op {call.text}: residual takes no arguments and ends the chain (before a "
                            "cast)", call.span, "e.g. epilogue = bias(col) -> gelu -> residual: C = gelu(alpha * A.B "
                            "+ bias) + R, R an input of C's dtype and layout (C's leading dimension)")
            ops.append(EpilogueOp("residual"))
        elif name in ("relu", "gelu", "silu"):
            if args:
                raise V.err(f"epilogue op {call.text}: {name} takes no arguments", call.span)
            if any(o.kind in GATED for o in ops):
                raise V.err(f"epilogue op {call.text}: only a residual may follow a gated op", call.span,
                            "e.g. epilogue = bias(col) -> swiglu -> residual")
            ops.append(EpilogueOp(name))
        elif name in GATED:
            if args:
                raise V.err(f"epilogue op {call.text}: {name} takes no arguments", call.span,
                            "the gate form is the key gate = halves | interleaved(b)")
            if any(o.kind != "bias" for o in ops):
                raise V.err(f"epilogue op {call.text}: only a bias may come before a gated op", call.span,
                            f"e.g. epilogue = bias(col) -> {name}: C = {GATED[name]}(A.B_gate + bias_gate) * "
                            "(A.B_up + bias_up)")
            ops.append(EpilogueOp(name))
        elif name == "cast":
            if i != len(calls) - 1 or len(args) != 1:
                raise V.err(f"epilogue op {call.text}: cast(<dtype>) may only end the chain", call.span)
            if args[0] != c_dtype.value:
                raise V.err(f"epilogue op {call.text}: the output cast must match C's dtype ({c_dtype.value})",
                            call.span, f"write cast({c_dtype.value}) or change C")
        else:
            raise V.err(f"epilogue op '{name}' is unknown", call.span,
                        f"{V.did_you_mean(name, ('bias', 'relu', 'gelu', 'silu', 'swiglu', 'geglu', 'residual', 'cast'))}ops: {', '.join(EPILOGUE_WORDS)}")
    return tuple(ops)


def _gate(v: Value) -> tuple[str, int]:
    """``gate = halves | interleaved(b)``, b in :data:`GATE_BLOCKS`."""
    legal = f"legal: {GATE_WORDS}"
    if v.kind == "call":
        name, args = v.data
        if name == "halves" and not args:
            return "halves", 0
        if name == "interleaved" and len(args) == 1:
            if args[0].isdigit() and int(args[0]) in GATE_BLOCKS:
                return "interleaved", int(args[0])
            raise V.err(f"gate = {v.text}: the block must be a power of two in {GATE_BLOCKS[0]}..{GATE_BLOCKS[-1]}",
                        v.span, f"legal blocks: {', '.join(map(str, GATE_BLOCKS))} (columns of gate, then as many of up)")
    raise V.err(f"gate = {v.text}: expected halves or interleaved(b)", v.span,
                f"{V.did_you_mean(v.text, GATE_FORMS)}{legal}")


def _rope(v: Value) -> tuple[Rope | None, int]:
    """``rope = none | gptj(head_dim) | gptj(head_dim, rot)``: (the rotation, head_dim), or (None, 0)."""
    legal = f"legal: {ROPE_WORDS}"
    if v.kind == "call" and v.data == ("none", ()):
        return None, 0
    if v.kind == "call" and v.data[0] == "neox":
        raise V.err(f"rope = {v.text}: the GEMM epilogue rotates adjacent column pairs only (gptj)", v.span,
                    "for rotate-half weights, reorder the q and k rows with ckgen.rope_interleave (q.k unchanged) "
                    "and write rope = gptj(head_dim)")
    if v.kind != "call" or v.data[0] != "gptj" or not 1 <= len(v.data[1]) <= 2:
        raise V.err(f"rope = {v.text}: expected gptj(head_dim) or gptj(head_dim, rot)", v.span, legal)
    nums = [int(a) if a.isdigit() and len(a) <= 5 else -1 for a in v.data[1]]
    head, rot = nums[0], nums[-1]
    if head % 2 or not 2 <= head <= 1024:
        raise V.err(f"rope = {v.text}: head_dim must be an even integer in 2..1024", v.span, legal)
    if rot % 2 or not 2 <= rot <= head:
        raise V.err(f"rope = {v.text}: the rotary dim must be an even integer in 2..{head} (head_dim)", v.span,
                    f"e.g. gptj({head}, {head // 2}); {legal}")
    return Rope("gptj", rot), head


def _scale(v: Value, param: str, kinds: tuple[str, ...]) -> str:
    """``tensor``, ``row`` / ``col``, ``block(128)`` or ``mx(32)``."""
    sized = {"block": SCALE_BLOCK, "mx": MX_BLOCK}
    words = [f"{k}({sized[k]})" if k in sized else k for k in kinds]
    if v.kind == "call":
        name, args = v.data
        if name in kinds and name not in sized and not args:
            return name
        if name in sized and args == (str(sized[name]),):
            return name
    raise V.err(f"{param} = {v.text}: expected one of {', '.join(words)}", v.span,
                f"{V.did_you_mean(v.text, words)}legal: {', '.join(words)}")


def build_params(v: dict[str, Value], ctx: BuildContext) -> GemmParams:
    """The GEMM params of one kernel from its parsed values (keys of :data:`KEYS`)."""
    a, b, c = V.tensor(v["A"], "A"), V.tensor(v["B"], "B"), V.tensor(v["C"], "C")
    # an A dtype with no default (i32, say) is refused by the plan's dtype check, which knows the target's legal ones
    acc = V.dtype(v["acc"], "acc") if "acc" in v else DEFAULT_ACC.get(a.dtype, DType.F32)
    mode = V.word(v["mode"], "mode", MODES) if "mode" in v else "dense"
    batched = V.boolean(v["batched"], "batched") if "batched" in v else False
    if batched and mode != "dense":
        raise V.err(f"mode = {mode}: a {mode} kernel is not batched", v["mode"].span,
                    "legal: mode = grouped or masked without batched = true (the groups are the batch), "
                    "or batched = true with mode = dense")
    index = DType.I32
    if "index" in v:
        index = V.dtype(v["index"], "index")
        if index not in INDEX_DTYPES:
            raise V.err(f"index = {index.value}: offsets and counts are i32 or i64", v["index"].span,
                        "legal: i32, i64")
    epilogue = _epilogue(v["epilogue"], c.dtype) if "epilogue" in v else ()
    gated = next((op.kind for op in epilogue if op.kind in GATED), None)
    gate, gate_block = None, 0
    if "gate" in v:
        if gated is None:
            raise V.err("gate: only a gated epilogue (swiglu, geglu) takes a gate form", v["gate"].span,
                        "add epilogue = swiglu (or geglu), or leave gate out")
        gate, gate_block = _gate(v["gate"])
    elif gated is not None:
        gate = "halves"
    if gated is not None and "beta" in v and V.f32(v["beta"], "beta") != 0.0:
        raise V.err(f"beta = {v['beta'].text}: a gated epilogue takes beta = 0", v["beta"].span,
                    f"legal: beta = 0 (C has half B's columns); add C's old values with epilogue = {gated} -> residual "
                    "(R = C)")
    rope, rope_head = _rope(v["rope"]) if "rope" in v else (None, 0)
    gemm = GemmSpec(a, b, c, acc,
                    alpha=V.f32(v["alpha"], "alpha") if "alpha" in v else 1.0,
                    beta=V.f32(v["beta"], "beta") if "beta" in v else 0.0,
                    epilogue=epilogue, batched=batched, mode=mode, index=index, gate=gate, gate_block=gate_block,
                    rope=rope, rope_head=rope_head,
                    scale_a=_scale(v["scale_a"], "scale_a", SCALE_A) if "scale_a" in v else None,
                    scale_b=_scale(v["scale_b"], "scale_b", SCALE_B) if "scale_b" in v else None)
    instr, vector = None, False
    if "instr" in v and v["instr"].kind == "call" and v["instr"].data in (("auto", ()), ("none", ())):
        vector = v["instr"].data[0] == "none"
    elif "instr" in v and v["instr"].kind != "dims":
        raise V.err(f"instr = {v['instr'].text}: expected an instruction shape MxNxK, auto or none", v["instr"].span,
                    "e.g. instr = 32x32x8; none: the vector body (docs/dsl.md)")
    elif "instr" in v:
        instr = V.dims(v["instr"], "instr", 3)
    cfg = TileConfig(
        tile=V.dims(v["tile"], "tile", 3), waves=V.dims(v["waves"], "waves", 2), instr=instr,
        lds_buffers=V.integer(v["lds_buffers"], "lds_buffers", 1, 8) if "lds_buffers" in v else 2,
        prefetch=V.integer(v["prefetch"], "prefetch", 0, 8) if "prefetch" in v else 1,
        vec_a=V.integer(v["vec_a"], "vec_a", 1, 64) if "vec_a" in v else None,
        vec_b=V.integer(v["vec_b"], "vec_b", 1, 64) if "vec_b" in v else None,
        vec_c=V.integer(v["vec_c"], "vec_c", 1, 64) if "vec_c" in v else None,
        schedule=_schedule(v["schedule"]) if "schedule" in v else Schedule(),
        cluster=_cluster(v["cluster"]) if "cluster" in v else 0, vector=vector,
    )
    return GemmParams(gemm, cfg)


def gate_run(g: GemmSpec, extent: int) -> int:
    """Columns of B that a gated tile takes contiguously when each ``extent`` of its N (a wave's, or the Hopper
    body's whole tile) holds gate columns then up columns: half the extent (halves), or the interleave block when
    smaller."""
    half = extent // 2
    return min(half, g.gate_block) if g.gate == "interleaved" else half
