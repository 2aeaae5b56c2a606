"""Host time per call of ckgen's Python callables on a cached signature (the prepared call), beside a torch op of
the same size, and device time of both by CUDA-graph replay (which also proves the calls capture).

One kernel of every op, from the bench/*_nv.ck files, planned for sm_90: a GEMM (bench/gemm_nv.ck), the family
dispatcher ``lin`` (bench/dispatch_nv.ck, cost model, no tuning database), softmax, layer norm and RMS norm
(bench/rowops_nv.ck) and attention (bench/attention_nv.ck). Sizes are tiny so that the host path is what is timed.

Host time: ``time.perf_counter()`` around each Python call, in batches of ``--batch`` calls with a synchronize
between batches (outside the timed region, so the launch queue never fills); the median over ``--calls`` calls.
The sides of a case (ckgen, torch, the Python path) take turns batch by batch: the lent hosts' speed moves by up to
1.5x within one process (bench/debug/overhead_state.py: torch.mm 12.0 to 18.6 us at one size), and turns let such
moves reach every side alike.
Device time: ``--graph-calls`` calls captured into one CUDA graph, replayed ``--replays`` times between two events.
ckgen's calls go through the compiled prepared call (ckgen/backends/nvidia/fastcall.cpp); the ``python path`` column
times the same calls with it set aside (the Python prepared path), in the same run.
``--cpu N`` pins the benchmark's thread to CPU N once the kernels are built (``os.sched_setaffinity``; the CUDA
driver's and torch's own threads keep theirs), to see whether the host's two speeds follow the thread moving
between cores; the table says which.
The acceptance of issue 22: the ckgen median at most 5 us and at most 2x the torch op's.

    python3 bench/overhead.py [--json out.json] [--calls 20000] [--cpu N]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

GEMM = ("gemm_nv.ck", "bf16_rc_t128_128_32_w22_s4")
FAMILY = ("dispatch_nv.ck", "lin")
ROWOPS = ("rowops_nv.ck", {"softmax": "softmax_c1024_t32x4r8", "layernorm": "layernorm_c1024_t32x4r8",
                           "rmsnorm": "rmsnorm_c1024_t32x4r8"})
ATTENTION = ("attention_nv.ck", "bf16_d128_none_wg128x128s2")
HOST_LIMIT_US = 5.0
RATIO_LIMIT = 2.0


def host_us_turns(fns: dict, calls: int, batch: int) -> dict:
    """Median host time of one call of each of ``fns`` (name -> fn) in microseconds: batches of ``batch`` calls,
    separated by a synchronize, the sides taking turns until each has made ``calls`` calls."""
    for fn in fns.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    times: dict = {name: [] for name in fns}
    clock = time.perf_counter
    while min(len(t) for t in times.values()) < calls:
        for name, fn in fns.items():
            ts = times[name]
            for _ in range(batch):
                t0 = clock()
                fn()
                ts.append(clock() - t0)
            torch.cuda.synchronize()
    return {name: statistics.median(ts) * 1e6 for name, ts in times.items()}


def host_us(fn, calls: int, batch: int) -> float:
    """Median host time of one call of ``fn`` in microseconds (host_us_turns of one side)."""
    return host_us_turns({"fn": fn}, calls, batch)["fn"]


def graph_us(fn, graph_calls: int, replays: int) -> float:
    """Device time per call from a CUDA graph of ``graph_calls`` calls of ``fn`` (warmed up on a side stream)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(graph_calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (replays * graph_calls)


def python_path(obj):
    """A copy of the ckgen callable ``obj`` (Kernel / DispatchKernel) of its plain Python class, its compiled
    launcher set aside: its calls take the Python prepared path."""
    base = next(c for c in type(obj).__mro__ if "_full_call" in c.__dict__)
    plain = object.__new__(base)
    plain.__dict__.update(obj.__dict__)
    plain._native = None
    return plain


def cases():
    """(name, ckgen callable, its positional and keyword arguments, torch call) per op, on tiny bf16 operands; each
    side is timed as a functools.partial (no Python frame of the benchmark's around either call)."""
    P = functools.partial
    from ckgen.runtime.api import jit

    dt = torch.bfloat16
    dev = "cuda"
    out = []
    m = n = k = 128
    a = torch.randn(m, k, device=dev, dtype=dt)
    w = torch.randn(n, k, device=dev, dtype=dt)  # nn.Linear weight: B = w.t() is column-major
    wt_ = w.t()
    g = jit(str(HERE / GEMM[0]), kernel=GEMM[1], target="sm_90")
    out.append((f"gemm {GEMM[1]} {m}x{n}x{k}", g, (a, wt_), {}, P(torch.mm, a, wt_)))
    d = jit(str(HERE / FAMILY[0]), kernel=FAMILY[1], target="sm_90")
    out.append((f"family {FAMILY[1]} {m}x{n}x{k}", d, (a, wt_), {}, P(torch.mm, a, wt_)))
    rows, cols = 8, 1024
    x = torch.randn(rows, cols, device=dev, dtype=dt)
    wt = torch.rand(cols, device=dev, dtype=dt) + 0.5
    bs = torch.randn(cols, device=dev, dtype=dt)
    ops = {n: jit(str(HERE / ROWOPS[0]), kernel=kname, target="sm_90") for n, kname in ROWOPS[1].items()}
    sm, ln, rms = ops["softmax"], ops["layernorm"], ops["rmsnorm"]
    out.append((f"softmax {rows}x{cols}", sm, (x,), {}, P(torch.softmax, x, -1)))
    out.append((f"layernorm {rows}x{cols}", ln, (x,), {"weight": wt, "bias": bs},
                P(F.layer_norm, x, (cols,), wt, bs)))
    out.append((f"rmsnorm {rows}x{cols}", rms, (x,), {"weight": wt}, P(F.rms_norm, x, (cols,), wt)))
    b, s, h, hd = 1, 128, 8, 128
    q, kk, v = (torch.randn(b, s, h, hd, device=dev, dtype=dt) for _ in range(3))
    at = jit(str(HERE / ATTENTION[0]), kernel=ATTENTION[1], target="sm_90")
    scale = 1.0 / math.sqrt(hd)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, kk, v))
    out.append((f"attention b{b} s{s} h{h} d{hd}", at, (q, kk, v), {"scale": scale},
                P(F.scaled_dot_product_attention, qt, kt, vt, scale=scale)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--graph-calls", type=int, default=50)
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--cpu", type=int, help="pin the benchmark's thread to this CPU (after building)")
    args = ap.parse_args()
    os.chdir(HERE.parent)
    props = torch.cuda.get_device_properties(0)
    pinned = "not pinned" if args.cpu is None else f"thread pinned to CPU {args.cpu}"
    print(f"device: {props.name}, torch {torch.__version__}, Python {sys.version.split()[0]}, {pinned}")
    todo = cases()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    rows = []
    for name, obj, a, kw, ref in todo:
        plain = python_path(obj)
        ck = functools.partial(obj, *a, **kw)
        host = host_us_turns({"ckgen": ck, "torch": ref, "python": functools.partial(plain, *a, **kw)}, args.calls,
                             args.batch)
        row = {"case": name, "ckgen_host_us": host["ckgen"], "torch_host_us": host["torch"],
               "python_path_us": host["python"]}
        try:
            row["ckgen_graph_us"] = graph_us(ck, args.graph_calls, args.replays)
            row["graph_capture"] = "ok"
        except Exception as exc:  # report, keep measuring the others
            row["ckgen_graph_us"], row["graph_capture"] = None, f"failed: {type(exc).__name__}: {exc}"
        row["torch_graph_us"] = graph_us(ref, args.graph_calls, args.replays)
        row["ratio"] = row["ckgen_host_us"] / row["torch_host_us"]
        row["ok"] = row["ckgen_host_us"] <= HOST_LIMIT_US and row["ratio"] <= RATIO_LIMIT \
            and row["graph_capture"] == "ok"
        rows.append(row)
    head = f"{'case':42} {'ckgen host us':>13} {'torch host us':>13} {'ratio':>6} {'python path us':>14} " \
           f"{'ckgen graph us':>14} {'torch graph us':>14}  verdict"
    print(head)
    print("-" * len(head))
    for r in rows:
        g = f"{r['ckgen_graph_us']:14.2f}" if r["ckgen_graph_us"] is not None else f"{'-':>14}"
        print(f"{r['case']:42} {r['ckgen_host_us']:13.2f} {r['torch_host_us']:13.2f} {r['ratio']:6.2f} "
              f"{r['python_path_us']:14.2f} {g} "
              f"{r['torch_graph_us']:14.2f}  {'ok' if r['ok'] else 'OVER'}"
              + ("" if r["graph_capture"] == "ok" else f"  (graph {r['graph_capture']})"))
    print(f"acceptance: ckgen host median <= {HOST_LIMIT_US} us and <= {RATIO_LIMIT}x torch, graph capture ok: "
          f"{sum(r['ok'] for r in rows)}/{len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": props.name, "torch": torch.__version__, "cpu": args.cpu,
                                               "rows": rows}, indent=1))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
