"""The Hopper body's clusters (``cluster = 2``: two M-adjacent tiles load their shared B tile once, by TMA
multicast) against the same kernels without (``cluster = 1``) and against cuBLAS, on the GPU.

Kernels: the pairs of bench/gemm_cluster_nv.ck (the dispatcher's 128x256 and 128x128 tiles, the layer's SwiGLU
gate-up and residual down projections). Shapes: nn.Linear layers at M >= 512 tokens, from bench/shapes/: the
Mistral-7B list (the set ``cluster = auto`` is decided on) and, as the figure of record, Llama-2-13B and
Qwen2.5-32B (never used to decide). Every kernel runs on the layers it serves (lin: all; glu: gate_up; res: down).
Each shape times cuBLAS (``torch.mm``; ``torch.addmm`` with the residual; the gate-up's GEMM alone for glu), the
cluster = 1 and the cluster = 2 kernel as CUDA graphs in interleaved rounds (nvh.time_graphs_interleaved_ms);
the two ckgen outputs must agree bit for bit (the same sums in the same order) and match an fp32 reference.

    python3 bench/gemm_cluster.py [--json OUT] [--quick]
    python3 bench/gemm_cluster.py --residual-ab     the residual epilogue's own cost instead: on the down projections
                                                    of every list, the plain and the residual 128x256 kernel (cluster 1)
                                                    beside torch.mm and torch.addmm, all four in one interleaved case
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, raw_call, rel_err, time_graphs_interleaved_ms  # noqa: E402

SPEC_ARG = "bench/gemm_cluster_nv.ck"
DECIDE = "mistral-7b.txt"
RECORD = ("llama-2-13b.txt", "qwen2.5-32b.txt")
MIN_M = 512
#: which pair serves which layer (None: every layer)
PAIRS = {"lin256": None, "lin128": None, "glu256": "gate_up", "res256": "down"}


def shapes(name: str) -> list[tuple[int, int, int, str]]:
    out = []
    for line in (HERE / "shapes" / name).read_text().splitlines():
        body, _, comment = line.partition("#")
        if not body.strip():
            continue
        m, n, k = map(int, body.strip().split("x"))
        if m >= MIN_M:
            out.append((m, n, k, comment.strip().split(",")[0]))
    return out


def case(kernels, pair, M, N, K):
    """(times {cublas, c1, c2} in ms, error of c1 against fp32, whether c2 == c1 bitwise)."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(M * 7 + N + K)
    a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
    w = (torch.randn(N, K, device="cuda", generator=gen) * 0.05).to(torch.bfloat16)
    b = w.t()
    gated, res = pair.startswith("glu"), pair.startswith("res")
    out_n = N // 2 if gated else N
    r = torch.randn(M, out_n, device="cuda", generator=gen).to(torch.bfloat16) if res else None
    outs = {s: torch.full((M, out_n), float("nan"), device="cuda", dtype=torch.bfloat16) for s in ("c1", "c2")}
    calls = {s: raw_call(kernels[f"{pair}_{s}"], a, b, C=outs[s], **({"residual": r} if res else {}))
             for s in ("c1", "c2")}
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    if gated:
        ref = torch.nn.functional.silu(ref[:, :out_n]) * ref[:, out_n:]
    if res:
        ref = ref + r.float()
    err = rel_err(outs["c1"], ref.double())
    same = torch.equal(outs["c1"].view(torch.int16), outs["c2"].view(torch.int16))
    full = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    peer = (lambda: torch.addmm(r, a, b, out=full)) if res else (lambda: torch.mm(a, b, out=full))
    return time_graphs_interleaved_ms({"cublas": peer, **calls}), err, same


def residual_ab(kernels, lists) -> list[dict]:
    """Plain and residual 128x256 kernels, torch.mm and torch.addmm on each list's down projections, in one case each
    (times across cases of a run are not comparable: the card's clocks move between them)."""
    rows = []
    print(f"\n{'M x N x K':>18} {'mm us':>8} {'addmm us':>8} {'plain us':>8} {'resid us':>8} {'resid/plain':>11} "
          f"{'addmm/mm':>8}")
    for lst in lists:
        for (M, N, K, name) in shapes(lst):
            if not name.startswith("down"):
                continue
            gen = torch.Generator(device="cuda")
            gen.manual_seed(M + N + K)
            a = (torch.randn(M, K, device="cuda", generator=gen) * 0.5).to(torch.bfloat16)
            b = (torch.randn(N, K, device="cuda", generator=gen) * 0.05).to(torch.bfloat16).t()
            r = torch.randn(M, N, device="cuda", generator=gen).to(torch.bfloat16)
            c_plain, c_res, full = (torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            t = time_graphs_interleaved_ms({
                "mm": lambda: torch.mm(a, b, out=full),  # noqa: B023
                "addmm": lambda: torch.addmm(r, a, b, out=full),  # noqa: B023
                "plain": raw_call(kernels["lin256_c1"], a, b, C=c_plain),
                "resid": raw_call(kernels["res256_c1"], a, b, C=c_res, residual=r)})
            rows.append({"list": lst, "M": M, "N": N, "K": K, **{f"{k}_ms": v for k, v in t.items()}})
            print(f"{f'{M}x{N}x{K}':>18} {t['mm'] * 1e3:8.1f} {t['addmm'] * 1e3:8.1f} {t['plain'] * 1e3:8.1f} "
                  f"{t['resid'] * 1e3:8.1f} {t['resid'] / t['plain']:11.3f} {t['addmm'] / t['mm']:8.3f}", flush=True)
    return rows


def table(kernels, title: str, lists, quick: bool, pairs: str | None = None, limit: int = 0) -> list[dict]:
    rows = []
    print(f"\n{title}")
    print(f"{'kernel':8} {'M x N x K':>18} {'layer':10} {'cuBLAS us':>9} {'c1 us':>8} {'c2 us':>8} {'c2/c1':>6} "
          f"{'c1/cuB':>6} {'c2/cuB':>6}  check")
    for lst in lists:
        todo = shapes(lst)
        for pair, layer in PAIRS.items():
            if pairs and not re.search(pairs, pair):
                continue
            for (M, N, K, name) in (todo[::3] if quick else todo)[:limit or None]:
                if layer and not name.startswith(layer):
                    continue
                t, err, same = case(kernels, pair, M, N, K)
                row = {"list": lst, "kernel": pair, "M": M, "N": N, "K": K, "layer": name, "err": err, "same": same,
                       **{f"{s}_ms": v for s, v in t.items()}}
                rows.append(row)
                ok = same and err < 1e-2
                print(f"{pair:8} {f'{M}x{N}x{K}':>18} {name:10} {t['cublas'] * 1e3:9.1f} {t['c1'] * 1e3:8.1f} "
                      f"{t['c2'] * 1e3:8.1f} {t['c1'] / t['c2']:6.3f} {t['cublas'] / t['c1']:6.3f} "
                      f"{t['cublas'] / t['c2']:6.3f}  {'ok' if ok else f'FAIL (err {err:.1e}, same {same})'}",
                      flush=True)
    for pair in PAIRS:
        sel = [r for r in rows if r["kernel"] == pair]
        if sel:
            gm = math.exp(sum(math.log(r["c1_ms"] / r["c2_ms"]) for r in sel) / len(sel))
            gc = math.exp(sum(math.log(r["cublas_ms"] / r["c2_ms"]) for r in sel) / len(sel))
            print(f"{pair}: c2 speed over c1 geomean {gm:.3f} (min {min(r['c1_ms'] / r['c2_ms'] for r in sel):.3f}), "
                  f"c2 vs cuBLAS geomean {gc:.3f}, over {len(sel)} shapes")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="every third shape of each list")
    ap.add_argument("--pairs", help="only the kernel pairs matching this regex (lin256, lin128, glu256, res256)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many shapes per list and pair")
    ap.add_argument("--decide-only", action="store_true", help="the decision set only")
    ap.add_argument("--residual-ab", action="store_true",
                    help="the residual epilogue's cost (plain vs residual kernel, mm vs addmm) instead of clusters")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    kernels = jit_file(SPEC_ARG)
    props = torch.cuda.get_device_properties(0)
    print(f"device: {props.name}, torch {torch.__version__}")
    if args.residual_ab:
        rows = residual_ab(kernels, [DECIDE, *RECORD])
        if args.json:
            Path(args.json).write_text(json.dumps({"device": props.name, "rows": rows}, indent=1))
        return 0
    rows = table(kernels, f"Decision set ({DECIDE}, M >= {MIN_M})", [DECIDE], args.quick, args.pairs, args.limit)
    if not args.decide_only:
        rows += table(kernels, "Figure of record (models not used to decide)", RECORD, args.quick, args.pairs,
                      args.limit)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "rows": rows}, indent=1))
    return 0 if all(r["same"] and r["err"] < 1e-2 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
