"""A randomized numerics fuzz of accepted kernel configurations on the emulator: every kernel the planner accepts
must, at any sizes its ABI takes, match the op's float64 reference within the op's tolerance, with no emulator
fault.

Usage::

    PYTHONPATH=. python3 tools/fuzz_numerics.py [--seed N] [--budget SECONDS] [--ops gemm,softmax,...]
                                               [--batch N] [--calls N] [--timeout SECONDS] [--strides] [-v]

``--seed`` makes the run deterministic (the same specs, sizes and inputs in the same order; default 0);
``--budget`` stops starting new batches after that many seconds (default 120); ``--ops`` restricts the ops
sampled (``OPS``: gemm, softmax, layernorm, rmsnorm, attention, attention_decode, elementwise, moe_routing);
``--batch`` accepted kernels are built into one emulator library per arch (default 6); ``--calls`` size draws run
per kernel (default 3); ``--timeout`` bounds one call (default 120 s); ``--save FILE`` writes the failures and counts as JSON;
``--strides`` passes every array as a padded, offset view of a larger buffer with poisoned padding
(``tools/numfuzz_strides.py``: leading dimensions over their minimum, misaligned rows and starts) instead of a
contiguous array.

What it samples (``tools/numfuzz_specs.py``): a spec text from random parameter choices of the op (docs/dsl.md),
on a random AMD arch (gfx90a, gfx942, gfx950), kept when planning accepts it (a CkgenError there is a refusal, not
a failure). Each accepted kernel then runs on awkward sizes (0 where the ABI allows it, 1, primes, one over or
under a multiple of the kernel's tile) through :func:`ckgen.runtime.run.check_call`, the check ``ckgen run
--target emu`` makes (random inputs, outputs poisoned, float64 reference), each call in a forked child so that a
crash or a hang is caught.

What counts as a failure (reported with the spec, arch and sizes; the exit status is then 1):

- ``mismatch``: an output's relative error over the op's tolerance (or unwritten / non-finite);
- ``fault``: the emulator's status is not 0 (an out-of-bounds access) or the child died;
- ``exception``: anything raised but a CkgenError (a CkgenError at the call is a size the ABI refuses);
- ``plan-crash``: planning raised anything but a CkgenError; ``build``: an accepted kernel failed to build;
- ``hang``: a call over ``--timeout``;
- ``padding`` (``--strides``): a call wrote an output's padding or changed an input buffer.

A mismatch, fault or padding failure in ``--strides`` mode also reports each array's shape, element strides and
offset in its buffer. The refusals (CkgenErrors at the call) are counted per op by their message, digits elided,
in the stats (``refusals``), so that a refusal of a legal stride is visible.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import re
import signal
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402
from numfuzz_specs import GENERATORS, draw_sizes  # noqa: E402
from numfuzz_strides import check_call_strided  # noqa: E402

from ckgen.errors import CkgenError, EmulationFault, RuntimeFailure  # noqa: E402
from ckgen.runtime import api, run  # noqa: E402

OPS = tuple(GENERATORS)
ARCHES = ("gfx90a", "gfx942", "gfx950")


def accepted_plan(rng: random.Random, op: str, index: int):
    """(arch, spec text, plan) of one accepted random spec of ``op`` (up to 200 tries), or the failure of a planner
    crash as (arch, text, exception)."""
    for _ in range(200):
        arch = rng.choice(ARCHES)
        body = GENERATORS[op](rng, arch)
        name = f"fz{index}_{op}"
        text = f"kernel {name} {{ {body} }}\n"
        try:
            return arch, text, api.plan_for(text, name, "amd", arch)
        except CkgenError:
            continue
        except Exception as exc:  # noqa: BLE001 - a planner crash is a finding
            return arch, text, exc
    return None


def call_in_child(kern, sizes: dict, seed: int, timeout: float, strides: bool = False) -> tuple[str, str]:
    """Run one checked call of ``kern`` in a forked child: (kind, detail) with kind ``ok``, ``refused`` (a CkgenError
    at the call), ``mismatch``, ``fault``, ``exception``, ``hang`` or (``strides``: padded views) ``padding``."""
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one call, its outcome pickled to the pipe, then _exit (no cleanup of the parent's)
        os.close(rd)
        layout: dict = {}
        try:
            values = run.resolve_sizes(kern.plan, sizes)
            problems: list = []
            if strides:
                results, problems, layout = check_call_strided(kern, values, np.random.default_rng(seed))
            else:
                results, _ = run.check_call(kern, values, np.random.default_rng(seed))
            bad = [f"{n}: error {e:.3e} > {t:.1e}" for n, e, t in results if not e <= t]
            out = ("mismatch", "; ".join(bad)) if bad else ("padding", "; ".join(problems)) if problems else ("ok", "")
        except CkgenError as exc:  # a fault, or a status other than "invalid value" (a size the ABI refuses)
            msg = str(exc)
            fault = isinstance(exc, EmulationFault) or (isinstance(exc, RuntimeFailure)
                                                        and "status" in msg and not msg.endswith("status 1"))
            out = ("fault" if fault else "refused", msg[:600])
        except BaseException as exc:  # noqa: BLE001
            out = ("exception", f"{type(exc).__name__}: {exc}"[:300] + "\n" + traceback.format_exc()[-1500:])
        if layout and out[0] not in ("ok", "refused"):
            out = (out[0], out[1] + "\n  arrays: " + "; ".join(f"{k} {v}" for k, v in layout.items()))
        os.write(wr, pickle.dumps(out))
        os._exit(0)
    os.close(wr)
    deadline = time.monotonic() + timeout
    chunks = []
    os.set_blocking(rd, False)
    while True:
        try:
            data = os.read(rd, 65536)
            if data:
                chunks.append(data)
        except BlockingIOError:
            pass
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while True:
                try:
                    data = os.read(rd, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                chunks.append(data)
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(rd)
            return "hang", f"over {timeout:.0f} s"
        time.sleep(0.01)
    os.close(rd)
    if not chunks:
        return "fault", f"child died (wait status {status})"
    return pickle.loads(b"".join(chunks))


def fuzz(seed: int, budget: float, ops: tuple[str, ...], batch: int, calls: int, timeout: float,
         verbose: bool = False, log=print, strides: bool = False) -> dict:
    """Run the fuzz; return {"failures": [...], "stats": {op: {...}}}."""
    rng = random.Random(seed)
    t_end = time.monotonic() + budget
    stats = {op: {"tried": 0, "accepted": 0, "calls": 0, "refused_calls": 0, "refusals": {}} for op in ops}
    failures: list[dict] = []
    index = 0
    while time.monotonic() < t_end:
        chosen = []
        for _ in range(batch):
            op = rng.choice(ops)
            index += 1
            got = accepted_plan(rng, op, index)
            stats[op]["tried"] += 1
            if got is None:
                continue
            arch, text, plan = got
            if isinstance(plan, BaseException):
                failures.append({"kind": "plan-crash", "op": op, "arch": arch, "spec": text,
                                 "detail": f"{type(plan).__name__}: {plan}"})
                continue
            stats[op]["accepted"] += 1
            chosen.append((op, arch, text, plan))
        if not chosen:
            continue
        try:
            kerns = api.emu_kernels([p for *_, p in chosen], f"numfuzz_{seed}_{index}")
        except Exception as exc:  # noqa: BLE001 - one failing kernel spoils the library: build each alone
            kerns = {}
            for op, arch, text, plan in chosen:
                try:
                    kerns.update(api.emu_kernels([plan], f"numfuzz_{seed}_{plan.name}"))
                except Exception as exc1:  # noqa: BLE001
                    failures.append({"kind": "build", "op": op, "arch": arch, "spec": text,
                                     "detail": f"{type(exc1).__name__}: {str(exc1)[:500]}"})
            del exc
        for op, arch, text, plan in chosen:
            kern = kerns.get(plan.name)
            if kern is None:
                continue
            for _ in range(calls):
                sizes = draw_sizes(rng, plan)
                cseed = rng.randrange(2**31)
                kind, detail = call_in_child(kern, sizes, cseed, timeout, strides)
                stats[op]["calls"] += 1
                stats[op]["refused_calls"] += kind == "refused"
                if kind == "refused":
                    why = re.sub(r"\d+", "#", detail.splitlines()[0] if detail else "")[:160]
                    stats[op]["refusals"][why] = stats[op]["refusals"].get(why, 0) + 1
                if verbose:
                    log(f"{op} {arch} {plan.name} {sizes}: {kind} {detail.splitlines()[0] if detail else ''}")
                if kind not in ("ok", "refused"):
                    failures.append({"kind": kind, "op": op, "arch": arch, "spec": text, "sizes": sizes,
                                     "seed": cseed, "strides": strides, "detail": detail})
                    log(f"FAIL {kind} {op} {arch} sizes={sizes} seed={cseed}\n  {text.strip()}\n  {detail[:400]}")
    return {"failures": failures, "stats": stats}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--save", help="write the failures (JSON) to this file")
    ap.add_argument("--strides", action="store_true", help="padded, offset views with poisoned padding")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    ops = tuple(o.strip() for o in args.ops.split(",") if o.strip())
    unknown = [o for o in ops if o not in GENERATORS]
    if unknown:
        ap.error(f"unknown ops {unknown}; known: {', '.join(OPS)}")
    out = fuzz(args.seed, args.budget, ops, args.batch, args.calls, args.timeout, args.verbose, strides=args.strides)
    for op, s in out["stats"].items():
        print(f"{op}: specs tried {s['tried']}, accepted {s['accepted']}, calls {s['calls']} "
              f"({s['refused_calls']} refused by the ABI)")
        for why, n in sorted(s["refusals"].items(), key=lambda kv: -kv[1])[:4]:
            print(f"    {n} x {why}")
    print(f"failures: {len(out['failures'])}")
    if args.save:
        Path(args.save).write_text(json.dumps(out, indent=1, default=str))
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
