"""``ckgen run``: one kernel of any op on random data, checked against the op's float64 reference.

:func:`run_command` builds the kernel for the target (``emu``, ``hip``, ``sm_90`` ...) through
:func:`ckgen.runtime.api.jit`, takes the runtime sizes by name (``--size m=200,n=130,k=70``: the ABI's size
arguments, case-insensitive; ``-m/-n/-k`` are shorthands for sizes named M, N, K), draws random inputs
(never zeros; outputs poisoned unless the kernel reads them), runs it, and prints per output the relative
error ``||out - ref|| / ||ref||`` against the op's float64 reference. Exit status: 0 within every output's
tolerance, 1 over it (or unwritten / NaN outputs), 2 on bad input (a CkgenError, printed with ``render()``).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ckgen.errors import CkgenError
from ckgen.ir.abi import INT32_MAX
from ckgen.ops import get_op
from ckgen.ops.base import relative_error
from ckgen.runtime.api import jit
from ckgen.runtime.arrays import to_float64


def parse_sizes(text: str | None) -> dict[str, int]:
    """``m=200,n=130`` -> {"m": 200, "n": 130}; CkgenError on anything else."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise CkgenError(f"--size {item!r}: expected NAME=VALUE", hint="e.g. --size m=256,n=128,k=64")
        try:
            v = int(value.strip(), 10)
        except ValueError:
            raise CkgenError(f"--size {name}={value.strip()}: not an integer") from None
        if name.lower() in out:
            raise CkgenError(f"--size names {name} twice")
        out[name.lower()] = v
    return out


def resolve_sizes(plan, given: dict[str, int]) -> dict[str, int]:
    """ABI size name -> value from ``given`` (lower-case names) and the ABI defaults; CkgenError when a size is
    unknown, missing, or out of range."""
    by_lower = {a.name.lower(): a for a in plan.abi.sizes}
    names = ", ".join(a.name.lower() for a in plan.abi.sizes)
    unknown = sorted(set(given) - set(by_lower))
    if unknown:
        raise CkgenError(f"kernel '{plan.name}' (op {plan.op}) has no size {', '.join(unknown)}", hint=f"sizes: {names}")
    out: dict[str, int] = {}
    for low, a in by_lower.items():
        if low in given:
            v = given[low]
        elif a.default is not None:
            v = int(a.default)
        else:
            raise CkgenError(f"kernel '{plan.name}' needs size {low}", hint=f"pass --size with {names}")
        if not 0 <= v <= INT32_MAX:
            raise CkgenError(f"size {low} = {v}: out of range", hint=f"legal: 0..{INT32_MAX}")
        out[a.name] = v
    return out


def run_command(path: str, kernel: str | None, target: str, arch: str | None, sizes: dict[str, int],
                seed: int | None) -> int:
    """``ckgen run``. Returns the exit status (0 ok, 1 numeric failure, 2 bad input)."""
    try:
        kern = jit(path, kernel=kernel, target=target, arch=arch)
        plan = kern.plan
        op = get_op(plan.op)
        values = resolve_sizes(plan, sizes)
        rng = np.random.default_rng(0 if seed is None else seed)
        arrays = op.random_inputs(plan, values, rng)
        before = {k: (v.copy() if v is not None else None) for k, v in arrays.items()}
        t0 = time.perf_counter()
        kern(**arrays)
        dt = time.perf_counter() - t0
    except CkgenError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    refs = op.reference(plan, before, values)
    ok = True
    shown = " ".join(f"{k}={v}" for k, v in values.items())
    for a in plan.abi.tensors:
        if not a.writes or a.unused:
            continue
        err = relative_error(to_float64(arrays[a.name], a.dtype), refs[a.name])
        tol = op.tolerance(plan, a.name)
        good = err <= tol
        ok &= good
        print(f"{kern.name} on {kern.backend.name} ({kern.arch}): {shown}, {dt:.3f} s, {a.name}: relative error vs "
              f"float64 {err:.3e} (tolerance {tol:.1e}): {'ok' if good else 'FAILED'}")
    return 0 if ok else 1
