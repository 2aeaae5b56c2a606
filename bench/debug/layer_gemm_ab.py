"""Why a projection runs slower inside bench/model.py's layer than alone (e.g. the down projection at 2048 tokens:
0.342 ms as a layer step against 0.306 ms for the same 128x256 residual kernel in bench/gemm_cluster.py
--residual-ab, H100): per projection, in one interleaved graph-timed case, the layer's family call (as the step
calls it, output allocated) and its chosen member through the raw C entry, on the layer's own intermediates and on
random operands of the same shapes, beside torch (mm, or addmm with the residual); then the kernels the family call
launches (torch profiler).

  python bench/debug/layer_gemm_ab.py [--config llama3-8b|qwen2.5-7b] [--shapes 1x2048,1x8192] [--members]

``--members``: every member of each family through its raw C entry in the same case (e.g. the tile schedule
against stream-K at the layer's shapes: the dispatcher's cost model picks between them untuned).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from model import _example  # noqa: E402
from nvh import kernels_run, raw_call, time_graphs_interleaved_ms  # noqa: E402

# projection -> (family, env input, weight attribute, env residual or None); a configuration with q / k / v biases
# (Qwen2.5-7B) runs llama_qkv_bias, its bias in the residual's place (the family's third operand; torch's addmm)
PROJ = {"qkv": ("llama_qkv", "h", "qkv", None), "o": ("llama_o_res", None, "o", "x"),
        "gate_up": ("llama_gate_up", "y", "gate_up", None), "down": ("llama_down", "m", "down", "s")}


def case(ex, ks, cfg_name: str, batch: int, seq: int, members: bool = False) -> None:
    cfg = ex.CONFIGS[cfg_name]
    w = ex.Weights.random(cfg, 0, "cuda")
    x = torch.randn(batch * seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    rope = ex.rope_inputs(cfg, batch, seq, "cuda")
    env = ex.run_steps(ex.steps(ks, cfg, w, batch, seq, rope), x)
    env["o2"] = env["o"].reshape(x.shape[0], cfg.q_n)
    for proj, (fam_name, a_key, w_key, r_key) in PROJ.items():
        r = env[r_key] if r_key else None
        if proj == "qkv" and w.qkv_bias is not None:
            fam_name, r = "llama_qkv_bias", w.qkv_bias
        one(ks[fam_name], f"{cfg_name} {batch}x{seq} {proj:8}", env[a_key or "o2"], getattr(w, w_key).T, r,
            fam_name == "llama_gate_up", members)


def one(fam, label: str, a, b, r, gated: bool, members: bool = False) -> None:
    M, K = a.shape
    out_n = b.shape[1] // 2 if gated else b.shape[1]  # (N: C's columns; a gated B has 2N)
    choice = fam.explain(M, out_n, K)
    member = fam.kernel(choice.kernel)
    ra = torch.randn_like(a.float()).mul_(a.float().std()).to(a.dtype)
    res = (r,) if r is not None else ()
    res_rand = (torch.randn_like(r.float()).to(r.dtype),) if r is not None else ()
    c1, c2 = (torch.empty(M, out_n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    full = torch.empty(M, b.shape[1], device="cuda", dtype=torch.bfloat16)
    sides = {
        "family": lambda: fam(a, b, *res),
        "member": raw_call(member, a, b, *res, C=c1),
        "member_rand": raw_call(member, ra, b, *res_rand, C=c2),
        "torch": (lambda: torch.addmm(r, a, b, out=full)) if r is not None else (lambda: torch.mm(a, b, out=full)),
    }
    for m in fam.table.members if members else ():
        if m.name != choice.kernel:
            sides[m.name.removeprefix(fam.name + "_")] = raw_call(fam.kernel(m.name), a, b, *res,
                                                                  C=torch.empty_like(c1))
    t = time_graphs_interleaved_ms(sides, rounds=11)
    names = kernels_run(sides["family"])
    print(f"{label} {M}x{out_n}x{K}: " + "  ".join(f"{k} {v * 1e3:7.1f}" for k, v in t.items())
          + f" us | chosen {choice.kernel} | family ran {names}", flush=True)

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="llama3-8b")
    ap.add_argument("--shapes", default="1x2048,1x8192")
    ap.add_argument("--members", action="store_true", help="also every other member of each family (raw entries)")
    args = ap.parse_args()
    ex = _example()
    ks = ex.kernels("sm_90")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    with torch.no_grad():
        for s in args.shapes.split(","):
            batch, seq = map(int, s.split("x"))
            case(ex, ks, args.config, batch, seq, args.members)
    return 0


if __name__ == "__main__":
    sys.exit(main())
