"""Fused GEMM epilogues on the GPU (issue 28): SwiGLU gate-up and the down projection's residual, ckgen fused
against the unfused paths, measured in the same run, bf16.

  python bench/gemm_fused.py [--json OUT]

Gate-up (M x 2N x K = 2048 x 28672 x 4096, a Llama-3-8B-like MLP at 2048 tokens): ckgen's ``epilogue = swiglu``
(halves and interleaved(64): B the merged weight) against ckgen's plain GEMM of the same B followed by torch's
``silu(g) * u``, and torch (cuBLAS ``x @ W`` then ``silu * mul``); and ``fused_gate_up_rs``, the same with an RMSNorm's
per-row 1/rms applied in the epilogue (``scale_a = row``: the cost of folding the norm into the GEMM). Down (2048 x 4096 x 14336): ckgen's ``epilogue =
residual`` (out of place) against ckgen's plain GEMM + torch's add, and ``torch.addmm(R, x, W)``. Each ckgen output
is checked against float64 (C poisoned first); times are medians of CUDA-graph replays (bench/nvh.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, raw_call, rel_err, time_graph_ms  # noqa: E402

SPEC_ARG = os.path.relpath(HERE / "gemm_fused_nv.ck", HERE.parent)
M, N, K, HIDDEN = 2048, 14336, 4096, 4096


def tflops(m, n, k, ms):
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def gate_up(ks, out):
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    w = (torch.randn(2 * N, K, device="cuda", generator=gen) * K ** -0.5).to(torch.bfloat16)  # gate rows, up rows
    b = w.T
    h = x.double() @ b.double()
    want = torch.nn.functional.silu(h[:, :N]) * h[:, N:]
    rows = []
    for name in ("fused_gate_up", "fused_gate_up_il64"):
        k = ks[name]
        bk = b
        if k.plan.spec.params.gemm.gate == "interleaved":  # the same weight, blocks of 64 gate / 64 up columns
            bk = torch.stack((b[:, :N].reshape(K, -1, 64), b[:, N:].reshape(K, -1, 64)), 2).reshape(K, 2 * N)
            bk = bk.T.contiguous().T
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        run = raw_call(k, x, bk, C=c)
        run()
        err = rel_err(c, want)
        rows.append({"kernel": name, "ms": time_graph_ms(run), "err": err})
    rstd = torch.rand(M, device="cuda", generator=gen) + 0.5  # (an RMSNorm's 1/rms per row)
    h_rs = h * rstd.double()[:, None]
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    run = raw_call(ks["fused_gate_up_rs"], x, b, C=c, scale_a=rstd)
    run()
    err = rel_err(c, torch.nn.functional.silu(h_rs[:, :N]) * h_rs[:, N:])
    rows.append({"kernel": "fused_gate_up_rs", "ms": time_graph_ms(run), "err": err})
    plain = ks["plain_t128_256"]
    g = torch.empty(M, 2 * N, device="cuda", dtype=torch.bfloat16)
    mm = raw_call(plain, x, b, C=g)

    def unfused():
        mm()
        return torch.nn.functional.silu(g[:, :N]) * g[:, N:]

    def torch_path():
        y = x @ b
        return torch.nn.functional.silu(y[:, :N]) * y[:, N:]

    rows.append({"kernel": "ckgen plain + torch silu*mul", "ms": time_graph_ms(unfused), "err": rel_err(unfused(), want)})
    rows.append({"kernel": "torch matmul + silu*mul", "ms": time_graph_ms(torch_path), "err": rel_err(torch_path(), want)})
    for r in rows:
        print(f"gate-up {M}x{2 * N}x{K}: {r['kernel']:32s} {r['ms']:.3f} ms  {tflops(M, 2 * N, K, r['ms']):6.1f} TFLOP/s"
              f"  err {r['err']:.1e}", flush=True)
    out["gate_up"] = rows


def down(ks, out):
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(M, N, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    b = (torch.randn(HIDDEN, N, device="cuda", generator=gen) * N ** -0.5).to(torch.bfloat16).T
    r = torch.randn(M, HIDDEN, device="cuda", generator=gen).to(torch.bfloat16)
    want = x.double() @ b.double() + r.double()
    c = torch.full((M, HIDDEN), float("nan"), device="cuda", dtype=torch.bfloat16)
    fused = raw_call(ks["fused_down_residual"], x, b, residual=r, C=c)
    fused()
    rows = [{"kernel": "fused_down_residual", "ms": time_graph_ms(fused), "err": rel_err(c, want)}]
    t = torch.empty(M, HIDDEN, device="cuda", dtype=torch.bfloat16)
    mm = raw_call(ks["plain_t128_256"], x, b, C=t)

    def unfused():
        mm()
        return t + r

    rows.append({"kernel": "ckgen plain + torch add", "ms": time_graph_ms(unfused), "err": rel_err(unfused(), want)})
    rows.append({"kernel": "torch.addmm", "ms": time_graph_ms(lambda: torch.addmm(r, x, b)),
                 "err": rel_err(torch.addmm(r, x, b), want)})
    for row in rows:
        print(f"down {M}x{HIDDEN}x{N}: {row['kernel']:32s} {row['ms']:.3f} ms  {tflops(M, HIDDEN, N, row['ms']):6.1f} "
              f"TFLOP/s  err {row['err']:.1e}", flush=True)
    out["down"] = rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    ks = jit_file(SPEC_ARG)
    out = {"device": torch.cuda.get_device_properties(0).name, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    gate_up(ks, out)
    down(ks, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
