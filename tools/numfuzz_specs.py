"""The random specs and sizes of ``tools/fuzz_numerics.py``: per op, a kernel body (``key = value`` pairs of
docs/dsl.md) drawn from the op's legal values and a few it refuses (the planner sorts them out), and per planned
kernel a draw of awkward runtime sizes by the ABI's size names.

Contract: a generator takes a ``random.Random`` and an AMD arch and returns the body text; ``draw_sizes`` returns
lower-case size names -> values for :func:`ckgen.runtime.run.resolve_sizes` (sizes it leaves out take the ABI's
default), at most a few hundred per dimension so that one emulator call stays within seconds.
"""

from __future__ import annotations

import random

PRIMES = (2, 3, 5, 7, 11, 13, 17, 31, 37, 61, 67, 97, 127, 131)
FP8 = {"gfx90a": (), "gfx942": ("e4m3fnuz", "e5m2fnuz"), "gfx950": ("e4m3fn", "e5m2")}


def _pick(rng: random.Random, *weighted):
    """One of ``(value, weight)`` pairs."""
    values, weights = zip(*weighted, strict=True)
    return rng.choices(values, weights)[0]


def _maybe(rng: random.Random, p: dict, *knobs) -> None:
    """For each ``(key, probability, values)`` in turn: with that probability ``p[key]`` = one of the values, as text."""
    for key, prob, values in knobs:
        if rng.random() < prob:
            p[key] = str(rng.choice(values))


def _text(p: dict) -> str:
    """The kernel body of ``p``'s ``key = value`` pairs."""
    return "  ".join(f"{k} = {v}" for k, v in p.items())


def gemm(rng: random.Random, arch: str) -> str:
    kind = _pick(rng, ("f16", 4), ("bf16", 4), ("f32", 1), ("i8", 1), ("fp8", 2 if FP8[arch] else 0),
                 ("fp4", 1 if arch == "gfx950" else 0))
    p: dict[str, str] = {}
    lay = lambda: rng.choice(("row", "col"))  # noqa: E731
    if kind in ("f16", "bf16", "f32"):
        ab = kind
        c = rng.choice((kind, "f32", "f16", "bf16"))
    elif kind == "i8":
        ab, c = "i8", rng.choice(("i32", "f32", "bf16", "i8"))
    elif kind == "fp8":
        ab = rng.choice(FP8[arch])
        c = rng.choice(("bf16", "f16", "f32"))
    else:
        ab, c = "e2m1fn_x2", rng.choice(("bf16", "f32"))
    bdt = rng.choice(FP8[arch]) if kind == "fp8" and rng.random() < 0.3 else ab
    p["A"], p["B"], p["C"] = f"{ab} {lay()}", f"{bdt} {lay()}", f"{c} {lay()}"
    if kind == "fp4":
        p["A"], p["B"] = f"{ab} row", f"{ab} col"
    tm, tn = rng.choice((16, 32, 64, 128, 256)), rng.choice((16, 32, 64, 128, 256))
    tk = rng.choice((16, 32, 64, 128))
    p["tile"] = f"{tm}x{tn}x{tk}"
    p["waves"] = f"{rng.choice((1, 2, 4))}x{rng.choice((1, 2, 4))}"
    if rng.random() < 0.25:
        p["instr"] = rng.choice(("32x32x8", "16x16x16", "16x16x32", "32x32x16", "32x32x4", "16x16x4", "4x4x4",
                                 "none", "32x32x64", "16x16x128"))
    _maybe(rng, p, ("lds_buffers", 0.5, (1, 2)), ("prefetch", 0.5, (0, 1)),
           *((key, 0.25, (1, 2, 4, 8, 16)) for key in ("vec_a", "vec_b", "vec_c")),
           ("alpha", 0.3, ("0.5", "-1.25", "2.0", "3000.0")), ("beta", 0.25, ("1.0", "0.5", "-0.75")))
    gated = rng.random() < 0.2
    chain = []
    if rng.random() < 0.4:
        chain.append(f"bias({rng.choice(('row', 'col'))})")
    if gated:
        chain.append(rng.choice(("swiglu", "geglu")))
        if rng.random() < 0.5:
            p["gate"] = rng.choice(("halves", "interleaved(8)", "interleaved(16)", "interleaved(32)",
                                    "interleaved(64)"))
    elif rng.random() < 0.5:
        chain.append(rng.choice(("relu", "gelu", "silu")))
    if rng.random() < 0.25:
        chain.append("residual")
    if chain and rng.random() < 0.2:
        chain.append(f"cast({c})")
    if chain:
        p["epilogue"] = " -> ".join(chain)
    if kind == "fp8" and rng.random() < 0.8:
        sc = rng.choice((("tensor", "tensor"), ("row", "col"), ("tensor", "col"), ("row", "tensor"),
                         ("block(128)", "block(128)"), ("mx(32)", "mx(32)")))
        p["scale_a"], p["scale_b"] = sc
    elif kind == "fp4":
        p["scale_a"], p["scale_b"] = "mx(32)", "mx(32)"
    _maybe(rng, p, ("schedule", 0.35, ("splitk", "splitk(3)", "splitk(2, atomic)", "splitk(atomic)", "streamk",
                                       "auto")))
    r = rng.random()
    if r < 0.15:
        p["batched"] = "true"
    elif r < 0.3:
        p["mode"] = rng.choice(("grouped", "masked"))
        if rng.random() < 0.5:
            p["index"] = rng.choice(("i32", "i64"))
    if rng.random() < 0.1:
        hd = rng.choice((16, 32, 64))
        p["rope"] = rng.choice((f"gptj({hd})", f"gptj({hd}, {hd // 2})"))
    return _text(p)


def _rowop_common(rng: random.Random, arch: str, p: dict) -> None:
    """The row ops' shared keys: tiling, and y's dtype and quantization."""
    _maybe(rng, p, ("max_cols", 0.3, (64, 100, 1000, 4096, 9000)), ("vec", 0.2, (1, 2, 4, 8)),
           ("threads_per_row", 0.25, (1, 4, 16, 32, 64, 128, 256)), ("rows_per_workgroup", 0.15, (1, 2, 4)),
           ("reg_vecs", 0.15, (1, 2, 4)), ("looped", 0.2, ("true", "false")),
           ("row_in", 0.15, ("registers", "shared")), ("split", 0.15, (1, 2, 3, 4)))
    r = rng.random()
    if r < 0.15:
        p["y"] = "i8"
        if rng.random() < 0.4:
            p["quant"] = "group(128)"
    elif r < 0.3 and FP8[arch]:
        p["y"] = rng.choice(FP8[arch])
        p["quant"] = rng.choice(("row", "group(128)", "mx(32)"))
    elif r < 0.35 and arch == "gfx950":
        p["y"] = "e2m1fn_x2"
    elif r < 0.5:
        p["y"] = rng.choice(("f16", "bf16", "f32"))


def softmax(rng: random.Random, arch: str) -> str:
    p = {"op": "softmax", "x": rng.choice(("f16", "bf16", "f32"))}
    if rng.random() < 0.4:
        p["log"] = "true"
    if rng.random() < 0.3:
        p["scale"] = rng.choice(("0.125", "2.0"))
    _rowop_common(rng, arch, p)
    return _text(p)


def _norm(op: str, rng: random.Random, arch: str) -> str:
    p = {"op": op, "x": rng.choice(("f16", "bf16", "f32"))}
    _maybe(rng, p, ("residual", 0.4, ("true", "f16", "bf16", "f32")), ("weight", 0.3, ("none", "true", "f32", "bf16")))
    if op == "layernorm" and rng.random() < 0.3:
        p["bias"] = rng.choice(("none", "true"))
    if op == "rmsnorm" and rng.random() < 0.2:
        p["rstd"] = "true"
        if rng.random() < 0.5:
            p["y"] = "none"
    _maybe(rng, p, ("eps", 0.2, ("0", "1e-6")))
    _rowop_common(rng, arch, p)
    if p.get("y") == "none" and "quant" in p:
        del p["quant"]
    return _text(p)


def layernorm(rng: random.Random, arch: str) -> str:
    return _norm("layernorm", rng, arch)


def rmsnorm(rng: random.Random, arch: str) -> str:
    return _norm("rmsnorm", rng, arch)


def attention(rng: random.Random, arch: str) -> str:
    hd = _pick(rng, (64, 4), (128, 3), (256, 1))
    p = {"op": "attention", "dtype": rng.choice(("f16", "bf16")), "head_dim": str(hd)}
    m = rng.choice(("none", "causal", "window"))
    p["mask"] = m
    if m == "window" and rng.random() < 0.7:
        p["window"] = f"[{rng.choice((-1, 0, 5, 40))}, {rng.choice((-1, 0, 3, 33))}]"
    if rng.random() < 0.3:
        p["varlen"] = "true"
    if rng.random() < 0.25:
        p["rope"] = rng.choice(("neox", "gptj", f"neox({hd // 2})", f"gptj({hd // 4})", "true"))
    if rng.random() < 0.4:
        p["tile"] = f"{rng.choice((16, 32, 64, 128))}x{rng.choice((16, 32, 64))}"
    _maybe(rng, p, ("waves", 0.3, (1, 2, 4)), ("lds_buffers", 0.3, (1, 2)),
           ("instr", 0.2, ("16x16x16", "32x32x8", "16x16x32", "32x32x16", "16x16x8")), ("waves_per_eu", 0.1, (1, 2)))
    return _text(p)


def attention_decode(rng: random.Random, arch: str) -> str:
    hd = _pick(rng, (64, 4), (128, 3), (256, 1))
    p = {"op": "attention_decode", "dtype": rng.choice(("f16", "bf16")), "head_dim": str(hd)}
    if rng.random() < 0.5:
        p["mask"] = "causal"
    if rng.random() < 0.5:
        p["page_size"] = str(rng.choice((16, 32, 64, 128, 256)))
    if rng.random() < 0.4:
        p["tile"] = f"{rng.choice((16, 32, 64))}x{rng.choice((16, 32, 64))}"
    _maybe(rng, p, ("waves", 0.3, (1, 2, 4)), ("lds_buffers", 0.3, (1, 2)),
           ("rope", 0.2, ("neox", "gptj", f"neox({hd // 2})")), ("instr", 0.15, ("16x16x16", "32x32x8", "16x16x32")))
    return _text(p)


FNS1 = ("silu", "gelu", "relu", "sigmoid", "tanh", "neg", "exp", "copy")
FNS2 = ("add", "sub", "mul", "div", "max", "min")


def elementwise(rng: random.Random, arch: str) -> str:
    n = rng.choice((1, 2, 3))
    names = ("a", "b", "c")[:n]
    p = {"op": "elementwise"}
    for x in names:
        p[x] = rng.choice(("f16", "bf16", "f32"))
    r = rng.random()
    if r < 0.15 and FP8[arch]:
        p["y"] = rng.choice(FP8[arch] + ("i8",))
        if rng.random() < 0.5:
            p["quant"] = rng.choice(("group(128)", "mx(32)"))
    elif r < 0.2 and arch == "gfx950":
        p["y"] = "e2m1fn_x2"
    elif r < 0.45:
        p["y"] = rng.choice(("f16", "bf16", "f32"))
    if n > 1 and rng.random() < 0.3:
        p["broadcast"] = rng.choice(names[1:])
    # the first call names every input (or a number), later calls take the value so far first
    calls = []
    if n == 1:
        calls.append(f"{rng.choice(FNS1)}(a)" if rng.random() < 0.6 else f"{rng.choice(FNS2)}(a, 0.5)")
    elif n == 2:
        calls.append(f"{rng.choice(FNS2)}(a, b)" if rng.random() < 0.5 else f"{rng.choice(FNS1)}(a)")
        if calls[0].count(",") == 0:
            calls.append(f"{rng.choice(FNS2)}(b)")
    else:
        calls.append(f"{rng.choice(FNS2)}(a, b)")
        calls.append(f"{rng.choice(FNS2)}(c)")
    for _ in range(rng.choice((0, 0, 1, 2))):
        calls.append(rng.choice(FNS1) if rng.random() < 0.6 else f"{rng.choice(FNS2)}(1.5)")
    p["expr"] = " -> ".join(calls)
    _maybe(rng, p, ("vec", 0.25, (1, 2, 4, 8)), ("threads", 0.25, (64, 128, 256, 1024)), ("unroll", 0.25, (1, 2, 3, 8)))
    return _text(p)


def moe_routing(rng: random.Random, arch: str) -> str:
    stage = rng.choice(("topk", "sort", "permute", "unpermute"))
    p = {"op": "moe_routing", "stage": stage}
    experts = rng.choice((1, 3, 8, 16, 60, 64, 128, 256))
    p["top_k"] = str(min(experts, rng.choice((1, 2, 4, 6, 8))) if stage in ("topk", "sort")
                     else rng.choice((1, 2, 8)))
    if stage in ("topk", "sort"):
        p["experts"] = str(experts)
    if stage == "topk":
        p["logits"] = rng.choice(("f32", "bf16", "f16"))
        p["score"] = rng.choice(("softmax", "sigmoid"))
        if rng.random() < 0.5:
            p["renormalize"] = "true"
        if rng.random() < 0.3:
            g = rng.choice((2, 4, 8))
            p["expert_groups"] = str(g)
            p["top_groups"] = str(rng.choice((1, 2, g)))
        if rng.random() < 0.3:
            p["correction"] = "true"
    if stage in ("permute", "unpermute"):
        p["x"] = rng.choice(("f16", "bf16", "f32"))
    return _text(p)


GENERATORS = {"gemm": gemm, "softmax": softmax, "layernorm": layernorm, "rmsnorm": rmsnorm,
              "attention": attention, "attention_decode": attention_decode, "elementwise": elementwise,
              "moe_routing": moe_routing}


def _awkward(rng: random.Random, tile: int, cap: int, zero: bool) -> int:
    """A size near the tile's multiples: 0 (when ``zero``), 1, a prime, or j * tile + {-1, 0, 1}, at most ``cap``."""
    r = rng.random()
    if zero and r < 0.06:
        return 0
    if r < 0.15:
        return 1
    if r < 0.4:
        return min(cap, rng.choice(PRIMES))
    j = rng.choice((1, 1, 2, 3))
    return max(1, min(cap, j * tile + rng.choice((-1, 0, 1))))


def draw_sizes(rng: random.Random, plan) -> dict[str, int]:
    """Awkward runtime sizes of ``plan``'s ABI by name (lower case)."""
    op = plan.op
    names = {a.name.lower(): a for a in plan.abi.sizes}
    cap_of = {n: (a.at_most if a.at_most is not None else 1 << 30) for n, a in names.items()}
    out: dict[str, int] = {}
    if op == "gemm":
        tm, tn, tk = plan.spec.params.config.tile
        out["m"] = _awkward(rng, tm, 300, True)
        out["n"] = _awkward(rng, tn, 300, True)
        out["k"] = _awkward(rng, tk, 300, True)
        g = plan.spec.params.gemm
        if "batch" in names:
            out["batch"] = rng.choice((0, 1, 2, 3))
        if "groups" in names:
            out["groups"] = rng.choice((0, 1, 2, 3, 5))
        if getattr(g, "rope", None) is not None and "rope_cols" in names:
            hd = g.rope_head
            out["rope_cols"] = rng.choice((0, out["n"] // hd * hd, max(0, out["n"] // hd - 1) * hd))
    elif op in ("softmax", "layernorm", "rmsnorm", "quantize", "elementwise"):
        out["rows"] = _awkward(rng, 4, 70, True)
        cap = min(cap_of.get("cols", 1 << 30), 5000)
        out["cols"] = _awkward(rng, rng.choice((64, 128, 256, 1024)), cap, True)
    elif op in ("attention", "attention_decode"):
        hkv = rng.choice((1, 1, 2, 3))
        out["heads_kv"] = hkv
        out["heads"] = hkv * rng.choice((1, 2, 4, 5))
        out["batch"] = rng.choice((0, 1, 1, 2, 3)) if rng.random() < 0.9 else 0
        tq, tkv = 64, 32
        if op == "attention":
            out["seqlen_q"] = _awkward(rng, tq, 200, True)
            out["seqlen_k"] = _awkward(rng, tkv, 200, True)
        else:
            out["seqlen_q"] = rng.choice((1, 1, 2, 3, 5, 16))
            page = plan.spec.params.page_size
            if page:
                out["max_pages"] = rng.choice((0, 1, 2, 3, 5))
            else:
                out["seqlen_k"] = _awkward(rng, 32, 300, True)
            if rng.random() < 0.5:
                out["num_splits"] = rng.choice((1, 2, 3, 7))
    elif op == "moe_routing":
        out["tokens"] = _awkward(rng, 64, 150, True)
        if "hidden" in names:
            out["hidden"] = _awkward(rng, 128, 300, True)
    for n in names:  # any other size without a default: small
        if n not in out and names[n].default is None and not any(c.lower() == n for c, _, _ in plan.abi.blocks):
            out[n] = rng.choice((1, 2, 3))
    return {k: v for k, v in out.items() if k in names}
