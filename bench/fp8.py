"""fp8 GEMM on the GPU (issue 26): ckgen's scaled fp8 kernels (through the JIT, target sm_90) against
torch._scaled_mm (cuBLASLt), measured in the same run: e4m3 x e4m3 -> bf16, A row-major, B column-major.

  python bench/fp8.py [--quick] [--only REGEX] [--json OUT] [--dispatch [LIST ...] [--tuning DB] [--members]]

Three scalings: per-tensor (one f32 per operand; torch "tensorwise"), per-row of A / per-column of B (torch
"rowwise") and block(128) pairs (A 1 x 128, B 128 x 128; torch's blockwise _scaled_mm where this torch has it:
its result must match the reference, else it is reported as unavailable). torch is timed twice: as called by
default (use_fast_accum=False: cuBLASLt adds the fp8 sums into f32 outside the tensor cores) and with
use_fast_accum=True (the sums stay in the wgmma accumulators, as ckgen's Hopper body keeps them for tensor / row /
col scales); the ratios are against both. ckgen's kernels: fp8_<scaling>_t* (mma.sync body) and fp8_<scaling>_h*
(the Hopper TMA + wgmma body, which the host entry launches for these aligned operands). Shapes: 4096^3 and 8192^3 (the issue's bar: >= 1.0x torch._scaled_mm), and nn.Linear shapes of a 7-8B
model (N x K = 4096 x 4096, 14336 x 4096, 4096 x 14336) at M = 1, 16, 128, 2048, 8192 (--quick: 4096^3 and M = 16,
2048 of the first linear shape). Every kernel of bench/fp8_nv.ck is checked against a float64 reference of the
decoded fp8 inputs times the scales (C poisoned with NaN first; relative error < 1e-2 to count) and timed by
CUDA-graph replays (nvh.time_graph_ms: device time), interleaved with torch._scaled_mm over ROUNDS rounds, each
side's median counting, as bench/bmm.py does, with B rotated over copies that together pass the L2 (a model's
weights come from DRAM; bench/dispatch.py times bf16 so; --warm: one copy, as every figure before 2026-12-07c); the
fastest correct kernel per shape counts. Prints TFLOP/s and the
ratio ckgen / torch per shape and scaling.

--dispatch: the same comparison through ckgen's dispatchers instead of the fastest kernel, the issue's "through the
dispatcher": one family per scaling in bench/fp8_dispatch_nv.ck, untuned (the GEMM cost model picks the member per
shape: Hopper tiles with one workgroup per tile, split-K or stream-K, a 16-row split-K tile for decode shapes) or,
with --tuning DB, built from a `ckgen tune` database of those families (bench/device_run.sh fp8-tune: Mistral-7B's
layers, bench/shapes/mistral-7b.txt, whose N x K are the nn.Linear list's), on the nn.Linear shapes above at
M = 1 .. 8192 and on each LIST (bench/shapes/*.txt; default: Qwen2-7B's layers, bench/shapes/qwen2-7b.txt, at
token counts 1 .. 4096, never tuned). The member's device time is what is timed (a dispatcher's
host time: bench/overhead.py). --members: every member is timed at every shape; the fastest counts (an oracle,
not a figure of record) and the dispatcher's pick is printed against it (how far the cost model is from it). Prints each shape's member and the geomean / min ratio per scaling and list. The
cost model's one fp8 figure (block scales with one consumer warpgroup) was read from this benchmark's 4096 / 14336
shapes at M >= 2048, and the tuning database from Mistral-7B's: the Qwen2-7B list is the figure of record.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from nvh import jit_file, median, raw_call, rel_err, rotation_copies, time_graph_ms  # noqa: E402

SPEC = HERE / "fp8_nv.ck"
SPEC_ARG = os.path.relpath(SPEC, HERE.parent)  # relative, as bench/nv_prebuild.py builds it (same cache keys)
DISPATCH_SPEC_ARG = "bench/fp8_dispatch_nv.ck"
DISPATCH_LISTS = ["bench/shapes/qwen2-7b.txt"]
SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
LINEAR_NK = [(4096, 4096), (14336, 4096), (4096, 14336)]
LINEAR_M = [1, 16, 128, 2048, 8192]
QUICK = [(4096, 4096, 4096), (16, 4096, 4096), (2048, 4096, 4096)]
ROUNDS = 5
FP8 = torch.float8_e4m3fn
BLK = 128
SCALINGS = ("tensor", "rowwise", "block")


def tflops(M, N, K, ms):
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12 if ms else 0.0




def operands(M, N, K, gen):
    """fp8 A (M x K, row-major), B (K x N, column-major), and both scalings' scales (f32 on the device)."""
    a = (torch.randn(M, K, device="cuda", generator=gen) * 2).to(FP8)
    b = (torch.randn(N, K, device="cuda", generator=gen) * 2).to(FP8).t()
    st_a = torch.tensor([0.37], device="cuda")
    st_b = torch.tensor([1.9], device="cuda")
    sr_a = torch.rand(M, 1, device="cuda", generator=gen) + 0.05
    sr_b = torch.rand(1, N, device="cuda", generator=gen) + 0.05
    kb, nb = -(-K // BLK), -(-N // BLK)
    sk_a = torch.rand(M, kb, device="cuda", generator=gen) + 0.05   # ckgen's scale_a: M x kb, row-major
    sk_b = torch.rand(nb, kb, device="cuda", generator=gen) + 0.05  # ckgen's scale_b: nb x kb, row-major
    return a, b, {"tensor": (st_a, st_b), "rowwise": (sr_a, sr_b), "block": (sk_a, sk_b)}


def reference(a, b, sa, sb, scaling):
    if scaling != "block":
        return (a.double() @ b.double()) * sa.double() * sb.double()
    K, N = a.shape[1], b.shape[1]
    ad = a.double() * sa.double().repeat_interleave(BLK, 1)[:, :K]
    bd = b.double() * sb.double().repeat_interleave(BLK, 0)[:N].repeat_interleave(BLK, 1)[:, :K].t()
    return ad @ bd


def torch_scales(sa, sb, scaling):
    """The scale tensors torch._scaled_mm takes for a scaling: as they are (tensorwise, rowwise); for blockwise
    (torch >= 2.9 on sm_90: BlockWise1x128 x BlockWise128x128) A's M x kb outer-dim-major and B's kb x nb (our nb x
    kb transposed), also outer-dim-major."""
    if scaling != "block":
        return sa, sb
    return sa.t().contiguous().t(), sb.t()


def every_kernel(kernels):
    """The candidates of bench/fp8_nv.ck per scaling: every kernel named fp8_<scaling>_*."""
    return lambda scaling, M, N, K: {n: k for n, k in kernels.items() if n.startswith(f"fp8_{scaling}_")}


def dispatched(families):
    """The one candidate per scaling that its dispatcher (bench/fp8_dispatch_nv.ck) picks at M x N x K."""
    def pick(scaling, M, N, K):
        d = families[scaling]
        sizes = {"M": M, "N": N, "K": K, "kb": -(-K // BLK), "nb": -(-N // BLK)}
        name = d.explain(*(sizes[a.name] for a in d.abi.sizes)).kernel
        return {name: d.kernel(name)}
    return pick


def every_member(families):
    """Every member of each scaling's dispatcher (``--members``: the fastest counts, an oracle; the pick is
    reported beside it by :func:`pick_vs_oracle`)."""
    return lambda scaling, M, N, K: {p.name: families[scaling].kernel(p.name) for p in families[scaling].table.plans}


def pick_vs_oracle(rows, families) -> None:
    """Per shape and scaling: the member the dispatcher picks, its time over the fastest member's (1.00: the
    pick is the oracle's), and the geomean of that ratio per scaling."""
    print("\ndispatcher pick vs the fastest member (time ratio, >= 1.00; the pick's name / the fastest's)")
    per = {s: [] for s in SCALINGS}
    for r in rows:
        M, N, K = r["M"], r["N"], r["K"]
        cells = []
        for s in SCALINGS:
            name = next(iter(dispatched(families)(s, M, N, K)))
            row, best = r[s], r[s]["ckgen_best"]
            if best is None or name not in row["kernels"]:
                cells.append(f"{s} n/a")
                continue
            x = row["kernels"][name]["ms"] / row["ckgen_ms"]
            per[s].append(x)
            cells.append(f"{s} {x:.2f} ({name.split('_', 2)[2]} / {best.split('_', 2)[2]})")
        print(f"{M}x{N}x{K}: " + "  ".join(cells), flush=True)
    for s, xs in per.items():
        if xs:
            print(f"  {s}: pick / fastest geomean {math.exp(sum(map(math.log, xs)) / len(xs)):.3f}, worst {max(xs):.2f}")


def weight_copies(N, K, gen, b, warm: bool) -> list:
    """B and, unless ``warm``, more copies of it (nvh.rotation_copies): each timed
    graph runs every copy in turn, so that B comes from DRAM as a model's weights do (bench/dispatch.py's rotation;
    triton's do_bench, which measured the shared reference figures, flushes the L2 instead)."""
    n = 1 if warm else rotation_copies(N * K)
    return [b] + [(torch.randn(N, K, device="cuda", generator=gen) * 2).to(FP8).t() for _ in range(n - 1)]


def each(calls):
    """One callable running ``calls`` in turn (a graph of it times all of them: divide by len(calls))."""
    return lambda: [f() for f in calls]


def bench_shape(M, N, K, candidates, gen, warm=False):
    """Every scaling at M x N x K: torch._scaled_mm (both accumulations) and ``candidates(scaling, M, N, K)``
    (name -> kernel), checked on B, then timed in interleaved rounds over B's copies (:func:`weight_copies`); the
    fastest correct candidate counts."""
    a, b, scales = operands(M, N, K, gen)
    bs = weight_copies(N, K, gen, b, warm)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    rows = {}
    for scaling, (sa, sb) in scales.items():
        ref = reference(a, b, sa, sb, scaling)
        ta, tb = torch_scales(sa, sb, scaling)
        out_t = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        torch_calls, torch_err = {}, None
        for fast in (False, True):
            def torch_mm(fast=fast, b=b):
                torch._scaled_mm(a, b, scale_a=ta, scale_b=tb, out_dtype=torch.bfloat16, out=out_t,  # noqa: B023
                                 use_fast_accum=fast)

            try:  # (cuBLASLt refuses some shapes, e.g. dimensions not multiples of 16; older torch has no blockwise)
                out_t.view(torch.int16).fill_(-1)
                torch_mm()
                torch.cuda.synchronize()
                err = rel_err(out_t, ref)
            except RuntimeError as exc:
                print(f"{M}x{N}x{K} {scaling}: torch._scaled_mm(use_fast_accum={fast}) refuses it "
                      f"({str(exc).splitlines()[0]})", flush=True)
                continue
            if not err < 1e-2:  # (e.g. a torch that reads the blockwise scales otherwise): not a comparison
                print(f"{M}x{N}x{K} {scaling}: torch._scaled_mm(use_fast_accum={fast}) error {err:.1e}: not compared",
                      flush=True)
                continue
            torch_calls[fast] = each([lambda fast=fast, bi=bi: torch_mm(fast, bi) for bi in bs])
            torch_err = err if torch_err is None else torch_err
        calls, per = {}, {}
        for n, kern in candidates(scaling, M, N, K).items():
            c.view(torch.int16).fill_(-1)  # poison (NaN)
            flat = (sa, sb) if scaling == "block" else (sa.reshape(-1), sb.reshape(-1))
            first = raw_call(kern, a, b, *flat, C=c)  # (binding runs it once: the check reads that)
            torch.cuda.synchronize()
            per[n] = {"err": rel_err(c, ref), "rounds": []}
            calls[n] = each([first] + [raw_call(kern, a, bi, *flat, C=c) for bi in bs[1:]])
        t_rounds = {fast: [] for fast in torch_calls}
        # (each graph call already runs every copy of B: fewer of them back to back keeps a round of ten members
        # on the large shapes to seconds, not minutes)
        timing = {"reps": 10, "inner": max(1, 10 // len(bs))}
        for _ in range(ROUNDS):  # interleaved: torch (both accumulations), then each kernel
            for fast, tm in torch_calls.items():
                t_rounds[fast].append(time_graph_ms(tm, **timing) / len(bs))
            for n, call in calls.items():
                per[n]["rounds"].append(time_graph_ms(call, **timing) / len(bs))
        t_ms = median(t_rounds[False]) if False in t_rounds else 0.0
        t_fast_ms = median(t_rounds[True]) if True in t_rounds else 0.0
        best = None
        for n, v in per.items():
            v["ms"] = median(v["rounds"])
            v["tflops"] = tflops(M, N, K, v["ms"])
            if v["err"] < 1e-2 and (best is None or v["ms"] < per[best]["ms"]):
                best = n
        rows[scaling] = {"weight_copies": len(bs), "torch_ms": t_ms, "torch_fast_ms": t_fast_ms, "torch_err": torch_err,
                         "ckgen_best": best, "ckgen_ms": per[best]["ms"] if best else None, "kernels": per}
        tk = tflops(M, N, K, per[best]["ms"]) if best else 0.0
        tt, tf = tflops(M, N, K, t_ms), tflops(M, N, K, t_fast_ms)
        terr = f"{torch_err:.1e}" if torch_err is not None else "n/a"
        print(f"{M}x{N}x{K} {scaling}: torch._scaled_mm {tt:.0f} / fast-accum {tf:.0f} (err {terr}), ckgen {tk:.0f} "
              f"({best}), ratio {tk / tt if tt else 0:.2f} / {tk / tf if tf else 0:.2f}  "
              + " ".join(f"{k.split('_', 2)[2]}={v['tflops']:.0f}(err {v['err']:.1e})" for k, v in per.items()),
              flush=True)
    return rows


def table(title, rows, props, members=False) -> None:
    """Print one table of bench_shape's rows (TFLOP/s and the ratios per scaling), with the candidate that counted
    (``members``), and the geomean / min ratio to torch per scaling (shapes torch refuses left out)."""
    print(f"\n{title}: fp8 GEMM e4m3 -> bf16 on {props.name} (TFLOP/s, CUDA-graph replays; torch = _scaled_mm as "
          "called by default / with use_fast_accum=True; ratio = ckgen / each)")
    print(f"{'M x N x K':>20} " + " ".join(f"{s + ': torch':>15} {'fast':>6} {'ckgen':>6} {'ratio':>11}"
                                           for s in SCALINGS))
    ratios = {s: [] for s in SCALINGS}
    for r in rows:
        shape = (r["M"], r["N"], r["K"])
        cols = []
        for s in SCALINGS:
            tt, tf = tflops(*shape, r[s]["torch_ms"]), tflops(*shape, r[s]["torch_fast_ms"])
            tk = tflops(*shape, r[s]["ckgen_ms"] or 0.0)
            ratio = f"{tk / tt if tt else 0:.2f}/{tk / tf if tf else 0:.2f}"
            cols.append(f"{tt:15.0f} {tf:6.0f} {tk:6.0f} {ratio:>11}")
            if tt and tk:
                ratios[s].append(tk / tt)
        picked = "  " + " ".join(str(r[s]["ckgen_best"]) for s in SCALINGS) if members else ""
        print(f"{'x'.join(map(str, shape)):>20} " + " ".join(cols) + picked)
    for s, xs in ratios.items():
        if xs:
            geo = math.exp(sum(math.log(x) for x in xs) / len(xs))
            print(f"  {s}: geomean {geo:.3f}x torch._scaled_mm (default accumulation), min {min(xs):.2f}x over "
                  f"{len(xs)} shapes")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="a regex over the kernel names of bench/fp8_nv.ck (e.g. _h for the Hopper ones)")
    ap.add_argument("--json")
    ap.add_argument("--dispatch", nargs="*", metavar="LIST",
                    help="through the dispatchers of bench/fp8_dispatch_nv.ck instead: the nn.Linear shapes "
                         f"and each LIST of shapes (default: {' '.join(DISPATCH_LISTS)})")
    ap.add_argument("--warm", action="store_true",
                    help="time B as one copy, resident in the L2 between calls where it fits (the figures before "
                         "2026-12-07c); default: B rotated over copies past the L2, as bench/dispatch.py times")
    ap.add_argument("--tuning", help="with --dispatch: the dispatchers' tuning database (ckgen tune of the fp8d_* "
                                     "families of bench/fp8_dispatch_nv.ck); default: untuned, the cost model alone")
    ap.add_argument("--members", action="store_true",
                    help="with --dispatch: time every member at every shape; the fastest counts (an oracle) and "
                         "the dispatcher's pick is printed against it")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    gen = torch.Generator(device="cuda").manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    out = {"device": props.name, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
           "weights": "warm (one copy)" if args.warm else "rotated past the L2"}
    linear = [(m, n, k) for (n, k) in LINEAR_NK for m in LINEAR_M]
    t0 = time.perf_counter()
    if args.dispatch is None:
        kernels = jit_file(SPEC_ARG, args.only)
        print(f"ckgen: {len(kernels)} kernels built/loaded in {time.perf_counter() - t0:.1f} s", flush=True)
        shapes = QUICK if args.quick else SQUARE + linear
        out["fp8"] = [{"M": M, "N": N, "K": K, **bench_shape(M, N, K, every_kernel(kernels), gen, args.warm)}
                      for (M, N, K) in shapes]
        table("fastest kernel of bench/fp8_nv.ck per shape", out["fp8"], props)
    else:
        from dispatch import read_shapes

        from ckgen.runtime.api import jit

        families = {s: jit(DISPATCH_SPEC_ARG, kernel=f"fp8d_{s}", target="sm_90", tuning=args.tuning)
                    for s in SCALINGS}
        how = f"tuned on {args.tuning}" if args.tuning else "untuned"
        print(f"ckgen: {len(families)} dispatchers ({how}) in {time.perf_counter() - t0:.1f} s", flush=True)
        out["tuning"] = args.tuning
        lists = [("nn.Linear 4096 / 14336 (the block-fold figure of the cost model read here; Mistral-7B's N x K, "
                  "the tuning set's)", linear)]
        lists += [(f"{path} (never tuned: the figure of record)", [s for s, _ in read_shapes(Path(path))])
                  for path in (args.dispatch or DISPATCH_LISTS)]
        out["dispatch"] = {}
        for title, shapes in lists:
            if args.quick:
                shapes = shapes[::3]
            pick = every_member(families) if args.members else dispatched(families)
            rows = [{"M": M, "N": N, "K": K, **bench_shape(M, N, K, pick, gen, args.warm)} for (M, N, K) in shapes]
            out["dispatch"][title] = rows
            what = "the fastest member (an oracle)" if args.members else "the dispatcher"
            table(f"through {what}, {title}", rows, props, members=True)
            if args.members:
                pick_vs_oracle(rows, families)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
