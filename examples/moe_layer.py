"""A mixture-of-experts layer from ckgen kernels: router top-k -> sort by expert -> permute -> grouped gate-up
projection with SwiGLU fused -> grouped down projection -> weighted un-permute, checked against a float64 layer.

  python examples/moe_layer.py [--config mixtral|deepseek] [--target emu|sm_90] [--tokens N] [--seed S]

Configurations (experts, top-k, hidden, intermediate, router): ``mixtral`` 8 experts, top-2, 4096 / 14336, softmax
renormalized over the two; ``deepseek`` 64 experts, top-6, 2048 / 1408, sigmoid scores with a correction bias,
grouped top-k (8 groups, the best 3), renormalized, scaled by 2.5. On the emulator (``--target emu``, the default:
the same generated kernels on the CPU, AMD gfx942 semantics) the widths are divided by 32 so that a run takes
seconds; on an NVIDIA GPU (``--target sm_90``, torch tensors) they are the real ones.

The gate and up projections are one grouped GEMM over each expert's merged gate_up weight (gate rows then up rows,
as HF / vLLM merge them) with the gated epilogue ``epilogue = swiglu`` (``gate = halves``): C = silu(x.W_gate) *
(x.W_up) in one pass. On sm_90 each grouped GEMM is built with three tiles and each call takes one by the mean rows
per expert (TILES). Every step is a ckgen kernel; torch / numpy only allocate (and concatenate the weights).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import ckgen
from ckgen.ir.arrays import from_bf16, to_bf16

CONFIGS = {
    # experts, top_k, hidden, intermediate, router keys, scale
    "mixtral": (8, 2, 4096, 14336, "score = softmax renormalize = true", 1.0),
    "deepseek": (64, 6, 2048, 1408, "score = sigmoid expert_groups = 8 top_groups = 3 correction = true "
                                    "renormalize = true", 2.5),
}
EMU_SHRINK = 32
#: the grouped GEMMs' tiles per target: (a name suffix, the tile's keys, the mean rows per expert it is for: below
#: this, or None for any). On sm_90 the rule of bench/moe.py's fastest members (Mixtral's gate-up and DeepSeek's down
#: at 16, 1024 and 8192 tokens, bench/runs/2026-12-07_h100_moe_tma_store.json): small tiles for a few rows per
#: expert (the weights' reads bound the time), the widest once the experts' rows fill the tiles
TILES = {"emu": (("", "tile = 32x32x32 waves = 1x1", None),),
         "sm_90": (("_t64x128", "tile = 64x128x64 waves = 2x2 lds_buffers = 4", 128),
                   ("_t128x128", "tile = 128x128x64 waves = 2x4 lds_buffers = 4", 1024),
                   ("_t128x256", "tile = 128x256x64 waves = 2x4 lds_buffers = 4", None))}
ARCH = {"emu": "gfx942", "sm_90": "sm_90"}
ROUTING = ("moe_router", "moe_sort", "moe_permute", "moe_unpermute")


def names(target: str) -> tuple[str, ...]:
    """The layer's kernel names on ``target``: the routing stages, then gate-up and down per tile."""
    return ROUTING + tuple(f"moe_{g}{t[0]}" for t in TILES[target] for g in ("gate_up", "down"))


def kernels(config: str, target: str) -> dict:
    """The layer's kernels, built (or loaded from the cache) for ``target``."""
    text = spec_text(config, target)
    return {n: ckgen.jit(text, kernel=n, target=target) for n in names(target)}


def tile_for(arch: str, rows_per_expert: float) -> str:
    """The name suffix of the grouped GEMMs' tile on ``arch`` for this mean of rows per expert (TILES' rule)."""
    target = next(t for t, a in ARCH.items() if a == arch)
    return next(t[0] for t in TILES[target] if t[2] is None or rows_per_expert < t[2])


def spec_text(config: str, target: str) -> str:
    """The DSL of the layer's kernels: the routing stages and two grouped GEMMs (B as nn.Linear weights): gate-up
    with SwiGLU fused, and down."""
    E, k, _, _, router, _ = CONFIGS[config]
    text = f"""target {ARCH[target]}
kernel moe_router {{ op = moe_routing stage = topk experts = {E} top_k = {k} {router} }}
kernel moe_sort {{ op = moe_routing stage = sort experts = {E} top_k = {k} }}
kernel moe_permute {{ op = moe_routing stage = permute top_k = {k} x = bf16 }}
kernel moe_unpermute {{ op = moe_routing stage = unpermute top_k = {k} x = bf16 }}
"""
    for suffix, tile, _ in TILES[target]:
        gemm = f"A = bf16 row B = bf16 col C = bf16 row {tile} mode = grouped"
        text += (f"kernel moe_gate_up{suffix} {{ {gemm} epilogue = swiglu gate = halves }}\n"
                 f"kernel moe_down{suffix} {{ {gemm} }}\n")
    return text


def forward(ks, x, router_args, w_gate_up, w_down, scale, tile=None):
    """The layer's steps, every one a kernel of ``ks``, on arrays of one framework (numpy on the emulator, torch
    tensors on the GPU): x is tokens x hidden, the weights experts x in x out (nn.Linear's, transposed; w_gate_up
    experts x hidden x 2 intermediate: gate columns, then up columns). The grouped GEMMs' tile is TILES' choice for
    the mean rows per expert unless ``tile`` names one (its suffix). Returns (y, ids, weights): the output, and the
    experts the router chose with their weights."""
    tokens, hidden = x.shape
    k = ks["moe_router"].plan.spec.params.top_k
    ids, weights = ks["moe_router"](*router_args, scale=scale)
    offsets, sorted_token, position = ks["moe_sort"](ids)
    xs = ks["moe_permute"](x, sorted_token).reshape(tokens * k, hidden)
    if tile is None:  # by the mean rows per expert
        tile = tile_for(ks["moe_router"].plan.arch, tokens * k / w_down.shape[0])
    h = ks[f"moe_gate_up{tile}"](xs, w_gate_up, offsets)  # silu(xs.W_gate) * (xs.W_up), per expert
    down = ks[f"moe_down{tile}"](h, w_down, offsets)
    return ks["moe_unpermute"](down.reshape(tokens, k, hidden), position, weights), ids, weights


def reference(x, logits, corr, w_gate, w_up, w_down, router, scale):
    """The layer in float64 (numpy): the router kernel's rule (``router``: its params) applied in float64, each
    token through its experts, the weighted sum."""
    from ckgen.ops.moe_routing.reference import topk

    ids, w = topk(router, logits, corr, scale)
    y = np.zeros((x.shape[0], w_down.shape[1]))
    for t in range(x.shape[0]):
        for j in range(router.top_k):
            e = ids[t, j]
            g = x[t] @ w_gate[e].T
            h = g / (1.0 + np.exp(-g)) * (x[t] @ w_up[e].T)
            y[t] += w[t, j] * (h @ w_down[e].T)
    return y


def run_emu(config: str, tokens: int, seed: int) -> float:
    E, k, hidden, inter, _, scale = CONFIGS[config]
    hidden, inter = hidden // EMU_SHRINK, inter // EMU_SHRINK
    rng = np.random.default_rng(seed)
    ks = kernels(config, "emu")
    x = to_bf16(rng.uniform(-1, 1, (tokens, hidden)))
    logits = rng.standard_normal((tokens, E)).astype(np.float32)
    corr = (rng.standard_normal(E) * 0.1).astype(np.float32)
    # per-expert weights as nn.Linear keeps them (out x in), passed transposed: experts x in x out, K-contiguous
    w_gate, w_up = (to_bf16(rng.uniform(-1, 1, (E, inter, hidden)) / np.sqrt(hidden)) for _ in range(2))
    w_down = to_bf16(rng.uniform(-1, 1, (E, hidden, inter)) / np.sqrt(inter))
    router_args = (logits, corr) if "correction" in CONFIGS[config][4] else (logits,)
    w_gate_up = np.concatenate((w_gate, w_up), axis=1)  # the merged weight: experts x 2 inter x hidden
    y, _, _ = forward(ks, x, router_args, *(w.transpose(0, 2, 1) for w in (w_gate_up, w_down)), scale)
    f64 = lambda b: from_bf16(b).astype(np.float64)  # noqa: E731
    want = reference(f64(x), logits.astype(np.float64), corr.astype(np.float64) if len(router_args) == 2 else None,
                     f64(w_gate), f64(w_up), f64(w_down), ks["moe_router"].plan.spec.params, scale)
    return float(np.linalg.norm(f64(y) - want) / np.linalg.norm(want))


def run_gpu(config: str, tokens: int, seed: int) -> float:
    import torch

    E, k, hidden, inter, router, scale = CONFIGS[config]
    torch.manual_seed(seed)
    ks = kernels(config, "sm_90")
    dev, bf = "cuda", torch.bfloat16
    x = (torch.rand(tokens, hidden, device=dev) * 2 - 1).to(bf)
    logits = torch.randn(tokens, E, device=dev)
    corr = torch.randn(E, device=dev) * 0.1
    w_gate, w_up = ((torch.rand(E, inter, hidden, device=dev) * 2 - 1).div(hidden ** 0.5).to(bf) for _ in range(2))
    w_down = (torch.rand(E, hidden, inter, device=dev) * 2 - 1).div(inter ** 0.5).to(bf)
    router_args = (logits, corr) if "correction" in router else (logits,)
    w_gate_up = torch.cat((w_gate, w_up), dim=1)  # the merged weight: experts x 2 inter x hidden
    y, ids, weights = forward(ks, x, router_args, *(w.transpose(1, 2) for w in (w_gate_up, w_down)), scale)
    torch.cuda.synchronize()
    # float64 reference on the GPU, token by token through its chosen experts (the kernels' own routing, which the
    # emulator run checks against the float64 rule)
    want = torch.zeros(tokens, hidden, dtype=torch.float64, device=dev)
    x64 = x.double()
    for e in range(E):
        tok, j = (ids == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        g = x64[tok] @ w_gate[e].double().T
        h = g / (1 + torch.exp(-g)) * (x64[tok] @ w_up[e].double().T)
        want.index_add_(0, tok, weights[tok, j].double()[:, None] * (h @ w_down[e].double().T))
    return (torch.linalg.norm(y.double() - want) / torch.linalg.norm(want)).item()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", choices=tuple(CONFIGS), default="mixtral")
    ap.add_argument("--target", choices=("emu", "sm_90"), default="emu")
    ap.add_argument("--tokens", type=int, default=None, help="tokens (default 24 on emu, 512 on sm_90)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    tokens = args.tokens or (24 if args.target == "emu" else 512)
    err = (run_emu if args.target == "emu" else run_gpu)(args.config, tokens, args.seed)
    tol = 3e-2
    print(f"moe layer {args.config} on {args.target}, {tokens} tokens: relative error vs float64 {err:.3e} "
          f"(tolerance {tol:.0e}): {'ok' if err <= tol else 'FAILED'}")
    return 0 if err <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
