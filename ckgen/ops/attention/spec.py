"""The attention op's kernel description and its DSL keys.

``O = softmax(scale * Q.K^T + mask) . V`` per (batch, head), with the per-row log-sum-exp. The problem
(:class:`AttentionSpec`: element type, head dim, mask, default window, variable-length batches, rotary embedding
of Q) and the tiling
(:class:`AttentionConfig`: every field None unless written; the planner fills the rest from its table of
known-good configurations per target, ``configs.py``). Target legality is the planning passes' job.
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key
from ckgen.ir.spec import Value
from ckgen.ir.types import DType
from ckgen.ops.attention.rope import Rope
from ckgen.ops.attention.rope import parse as parse_rope

DTYPES = (DType.F16, DType.BF16)
HEAD_DIMS = (64, 128, 256)
MASKS = ("none", "causal", "window")
#: the device bodies a kernel may ask for: auto (the Hopper body where the target and kernel allow it, with the
#: portable one as its run-time fallback), wgmma (the same, refused where it cannot be planned), mma_sync (none)
BODY_CHOICES = ("auto", "wgmma", "mma_sync")
#: the Hopper body's grids: persistent (one block per SM walking pairs of query tiles), tiles (a block per query tile)
GRID_CHOICES = ("persistent", "tiles")
#: largest window extent written in the DSL (the runtime scalars take any int32)
WINDOW_MAX = 2**31 - 1

KEYS = (
    Key("dtype", "f16 or bf16 (Q, K, V, O; f32 accumulation, f32 LSE)", required=True),
    Key("head_dim", "64, 128 or 256", required=True),
    Key("mask", "none, causal (bottom-right aligned) or window", default_text="none"),
    Key("window", "[left, right]: the default window extents (-1: unlimited), only with mask = window",
        default_text="[-1, -1]"),
    Key("varlen", "true or false: packed sequences with cu_seqlens_q / cu_seqlens_k", default_text="false"),
    Key("rope", "rotate Q as it is loaded (K comes rotated, e.g. by attention_kv_append) with the cos / sin table "
        "cos_sin at the positions tensor: neox, gptj, neox(rot), gptj(rot), true (= neox) or false",
        default_text="false"),
    Key("tile", "MxN: queries per workgroup x keys per K/V tile", default_text="planned per target"),
    Key("waves", "waves (warps on NVIDIA) per workgroup, all along the queries", default_text="planned per target"),
    Key("lds_buffers", "K/V tiles in LDS: 1 or 2 on AMD, 1..4 cp.async stages on NVIDIA",
        default_text="planned per target"),
    Key("q_in_regs", "true or false: Q fragments held in registers (NVIDIA; AMD always true)",
        default_text="planned per target"),
    Key("instr", "MxNxK of an f32-accumulating matrix instruction of the target, or auto",
        default_text="planned per target"),
    Key("waves_per_eu", "AMD: at least this many waves per SIMD (1..8; 2 caps a wave at 256 registers)",
        default_text="planned per target"),
    Key("kv_barriers", "NVIDIA: barriers per K/V tile, 2 (K and V copied as separate groups) or 1 (one group, "
        "lds_buffers >= 2)", default_text="planned per target"),
    Key("body", "auto, wgmma or mma_sync: whether the kernel also gets the Hopper body (TMA + wgmma, sm_90; dense "
        "f16/bf16, head_dim 64, 128 or 256), tried first at run time", default_text="auto"),
    Key("wgmma_tile", "MxN of the Hopper body: 128 or 192 queries (2 or 3 consumer warpgroups; head_dim 256: 128) x "
        "64 or 128 keys",
        default_text="planned per head dim"),
    Key("wgmma_stages", "K/V tiles in flight in the Hopper body (2..4, within shared memory)",
        default_text="planned"),
    Key("wgmma_grid", "the Hopper body's grid: persistent (one block per SM walking pairs of query tiles) or tiles "
        "(one block per query tile)", default_text="planned per head dim"),
)


@dataclass(frozen=True)
class AttentionSpec:
    """The problem: element type, head dim, mask (``window`` holds the default extents of a sliding window,
    -1 meaning unlimited), whether sequences are packed with cumulative lengths (``varlen``)."""

    dtype: DType
    head_dim: int
    mask: str = "none"
    window: tuple[int, int] = (-1, -1)
    varlen: bool = False
    rope: Rope | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES or self.head_dim not in HEAD_DIMS or self.mask not in MASKS:
            raise ValueError("AttentionSpec: dtype f16/bf16, head_dim 64/128/256, mask none/causal/window")
        if self.mask != "window" and self.window != (-1, -1):
            raise ValueError("AttentionSpec: window extents need mask = window")
        if len(self.window) != 2 or min(self.window) < -1:
            raise ValueError("AttentionSpec: window is (left, right), each >= -1")

    def to_json(self) -> dict:
        out = {"dtype": self.dtype.value, "head_dim": self.head_dim, "mask": self.mask,
               "window": list(self.window), "varlen": self.varlen}
        if self.rope is not None:  # only when set: kernels without it keep their keys
            out["rope"] = self.rope.to_json()
        return out


@dataclass(frozen=True)
class AttentionConfig:
    """The tiling as written; None: planned. ``tile`` is (queries per workgroup, keys per K/V tile)."""

    tile: tuple[int, int] | None = None
    waves: int | None = None
    lds_buffers: int | None = None
    q_in_regs: bool | None = None
    instr: tuple[int, int, int] | None = None
    waves_per_eu: int | None = None
    kv_barriers: int | None = None
    body: str = "auto"
    wgmma_tile: tuple[int, int] | None = None
    wgmma_stages: int | None = None
    wgmma_grid: str | None = None

    def __post_init__(self) -> None:
        if self.tile is not None and len(self.tile) != 2:
            raise ValueError("tile is MxN")
        if self.wgmma_tile is not None and len(self.wgmma_tile) != 2:
            raise ValueError("wgmma_tile is MxN")
        if self.wgmma_grid is not None and self.wgmma_grid not in GRID_CHOICES:
            raise ValueError(f"wgmma_grid is one of {', '.join(GRID_CHOICES)}")
        if self.body not in BODY_CHOICES:
            raise ValueError(f"body is one of {', '.join(BODY_CHOICES)}")
        if self.instr is not None and len(self.instr) != 3:
            raise ValueError("instr is MxNxK")

    def to_json(self) -> dict:
        return {"tile": list(self.tile) if self.tile else None, "waves": self.waves, "lds_buffers": self.lds_buffers,
                "q_in_regs": self.q_in_regs, "instr": list(self.instr) if self.instr else None,
                "waves_per_eu": self.waves_per_eu, "kv_barriers": self.kv_barriers, "body": self.body,
                "wgmma_tile": list(self.wgmma_tile) if self.wgmma_tile else None, "wgmma_stages": self.wgmma_stages,
                "wgmma_grid": self.wgmma_grid}


@dataclass(frozen=True)
class AttentionParams:
    attn: AttentionSpec
    config: AttentionConfig

    def to_json(self) -> dict:
        return {"attention": self.attn.to_json(), "config": self.config.to_json()}


def _window(v: Value) -> tuple[int, int]:
    items = v.data if v.kind == "list" else ()
    if len(items) != 2 or any(x.kind != "number" for x in items):
        raise V.err(f"window = {v.text}: expected [left, right]", v.span,
                    "two integers >= -1 (-1: unlimited), e.g. window = [256, 0]")
    return tuple(V.integer(x, "window", -1, WINDOW_MAX) for x in items)  # type: ignore[return-value]


def build_params(v: dict[str, Value], ctx: BuildContext) -> AttentionParams:
    """The attention params of one kernel from its parsed values (keys of :data:`KEYS`)."""
    dt = V.dtype(v["dtype"], "dtype")
    if dt not in DTYPES:
        raise V.err(f"dtype = {dt.value}: attention takes f16 or bf16", v["dtype"].span, "legal: f16, bf16")
    hd = V.integer(v["head_dim"], "head_dim", 1, 1 << 16)
    if hd not in HEAD_DIMS:
        raise V.err(f"head_dim = {hd}: not supported", v["head_dim"].span, "legal: 64, 128, 256")
    mask = V.word(v["mask"], "mask", MASKS) if "mask" in v else "none"
    window = (-1, -1)
    if "window" in v:
        if mask != "window":
            raise V.err(f"window = {v['window'].text}: window extents need mask = window", v["window"].span,
                        "add mask = window, or drop window")
        window = _window(v["window"])
    attn = AttentionSpec(dt, hd, mask, window, V.boolean(v["varlen"], "varlen") if "varlen" in v else False,
                         parse_rope(v["rope"], hd) if "rope" in v else None)
    instr = None
    if "instr" in v and not (v["instr"].kind == "call" and v["instr"].data == ("auto", ())):
        instr = V.dims(v["instr"], "instr", 3)
    cfg = AttentionConfig(
        tile=V.dims(v["tile"], "tile", 2) if "tile" in v else None,
        waves=V.integer(v["waves"], "waves", 1, 32) if "waves" in v else None,
        lds_buffers=V.integer(v["lds_buffers"], "lds_buffers", 1, 8) if "lds_buffers" in v else None,
        q_in_regs=V.boolean(v["q_in_regs"], "q_in_regs") if "q_in_regs" in v else None,
        instr=instr,
        waves_per_eu=V.integer(v["waves_per_eu"], "waves_per_eu", 1, 8) if "waves_per_eu" in v else None,
        kv_barriers=V.integer(v["kv_barriers"], "kv_barriers", 1, 2) if "kv_barriers" in v else None,
        body=V.word(v["body"], "body", BODY_CHOICES) if "body" in v else "auto",
        wgmma_tile=V.dims(v["wgmma_tile"], "wgmma_tile", 2) if "wgmma_tile" in v else None,
        wgmma_stages=V.integer(v["wgmma_stages"], "wgmma_stages", 1, 8) if "wgmma_stages" in v else None,
        wgmma_grid=V.word(v["wgmma_grid"], "wgmma_grid", GRID_CHOICES) if "wgmma_grid" in v else None,
    )
    return AttentionParams(attn, cfg)
