"""Strided-batched GEMM on the GPU: ckgen (through its JIT, target sm_90) against torch.bmm (cuBLAS), measured in
the same run, bf16, A and B row-major.

  python bench/bmm.py [--json OUT]

Shapes (batch x M x N x K): 64x1024x1024x128, 8x4096x4096x1024, 512x128x128x128 (issue 10's goal: >= 0.9x
torch.bmm on each). Every kernel of bench/bmm_nv.ck is checked against an fp32-accumulated reference (C poisoned
with NaN first) and timed through its C entry point; the fastest correct one counts. Two timings of each side:
replays of a CUDA graph of 10 calls (device time: the ratio of record, METHOD.md's rule for short kernels: two of
these take 30-50 us, about what the Python -> ctypes -> C entry path costs per call) and eager back-to-back calls
(host path included). Both sides are timed alike and interleaved: ROUNDS rounds, each timing torch.bmm and then
every ckgen kernel once, and each side's median over the rounds counts (so that neither side gets the cooler or
the hotter part of the run: under sustained load the H200's clocks drift, docs/performance-log.md). Prints a TFLOP/s
table with both ratios, and the spread (min..max over the rounds) of the two sides' graph timings.
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
from nvh import jit_file, median, raw_call, rel_err, time_graph_ms, time_ms  # noqa: E402

SPEC = HERE / "bmm_nv.ck"
SPEC_ARG = os.path.relpath(SPEC, HERE.parent)  # relative, as bench/nv_prebuild.py builds it (same cache keys)
SHAPES = [(64, 1024, 1024, 128), (8, 4096, 4096, 1024), (512, 128, 128, 128)]
ROUNDS = 7


def tflops(B, M, N, K, ms):
    return 2.0 * B * M * N * K / (ms * 1e-3) / 1e12 if ms else 0.0




def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    t0 = time.perf_counter()
    kernels = jit_file(SPEC_ARG)
    print(f"ckgen: {len(kernels)} kernels built/loaded in {time.perf_counter() - t0:.1f} s", flush=True)
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    out = {"device": props.name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "bmm": []}
    for (B, M, N, K) in SHAPES:
        a = torch.randn(B, M, K, device="cuda").to(torch.bfloat16)
        b = torch.randn(B, K, N, device="cuda").to(torch.bfloat16)
        c = torch.empty(B, M, N, device="cuda", dtype=torch.bfloat16)
        ref = torch.bmm(a.float(), b.float()).double()
        def torch_bmm():
            torch.bmm(a, b, out=c)  # noqa: B023

        calls, per = {}, {}
        for n, kern in kernels.items():
            c.view(torch.int16).fill_(-1)  # poison (NaN)
            calls[n] = raw_call(kern, a, b, C=c)
            torch.cuda.synchronize()
            per[n] = {"err": rel_err(c, ref), "rounds": []}
        bmm_rounds = []
        for _ in range(ROUNDS):  # interleaved: torch.bmm, then each kernel, ROUNDS times
            bmm_rounds.append((time_graph_ms(torch_bmm), time_ms(torch_bmm)))
            for n, call in calls.items():
                per[n]["rounds"].append((time_graph_ms(call), time_ms(call)))
        t_bmm, e_bmm = (median([x[i] for x in bmm_rounds]) for i in (0, 1))
        best = None
        for n, v in per.items():
            v["ms"], v["eager_ms"] = (median([x[i] for x in v["rounds"]]) for i in (0, 1))
            v["tflops"] = tflops(B, M, N, K, v["ms"])
            if v["err"] < 1e-2 and (best is None or v["ms"] < per[best]["ms"]):
                best = n
        spread = {"torch.bmm": [tflops(B, M, N, K, max(x[0] for x in bmm_rounds)),
                                tflops(B, M, N, K, min(x[0] for x in bmm_rounds))]}
        if best:
            spread["ckgen"] = [tflops(B, M, N, K, max(x[0] for x in per[best]["rounds"])),
                               tflops(B, M, N, K, min(x[0] for x in per[best]["rounds"]))]
        r = {"batch": B, "M": M, "N": N, "K": K, "bmm_ms": t_bmm, "bmm_eager_ms": e_bmm, "ckgen_best": best,
             "ckgen_ms": per[best]["ms"] if best else None, "ckgen_eager_ms": per[best]["eager_ms"] if best else None,
             "ckgen_kernels": per, "graph_tflops_spread": spread}
        out["bmm"].append(r)
        print(f"{B}x{M}x{N}x{K}: torch.bmm {tflops(B, M, N, K, t_bmm):.0f} ckgen "
              f"{tflops(B, M, N, K, r['ckgen_ms']):.0f} ({best})  "
              + " ".join(f"{k.split('_', 2)[2]}={v['tflops']:.0f}/{tflops(B, M, N, K, v['eager_ms']):.0f} eager"
                         f"(err {v['err']:.1e})" for k, v in per.items()), flush=True)
        print("    graph TFLOP/s over the rounds (min..max): "
              + ", ".join(f"{k} {lo:.0f}..{hi:.0f}" for k, (lo, hi) in spread.items()), flush=True)
    print()
    print(f"Strided-batched GEMM, bf16, on {props.name} (TFLOP/s; ratio = ckgen / torch.bmm; graph: CUDA graph "
          "replays, device time; eager: back-to-back calls)")
    print(f"{'batch x M x N x K':>20} {'torch.bmm':>9} {'ckgen':>7} {'ratio':>6} {'eager: torch':>13} {'ckgen':>6} "
          f"{'ratio':>6}  best kernel")
    for r in out["bmm"]:
        shape = (r["batch"], r["M"], r["N"], r["K"])
        tb, tk = tflops(*shape, r["bmm_ms"]), tflops(*shape, r["ckgen_ms"])
        eb, ek = tflops(*shape, r["bmm_eager_ms"]), tflops(*shape, r["ckgen_eager_ms"])
        print(f"{'x'.join(map(str, shape)):>20} {tb:9.0f} {tk:7.0f} {tk / tb if tb else 0:6.2f} {eb:13.0f} {ek:6.0f} "
              f"{ek / eb if eb else 0:6.2f}  {r['ckgen_best']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
