"""The MoE routing op's DSL keys and params.

``op = moe_routing`` has four stages, each a kernel (docs/dsl.md, "MoE routing"):

- ``topk``: router logits (tokens x experts) -> the top-k experts of each token and their weights, scored by
  softmax or sigmoid, optionally renormalized over the k, optionally by groups of experts (DeepSeek-V3's grouped
  top-k: the ``top_groups`` groups with the highest sum of their two best scores, then the top-k among their
  experts) and with a per-expert correction bias used for the choice only;
- ``sort``: the chosen expert ids -> each expert's cumulative end offset (the grouped GEMM's ``offsets``), the
  token of each row of the sorted-by-expert order and the sorted row of each (token, choice): stable (token order,
  then choice order), ids outside 0..experts-1 dropped;
- ``permute``: the tokens' rows -> the rows in sorted order (the grouped GEMM's A);
- ``unpermute``: the experts' output rows (sorted order) -> each token's sum over its choices, weighted, in choice
  order (deterministic).

:func:`build_params` checks what holds without a target: top_k at most experts, groups dividing experts, ...
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.frontend import values as V
from ckgen.ir.op import BuildContext, Key
from ckgen.ir.spec import Value
from ckgen.ir.types import DType

STAGES = ("topk", "sort", "permute", "unpermute")
SCORES = ("softmax", "sigmoid")
LOGIT_DTYPES = (DType.F32, DType.BF16, DType.F16)
ROW_DTYPES = (DType.F16, DType.BF16, DType.F32)
MAX_EXPERTS = 4096
MAX_TOP_K = 32
MAX_GROUPS = 64
#: the keys each stage takes (besides stage)
STAGE_KEYS = {
    "topk": ("experts", "top_k", "logits", "score", "renormalize", "expert_groups", "top_groups", "correction"),
    "sort": ("experts", "top_k"),
    "permute": ("top_k", "x"),
    "unpermute": ("top_k", "x"),
}

KEYS = (
    Key("stage", ", ".join(STAGES), required=True),
    Key("top_k", f"1..{MAX_TOP_K} (at most experts): choices per token", required=True),
    Key("experts", f"1..{MAX_EXPERTS} (topk, sort)", default_text="required by topk and sort"),
    Key("logits", "f32 bf16 f16: the router logits (topk)", default_text="f32"),
    Key("score", "softmax or sigmoid (topk)", default_text="softmax"),
    Key("renormalize", "true or false: the k weights divided by their sum (topk)", default_text="false"),
    Key("expert_groups", f"1..{MAX_GROUPS} dividing experts: groups of experts for grouped top-k (topk)",
        default_text="1"),
    Key("top_groups", "1..expert_groups: groups a token's experts come from (topk)", default_text="expert_groups"),
    Key("correction", "true or false: a per-expert f32 bias added to the scores for the choice only (topk)",
        default_text="false"),
    Key("x", "f16 bf16 f32: the rows' dtype (permute, unpermute)", default_text="required by permute and unpermute"),
)


@dataclass(frozen=True)
class RoutingParams:
    """One routing kernel: its stage and what that stage reads (the others keep their defaults)."""

    stage: str
    top_k: int
    experts: int = 0
    logits: DType = DType.F32
    score: str = "softmax"
    renormalize: bool = False
    expert_groups: int = 1
    top_groups: int = 1
    correction: bool = False
    x: DType = DType.BF16

    def __post_init__(self) -> None:
        if self.stage not in STAGES or self.score not in SCORES or not 1 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"RoutingParams: stage {self.stage}, score {self.score}, top_k {self.top_k}")
        if self.stage in ("topk", "sort") and not self.top_k <= self.experts <= MAX_EXPERTS:
            raise ValueError("RoutingParams: top_k <= experts <= MAX_EXPERTS")
        if self.experts and (self.experts % self.expert_groups or not 1 <= self.top_groups <= self.expert_groups):
            raise ValueError("RoutingParams: expert_groups divides experts, top_groups in 1..expert_groups")

    @property
    def per_group(self) -> int:
        return self.experts // self.expert_groups

    def to_json(self) -> dict:
        d: dict = {"stage": self.stage, "top_k": self.top_k}
        keys = STAGE_KEYS[self.stage]
        for k in keys:
            v = getattr(self, k)
            d[k] = v.value if isinstance(v, DType) else v
        return d


def build_params(v: dict[str, Value], ctx: BuildContext) -> RoutingParams:
    stage = V.word(v["stage"], "stage", STAGES)
    allowed = STAGE_KEYS[stage]
    for key, val in v.items():
        if key not in ("stage", *allowed):
            raise V.err(f"{key} = {val.text}: stage = {stage} takes no {key}", val.span,
                        f"legal keys of stage = {stage}: {', '.join(allowed)}")
    top_k = V.integer(v["top_k"], "top_k", 1, MAX_TOP_K)
    kw: dict = {}
    if "experts" in allowed:
        if "experts" not in v:
            raise V.err(f"kernel '{ctx.kernel}': stage = {stage} needs experts", ctx.span,
                        f"legal: experts = 1..{MAX_EXPERTS}")
        kw["experts"] = V.integer(v["experts"], "experts", 1, MAX_EXPERTS)
        if top_k > kw["experts"]:
            raise V.err(f"top_k = {top_k}: more than experts = {kw['experts']}", v["top_k"].span,
                        f"legal: top_k = 1..{kw['experts']}")
    if "x" in allowed:
        if "x" not in v:
            raise V.err(f"kernel '{ctx.kernel}': stage = {stage} needs x (the rows' dtype)", ctx.span,
                        f"legal: x = {', '.join(d.value for d in ROW_DTYPES)}")
        kw["x"] = _dtype(v["x"], "x", ROW_DTYPES)
    if stage == "topk":
        if "logits" in v:
            kw["logits"] = _dtype(v["logits"], "logits", LOGIT_DTYPES)
        if "score" in v:
            kw["score"] = V.word(v["score"], "score", SCORES)
        for key in ("renormalize", "correction"):
            if key in v:
                kw[key] = V.boolean(v[key], key)
        groups = V.integer(v["expert_groups"], "expert_groups", 1, MAX_GROUPS) if "expert_groups" in v else 1
        if kw["experts"] % groups:
            raise V.err(f"expert_groups = {groups}: does not divide experts = {kw['experts']}",
                        v["expert_groups"].span, "legal: a divisor of experts, at most " + str(MAX_GROUPS))
        top = V.integer(v["top_groups"], "top_groups", 1, groups) if "top_groups" in v else groups
        if top * (kw["experts"] // groups) < top_k:
            raise V.err(f"top_groups = {top}: its {top * (kw['experts'] // groups)} experts are fewer than "
                        f"top_k = {top_k}", v["top_groups"].span,
                        f"legal: top_groups >= {-(-top_k // (kw['experts'] // groups))}")
        kw.update(expert_groups=groups, top_groups=top)
    return RoutingParams(stage=stage, top_k=top_k, **kw)


def _dtype(v: Value, param: str, legal: tuple[DType, ...]) -> DType:
    d = V.dtype(v, param)
    if d not in legal:
        raise V.err(f"{param} = {d.value}: not a dtype this stage takes", v.span,
                    f"legal: {', '.join(x.value for x in legal)}")
    return d
