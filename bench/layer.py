"""A Llama-style decoder layer from ckgen's Python callables against the same kernels through their raw C entries
(issue 22): host cost of the callables in a model, and CUDA-graph capture of the whole layer.

The layer (bf16; Llama-3-8B by default: hidden 4096, 32 query / 8 KV heads of 128, intermediate 14336):
RMS norm -> qkv projection -> RoPE (torch) -> causal GQA attention -> o projection -> add + RMS norm (fused) ->
gate-up projection -> SiLU(gate) * up (torch) -> down projection -> residual add (torch). The four projections go
through the family dispatcher ``lin`` of bench/dispatch_nv.ck, the norms and attention are bench/layer_nv.ck.
The dimensions (``Config``), random weights (``Weights.random``) and RoPE angles (``rope_angles``) are
examples/llama_layer.py's.

Two ways to run the same kernels, with the same torch pieces in between:

- ``callables``: the way the README shows it, ``y = rms(x, weight=w)``, ``C = lin(A, W.t())``: prepared calls
  (cached signature, outputs from torch's caching allocator, the dispatcher's choice cached);
- ``raw``: each kernel's C entry ``ckgen_<kernel>`` called through ctypes with every argument bound once
  (outputs allocated up front), the member the dispatcher chose for the shape.

Timed as a user runs a model: back-to-back layers, wall time per layer over ``--iters`` layers between two
synchronizations (host time counts: that is the point). Then the callables' layer captured into one CUDA graph and
replayed (device time), beside the raw layer's wall time. Correctness: the two ways agree bit for bit, and the
layer is checked against a float64 torch layer.

    python3 bench/layer.py [--tokens 2048,512x4] [--iters 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import llama_layer as ex  # noqa: E402
from nvh import raw_call  # noqa: E402

LIMIT = 1.05  # issue 22: the callables' layer within 5% of the raw entries'


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE of x [tokens, heads, dim] (Llama/NeoX)."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def rope_tables(cfg: ex.Config, tokens: int, dtype=torch.bfloat16):
    """cos, sin [tokens, 1, head_dim / 2] of one sequence of ``tokens`` (positions 0..tokens-1, ``cfg.theta``)."""
    ang = torch.tensor(ex.rope_angles(cfg, 1, tokens), device="cuda")
    return ang.cos()[:, None, :].to(dtype), ang.sin()[:, None, :].to(dtype)


class CallableLayer:
    """The layer through ckgen's Python callables."""

    def __init__(self, k, cfg: ex.Config, w: ex.Weights, cos, sin):
        self.k, self.cfg, self.w, self.cos, self.sin = k, cfg, w, cos, sin
        self.scale = 1.0 / math.sqrt(cfg.head_dim)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        k, c, w = self.k, self.cfg, self.w
        t = x.shape[0]
        q_n, kv_n = c.q_n, c.kv_n
        h = k.rms(x, weight=w.norm_in)
        qkv = k.lin(h, w.qkv.t())
        q = rope(qkv[:, :q_n].view(t, c.heads, c.head_dim), self.cos, self.sin)
        kk = rope(qkv[:, q_n:q_n + kv_n].view(t, c.kv_heads, c.head_dim), self.cos, self.sin)
        v = qkv[:, q_n + kv_n:].view(t, c.kv_heads, c.head_dim)
        o, _ = k.attn(q[None], kk[None], v[None], scale=self.scale)
        a = k.lin(o.view(t, q_n), w.o.t())
        y, s = k.add_rms(a, x, w.norm_post)
        gu = k.lin(y, w.gate_up.t())
        m = F.silu(gu[:, :c.inter]) * gu[:, c.inter:]
        return k.lin(m, w.down.t()) + s


class RawLayer:
    """The same kernels through their C entries, every argument bound once (outputs allocated up front)."""

    def __init__(self, k, cfg: ex.Config, w: ex.Weights, cos, sin, x: torch.Tensor):
        self.cfg, self.w, self.cos, self.sin = cfg, w, cos, sin
        c, t = cfg, x.shape[0]
        q_n, kv_n = c.q_n, c.kv_n
        self.x = x
        # run the callables once to allocate every intermediate, then bind each kernel's call to them
        self.h = k.rms(x, weight=w.norm_in)
        self.qkv = k.lin(self.h, w.qkv.t())
        self.q = rope(self.qkv[:, :q_n].view(t, c.heads, c.head_dim), cos, sin).contiguous()
        self.kk = rope(self.qkv[:, q_n:q_n + kv_n].view(t, c.kv_heads, c.head_dim), cos, sin).contiguous()
        self.v = self.qkv[:, q_n + kv_n:].view(t, c.kv_heads, c.head_dim)
        scale = 1.0 / math.sqrt(c.head_dim)
        self.o, self.lse = k.attn(self.q[None], self.kk[None], self.v[None], scale=scale)
        self.a = k.lin(self.o.view(t, q_n), w.o.t())
        self.y, self.s = k.add_rms(self.a, x, w.norm_post)
        self.gu = k.lin(self.y, w.gate_up.t())
        self.m = (F.silu(self.gu[:, :c.inter]) * self.gu[:, c.inter:]).contiguous()
        self.d = k.lin(self.m, w.down.t())
        self.rms = self._bind(k.rms, (x,), weight=w.norm_in, y=self.h)
        self.qkv_mm = self._bind(k.lin, (self.h, w.qkv.t()), C=self.qkv)
        self.attn = self._bind(k.attn, (self.q[None], self.kk[None], self.v[None]), O=self.o, LSE=self.lse,
                               scale=scale)
        self.o_mm = self._bind(k.lin, (self.o.view(t, q_n), w.o.t()), C=self.a)
        self.add_rms = self._bind(k.add_rms, (self.a, x, w.norm_post), y=self.y, s_out=self.s)
        self.gu_mm = self._bind(k.lin, (self.y, w.gate_up.t()), C=self.gu)
        self.down_mm = self._bind(k.lin, (self.m, w.down.t()), C=self.d)

    @staticmethod
    def _bind(fn, tensors, **named):
        """nvh.raw_call of one call: the dispatcher's member for a family (as its prepared call chooses it), the
        kernel itself otherwise."""
        kern = fn._choose(tensors, None, named)[0] if hasattr(fn, "_choose") else fn
        return raw_call(kern, *tensors, **named)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        assert x.data_ptr() == self.x.data_ptr()
        c, t = self.cfg, x.shape[0]
        q_n, kv_n = c.q_n, c.kv_n
        self.rms()
        self.qkv_mm()
        self.q.copy_(rope(self.qkv[:, :q_n].view(t, c.heads, c.head_dim), self.cos, self.sin))
        self.kk.copy_(rope(self.qkv[:, q_n:q_n + kv_n].view(t, c.kv_heads, c.head_dim), self.cos, self.sin))
        self.attn()
        self.o_mm()
        self.add_rms()
        self.gu_mm()
        torch.mul(F.silu(self.gu[:, :c.inter]), self.gu[:, c.inter:], out=self.m)
        self.down_mm()
        return self.d + self.s


class Kernels:
    def __init__(self):
        from ckgen.runtime.api import jit

        nv = str(HERE / "layer_nv.ck")
        self.rms = jit(nv, kernel="layer_rmsnorm", target="sm_90")
        self.add_rms = jit(nv, kernel="layer_add_rmsnorm", target="sm_90")
        self.attn = jit(nv, kernel="layer_attention", target="sm_90")
        self.lin = jit(str(HERE / "dispatch_nv.ck"), kernel="lin", target="sm_90")


def wall_ms(fn, x, iters: int) -> float:
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn(x)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best * 1e3


def graph_ms(fn, x, replays: int) -> float:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(x)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / replays, out


def reference(c: ex.Config, w: ex.Weights, x: torch.Tensor, cos, sin) -> torch.Tensor:
    """The layer in float64 torch (bf16 weights and RoPE tables widened)."""
    d = torch.float64
    t = x.shape[0]
    q_n, kv_n = c.q_n, c.kv_n

    def rms(v, g):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + c.eps) * g.to(d)

    x = x.to(d)
    qkv = rms(x, w.norm_in) @ w.qkv.to(d).t()
    co, si = cos.to(d), sin.to(d)
    q = rope(qkv[:, :q_n].view(t, c.heads, c.head_dim), co, si)
    k = rope(qkv[:, q_n:q_n + kv_n].view(t, c.kv_heads, c.head_dim), co, si)
    v = qkv[:, q_n + kv_n:].view(t, c.kv_heads, c.head_dim)
    rep = c.heads // c.kv_heads
    o = F.scaled_dot_product_attention(q.transpose(0, 1), k.repeat_interleave(rep, 1).transpose(0, 1),
                                       v.repeat_interleave(rep, 1).transpose(0, 1), is_causal=True)
    s = o.transpose(0, 1).reshape(t, q_n) @ w.o.to(d).t() + x
    gu = rms(s, w.norm_post) @ w.gate_up.to(d).t()
    return (F.silu(gu[:, :c.inter]) * gu[:, c.inter:]) @ w.down.to(d).t() + s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="2048,512,8192", help="token counts (one sequence each)")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--inter", type=int, default=14336)
    ap.add_argument("--json")
    a = ap.parse_args()
    dev = "cuda"
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    k = Kernels()
    cfg = dataclasses.replace(ex.CONFIGS["llama3-8b"], hidden=a.hidden, heads=a.heads, kv_heads=a.kv_heads,
                              inter=a.inter)
    w = ex.Weights.random(cfg, 0, dev)
    rows = []
    for t in (int(s) for s in a.tokens.split(",")):
        x = torch.randn(t, a.hidden, device=dev, dtype=torch.bfloat16)
        cos, sin = rope_tables(cfg, t)
        layer = CallableLayer(k, cfg, w, cos, sin)
        raw = RawLayer(k, cfg, w, cos, sin, x)
        out_c, out_r = layer(x), raw(x)
        torch.cuda.synchronize()
        same = torch.equal(out_c, out_r)
        ref = reference(cfg, w, x, cos, sin)
        err = ((out_c.double() - ref).norm() / ref.norm()).item()
        wc, wr = wall_ms(layer, x, a.iters), wall_ms(raw, x, a.iters)
        gc, out_g = graph_ms(layer, x, a.iters)
        graph_same = torch.equal(out_g, out_c)
        row = {"tokens": t, "callables_ms": wc, "raw_ms": wr, "ratio": wc / wr, "graph_ms": gc,
               "graph_same": graph_same, "same_as_raw": same, "rel_err_vs_f64": err}
        row["ok"] = row["ratio"] <= LIMIT and same and graph_same and err < 2e-2
        rows.append(row)
    head = f"{'tokens':>7} {'callables ms':>12} {'raw ms':>8} {'ratio':>6} {'graph ms':>9} {'= raw':>6} " \
           f"{'graph=':>6} {'rel err':>8}  verdict"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['tokens']:7d} {r['callables_ms']:12.3f} {r['raw_ms']:8.3f} {r['ratio']:6.3f} {r['graph_ms']:9.3f} "
              f"{str(r['same_as_raw']):>6} {str(r['graph_same']):>6} {r['rel_err_vs_f64']:8.1e}  "
              f"{'ok' if r['ok'] else 'OVER'}")
    print(f"acceptance: callables within {LIMIT:.2f}x of raw entries, same results, graph capture: "
          f"{sum(r['ok'] for r in rows)}/{len(rows)}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
