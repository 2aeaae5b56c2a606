"""``ckgen tune FILE --family F --target T (--shapes S | --shapes-file P) --db DB``.

1. Plan the family's members for the arch (members illegal there are pruned and reported).
2. Read the database; a (device, arch, kernel parameters, signature, shape) already recorded is not measured
   again, so an interrupted run resumes where it stopped.
3. Start one worker process per device (every visible GPU; ``--devices N`` on the emulator): shapes are handed
   out one at a time from a queue, each worker measures every member still missing at its shape
   (:mod:`ckgen.tune.measure`), in the order of the cost model's estimates, fastest first (a member far slower than
   the best so far stops after one sample: the vector body's decode tiles at M = 8192 took 13 s a shape when they
   were timed first), and sends the records back.
4. The parent prints one progress line per member, and after every shape rewrites the database (temporary file
   + ``os.replace``) with the new records added: at any moment the file is whole.

Returns a summary (:class:`Summary`): shapes done, records written, the fastest member per shape.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.dispatch import db
from ckgen.errors import CkgenError
from ckgen.frontend import load_file
from ckgen.ir.registry import get_op
from ckgen.lower.pipeline import Pruned, plan_all, pruned_notes
from ckgen.runtime.api import get_backend
from ckgen.runtime.family import family_plans
from ckgen.tune.measure import Job, Task, Worker


@dataclass
class Summary:
    shapes: int = 0
    skipped: int = 0
    records: int = 0
    best: dict = field(default_factory=dict)   # shape -> (kernel, time_us)
    pruned: list = field(default_factory=list)


def device_count(backend: str, requested: int | None) -> int:
    """Workers to start: ``requested`` (emu, or fewer GPUs), else every visible GPU."""
    if backend == "emu":
        return max(1, requested or 1)
    if backend == "cuda":
        import torch

        n = torch.cuda.device_count()
    else:
        from ckgen.backends.amd import driver as hip

        n = hip.device_count()
    if n < 1:
        raise CkgenError(f"target {backend}: no GPU is visible")
    return min(n, requested) if requested else n


def _worker(job: Job, device: int, tasks, results) -> None:
    """Worker process: measure shapes from ``tasks`` until a None arrives; send (kind, payload) to ``results``."""
    try:
        w = Worker(job, device)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        results.put(("fatal", f"device {device}: {type(exc).__name__}: {getattr(exc, 'message', exc)}"))
        return
    while True:
        task = tasks.get()
        if task is None:
            break
        recs = w.run(task, progress=lambda r: results.put(("progress", r)))
        results.put(("shape", (task.shape, recs)))
    results.put(("exit", device))


def run(source: str | Path, family: str, backend: str, arch: str | None, shapes: list[tuple[int, ...]],
        db_path: str | Path, reps: int, inner: int, warmup: int, seed: int, devices: int | None,
        out=sys.stdout, timing: str = "events") -> Summary:
    """The command (see the module docstring)."""

    specs = load_file(source)
    vendor = get_backend(backend).vendor
    plans = family_plans(specs, family, vendor, arch)
    arch = plans[0].arch
    members = [s for s in specs if s.family == family]
    pruned: list[Pruned] = []
    plan_all(members, (arch,), pruned)
    summary = Summary(pruned=pruned_notes(pruned, members))
    for note in summary.pruned:
        print(f"note: {note}", file=out)
    records = db.read(db_path)
    device_name = _device_name(backend, arch)
    done = db.done_keys(records)
    todo: list[Task] = []
    op = get_op(plans[0].op)
    traits = {p.name: tuple(float(x) for x in op.model_traits(p)) for p in plans}
    for shape in shapes:
        missing = []
        for p in plans:
            sig = db.signature_key(get_op(p.op).signature(p.spec))
            names = [a.name for a in p.abi.sizes]
            shape_key = db.shape_key(dict(zip(names, shape, strict=True)))
            if device_name is None or (device_name, arch, db.kernel_key(p.spec), sig, shape_key) not in done:
                missing.append(p.name)
        if missing:  # the cost model's fastest first: the slow members then stop after one sample (EARLY_STOP)
            todo.append(Task(shape, tuple(sorted(missing, key=lambda n: op.estimate(traits[n], shape)))))
        else:
            summary.skipped += 1
    total = len(shapes)
    print(f"ckgen tune: family {family} ({len(plans)} kernels) on {arch} ({backend}), {total} shapes, "
          f"{summary.skipped} already in {db_path}", file=out, flush=True)
    if not todo:
        return summary
    job = Job(str(source), family, backend, arch, reps, inner, warmup, seed, timing)
    n = min(device_count(backend, devices), len(todo))
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for t in todo:
        tasks.put(t)
    for _ in range(n):
        tasks.put(None)
    procs = [ctx.Process(target=_worker, args=(job, d, tasks, results), daemon=True) for d in range(n)]
    for p in procs:
        p.start()
    print(f"ckgen tune: {len(todo)} shapes to measure on {n} worker(s)", file=out, flush=True)
    finished = 0
    t0 = time.perf_counter()
    try:
        while finished < n:
            try:
                kind, payload = results.get(timeout=5.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    raise CkgenError("ckgen tune: every worker exited early") from None
                continue
            if kind == "fatal":
                raise CkgenError(f"ckgen tune: a worker failed to start: {payload}")
            if kind == "exit":
                finished += 1
            elif kind == "progress":
                print(_line(payload), file=out, flush=True)
            elif kind == "shape":
                shape, recs = payload
                records.extend(db.Record(r) for r in recs)
                db.write(db_path, records)
                summary.shapes += 1
                summary.records += len(recs)
                ok = [r for r in recs if r["status"] == "ok"]
                if ok:
                    b = min(ok, key=lambda r: r["time_us"])
                    summary.best[shape] = (b["kernel"], b["time_us"])
                print(f"[{summary.shapes}/{len(todo)}] {'x'.join(map(str, shape))}: best "
                      f"{summary.best.get(shape, ('none', 0))[0]} ({time.perf_counter() - t0:.1f} s)",
                      file=out, flush=True)
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
    return summary


def _device_name(backend: str, arch: str) -> str | None:
    """The device name workers record (None: only the workers know it; nothing counts as done)."""
    if backend == "emu":
        return f"emu ({arch})"
    if backend == "cuda":
        try:
            import torch

            return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        except Exception:  # noqa: BLE001
            return None
    return "hip device 0"


def _line(r: dict) -> str:
    shape = "x".join(str(v) for v in r["shape"].values())
    head = f"  {shape} {r['kernel']}"
    if r["status"] == "ok":
        tf = f", {r['tflops']:.1f} TFLOP/s" if r.get("tflops") else ""
        early = " (stopped early: slower than 3x the best)" if r.get("early_stop") else ""
        return f"{head}: {r['time_us']:.2f} us{tf}, rel. err {r['rel_err']:.2e}{early}"
    return f"{head}: {r['status']}: {(r.get('error') or '').splitlines()[0][:200]}"
