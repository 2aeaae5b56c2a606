"""One tuning worker: on one device, for each shape it is given, every member of the family is built (cached),
run once on random inputs with its outputs poisoned, checked against the op's float64 reference (relative norm
error within the op's tolerance), and only then timed: ``warmup`` calls, then ``reps`` samples of ``inner``
back-to-back calls through the kernel's C entry (GPU: between CUDA events; emu: wall clock), the median per call.
A member whose first sample is over :data:`EARLY_STOP` times the shape's best so far is recorded from that
sample alone (it cannot win). Results are database records (:mod:`ckgen.dispatch.db`).

On CUDA the timed calls cycle through copies of the read-only inputs (:func:`rotation_copies`: together past
:data:`ROTATE_BYTES`, several times the H200's 50 MB L2), so that each call reads its inputs from device memory as
a model's layers read their weights, and as ``bench/dispatch.py`` times: with the inputs left in the L2, kernels
that re-read an operand win the tuning of small shapes and lose in use (a 32 MB weight at M = 1 fits the L2).
A sample is ``inner`` calls (on CUDA rounded up to whole turns through the copies): back-to-back launches between
two events (``timing="events"``, the default), or with ``timing="graph"`` one replay of a CUDA graph of them, as the
benchmarks time, so that no host time between launches reaches the figure (back-to-back launches ranked some
members apart from the graph-timed benchmark: 128x192 at 512 x 28672 x 4096 fastest in the tuning, 0.85x cuBLAS in
the benchmark). The graph mode's first GPU run faulted on input copies freed before the capture (fixed: a launcher
holds its call, :func:`fast_launcher`); it has not run on a GPU since, hence not the default. Records say how they were timed
(``timing``).

Inputs: numpy arrays on the emulator and HIP (the op's ``random_inputs``), device tensors made with torch on CUDA
(uniform in [-1, 1), laid out as the ABI says), so that large shapes need no host copies; the reference is the
op's ``reference_torch`` on the device when it has one, else its numpy ``reference`` on host copies.
"""

from __future__ import annotations

import math
import statistics
import time
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np

from ckgen.codegen.render import summary
from ckgen.dispatch import db
from ckgen.frontend import load_file
from ckgen.ir.abi import ArgKind, dim_parts, dim_value
from ckgen.ir.arrays import memory_order, poison, to_float64, torch_dtype_name
from ckgen.ir.op import relative_error
from ckgen.ir.registry import get_op
from ckgen.ir.types import DType
from ckgen.runtime.api import Kernel, get_backend
from ckgen.runtime.family import family_plans
from ckgen.version import __version__

EARLY_STOP = 3.0
#: bytes of read-only inputs the timed calls cycle through on CUDA, in at most :data:`MAX_COPIES` copies
ROTATE_BYTES = 192e6
MAX_COPIES = 8


def rotation_copies(input_bytes: int) -> int:
    """How many sets of the read-only inputs the timed calls cycle through (1: the inputs alone pass
    :data:`ROTATE_BYTES`)."""
    return max(1, min(MAX_COPIES, math.ceil(ROTATE_BYTES / max(1, input_bytes))))


@dataclass(frozen=True)
class Job:
    """What every worker of one ``ckgen tune`` run needs (picklable)."""

    source: str           # a .ck path
    family: str
    backend: str          # emu | hip | cuda
    arch: str
    reps: int
    inner: int
    warmup: int
    seed: int
    timing: str = "events"  # CUDA: "events" (back-to-back launches between two events) or "graph" (module docstring)


@dataclass(frozen=True)
class Task:
    shape: tuple[int, ...]
    members: tuple[str, ...]


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


class Worker:
    """The state of one worker process: its device, backend, plans and built kernels."""

    def __init__(self, job: Job, device: int):

        self.job = job
        self.device = device
        self.backend = get_backend(job.backend)
        if job.backend == "cuda":
            import torch

            torch.cuda.set_device(device)
            self.device_name = torch.cuda.get_device_name(device)
        else:
            self.device_name = f"{job.backend} ({job.arch})" if job.backend == "emu" else f"hip device {device}"
        self.plans = {p.name: p for p in family_plans(load_file(job.source), job.family, self.backend.vendor, job.arch)}
        self.kernels: dict[str, Any] = {}

    # ------------------------------------------------------------------ inputs and checks
    def _inputs(self, plan, sizes: dict[str, int], seed: int) -> dict[str, Any]:
        op = get_op(plan.op)
        if self.job.backend != "cuda":
            return op.random_inputs(plan, sizes, np.random.default_rng(seed))
        return torch_inputs(plan, sizes, seed)

    def _reference(self, plan, arrays: dict[str, Any], sizes: dict[str, int]) -> dict[str, Any]:
        op = get_op(plan.op)
        if self.job.backend == "cuda":
            on_device = op.reference_torch(plan, arrays, sizes)
            if on_device is not None:
                return on_device
        host = {k: (to_host(v) if v is not None else None) for k, v in arrays.items()}
        return op.reference(plan, host, sizes)

    def _error(self, plan, a, out: Any, ref: Any) -> float:

        if self.job.backend == "cuda" and not isinstance(out, np.ndarray):
            import torch

            o = out.double()
            if not bool(torch.isfinite(o).all()):
                return math.inf
            den = float(torch.linalg.norm(ref.flatten()))
            num = float(torch.linalg.norm((o - ref).flatten()))
            return num / den if den > 0 else num
        return relative_error(to_float64(to_host(out), a.dtype), np.asarray(ref))

    # ------------------------------------------------------------------ one shape
    def run(self, task: Task, progress=None) -> list[dict]:
        """Records of every member of ``task`` at its shape (the float64 reference computed once)."""
        first = self.plans[task.members[0]]
        names = [a.name for a in first.abi.sizes]
        sizes = dict(zip(names, task.shape, strict=True))
        seed = self.job.seed + sum(task.shape)
        arrays = self._inputs(first, sizes, seed)
        before = {k: clone(v) for k, v in arrays.items()}
        refs = None
        best: float | None = None
        out: list[dict] = []
        for name in task.members:
            plan = self.plans[name]
            rec = self._record(plan, sizes)
            try:
                if refs is None:
                    refs = self._reference(plan, before, sizes)
                self._measure(plan, sizes, arrays, before, refs, rec, best)
            except Exception as exc:  # noqa: BLE001 - a member that cannot build or run is recorded, not fatal
                rec.update(status="failed", error=f"{type(exc).__name__}: {exc}"[:2000])
                if not isinstance(exc, RuntimeError) and not hasattr(exc, "render"):
                    rec["error"] += "\n" + traceback.format_exc(limit=3)[-1500:]
            if rec["status"] == "ok" and (best is None or rec["time_us"] < best):
                best = rec["time_us"]
            out.append(rec)
            if progress is not None:
                progress(rec)
        return out

    def _record(self, plan, sizes: dict[str, int]) -> dict:

        op = get_op(plan.op)
        sig = op.signature(plan.spec)
        return {"ckgen": __version__, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "device": self.device_name,
                "device_index": self.device, "arch": plan.arch, "target": self.job.backend, "op": plan.op,
                "family": plan.spec.family, "kernel": plan.name, "summary": summary(plan), "signature": sig,
                "signature_key": db.signature_key(sig), "kernel_key": db.kernel_key(plan.spec), "shape": dict(sizes),
                "status": "failed", "time_us": None, "tflops": None, "rel_err": None,
                "timing": ("cuda-graph" if self.job.timing == "graph" else "cuda events") if self.job.backend == "cuda"
                          else "wall clock",
                "tolerance": None, "reps": 0, "inner": self.job.inner, "early_stop": False, "error": None}

    def _measure(self, plan, sizes, arrays, before, refs, rec: dict, best: float | None) -> None:

        if plan.name not in self.kernels:
            self.kernels[plan.name] = Kernel(plan, self.backend)
        k = self.kernels[plan.name]
        op = get_op(plan.op)
        for a in plan.abi.tensors:  # outputs poisoned again (the previous member wrote them)
            if a.role == "out" and arrays.get(a.name) is not None:
                poison_any(arrays[a.name])
            elif a.role == "inout" and arrays.get(a.name) is not None:
                copy_into(arrays[a.name], before[a.name])
        ws = None
        if plan.abi.workspace is not None:
            nbytes = max(1, k.workspace_bytes(**sizes))
            ws = self.backend.new_workspace(nbytes, next((v for v in arrays.values() if v is not None), None))
        call = k.bind(**{n: v for n, v in arrays.items() if n in {a.name for a in plan.abi.tensors}}, workspace=ws,
                      **{n: v for n, v in sizes.items() if n not in _determined(plan)})
        launch = fast_launcher(k, call)
        launch()
        sync(self.job.backend)
        errs, tol = [], 0.0
        for a in plan.abi.tensors:
            if not a.writes or a.unused:
                continue
            errs.append(self._error(plan, a, arrays[a.name], refs[a.name]))
            tol = max(tol, op.tolerance(plan, a.name))
        err = max(errs) if errs else 0.0
        rec.update(rel_err=_finite(err), tolerance=tol)
        if not err <= tol:
            rec.update(status="numerics", error=f"relative error {err:.3e} over the tolerance {tol:.1e}")
            return
        inner = self.job.inner
        if self.job.backend == "cuda":
            launch, turn = self._rotating(k, plan, arrays, sizes, ws, launch)
            inner = -(-max(1, inner) // turn) * turn  # whole turns through the copies
        seconds, reps, early = self._time(launch, best, inner)
        flops = op.flops(plan, sizes)
        rec.update(status="ok", time_us=seconds * 1e6, reps=reps, early_stop=early,
                   tflops=_finite(flops / seconds / 1e12) if flops and seconds > 0 else None, inner=inner)

    def _rotating(self, k, plan, arrays, sizes, ws, launch):
        """``launch`` and the same call on copies of the read-only inputs, in turn (module docstring), and how many
        calls one turn through them takes."""
        ins = [a.name for a in plan.abi.tensors if a.role == "in" and arrays.get(a.name) is not None]
        copies = rotation_copies(sum(arrays[n].numel() * arrays[n].element_size() for n in ins))
        launches = [launch]
        names = {a.name for a in plan.abi.tensors}
        for _ in range(copies - 1):
            alt = {**arrays, **{n: clone(arrays[n]) for n in ins}}
            call = k.bind(**{n: v for n, v in alt.items() if n in names}, workspace=ws,
                          **{n: v for n, v in sizes.items() if n not in _determined(plan)})
            launches.append(fast_launcher(k, call))
        if len(launches) == 1:
            return launch, 1
        turn = [0]

        def run() -> None:
            launches[turn[0]]()
            turn[0] = (turn[0] + 1) % len(launches)
        return run, len(launches)

    def _time(self, launch, best_us: float | None, inner: int) -> tuple[float, int, bool]:
        j = self.job
        for _ in range(j.warmup):
            launch()
        sync(j.backend)
        run = graph_of(launch, inner) if j.backend == "cuda" and j.timing == "graph" else None
        samples: list[float] = []
        for r in range(max(1, j.reps)):
            samples.append(sample(j.backend, launch, inner, run))
            if r == 0 and best_us is not None and samples[0] * 1e6 > EARLY_STOP * best_us:
                return samples[0], 1, True
        return statistics.median(samples), len(samples), False


def _determined(plan) -> set[str]:
    """Sizes that some tensor's shape determines (the others are passed by name)."""
    return {dim_parts(d)[0] for a in plan.abi.tensors if not a.unused for d in a.dims if isinstance(d, str)}


# ---------------------------------------------------------------------------------------------- backends
def sync(backend: str) -> None:
    if backend == "cuda":
        import torch

        torch.cuda.synchronize()


def graph_of(launch, inner: int):
    """A CUDA graph of ``inner`` calls of ``launch`` (which launches on torch's current stream: the capture stream
    while capturing), run once on that stream before the capture and once after it."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        launch()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            launch()
    g.replay()
    torch.cuda.synchronize()
    return g


def sample(backend: str, launch, inner: int, graph=None) -> float:
    """Seconds per call of ``inner`` calls of ``launch``: on CUDA between two events, as one replay of ``graph``
    (:func:`graph_of`) when given, else back to back; elsewhere by the wall clock."""
    if backend == "cuda":
        import torch

        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        if graph is not None:
            graph.replay()
        else:
            for _ in range(inner):
                launch()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3 / inner
    t0 = time.perf_counter()
    for _ in range(inner):
        launch()
    return (time.perf_counter() - t0) / inner


def fast_launcher(kernel, call):
    """A no-argument function that runs ``call`` again (CUDA: straight into the C entry with the same pointers; the
    launcher holds ``call``, so the tensors those pointers address live as long as it does: a graph capture empties
    torch's cache of freed blocks, and launches on inputs freed before it read unmapped memory)."""
    if kernel.backend.name == "cuda":
        import torch

        entry = kernel.handle.entry
        args = [kernel.backend.array_info(v, a.name).ptr if v is not None and (a.is_tensor or a.kind == ArgKind.WORKSPACE)
                else (None if a.is_tensor or a.kind == ArgKind.WORKSPACE else v)
                for a, v in zip(call.plan.abi.args, call.values, strict=True)]

        def launch() -> None:
            st = entry(*args, torch.cuda.current_stream().cuda_stream or None)
            if st != 0:
                raise RuntimeError(f"{kernel.name}: status {st}: {kernel.handle.status_text(st)}")
        launch.call = call
        return launch
    return lambda: kernel.backend.launch(kernel.handle, call)


def torch_inputs(plan, sizes: dict[str, int], seed: int, device: str = "cuda") -> dict[str, Any]:
    """Device tensors for every ABI tensor at ``sizes``: uniform in [-1, 1) (small nonzero integers for integer
    dtypes, E8M0 exponents 120..134 for mx scales) for what the kernel reads, 0xFF bytes for what it only writes; laid
    out as the ABI's strides say."""
    import torch


    gen = torch.Generator(device=device).manual_seed(seed)
    out: dict[str, Any] = {}
    for a in plan.abi.tensors:
        if a.unused:
            out[a.name] = None
            continue
        shape = [dim_value(d, sizes) for d in a.dims]
        order = memory_order(a)
        dt = getattr(torch, torch_dtype_name(a.dtype))
        mem = [shape[i] for i in order]
        if a.role == "out":
            t = torch.empty(mem, dtype=dt, device=device)
            t.view(torch.uint8).fill_(0xFF)
        elif a.dtype == DType.E8M0:  # mx scales: exponents 120..134 (2^-7 .. 2^7), as random_values
            t = torch.randint(120, 135, mem, generator=gen, device=device, dtype=torch.int32).to(dt)
        elif a.dtype == DType.E2M1FN_X2:  # fp4 pairs: any two codes per byte, as random_values
            t = torch.randint(0, 256, mem, generator=gen, device=device, dtype=torch.int32).to(dt)
        elif a.dtype.is_float:
            t = (torch.rand(mem, generator=gen, device=device, dtype=torch.float32) * 2 - 1).to(dt)
        else:
            t = torch.randint(1, 8, mem, generator=gen, device=device, dtype=torch.int32).to(dt)
        out[a.name] = t.permute([order.index(i) for i in range(len(order))])
    return out


def to_host(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    import torch

    if x.dtype == torch.bfloat16:  # ckgen passes bf16 as uint16 bit patterns
        return x.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    if x.element_size() == 1 and x.is_floating_point():  # fp8: the uint8 codes
        return x.contiguous().view(torch.uint8).cpu().numpy()
    return x.cpu().numpy()


def clone(x: Any) -> Any:
    if x is None:
        return None
    return x.copy() if isinstance(x, np.ndarray) else x.clone()


def poison_any(x: Any) -> None:
    if isinstance(x, np.ndarray):

        poison(x)
    else:
        x.fill_(float("nan") if x.is_floating_point() else -1)


def copy_into(dst: Any, src: Any) -> None:
    if isinstance(dst, np.ndarray):
        dst[...] = src
    else:
        dst.copy_(src)
