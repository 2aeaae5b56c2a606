"""``op = attention_kv_append``: write a step's new keys and values into the KV cache ``attention_decode`` reads.

Token t of sequence b goes to cache position ``seqlens_k[b] + t`` (the lengths before the step; the caller adds
``seqlen_new`` afterwards), in a contiguous cache ``[batch, seqlen_k, heads_kv, d]`` or, with ``page_size = P``,
in page ``block_table[b, pos / P]`` of ``[num_pages, P, heads_kv, d]``. One small kernel
(``device/attention_kv_append.h``: global loads and stores, 16-byte vectors where the operands allow), the same
on every platform; with ``rope = neox`` / ``gptj`` / ``neox(rot)`` / ``gptj(rot)`` (``true``: ``neox``) the keys are
rotated on the way (``rope.py``: the styles, a partial rotary dim, the cos / sin table in vLLM's ``cos_sin_cache``
layout). With ``rotate_q = true`` (rope only) the same launch also rotates the step's queries ``Q``
``[batch, seqlen_new, heads, d]`` in place, at the keys' positions and in their style, so that ``op = attention``
can run without ``rope``. Positions past the capacity (or the table) and page ids outside the cache trap on the
device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ckgen.frontend import values as V
from ckgen.ir import expr as E
from ckgen.ir.abi import Abi, Arg, ArgKind
from ckgen.ir.arrays import to_float64
from ckgen.ir.op import BuildContext, Key, Op
from ckgen.ir.plan import Entry, GridDim, KernelPlan, Launch
from ckgen.ir.spec import KernelSpec, Value
from ckgen.ir.target import Target
from ckgen.ir.types import DType
from ckgen.ops.attention.decode import read_problem
from ckgen.ops.attention.decode_reference import fill_inputs
from ckgen.ops.attention.rope import Rope, rope_table
from ckgen.ops.attention.rope import apply as apply_rope
from ckgen.ops.attention.rope import parse as parse_rope

THREADS = 256
VEC_BYTES = 16

KEYS = (
    Key("dtype", "f16 or bf16 (the new keys / values and the cache)", required=True),
    Key("head_dim", "64, 128 or 256", required=True),
    Key("page_size", "16, 32, 64, 128 or 256: the cache in pages of this many tokens with a block table",
        default_text="contiguous cache"),
    Key("rope", "rotate the keys on the way with the cos / sin table cos_sin: neox (rotate-half), gptj "
        "(interleaved), neox(rot) / gptj(rot) (the first rot dims, even), true (= neox) or false",
        default_text="false"),
    Key("rotate_q", "true or false: also rotate the step's queries Q [batch, seqlen_new, heads, d] in place "
        "(same positions and style as the keys; only with rope)", default_text="false"),
)


@dataclass(frozen=True)
class AppendParams:
    dtype: DType
    head_dim: int
    page_size: int = 0
    rope: Rope | None = None
    rotate_q: bool = False

    def __post_init__(self) -> None:
        if self.rotate_q and self.rope is None:
            raise ValueError("AppendParams: rotate_q needs rope")

    def to_json(self) -> dict:
        """``rope`` as before the styles (false, or true for neox over the whole head dim), else style and dim;
        ``rotate_q`` only when set (kernels without it keep their keys)."""
        r = self.rope
        rope = False if r is None else True if r == Rope("neox", self.head_dim) else r.to_json()
        out = {"dtype": self.dtype.value, "head_dim": self.head_dim, "page_size": self.page_size, "rope": rope}
        return {**out, "rotate_q": True} if self.rotate_q else out


@dataclass(frozen=True)
class AppendPlan:
    vec: int  # elements per thread and copy

    def to_json(self) -> dict:
        return {"vec": self.vec, "threads": THREADS}


def build_params(v: dict[str, Value], ctx: BuildContext) -> AppendParams:
    dt, hd, page = read_problem(v, "attention_kv_append")
    rope = parse_rope(v["rope"], hd) if "rope" in v else None
    rotate_q = V.boolean(v["rotate_q"], "rotate_q") if "rotate_q" in v else False
    if rotate_q and rope is None:
        raise V.err("rotate_q = true: rotating the queries needs rope", v["rotate_q"].span,
                    "legal: rotate_q = false, or rotate_q = true with rope = neox, gptj, neox(rot) or gptj(rot)")
    return AppendParams(dt, hd, page, rope, rotate_q)


def abi(spec: KernelSpec) -> Abi:
    p = spec.params
    d, page = p.head_dim, p.page_size
    cache_dims = ("num_pages", page, "heads_kv", d) if page else ("batch", "seqlen_k", "heads_kv", d)
    cache_doc = f"[num_pages, {page}, heads_kv, d]" if page else "[batch, seqlen_k, heads_kv, d]"
    T, S, ST = ArgKind.TENSOR, ArgKind.SIZE, ArgKind.STRIDE

    def new(name: str, pre: str) -> Arg:
        return Arg(name, T, dtype=p.dtype, dims=("batch", "seqlen_new", "heads_kv", d),
                   strides=(f"{pre}_batch_stride", f"{pre}_seq_stride", f"{pre}_head_stride", 1),
                   doc=f"the step's {'keys' if pre == 'kn' else 'values'} [batch, seqlen_new, heads_kv, d]")

    def cache(name: str, pre: str) -> Arg:
        return Arg(name, T, dtype=p.dtype, role="inout", dims=cache_dims,
                   strides=(f"{pre}_page_stride", f"{pre}_seq_stride", f"{pre}_head_stride", 1),
                   doc=f"the cache {cache_doc}, written at the new positions")

    args = [new("K_new", "kn"), new("V_new", "vn"), cache("K_cache", "k"), cache("V_cache", "v"),
            Arg("seqlens_k", T, dtype=DType.I32, dims=("batch",), strides=(1,),
                value_range=(0, E.add(E.emin(E.mul("max_pages", page) if page else "seqlen_k",
                                             *(("rope_positions",) if p.rope else ())), E.mul(-1, "seqlen_new"))),
                doc="int32 [batch]: keys of each sequence before the step, 0..capacity - seqlen_new"
                + (" (and rope_positions - seqlen_new)" if p.rope else "") + " (host arrays: checked by the "
                "binding; on the device a position past the capacity traps)"),
            Arg("block_table", T, dtype=DType.I32, dims=("batch", "max_pages"), strides=("bt_batch_stride", 1),
                unused=not page, doc="int32 [batch, max_pages]: the page of each block of page_size keys" if page
                else "unused: pass NULL (contiguous cache)"),
            Arg("cos_sin", T, dtype=DType.F32, dims=("rope_positions", p.rope.dim if p.rope else d),
                strides=("cs_pos_stride", 1), unused=not p.rope,
                doc=f"f32 [rope_positions, {p.rope.dim}]: per position cos(angle_i) for i < {p.rope.dim // 2}, then "
                "sin(angle_i) (vLLM's cos_sin_cache layout; ckgen.rope_table builds it)" if p.rope
                else "unused: pass NULL (rope = false)"),
            Arg("batch", S, doc="sequences"), Arg("seqlen_new", S, doc="new tokens per sequence"),
            Arg("heads_kv", S, doc="key/value heads"),
            Arg("seqlen_k", S, default=0, doc="the cache's capacity per sequence" if not page else "unused (paged)"),
            Arg("num_pages", S, default=0, doc="pages of the cache" if page else "unused (contiguous)"),
            Arg("max_pages", S, default=0, doc="pages per sequence in block_table" if page else "unused (contiguous)"),
            Arg("rope_positions", S, default=0, doc="rows of cos_sin (positions past them trap)" if p.rope
                else "unused (rope = false)")]
    if p.rotate_q:  # the queries, rotated in place (after the other tensors: calls without Q keep their order)
        args.insert(args.index(next(a for a in args if a.name == "cos_sin")) + 1, Arg(
            "Q", T, dtype=p.dtype, role="inout", dims=("batch", "seqlen_new", "heads", d),
            strides=("q_batch_stride", "q_seq_stride", "q_head_stride", 1),
            doc=f"the step's queries [batch, seqlen_new, heads, d], rotated in place (the first {p.rope.dim} dims) "
            "at the keys' positions"))
        args.append(Arg("heads", S, doc="query heads of Q (a multiple of heads_kv)"))
    for pre, what in (("kn", "K_new"), ("vn", "V_new")):
        args += [Arg(f"{pre}_{w}_stride", ST, doc=f"elements between {w}s of {what}") for w in ("batch", "seq", "head")]
    for pre, what in (("k", "K_cache"), ("v", "V_cache")):
        args += [Arg(f"{pre}_{w}_stride", ST, doc=f"elements between {w}s of {what}") for w in ("page", "seq", "head")]
    args.append(Arg("bt_batch_stride", ST, doc="elements between sequences of block_table" if page else "unused"))
    args.append(Arg("cs_pos_stride", ST, doc="elements between positions of cos_sin" if p.rope else "unused"))
    if p.rotate_q:
        args += [Arg(f"q_{w}_stride", ST, doc=f"elements between {w}s of Q") for w in ("batch", "seq", "head")]
    return Abi(tuple(args), empty_if=("batch", "seqlen_new", "heads_kv"),
               divides=(("heads_kv", "heads"),) if p.rotate_q else (),
               doc="K_cache / V_cache at positions seqlens_k[b] + t = K_new / V_new[b, t]"
               + (" (K rotated), Q[b, t] rotated in place" if p.rotate_q else ""))


def q_units(rot: int, vec: int) -> int:
    """Threads per query row with rotate_q: each rotates vec of the rot / 2 pairs (the last one fewer)."""
    return -(-(rot // 2) // vec)


def plan(spec: KernelSpec, target: Target) -> KernelPlan:
    p = spec.params
    vec = VEC_BYTES // p.dtype.bytes
    chunks = E.mul("seqlen_new", "heads_kv", p.head_dim // vec // 2)  # a thread per pair of chunks
    if p.rotate_q:  # then a thread per run of vec rotated pairs of a query row
        chunks = E.add(chunks, E.mul("seqlen_new", "heads", q_units(p.rope.dim, vec)))
    launch = Launch(threads=THREADS, grid=(GridDim(expr=E.cdiv(chunks, THREADS)), GridDim("batch", split=False),
                                           GridDim()))
    return KernelPlan(spec=spec, target=target, body=AppendPlan(vec), abi=abi(spec), launch=launch,
                      entries=(Entry(spec.name, THREADS, 0),))


class KvAppendOp(Op):
    name = "attention_kv_append"
    doc = "append a step's keys and values to a contiguous or paged KV cache (for attention_decode)"
    keys = KEYS
    kernel_template = "attention/kernel.hip.j2"

    def build_params(self, values, ctx):
        return build_params(values, ctx)

    def plan(self, spec: KernelSpec, target: Target) -> KernelPlan:
        return plan(spec, target)

    def abi(self, spec: KernelSpec):
        return abi(spec)

    def summary(self, plan: KernelPlan) -> str:
        p = plan.spec.params
        return (f"{p.dtype.value} d{p.head_dim}, " + (f"pages of {p.page_size}" if p.page_size else "contiguous cache")
                + (f", RoPE {p.rope.text} on K" + (" and Q" if p.rotate_q else "") if p.rope else ""))

    def kernel_view(self, plan: KernelPlan) -> dict:
        p = plan.spec.params
        ints = [("kHeadDim", p.head_dim), ("kPageSize", p.page_size), ("kVec", plan.body.vec),
                ("kThreads", THREADS), ("kLdsBytes", 0)]
        constants = [("int", n, str(v)) for n, v in ints] + [("bool", n, "true" if on else "false")
                                                             for n, on in (("kRope", p.rope), ("kRotateQ", p.rotate_q))]
        constants += p.rope.constants() if p.rope else []
        return {"types": [("T", p.dtype.cpp)], "constants": constants,
                "header": "attention_kv_append.h", "impl": "ckgen::attention_kv_append", "mma_builtins": [],
                "notes": [f"{THREADS} threads, {plan.body.vec} elements per copy"], "tma_entry": False}

    def reference(self, plan: KernelPlan, arrays: dict[str, np.ndarray], sizes: dict[str, int]):
        """The caches after the step (and with rotate_q the rotated queries), in float64."""
        p = plan.spec.params
        kc, vc = (to_float64(arrays[n], p.dtype).copy() for n in ("K_cache", "V_cache"))
        kn, vn = (to_float64(arrays[n], p.dtype) for n in ("K_new", "V_new"))
        q = to_float64(arrays["Q"], p.dtype).copy() if p.rotate_q else None
        lens = np.asarray(arrays["seqlens_k"], np.int64)
        for b in range(kn.shape[0]):
            for t in range(kn.shape[1]):
                pos = int(lens[b]) + t
                if p.rope:  # kn is a float64 copy (to_float64)
                    cs = np.asarray(arrays["cos_sin"], np.float64)[pos]
                    kn[b, t] = apply_rope(kn[b, t], cs, p.rope)
                    if q is not None:
                        q[b, t] = apply_rope(q[b, t], cs, p.rope)
                if p.page_size:
                    pg = int(arrays["block_table"][b, pos // p.page_size])
                    kc[pg, pos % p.page_size], vc[pg, pos % p.page_size] = kn[b, t], vn[b, t]
                else:
                    kc[b, pos], vc[b, pos] = kn[b, t], vn[b, t]
        return {"K_cache": kc, "V_cache": vc, **({"Q": q} if q is not None else {})}

    def tolerance(self, plan: KernelPlan, output: str) -> float:
        """Copies are exact; rotated keys and queries are rounded to the element type once (from f32)."""
        p = plan.spec.params
        return (1e-2 if p.dtype == DType.BF16 else 2e-3) if p.rope and output in ("K_cache", "Q") else 0.0

    def random_inputs(self, plan: KernelPlan, sizes: dict[str, int], rng: np.random.Generator):
        """New keys / values (and queries) and a cache from a standard normal; room for the step in every sequence (lengths up to
        capacity - seqlen_new); pages drawn without replacement in a random order."""
        p = plan.spec.params
        full = dict(sizes)
        cap = sizes["max_pages"] * p.page_size if p.page_size else sizes["seqlen_k"]
        out: dict[str, np.ndarray | None] = {
            "seqlens_k": rng.integers(0, max(cap - sizes["seqlen_new"], 0) + 1, sizes["batch"]).astype(np.int32)}
        if p.rope:
            full["rope_positions"] = max(full.get("rope_positions", 0), cap)
            out["cos_sin"] = rope_table(full["rope_positions"], p.rope.dim)
        if p.rotate_q:  # queries (random, not poisoned: an in/out argument), as many heads as K unless given
            full.setdefault("heads", sizes["heads_kv"])
        if p.page_size:
            full["num_pages"] = max(full.get("num_pages", 0), sizes["batch"] * sizes["max_pages"])
            perm = rng.permutation(full["num_pages"])[: sizes["batch"] * sizes["max_pages"]]
            out["block_table"] = perm.reshape(sizes["batch"], sizes["max_pages"]).astype(np.int32)
        return fill_inputs(plan, full, out, p.dtype, rng)


OP = KvAppendOp()
