"""The MoE routing op's plan, C ABI and launch (see :mod:`ckgen.ir.abi`), per stage.

Call forms (``K`` = top_k, ``E`` = experts; every matrix row-major with a row stride argument)::

    topk:      logits (tokens x E), correction (E, f32; unused without correction = true), ids (out, tokens x K,
               int32), weights (out, tokens x K, f32), tokens, ld_logits, ld_ids, ld_weights, scale
    sort:      ids (tokens x K), offsets (out, E, int32), sorted_token (out, tokens x K, int32), position (out,
               tokens x K, int32), tokens, ld_ids, ld_sorted, ld_position, workspace
    permute:   x (tokens x hidden), sorted_token (tokens x K), xs (out, tokens x K x hidden), tokens, hidden,
               ld_x, ld_sorted, stride_xs_token, stride_xs_choice
    unpermute: ys (tokens x K x hidden), position (tokens x K), weights (tokens x K, f32), y (out, tokens x hidden),
               tokens, hidden, stride_ys_token, stride_ys_choice, ld_position, ld_weights, ld_y

The sorted order has ``tokens * K`` rows; row p is element (p / K, p % K) of a ``tokens x K`` index array and
``xs[p / K, p % K, :]`` of the row arrays (``xs.reshape(tokens * K, hidden)`` when dense: the grouped GEMM's A).
Launches: topk one thread per token (128 per workgroup); sort one workgroup of :data:`SORT_THREADS` threads with a
``SORT_THREADS x E`` int workspace (zero-filled, left zero-filled); permute one workgroup per sorted row (grid
tokens x top_k),
unpermute one per token (grid-stride beyond 2^20 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.plan import Entry, GridDim, KernelPlan, Launch
from ckgen.ir.spec import KernelSpec
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.lower.draft import Draft, run_passes
from ckgen.ops.moe_routing.spec import RoutingParams

T, S, ST, SC, WS = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE, ArgKind.SCALAR, ArgKind.WORKSPACE
TOPK_THREADS = 128
SORT_THREADS = 256
ROW_THREADS = 256
GRID_CAP = 2**20
#: the device entry per stage (all in device/moe_routing.h)
ENTRIES = {"topk": "ckgen::moe::topk", "sort": "ckgen::moe::sort", "permute": "ckgen::moe::permute",
           "unpermute": "ckgen::moe::unpermute"}
HEADER = "moe_routing.h"


@dataclass(frozen=True)
class RoutingPlan:
    stage: str
    header: str
    impl: str
    threads: int
    lds_bytes: int

    def to_json(self) -> dict:
        return {"stage": self.stage, "header": self.header, "impl": self.impl, "threads": self.threads,
                "lds_bytes": self.lds_bytes}


def _idx(name: str, ld: str, k: int, role: str, doc: str, dtype: DType = DType.I32) -> Arg:
    return Arg(name, T, doc=doc, dtype=dtype, role=role, dims=("tokens", k), strides=(ld, 1))


def _ld(name: str, doc: str, at_least: tuple[str, ...] = ()) -> Arg:
    return Arg(name, ST, doc=doc, at_least=at_least)


def abi(spec: KernelSpec) -> Abi:
    r: RoutingParams = spec.params
    k = r.top_k
    tokens = Arg("tokens", S, doc="tokens (rows of the router logits)")
    if r.stage == "topk":
        args = (Arg("logits", T, doc="tokens x experts router logits", dtype=r.logits, dims=("tokens", r.experts),
                    strides=("ld_logits", 1)),
                Arg("correction", T, doc="experts f32 biases added to the scores for the choice only" if r.correction
                    else "unused: pass NULL", dtype=DType.F32, dims=(r.experts,), strides=(1,), unused=not r.correction),
                _idx("ids", "ld_ids", k, "out", "tokens x top_k chosen experts, best first (ties: lower id)"),
                _idx("weights", "ld_weights", k, "out", "tokens x top_k weights of the choices", DType.F32),
                tokens, _ld("ld_logits", "elements between rows of logits"),
                _ld("ld_ids", "elements between rows of ids"), _ld("ld_weights", "elements between rows of weights"),
                Arg("scale", SC, doc="the weights' factor (after renormalization; DeepSeek's routed scaling)",
                    default=1.0, bounds=(-3.4e38, 3.4e38)))
        return Abi(args, empty_if=("tokens",), doc=f"top-{k} of {r.score} router scores")
    if r.stage == "sort":
        args = (_idx("ids", "ld_ids", k, "in", "tokens x top_k expert ids (outside 0..experts-1: dropped)"),
                Arg("offsets", T, doc="experts cumulative end rows of each expert in the sorted order", dtype=DType.I32,
                    role="out", dims=(r.experts,), strides=(1,)),
                _idx("sorted_token", "ld_sorted", k, "out", "row p (element p / top_k, p % top_k): its token; -1 past "
                     "the last offset"),
                _idx("position", "ld_position", k, "out", "the sorted row of each (token, choice); -1 if dropped"),
                tokens, _ld("ld_ids", "elements between rows of ids"),
                _ld("ld_sorted", "elements between rows of sorted_token"),
                _ld("ld_position", "elements between rows of position"),
                Arg("workspace", WS, doc=f"{SORT_THREADS} x experts ints, zero-filled (calls leave it zero-filled)"))
        return Abi(args, doc=f"sort the tokens' {k} choices by expert (stable)")
    xs_dims, xs_strides = ("tokens", k, "hidden"), ("stride_xs_token", "stride_xs_choice", 1)
    if r.stage == "permute":
        args = (Arg("x", T, doc="tokens x hidden rows", dtype=r.x, dims=("tokens", "hidden"), strides=("ld_x", 1)),
                _idx("sorted_token", "ld_sorted", k, "in", "the sort stage's sorted_token"),
                Arg("xs", T, doc="tokens x top_k x hidden: x's rows in sorted order", dtype=r.x, role="out",
                    dims=xs_dims, strides=xs_strides),
                tokens, Arg("hidden", S, doc="columns of a row"),
                _ld("ld_x", "elements between rows of x", ("hidden",)),
                _ld("ld_sorted", "elements between rows of sorted_token"),
                _ld("stride_xs_token", "elements between xs[t] and xs[t + 1]"),
                _ld("stride_xs_choice", "elements between rows of xs[t]", ("hidden",)))
        return Abi(args, empty_if=("tokens", "hidden"), doc="rows of x in the sorted order")
    ys_strides = ("stride_ys_token", "stride_ys_choice", 1)
    args = (Arg("ys", T, doc="tokens x top_k x hidden: the experts' rows in sorted order", dtype=r.x,
                dims=xs_dims, strides=ys_strides),
            _idx("position", "ld_position", k, "in", "the sort stage's position"),
            _idx("weights", "ld_weights", k, "in", "the topk stage's weights", DType.F32),
            Arg("y", T, doc="tokens x hidden: sum over j of weights[t, j] * ys row position[t, j]", dtype=r.x,
                role="out", dims=("tokens", "hidden"), strides=("ld_y", 1)),
            tokens, Arg("hidden", S, doc="columns of a row"),
            _ld("stride_ys_token", "elements between ys[t] and ys[t + 1]"),
            _ld("stride_ys_choice", "elements between rows of ys[t]", ("hidden",)),
            _ld("ld_position", "elements between rows of position"), _ld("ld_weights", "elements between rows of weights"),
            _ld("ld_y", "elements between rows of y", ("hidden",)))
    return Abi(args, empty_if=("tokens", "hidden"), doc="weighted sum of each token's expert rows")


def launch(spec: KernelSpec) -> Launch:
    r: RoutingParams = spec.params
    if r.stage == "topk":
        return Launch(threads=TOPK_THREADS, grid=(GridDim("tokens", TOPK_THREADS, cap=GRID_CAP), GridDim(), GridDim()))
    if r.stage == "sort":
        return Launch(threads=SORT_THREADS, grid=(GridDim(), GridDim(), GridDim()),
                      workspace=SORT_THREADS * r.experts * 4)
    if r.stage == "permute":  # workgroup (x, y): sorted row x * top_k + y
        return Launch(threads=ROW_THREADS, grid=(GridDim("tokens", 1, cap=GRID_CAP), GridDim(expr=r.top_k), GridDim()))
    return Launch(threads=ROW_THREADS, grid=(GridDim("tokens", 1, cap=GRID_CAP), GridDim(), GridDim()))


@dataclass
class RoutingDraft(Draft):
    lds_bytes: int = 0


def check_target(d: RoutingDraft) -> None:
    """The sort stage keeps each expert's base row in LDS (experts + 1 ints) and a scan's (one int per thread)."""
    r: RoutingParams = d.spec.params
    if r.stage == "sort":
        d.lds_bytes = (r.experts + 1 + SORT_THREADS) * 4
        if d.lds_bytes > d.target.lds_bytes:
            raise d.fail("experts", r.experts, f"at most {d.target.lds_bytes // 4 - 1}",
                         f"the sort keeps {d.lds_bytes} bytes of base rows in LDS, over the target's {d.target.lds_bytes}")


PASSES = (check_target,)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    d = run_passes(PASSES, RoutingDraft(spec, target))
    run = launch(spec)
    body = RoutingPlan(stage=spec.params.stage, header=HEADER, impl=ENTRIES[spec.params.stage], threads=run.threads,
                       lds_bytes=d.lds_bytes)
    return KernelPlan(spec=spec, target=target, body=body, abi=abi(spec), launch=run,
                      entries=(Entry(spec.name, run.threads, 0),))
