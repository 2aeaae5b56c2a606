"""The Hopper GEMM body with and without thread-block clusters of 2 (``cluster = 2``: the two blocks of a cluster
take neighbouring M tiles and load B's tile once, multicast by TMA), against cuBLAS, bf16, H200.

  python bench/cluster.py [--json OUT]

Shapes: square 4096^3 and 8192^3, and a Llama-3-8B layer's projections at 2048 and 8192 tokens (qkv 6144 x 4096,
o 4096 x 4096: plain; gate-up 28672 x 4096 with SwiGLU; down 4096 x 14336 with the residual). Per shape the
plain / residual / SwiGLU kernel pair (bench/cluster_nv.ck) and torch's matmul (+ silu * mul, + add), each checked
against float64 once (C poisoned first), then timed by CUDA-graph replay in interleaved rounds
(bench/nvh.py: time_graphs_interleaved_ms). TFLOP/s count 2 M N K (gate-up: N the merged 2 x 14336 columns).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, raw_call, rel_err, time_graphs_interleaved_ms  # noqa: E402

SPEC_ARG = os.path.relpath(HERE / "cluster_nv.ck", HERE.parent)
# (label, kind, M, N of C, K)
CASES = [("4096^3", "plain", 4096, 4096, 4096), ("8192^3", "plain", 8192, 8192, 8192)]
for tokens in (2048, 8192):
    CASES += [(f"qkv {tokens}", "plain", tokens, 6144, 4096), (f"o {tokens}", "plain", tokens, 4096, 4096),
              (f"gate_up {tokens}", "glu", tokens, 14336, 4096), (f"down {tokens}", "res", tokens, 4096, 14336)]


def case(ks, kind, M, N, K):
    gen = torch.Generator(device="cuda").manual_seed(M + N + K)
    nb = 2 * N if kind == "glu" else N
    x = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    w = (torch.randn(nb, K, device="cuda", generator=gen) * K ** -0.5).to(torch.bfloat16)
    r = torch.randn(M, N, device="cuda", generator=gen).to(torch.bfloat16) if kind == "res" else None
    h = x.double() @ w.double().T
    want = torch.nn.functional.silu(h[:, :N]) * h[:, N:] if kind == "glu" else h + (r.double() if r is not None else 0)
    del h
    fns, errs = {}, {}
    for c in (1, 2):
        k = ks[f"{kind}_c{c}"]
        out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        run = raw_call(k, x, w.T, C=out, **({"residual": r} if r is not None else {}))
        run()
        torch.cuda.synchronize()
        errs[f"cluster {c}"] = rel_err(out, want)
        fns[f"cluster {c}"] = run
    del want
    if kind == "glu":
        def torch_side():
            g = x @ w.T
            return torch.nn.functional.silu(g[:, :N]) * g[:, N:]
    elif kind == "res":
        def torch_side():
            return torch.addmm(r, x, w.T)
    else:
        def torch_side():
            return x @ w.T
    fns["cuBLAS"] = torch_side
    ms = time_graphs_interleaved_ms(fns, rounds=15, inner=3)
    flop = 2.0 * M * nb * K
    return {"ms": ms, "tflops": {s: flop / (t * 1e-3) / 1e12 for s, t in ms.items()}, "err": errs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    ks = jit_file(SPEC_ARG)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'case':14} {'kind':6} | {'cluster 1':>10} {'cluster 2':>10} {'cuBLAS':>10} (TFLOP/s) | "
          f"{'c2 / c1':>7} {'c2 / cuBLAS':>11} | err c1 / c2")
    rows = []
    for label, kind, M, N, K in CASES:
        res = case(ks, kind, M, N, K)
        t = res["tflops"]
        print(f"{label:14} {kind:6} | {t['cluster 1']:10.1f} {t['cluster 2']:10.1f} {t['cuBLAS']:10.1f}           | "
              f"{t['cluster 2'] / t['cluster 1']:7.3f} {t['cluster 2'] / t['cuBLAS']:11.3f} | "
              f"{res['err']['cluster 1']:.1e} / {res['err']['cluster 2']:.1e}", flush=True)
        rows.append({"case": label, "kind": kind, "M": M, "N": N, "K": K, **res})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
