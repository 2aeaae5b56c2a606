"""Shared helpers of the device scripts: operands with layouts and padding, float64 reference, timing.

``make_operands`` builds A (M x K), B (K x N), C (M x N) with the requested layouts and a leading
dimension padded by ``pad`` elements (pad 1 makes rows misaligned for 16-byte vectors). ``reference``
computes the epilogue chain in float64. ``rel_err`` is ||out - ref|| / ||ref||.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import torch

TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i8": torch.int8,
         "i32": torch.int32}
TOL = {"bf16": 1.6e-2, "f16": 4e-3, "f32": 5e-3, "i32": 0.0, "i8": 0.0}
POISON_INT = {"i32": -1234567, "i8": -77}


def matrix(rows: int, cols: int, row_major: bool, dtype: str, pad: int, gen: torch.Generator,
           fill: float | None = None):
    """A rows x cols view with storage of exact size; returns (view, ld, storage)."""
    shape = (rows, cols + pad) if row_major else (cols, rows + pad)
    dt = TORCH[dtype]
    if fill is not None:
        store = torch.full(shape, fill, dtype=dt, device="cuda")
    elif dt in (torch.int8, torch.int32):
        store = torch.randint(-8, 8, shape, generator=gen, device="cuda", dtype=torch.int32).to(dt)
    else:
        store = (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * 0.5).to(dt)
    if row_major:
        return store[:, :cols], cols + pad, store
    return store[:, :rows].t(), rows + pad, store


def gelu64(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def reference(a, b, c0, bias, epi, beta, out_dtype):
    ref = a.double() @ b.double()
    if beta:
        ref = ref + beta * c0.double()
    for op in epi:
        if op == "bias_col":
            ref = ref + bias.double()[None, :]
        elif op == "bias_row":
            ref = ref + bias.double()[:, None]
        elif op == "gelu":
            ref = gelu64(ref)
        elif op == "relu":
            ref = torch.clamp(ref, min=0.0)
        elif op == "silu":
            ref = ref * torch.sigmoid(ref)
    if out_dtype == "i8":
        ref = torch.clamp(torch.round(ref), -128, 127)
    return ref


def rel_err(out, ref) -> float:
    num = torch.linalg.norm((out.double() - ref).flatten()).item()
    den = torch.linalg.norm(ref.flatten()).item()
    if den == 0.0:
        return num
    return num / den


def _median_ms(run, reps: int, per: int) -> float:
    """Median over ``reps`` samples of run()'s time between two CUDA events, divided by ``per``."""
    times = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / per)
    times.sort()
    return times[len(times) // 2]


def time_ms(fn, warmup: int = 5, reps: int = 20, inner: int = 10) -> float:
    """Median over ``reps`` samples of the time per call; each sample times ``inner`` back-to-back calls
    between two CUDA events (host-side call overhead overlaps the GPU work, as in real use)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()

    def calls():
        for _ in range(inner):
            fn()
    return _median_ms(calls, reps, inner)


def capture_graph(fn, warmup: int, inner: int):
    """A CUDA graph of ``inner`` back-to-back calls of fn (after ``warmup`` eager calls), replayed once."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    g.replay()
    return g


#: bytes of weight copies a benchmark rotates over so that every call reads its weights from DRAM, as a model's layer
#: does (past the L2: 50 MB on the H100 / H200)
L2_ROTATE_BYTES = 192e6


def rotation_copies(nbytes: int) -> int:
    """How many copies of a weight of ``nbytes`` to rotate over: enough to pass L2_ROTATE_BYTES together, at most
    8."""
    return max(1, min(8, math.ceil(L2_ROTATE_BYTES / nbytes)))


def time_graph_ms(fn, warmup: int = 3, reps: int = 20, inner: int = 10) -> float:
    """Median over ``reps`` replays of a CUDA graph of ``inner`` back-to-back calls of fn, per call: device time
    without the host's launch path (METHOD.md: for short kernels, time graph replays). fn must launch on torch's
    current stream (the capture stream while capturing) and must have run once outside capture (first-call setup)."""
    g = capture_graph(fn, warmup, inner)
    torch.cuda.synchronize()
    return _median_ms(g.replay, reps, inner)


def round_order(names: list, r: int) -> list:
    """The sides' order in interleaved round r: each round starts one side later than the one before, so that no
    side always runs first (after the host's pause) or always after the same neighbour (a card warmed by it)."""
    return names[r % len(names):] + names[:r % len(names)]


def time_graphs_interleaved_ms(fns: dict, warmup: int = 3, rounds: int = 9, inner: int = 3,
                               replays: int = 1, samples: dict | None = None, blocked: bool = False) -> dict:
    """time_graph_ms for every side of ``fns`` (name -> fn), one graph each, timed in ``rounds`` interleaved rounds
    (``replays`` back-to-back replays of each side per round, in turn, between two events), so that a drift of the
    clocks over the run reaches every side alike: per side the median over the rounds, per call. The sides take
    turns in :func:`round_order`. ``replays`` > 1 times the steady state of a loop that keeps the card
    busy; with one replay per sample the card idles while the host waits for each sample. ``samples``: a dict to
    receive every side's per-round times (in round order, so that the sides' r-th samples come from one round).
    ``blocked``: every round of one side, then every round of the next (no side runs between two samples of
    another: what the interleaving itself costs a side shows against the interleaved figure)."""
    graphs = {name: capture_graph(fn, warmup, inner) for name, fn in fns.items()}
    torch.cuda.synchronize()
    times: dict = {name: [] for name in fns}
    names = list(graphs)
    order = ([n for n in names for _ in range(rounds)] if blocked else
             [n for r in range(rounds) for n in round_order(names, r)])
    for name in order:
        times[name].append(_median_ms(lambda g=graphs[name]: [g.replay() for _ in range(replays)], 1,
                                      inner * replays))
    if samples is not None:
        samples.update(times)
    return {name: median(ts) for name, ts in times.items()}


def kernels_run(fn, prefix: str = "") -> list[str]:
    """Runs fn() once under torch's profiler: the names of the CUDA kernels it launched that start with ``prefix``
    (which entries of a ckgen kernel ran), sorted."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA and e.name.startswith(prefix)})


def raw_call(kern, *args, **named):
    """A zero-overhead closure over a ckgen kernel's C entry point: the call is bound (every check) and run once
    through the JIT, then replayed with the same argument values on the current stream; the closure keeps the call
    (and any workspace it allocated) alive. What the benchmarks time beside the Python callable."""
    call = kern.bind(*args, **named)
    kern.backend.launch(kern.handle, call)  # the full path once
    entry = kern.handle.entry
    vals = [v.data_ptr() if isinstance(v, torch.Tensor) else v for v in call.values]

    def run(call=call):
        st = entry(*vals, torch.cuda.current_stream().cuda_stream or None)
        if st != 0:
            raise RuntimeError(f"{kern.name}: status {st}")
    return run


def jit_file(spec: str, only: str | None = None) -> dict:
    """Every kernel of the .ck file ``spec`` (the path the benchmark passes, relative to the repository root: it is
    part of the generated sources, so a prebuilt cache matches), JIT-built for sm_90 (cached), by name; ``only``: a
    regex the names must match."""
    from ckgen import driver
    from ckgen.runtime.api import jit

    names = [p.name for p in driver.plan(driver.load([spec], ("sm_90",)), ("sm_90",))[Path(spec).stem]]
    return {n: jit(spec, kernel=n, target="sm_90") for n in names if not only or re.search(only, n)}


def median(xs):
    """The median of ``xs`` (the upper one of an even count)."""
    xs = sorted(xs)
    return xs[len(xs) // 2]
