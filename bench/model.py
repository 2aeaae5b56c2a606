"""A whole decoder layer on the GPU: examples/llama_layer.py's ckgen layer (every step a ckgen kernel, called
through the Python API: prepared calls) against the same layer in torch, eager and ``torch.compile`` (default
mode), measured in the same run, bf16 (issue 28).

  python bench/model.py [--configs llama3-8b,qwen2.5-7b] [--shapes 1x2048,4x512,1x8192] [--fold-norms]
                        [--rope-at qkv|append|attention] [--rope-ab] [--streamk-ab] [--cluster-ab] [--replays 8]
                        [--blocked] [--json OUT]

Configurations: examples/llama_layer.py's ``llama3-8b`` (hidden 4096, 32 / 8 heads of 128, intermediate 14336)
and ``qwen2.5-7b`` (hidden 3584: not a power of two, 28 / 4 heads, intermediate 18944, q / k / v biases). Token
shapes: ``BxS`` = B sequences of S tokens (causal each). The torch layer is Hugging Face's Llama layer written out
(RMS norm in f32, RoPE in bf16 with bf16 cos / sin, SDPA with GQA, SiLU(gate) * up); the float64 reference is the
same torch code in float64.

Device time of record: each layer captured into a CUDA graph (three layers in a row) and replayed ``--replays``
times back to back per sample (every side; nothing of the host's launch path counts, and the card stays busy as in a
serving loop), the sides in interleaved rounds, each round starting with the next side (a clock drift over the run
reaches each alike). The ``1 replay`` columns time one replay per sample (the card idles while the host waits for
it: the method of record until 2026-12-06, printed beside for comparison). Each case's line also gives the ratio to
torch.compile round by round (the ratio of the two layers' samples of one round, taken on a card in one state): its median and
quartiles, the spread to read the ratio of record against. Host overhead is reported separately:
wall time per layer of back-to-back eager calls (``eager ms`` columns; torch.compile's Python guards and ckgen's
prepared calls included). The per-step breakdown times each
step of the two layers alone (graph replay), every step of both layers in the same interleaved rounds. Accuracy:
relative error against float64, ckgen's and torch bf16 eager's, and their ratio (issue 28 asks <= 1.2).
``--fold-norms``: the ckgen layer is examples/llama_layer.py's folded-norm one (the RMS norms' weights folded into
the qkv and gate-up weights; norms that write only each row's rstd, which scales those GEMMs' rows), and the
unfolded layer runs as a fourth side of the same interleaved rounds (``ckgen_unfolded``), so both are compared in
one run. ``--rope-at``: where the ckgen layer rotates q and k (examples/llama_layer.py's ``rope_at``: ``append``,
the K/V append that also fills a cache, the default; ``qkv``, the qkv GEMM's epilogue, attention reading its
output; ``attention``, k in the append and q in attention as each tile loads). ``--rope-ab``: each other place's
layer runs as a further side of the same rounds (``ckgen_<place>``), its steps in the breakdown too.
``--streamk-ab``: likewise the layer with its projections pinned to their 128x256 stream-K member
(``ckgen_streamk``; the families' dispatcher picks the tile schedule there untuned). ``--cluster-ab``: likewise with
its projections replaced by bench/layer_cluster_nv.ck's 128x256 kernels with clusters of two (``ckgen_cluster``).
``--blocked``: the steady state timed a second way, every sample of one side before the next side's (no other graph
between two samples of a side), printed beside the interleaved figure: what the interleaving costs each side.
Goal (issue 28): ckgen >= 1.05x torch.compile and >= 1.2x eager at every shape of both configurations.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, rel_err, time_graphs_interleaved_ms, time_ms  # noqa: E402

GOAL_COMPILE, GOAL_EAGER, GOAL_ERR = 1.05, 1.2, 1.2


def _example():
    spec = importlib.util.spec_from_file_location("llama_layer", HERE.parent / "examples" / "llama_layer.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # (its dataclasses look their module up)
    spec.loader.exec_module(mod)
    return mod


def torch_steps(cfg, w, batch: int, cos, sin, dtype=torch.bfloat16) -> list:
    """Hugging Face's Llama decoder layer as named steps (``fn(env)``, as llama_layer.steps), on weights ``w`` and
    RoPE tables cos / sin [tokens, 1, head_dim / 2], all of ``dtype`` (bf16: the peer; float64: the reference)."""
    q_n, kv_n, d = cfg.q_n, cfg.kv_n, cfg.head_dim
    wt = {n: None if getattr(w, n) is None else getattr(w, n).to(dtype) for n in
          ("qkv", "qkv_bias", "o", "gate_up", "down", "norm_in", "norm_post")}
    acc = torch.float64 if dtype == torch.float64 else torch.float32

    def rms(v, g):
        v32 = v.to(acc)
        return (v32 * torch.rsqrt(v32.pow(2).mean(-1, keepdim=True) + cfg.eps)).to(dtype) * g

    def rot(t):
        lo, hi = t[..., :d // 2], t[..., d // 2:]
        return torch.cat((lo * cos - hi * sin, hi * cos + lo * sin), dim=-1)

    def norm(e):
        e["h"] = rms(e["x"], wt["norm_in"])

    def qkv(e):
        e["qkv"] = F.linear(e["h"], wt["qkv"], wt["qkv_bias"])

    def rope(e):
        t = e["qkv"]
        n = t.shape[0]
        e["q"] = rot(t[:, :q_n].view(n, cfg.heads, d))
        e["k"] = rot(t[:, q_n:q_n + kv_n].view(n, cfg.kv_heads, d))
        e["v"] = t[:, q_n + kv_n:].view(n, cfg.kv_heads, d)

    def attention(e):
        n = e["q"].shape[0]
        seq = n // batch

        def bhsd(t):
            return t.view(batch, seq, t.shape[1], d).transpose(1, 2)

        o = F.scaled_dot_product_attention(bhsd(e["q"]), bhsd(e["k"]), bhsd(e["v"]), is_causal=True, enable_gqa=True)
        e["o"] = o.transpose(1, 2).reshape(n, q_n)

    def o_proj(e):
        e["s"] = F.linear(e["o"], wt["o"]) + e["x"]

    def post_norm(e):
        e["y"] = rms(e["s"], wt["norm_post"])

    def mlp(e):
        gu = F.linear(e["y"], wt["gate_up"])
        e["m"] = F.silu(gu[:, :cfg.inter]) * gu[:, cfg.inter:]

    def down(e):
        e["out"] = F.linear(e["m"], wt["down"]) + e["s"]

    return [("norm", norm), ("qkv", qkv), ("rope", rope), ("attention", attention), ("o_proj+add", o_proj),
            ("norm", post_norm), ("gate_up+act", mlp), ("down+add", down)]


def rope_tables(ex, cfg, batch: int, seq: int, dtype):
    ang = torch.tensor(ex.rope_angles(cfg, batch, seq), device="cuda")
    return ang.cos()[:, None, :].to(dtype), ang.sin()[:, None, :].to(dtype)


def time_steps(ex, sides: dict, x) -> dict:
    """Each step's device time alone (graph replay) on the intermediates of one run of its whole layer, for every
    side (name -> its steps), all steps of all sides in interleaved rounds (timed one side after the other, the
    second side's steps had run on a card warmed by the first's: up to 12% apart on a 0.3 ms GEMM, H100).
    Returns side -> [(step, ms)]."""
    fns = {}
    for side, layer_steps in sides.items():
        env = ex.run_steps(layer_steps, x)
        for i, (_, fn) in enumerate(layer_steps):
            fns[(side, i)] = lambda fn=fn, env=env: fn(env)
    t = time_graphs_interleaved_ms(fns, warmup=2, rounds=7, inner=5)
    return {side: [(name, t[(side, i)]) for i, (name, _) in enumerate(layer_steps)]
            for side, layer_steps in sides.items()}


class Pinned(dict):
    """The layer's kernels with each family of ``members`` replaced: family -> a member suffix (that member of the
    family: a schedule A/B, the dispatcher's cost model picking between the tile schedule and stream-K untuned), or
    family -> a kernel of its own (another .ck file's: --cluster-ab)."""

    def __init__(self, ks, members: dict) -> None:
        super().__init__()
        self.ks, self.members = ks, members

    def __missing__(self, name: str):
        m = self.members.get(name)
        k = self.ks[name] if m is None or isinstance(m, str) else m
        if isinstance(m, str):
            k = k.kernel(f"{name}_{m}")
        self[name] = k
        return k


#: --streamk-ab: the families with a stream-K member of the 128x256 tile, pinned to it
STREAMK = {f: "tile128x256x64_schedulestreamk"
           for f in ("llama_qkv", "llama_qkv_bias", "llama_o_res", "llama_gate_up", "llama_down", "llama_qkv_rs",
                     "llama_qkv_bias_rs", "llama_gate_up_rs")}


def run_case(ex, ks, cfg_name: str, batch: int, seq: int, fold: bool = False, rope_at: str = "append",
             rope_ab: bool = False, streamk_ab: bool = False, replays: int = 8, cluster: dict | None = None,
             blocked: bool = False) -> dict:
    cfg = ex.CONFIGS[cfg_name]
    w = ex.Weights.random(cfg, 0, "cuda")
    x = torch.randn(batch * seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    rope = ex.rope_inputs(cfg, batch, seq, "cuda")
    ck_steps = ex.steps(ks, cfg, w.fold() if fold else w, batch, seq, rope, rope_at)
    cos, sin = rope_tables(ex, cfg, batch, seq, torch.bfloat16)
    t_steps = torch_steps(cfg, w, batch, cos, sin)

    def ck():
        return ex.forward(ck_steps, x)

    def eager():
        return ex.forward(t_steps, x)

    compiled = torch.compile(eager)
    with torch.no_grad():
        out_ck, out_eager, out_comp = ck(), eager(), compiled()
        cos64, sin64 = rope_tables(ex, cfg, batch, seq, torch.float64)
        ref = ex.forward(torch_steps(cfg, w, batch, cos64, sin64, torch.float64), x.double())
        errs = {"ckgen": rel_err(out_ck, ref), "eager": rel_err(out_eager, ref), "compile": rel_err(out_comp, ref)}
        sides = {"ckgen": ck, "eager": eager, "compile": compiled}
        if fold:
            unfolded = ex.steps(ks, cfg, w, batch, seq, rope, rope_at)
            sides["ckgen_unfolded"] = lambda: ex.forward(unfolded, x)
            errs["ckgen_unfolded"] = rel_err(sides["ckgen_unfolded"](), ref)
        step_sides = {"ckgen": ck_steps, "eager": t_steps}
        if streamk_ab:
            step_sides["ckgen_streamk"] = sk_steps = ex.steps(Pinned(ks, STREAMK), cfg, w.fold() if fold else w, batch,
                                                              seq, rope, rope_at)
            sides["ckgen_streamk"] = lambda: ex.forward(sk_steps, x)
            errs["ckgen_streamk"] = rel_err(sides["ckgen_streamk"](), ref)
        if cluster:
            step_sides["ckgen_cluster"] = c2_steps = ex.steps(Pinned(ks, cluster), cfg, w.fold() if fold else w, batch,
                                                              seq, rope, rope_at)
            sides["ckgen_cluster"] = lambda: ex.forward(c2_steps, x)
            errs["ckgen_cluster"] = rel_err(sides["ckgen_cluster"](), ref)
        for other in (p for p in ex.ROPE_AT if rope_ab and p != rope_at):
            step_sides[f"ckgen_{other}"] = other_steps = ex.steps(ks, cfg, w.fold() if fold else w, batch, seq, rope,
                                                                  other)
            sides[f"ckgen_{other}"] = lambda s=other_steps: ex.forward(s, x)
            errs[f"ckgen_{other}"] = rel_err(sides[f"ckgen_{other}"](), ref)
        del ref
        rounds: dict = {}
        dev = time_graphs_interleaved_ms(sides, rounds=15, inner=3, replays=replays, samples=rounds)
        dev1 = time_graphs_interleaved_ms(sides, rounds=15, inner=3)
        devb = time_graphs_interleaved_ms(sides, rounds=15, inner=3, replays=replays, blocked=True) if blocked else None
        wall = {"ckgen": time_ms(ck, reps=9, inner=3), "eager": time_ms(eager, reps=9, inner=3),
                "compile": time_ms(compiled, reps=9, inner=3)}
        pieces = time_steps(ex, step_sides, x)
    return {"config": cfg_name, "batch": batch, "seq": seq, "device_ms": dev, "device_ms_1replay": dev1,
            "eager_ms": wall, "rel_err": errs, "vs_compile": dev["compile"] / dev["ckgen"],
            "vs_compile_1replay": dev1["compile"] / dev1["ckgen"], "vs_eager": dev["eager"] / dev["ckgen"],
            "vs_compile_rounds": paired(rounds["compile"], rounds["ckgen"]), "device_ms_blocked": devb,
            "err_ratio": errs["ckgen"] / errs["eager"], "pieces": pieces}


def paired(peer: list, ours: list) -> tuple:
    """The per-round ratios peer / ours (the two sides' samples of one round, taken on a card in one state): their lower
    quartile, median and upper quartile, a spread to read the ratio of medians against."""
    r = sorted(p / o for p, o in zip(peer, ours, strict=True))
    return r[len(r) // 4], r[len(r) // 2], r[(3 * len(r)) // 4]


def print_rows(rows: list[dict]) -> None:
    head = (f"{'config':>11} {'tokens':>7} | {'ckgen':>7} {'eager':>7} {'compile':>7} (device ms) | "
            f"{'x compile':>9} {'x eager':>7} | {'1 replay: x compile':>19} | {'ckgen':>7} {'eager':>7} {'compile':>7} (wall ms) | "
            f"{'err ckgen':>9} {'err bf16':>8} {'ratio':>5}")
    print(head)
    print("-" * len(head))
    for r in rows:
        d, w, e = r["device_ms"], r["eager_ms"], r["rel_err"]
        print(f"{r['config']:>11} {r['batch']:>2}x{r['seq']:<4} | {d['ckgen']:7.3f} {d['eager']:7.3f} "
              f"{d['compile']:7.3f}             | {r['vs_compile']:9.3f} {r['vs_eager']:7.3f} | "
              f"{r['vs_compile_1replay']:19.3f} | {w['ckgen']:7.3f} "
              f"{w['eager']:7.3f} {w['compile']:7.3f}           | {e['ckgen']:9.2e} {e['eager']:8.2e} "
              f"{r['err_ratio']:5.2f}")
    for r in rows:
        print(f"\nsteps, {r['config']} {r['batch']}x{r['seq']} (device ms, each step alone):")
        for side, parts in r["pieces"].items():
            total = sum(t for _, t in parts)
            print(f"  {side:>5}: " + "  ".join(f"{n} {t:.3f}" for n, t in parts) + f"  | sum {total:.3f}")


def main() -> int:
    ex = _example()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="llama3-8b,qwen2.5-7b")
    ap.add_argument("--shapes", default="1x2048,4x512,1x8192", help="BxS: B sequences of S tokens")
    ap.add_argument("--fold-norms", action="store_true", help="the ckgen layer with its norms folded into the "
                    "GEMMs; the unfolded one timed beside it")
    ap.add_argument("--rope-at", choices=ex.ROPE_AT, default="append", help="where the ckgen layer rotates q and k: "
                    "the K/V append, the qkv GEMM's epilogue, or k in the append and q in attention "
                    "(examples/llama_layer.py's rope_at)")
    ap.add_argument("--rope-ab", action="store_true", help="the layer rotating at each other place timed beside it")
    ap.add_argument("--streamk-ab", action="store_true", help="the layer with its projections pinned to their "
                    "128x256 stream-K member, timed beside it")
    ap.add_argument("--cluster-ab", action="store_true", help="the layer with its projections replaced by "
                    "bench/layer_cluster_nv.ck's cluster = 2 kernels, timed beside it")
    ap.add_argument("--replays", type=int, default=8, help="back-to-back replays of each side's graph per sample")
    ap.add_argument("--blocked", action="store_true", help="also every sample of one side before the next side's")
    ap.add_argument("--json")
    a = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    ks = ex.kernels("sm_90")
    cluster = jit_file("bench/layer_cluster_nv.ck") if a.cluster_ab else None
    rows = []
    for cfg_name in a.configs.split(","):
        for shape in a.shapes.split(","):
            b, s = (int(v) for v in shape.split("x"))
            rows.append(run_case(ex, ks, cfg_name, b, s, a.fold_norms, a.rope_at, a.rope_ab, a.streamk_ab,
                                 a.replays, cluster, a.blocked))
            r = rows[-1]
            d = r["device_ms"]
            fold = (f"; unfolded {d['ckgen_unfolded']:.3f} ms (folding gains {d['ckgen_unfolded'] / d['ckgen']:.4f}x, "
                    f"error {r['rel_err']['ckgen']:.2e} vs {r['rel_err']['ckgen_unfolded']:.2e})" if a.fold_norms else "")
            q1, q2, q3 = r["vs_compile_rounds"]
            print(f"{cfg_name} {shape}: ckgen {d['ckgen']:.3f} ms, {r['vs_compile']:.3f}x compile "
                  f"(per round {q2:.3f}x, quartiles {q1:.3f}-{q3:.3f}; {r['vs_compile_1replay']:.3f}x by 1 replay "
                  f"per sample), {r['vs_eager']:.3f}x eager{fold}", flush=True)
            if r["device_ms_blocked"]:
                print("  blocked (each side's samples in a row): " + ", ".join(
                    f"{k} {v:.3f} ms ({v / d[k]:.3f}x interleaved)" for k, v in r["device_ms_blocked"].items()))
            for side in (k for k in d if k.startswith("ckgen_") and k != "ckgen_unfolded"):
                print(f"  {side}: {d[side]:.3f} ms ({d[side] / d['ckgen']:.4f}x the layer's time, "
                      f"{d['compile'] / d[side]:.3f}x compile; error {r['rel_err'][side]:.2e})")
    print()
    print_rows(rows)
    ok = [r["vs_compile"] >= GOAL_COMPILE and r["vs_eager"] >= GOAL_EAGER and r["err_ratio"] <= GOAL_ERR
          for r in rows]
    geo = math.exp(sum(math.log(r["vs_compile"]) for r in rows) / len(rows))
    print(f"\ngoal (>= {GOAL_COMPILE}x compile, >= {GOAL_EAGER}x eager, error <= {GOAL_ERR}x bf16 eager's): "
          f"{sum(ok)}/{len(rows)}; geomean vs compile {geo:.3f}x, min {min(r['vs_compile'] for r in rows):.3f}x")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
